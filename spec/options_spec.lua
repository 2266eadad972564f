-- Every options table is read against a declaration (src/lua/largs.c for C functions,
-- lua/gpu/options.lua for the Lua parts); gpu._options lists them all. This spec is
-- generated from that list: each declared function is called through its example with
-- an unknown key, which must be refused by name, and with an empty table, which must not
-- be refused as an option. A new option cannot be added unchecked, nor a new function
-- taking options without an example.
local gpu = require "gpu"

-- the Lua parts declare their options when they load
for _, m in ipairs { "nn", "optim", "data", "amp", "bench", "profile", "autograd", "plot", "image", "routines" } do
  pcall(require, "gpu." .. m)
end

local function run(example, opts)
  local code = example:format(opts)
  local chunk, err = load(code, "=example", "t", setmetatable({ gpu = gpu }, { __index = _G }))
  assert(chunk, ("example does not compile: %s\n%s"):format(tostring(err), code))
  return pcall(chunk)
end

describe("gpu._options", function()
  local names = {}
  for name in pairs(gpu._options) do names[#names + 1] = name end
  table.sort(names)

  it("lists the C and Lua declarations", function()
    assert.is_true(#names > 40, "only " .. #names .. " declarations")
    for _, want in ipairs { "sum", "zeros", "loadtxt", "dnn.conv2d", "fused.adam_", "random.choice", "topk" } do
      assert.is_table(gpu._options[want], want)
    end
  end)

  for _, name in ipairs(names) do
    local d = gpu._options[name]
    describe(name, function()
      it("has an example and its keys", function()
        assert.is_string(d.example, name .. " has no example")
        assert.is_table(d.keys)
        assert.truthy(d.example:find("%s", 1, true), name .. "'s example has no %s for the options")
      end)
      if type(d.example) == "string" then
        it("refuses an unknown key by name", function()
          local ok, err = run(d.example, "{zz_unknown = 1}")
          assert.is_false(ok, name .. " accepted an unknown option")
          assert.truthy(tostring(err):find("unknown option 'zz_unknown'", 1, true), tostring(err))
        end)
        it("takes an empty options table", function()
          local ok, err = run(d.example, "{}")
          assert.truthy(ok or not tostring(err):find("option", 1, true), tostring(err))
        end)
        if #d.keys > 0 then
          it("names the nearest key of a typo", function()
            local key = d.keys[1]
            if #key < 4 then return end
            local typo = key:sub(1, -2) .. key:sub(-1):upper() .. "x"     -- two edits away
            local ok, err = run(d.example, ("{[%q] = 1}"):format(typo))
            assert.is_false(ok)
            assert.truthy(tostring(err):find("did you mean '" .. key .. "'?", 1, true), tostring(err))
          end)
        end
      end
    end)
  end
end)

describe("the C options reader", function()
  local function err_of(f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    return tostring(e)
  end

  it("names the function, the key and the nearest declared key", function()
    assert.matches("bad argument #3 to 'gpu.sum' %(unknown option 'keepdim'; did you mean 'keepdims'%?%)",
      err_of(gpu.sum, gpu.ones(2), 1, { keepdim = true }))
    assert.matches("unknown option 'zzz' %(sum takes: keepdims, dtype%)", err_of(gpu.sum, gpu.ones(2), 1, { zzz = 1 }))
    assert.matches("unexpected entry %[1%] in the options table", err_of(gpu.zeros, 2, { dtype = "int32", 5 }))
  end)

  it("checks types, NaN and ranges, naming the option", function()
    assert.matches("option 'keepdims' must be a boolean, got integer 1", err_of(gpu.sum, gpu.ones(2), 1, { keepdims = 1 }))
    assert.matches("option 'lr' must not be NaN",
      err_of(gpu.fused.sgd_, gpu.ones(2), gpu.ones(2), nil, { lr = 0 / 0 }))
    assert.matches("option 'lr' must be >= 0, got number %-0.5",
      err_of(gpu.fused.sgd_, gpu.ones(2), gpu.ones(2), nil, { lr = -0.5 }))
    assert.matches("option 'beta2' must be < 1, got number 1.5",
      err_of(gpu.fused.adam_, gpu.ones(2), gpu.ones(2), gpu.zeros(2), gpu.zeros(2), nil, { beta2 = 1.5 }))
    assert.matches("option 'ord' must be one of fro, nuc, got 'frob'; did you mean 'fro'%?",
      err_of(gpu.norm, gpu.ones(2, 2), nil, { ord = "frob" }))
    assert.matches("option 'stride' must be an integer or a pair", err_of(gpu.im2col, gpu.ones(1, 1, 4, 4), { kernel = 2, stride = "x" }))
    assert.matches("options table expected, got integer 5", err_of(gpu.dnn.softmax, gpu.ones(2, 2), 5))
  end)

  it("reads the Lua parts' options too, in the same words", function()
    local norm = gpu.linalg.norm                                    -- declared in lua/gpu/linalg.lua
    assert.matches("option 'keepdims' must be a boolean, got integer 1", err_of(norm, gpu.eye(2), nil, nil, { keepdims = 1 }))
    assert.matches("unknown option 'keepdim'; did you mean 'keepdims'%?", err_of(norm, gpu.eye(2), nil, nil, { keepdim = true }))
    assert.matches("option 'lr' must be >= 0, got number %-0.5", err_of(require("gpu.optim").SGD, { gpu.ones(2) }, { lr = -0.5 }))
  end)

  it("leaves the arrays as they were after an option error", function()
    local p = gpu.ones(3)
    err_of(gpu.fused.sgd_, p, gpu.ones(3), nil, { lr = 0.1, nesterv = true })
    assert.same({ 1, 1, 1 }, p:totable())
  end)
end)

describe("dtype constants", function()
  it("are the dtype names, with PyTorch's aliases", function()
    assert.equal("float32", gpu.float32)
    assert.equal("bool", gpu.bool)
    assert.equal("int64", gpu.long)
    assert.equal("int32", gpu.int)
    assert.equal("float64", gpu.double)
    assert.equal("float16", gpu.half)
    assert.equal("float32", gpu.float)
    assert.equal("int32", gpu.array({ 1, 2 }, { dtype = gpu.int32 }).dtype)
    assert.is_true(gpu.zeros(2, { dtype = gpu.double }).dtype == gpu.float64)
  end)
end)

describe("the nearest-name hint", function()
  local options = require "gpu.options"

  it("is the C reader's capped edit distance: words of 64 bytes or more count as far apart", function()
    assert.equal(gpu._word_distance, options.distance)
    assert.equal(1, options.distance("keepdim", "keepdims"))
    assert.equal(1, options.distance("rcnod", "rcond"))
    assert.equal(63, options.distance(string.rep("a", 63), ""))
    assert.equal(1, options.distance("sparse_categorical_crossentropyy", "sparse_categorical_crossentropy"))
    assert.equal(1000, options.distance(string.rep("a", 64), "a"))
    assert.equal(1000, options.distance("a", string.rep("a", 100000)))
  end)

  it("answers at once for a long unknown name, in help and in the Lua options reader", function()
    local t = os.clock()
    -- require, not gpu.help: busted insulates each file's package.loaded, and gpu.help would keep
    -- this file's copy for repl_spec.lua's identity check
    local text, err = require("gpu.help").text(string.rep("x", 100000))
    assert.is_nil(text)
    assert.matches("^help: no entry for", err)
    local ok, e = pcall(gpu.linalg.pinv, gpu.eye(2), { [string.rep("r", 20000)] = 1 })     -- read in Lua
    assert.is_false(ok)
    assert.matches("unknown option", e)
    assert.is_true(os.clock() - t < 5, "took " .. (os.clock() - t) .. " s (80 s before the cap: a hang, not a speed)")
    assert.matches("nearest: matmul", select(2, require("gpu.help").text("matmull")))
    assert.matches("did you mean 'rcond'", select(2, pcall(gpu.linalg.pinv, gpu.eye(2), { rcnod = 1 })))
  end)
end)

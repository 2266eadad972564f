-- spec/default_dtype_spec.lua — gpu.set_default_dtype / get_default_dtype against what
-- PyTorch's constructors give under each default (spec/fixtures/dtype_more/cases.lua, made by
-- spec/fixtures/gen_default_dtype_fixtures.py), on every device and in nn's layers; NumPy's
-- can_cast (every pair, every casting rule), finfo and iinfo; gpu.inference_mode.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

local CASES = dofile("spec/fixtures/dtype_more/cases.lua")
local function cases(what)
  local out = {}
  for _, c in ipairs(CASES) do if c.what == what then out[#out + 1] = c end end
  assert(#out > 0, "no fixture for " .. what)
  return out
end

-- fn() under the default dtype d, the default restored after (also when fn fails)
local function under(d, fn)
  local was = gpu.get_default_dtype()
  gpu.set_default_dtype(d)
  local ok, err = pcall(fn)
  gpu.set_default_dtype(was)
  if not ok then error(err, 0) end
end

describe("the default dtype", function()
  it("starts as float32", function()
    assert.equal("float32", gpu.get_default_dtype())
    assert.equal("float32", gpu.config().default_dtype)
  end)

  for _, dev in ipairs(h.devices()) do
    it("is what every constructor gives, as PyTorch's, on " .. dev, function()
      for _, c in ipairs(cases("constructors")) do
        under(c.default, function()
          local o = { device = dev }
          local made = {
            zeros = gpu.zeros(2, o), ones = gpu.ones(2, o), empty = gpu.empty(2, o), full = gpu.full({ 2 }, 1.5, o),
            eye = gpu.eye(2, o), rand = gpu.rand(2, o), randn = gpu.randn(2, o),
            arange_float = gpu.arange(0, 1, 0.5, o), arange_int = gpu.arange(3, o), linspace = gpu.linspace(0, 1, 3, o),
            tensor_floats = gpu.array({ 1.5, 2.5 }, o), linear_weight = nn.Linear(2, 3, o).weight,
          }
          for name, x in pairs(made) do
            assert.equal(c.dtypes[name], x.dtype, ("%s under %s"):format(name, c.default))
          end
          -- complex: complex128 under float64; PyTorch's complex32 (float16) and its error
          -- (bfloat16) are complex64 here, the one complex dtype of single precision
          local want = c.dtypes.tensor_complex
          if want == "complex32" or want == "error" then want = "complex64" end
          assert.equal(want, gpu.array({ gpu.complex(1, 2) }, o).dtype)
          assert.equal(c.default, gpu.random.uniform(0, 1, { 2 }, o).dtype)
          assert.equal(c.default, gpu.random.normal(0, 1, { 2 }, o).dtype)
          assert.equal(c.default, gpu.random.Generator(1):normal(0, 1, { 2 }, o).dtype)
          -- an explicit dtype still wins
          assert.equal("float32", gpu.zeros(2, { dtype = "float32", device = dev }).dtype)
          assert.equal("int32", gpu.array({ 1.5 }, { dtype = "int32", device = dev }).dtype)
        end)
      end
    end)
  end

  it("is the dtype of nn layers' parameters and buffers unless one is given", function()
    under("float64", function()
      local layers = { nn.Linear(2, 3), nn.Conv2d(1, 2, 3), nn.LayerNorm(3), nn.Embedding(4, 2), nn.LSTM(2, 3),
                       nn.MultiheadAttention(4, 2), nn.BatchNorm2d(3), nn.PReLU(), nn.GRU(2, 2),
                       nn.TransformerEncoderLayer(4, 2) }
      for _, m in ipairs(layers) do
        for _, p in ipairs(m:parameters()) do assert.equal("float64", p.dtype) end
      end
      assert.equal("float64", nn.BatchNorm2d(3).running_mean.dtype)
      assert.equal("float32", nn.Linear(2, 3, { dtype = "float32" }).weight.dtype)
      local m = nn.Sequential { nn.Dense(3) }
      m(gpu.zeros(2, 4, { dtype = "float64" }))
      assert.equal("float64", m:parameters()[1].dtype)
      assert.equal("float64", nn.Linear(2, 3)(gpu.ones(1, 2)).dtype)
    end)
    assert.equal("float32", nn.Linear(2, 3).weight.dtype)
  end)

  it("a whole-model file rebuilds each layer under the default dtype it was made in", function()
    local path = os.tmpname()
    under("float64", function() nn.Sequential { nn.Linear(2, 3), nn.LayerNorm(3) }:save(path) end)
    local m = nn.load_model(path)
    os.remove(path)
    for _, p in ipairs(m:parameters()) do assert.equal("float64", p.dtype) end
    assert.equal("float32", gpu.get_default_dtype())
  end)

  it("is finfo()'s dtype when no dtype is given", function()
    under("float64", function() assert.equal("float64", gpu.finfo().dtype) end)
    assert.equal("float32", gpu.finfo().dtype)
  end)

  it("takes float dtypes only, and nothing else changes on a refusal", function()
    h.fails({ "bad argument #1 to 'gpu.set_default_dtype'", "only floating-point dtypes can be the default, got int32" },
      gpu.set_default_dtype, "int32")
    h.fails({ "bad argument #1 to 'gpu.set_default_dtype'", "complex64" }, gpu.set_default_dtype, "complex64")
    h.fails({ "bad argument #1 to 'gpu.set_default_dtype'" }, gpu.set_default_dtype, "float33")
    h.fails({ "bad argument #1 to 'gpu.set_default_dtype'" }, gpu.set_default_dtype, 3)
    h.fails({ "bad argument #1 to 'gpu.set_default_dtype'" }, gpu.set_default_dtype)
    h.fails({ "bad argument #2 to 'gpu.set_default_dtype'" }, gpu.set_default_dtype, "float64", 1)
    h.fails({ "bad argument #1 to 'gpu.get_default_dtype'" }, gpu.get_default_dtype, 1)
    assert.equal("float32", gpu.get_default_dtype())
    under("double", function() assert.equal("float64", gpu.get_default_dtype()) end)    -- aliases
  end)
end)

describe("can_cast, finfo, iinfo", function()
  it("can_cast: NumPy's answer for every pair of dtypes under every casting rule", function()
    for _, c in ipairs(cases("can_cast")) do
      for from, row in pairs(c.table) do
        for to, want in pairs(row) do
          local got = gpu.can_cast(from, to, c.casting)
          assert(got == want, ("can_cast(%s, %s, %s): %s, NumPy %s"):format(from, to, c.casting, tostring(got), tostring(want)))
          if c.casting == "safe" then assert.equal(want, gpu.can_cast(from, to)) end
        end
      end
    end
    assert.is_true(gpu.can_cast(gpu.zeros(2, { dtype = "int8" }), "float16"))        -- an array's dtype
    assert.is_true(gpu.can_cast("bfloat16", "float32"))
    assert.is_false(gpu.can_cast("float16", "bfloat16"))
    assert.is_true(gpu.can_cast("float16", "bfloat16", "same_kind"))
  end)

  it("can_cast: misuse", function()
    h.fails({ "bad argument #1 to 'gpu.can_cast'", "Lua scalar" }, gpu.can_cast, 1.5, "float32")
    h.fails({ "bad argument #2 to 'gpu.can_cast'" }, gpu.can_cast, "float32", "float99")
    h.fails({ "bad argument #3 to 'gpu.can_cast'", "invalid option 'safer'" }, gpu.can_cast, "float32", "float64", "safer")
    h.fails({ "bad argument #4 to 'gpu.can_cast'" }, gpu.can_cast, "float32", "float64", "safe", 1)
  end)

  it("finfo: NumPy's fields (PyTorch's for bfloat16), complex dtypes give their parts'", function()
    for _, c in ipairs(cases("finfo")) do
      local f = gpu.finfo(c.dtype)
      assert.equal(c.dtype, f.dtype)
      for k, v in pairs(c) do
        if k ~= "what" and k ~= "dtype" then
          assert(f[k] ~= nil, "finfo lacks " .. k)
          h.assert_close(f[k], v, k == "resolution" and 1e-3 or 1e-12)
        end
      end
    end
    for _, c in ipairs(cases("finfo_complex")) do assert.equal(c.part, gpu.finfo(c.dtype).dtype) end
    h.fails({ "bad argument #1 to 'gpu.finfo'", "int32 is not a float" }, gpu.finfo, "int32")
  end)

  it("iinfo: NumPy's bits, min, max, kind", function()
    for _, c in ipairs(cases("iinfo")) do
      local i = gpu.iinfo(c.dtype)
      assert.equal(c.bits, i.bits)
      assert.equal(c.min, i.min)
      assert.equal(c.max, i.max)
      assert.equal(c.kind, i.kind)
      assert.equal(c.dtype, i.dtype)
    end
    h.fails({ "bad argument #1 to 'gpu.iinfo'", "float32 is not an integer dtype" }, gpu.iinfo, "float32")
    h.fails({ "bad argument #1 to 'gpu.iinfo'", "bool is not an integer dtype" }, gpu.iinfo, "bool")
  end)
end)

describe("gpu.inference_mode", function()
  it("runs fn with grad off, passing its arguments and results, as torch.inference_mode", function()
    local x = gpu.ones(2, { dtype = "float64" }):requires_grad()
    local y, z = gpu.inference_mode(function(a, b)
      assert.is_true(gpu.is_inference_mode_enabled())
      assert.is_false(gpu.autograd.is_grad_enabled())
      return x * a, b
    end, 3, "b")
    assert.equal("b", z)
    assert.is_false(gpu.autograd.requires_grad(y))
    assert.is_false(gpu.is_inference_mode_enabled())
    assert.is_true(gpu.autograd.is_grad_enabled())
    -- mode false: as it is (PyTorch's inference_mode(False))
    local w = gpu.inference_mode(false, function() return x * 2 end)
    assert.is_true(gpu.autograd.requires_grad(w))
    -- an error inside restores the modes
    assert.is_false(pcall(gpu.inference_mode, function() error("boom") end))
    assert.is_false(gpu.is_inference_mode_enabled())
    assert.is_true(gpu.autograd.is_grad_enabled())
  end)

  it("misuse", function()
    h.fails({ "bad argument #1 to 'inference_mode'", "a function expected" }, gpu.inference_mode, 3)
    h.fails({ "bad argument #2 to 'inference_mode'", "a function expected" }, gpu.inference_mode, true, "f")
    h.fails({ "bad argument #1 to 'inference_mode'" }, gpu.inference_mode)
  end)
end)

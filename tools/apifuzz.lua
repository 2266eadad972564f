-- tools/apifuzz.lua — calls every gpu function (gpu.random, gpu.fused and gpu.dnn too),
-- array method and metamethod with random, hostile arguments inside pcall, and checks
-- what the API promises:
--   * the process survives every call (run it under ./gpulua-asan for memory errors and
--     undefined behaviour);
--   * no call takes longer than a few seconds: an op on a huge broadcast view
--     (gpu.ones(1):expand(1 << 40)) raises "array is too big" or is fast;
--   * a call that raises leaves every array it was given as it was (elements, dtype,
--     shape, x._version), the random state and the global settings too;
--   * a call that is not an in-place one (name ending in '_', x[k] = v, shuffle, ...)
--     never changes its arguments, even when it succeeds;
--   * an array it returns is consistent (shape, size, ndim agree; no negative extent).
-- Arguments come from pools of Lua expressions: extreme numbers as integers and floats
-- (2^31, 2^53, 2^62, math.maxinteger, math.mininteger, NaN, +-inf, -0.0, 1e308, 5e-324),
-- shapes and options made of them, arrays of every dtype (0-d, empty, views, expanded and
-- zero-stride views, closed ones), the results of earlier calls (rebuilt, or kept alive
-- across calls, where in-place ops, closes and the collector reach them) and views of the
-- receiver; a call mostly follows the function's signature with one wild argument beside
-- ordinary ones. Each call is printed as Lua source that rebuilds it, so a report can be
-- pasted into `gpulua -e`.
--
--   * Lua code that runs inside a call (a finalizer, a table argument's metamethods) and
--     closes or collects its arrays, raises or yields, never crashes it (1 call in 8); an
--     array closed while an async collective on it flies frees nothing under it.
-- usage: gpulua tools/apifuzz.lua [seed] [calls] [slow_seconds]
--   prints "apifuzz ok <seed>" when nothing was found, else one line per problem and
--   "apifuzz: N problems (seed S)", exit status 1.
--   APIFUZZ_TRACE=1 writes each call to stderr before it runs (to name a crash or a
--   hang). tools/apifuzz.sh runs many seeds with a memory cap and a timeout.
io.stdout:setvbuf("line")
local seed = tonumber(arg[1]) or 1
local ncalls = tonumber(arg[2]) or 20000
local slow = tonumber(arg[3]) or 2
local trace = os.getenv("APIFUZZ_TRACE") == "1"
local stats = os.getenv("APIFUZZ_STATS") == "1" and {} or nil    -- name -> {calls, successes}
math.randomseed(seed)
gpu.random.seed(seed)

local function pick(t) return t[math.random(#t)] end

---------------------------------------------------------------------------------------------
-- Pools of expressions, by kind
---------------------------------------------------------------------------------------------

local dtypes = {}                       -- every dtype C has (gpu._dtypes)
for _, d in ipairs(gpu._dtypes) do dtypes[#dtypes + 1] = d.name end

local ints = { "0", "1", "-1", "2", "3", "4", "255", "256", "-129", "1 << 31", "-(1 << 31)",
  "(1 << 31) - 1", "1 << 32", "1 << 53", "(1 << 53) + 1", "1 << 62", "-(1 << 62)", "1 << 40",
  "math.maxinteger", "math.mininteger", "math.maxinteger - 1" }
local floats = { "0.0", "-0.0", "0.5", "1.0", "2.5", "-1.5", "3.0", "2^31", "-2^31", "2^53", "2^62",
  "-2^62", "2^63", "-2^63", "0/0", "math.huge", "-math.huge", "1e308", "5e-324", "1e300", "-1e-300" }
local small = { "0", "1", "-1", "2", "3", "-2", "1.0", "2.0" }

local shapes = { "{}", "{0}", "{2, 3}", "{3, 4}", "{1, 2}", "{-1}", "{2, 0, -1}", "{1 << 31, 1 << 31}",
  "{2^31, 2^31}", "{math.maxinteger}", "{math.mininteger}", "{-1, 0}", "{0/0}", "{math.huge}",
  "{1 << 62, 4}", "{1 << 40}", "{1, 1, 1, 1, 1, 1, 1, 1, 1}", "{-0.0}", "{2^53}", "{2.5}", "{'2'}",
  "{true}", "{{1}}", "{0, math.maxinteger}", "{0, 1 << 62, 1 << 62}", "{3, -1}", "{-1, -1}",
  "{1 << 20, 1 << 20, 1 << 20}", "{1 << 62, 0}", "{0, 1 << 62}", "{1 << 40, 0, 3}", "{12}", "{4, 3}", "{2, 2, 3}", "{1, 3}",
  "setmetatable({}, {__len = function() return math.maxinteger end})",
  "setmetatable({}, {__index = function() error('boom') end})" }

local data = { "{{1, 2}, {3, 4}}", "{{1}, {2, 3}}", "{true, false}", "{1, {2}}", "{'a'}", "{0/0, math.huge}",
  "{math.maxinteger, math.mininteger}", "{{{{{{{{{{{1}}}}}}}}}}}", "{{}}", "{1 << 62, -(1 << 62)}",
  "{2^63, -2^63}", "{1e308, 5e-324, -0.0}", "{}", "{1, 2, 3}" }

local keys = { "1", "-1", "0", "4", "math.maxinteger", "math.mininteger", "0/0", "2^53", "1 << 31",
  "{1, 2}", "{{1, 3}}", "{{1, -1, 2}}", "{':'}", "{{1, 10, 0}}", "{{1, 10, math.mininteger}}",
  "{{math.mininteger, math.maxinteger}}", "{{1, 10, -1}}", "{{-1, 1, -1}}", "{1, 1, 1, 1}", "'x'", "':'",
  "'shape'", "'T'", "'_version'", "'size'", "'nbytes'", "'grad'", "'requires_grad'", "'dtype'", "'device'",
  "'ndim'", "'itemsize'", "'is_leaf'", "{{2^62, 2^63}}", "{{1, 2, math.maxinteger}}",
  "{':', {1, 1 << 40}}", "gpu.array({true, false, true})", "gpu.array({1, 3}, {dtype = 'int64'})",
  "gpu.array({math.maxinteger}, {dtype = 'int64'})", "gpu.array({math.mininteger}, {dtype = 'int64'})" }

-- Arrays of each dtype: 0-d, empty, views of every kind, broadcast views (a huge one, one
-- of 2^62 elements, a zero-stride inner axis), extreme elements, closed, tracking grads.
local arrays, arrays4 = {}, {}
for _, dt in ipairs(dtypes) do
  local o = ("{dtype = '%s'}"):format(dt)
  local function add(fmt) arrays[#arrays + 1] = fmt:gsub("DT", dt):gsub("O", o) end
  add "gpu.zeros(0, O)"
  add "gpu.zeros({0, 3}, O)"
  add "gpu.zeros({2, 0, 3}, O)"
  add "gpu.zeros({1 << 62, 0}, O)"
  add "gpu.zeros({0, 1 << 40}, O)"
  add "gpu.ones({}, O)"
  add "gpu.full({}, 7, O)"
  add "gpu.ones(3, O)"
  add "gpu.arange(12):reshape(3, 4):astype('DT')"
  add "gpu.arange(24):reshape(2, 3, 4):astype('DT').T"
  add "gpu.arange(10):astype('DT')[{ {1, 10, 3} }]"
  add "gpu.arange(6):astype('DT'):flip()"
  add "gpu.ones(1, O):expand(1 << 40)"
  add "gpu.ones(1, 1, O):expand(1 << 31, 1 << 31)"
  add "gpu.ones(3, O):expand(4, 3)"
  add "gpu.arange(3):astype('DT'):reshape(1, 3):expand(1 << 40, 3)"
  add "gpu.arange(6):astype('DT'):reshape(1, 2, 3):expand(2, 2, 3)"
  add "gpu.array({math.maxinteger, math.mininteger, 0, -1, 1 << 31, 255}, {dtype = 'int64'}):astype('DT')"
  add "(function() local x = gpu.ones(4, O) x:close() return x end)()"
  if dt:find("float") then
    add "gpu.array({0/0, math.huge, -math.huge, -0.0, 1e308, 5e-324, 2^53, -2^62}, O)"
    add "gpu.ones(2, 3, O):requires_grad_()"
  end
  arrays4[#arrays4 + 1] = ("gpu.ones(1, 1, 4, 4, %s)"):format(o)
  arrays4[#arrays4 + 1] = ("gpu.arange(150):reshape(2, 3, 5, 5):astype('%s')"):format(dt)
end
for _, a in ipairs { "gpu.ones(1, 1, 1, 1):expand(1, 1, 1 << 20, 1 << 20)", "gpu.zeros(0, 1, 4, 4)",
  "gpu.ones(1, 1, 1, 1):expand(2, 3, 5, 5)", "gpu.ones(1, 1, 3, 3)", "gpu.ones(2, 3, 3, 3)",
  "gpu.ones(1, 1, 2, 2)", "gpu.ones(1, 1, 4, 4):requires_grad_()" } do
  arrays4[#arrays4 + 1] = a
end
local indices = { "gpu.array({1, 2}, {dtype = 'int64'})", "gpu.array({1, 3}, {dtype = 'int32'})",
  "gpu.array({-1}, {dtype = 'int64'})", "gpu.array({0}, {dtype = 'int64'})",
  "gpu.array({math.maxinteger}, {dtype = 'int64'})", "gpu.array({math.mininteger}, {dtype = 'int64'})",
  "gpu.array({(1 << 31) - 1, -(1 << 31)}, {dtype = 'int32'})", "gpu.array({1, 2}, {dtype = 'int64'}):expand(3, 2)",
  "gpu.ones(1, {dtype = 'int64'}):expand(1 << 40)", "gpu.zeros(0, {dtype = 'int64'})",
  "gpu.array({{1, 2}, {2, 1}}, {dtype = 'int64'})", "gpu.array({1.5, 2})", "gpu.array({1, 2}, {dtype = 'uint8'})" }
local masks = { "gpu.array({true, false, true})", "gpu.ones(3, 4, {dtype = 'bool'})",
  "gpu.array({true}):expand(1 << 40)", "gpu.zeros(0, {dtype = 'bool'})", "gpu.array({true}):expand(3, 4)",
  "gpu.array({1, 0, 1})", "gpu.arange(12):reshape(3, 4):gt(5)" }

local lists = { "{gpu.ones(2), gpu.ones(3)}", "{gpu.ones(2, 3), gpu.zeros(2, 3)}",
  "{gpu.ones(1):expand(1 << 40), gpu.ones(1)}", "{}", "{gpu.ones(2), 1}",
  "{gpu.ones(2, {dtype = 'int32'}), gpu.ones(2, {dtype = 'float16'})}", "{gpu.ones(1, 1):expand(1 << 31, 1 << 31)}",
  "{gpu.zeros(0), gpu.zeros(0)}", "{gpu.ones({}), gpu.ones({})}", "{gpu.ones(3), gpu.ones(3):expand(4, 3)}",
  "{gpu.ones(2, 3), gpu.ones(2, 3), gpu.ones(2, 3)}", "{(function() local x = gpu.ones(4) x:close() return x end)()}" }

local misc = { "nil", "true", "false", "'x'", "''", "'float32'", "'int64'", "'bool'", "':'", "'cpu'", "'cuda'",
  "'cuda:9'", "print", "function() error('boom') end", "function() return 1 end", "io.stdout",
  "setmetatable({}, {__index = function() error('boom') end})", "{n = math.maxinteger}",
  "gpu.random.Generator(1)", "('x'):rep(100)" }

-- Values an option may get: the extremes, and a few of each type.
local optvals = { "true", "false", "0", "1", "-1", "2", "math.mininteger", "math.maxinteger", "0/0",
  "math.huge", "-math.huge", "2^53", "-0.0", "1e308", "5e-324", "1 << 31", "'x'", "{}", "{math.mininteger}",
  "{2, 2}", "{1 << 31, 1 << 31}", "{0, 2}", "{-1, 1}", "'cpu'", "'cuda:9'", "0.5", "1e-300" }
local optkeys = { "axis", "keepdims", "dtype", "device", "k", "ddof", "ord", "descending", "largest", "sorted",
  "accumulate", "replace", "kernel", "stride", "padding", "dilation", "groups", "eps", "momentum",
  "training", "lr", "step", "label_smoothing", "scale", "compressed", "log", "pad_value" }

-- The declared option keys of each function (largs.c lists them in gpu._options).
local declared = {}
for name, d in pairs(gpu._options) do declared[name] = d.keys end

-- Values an option takes in ordinary use, so that the others can be read past it.
local tameopt = { keepdims = { "true", "false" }, ddof = { "1", "0" }, ord = { "1", "2", "math.huge", "0" },
  descending = { "true" }, largest = { "false" }, sorted = { "true", "false" }, accumulate = { "true" },
  replace = { "false", "true" }, kernel = { "2", "{2, 1}" }, stride = { "1", "2" }, padding = { "0", "1" },
  dilation = { "1" }, groups = { "1" }, eps = { "1e-5" }, momentum = { "0.1", "0.9" },
  training = { "true", "false" }, lr = { "0.01" }, step = { "1", "3" }, label_smoothing = { "0.1" },
  scale = { "1", "0.5" }, compressed = { "true" }, log = { "true" }, pad_value = { "0" }, k = { "1", "-1" },
  device = { "'cpu'" }, beta1 = { "0.9" }, beta2 = { "0.999" }, weight_decay = { "0.01" },
  nesterov = { "true" }, maximize = { "true" }, first = { "true" }, dampening = { "0" }, alpha = { "0.99" },
  centered = { "true" }, decoupled = { "true" }, amsgrad = { "true" }, axis = { "1", "-1" } }

-- Options tables no reader should trip on: keys that are not strings, metatables that raise.
local hostile = { "setmetatable({}, {__index = function() error('boom') end})", "{[1] = 2}", "{[true] = 1}",
  "{[gpu.ones(1)] = 1}", "setmetatable({}, {__pairs = function() error('boom') end})", "{dtype = setmetatable({}, {__tostring = error})}",
  "{keepdims = true, [2^53] = 1}" }

-- An options table of 0 to 3 keys from keylist (all known keys when nil); wild: any
-- value (or a hostile table), tame: mostly ordinary values.
local function opts(keylist, tame)
  if not tame and math.random(10) == 1 then return pick(hostile) end
  keylist = keylist or optkeys
  local parts = {}
  if tame and keylist[1] == "kernel" then parts[1] = "kernel = 2" end   -- required
  for _ = 1, math.random(0, tame and 2 or 3) do
    local k = pick(keylist)
    local v
    if k == "dtype" and math.random(3) > 1 then v = ("'%s'"):format(pick(dtypes))
    elseif k == "device" and math.random(2) == 1 then v = pick { "'cpu'", "'cuda'", "'cuda:1'", "'cuda:-1'", "'gpu'", "0" }
    elseif tame and tameopt[k] and math.random(4) > 1 then v = pick(tameopt[k])
    else v = pick(optvals) end
    parts[#parts + 1] = ("%s = %s"):format(k, v)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- Results of earlier calls that returned an array, as the source of that call: chains of
-- ops reach layouts and dtypes no pool expression makes.
local chain = {}
local function remember(src)
  if #src > 300 then return end
  if #chain < 64 then chain[#chain + 1] = src else chain[math.random(#chain)] = src end
end

local function array()
  if #chain > 0 and math.random(5) == 1 then return pick(chain) end
  return pick(arrays)
end

-- Ordinary arguments, of shapes that fit one another ((3, 4) arrays, axes 1 and 2), so
-- that a call gets past its first checks to the one wild argument beside them; wild.K
-- below gives the hostile ones of each kind. Kinds: A array, A4 4-d array, I index array,
-- M bool mask, n number, ax axis or table of axes, ax1 one axis, s shape, data nested
-- table, key index, L list of arrays, d dtype, B array or number, Z integer array, Zb its
-- operand, K matmul right operand, one one-element array, P axes permutation, Y labels,
-- R row of 3, W weight, R5 bias, C im2col columns, CS col2im shape, S result to backward,
-- G array tracking grads, F hook, st random state, str setting, _ nil, Gen Generator,
-- Fp float32 parameter.
local tame = {
  A = { "gpu.arange(12):reshape(3, 4):astype('float32')", "gpu.arange(12):reshape(3, 4):astype('float64')",
    "gpu.arange(12):reshape(3, 4):astype('int64')", "gpu.arange(12):reshape(3, 4):astype('int32')",
    "gpu.arange(12):reshape(3, 4):astype('float16')", "gpu.arange(12):reshape(3, 4):astype('uint8')",
    "gpu.arange(12):reshape(3, 4):gt(5)", "gpu.arange(12):reshape(4, 3):astype('float32').T",
    "gpu.arange(4):reshape(1, 4):astype('float32'):expand(3, 4)", "gpu.ones(3, 4)",
    "gpu.arange(12):reshape(3, 4):astype('float32'):requires_grad_()", "gpu.linspace(-2, 2, 12):reshape(3, 4)" },
  A4 = { "gpu.ones(1, 1, 4, 4)", "gpu.arange(150):reshape(2, 3, 5, 5):astype('float32')", "gpu.ones(2, 3, 5, 5)",
    "gpu.ones(1, 1, 3, 3)", "gpu.ones(2, 3, 3, 3)" },
  I = { "gpu.array({1, 2}, {dtype = 'int64'})", "gpu.array({3, 1}, {dtype = 'int64'})",
    "gpu.array({-1}, {dtype = 'int32'})", "gpu.array({1, 3, 2}, {dtype = 'int64'})" },
  M = { "gpu.arange(12):reshape(3, 4):gt(5)", "gpu.array({true, false, true})", "gpu.ones(3, 4, {dtype = 'bool'})" },
  n = { "1", "2", "3", "-1", "0", "0.5" },
  ax = { "nil", "1", "2", "-1", "{1, 2}" },
  s = { "{3, 4}", "12", "{2, 6}", "{-1}", "{4, 3}", "{2, 2, 3}" },
  data = { "{{1, 2}, {3, 4}}", "{1, 2, 3}", "2.5", "{true, false}" },
  key = { "1", "-1", "{2, 3}", "{{1, 2}, ':'}", "gpu.arange(12):reshape(3, 4):gt(5)", "'shape'" },
  L = { "{gpu.ones(3, 4), gpu.zeros(3, 4)}", "{gpu.ones(3, 4), gpu.arange(12):reshape(3, 4):astype('float32')}" },
  d = { "'float32'", "'int64'", "'float16'", "'bool'" },
}
tame.B = { "2", "0.5", "-1", tame.A[1], tame.A[3], "gpu.arange(4):astype('float32')", "gpu.ones(3, 1)" }
tame.Z = { "gpu.arange(12):reshape(3, 4):astype('int64')", "gpu.arange(12):reshape(3, 4):astype('int32')",
  "gpu.arange(12):reshape(3, 4):astype('uint8')", "gpu.arange(12):reshape(3, 4):gt(5)",
  "gpu.arange(4):reshape(1, 4):expand(3, 4)" }
tame.Zb = { "1", "3", "-1", "63", tame.Z[1], tame.Z[2], "gpu.arange(4):astype('int32')" }
tame.K = { "gpu.ones(4, 2)", "gpu.ones(4)", "gpu.arange(8):reshape(4, 2):astype('float64')", "gpu.ones(2, 4, 5)",
  "gpu.ones(4, 1):expand(4, 3)" }
tame.one = { "gpu.ones(1)", "gpu.array(2.5)", "gpu.ones(1, 1, {dtype = 'int64'})", "gpu.array(0/0)" }
tame.ax1 = { "1", "2", "-1" }
tame.P = { "{2, 1}", "{1, 2}", "{-1, 1}" }
tame.Y = { "gpu.array({1, 2, 4}, {dtype = 'int64'})", "gpu.array({1, 1, 1}, {dtype = 'int32'})" }
tame.R = { "gpu.ones(3)", "gpu.arange(3):astype('float32')" }
tame.W = { "gpu.ones(5, 4)", "gpu.ones(1, 4)" }
tame.R5 = { "gpu.ones(5)", "nil" }
tame.C = { "gpu.ones(1, 4, 9)", "gpu.ones(2, 12, 4)" }
tame.CS = { "{1, 1, 4, 4}", "{2, 3, 3, 3}" }
tame.S = { "gpu.arange(12):reshape(3, 4):astype('float32'):requires_grad_():sum()",
  "gpu.arange(12):reshape(3, 4):astype('float32'):requires_grad_():exp()" }
tame.G = { "gpu.arange(12):reshape(3, 4):astype('float32'):requires_grad_()",
  "gpu.arange(12):reshape(3, 4):astype('float32'):requires_grad_():exp()" }
tame.F = { "function() end", "function(g) return g end", "function(g) return g * 2 end" }
tame.st = { "{seed = 1, offset = 0}", "gpu.random.get_state()", "{seed = 7, offset = 1 << 40}" }
tame.str = { "'tf32'", "'highest'", "'high'", "'cpu'" }
tame._ = { "nil" }
tame.Gen = { "gpu.random.Generator(7)", "gpu.random.Generator(math.mininteger)", "gpu.random.Generator(-1)" }
tame.Fp = { "gpu.ones(3, 4)", "gpu.arange(12):reshape(3, 4):astype('float32')", "gpu.zeros(3, 4)" }
-- matrices for gpu.linalg: square, batched, rectangular, singular, a view, empty
tame.Q = { "gpu.eye(3) * 2 + gpu.ones(3, 3)", "gpu.eye(4):reshape(1, 4, 4):expand(2, 4, 4)", "gpu.ones(4, 3)",
  "gpu.zeros(3, 3)", "(gpu.arange(9):reshape(3, 3):astype('float64') + gpu.eye(3, {dtype = 'float64'}) * 9).T",
  "gpu.zeros(0, 2, 2)", "gpu.eye(2, {dtype = 'float16'})" }

local wild = {}
wild.A = array
wild.A4 = function() return math.random(4) == 1 and array() or pick(arrays4) end
wild.I = function() return math.random(5) == 1 and array() or pick(indices) end
wild.M = function() return math.random(5) == 1 and array() or pick(masks) end
wild.n = function()
  local r = math.random(3)
  return r == 1 and pick(small) or r == 2 and pick(ints) or pick(floats)
end
wild.ax = function()                     -- an axis: a number, a table of them, or nil
  local r = math.random(6)
  if r == 1 then return "nil" elseif r == 2 then return pick { "{1, 2}", "{1, 1}", "{}", "{-1, math.mininteger}", "{0/0}" } end
  return r <= 4 and pick(small) or pick(ints)
end
wild.s = function() return math.random(3) == 1 and wild.n() or pick(shapes) end
wild.data = function() return math.random(4) == 1 and wild.n() or pick(data) end
wild.key = function() return pick(keys) end
wild.L = function() return pick(lists) end
wild.d = function() return math.random(4) > 1 and ("'%s'"):format(pick(dtypes)) or pick { "'x'", "1", "nil", "'int'", "'half'" } end
wild.B = function() return math.random(2) == 1 and array() or wild.n() end
wild.Z = array
wild.Zb = wild.B
wild.K = array
wild.one = array
wild.ax1 = function() return math.random(2) == 1 and wild.ax() or pick(ints) end
wild.P = function() return pick { "{1}", "{1, 1}", "{math.mininteger, 1}", "{1, 2, 3}", "{0, 1}", "{2^53, 1}", "{}" } end
wild.Y = wild.I
wild.R = array
wild.W = array
wild.R5 = array
wild.C = array
wild.CS = function() return pick(shapes) end
wild.S = array
wild.G = array
wild.F = function() return pick { "function() error('boom') end", "function() return 1 end", "print", "1", "nil",
  "function() return gpu.ones(7) end" } end
wild.st = function() return pick { "{seed = 0/0}", "{seed = -1, offset = -1}", "{}", "{seed = 2^63}",
  "{seed = math.mininteger, offset = math.maxinteger}", "{offset = 0/0}", "{seed = 'x'}", "1" } end
wild.str = function() return pick { "'medium'", "'cuda'", "'cuda:9'", "'cuda:-1'", "1", "nil", "''", "'cuda:0'" } end
wild._ = function() return wild.v() end
wild.Gen = function() return math.random(2) == 1 and pick(tame.Gen) or wild.v() end
wild.Fp = array
wild.Q = array
wild.v = function()                      -- anything
  local r = math.random(100)
  if r <= 35 then return array() elseif r <= 60 then return wild.n()
  elseif r <= 70 then return pick(shapes) elseif r <= 78 then return opts()
  elseif r <= 82 then return pick(data) elseif r <= 86 then return pick(keys)
  elseif r <= 90 then return pick(lists) end
  return pick(misc)
end

---------------------------------------------------------------------------------------------
-- What to call
---------------------------------------------------------------------------------------------

local skip = { bench = true, profile = true, range = true, save = true, savez = true, savez_compressed = true,
  save_safetensors = true, savetxt = true, load = true, loadz = true, load_safetensors = true, loadtxt = true,
  load_idx = true, _load_records = true, _png_save = true, _png_load = true, _save_bytes = true, clock = true,
  synchronize = true }

-- Calls by name: gpu.f as "f", methods as "m:f", gpu.random/fused/dnn/linalg/fft/special as
-- "r:f"/"f:f"/"d:f"/"la:f"/"ft:f"/"sp:f",
-- metamethods as "meta:__f".
local meta = getmetatable(gpu.zeros(1))
local spaces = {
  ["m:"] = { gpu.methods, "gpu.methods" }, ["r:"] = { gpu.random, "gpu.random" },
  ["f:"] = { gpu.fused, "gpu.fused" }, ["d:"] = { gpu.dnn, "gpu.dnn" }, ["la:"] = { gpu.linalg, "gpu.linalg" },
  ["ft:"] = { gpu.fft, "gpu.fft" }, ["sp:"] = { gpu.special, "gpu.special" },
  ["meta:"] = { meta, "getmetatable(gpu.zeros(1))" }, [""] = { gpu, "gpu" },
  ["g:"] = { getmetatable(gpu.random.Generator(1)).__index, "getmetatable(gpu.random.Generator(1)).__index" } }
local keywords = {}
for w in ("and break do else elseif end false for function goto if in local nil not or repeat return " ..
  "then true until while"):gmatch("%a+") do keywords[w] = true end
local function resolve(name)
  local p, rest = name:match("^(%a+:)(.*)$")
  if not p then p, rest = "", name end
  local space = spaces[p]
  local src = (keywords[rest] or not rest:match("^[%a_][%w_]*$")) and ("%s[%q]"):format(space[2], rest)
    or space[2] .. "." .. rest
  return space[1][rest], src
end

local names = {}
for prefix, space in pairs(spaces) do
  for k, v in pairs(space[1]) do
    if type(v) == "function" and not skip[k] then names[#names + 1] = prefix .. k end
  end
end
table.sort(names)

-- Argument kinds of the functions whose arguments must roughly fit to get past the first
-- check (a shape, an axis, 4-d inputs); "o" is the function's own options when declared.
local sig = {}                          -- name -> list of signatures
local function sigs(kinds, list)
  for f in list:gmatch("%S+") do
    sig[f] = sig[f] or {}
    table.insert(sig[f], kinds)
  end
end
-- The elementwise ops by kind (kernels/elem_ops.h, as gpu._jit lists them): "name name ..."
local function ops_of(kind_of, ...)
  local want, out = {}, {}
  for _, k in ipairs { ... } do want[k] = true end
  for name, k in pairs(kind_of) do if want[k] then out[#out + 1] = name end end
  table.sort(out)
  return table.concat(out, " ")
end
local unary = ops_of(gpu._jit.unary, "US", "UF", "UB")           -- those with an in-place form
local predicates = ops_of(gpu._jit.unary, "UP", "UL")
local binary = ops_of(gpu._jit.binary, "BA", "BD")
local bitwise = ops_of(gpu._jit.binary, "BB", "BS")
local compare = ops_of(gpu._jit.binary, "BC", "BL")
sigs("A", unary .. " " .. predicates .. " contiguous copy clone flatten m:totable detach " ..
  "meta:__unm meta:__tostring m:shuffle m:permutation r:shuffle r:permutation m:close meta:__close " ..
  unary:gsub("([%w_]+)", "%1_"))
local ub = ops_of(gpu._jit.unary, "UB")
sigs("Z", ub .. " " .. ub:gsub("([%w_]+)", "%1_") .. " meta:__bnot")
sigs("A B", binary .. " " .. binary:gsub("([%w_]+)", "%1_") .. " " .. compare .. " " ..
  "meta:__add meta:__sub meta:__mul meta:__div meta:__idiv meta:__mod meta:__pow")
sigs("Z Zb", bitwise .. " " .. bitwise:gsub("([%w_]+)", "%1_") .. " meta:__band meta:__bor meta:__bxor " ..
  "meta:__shl meta:__shr")
sigs("A K", "matmul dot outer")
sigs("one B", "meta:__lt meta:__le")
sigs("one", "m:item")
sigs("A", "meta:__len m:item")
sigs("A ax o", table.concat(gpu._ops.reductions, " ") .. " std sort argsort")
sigs("A ax1 o", "cumsum cumprod sort argsort")
sigs("A n ax1 o", "topk")
sigs("M B B", "where")
sigs("A B B", "lerp clip")
sigs("A ax1 ax1", "transpose")
sigs("A s", "reshape view expand tile")
sigs("A n n", "reshape view expand")
sigs("A P", "permute")
sigs("A ax", "squeeze flip")
sigs("A ax1", "unsqueeze squeeze")
sigs("A n ax1", "roll repeat repeat_interleave split")
sigs("A I ax1", "take")
sigs("A ax1 I", "index")
sigs("A ax1 I B o", "index_put_")
sigs("A M", "masked_select")
sigs("L ax1", "concat concatenate stack")
sigs("A d", "astype")
sigs("A o", "to zeros_like ones_like empty_like")
sigs("A n o", "full_like")
sigs("A n", "fill_ m:choice m:bernoulli")
sigs("s o", "zeros ones empty r:rand r:randn rand randn")
sigs("n n n o", "arange linspace")
sigs("n o", "arange eye r:permutation")
sigs("s n o", "full")
sigs("n n o", "eye r:choice")
sigs("data o", "array")
sigs("n n s o", "r:uniform r:normal r:randint")
sigs("n s o", "r:bernoulli")
sigs("n", "r:seed")
sigs("st", "r:set_state")
sigs("A key", "meta:__index")
sigs("A key B", "meta:__newindex")
sigs("A4 A4 o", "d:conv2d")
sigs("A4 o", "d:max_pool2d d:avg_pool2d im2col")
sigs("A4 A4 A4 o", "d:max_pool2d_backward d:avg_pool2d_backward")
sigs("A4 A4 s o", "d:conv2d_backward_data d:conv2d_backward_filter")
sigs("C CS o", "col2im")
sigs("A4 A A A A o", "d:batch_norm")
sigs("A A A o", "d:layer_norm")
sigs("A A A A o", "d:rnn")
sigs("Fp Fp Fp Fp _ o", "f:adam_")
sigs("Fp Fp _ o", "f:sgd_")
sigs("Fp Fp Fp o", "f:sgd_")
sigs("Fp Fp Fp _ _ o", "f:rmsprop_")
sigs("Fp Fp Fp o", "f:adagrad_")
sigs("Fp Fp Fp Fp o", "f:adadelta_ f:adamax_ f:nadam_ f:radam_")
sigs("Fp Y o", "f:cross_entropy")
sigs("Fp Y R o", "f:cross_entropy_backward")
sigs("Fp W R5", "f:linear")
sigs("Q o", "la:inv la:det la:slogdet la:cholesky la:qr la:svd la:svdvals la:eigh la:eigvalsh la:eig la:eigvals")
sigs("Q K o", "la:solve la:lstsq")
sigs("A n ax1 o", "ft:fft ft:ifft ft:rfft ft:irfft ft:hfft ft:ihfft")
sigs("A s ax o", "ft:fft2 ft:ifft2 ft:fftn ft:ifftn ft:rfft2 ft:irfft2 ft:rfftn ft:irfftn")
sigs("n n o", "ft:fftfreq ft:rfftfreq")
sigs("A ax", "ft:fftshift ft:ifftshift")
sigs("A", "sp:erf sp:erfc sp:erfcx sp:erfinv sp:erfcinv sp:gammaln sp:lgamma sp:digamma sp:psi sp:ndtr sp:ndtri " ..
  "sp:log_ndtr sp:i0 sp:i0e sp:i1 sp:i1e sp:entr sp:bessel_j0 sp:bessel_j1 sp:j0 sp:j1 sp:exp1 sp:expi sp:expit " ..
  "sp:expm1 sp:log1p sp:sinc sp:logit")
sigs("A A", "sp:xlogy sp:xlog1py sp:betaln sp:beta sp:zeta sp:gammainc sp:gammaincc sp:rel_entr")
sigs("n A", "sp:polygamma")
sigs("A n", "sp:multigammaln sp:logit")
sigs("A A A", "sp:betainc")
sigs("S", "m:backward")
sigs("S A", "m:backward")
sigs("G F", "m:register_hook")
sigs("G A", "m:set_grad")
sigs("G", "m:retain_grad m:requires_grad m:is_leaf")
sigs("str", "set_matmul_precision set_device set_default_dtype")
sigs("n n n n n n n n n", "zeros ones empty rand randn")
sigs("A n n n n n n n n n", "reshape view expand tile")

for _, alias in ipairs(gpu._ops.aliases) do sig[alias] = sig[gpu._ops.aliases[alias]] end   -- NumPy's names

-- Calls allowed to change their arguments when they succeed.
local inplace = { ["meta:__newindex"] = true, ["meta:__close"] = true, ["meta:__gc"] = true, ["m:close"] = true,
  ["m:shuffle"] = true, ["r:shuffle"] = true, ["g:shuffle"] = true, ["d:batch_norm"] = true, ["m:backward"] = true,
  put = true, ["m:put"] = true, putmask = true, place = true, fill_diagonal = true }       -- NumPy's in-place routines
local function is_inplace(name) return inplace[name] or name:sub(-1) == "_" end

---------------------------------------------------------------------------------------------
-- Evaluating expressions, describing calls
---------------------------------------------------------------------------------------------

local compiled = setmetatable({}, { __mode = "k" })
local function eval(src)
  local f = compiled[src]
  if not f then
    f = assert(load("return " .. src, "=apifuzz", "t"))
    compiled[src] = f
  end
  local ok, v = pcall(f)
  if ok then return v end
  return nil
end

-- src evaluated with a1 bound to the given value.
local function eval_with(src, a1)
  local key = "@" .. src
  local f = compiled[key]
  if not f then
    f = assert(load("local a1 = ... return " .. src, "=apifuzz", "t"))
    compiled[key] = f
  end
  local ok, v = pcall(f, a1)
  if ok then return v end
  return nil
end

local function is_array(v) return getmetatable(v) == meta end

-- A snapshot of what an array holds, as a string: dtype, shape, version and elements
-- (big broadcast views: a few elements at their corners).
local function serialize(v, out)
  if type(v) == "table" then
    out[#out + 1] = "{"
    for _, e in ipairs(v) do serialize(e, out) end
    out[#out + 1] = "}"
  elseif math.type(v) == "float" then
    out[#out + 1] = v ~= v and "nan" or ("%a"):format(v)
  else
    out[#out + 1] = tostring(v)
  end
end

local function snapshot(x)
  if x:is_closed() then return "closed" end
  local out = { x.dtype, table.concat(x.shape, ","), tostring(x._version) }
  if x.size <= 4096 then
    local ok, t = pcall(x.totable, x)
    serialize(ok and t or "totable failed: " .. tostring(t), out)
  elseif x.ndim > 0 then
    for _, corner in ipairs { 1, -1, 2 } do
      local at = {}
      for d = 1, x.ndim do at[d] = (corner == 2 and d % 2 == 0) and -1 or (corner == 2 and 1 or corner) end
      local ok, e = pcall(function() return x[at] end)
      serialize(ok and e or "index failed", out)
    end
  end
  return table.concat(out, " ")
end

-- The arrays a call was given, top level and one table deep, each with its snapshot.
local function snapshots(args, n)
  local s = {}
  local function add(v, where)
    if is_array(v) then s[#s + 1] = { v, snapshot(v), where } end
  end
  for i = 1, n do
    add(args[i], "argument " .. i)
    if type(args[i]) == "table" and getmetatable(args[i]) == nil then
      for k, v in pairs(args[i]) do add(v, ("argument %d[%s]"):format(i, tostring(k))) end
    end
  end
  return s
end

-- Global state a failed call must leave alone.
local function globals()
  local st = gpu.random.get_state()
  return ("random %s/%s, matmul %s, device %s, default dtype %s, inference %s"):format(tostring(st.seed),
    tostring(st.offset), gpu.get_matmul_precision(), gpu.device(), gpu.get_default_dtype(),
    tostring(gpu.is_inference_mode_enabled()))
end

---------------------------------------------------------------------------------------------
-- Checks
---------------------------------------------------------------------------------------------

local function count(name, ok)
  if not stats then return end
  local c = stats[name] or { 0, 0 }
  stats[name] = c
  c[1], c[2] = c[1] + 1, c[2] + (ok and 1 or 0)
end

local problems = 0
local function problem(kind, desc, detail)
  problems = problems + 1
  print(("apifuzz: %s: %s%s"):format(kind, desc, detail and ("  --  " .. detail) or ""))
  if problems >= 50 then
    print(("apifuzz: %d problems (seed %d), stopping"):format(problems, seed))
    os.exit(1, true)
  end
end

-- An array a call returned must describe itself consistently.
local function check_result(r, desc)
  if not is_array(r) then return end
  if r:is_closed() then return problem("a closed array returned", desc) end
  local shape, n, zero = r.shape, 1, false       -- n: the product of the non-zero extents
  for _, e in ipairs(shape) do
    if math.type(e) ~= "integer" or e < 0 then return problem("bad shape", desc, table.concat(shape, ",")) end
    if e == 0 then zero = true
    elseif n > (1 << 62) // e then n = math.huge   -- past the limit (and int64)
    else n = n * e end
  end
  if #shape ~= r.ndim or n > 1 << 62 or r.size ~= (zero and 0 or n) then
    problem("inconsistent result", desc, ("shape %s, ndim %d, size %s"):format(table.concat(shape, ","), r.ndim, r.size))
  end
end

-- An error is a string that names the function. Called through pcall, a function is
-- named by the module field that holds it (lauxlib, lrun.c), which methods that exist
-- only in gpu.methods (x:shuffle), a Generator's methods and metamethods lack; called as x:shuffle() they are
-- named by the call, so only the others are held to it here.
local function check_error(e, desc, named)
  if type(e) ~= "string" then return problem("error value is not a string", desc, type(e)) end
  if named and (e:find("to '?'", 1, true) or e:find("^%?:")) then
    problem("error does not name the function", desc, e)
  end
end

---------------------------------------------------------------------------------------------
-- One call
---------------------------------------------------------------------------------------------

-- An argument that is the first one again, or a view of it ("@" marks them; a1 is the
-- first argument): in-place ops must cope with operands that overlap their target.
local aliases = { "a1", "a1.T", "a1:flip()", "a1[1]", "a1:reshape(-1)", "a1[{ {1, -1, 2} }]", "a1:unsqueeze(1)",
  "a1:expand(2, table.unpack(a1.shape))", "a1:detach()", "a1[{ {-1, 1, -1} }]", "a1:permute(a1.ndim, 1)" }

local function arguments(name)
  local bare = name:gsub("^m:", "")
  local kinds = sig[name] or sig[bare] or sig["m:" .. name]
  kinds = kinds and pick(kinds)
  if name:find("^g:") then                -- a Generator's methods: gpu.random's, on it
    bare = name:gsub("^g:", "r:")
    kinds = "Gen " .. (sig[bare] and pick(sig[bare]) or "")
  end
  local own = declared[bare:gsub("^r:", "random."):gsub("^f:", "fused."):gsub("^d:", "dnn."):gsub("^la:", "linalg.")
    :gsub("^ft:", "fft.")]
  local srcs = {}
  if kinds and math.random(4) > 1 then
    local list = {}
    for k in kinds:gmatch("%S+") do list[#list + 1] = k end
    -- mostly ordinary arguments with one wild one (or none), else all wild
    local calm = math.random(3) > 1
    local wildone = math.random(#list + 1)
    for i, k in ipairs(list) do
      local w = not calm or i == wildone
      if w and math.random(16) == 1 then srcs[#srcs + 1] = wild.v()   -- now and then, anything
      elseif k == "o" then srcs[#srcs + 1] = opts(own, not w)
      elseif w then srcs[#srcs + 1] = wild[k]()
      else srcs[#srcs + 1] = pick(tame[k]) end
    end
    if math.random(12) == 1 then srcs[#srcs + 1] = wild.v() end     -- one too many
  else
    for j = 1, math.random(0, 6) do srcs[j] = wild.v() end
    if math.random(2) == 1 then srcs[1] = array() end
  end
  if #srcs >= 2 and math.random(6) == 1 then                         -- the receiver again
    srcs[math.random(2, #srcs)] = "@" .. pick(aliases)
  end
  return srcs
end

-- Arrays kept from call to call (results, {value, source}): in-place ops, closes and the
-- collector work on them over many calls, as in a program. A call that uses one names it
-- live[k]; the seed's run (deterministic) rebuilds it.
local live = {}

local function take_live(srcs, args)
  local used = {}
  for j = 1, #srcs do
    if #live > 0 and srcs[j]:sub(1, 1) ~= "@" and math.random(10) == 1 then
      local k = math.random(#live)
      args[j], srcs[j] = live[k][1], ("live[%d]"):format(k)
      used[#used + 1] = ("live[%d] = %s"):format(k, live[k][2])
    end
  end
  return #used > 0 and ("  -- " .. table.concat(used, "; ")) or ""
end

local function keep_live(v, desc)
  if not is_array(v) or math.random(4) > 1 then return end
  local entry = { v, #desc > 200 and desc:sub(1, 200) .. "..." or desc }
  if #live < 16 then live[#live + 1] = entry else live[math.random(#live)] = entry end
end

-- An async collective (a world of one) on a live array that is closed while it flies.
local function async_close(x)
  local d = gpu.distributed
  if not d.is_initialized() then d.init() end
  local n = x.size > 0 and x.size < 1 << 20 and x.size or 1
  local ok, w = pcall(d.all_reduce, x, { async = true })
  if not ok then return end
  pcall(x.close, x)
  local y = gpu.zeros(n)
  local done, err = pcall(w.wait, w)
  if not done and not tostring(err):find("closed", 1, true) then problem("async wait after a close", tostring(err)) end
  if y:max():item() ~= 0 then problem("an async collective wrote into a new array", "") end
end

local function stir_live()
  if #live == 0 then return end
  local r, k = math.random(100), math.random(#live)
  if r == 1 then pcall(live[k][1].close, live[k][1])      -- closed under its views and graphs
  elseif r == 2 then table.remove(live, k)                -- left to the collector
  elseif r == 3 then collectgarbage("step")
  elseif r == 4 and not live[k][1]:is_closed() then async_close(live[k][1]) end
end

-- Hostile callbacks: Lua code that runs in the middle of the call (src/lua/lhold.c). A
-- finalizer that the op's first allocation runs (gpu._hold.collect_next) closes the call's
-- arrays or collects; or every table argument becomes a proxy whose __index and __len close
-- the arrays, collect, raise or yield before they answer. The call must survive and return
-- consistent arrays; what it raises, and what it leaves in arrays the callback closed, is the
-- callback's doing and not held against it.
local hostilities = { "gc-close", "gc-collect", "proxy-close", "proxy-collect", "proxy-error", "proxy-yield" }

local function make_hostile(how, args, n)
  local targets = {}
  for j = 1, n do if is_array(args[j]) then targets[#targets + 1] = args[j] end end
  local function act()
    if how:find("close") then for _, a in ipairs(targets) do pcall(a.close, a) end
    elseif how:find("collect") then collectgarbage()
    elseif how == "proxy-error" then error("apifuzz: hostile callback")
    elseif how == "proxy-yield" then coroutine.yield() end
  end
  if how:find("^gc") then
    setmetatable({}, { __gc = act })
    gpu._hold.collect_next()
  else
    for j = 1, n do
      local t = args[j]
      if type(t) == "table" and not is_array(t) then
        args[j] = setmetatable({}, { __index = function(_, k) act() return t[k] end,
                                     __len = function() act() return #t end })
      end
    end
  end
  return targets
end

local function call(name)
  local f, fsrc = resolve(name)
  local srcs = arguments(name)
  local n = #srcs
  local args = {}
  for j = 1, n do
    if srcs[j]:sub(1, 1) ~= "@" then args[j] = eval(srcs[j]) end
  end
  local origins = take_live(srcs, args)
  local hostile = math.random(8) == 1 and pick(hostilities) or nil
  local desc = fsrc .. "(" .. table.concat(srcs, ", ") .. ")"
  if desc:find("@") then                  -- aliases of the first argument
    local inner = {}
    for j = 1, n do
      inner[j] = j == 1 and "a1" or srcs[j]:gsub("^@", "")
      if srcs[j]:sub(1, 1) == "@" then args[j] = eval_with(srcs[j]:sub(2), args[1]) end
    end
    desc = ("(function() local a1 = %s return %s(%s) end)()"):format(srcs[1], fsrc, table.concat(inner, ", "))
  end
  desc = desc .. origins .. (hostile and ("  -- hostile: " .. hostile) or "")
  if trace then io.stderr:write("apifuzz call: ", desc, "\n") io.stderr:flush() end
  if hostile then
    local targets = make_hostile(hostile, args, n)
    local res = table.pack(coroutine.wrap(function() return pcall(f, table.unpack(args, 1, n)) end)())
    if res[1] then
      for i = 2, res.n do
        local r = res[i]
        local own = false
        for _, a in ipairs(targets) do own = own or rawequal(a, r) end
        if not own then check_result(r, desc) end
      end
    elseif res.n > 0 and type(res[2]) ~= "string" then
      problem("error value is not a string", desc, type(res[2]))
    end
    -- a finalizer a call made no array to run is run now, on this call's targets, not in
    -- the middle of a later call whose arguments it would close
    if hostile:find("^gc") then collectgarbage() end
    return
  end
  local before = snapshots(args, n)
  local g0 = globals()
  local t0 = gpu.clock()
  local res = table.pack(pcall(f, table.unpack(args, 1, n)))
  local dt = gpu.clock() - t0
  if dt > slow then problem(("slow (%.1f s)"):format(dt), desc) end
  count(name, res[1])
  if not res[1] then
    check_error(res[2], desc, not name:find("^m:") and not name:find("^meta:") and not name:find("^g:"))
    local g1 = globals()
    if g1 ~= g0 then problem("state changed after an error", desc, g0 .. " -> " .. g1) end
  end
  if not res[1] or not is_inplace(name) then
    for _, s in ipairs(before) do
      local now = snapshot(s[1])
      if now ~= s[2] then
        problem(res[1] and "argument changed by a call that is not in place" or "state changed after an error",
          desc, ("%s: %s -> %s%s"):format(s[3], s[2]:sub(1, 200), now:sub(1, 200),
            res[1] and "" or ("; error: " .. tostring(res[2]))))
      end
    end
  end
  if res[1] then
    for i = 2, res.n do
      -- an argument handed back as it is (gpu._check_value's answer) was checked when made
      local passed = false
      for k = 1, n do passed = passed or rawequal(args[k], res[i]) end
      if not passed then check_result(res[i], desc) end
      if type(res[i]) == "table" then for _, v in ipairs(res[i]) do check_result(v, desc) end end
    end
    if is_array(res[2]) and dt < 0.1 and not res[2]:is_closed() then
      if origins == "" then remember(desc) end
      keep_live(res[2], desc)
    end
  end
  stir_live()
end

-- An options example of largs.c's declarations (gpu._options) with its options replaced
-- by hostile ones: valid arguments, so the options are what is read.
local examples = {}
for name, d in pairs(gpu._options) do
  if not d.example:find("tmpname") then examples[#examples + 1] = { name, d.example, d.keys } end
end
table.sort(examples, function(a, b) return a[1] < b[1] end)

local function call_example()
  local e = pick(examples)
  local src = e[2]:gsub("%%s", function() return opts(e[3]) end)
  -- numbers in the example become extreme now and then
  src = src:gsub("%f[%w.]%d+%f[^%w.]", function(num) if math.random(6) == 1 then return "(" .. wild.n() .. ")" end end)
  if trace then io.stderr:write("apifuzz call: ", src, "\n") io.stderr:flush() end
  local chunk = load(src, "=apifuzz", "t")
  if not chunk then return end
  local g0 = globals()
  local t0 = gpu.clock()
  local ok, err = pcall(chunk)
  local dt = gpu.clock() - t0
  if dt > slow then problem(("slow (%.1f s)"):format(dt), src) end
  count("example " .. e[1], ok)
  if not ok then
    check_error(err, src, true)
    local g1 = globals()
    if g1 ~= g0 then problem("state changed after an error", src, g0 .. " -> " .. g1) end
  end
end

for i = 1, ncalls do
  if math.random(5) == 1 then call_example() else call(pick(names)) end
  if i % 500 == 0 then collectgarbage() end
end
if stats then
  local list = {}
  for name, c in pairs(stats) do list[#list + 1] = { name, c[1], c[2] } end
  table.sort(list, function(a, b) return a[3] / a[2] < b[3] / b[2] end)
  for _, e in ipairs(list) do io.stderr:write(("%-28s %5d calls %5.1f%% succeed\n"):format(e[1], e[2], 100 * e[3] / e[2])) end
end
if problems > 0 then
  print(("apifuzz: %d problems (seed %d)"):format(problems, seed))
  os.exit(1, true)
end
print("apifuzz ok", seed)

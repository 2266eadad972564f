-- gpu.autograd.rules: the one table of every op the binding dispatches, by the name it
-- dispatches under ("add" for gpu.add, x:add and x + y; "dnn.conv2d"; "random.rand").
--
--   rules[name] = { backward = function(g, node, y) return g1, g2, ... end,
--                   saves = {i, ...},   -- the arguments whose values backward reads
--                                       -- (default: all; checked against their versions)
--                   uses_y = true,      -- backward reads the result y (version checked)
--                   record = function(node, ...results) }  -- places nodes itself
--                                       -- (given the raw node: R._node_args(node))
--   rules[name] = false                 -- not differentiable by nature: the result is
--                                       -- untracked (zero gradient, as PyTorch gives)
--   no entry                            -- "<name> is not differentiable" before it runs
--
-- backward gets the output's gradient g, the call's arguments as given (args[1..args.n];
-- args.extra the results after the first) and the result y, and returns one gradient
-- per argument position (nil where none flows). (The rules name the arguments 'node'.) The engine sums
-- each gradient back to its input's shape and casts it to its dtype and device.
-- Complex operands follow PyTorch (rule_helpers.lua, "complex"): each derivative factor is
-- conjugated, cj(f'(x)), which is the factor itself for real operands; a real input that
-- met a complex operand takes the real part of its gradient (the engine's cast).
-- Every rule is written in dispatched ops, so with create_graph = true the backward pass
-- is itself recorded and gradients of gradients work; spec/grad_rules_spec.lua checks
-- each rule against central differences in float64.

local gpu = require "gpu"

local R = {}

local H = require "gpu.autograd.rule_helpers"
local tracked, norm_axis = H.tracked, H.norm_axis
local cj, sgn = H.conj, H.sgn

-- what gpu.autograd's engine takes from here
R._HEAD, R._op_node, R._node_args, R._custom_rule = H.HEAD, H.op_node, H.node_args, H.custom_rule
R._unbroadcast, R._scatter_add = H.unbroadcast, H.scatter_add

-- The reduced axes of a reduction call (x, axis, opts): a set of 1-based axes, keepdims,
-- the axis argument normalised (nil for all) and the options.
local function reduce_args(x, axis, opts)
  if type(axis) == "table" and type(next(axis)) == "string" then opts, axis = axis, nil end
  local nd = x.ndim
  local red, list = {}, nil
  if axis == nil then
    for i = 1, nd do red[i] = true end
  else
    list = type(axis) == "number" and { axis } or axis
    for _, a in ipairs(list) do red[norm_axis(a, nd)] = true end
  end
  return red, opts and opts.keepdims, list, opts
end

-- g (or a kept-dims result) reshaped to broadcast against x: reduced axes of size 1
local function unreduce(g, x, red, keepdims)
  if keepdims then return g end
  local s = x.shape
  for i = 1, #s do if red[i] then s[i] = 1 end end
  return g:reshape(s)
end

local function count(x, red)
  local c, s = 1, x.shape
  for i = 1, #s do if red[i] then c = c * s[i] end end
  return c
end

local function f(v) return type(v) == "number" end

-- ---- not differentiable by nature --------------------------------------------------------------

for _, name in ipairs {
  -- comparisons, logical and bitwise ops, predicates: boolean or integer results
  "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
  "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift",
  "isnan", "isinf", "isfinite", "all", "any", "isreal", "iscomplex", "is_complex", "isrealobj", "iscomplexobj",
  -- piecewise constant: zero gradient almost everywhere (PyTorch gives zeros)
  "floor", "ceil", "round", "trunc", "floordiv",
  -- positions
  "argmax", "argmin", "argsort", "argpartition", "_searchsorted",
  -- counts
  "histcounts",
  -- a routine's kernel, run under gpu.no_grad (gpu.scatter_reduce records its own gradient)
  "_scatter_extreme",
  -- results that do not depend on the values, or are not arrays
  "zeros_like", "ones_like", "empty_like", "full_like", "item", "totable", "is_contiguous",
  "empty", "zeros", "ones", "full", "arange", "linspace", "eye",
  "save", "savez", "savez_compressed", "save_safetensors", "savetxt", "load", "loadz", "load_safetensors",
  "loadtxt", "load_idx", "_load_records", "isatty", "int", "long", "bool", "_png_save", "_png_load", "_save_bytes",
  "_safetensors_bytes", "_safetensors_parse",
  -- random draws (their parameters are numbers; bernoulli's p array gets no gradient)
  "random.rand", "random.randn", "random.uniform", "random.normal", "random.randint", "random.bernoulli",
  "random.seed", "random.get_state", "random.set_state",
  -- NumPy's distributions (no reparameterised gradients: gpu.distributions' rsample has them)
  "random.beta", "random.binomial", "random.chisquare", "random.dirichlet", "random.exponential", "random.f",
  "random.gamma", "random.geometric", "random.gumbel", "random.hypergeometric", "random.laplace", "random.logistic",
  "random.lognormal", "random.logseries", "random.multinomial", "random.multivariate_normal",
  "random.negative_binomial", "random.noncentral_chisquare", "random.pareto", "random.poisson", "random.power",
  "random.rayleigh", "random.standard_cauchy", "random.standard_exponential", "random.standard_gamma",
  "random.standard_t", "random.triangular", "random.vonmises", "random.wald", "random.weibull", "random.zipf",
  "multinomial", "poisson",
  "dnn.available",
} do
  R[name] = false
end

-- ---- elementwise, unary --------------------------------------------------------------------------

local SQRT_2PI_INV = 1 / math.sqrt(2 * math.pi)
local function unary(name, fn, opts)
  local rule = { backward = function(g, node, y) return fn(g, node[1], y) end }
  if opts then for k, v in pairs(opts) do rule[k] = v end end
  R[name] = rule
end
unary("neg", function(g) return -g end, { saves = {} })
unary("abs", function(g, x) return g * sgn(x) end)
unary("exp", function(g, x, y) return g * cj(y) end, { saves = {}, uses_y = true })
unary("expm1", function(g, x, y) return g * cj(y + 1) end, { saves = {}, uses_y = true })
unary("log", function(g, x) return g / cj(x) end)
unary("log1p", function(g, x) return g / cj(x + 1) end)
unary("log2", function(g, x) return g / cj(x * math.log(2)) end)
unary("log10", function(g, x) return g / cj(x * math.log(10)) end)
unary("sqrt", function(g, x, y) return g * 0.5 / cj(y) end, { saves = {}, uses_y = true })
unary("rsqrt", function(g, x, y) return g * -0.5 * cj(y * y * y) end, { saves = {}, uses_y = true })
unary("square", function(g, x) return g * cj(x * 2) end)
unary("reciprocal", function(g, x, y) return -g * cj(y * y) end, { saves = {}, uses_y = true })
unary("tanh", function(g, x, y) return g * cj(1 - y * y) end, { saves = {}, uses_y = true })
unary("sigmoid", function(g, x, y) return g * cj(y * (1 - y)) end, { saves = {}, uses_y = true })
unary("relu", function(g, x) return gpu.where(x:gt(0), g, 0) end)
unary("softplus", function(g, x) return g * x:sigmoid() end)
unary("gelu", function(g, x)
  local cdf = ((x * (1 / math.sqrt(2))):erf() + 1) * 0.5
  return g * (cdf + x * (x * x * -0.5):exp() * SQRT_2PI_INV)
end)
unary("erf", function(g, x) return g * (-(x * x)):exp() * (2 / math.sqrt(math.pi)) end)
unary("sin", function(g, x) return g * cj(x:cos()) end)
unary("cos", function(g, x) return -g * cj(x:sin()) end)
unary("tan", function(g, x, y) return g * cj(y * y + 1) end, { saves = {}, uses_y = true })
unary("asin", function(g, x) return g / cj((1 - x * x):sqrt()) end)
unary("acos", function(g, x) return -g / cj((1 - x * x):sqrt()) end)
unary("atan", function(g, x) return g / cj(x * x + 1) end)
unary("sinh", function(g, x) return g * cj(x:cosh()) end)
unary("cosh", function(g, x) return g * cj(x:sinh()) end)
unary("asinh", function(g, x) return g / cj((x * x + 1):sqrt()) end)
-- sqrt(x - 1) sqrt(x + 1), not sqrt(x^2 - 1): the principal branch's derivative for complex x
unary("acosh", function(g, x) return g / cj((x - 1):sqrt() * (x + 1):sqrt()) end)
unary("atanh", function(g, x) return g / cj(1 - x * x) end)
-- sign: piecewise constant for reals (zero gradient, PyTorch's); for complex z / |z| (NumPy 2,
-- PyTorch's sgn), whose gradient is the part of g across z, over |z| (0 at 0)
unary("sign", function(g, x, y)
  if not H.is_complex(x) then return gpu.zeros_like(x) end
  local a = x:abs()
  local zero = a:eq(0)
  local along = y * H.part(g * y:conj(), 1)
  return gpu.where(zero, 0, (g - along) / gpu.where(zero, 1, a))
end, { uses_y = true })

-- copies, casts and moves: the engine casts and moves the gradient back (x:half() ... are
-- astype's shorthands; the integer and bool casts are listed as not differentiable)
for _, name in ipairs { "contiguous", "copy", "clone", "astype", "to", "cpu", "cuda", "array",
                        "half", "bfloat16", "float", "double" } do
  R[name] = { backward = function(g) return g end, saves = {} }
end
-- views and reshapes
local function reshape_back(g, node) return g:reshape(node[1].shape) end
for _, name in ipairs { "reshape", "view", "flatten", "squeeze", "unsqueeze" } do
  R[name] = { backward = reshape_back, saves = {} }
end
R.expand = { backward = function(g) return g end, saves = {} }     -- the engine sums the broadcast axes
R.transpose = { saves = {}, backward = function(g, node)
  local x, a, b = node[1], node[2], node[3]
  if a == nil then return g:transpose() end
  if type(a) == "table" then
    local inv = {}
    for i, p in ipairs(a) do inv[norm_axis(p, x.ndim)] = i end
    return g:transpose(inv)
  end
  return g:transpose(a, b)
end }
R.permute = { saves = {}, backward = function(g, node)
  local x = node[1]
  local p = type(node[2]) == "table" and node[2] or { table.unpack(node, 2, node.n) }
  local inv = {}
  for i, q in ipairs(p) do inv[norm_axis(q, x.ndim)] = i end
  return g:permute(inv)
end }
R.flip = { saves = {}, backward = function(g, node) return g:flip(node[2]) end }
R.roll = { saves = {}, backward = function(g, node)
  local shift, axis = node[2], node[3]
  if type(shift) == "number" then return g:roll(-shift, axis) end
  local neg = {}
  for i, s in ipairs(shift) do neg[i] = -s end
  return g:roll(neg, axis)
end }
R.tile = { saves = {}, backward = function(g, node)
  local x = node[1]
  local reps = type(node[2]) == "table" and node[2] or { table.unpack(node, 2, node.n) }
  local xs, nd = x.shape, math.max(x.ndim, #reps)
  local s, r = {}, {}
  for i = 1, nd do
    s[i] = xs[x.ndim - nd + i] or 1
    r[i] = reps[#reps - nd + i] or 1
  end
  local split, axes = {}, {}
  for i = 1, nd do
    split[#split + 1] = r[i]
    axes[#axes + 1] = #split
    split[#split + 1] = s[i]
  end
  return g:reshape(split):sum(axes):reshape(xs)
end }

-- ---- elementwise, binary ---------------------------------------------------------------------------

local function binary(name, fn, opts)
  local rule = { backward = function(g, node, y) return fn(g, node[1], node[2], y) end }
  if opts then for k, v in pairs(opts) do rule[k] = v end end
  R[name] = rule
end
binary("add", function(g) return g, g end, { saves = {} })
binary("sub", function(g) return g, -g end, { saves = {} })
-- each operand's values are needed for the other's gradient only (x * 2 keeps nothing of x)
binary("mul", function(g, a, b) return g * cj(b), g * cj(a) end, { saves = function(node)
  local n = node[2]
  local s = {}
  if tracked(node[H.HEAD + n + 2]) then s[#s + 1] = 1 end
  if tracked(node[H.HEAD + n + 1]) then s[#s + 1] = 2 end
  return s
end })
binary("div", function(g, a, b, y)
  return g / cj(b), (not f(b)) and -g * cj(y / b) or nil
end, { uses_y = true })
-- log(a) for pow's exponent gradient, in the result's kind: a complex y of a real base
-- (negative entries included) takes the principal complex log; a Lua complex scalar its own
local function base_log(a, y)
  if f(a) then
    if H.is_complex(y) and a < 0 then return gpu.complex(math.log(-a), math.pi) end
    return math.log(a)
  end
  if H.is_array(a) then
    if H.is_complex(y) and not H.is_complex(a) then a = a:astype(y.dtype) end
    return a:log()
  end
  return gpu.complex(math.log(a:abs()), a:arg())
end
binary("pow", function(g, a, b, y)
  local ga, gb
  if tracked(a) then ga = g * cj(b * a ^ (b - 1)) end
  if tracked(b) then gb = g * cj(y * base_log(a, y)) end
  return ga, gb
end, { uses_y = true })
binary("maximum", function(g, a, b)
  local m = f(a) and gpu.le(b, a) or a:ge(b)
  return gpu.where(m, g, 0), gpu.where(m, 0, g)
end)
binary("minimum", function(g, a, b)
  local m = f(a) and gpu.ge(b, a) or a:le(b)
  return gpu.where(m, g, 0), gpu.where(m, 0, g)
end)
binary("atan2", function(g, a, b)
  local d = a * a + b * b
  return g * b / d, -g * a / d
end)
binary("hypot", function(g, a, b, y) return g * a / y, g * b / y end, { uses_y = true })
binary("logaddexp", function(g, a, b, y)
  return tracked(a) and g * gpu.exp(a - y) or nil, tracked(b) and g * gpu.exp(b - y) or nil
end, { uses_y = true })
binary("mod", function(g, a, b)
  return g, (not f(b)) and -g * gpu.floordiv(a, b) or nil
end)

-- ---- NumPy's further elementwise math (exp2, sinc, fmod, copysign, ...) ---------------------------

-- predicates and integer math; rint piecewise constant (zero gradient, as round)
for _, name in ipairs { "signbit", "isposinf", "isneginf", "gcd", "lcm", "rint" } do R[name] = false end
local LN2 = math.log(2)
unary("exp2", function(g, x, y) return g * cj(y * LN2) end, { saves = {}, uses_y = true })
unary("cbrt", function(g, x, y) return g / (y * y * 3) end, { saves = {}, uses_y = true })
-- sinc' = (cos(pi x) - sinc(x)) / x, 0 at 0 (PyTorch's)
unary("sinc", function(g, x, y)
  local zero = x:eq(0)
  return gpu.where(zero, 0, g * ((x * math.pi):cos() - y) / gpu.where(zero, 1, x))
end, { uses_y = true })
unary("degrees", function(g) return g * (180 / math.pi) end, { saves = {} })
unary("radians", function(g) return g * (math.pi / 180) end, { saves = {} })
unary("frac", function(g) return g end, { saves = {} })
binary("logaddexp2", function(g, a, b, y)
  return tracked(a) and g * gpu.exp2(a - y) or nil, tracked(b) and g * gpu.exp2(b - y) or nil
end, { uses_y = true })
-- fmod(a, b) = a - trunc(a / b) b
binary("fmod", function(g, a, b)
  return g, (not f(b)) and -g * gpu.trunc(gpu.div(a, b)) or nil
end)
-- fmax/fmin: a's gradient where a is taken (a wins a tie, and b's NaN), b's elsewhere (PyTorch's)
local function pick(g, a, b, wins)
  if f(b) and b ~= b then return g, nil end
  local m = wins(a, b)
  if not f(b) then m = gpu.logical_or(m, b:isnan()) end
  return gpu.where(m, g, 0), gpu.where(m, 0, g)
end
binary("fmax", function(g, a, b) return pick(g, a, b, function(p, q) return f(p) and gpu.le(q, p) or p:ge(q) end) end)
binary("fmin", function(g, a, b) return pick(g, a, b, function(p, q) return f(p) and gpu.ge(q, p) or p:le(q) end) end)
-- copysign(a, b) = |a| sign(b): a's gradient y / a (0 at a = 0), none for b (PyTorch's)
binary("copysign", function(g, a, b, y)
  local gb = tracked(b) and gpu.zeros_like(b) or nil
  if not tracked(a) then return nil, gb end
  local zero = a:eq(0)
  return gpu.where(zero, 0, g * y / gpu.where(zero, 1, a)), gb
end, { uses_y = true })
-- nextafter: the identity in a, nothing in b (PyTorch's)
binary("nextafter", function(g, a, b) return g, tracked(b) and gpu.zeros_like(b) or nil end)
-- heaviside(x, h0): nothing in x (piecewise constant), h0's where x is 0 (PyTorch has no
-- derivative for it)
binary("heaviside", function(g, a)
  if f(a) then return nil, a == 0 and g or nil end
  return nil, gpu.where(a:eq(0), g, 0)
end)
R.lerp = { backward = function(g, node)
  local a, b, w = node[1], node[2], node[3]
  return g * cj(1 - w), g * cj(w), (not f(w)) and g * cj(b - a) or nil
end }
R.where = { backward = function(g, node)
  local c = node[1]
  return nil, gpu.where(c, g, 0), gpu.where(c, 0, g)
end, saves = { 1 } }
R.clip = { backward = function(g, node)
  local x, lo, hi = node[1], node[2], node[3]
  local inside, glo, ghi = g, nil, nil
  if lo ~= nil then
    local below = f(lo) and x:lt(lo) or gpu.gt(lo, x)
    inside = gpu.where(below, 0, inside)
    if not f(lo) then glo = gpu.where(below, g, 0) end
  end
  if hi ~= nil then
    local above = f(hi) and x:gt(hi) or gpu.gt(x, hi)
    inside = gpu.where(above, 0, inside)
    if not f(hi) then ghi = gpu.where(above, g, 0) end
  end
  return inside, glo, ghi
end }

-- ---- complex: making, splitting and viewing complex arrays (rules_complex.lua) ---------------------------

for name, rule in pairs(require "gpu.autograd.rules_complex") do
  assert(R[name] == nil, "gpu.autograd.rules: two rules for " .. name)
  R[name] = rule
end

-- ---- reductions and scans ------------------------------------------------------------------------------

R.sum = { saves = {}, backward = function(g, node)
  local x = node[1]
  local red, keep = reduce_args(x, node[2], node[3])
  return unreduce(g, x, red, keep):expand(x.shape)
end }
R.mean = { saves = {}, backward = function(g, node)
  local x = node[1]
  local red, keep = reduce_args(x, node[2], node[3])
  return (unreduce(g, x, red, keep) * (1 / count(x, red))):expand(x.shape)
end }
R.logsumexp = { uses_y = true, backward = function(g, node, y)
  local x = node[1]
  local red, keep = reduce_args(x, node[2], node[3])
  return unreduce(g, x, red, keep) * (x - unreduce(y, x, red, keep)):exp()
end }
local function extreme(g, node, y)
  local x = node[1]
  local red, keep, list = reduce_args(x, node[2], node[3])
  local yy = unreduce(y, x, red, keep)
  local mask = gpu.where(x:eq(yy), 1, 0):astype(x.dtype)
  -- a NaN maximum: its gradient goes to the NaNs
  mask = gpu.where(yy:isnan(), gpu.where(x:isnan(), 1, 0):astype(x.dtype), mask)
  local ties = mask:sum(list, { keepdims = true })
  return unreduce(g, x, red, keep) * mask / ties
end
R.max = { uses_y = true, backward = extreme }
R.min = { uses_y = true, backward = extreme }
R.var = { backward = function(g, node)
  local x = node[1]
  local red, keep, list, o = reduce_args(x, node[2], node[3])
  local ddof = o and o.ddof or 0
  local mu = x:mean(list, { keepdims = true })
  return unreduce(g, x, red, keep) * (x - mu) * (2 / (count(x, red) - ddof))
end }
R.std = { uses_y = true, backward = function(g, node, y)
  local x = node[1]
  local red, keep, list, o = reduce_args(x, node[2], node[3])
  local ddof = o and o.ddof or 0
  local mu = x:mean(list, { keepdims = true })
  return unreduce(g, x, red, keep) * (x - mu) / (unreduce(y, x, red, keep) * (count(x, red) - ddof))
end }
-- The matrix 2-norm, -2-norm and nuclear norm over axes (r, c) are the largest, the smallest
-- and the sum of the singular values: d s_i = u_i^T dx v_i, so the gradient is u diag(w g) vh
-- with w one-hot (2, -2) or ones (nuc), computed with the two axes moved last.
local function singular_norm_grad(g, x, red, ord)
  local perm, back, batch = {}, {}, {}
  local xs = x.shape
  for d = 1, x.ndim do if not red[d] then perm[#perm + 1] = d; batch[#batch + 1] = xs[d] end end
  for d = 1, x.ndim do if red[d] then perm[#perm + 1] = d end end
  for i, d in ipairs(perm) do back[d] = i end
  local u, s, vh = gpu.linalg.svd(x:permute(perm), { full_matrices = false })
  local k = s.shape[s.ndim]
  local w = ord == "nuc" and gpu.ones(k, { dtype = s.dtype, device = s.device })
    or gpu.arange(k, { device = s.device }):eq(ord == 2 and 0 or k - 1):astype(s.dtype)
  local gs = w * (#batch > 0 and g:reshape(batch) or g:reshape({})):unsqueeze(-1)
  return (u * gs:unsqueeze(-2)):matmul(vh):permute(back)
end

-- The matrix 1/-1 (max/min column sum of |x|) and inf/-inf (max/min row sum) norms over
-- (row, col) axes: sign(x) on the extreme columns (rows), shared among ties.
local function abs_sum_norm_grad(g, x, red, list, keep, ord)
  local nd = x.ndim
  local r, c = list and norm_axis(list[1], nd) or 1, list and norm_axis(list[2], nd) or 2
  local over, across = r, c
  if ord == math.huge or ord == -math.huge then over, across = c, r end
  local sums = x:abs():sum(over, { keepdims = true })
  local ext = ord > 0 and sums:max({ across }, { keepdims = true }) or sums:min({ across }, { keepdims = true })
  local mask = sums:eq(ext):astype(sums.dtype)
  mask = mask / mask:sum(across, { keepdims = true })
  return unreduce(g, x, red, keep) * mask * sgn(x)
end

R.norm = { uses_y = true, backward = function(g, node, y)
  local x = node[1]
  local red, keep, list, o = reduce_args(x, node[2], node[3])
  local ord = o and o.ord
  local nred = 0
  for _ in pairs(red) do nred = nred + 1 end
  if nred == 2 and (ord == 2 or ord == -2 or ord == "nuc") then return singular_norm_grad(g, x, red, ord) end
  if nred == 2 and (ord == 1 or ord == -1 or ord == math.huge or ord == -math.huge) then
    return abs_sum_norm_grad(g, x, red, list, keep, ord)
  end
  local gg, yy = unreduce(g, x, red, keep), unreduce(y, x, red, keep)
  if ord == nil or ord == "fro" or ord == 2 then
    return gg * gpu.where(yy:eq(0), 0, x / yy)
  elseif ord == 1 then
    return gg * sgn(x)
  elseif ord == math.huge or ord == -math.huge then
    local ax = x:abs()
    local mask = gpu.where(ax:eq(yy), 1, 0):astype(ax.dtype)
    return gg * sgn(x) * mask / mask:sum(list, { keepdims = true })
  elseif ord == 0 then
    return gg * 0
  end
  -- p-norm: d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / y^(p-1)
  return gg * sgn(x) * x:abs() ^ (ord - 1) / gpu.where(yy:eq(0), 1, yy ^ (ord - 1))
end }

-- prod along one axis (or of everything): the product of all the others, as exclusive
-- products from both sides (exact where inputs are zero, unlike y / x)
local function exclusive_products(x, axis)
  local n = x.shape[axis]
  local ones_shape = x.shape
  ones_shape[axis] = 1
  local one = gpu.ones(ones_shape, { dtype = x.dtype, device = x.device })
  local function shifted(c)                          -- (1, c[1], ..., c[n-1]) along axis
    if n == 1 then return one end
    local key = {}
    for d = 1, x.ndim do key[d] = ":" end
    key[axis] = { 1, n - 1 }
    return gpu.concat({ one, c[key] }, axis)
  end
  local left = shifted(x:cumprod(axis))
  local right = shifted(x:flip(axis):cumprod(axis)):flip(axis)
  return left * right
end
R.prod = { backward = function(g, node)
  local x = node[1]
  local red, keep, list = reduce_args(x, node[2], node[3])
  local gg = unreduce(g, x, red, keep)
  if list == nil or #list ~= 1 then
    local flat = x:reshape(x.size)
    return gg * cj(exclusive_products(flat, 1):reshape(x.shape))
  end
  return gg * cj(exclusive_products(x, norm_axis(list[1], x.ndim)))
end }

local function scan_axis(node)
  local x, axis = node[1], node[2]
  if type(axis) ~= "number" then return nil end
  return norm_axis(axis, x.ndim)
end
R.cumsum = { saves = {}, backward = function(g, node)
  local x, axis = node[1], scan_axis(node)
  if axis == nil then return g:flip(1):cumsum(1):flip(1):reshape(x.shape) end
  return g:flip(axis):cumsum(axis):flip(axis)
end }
-- cumprod: d y_k / d x_i = prod_{j <= k, j ~= i} x_j (k >= i), as an (L, L) product per row
R.cumprod = { backward = function(g, node)
  local x, axis = node[1], scan_axis(node)
  if axis == nil then x, g, axis = x:reshape(x.size), g:reshape(x.size), 1 end
  local nd = x.ndim
  local xl = axis == nd and x or x:transpose(axis, nd)
  local gl = axis == nd and g or g:transpose(axis, nd)
  local L = xl.shape[nd]
  local s = xl.shape
  table.insert(s, nd, L)                             -- (..., L, L): row i has x_i replaced by 1
  local eye = gpu.eye(L, { dtype = "bool", device = x.device })
  local rows = gpu.where(eye, 1, xl:unsqueeze(nd):expand(s))
  local P = rows:cumprod(nd + 1)                      -- P[i, k] = prod_{j <= k, j ~= i} x_j
  local upper = gpu.arange(1, L + 1, { device = x.device }):reshape(L, 1):le(gpu.arange(1, L + 1, { device = x.device }))
  local gi = (cj(gpu.where(upper, P, 0)) * gl:unsqueeze(nd)):sum(nd + 1)
  if axis ~= nd then gi = gi:transpose(axis, nd) end
  return gi:reshape(node[1].shape)
end }
-- ---- in-place ops with rules of their own ------------------------------------------------------
-- (the others take their out-of-place form's: gpu.autograd's _inplace records x:op_(...) as
-- x = op(x, ...), with x's values before the op kept where that rule reads them)

-- relu_ reads its result, so x's values before the op need not be kept
R.relu_ = { saves = {}, uses_y = true, backward = function(g, _, y) return gpu.where(y:gt(0), g, 0) end }
-- fill_(x, number): x's old values get no gradient (x stays on the tape)
R.fill_ = false
-- index_put_(x, axis, idx, values [, {accumulate}]): x's gradient where it was not
-- overwritten (all of it with accumulate), values' the slices idx picks
R.index_put_ = { saves = { 3 }, backward = function(g, node)
  local axis, idx, o = node[2], node[3], node[5]
  if axis < 0 then axis = g.ndim + axis + 1 end
  local gx = g
  if not (type(o) == "table" and o.accumulate) then
    local keep = gpu.ones(g.shape[axis], { dtype = g.dtype, device = g.device })
    gpu.no_grad(function() keep:index_put_(1, idx:reshape(idx.size), 0) end)
    local s = {}
    for d = 1, g.ndim do s[d] = d == axis and g.shape[axis] or 1 end
    gx = g * keep:reshape(s)
  end
  return gx, nil, nil, H.is_array(node[4]) and g:index(axis, idx) or nil
end }

-- ---- the rest, by role: sorting, indexing and joining, linear algebra, fused kernels,
-- convolution, pooling, batch norm (rules_structure.lua); gpu.fft's transforms (rules_fft.lua);
-- the special functions (rules_special.lua)

for _, part in ipairs { "gpu.autograd.rules_structure", "gpu.autograd.rules_fft", "gpu.autograd.rules_special" } do
  for name, rule in pairs(require(part)) do
    assert(R[name] == nil, "gpu.autograd.rules: two rules for " .. name)
    R[name] = rule
  end
end

return R

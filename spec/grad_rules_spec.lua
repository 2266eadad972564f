-- spec/grad_rules_spec.lua — generated from gpu.autograd.rules, the one table of every
-- dispatched op: each op the module exposes is listed there (a rule, or false for the
-- non-differentiable), and each rule is checked against central differences in float64,
-- first derivatives and (through create_graph) second ones. A new op without an entry, or
-- a rule without a sample here, fails this spec.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local rules = ag.rules

-- every function the module exposes, by the name it dispatches under
local function dispatched()
  local names, seen = {}, {}
  local function scan(t)
    for _, f in pairs(t) do
      local n = type(f) == "function" and gpu._grad.opname(f)
      if n and not seen[n] then seen[n] = true; names[#names + 1] = n end
    end
  end
  scan(gpu); scan(gpu.methods); scan(gpu.random); scan(gpu.dnn); scan(gpu.fused); scan(gpu.linalg)
  scan(getmetatable(gpu.ones(1, { device = "cpu" })))
  table.sort(names)
  return names
end

-- samples: name -> function(dev) returning fn, inputs (float64, away from kinks)
local function U(dev, lo, hi, ...)
  local shape = { ... }
  local n = 1
  for _, d in ipairs(shape) do n = n * d + #shape end
  return gpu.random.Generator(n):uniform(lo, hi, shape, { dtype = "float64", device = dev })
end
local function P(dev, ...) return U(dev, 0.5, 1.5, ...) end          -- positive
local function S(dev, ...)                                             -- signed, |x| >= 0.3
  local x = U(dev, 0.3, 1.2, ...)
  local s = gpu.random.Generator(5):bernoulli(0.5, x.shape, { dtype = "float64", device = dev }) * 2 - 1
  return x * s
end
local function I(dev, t) return gpu.array(t, { dtype = "int64", device = dev }) end

local function un(name, gen)
  return function(dev) return function(x) return x[name](x) end, { (gen or P)(dev, 2, 3) } end
end
local samples = {}
for _, n in ipairs { "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "reciprocal",
                     "tanh", "sigmoid", "softplus", "gelu", "erf", "sin", "cos", "tan", "sinh", "cosh", "atan" } do
  samples[n] = un(n)
end
samples.neg = un("neg", S)
samples.abs = un("abs", S)
samples.relu = un("relu", S)
samples.asinh = un("asinh", S)
samples.acosh = function(dev) return function(x) return x:acosh() end, { U(dev, 1.2, 2.5, 2, 3) } end
samples.atanh = function(dev) return function(x) return x:atanh() end, { U(dev, -0.7, 0.7, 2, 3) } end
-- sign: zero for reals (the complex gradient is spec/complex_grad_spec.lua's)
samples.sign = un("sign", S)
samples.asin = function(dev) return function(x) return x:asin() end, { U(dev, -0.7, 0.7, 2, 3) } end
samples.acos = function(dev) return function(x) return x:acos() end, { U(dev, -0.7, 0.7, 2, 3) } end
local function bin(name)
  return function(dev) return function(a, b) return gpu[name](a, b) end, { P(dev, 2, 3), P(dev, 3) * 1.7 } end
end
for _, n in ipairs { "add", "sub", "mul", "div", "pow", "atan2", "hypot" } do samples[n] = bin(n) end
samples.maximum = function(dev) return function(a, b) return gpu.maximum(a, b) end, { S(dev, 2, 3), S(dev, 2, 3) * 0.9 } end
samples.minimum = function(dev) return function(a, b) return gpu.minimum(a, b) end, { S(dev, 2, 3), S(dev, 2, 3) * 0.9 } end
samples.logaddexp = function(dev) return function(a, b) return gpu.logaddexp(a, b) end, { S(dev, 2, 3), S(dev, 3) * 1.7 } end
samples.mod = function(dev) return function(a, b) return gpu.mod(a, b) end, { P(dev, 2, 3) * 3.1, P(dev, 3) + 0.05 } end
-- NumPy's further elementwise math
for _, n in ipairs { "exp2", "cbrt", "degrees", "radians" } do samples[n] = un(n) end
samples.sinc = un("sinc", S)
samples.frac = function(dev) return function(x) return x:frac() end, { U(dev, -0.9, 0.9, 2, 3) } end
samples.logaddexp2 = function(dev) return function(a, b) return gpu.logaddexp2(a, b) end, { S(dev, 2, 3), S(dev, 3) * 1.7 } end
samples.fmod = function(dev) return function(a, b) return gpu.fmod(a, b) end, { S(dev, 2, 3) * 3.1, P(dev, 3) + 0.05 } end
samples.fmax = function(dev) return function(a, b) return gpu.fmax(a, b) end, { S(dev, 2, 3), S(dev, 2, 3) * 0.9 } end
samples.fmin = function(dev) return function(a, b) return gpu.fmin(a, b) end, { S(dev, 2, 3), S(dev, 2, 3) * 0.9 } end
samples.copysign = function(dev) return function(a, b) return gpu.copysign(a, b) end, { S(dev, 2, 3), S(dev, 3) } end
samples.nextafter = function(dev) return function(a, b) return gpu.nextafter(a, b) end, { P(dev, 2, 3), P(dev, 3) * 1.7 } end
samples.heaviside = function(dev)
  local x = gpu.array({ { 0, -1.5, 2 }, { 0.5, 0, 0 } }, { dtype = "float64", device = dev })
  return function(h0) return gpu.heaviside(x, h0) * h0 end, { P(dev, 2, 3) }
end
samples.lerp = function(dev) return function(a, b, w) return gpu.lerp(a, b, w) end, { S(dev, 3), P(dev, 3), P(dev, 3) * 0.5 } end
samples.where = function(dev)
  local c = gpu.array({ true, false, true }, { device = dev })
  return function(a, b) return gpu.where(c, a, b) end, { S(dev, 2, 3), S(dev, 3) }
end
samples.clip = function(dev) return function(x, lo) return x:clip(lo, 0.6) end, { S(dev, 2, 3), U(dev, -0.5, -0.1, 3) } end
for _, n in ipairs { "contiguous", "copy", "clone" } do
  samples[n] = function(dev) return function(x) return x:transpose()[n](x:transpose()) * x:transpose() end, { S(dev, 2, 3) } end
end
samples.astype = function(dev)
  return function(x) return x:astype("float32"):astype("float64") * x end, { S(dev, 3) }, { eps = 1e-3, tol = 1e-3 }
end
-- the cast shorthands: inputs and steps that float16 and bfloat16 hold exactly (a few
-- binary digits), so that the central differences see no rounding; the gradient through
-- the cast is rounded to its dtype (bfloat16 keeps 8 bits, once more for the second)
local cast_tol = { half = 2e-3, bfloat16 = 2e-2, float = 1e-5, double = 1e-5 }
for n, tol in pairs(cast_tol) do
  samples[n] = function(dev)
    local x = gpu.array({ 0.5, -0.75, 1.25 }, { dtype = "float64", device = dev })
    return function(v) return v[n](v):double() * v end, { x }, { eps = 0.0625, tol = tol }
  end
end
samples.to = function(dev) return function(x) return x:to("cpu") * 2 end, { S(dev, 3) } end
samples.cpu = function(dev) return function(x) return x:cpu() * 2 end, { S(dev, 3) } end
samples.cuda = function(dev)
  if dev ~= "cuda" then return nil end
  return function(x) return x:cuda() * 2 end, { S(dev, 3) }
end
samples.array = function(dev) return function(x) return gpu.array(x) * x end, { S(dev, 3) } end
samples.reshape = function(dev) return function(x) return x:reshape(3, 2) * gpu.arange(1, 3, { dtype = "float64", device = dev }) end, { S(dev, 2, 3) } end
samples.view = function(dev) return function(x) return x:view(6) end, { S(dev, 2, 3) } end
samples.flatten = function(dev) return function(x) return x:flatten(2) end, { S(dev, 2, 3, 2) } end
samples.squeeze = function(dev) return function(x) return x:squeeze() end, { S(dev, 2, 1, 3) } end
samples.unsqueeze = function(dev) return function(x) return x:unsqueeze(1) end, { S(dev, 2, 3) } end
samples.expand = function(dev) return function(x) return x:expand(4, 3) end, { S(dev, 1, 3) } end
samples.unfold = function(dev) return function(x) return x:unfold(2, 3, 2) * 1 end, { S(dev, 2, 7, 2) } end
samples.transpose = function(dev) return function(x) return x:transpose({ 3, 1, 2 }) end, { S(dev, 2, 3, 2) } end
samples.permute = function(dev) return function(x) return x:permute(2, 3, 1) end, { S(dev, 2, 3, 2) } end
samples.flip = function(dev) return function(x) return x:flip(2) end, { S(dev, 2, 3) } end
samples.roll = function(dev) return function(x) return x:roll(1, 2) end, { S(dev, 2, 3) } end
samples.tile = function(dev) return function(x) return x:tile(2, 3) end, { S(dev, 2, 3) } end
samples.sum = function(dev) return function(x) return x:sum(2) end, { S(dev, 2, 3) } end
samples.mean = function(dev) return function(x) return x:mean({ 1, 2 }, { keepdims = true }) end, { S(dev, 2, 3) } end
samples.prod = function(dev) return function(x) return x:prod(2) end, { S(dev, 2, 3) } end
samples.logsumexp = function(dev) return function(x) return x:logsumexp(1) end, { S(dev, 2, 3) } end
samples.max = function(dev) return function(x) return x:max(2) end, { S(dev, 2, 3) } end
samples.min = function(dev) return function(x) return x:min() end, { S(dev, 2, 3) } end
samples.var = function(dev) return function(x) return x:var(2, { ddof = 1 }) end, { S(dev, 2, 3) } end
samples.std = function(dev) return function(x) return x:std(1) end, { S(dev, 2, 3) } end
samples.norm = function(dev) return function(x) return x:norm(2) end, { S(dev, 2, 3) } end
samples["norm (matrix 1, -1, inf, -inf)"] = function(dev)
  return function(x)
    return gpu.concat({ x:norm({ 1, 3 }, { ord = 1 }), x:norm({ 3, 1 }, { ord = -1, keepdims = true }):reshape(-1),
                        x:norm({ 2, 3 }, { ord = math.huge }), x[1]:norm(nil, { ord = -math.huge }):reshape(1) })
  end, { S(dev, 3, 2, 4) }
end
samples["norm (matrix 2, -2, nuclear)"] = function(dev)
  return function(x)
    return gpu.concat({ x:norm({ 1, 3 }, { ord = 2 }), x:norm({ 3, 1 }, { ord = -2, keepdims = true }):reshape(-1),
                        x:norm({ 2, 3 }, { ord = "nuc" }) })
  end, { S(dev, 3, 2, 4) }
end
-- complex arrays: made from two real ones, split into parts, viewed as pairs; the complex
-- rules of the other ops are spec/complex_grad_spec.lua's
local function Z(dev, ...) return gpu.complex(S(dev, ...), U(dev, -1.1, 1.1, ...)) end
samples.view_as_complex = function(dev) return function(x) return gpu.view_as_complex(x):transpose() end, { S(dev, 3, 2, 2) } end
samples.view_as_real = function(dev)
  return function(z) return gpu.view_as_real(z:transpose()) * 2 end, { gpu.view_as_complex(S(dev, 2, 3, 2)):copy() }
end
samples.complex = function(dev) return function(re, im) return gpu.complex(re, im) end, { S(dev, 2, 3), S(dev, 3) } end
samples.polar = function(dev) return function(r, t) return gpu.polar(r, t) end, { P(dev, 2, 3), S(dev, 2, 3) * 2 } end
samples.real = function(dev) return function(z) return z.real * z.real end, { Z(dev, 2, 3) } end
samples.imag = function(dev) return function(z) return z.imag * z.imag end, { Z(dev, 2, 3) } end
samples.conj = function(dev) return function(z) return z:conj() end, { Z(dev, 2, 3) } end
samples.angle = function(dev) return function(z) return gpu.angle(z) end, { Z(dev, 2, 3) } end
samples.cumsum = function(dev) return function(x) return x:cumsum(2) end, { S(dev, 2, 3) } end
samples.cumprod = function(dev) return function(x) return x:cumprod(2) end, { S(dev, 2, 3) } end
samples.sort = function(dev) return function(x) return x:sort(2, { descending = true }) end, { S(dev, 2, 4) } end
samples.partition = function(dev) return function(x) return x:partition({ 2, -1 }, 2) end, { S(dev, 2, 5) } end
samples.topk = function(dev) return function(x) return (x:topk(2, 2)) end, { S(dev, 2, 4) } end
samples.take = function(dev) return function(x) return x:take(I(dev, { 3, 1, 3 }), 2) end, { S(dev, 2, 3) } end
samples.index = function(dev) return function(x) return x:index(1, I(dev, { 2, 2, 1 })) end, { S(dev, 2, 3) } end
-- in-place ops with rules of their own, on a non-leaf (x * 1)
samples.relu_ = function(dev) return function(x) return (x * 1):relu_() end, { S(dev, 2, 3) } end
samples.index_put_ = function(dev)
  return function(x, v) return (x * 1):index_put_(2, I(dev, { 3, 1 }), v) end, { S(dev, 2, 3), S(dev, 2, 2) }
end
samples.masked_select = function(dev)
  local m = gpu.array({ { true, false, true }, { false, true, true } }, { device = dev })
  return function(x) return x:masked_select(m) end, { S(dev, 2, 3) }
end
samples.getindex = function(dev)
  return function(x) return x[{ ":", { 2, 3 } }] + x.T[1]:reshape(3, 1) + x[x:gt(0)]:sum() end, { S(dev, 3, 3) }
end
samples.concat = function(dev) return function(a, b) return gpu.concat({ a, b }, 2) end, { S(dev, 2, 3), S(dev, 2, 2) } end
samples.concatenate = samples.concat
samples.stack = function(dev) return function(a, b) return gpu.stack({ a, b }, 1) end, { S(dev, 2, 3), S(dev, 2, 3) } end
samples.split = function(dev)
  return function(x) local p = x:split({ 1, 2 }, 2); return p[1] * 2 + p[2]:sum(2, { keepdims = true }) end, { S(dev, 2, 3) }
end
samples["repeat"] = function(dev) return function(x) return x["repeat"](x, 2, 2) end, { S(dev, 2, 3) } end
samples.repeat_interleave = function(dev)
  return function(x) return x:repeat_interleave(I(dev, { 2, 0, 1 }), 2) end, { S(dev, 2, 3) }
end
samples.matmul = function(dev) return function(a, b) return a:matmul(b) end, { S(dev, 2, 2, 3), S(dev, 3, 2) } end
samples.dot = function(dev) return function(a, b) return gpu.dot(a, b) end, { S(dev, 2, 3), S(dev, 3) } end
samples.outer = function(dev) return function(a, b) return gpu.outer(a, b) end, { S(dev, 3), S(dev, 2) } end
-- gpu.linalg: well-conditioned inputs (a diagonal shift), symmetric ones built as x x^T
-- (cholesky and eigh read one triangle), sign-free functions of the factors (u vh, v * v)
local function W(dev, ...) local x = S(dev, ...); local n = x.shape[x.ndim]; return x + gpu.eye(n, { dtype = "float64", device = dev }) * 2 end
local function sym(x) return x:matmul(x:transpose(-1, -2)) + gpu.eye(x.shape[x.ndim], { dtype = "float64", device = x.device }) end
local LA = gpu.linalg
samples["linalg.solve"] = function(dev) return function(a, b) return LA.solve(a, b) end, { W(dev, 2, 3, 3), S(dev, 3, 2) } end
samples["linalg.inv"] = function(dev) return function(a) return LA.inv(a) end, { W(dev, 2, 3, 3) } end
samples["linalg.det"] = function(dev) return function(a) return LA.det(a) end, { W(dev, 2, 3, 3) } end
samples["linalg.slogdet"] = function(dev) return function(a) return (select(2, LA.slogdet(a))) end, { S(dev, 2, 3, 3) } end
samples["linalg.cholesky"] = function(dev)
  return function(x) return LA.cholesky(sym(x)) + LA.cholesky(sym(x), { upper = true }) * 0.5 end, { S(dev, 2, 3, 3) }
end
samples["linalg.qr"] = function(dev)
  return function(a, b)
    local q, r = LA.qr(a)
    local qw, rw = LA.qr(b)                                   -- m < n
    local qc, rc = LA.qr(b, { mode = "complete" })            -- complete with m <= n
    return gpu.concat({ q:reshape(-1), r:reshape(-1), (LA.qr(a, { mode = "r" })):reshape(-1), qw:reshape(-1),
                        rw:reshape(-1), (qc * 0.5):reshape(-1), (rc * 0.25):reshape(-1), (LA.qr(b, { mode = "r" })):reshape(-1) })
  end, { S(dev, 4, 3), S(dev, 3, 5) }
end
samples["linalg.svd"] = function(dev)
  return function(a)
    local u, s, vh = LA.svd(a, { full_matrices = false })
    return gpu.concat({ u:matmul(vh):reshape(-1), s, (u[{ ":", 1 }]:reshape(4, 1) * vh[1]):reshape(-1),
                        LA.svd(a, { compute_uv = false }) })
  end, { S(dev, 4, 3) }
end
samples["linalg.svdvals"] = function(dev) return function(a) return LA.svdvals(a) end, { S(dev, 2, 3, 4) } end
samples["linalg.eigh"] = function(dev)
  return function(x) local w, v = LA.eigh(sym(x)); return gpu.concat({ w, (v * v):reshape(-1) }) end, { S(dev, 3, 3) }
end
samples["linalg.eigvalsh"] = function(dev) return function(x) return LA.eigvalsh(sym(x), { UPLO = "U" }) end, { S(dev, 2, 3, 3) } end
-- eig of a real matrix (complex results; gauge-free functions of v: |v_ij|^2)
samples["linalg.eig"] = function(dev)
  return function(x)
    local w, v = LA.eig(x)
    return gpu.concat({ gpu.view_as_real(w):reshape(-1), (v * v:conj()).real:reshape(-1) })
  end, { W(dev, 3, 3) }
end
samples["linalg.eigvals"] = function(dev) return function(x) return gpu.view_as_real(LA.eigvals(x)) end, { W(dev, 2, 3, 3) } end
samples["linalg.lstsq"] = function(dev)
  return function(a, b) return (LA.lstsq(a, b)) end, { S(dev, 5, 3), S(dev, 5, 2) }
end
samples["linalg.lu_factor_ex"] = function(dev)
  return function(a)
    local lu = LA.lu_factor(a)
    local p, l, u = LA.lu(a)
    return gpu.concat({ lu:reshape(-1), l:reshape(-1), u:reshape(-1) })
  end, { S(dev, 2, 3, 3) }
end
samples["linalg._lu_solve"] = function(dev)
  return function(lu, b)
    local piv = gpu.array({ 2, 3, 3 }, { dtype = "int32", device = dev })
    return LA.lu_solve(lu, piv, b) + LA.lu_solve(lu, piv, b, { adjoint = true })
  end, { W(dev, 3, 3), S(dev, 3, 2) }
end
-- gpu.fft's transforms (complex results as their real and imaginary parts)
samples["fft.c2c"] = function(dev) return function(x) return gpu.view_as_real(gpu.fft.fft(x, 5)) end, { S(dev, 2, 4) } end
samples["fft.r2c"] = function(dev) return function(x) return gpu.view_as_real(gpu.fft.rfftn(x)) end, { S(dev, 3, 4) } end
samples["fft.c2r"] = function(dev) return function(x) return gpu.fft.irfft(gpu.fft.fft(x), 5) end, { S(dev, 2, 3) } end
samples["fused.linear"] = function(dev)
  return function(x, w, b) return gpu.fused.linear(x, w, b) end, { S(dev, 2, 3), S(dev, 4, 3), S(dev, 4) }
end
samples["fused.attention"] = function(dev)
  return function(q, k, v) return (gpu.fused.attention(q, k, v, { is_causal = true })) end,
    { S(dev, 2, 3, 4), S(dev, 2, 3, 4), S(dev, 2, 3, 2) }
end
samples["fused.layer_norm"] = function(dev)
  return function(x, w, b) return (gpu.fused.layer_norm(x, w, b, { eps = 1e-3 })) end, { S(dev, 2, 3), S(dev, 3), S(dev, 3) }
end
samples["fused.cross_entropy"] = function(dev)
  local lab = I(dev, { 2, 1 })
  return function(z) return (gpu.fused.cross_entropy(z, lab, { label_smoothing = 0.1 })) end, { S(dev, 2, 3) }
end
samples.im2col = function(dev) return function(x) return gpu.im2col(x, { kernel = 2, padding = 1 }) end, { S(dev, 1, 2, 3, 3) } end
samples.col2im = function(dev)
  return function(c) return gpu.col2im(c, { 1, 1, 3, 3 }, { kernel = 2 }) end, { S(dev, 1, 4, 4) }
end
-- the library entry points run only where the device's library takes float64 (cuDNN; oneDNN
-- on the cpu computes in float32: spec/onednn_spec.lua checks its gradients against im2col's)
local dnn_family = { ["dnn.conv2d"] = "conv", ["dnn.max_pool2d"] = "pool", ["dnn.avg_pool2d"] = "pool",
                     ["dnn.softmax"] = "softmax", ["dnn.batch_norm"] = "batch_norm" }
for _, n in ipairs { "dnn.conv2d", "dnn.max_pool2d", "dnn.avg_pool2d", "dnn.softmax", "dnn.batch_norm" } do
  samples[n] = function(dev)
    if gpu.dnn.available(dev, "float64", dnn_family[n]) ~= true then return nil end
    if n == "dnn.conv2d" then return function(x, w) return gpu.dnn.conv2d(x, w, { padding = 1 }) end, { S(dev, 1, 2, 4, 4), S(dev, 3, 2, 3, 3) } end
    if n == "dnn.max_pool2d" then return function(x) return gpu.dnn.max_pool2d(x, { kernel = 2 }) end, { S(dev, 1, 2, 4, 4) } end
    if n == "dnn.avg_pool2d" then return function(x) return gpu.dnn.avg_pool2d(x, { kernel = 2 }) end, { S(dev, 1, 2, 4, 4) } end
    if n == "dnn.softmax" then return function(x) return gpu.dnn.softmax(x) end, { S(dev, 2, 3) } end
    local rm, rv = gpu.zeros(2, { dtype = "float64", device = dev }), gpu.ones(2, { dtype = "float64", device = dev })
    return function(x, w, b) return (gpu.dnn.batch_norm(x, w, b, rm, rv)) end, { S(dev, 3, 2), P(dev, 2), S(dev, 2) }
  end
end
-- oneDNN's layer norm takes float32 only: the sample runs where a library takes float64
-- (spec/onednn_layer_norm_spec.lua checks its float32 gradients against the fused op's)
samples["dnn.layer_norm"] = function(dev)
  if gpu.dnn.available(dev, "float64", "layer_norm") ~= true then return nil end
  return function(x, w, b) return (gpu.dnn.layer_norm(x, w, b, { eps = 1e-3 })) end, { S(dev, 2, 3), S(dev, 3), S(dev, 3) }
end
-- cuDNN's RNN (cuda only; float64 is one of its dtypes): a 2-layer bidirectional LSTM of L = 3,
-- N = 2, I = 2, H = 2 (w: 2 * (8*2 + 8*2 + 16) + 2 * (8*4 + 8*2 + 16) = 224 parameters)
samples["dnn.rnn"] = function(dev)
  if gpu.dnn.available(dev, "float64", "rnn") ~= true then return nil end
  return function(x, w, h0, c0)
    return (gpu.dnn.rnn(x, w, h0, c0, { mode = "lstm", num_layers = 2, bidirectional = true }))
  end, { S(dev, 3, 2, 2), U(dev, -0.5, 0.5, 224), S(dev, 4, 2, 2), S(dev, 4, 2, 2) }
end
-- second derivatives: the rules whose backward is first-order only (library kernels)
local first_order_only = { ["dnn.conv2d"] = true, ["dnn.max_pool2d"] = true, ["dnn.avg_pool2d"] = true,
                           ["dnn.softmax"] = true, ["dnn.batch_norm"] = true, ["fused.lstm"] = true,
                           ["fused.gru"] = true, ["fused.rnn"] = true,
                           ["dnn.rnn"] = true }
-- the fused LSTM layer: L = 3 steps, N = 2, H = 2, both directions, every input tracked
samples["fused.lstm"] = function(dev)
  return function(xp, w, h0, c0)
    local a = gpu.fused.lstm(xp, w, h0, c0)
    local b = gpu.fused.lstm(xp, w, h0, c0, { reverse = true })
    return a * a + b
  end, { S(dev, 3, 2, 8), U(dev, -0.8, 0.8, 8, 2), S(dev, 2, 2), S(dev, 2, 2) }
end
-- the library's LSTM and GRU run only where it takes float64 (oneDNN: float32 only; the cpu's
-- gradients are checked against the fused loops' in spec/seq_spec.lua)
for _, n in ipairs { "dnn.lstm", "dnn.gru" } do
  samples[n] = function(dev)
    if gpu.dnn.available(dev, "float64", "rnn") ~= true then return nil end
    local G = n == "dnn.lstm" and 4 or 3
    if n == "dnn.lstm" then
      return function(x, wi, wh, b, h0, c0) return (gpu.dnn.lstm(x, wi, wh, b, h0, c0)) end,
        { S(dev, 3, 2, 2), U(dev, -0.8, 0.8, 8, 2), U(dev, -0.8, 0.8, 8, 2), S(dev, 8), S(dev, 2, 2), S(dev, 2, 2) }
    end
    return function(x, wi, wh, b, h0) return (gpu.dnn.gru(x, wi, wh, b, h0)) end,
      { S(dev, 3, 2, 2), U(dev, -0.8, 0.8, G * 2, 2), U(dev, -0.8, 0.8, G * 2, 2), S(dev, 8), S(dev, 2, 2) }
  end
  first_order_only[n] = true
end
-- the fused GRU and RNN layers likewise (GRU with and without b_hh; RNN tanh and relu)
samples["fused.gru"] = function(dev)
  return function(xp, w, b, h0)
    local a = gpu.fused.gru(xp, w, b, h0)
    local c = gpu.fused.gru(xp, w, nil, h0, { reverse = true })
    return a * a + c
  end, { S(dev, 3, 2, 6), U(dev, -0.8, 0.8, 6, 2), S(dev, 6), S(dev, 2, 2) }
end
samples["fused.rnn"] = function(dev)
  return function(xp, w, h0)
    local a = gpu.fused.rnn(xp, w, h0)
    local c = gpu.fused.rnn(xp, w, h0, { reverse = true, nonlinearity = "relu" })
    return a * a + c
  end, { S(dev, 3, 2, 2), U(dev, -0.8, 0.8, 2, 2), S(dev, 2, 2) }
end
-- the special functions (gpu.autograd.rules_special)
for _, n in ipairs { "erfc", "erfcx", "lgamma", "digamma", "ndtr", "log_ndtr", "entr", "i0", "i0e", "i1", "i1e",
                     "bessel_j0", "bessel_j1", "exp1", "expi" } do
  samples[n] = un(n, n:match("^i%d") and S or n:match("bessel") and S or n == "ndtr" and S or n == "log_ndtr" and S
                  or n == "erfcx" and S or nil)
end
samples.erfinv = function(dev) return function(x) return x:erfinv() end, { U(dev, -0.7, 0.7, 2, 3) } end
samples.ndtri = function(dev) return function(x) return x:ndtri() end, { U(dev, 0.2, 0.8, 2, 3) } end
samples.logit = function(dev) return function(x) return x:logit() end, { U(dev, 0.2, 0.8, 2, 3) } end
for _, n in ipairs { "xlogy", "betaln", "beta", "rel_entr" } do
  samples[n] = function(dev) return function(a, b) return gpu[n](a, b) end, { P(dev, 2, 3), P(dev, 3) * 1.7 } end
end
samples.xlog1py = function(dev) return function(a, b) return gpu.xlog1py(a, b) end, { S(dev, 2, 3), P(dev, 3) } end
samples.polygamma = function(dev) return function(x) return gpu.polygamma(2, x) end, { P(dev, 2, 3) } end
samples.zeta = function(dev) return function(q) return gpu.zeta(3, q) end, { P(dev, 2, 3) } end
samples.gammainc = function(dev) return function(x) return gpu.gammainc(2.5, x) end, { P(dev, 2, 3) * 2 } end
samples.gammaincc = function(dev) return function(x) return gpu.gammaincc(0.7, x) end, { P(dev, 2, 3) } end
-- second derivatives that are zero or not smooth at the samples (still checked to run)
local kinked = { sign = true, relu = true, abs = true, maximum = true, minimum = true, max = true, min = true,
                 clip = true,
                 sort = true, topk = true, mod = true, partition = true,
                 fmod = true, fmax = true, fmin = true, copysign = true, nextafter = true }


describe("gpu.autograd.rules", function()
  it("lists every dispatched op, as a rule or as not differentiable", function()
    local missing = {}
    for _, n in ipairs(dispatched()) do
      local r = rules[n]
      local inplace = n:sub(-1) == "_" or n == "random.shuffle"
      if r == nil and not inplace then missing[#missing + 1] = n end
    end
    -- in-place ops and ops whose result cannot be traced back (a random permutation of x)
    -- are listed as errors on purpose: they have no entry
    local refused = {
      ["random.permutation"] = true, ["random.choice"] = true, ["random.permuted"] = true,
      ["fused.cross_entropy_backward"] = true,
      ["fused.layer_norm_backward"] = true, ["fused.attention_backward"] = true,
      ["dnn.conv2d_backward_data"] = true, ["dnn.conv2d_backward_filter"] = true,
      ["dnn.max_pool2d_backward"] = true, ["dnn.avg_pool2d_backward"] = true,
      ["dnn.batch_norm_backward"] = true, ["dnn.softmax_backward"] = true, ["fused.lstm_backward"] = true,
      ["fused.gru_backward"] = true, ["fused.rnn_backward"] = true,
      ["dnn.lstm_backward"] = true, ["dnn.gru_backward"] = true,
      ["dnn.layer_norm_backward"] = true, ["dnn.rnn_backward"] = true,
    }
    local unexpected = {}
    for _, n in ipairs(missing) do if not refused[n] then unexpected[#unexpected + 1] = n end end
    assert.same({}, unexpected)
  end)

  it("has a gradcheck sample for every rule", function()
    local none = {}
    for n, r in pairs(rules) do
      if type(r) == "table" and r.backward ~= nil or (type(r) == "table" and r.record) then
        if samples[n] == nil then none[#none + 1] = n end
      end
    end
    table.sort(none)
    assert.same({}, none)
  end)
end)

for _, dev in ipairs(h.devices()) do
  describe("gradients on " .. dev .. " against central differences (float64)", function()
    local names = {}
    for n in pairs(samples) do names[#names + 1] = n end
    table.sort(names)
    for _, n in ipairs(names) do
      it(n, function()
        local fn, inputs, opts = samples[n](dev)
        if fn == nil then return end
        local ok, msg = ag.gradcheck(fn, inputs, opts)
        assert(ok, n .. ": " .. tostring(msg))
      end)
      if not first_order_only[n] then
        it(n .. " (second derivative through create_graph)", function()
          local fn, inputs, opts = samples[n](dev)
          if fn == nil then return end
          -- first derivative as a function of x (the others held fixed), differentiated again
          local x = inputs[1]
          local first = h.first_derivative(fn, inputs)
          x:requires_grad()
          local g = first(x)
          assert.equal(x.size, g.size)
          -- linear in x: the first derivative is constant (untracked), the second zero
          if kinked[n] or not ag.requires_grad(g) then return end
          local ok, msg = ag.gradcheck(first, { x }, opts)
          assert(ok, n .. " (second): " .. tostring(msg))
        end)
      end
    end
  end)
end

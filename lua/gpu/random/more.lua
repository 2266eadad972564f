-- gpu.random's distributions that are written over other draws and dispatched ops (so both
-- devices give them): dirichlet, multinomial, multivariate_normal, permuted, choice with
-- probabilities, and PyTorch's gpu.multinomial and gpu.poisson. src/lua/lrandom.c forwards
-- each call here as f(generator or nil, args...); the draws come from that generator (a
-- gpu.random.Generator) or from the default one of the device. The elementwise samplers
-- (gamma, binomial, ...) are C (kernels/random_dist.h).
local gpu = require "gpu"
local options = require "gpu.options"

local is_array = options.is_array
local M = {}

local function typename(v) return is_array(v) and "array" or type(v) end

-- The draw `name` from gen (a Generator) or the default generators.
local function draw(gen, name, ...)
  if gen then return gen[name](gen, ...) end
  return gpu.random[name](...)
end

-- (the message only: the wrappers at the end name the function at the user's line)
local function fail(_, msg) error(msg, 0) end

-- A shape from the arguments at i...: numbers, or one table of numbers (not an options
-- table); returns the shape (nil when none given) and the index after it.
local function read_shape(args, i, n)
  local v = args[i]
  local shape = {}
  if type(v) == "table" and not is_array(v) and (#v > 0 or next(v) == nil) then
    shape, i = v, i + 1
  else
    while i <= n and math.type(args[i]) == "integer" do shape[#shape + 1] = args[i]; i = i + 1 end
    if #shape == 0 then return nil, i end
  end
  for _, d in ipairs(shape) do
    if math.type(d) ~= "integer" or d < 0 then error("size must hold integers >= 0, got " .. tostring(d), 0) end
  end
  return shape, i
end

-- The options table at i (skipping nils), checked against the allowed keys.
local function read_opts(fname, args, i, n, allowed)
  while i <= n and args[i] == nil do i = i + 1 end
  local o = args[i]
  if o == nil then return {} end
  if type(o) ~= "table" or is_array(o) then fail(fname, "options table expected, got " .. typename(o)) end
  if i < n then fail(fname, "too many arguments") end
  for k in pairs(o) do
    if not allowed[k] then fail(fname, "unknown option '" .. tostring(k) .. "'") end
  end
  return o
end

-- x[..., j] (j 1-based, or an index array of positions along the axis).
local function at(x, j, axis)
  if type(j) == "number" then j = gpu.full({}, j, { dtype = "int64", device = x.device }) end
  return gpu.take(x, j, axis or -1)
end

local function concat(a, b)
  local r = {}
  for _, v in ipairs(a or {}) do r[#r + 1] = v end
  for _, v in ipairs(b or {}) do r[#r + 1] = v end
  return r
end

-- A float64 array of v (an array or a Lua list of numbers) on dev.
local function as_f64(fname, what, v, dev)
  if is_array(v) then
    if v.dtype == "bool" or gpu._dtypes[v.dtype].kind == "complex" then
      fail(fname, what .. " must be a real array, got " .. v.dtype)
    end
    return v:astype("float64")
  end
  if type(v) ~= "table" then fail(fname, what .. " must be an array or a list of numbers, got " .. typename(v)) end
  for _, x in ipairs(v) do
    if type(x) ~= "number" then fail(fname, what .. " must hold numbers") end
  end
  return gpu.array(v, { dtype = "float64", device = dev })
end

local function out_dtype(fname, o, default)
  local dt = o.dtype or default
  if gpu._dtypes[dt] == nil then fail(fname, "unknown dtype '" .. tostring(dt) .. "'") end
  return dt
end

local function float_default(v) return is_array(v) and gpu._dtypes[v.dtype].kind == "float" and v.dtype or "float32" end

local CREATE = { dtype = true, device = true }

-- dirichlet(alpha [, size...] [, {dtype, device}]): alpha a list or an array (its last axis
-- the categories; leading axes a batch); the result is size .. alpha's shape. Normalised
-- gammas, or NumPy's stick-breaking with betas when every alpha is below 0.1.
function M.dirichlet(gen, ...)
  local args, n = table.pack(...), select("#", ...)
  local alpha = args[1]
  if alpha == nil then fail("dirichlet", "alpha (a list or an array) is required") end
  local size, i = read_shape(args, 2, n)
  local o = read_opts("dirichlet", args, i, n, CREATE)
  local dev = o.device or (is_array(alpha) and alpha.device) or nil
  local dt = out_dtype("dirichlet", o, float_default(alpha))
  if gpu._dtypes[dt].kind ~= "float" then fail("dirichlet", "dtype must be a float dtype, got " .. dt) end
  local a = as_f64("dirichlet", "alpha", alpha, dev)
  if dev then a = a:to(dev) end
  if a.ndim == 0 then fail("dirichlet", "alpha must have at least one axis") end
  local k = a.shape[a.ndim]
  if k == 0 then fail("dirichlet", "alpha must not be empty") end
  if a:isnan():any():item() then fail("dirichlet", "alpha must not contain NaN") end
  local lo, hi = a:min():item(), a:max():item()
  if lo < 0 then fail("dirichlet", ("alpha must be >= 0 (got %g)"):format(lo)) end
  local shape = concat(size, a.shape)
  local opts = { dtype = "float64", device = a.device }
  local x
  if hi < 0.1 then
    -- stick-breaking: x_j = beta(alpha_j, alpha_{j+1} + ... + alpha_k) of what is left
    local rest = a:flip(-1):cumsum(-1):flip(-1)       -- suffix sums
    local bshape = concat(size, a.shape)
    bshape[#bshape] = nil
    local left, parts = nil, {}
    for j = 1, k - 1 do
      local aj, rj = at(a, j), at(rest, j + 1)
      local v = draw(gen, "beta", aj, rj, bshape, opts)
      parts[j] = left and v * left or v
      left = left and left * (1 - v) or 1 - v
    end
    parts[k] = left or gpu.ones(bshape, opts)
    x = gpu.stack(parts, -1)
  else
    local g = draw(gen, "standard_gamma", a, shape, opts)
    x = g / g:sum(-1, { keepdims = true })
  end
  return x:astype(dt)
end

-- multinomial(n, pvals [, size...] [, {dtype, device}]): counts of n draws over the
-- categories of pvals (last axis; leading axes a batch); n a number or an array. Sequential
-- binomials: x_j ~ binomial(n - x_1 - ... - x_{j-1}, p_j / (p_j + ... + p_k)).
function M.multinomial(gen, ...)
  local args, n = table.pack(...), select("#", ...)
  local cnt, pvals = args[1], args[2]
  if cnt == nil then fail("multinomial", "n (a number or an array) is required") end
  if pvals == nil then fail("multinomial", "pvals (a list or an array) is required") end
  if not (type(cnt) == "number" or is_array(cnt)) then
    fail("multinomial", "n must be a number or an array, got " .. typename(cnt))
  end
  local size, i = read_shape(args, 3, n)
  local o = read_opts("multinomial", args, i, n, CREATE)
  local dev = o.device or (is_array(pvals) and pvals.device) or (is_array(cnt) and cnt.device) or nil
  local dt = out_dtype("multinomial", o, "int64")
  local p = as_f64("multinomial", "pvals", pvals, dev)
  if dev then p = p:to(dev) end
  if p.ndim == 0 then fail("multinomial", "pvals must have at least one axis") end
  if p:isnan():any():item() then fail("multinomial", "pvals must not contain NaN") end
  local k = p.shape[p.ndim]
  if k == 0 then fail("multinomial", "pvals must not be empty") end
  if p:min():item() < 0 or p:max():item() > 1 then fail("multinomial", "pvals must lie in [0, 1]") end
  if k > 1 and at(p, gpu.arange(1, k, { dtype = "int64", device = p.device })):sum(-1):max():item() > 1 + 1e-12 then
    fail("multinomial", "the sum of pvals[..., 1:k-1] must be <= 1")
  end
  local bshape
  if size then
    bshape = concat(size, p.shape)
    bshape[#bshape] = nil
  end
  local opts = { dtype = "int64", device = p.device }
  local left = is_array(cnt) and cnt:astype("int64"):to(p.device) or cnt
  local rest = p:flip(-1):cumsum(-1):flip(-1)
  local parts = {}
  for j = 1, k - 1 do
    local pj, rj = at(p, j), at(rest, j)
    local q = gpu.where(gpu.greater(rj, 0), gpu.clip(pj / gpu.where(gpu.greater(rj, 0), rj, 1), 0, 1), 0)
    local xj = draw(gen, "binomial", left, q, bshape, opts)
    parts[j] = xj
    left = left - xj
  end
  parts[k] = is_array(left) and left or gpu.full(parts[1] and parts[1].shape or bshape or {}, left, opts)
  if is_array(parts[k]) and parts[1] and #parts[k].shape ~= #parts[1].shape then
    parts[k] = parts[k]:expand(parts[1].shape)
  end
  return gpu.stack(parts, -1):astype(dt)
end

-- multivariate_normal(mean, cov [, size...] [, {method = "svd", dtype, device}]):
-- mean + z A^T with z standard normal (size .. (k)) and A A^T = cov: A from eigh (method
-- "svd" or "eigh", negative eigenvalues clamped to 0) or cholesky.
function M.multivariate_normal(gen, ...)
  local args, n = table.pack(...), select("#", ...)
  local mean, cov = args[1], args[2]
  if mean == nil or cov == nil then fail("multivariate_normal", "mean and cov are required") end
  local size, i = read_shape(args, 3, n)
  local o = read_opts("multivariate_normal", args, i, n, { dtype = true, device = true, method = true })
  local method = o.method or "svd"
  if method ~= "svd" and method ~= "eigh" and method ~= "cholesky" then
    fail("multivariate_normal", "method must be 'svd', 'eigh' or 'cholesky', got " .. tostring(method))
  end
  local dev = o.device or (is_array(mean) and mean.device) or (is_array(cov) and cov.device) or nil
  local dt = out_dtype("multivariate_normal", o, float_default(mean))
  if gpu._dtypes[dt].kind ~= "float" then fail("multivariate_normal", "dtype must be a float dtype, got " .. dt) end
  local m = as_f64("multivariate_normal", "mean", mean, dev)
  local c
  if is_array(cov) then c = as_f64("multivariate_normal", "cov", cov, dev)
  elseif type(cov) == "table" then c = gpu.array(cov, { dtype = "float64", device = dev })
  else fail("multivariate_normal", "cov must be an array or a nested list, got " .. typename(cov)) end
  if dev then m, c = m:to(dev), c:to(dev) end
  if m.ndim ~= 1 then fail("multivariate_normal", "mean must be 1-D") end
  local k = m.shape[1]
  if c.ndim ~= 2 or c.shape[1] ~= k or c.shape[2] ~= k then
    fail("multivariate_normal", ("cov must be %d x %d (mean has %d entries)"):format(k, k, k))
  end
  local A
  if method == "cholesky" then
    A = gpu.linalg.cholesky(c)
  else
    local w, v = gpu.linalg.eigh(c)
    A = v * gpu.sqrt(gpu.maximum(w, 0))
  end
  local z = draw(gen, "normal", 0, 1, concat(size, { k }), { dtype = "float64", device = m.device })
  return (gpu.matmul(z, A:transpose()) + m):astype(dt)
end

-- permuted(x [, axis]): x with each slice along axis (1-based; nil: x flattened) shuffled
-- independently (NumPy's Generator.permuted): the order that sorts uniform keys.
function M.permuted(gen, x, axis, extra)
  if not is_array(x) then fail("permuted", "x must be an array, got " .. typename(x)) end
  if extra ~= nil then fail("permuted", "too many arguments") end
  if axis ~= nil and math.type(axis) ~= "integer" then
    fail("permuted", "axis must be an integer, got " .. typename(axis))
  end
  if axis ~= nil and (axis == 0 or axis > x.ndim or axis < -x.ndim) then
    fail("permuted", ("axis %d is out of range for an array of %d dimensions"):format(axis, x.ndim))
  end
  if x.ndim == 0 then return x:copy() end
  local keys = draw(gen, "rand", x.shape, { dtype = "float64", device = x.device })
  if axis == nil then
    local order = keys:reshape(-1):argsort()
    return gpu.take(x:reshape(-1), order):reshape(x.shape)
  end
  if axis < -x.ndim or axis > x.ndim or axis == 0 then
    fail("permuted", ("axis %d is out of range for a %d-d array"):format(axis, x.ndim))
  end
  return gpu.take_along_axis(x, keys:argsort(axis), axis)
end

-- Draws of 1-based category positions from the weights w (last axis; leading axes rows):
-- k per row, with replacement (the inverse of each row's CDF) or without (the k largest of
-- log(u) / w, Efraimidis and Spirakis: the order of successive draws). w float64.
local function categorical(gen, w, k, replace)
  local rows = w.ndim == 2 and w.shape[1] or 1
  local m = w.shape[w.ndim]
  local w2 = w:reshape(rows, m)
  local opts = { dtype = "float64", device = w.device }
  local idx
  if replace then
    local u = draw(gen, "rand", rows, k, opts)
    local cdf = w2:cumsum(2)
    cdf = cdf / at(cdf, m, 2):reshape(rows, 1)
    if rows == 1 then                 -- (the shifts below are 0: adding them changes no bit)
      idx = gpu.searchsorted(cdf:reshape(-1), u:reshape(-1), { side = "right" }):reshape(rows, k)
    else
      local shift = gpu.arange(rows, opts):reshape(rows, 1)
      local pos = gpu.searchsorted((cdf + shift):reshape(-1), (u + shift):reshape(-1), { side = "right" })
      idx = pos:reshape(rows, k) - (gpu.arange(rows, { dtype = "int64", device = w.device }) * m):reshape(rows, 1)
    end
    idx = gpu.clip(idx, 1, m)
  else
    local uu = draw(gen, "rand", rows, m, opts)
    local keys = gpu.where(gpu.greater(w2, 0), gpu.log(uu) / gpu.where(gpu.greater(w2, 0), w2, 1), -math.huge)
    local _, ix = keys:topk(k, 2)
    idx = ix
  end
  if w.ndim == 1 then idx = idx:reshape(k) end
  return idx.dtype == "int64" and idx or idx:astype("int64")
end

-- choice(a, k, {p =, replace = true, dtype, device}): the p-weighted form (the C choice
-- sends calls with p here). a: a population size n or an array (rows of its first axis).
function M.choice(gen, a, k, o)
  if type(k) == "table" and o == nil then k, o = 1, k end
  k = k or 1
  o = o or {}
  if math.type(k) ~= "integer" then fail("choice", "sample size must be an integer, got " .. typename(k)) end
  if k < 0 then fail("choice", ("sample size must be >= 0 (got %d)"):format(k)) end
  for key in pairs(o) do
    if key ~= "p" and key ~= "replace" and key ~= "dtype" and key ~= "device" then
      fail("choice", "unknown option '" .. tostring(key) .. "'")
    end
  end
  if o.dtype ~= nil and o.dtype ~= "int64" then fail("choice", "choice gives int64 positions (dtype must be int64)") end
  local x, n = nil, a
  if is_array(a) then
    if a.ndim == 0 then fail("choice", "cannot choose from a 0-d array") end
    x, n = a, a.shape[1]
  elseif math.type(a) ~= "integer" then
    fail("choice", "a must be an integer or an array, got " .. typename(a))
  end
  local dev = o.device or (x and x.device) or (is_array(o.p) and o.p.device) or nil
  local p = as_f64("choice", "p", o.p, dev)
  if dev then p = p:to(dev) end
  if p.ndim ~= 1 or p.shape[1] ~= n then fail("choice", ("p must be 1-D with %d entries"):format(n)) end
  if p:isnan():any():item() or p:min():item() < 0 then fail("choice", "probabilities must be >= 0 and not NaN") end
  if math.abs(p:sum():item() - 1) > 1e-8 then fail("choice", "probabilities do not sum to 1") end
  local replace = o.replace
  if replace == nil then replace = true end
  if type(replace) ~= "boolean" then fail("choice", "option 'replace' must be a boolean") end
  if not replace and k > gpu.greater(p, 0):sum():item() then
    fail("choice", "fewer non-zero entries in p than the sample size")
  end
  local idx
  if k == 0 then idx = gpu.zeros(0, { dtype = "int64", device = p.device })
  else idx = categorical(gen, p, k, replace) end
  if x then return gpu.take(x, idx, 1) end
  return idx
end

-- gpu.multinomial(input, num_samples [, replacement = false] [, {generator =}]): PyTorch's:
-- 1-based category positions (int64), one row of num_samples per row of input (1-D or 2-D
-- non-negative weights, not necessarily normalised).
function M.torch_multinomial(_, input, k, replacement, o)
  if type(replacement) == "table" and o == nil then replacement, o = nil, replacement end
  o = o or {}
  if not is_array(input) then error("input must be an array, got " .. typename(input), 0) end
  if input.ndim ~= 1 and input.ndim ~= 2 then error("input must be 1-D or 2-D", 0) end
  if math.type(k) ~= "integer" or k < 1 then error("num_samples must be an integer >= 1", 0) end
  if replacement ~= nil and type(replacement) ~= "boolean" then error("replacement must be a boolean", 0) end
  for key in pairs(o) do
    if key ~= "generator" then error("unknown option '" .. tostring(key) .. "'", 0) end
  end
  local gen = o.generator
  if gen ~= nil and (type(gen) ~= "userdata" or tostring(gen):sub(1, 14) ~= "gpu.Generator(") then
    error("option 'generator' must be a gpu.random.Generator", 0)
  end
  if gpu._dtypes[input.dtype].kind ~= "float" then
    error("input must be a float array, got " .. input.dtype, 0)
  end
  local w = input:astype("float64")
  local m = w.shape[w.ndim]
  if w:isnan():any():item() or (w.size > 0 and w:min():item() < 0) then
    error("weights must be >= 0, finite and not NaN", 0)
  end
  if w:sum(-1):min():item() <= 0 then error("every row must have a positive sum", 0) end
  if not replacement and k > m then
    error("cannot sample " .. k .. " > " .. m .. " categories without replacement", 0)
  end
  if not replacement and gpu.greater(w, 0):sum(-1):min():item() < k then
    error("a row has fewer than " .. k .. " non-zero weights to sample without replacement", 0)
  end
  return categorical(gen, w, k, replacement == true)
end

-- gpu.poisson(rates [, {generator =}]): PyTorch's: a Poisson draw per element, rates' dtype.
function M.torch_poisson(_, rates, o, extra)
  if extra ~= nil then error("too many arguments", 0) end
  if not is_array(rates) then error("rates must be an array, got " .. typename(rates), 0) end
  o = o or {}
  if type(o) ~= "table" or is_array(o) then error("options table expected", 0) end
  for key in pairs(o) do
    if key ~= "generator" then error("unknown option '" .. tostring(key) .. "'", 0) end
  end
  local gen = o.generator
  if gen ~= nil and (type(gen) ~= "userdata" or tostring(gen):sub(1, 14) ~= "gpu.Generator(") then
    error("option 'generator' must be a gpu.random.Generator", 0)
  end
  if gpu._dtypes[rates.dtype].kind ~= "float" then error("rates must be a float array, got " .. rates.dtype, 0) end
  return draw(gen, "poisson", rates, rates.shape, { dtype = rates.dtype })
end

-- Errors (these files' and the ops' they call) name the function at the user's line.
local W = {}
for name, f in pairs(M) do
  local fname = name:match("^torch_(.*)") and "gpu." .. name:match("^torch_(.*)") or "gpu.random." .. name
  W[name] = function(...) return options.call(fname, f, ...) end
end
return W

-- gpu.nn.utils: gradient clipping (torch.nn.utils): clip_grad_norm_ and clip_grad_value_;
-- parameters_to_vector and vector_to_parameters; pad_sequence (also utils.rnn.pad_sequence);
-- weight_norm and spectral_norm (PyTorch's classic reparametrisations, by forward pre-hooks).
--
--   loss:backward()
--   local total = gpu.nn.utils.clip_grad_norm_(model:parameters(), 1.0)   -- a 0-d array
--   opt:step()
--
-- Both take a list of arrays, one array, a module, or named_parameters()'s pairs;
-- parameters without a gradient are skipped. They scale the gradients in place and
-- record nothing on the tape.
local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local is_array, argerror, raise, type_name = options.is_array, options.argerror, options.raise, options.type_name

local utils = {}

-- The parameters of params (a list, an array, a module or named_parameters()'s pairs).
local function params_of(fname, params)
  if type(params) == "table" and not is_array(params) and type(params.parameters) == "function" then
    params = params:parameters()
  end
  if is_array(params) then params = { params } end
  if type(params) ~= "table" then
    argerror(fname, 1, "parameters (a list of arrays, an array or a module) expected, got %s", type_name(params))
  end
  local out = {}
  for i, p in ipairs(params) do
    if type(p) == "table" and is_array(p[2]) then p = p[2] end
    if not is_array(p) then argerror(fname, 1, "parameter #%d is %s, expected gpu.array", i, type_name(p)) end
    if p:is_closed() then argerror(fname, 1, "parameter #%d is a closed array", i) end
    out[i] = p
  end
  return out
end

-- The gradients of params (checked): a list of arrays (parameters without one left out).
local function grads_of(fname, params)
  local out = {}
  for _, p in ipairs(params_of(fname, params)) do
    if p.grad ~= nil then out[#out + 1] = p.grad end
  end
  return out
end

local CLIP_NORM = options.declare("nn.utils.clip_grad_norm_", {
  error_if_nonfinite = { type = "boolean", default = false },
  foreach = { type = "boolean" },
}, { example = "gpu.nn.utils.clip_grad_norm_({gpu.ones(2):requires_grad()}, 1, 2, %s)" })

-- clip_grad_norm_(params, max_norm [, norm_type = 2 [, {error_if_nonfinite = false}]]) -> the
-- total norm of all the gradients (as one vector) before clipping, a 0-d array on the first
-- gradient's device (0-d 0 when none has a gradient). Each gradient is multiplied by
-- min(1, max_norm / (total + 1e-6)). norm_type: any p > 0, or math.huge ("inf").
function utils.clip_grad_norm_(params, max_norm, norm_type, opts)
  local fname = "nn.utils.clip_grad_norm_"
  local grads = grads_of(fname, params)
  max_norm = options.value(max_norm, { type = "number", min = 0 }, fname, 2, "max_norm")
  if norm_type == "inf" then norm_type = math.huge end
  norm_type = options.value(norm_type, { type = "number", min = 0, min_open = true, default = 2 }, fname, 3, "norm_type")
  local o = CLIP_NORM:check(opts, 4)
  if #grads == 0 then return gpu.array(0.0) end
  local dev = grads[1].device
  return autograd.no_grad(function()
    local total
    for _, g in ipairs(grads) do
      local n
      if norm_type == math.huge then n = g:abs():max()
      elseif norm_type == 2 then n = g:square():sum()
      elseif norm_type == 1 then n = g:abs():sum()
      else n = (g:abs() ^ norm_type):sum() end
      if g.dtype ~= "float64" then n = n:astype("float32") end
      if n.device ~= dev then n = n:to(dev) end
      if total == nil then total = n
      elseif norm_type == math.huge then total = gpu.maximum(total, n)
      else total = total + n end
    end
    if norm_type == 2 then total = total:sqrt()
    elseif norm_type ~= 1 and norm_type ~= math.huge then total = total ^ (1 / norm_type) end
    if o.error_if_nonfinite then
      local t = total:item()
      if t ~= t or t == math.huge then
        raise("%s: the total norm of order %s of the gradients is non-finite (%s), so it cannot be clipped",
          fname, tostring(norm_type), tostring(t))
      end
    end
    local coef = (max_norm / (total + 1e-6)):clip(nil, 1.0)
    for _, g in ipairs(grads) do
      local c = coef.device == g.device and coef or coef:to(g.device)
      g:mul_(c:astype(g.dtype))
    end
    return total
  end)
end

-- clip_grad_value_(params, clip_value): each gradient clipped to [-clip_value, clip_value] in place
function utils.clip_grad_value_(params, clip_value)
  local fname = "nn.utils.clip_grad_value_"
  local grads = grads_of(fname, params)
  clip_value = options.value(clip_value, { type = "number", min = 0 }, fname, 2, "clip_value")
  autograd.no_grad(function()
    for _, g in ipairs(grads) do g[{}] = g:clip(-clip_value, clip_value) end
  end)
end

-- parameters_to_vector(params): one vector, the parameters flattened one after another
-- (recorded: differentiable, as PyTorch's); all on one device
function utils.parameters_to_vector(params)
  local ps = params_of("nn.utils.parameters_to_vector", params)
  if #ps == 0 then raise("nn.utils.parameters_to_vector: no parameters") end
  local flat = {}
  for i, p in ipairs(ps) do
    if p.device ~= ps[1].device then
      raise("nn.utils.parameters_to_vector: parameter #%d is on %s, the first on %s", i, p.device, ps[1].device)
    end
    flat[i] = p:reshape(-1)
  end
  return gpu.concat(flat, 1)
end

-- vector_to_parameters(vec, params): the parameters' values from one vector (as
-- parameters_to_vector lays them out), in place, without recording
function utils.vector_to_parameters(vec, params)
  local fname = "nn.utils.vector_to_parameters"
  options.check_array(vec, fname, 1, "vec")
  if vec.ndim ~= 1 then argerror(fname, 1, "a 1-D array expected, got %d dimensions", vec.ndim) end
  local ps = params_of(fname, params)
  local total = 0
  for _, p in ipairs(ps) do total = total + p.size end
  if total ~= vec.size then raise("%s: the vector has %d elements, the parameters %d", fname, vec.size, total) end
  autograd.no_grad(function()
    local at = 1
    for _, p in ipairs(ps) do
      local n = p.size
      p[{}] = vec[{ { at, at + n - 1 } }]:reshape(table.unpack(p.shape)):to(p.device):astype(p.dtype)
      at = at + n
    end
  end)
end

local PAD = options.declare("nn.utils.rnn.pad_sequence", {
  batch_first = { type = "boolean", default = false }, padding_value = { type = "number", default = 0 },
  padding_side = { choices = { "right", "left" }, default = "right" },
}, { example = "gpu.nn.utils.pad_sequence({gpu.ones(2)}, %s)" })

-- pad_sequence(seqs [, {batch_first = false, padding_value = 0, padding_side = "right"}]):
-- arrays (L_i, *) of one trailing shape padded to the longest, stacked as (L, B, *) or, with
-- batch_first, (B, L, *); differentiable
function utils.pad_sequence(seqs, opts)
  local fname = "nn.utils.rnn.pad_sequence"
  if type(seqs) ~= "table" or is_array(seqs) or #seqs == 0 then
    argerror(fname, 1, "a non-empty list of arrays expected, got %s", type_name(seqs))
  end
  local o = PAD:check(opts, 2)
  local first, longest = seqs[1], 0
  for i, x in ipairs(seqs) do
    if not is_array(x) then argerror(fname, 1, "sequence #%d is %s, expected gpu.array", i, type_name(x)) end
    if x.ndim < 1 then argerror(fname, 1, "sequence #%d is 0-d (a sequence has a length)", i) end
    local same = x.ndim == first.ndim and x.dtype == first.dtype and x.device == first.device
    for d = 2, x.ndim do same = same and x.shape[d] == first.shape[d] end
    if not same then
      raise("%s: sequence #%d is %s %s on %s, sequence #1 %s %s on %s (all but the length must agree)", fname, i,
        options.shape_str(x.shape), x.dtype, x.device, options.shape_str(first.shape), first.dtype, first.device)
    end
    longest = math.max(longest, x.shape[1])
  end
  local rows = {}
  for i, x in ipairs(seqs) do
    local n = x.shape[1]
    if n < longest then
      local shape = { table.unpack(x.shape) }
      shape[1] = longest - n
      local pad = gpu.full(shape, o.padding_value, { dtype = x.dtype, device = x.device })
      x = o.padding_side == "right" and gpu.concat({ x, pad }, 1) or gpu.concat({ pad, x }, 1)
    end
    rows[i] = x
  end
  return gpu.stack(rows, o.batch_first and 1 or 2)
end
-- ---- weight_norm ------------------------------------------------------------------------------

-- a parameter or buffer of m taken away, name and field
local function drop_entry(m, kind, names, name)
  for i, n in ipairs(m[names]) do if n == name then table.remove(m[names], i) break end end
  m[kind][name] = nil
  rawset(m, name, nil)
end


-- the 2-norm of v over every axis but dim (kept, of size 1), or over all of it (dim false: 0-d)
local function norm_except(v, dim)
  if not dim then return v:square():sum():sqrt() end
  local axes = {}
  for a = 1, v.ndim do if a ~= dim then axes[#axes + 1] = a end end
  if #axes == 0 then return v:abs() end
  return v:square():sum(axes, { keepdims = true }):sqrt()
end

local WEIGHT_NORM = options.declare("nn.utils.weight_norm", {
  name = { type = "string", default = "weight" }, dim = { type = "integer|boolean", default = 1 },
}, { example = "gpu.nn.utils.weight_norm(gpu.nn.Linear(2, 3), %s)" })

local function check_module(fname, m)
  if not require("gpu.nn.module").is_module(m) then argerror(fname, 1, "a module expected, got %s", type_name(m)) end
end

-- weight_norm(module [, {name = "weight", dim = 1}]) -> module: the parameter name replaced by
-- name_g (its norms over every axis but dim, 1-based; dim = false: one norm of the whole
-- array, PyTorch's dim = None) and name_v (its direction), name recomputed as
-- name_g * name_v / ||name_v|| before each forward (PyTorch's classic torch.nn.utils.weight_norm)
function utils.weight_norm(m, opts)
  local fname = "nn.utils.weight_norm"
  check_module(fname, m)
  local o = WEIGHT_NORM:check(opts, 2)
  local name, dim = o.name, o.dim
  local norms = rawget(m, "_weight_norm") or {}
  if norms[name] then raise("%s: '%s' already has weight norm", fname, name) end
  local w = m._params[name]
  if w == nil then argerror(fname, 1, "the module has no parameter '%s'", name) end
  if dim == true then argerror(fname, 2, "option 'dim' must be an axis or false (every axis), got true") end
  if dim and (dim == 0 or dim > w.ndim or dim < -w.ndim) then
    argerror(fname, 2, "option 'dim' (%d) is out of range for a parameter of %d dimensions", dim, w.ndim)
  end
  if dim and dim < 0 then dim = w.ndim + 1 + dim end
  local g, v = autograd.no_grad(function() return norm_except(w, dim):clone(), w:clone() end)
  drop_entry(m, "_params", "_pnames", name)
  m:register_parameter(name .. "_g", g)
  m:register_parameter(name .. "_v", v)
  local function compute(mod)
    local vv = mod._params[name .. "_v"]
    rawset(mod, name, vv * (mod._params[name .. "_g"] / norm_except(vv, dim)))
  end
  compute(m)
  norms[name] = { dim = dim, hook = m:register_forward_pre_hook(function(mod) compute(mod) end) }
  rawset(m, "_weight_norm", norms)
  return m
end

-- remove_weight_norm(module [, name = "weight"]) -> module: name a plain parameter again,
-- holding name_g * name_v / ||name_v||
function utils.remove_weight_norm(m, name)
  local fname = "nn.utils.remove_weight_norm"
  check_module(fname, m)
  name = options.value(name, { type = "string", default = "weight" }, fname, 2, "name")
  local norms = rawget(m, "_weight_norm")
  if norms == nil or norms[name] == nil then raise("%s: '%s' has no weight norm", fname, name) end
  local w = autograd.no_grad(function()
    local vv = m._params[name .. "_v"]
    return vv * (m._params[name .. "_g"] / norm_except(vv, norms[name].dim))
  end)
  norms[name].hook.remove()
  norms[name] = nil
  for _, suffix in ipairs { "_g", "_v" } do drop_entry(m, "_params", "_pnames", name .. suffix) end
  m:register_parameter(name, w)
  return m
end

-- ---- spectral_norm ----------------------------------------------------------------------------

-- x / max(||x||, eps), PyTorch's normalize of a vector
local function unit(x, eps) return x / x:square():sum():sqrt():maximum(eps) end

local SPECTRAL_NORM = options.declare("nn.utils.spectral_norm", {
  name = { type = "string", default = "weight" }, n_power_iterations = { type = "integer", min = 0, default = 1 },
  eps = { type = "number", min = 0, min_open = true, default = 1e-12 }, dim = { type = "integer" },
}, { example = "gpu.nn.utils.spectral_norm(gpu.nn.Linear(2, 3), %s)" })

-- spectral_norm(module [, {name = "weight", n_power_iterations = 1, eps = 1e-12, dim}]) ->
-- module: PyTorch's classic spectral normalisation. The parameter name becomes name_orig,
-- with the buffers name_u and name_v (unit vectors, drawn from a normal); before each forward
-- name = name_orig / sigma, sigma = u . (W v) of W the parameter as a matrix (dim, 1-based,
-- first: 1, or 2 for the transposed convolutions, as PyTorch's 0 and 1), after
-- n_power_iterations steps of the power iteration updating u and v in training (none in eval).
function utils.spectral_norm(m, opts)
  local fname = "nn.utils.spectral_norm"
  check_module(fname, m)
  local o = SPECTRAL_NORM:check(opts, 2)
  local name = o.name
  local norms = rawget(m, "_spectral_norm") or {}
  if norms[name] then raise("%s: '%s' already has spectral norm", fname, name) end
  local w = m._params[name]
  if w == nil then argerror(fname, 1, "the module has no parameter '%s'", name) end
  local dim = o.dim or ((getmetatable(m).__name or ""):match("^ConvTranspose") and 2 or 1)
  if dim == 0 or dim > w.ndim or dim < -w.ndim then
    argerror(fname, 2, "option 'dim' (%d) is out of range for a parameter of %d dimensions", dim, w.ndim)
  end
  if dim < 0 then dim = w.ndim + 1 + dim end
  local function matrix(t)
    if dim ~= 1 then
      local perm = { dim }
      for a = 1, t.ndim do if a ~= dim then perm[#perm + 1] = a end end
      t = t:permute(perm)
    end
    return t:reshape(t.shape[1], -1)
  end
  local u, v = autograd.no_grad(function()
    local mat = matrix(w)
    local p = { dtype = w.dtype, device = w.device }
    return unit(gpu.random.normal(0, 1, { mat.shape[1] }, p), o.eps), unit(gpu.random.normal(0, 1, { mat.shape[2] }, p), o.eps)
  end)
  drop_entry(m, "_params", "_pnames", name)
  m:register_parameter(name .. "_orig", w)
  m:register_buffer(name .. "_u", u)
  m:register_buffer(name .. "_v", v)
  -- the weight from name_orig, after the power iteration when 'iterate'
  local function compute(mod, iterate)
    local W = mod._params[name .. "_orig"]
    local mat = matrix(W)
    local bu, bv = mod._buffers[name .. "_u"], mod._buffers[name .. "_v"]
    if iterate and o.n_power_iterations > 0 then
      autograd.no_grad(function()
        local md, uu, vv = mat:detach(), bu, bv
        for _ = 1, o.n_power_iterations do
          vv = unit(gpu.matmul(md:transpose(1, 2), uu), o.eps)
          uu = unit(gpu.matmul(md, vv), o.eps)
        end
        bu[{}], bv[{}] = uu, vv
      end)
    end
    local sigma = (bu:clone() * gpu.matmul(mat, bv:clone())):sum()
    return W / sigma
  end
  rawset(m, name, autograd.no_grad(compute, m, false))
  norms[name] = { compute = compute,
                  hook = m:register_forward_pre_hook(function(mod) rawset(mod, name, compute(mod, mod.training)) end) }
  rawset(m, "_spectral_norm", norms)
  return m
end

-- remove_spectral_norm(module [, name = "weight"]) -> module: name a plain parameter again,
-- holding name_orig / sigma (the stored u and v)
function utils.remove_spectral_norm(m, name)
  local fname = "nn.utils.remove_spectral_norm"
  check_module(fname, m)
  name = options.value(name, { type = "string", default = "weight" }, fname, 2, "name")
  local norms = rawget(m, "_spectral_norm")
  if norms == nil or norms[name] == nil then raise("%s: '%s' has no spectral norm", fname, name) end
  local w = autograd.no_grad(norms[name].compute, m, false)
  norms[name].hook.remove()
  norms[name] = nil
  drop_entry(m, "_params", "_pnames", name .. "_orig")
  drop_entry(m, "_buffers", "_bnames", name .. "_u")
  drop_entry(m, "_buffers", "_bnames", name .. "_v")
  m:register_parameter(name, w)
  return m
end

-- packed sequences (nn/packed.lua), also under utils.rnn as PyTorch's torch.nn.utils.rnn
do
  local packed = require "gpu.nn.packed"
  utils.pack_padded_sequence, utils.pad_packed_sequence = packed.pack_padded_sequence, packed.pad_packed_sequence
  utils.pack_sequence = packed.pack_sequence
end
options.count_all("nn.utils.", utils)
utils.rnn = { pad_sequence = utils.pad_sequence, pack_padded_sequence = utils.pack_padded_sequence,
              pad_packed_sequence = utils.pad_packed_sequence, pack_sequence = utils.pack_sequence,
              PackedSequence = require("gpu.nn.packed").PackedSequence }
return utils

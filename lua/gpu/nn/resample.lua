-- gpu.nn.resample: the functional forms of the 1-D and adaptive pooling, interpolation and
-- pixel shuffling (PyTorch's torch.nn.functional names and numbers). gpu.nn puts them into
-- nn.functional; resample_layers.lua builds the layers on them.
--
-- Everything is a composition of dispatched ops, so autograd, autocast and both devices
-- come from those ops:
--   pooling 1-D              the 2-D forms on a (N, C, 1, L) view
--   adaptive_avg_pool        avg_pool2d when the sizes divide, else per-axis averaging
--                            matrices (out, in): y = P_h x P_w^T
--   adaptive_max_pool        a gather of every window padded to the widest one (the
--                            padding repeats the window's last element), argmax, and a
--                            take_along_axis of the winners (the gradient goes to the
--                            first maximum, as PyTorch's)
--   interpolate              nearest: a gather per axis; (bi)linear: per-axis
--                            interpolation matrices (out, in), y = A_h x A_w^T
--   pixel_(un)shuffle        reshape + permute
-- Adaptive windows are PyTorch's: start floor(i L / out), end ceil((i + 1) L / out)
-- (0-based i).

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"
local F = require "gpu.nn.functional"

local raise, argerror = options.raise, options.argerror
local check_array, shape_str = options.check_array, options.shape_str
local single, batched, unbatch = F.single, F.batched, F.unbatch

local R = {}

local size = "integer|table"
local function decl(fname, keys, example) return options.declare(fname, keys, { example = example }) end

-- ---- 1-D pooling ------------------------------------------------------------------------------

R.keys = {}
R.keys.max_pool1d = { stride = size, padding = size, dilation = size, return_indices = "boolean" }
R.keys.avg_pool1d = { stride = size, padding = size }
local MAX_POOL1D = decl("nn.max_pool1d", R.keys.max_pool1d, "gpu.nn.functional.max_pool1d(gpu.ones(1, 1, 4), 2, %s)")
local AVG_POOL1D = decl("nn.avg_pool1d", R.keys.avg_pool1d, "gpu.nn.functional.avg_pool1d(gpu.ones(1, 1, 4), 2, %s)")

-- max_pool1d_as(name, x (N, C, L) or (C, L), kernel, opts) -> y [, indices (1-based along L)]
function R.max_pool1d_as(name, x, k, o)
  local xb, was = batched(name, x, 3)
  k = single(k, "kernel_size", name)
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local y, idx = F.max_pool2d_as(name, xb:reshape(N, C, 1, L), { 1, k }, {
    stride = { 1, single(o.stride or k, "stride", name) }, padding = { 0, single(o.padding or 0, "padding", name, true) },
    dilation = { 1, single(o.dilation or 1, "dilation", name) }, return_indices = o.return_indices })
  y = unbatch(y:reshape(N, C, y.shape[4]), was)
  if idx then return y, unbatch(idx:reshape(N, C, y.shape[was and 2 or 3]), was) end
  return y
end
function R.max_pool1d(x, k, opts) return R.max_pool1d_as("nn.max_pool1d", x, k, MAX_POOL1D:check(opts, 3)) end

-- avg_pool1d_as(name, x, kernel, opts): padding counted as zeros (count_include_pad)
function R.avg_pool1d_as(name, x, k, o)
  local xb, was = batched(name, x, 3)
  k = single(k, "kernel_size", name)
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local y = F.avg_pool2d_as(name, xb:reshape(N, C, 1, L), { 1, k }, {
    stride = { 1, single(o.stride or k, "stride", name) }, padding = { 0, single(o.padding or 0, "padding", name, true) } })
  return unbatch(y:reshape(N, C, y.shape[4]), was)
end
function R.avg_pool1d(x, k, opts) return R.avg_pool1d_as("nn.avg_pool1d", x, k, AVG_POOL1D:check(opts, 3)) end

-- ---- adaptive pooling ----------------------------------------------------------------------------

-- PyTorch's adaptive windows of 'n' inputs into 'm' outputs: 0-based starts and (exclusive) ends.
local function windows(n, m)
  local st, en, widest = {}, {}, 0
  for i = 0, m - 1 do
    st[i + 1] = (i * n) // m
    en[i + 1] = -((-(i + 1) * n) // m)
    widest = math.max(widest, en[i + 1] - st[i + 1])
  end
  return st, en, widest
end

-- The adaptive output sizes: a number, or a table of nd entries (nil or false keeps the
-- input's size, as PyTorch's None).
local function out_sizes(name, out, nd, ins)
  if math.type(out) == "integer" then out = { out, out, out } end
  if type(out) ~= "table" then
    raise("%s: output_size must be an integer or a table of %d, got %s", name, nd, options.type_name(out))
  end
  local r = {}
  for i = 1, nd do
    local v = out[i]
    if v == nil or v == false then v = ins[i] end
    if math.type(v) ~= "integer" or v < 1 then
      raise("%s: output_size entries must be positive integers, got %s", name, tostring(v))
    end
    r[i] = v
  end
  return r
end

-- The averaging matrix (m, n) of adaptive windows, on x's dtype and device.
local function avg_matrix(n, m, x)
  local st, en = windows(n, m)
  local rows = {}
  for i = 1, m do
    local row = {}
    for j = 1, n do row[j] = 0 end
    for j = st[i] + 1, en[i] do row[j] = 1 / (en[i] - st[i]) end
    rows[i] = row
  end
  return gpu.array(rows, { dtype = x.dtype, device = x.device })
end

-- adaptive_avg_pool2d(x (N, C, H, W) or (C, H, W), output_size)
local function adaptive_avg2d(name, x, out)
  local xb, was = batched(name, x, 4)
  local H, W = xb.shape[3], xb.shape[4]
  local o = out_sizes(name, out, 2, { H, W })
  local y
  if H % o[1] == 0 and W % o[2] == 0 then
    local k = { H // o[1], W // o[2] }
    y = F.avg_pool2d_as(name, xb, k, { stride = k })
  else
    y = xb
    if W ~= o[2] then y = y:matmul(avg_matrix(W, o[2], xb).T) end
    if H ~= o[1] then y = avg_matrix(H, o[1], xb):matmul(y) end
  end
  return unbatch(y, was)
end
function R.adaptive_avg_pool2d(x, out) return adaptive_avg2d("nn.adaptive_avg_pool2d", x, out) end
function R.adaptive_avg_pool1d(x, out)
  local name = "nn.adaptive_avg_pool1d"
  local xb, was = batched(name, x, 3)
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local y = adaptive_avg2d(name, xb:reshape(N, C, 1, L), { 1, out_sizes(name, out, 1, { L })[1] })
  return unbatch(y:reshape(N, C, y.shape[4]), was)
end

-- Window element indices (m, widest) of adaptive windows, 0-based, each row padded with
-- its window's last element.
local function window_index(n, m)
  local st, en, widest = windows(n, m)
  local rows = {}
  for i = 1, m do
    local r = {}
    for j = 1, widest do r[j] = math.min(st[i] + j - 1, en[i] - 1) end
    rows[i] = r
  end
  return rows, widest
end

-- adaptive_max_nd(xb (N, C, sizes...), o (output sizes)) -> y (N, C, o...), positions (N, C,
-- o...: 1-based in the flattened plane or volume): every output's window, padded to the
-- widest, gathered from the flattened input; the first maximum of each wins
local function adaptive_max_nd(xb, o)
  local N, C = xb.shape[1], xb.shape[2]
  local nd = #o
  local sizes, idx, k = {}, {}, {}
  local nout, nwin, total = 1, 1, 1
  for d = 1, nd do
    sizes[d] = xb.shape[d + 2]
    idx[d], k[d] = window_index(sizes[d], o[d])
    nout, nwin, total = nout * o[d], nwin * k[d], total * sizes[d]
  end
  -- outputs in row-major order, and within each its window's taps in row-major order
  local flat = {}
  local function taps(out_at, d, base)
    if d > nd then flat[#flat + 1] = base + 1 return end
    for t = 1, k[d] do taps(out_at, d + 1, base * sizes[d] + idx[d][out_at[d]][t]) end
  end
  local out_at = {}
  local function outs(d)
    if d > nd then taps(out_at, 1, 0) return end
    for a = 1, o[d] do out_at[d] = a; outs(d + 1) end
  end
  outs(1)
  local pos = gpu.array(flat, { dtype = "int64", device = xb.device }):reshape(nout, nwin)
  local win = xb:reshape(N, C, total):index(3, pos:reshape(-1)):reshape(N, C, nout, nwin)
  local best = autograd.no_grad(function() return win:argmax(4, { keepdims = true }) end)
  local shape = { N, C, table.unpack(o) }
  local y = gpu.take_along_axis(win, best, 4):reshape(shape)
  return y, function() return gpu.take_along_axis(pos:reshape(1, 1, nout, nwin), best, 4):reshape(shape) end
end
R.adaptive_max_nd = adaptive_max_nd

-- adaptive_max_pool2d(x, output_size [, return_indices]) -> y [, indices: 1-based positions
-- in the flattened H x W plane]
local function adaptive_max2d(name, x, out, return_indices)
  local xb, was = batched(name, x, 4)
  local o = out_sizes(name, out, 2, { xb.shape[3], xb.shape[4] })
  local y, where = adaptive_max_nd(xb, o)
  y = unbatch(y, was)
  if not return_indices then return y end
  return y, unbatch(where(), was)
end
function R.adaptive_max_pool2d(x, out, return_indices)
  if return_indices ~= nil and type(return_indices) ~= "boolean" then
    argerror("nn.adaptive_max_pool2d", 3, "return_indices must be a boolean, got %s", options.type_name(return_indices))
  end
  return adaptive_max2d("nn.adaptive_max_pool2d", x, out, return_indices)
end
function R.adaptive_max_pool1d(x, out, return_indices)
  local name = "nn.adaptive_max_pool1d"
  if return_indices ~= nil and type(return_indices) ~= "boolean" then
    argerror(name, 3, "return_indices must be a boolean, got %s", options.type_name(return_indices))
  end
  local xb, was = batched(name, x, 3)
  local N, C, L = xb.shape[1], xb.shape[2], xb.shape[3]
  local y, idx = adaptive_max2d(name, xb:reshape(N, C, 1, L), { 1, out_sizes(name, out, 1, { L })[1] }, return_indices)
  y = unbatch(y:reshape(N, C, y.shape[4]), was)
  if idx then return y, unbatch(idx:reshape(N, C, idx.shape[4]), was) end
  return y
end
R.adaptive_max2d = adaptive_max2d
R.adaptive_avg2d = adaptive_avg2d
R.out_sizes, R.avg_matrix = out_sizes, avg_matrix

-- ---- interpolate -----------------------------------------------------------------------------

local MODES = { "nearest", "nearest-exact", "linear", "bilinear" }
R.keys.interpolate = {
  size = "integer|table", scale_factor = "number|table",
  mode = { choices = MODES, default = "nearest" },
  align_corners = "boolean",
  recompute_scale_factor = "boolean",
}
local INTERPOLATE = decl("nn.interpolate", R.keys.interpolate,
  "gpu.nn.functional.interpolate(gpu.ones(1, 1, 2, 2), (function(o) if not o.size then o.scale_factor = o.scale_factor or 2 end return o end)(%s))")

-- The source scale of each output axis (PyTorch's area_pixel_compute_scale): in/out when
-- the size was given (or recompute_scale_factor), 1/scale_factor otherwise.
local function axis_scale(n, m, sf, align)
  if align then return m > 1 and (n - 1) / (m - 1) or 0 end
  if sf then return 1 / sf end
  return n / m
end

-- The linear interpolation matrix (m, n).
local function linear_matrix(n, m, sf, align, x)
  local scale = axis_scale(n, m, sf, align)
  local rows = {}
  for i = 0, m - 1 do
    local row = {}
    for j = 1, n do row[j] = 0 end
    local src = align and i * scale or math.max((i + 0.5) * scale - 0.5, 0)
    local i0 = math.min(math.floor(src), n - 1)
    local i1 = math.min(i0 + 1, n - 1)
    local l1 = src - i0
    row[i0 + 1] = row[i0 + 1] + (1 - l1)
    row[i1 + 1] = row[i1 + 1] + l1
    rows[i + 1] = row
  end
  return gpu.array(rows, { dtype = x.dtype, device = x.device })
end

-- The nearest source index (m) of each output, 1-based int64: floor(i * scale)
-- ("nearest", PyTorch's legacy rule), or floor((i + 0.5) * scale) ("nearest-exact", the
-- pixel centres', as PIL and scikit-image).
local function nearest_index(n, m, sf, x, exact)
  local scale = sf and 1 / sf or n / m
  local idx = {}
  local half = exact and 0.5 or 0
  for i = 0, m - 1 do idx[i + 1] = math.min(math.floor((i + half) * scale), n - 1) + 1 end
  return gpu.array(idx, { dtype = "int64", device = x.device })
end

-- interpolate_as(name, x, opts): x (N, C, L) or (N, C, H, W); opts checked.
function R.interpolate_as(name, x, o)
  check_array(x, name, 1, "input")
  if x.ndim ~= 3 and x.ndim ~= 4 then
    raise("%s: expected a 3-D (N, C, L) or 4-D (N, C, H, W) input, got shape %s", name, shape_str(x.shape))
  end
  if not ({ float16 = true, bfloat16 = true, float32 = true, float64 = true })[x.dtype] then
    raise("%s: input must be a float array, got %s", name, x.dtype)
  end
  local nd = x.ndim - 2
  local mode = o.mode or "nearest"
  if mode == "linear" and nd ~= 1 or mode == "bilinear" and nd ~= 2 then
    raise("%s: mode '%s' takes a %s input, got shape %s", name, mode, mode == "linear" and "3-D" or "4-D",
      shape_str(x.shape))
  end
  if o.align_corners ~= nil and (mode == "nearest" or mode == "nearest-exact") then
    raise("%s: align_corners only applies to the linear modes, not '%s'", name, mode)
  end
  if (o.size == nil) == (o.scale_factor == nil) then
    raise("%s: give exactly one of size and scale_factor", name)
  end
  local ins, outs, sfs = {}, {}, {}
  for i = 1, nd do ins[i] = x.shape[i + 2] end
  if o.size ~= nil then
    local sz = o.size
    if type(sz) ~= "table" then sz = nd == 1 and { sz } or { sz, sz } end
    if #sz ~= nd then raise("%s: size must have %d entries for a %d-D input, got %d", name, nd, x.ndim, #sz) end
    for i = 1, nd do
      if math.type(sz[i]) ~= "integer" or sz[i] < 1 then
        raise("%s: size entries must be positive integers, got %s", name, tostring(sz[i]))
      end
      outs[i] = sz[i]
    end
  else
    local sf = o.scale_factor
    if type(sf) ~= "table" then sf = nd == 1 and { sf } or { sf, sf } end
    if #sf ~= nd then raise("%s: scale_factor must have %d entries for a %d-D input, got %d", name, nd, x.ndim, #sf) end
    for i = 1, nd do
      if type(sf[i]) ~= "number" or not (sf[i] > 0) or sf[i] == math.huge then
        raise("%s: scale_factor entries must be positive numbers, got %s", name, tostring(sf[i]))
      end
      outs[i] = math.floor(ins[i] * sf[i])
      if outs[i] < 1 then raise("%s: scale_factor %g makes an empty output from %d", name, sf[i], ins[i]) end
      if not o.recompute_scale_factor then sfs[i] = sf[i] end
    end
  end
  local y = x
  for i = nd, 1, -1 do                  -- the last axis first: its matrix multiplies from the right
    local ax = i + 2
    if outs[i] ~= ins[i] or (sfs[i] and sfs[i] ~= 1) then
      if mode == "nearest" or mode == "nearest-exact" then
        y = y:index(ax, nearest_index(ins[i], outs[i], sfs[i], x, mode == "nearest-exact"))
      else
        local A = linear_matrix(ins[i], outs[i], sfs[i], o.align_corners, x)
        if ax == x.ndim then y = y:matmul(A.T)
        else y = A:matmul(y) end
      end
    end
  end
  return y
end
function R.interpolate(x, opts) return R.interpolate_as("nn.interpolate", x, INTERPOLATE:check(opts, 2)) end

-- ---- pixel shuffle ---------------------------------------------------------------------------

-- The checked x (..., C, H, W) and factor r of a pixel (un)shuffle ('what' names r), and
-- x's leading axes, C, H and W.
local function shuffle_args(name, x, r, what)
  check_array(x, name, 1, "input")
  r = options.value(r, { type = "integer", min = 1 }, name, 2, what)
  if x.ndim < 3 then raise("%s: expected at least 3 axes (..., C, H, W), got shape %s", name, shape_str(x.shape)) end
  local s, nd = x.shape, x.ndim
  return r, { table.unpack(s, 1, nd - 3) }, s[nd - 2], s[nd - 1], s[nd]
end

-- x viewed as lead..., split (the channel and spatial axes split by r), permuted by the
-- 5 axes' order after the leading ones, reshaped to lead..., out
local function shuffle(x, lead, split, order, out)
  local n = #lead
  local v, perm, shape = { table.unpack(lead) }, {}, { table.unpack(lead) }
  for _, d in ipairs(split) do v[#v + 1] = d end
  for i = 1, n do perm[i] = i end
  for _, a in ipairs(order) do perm[#perm + 1] = n + a end
  for _, d in ipairs(out) do shape[#shape + 1] = d end
  return x:reshape(v):permute(perm):reshape(shape)
end

-- pixel_shuffle(x (..., C r^2, H, W), r) -> (..., C, H r, W r)
function R.pixel_shuffle_as(name, x, r)
  local lead, C, H, W
  r, lead, C, H, W = shuffle_args(name, x, r, "upscale_factor")
  if C % (r * r) ~= 0 then
    raise("%s: the %d channels are not divisible by upscale_factor^2 = %d", name, C, r * r)
  end
  return shuffle(x, lead, { C // (r * r), r, r, H, W }, { 1, 4, 2, 5, 3 }, { C // (r * r), H * r, W * r })
end
function R.pixel_shuffle(x, r) return R.pixel_shuffle_as("nn.pixel_shuffle", x, r) end

-- pixel_unshuffle(x (..., C, H r, W r), r) -> (..., C r^2, H, W)
function R.pixel_unshuffle_as(name, x, r)
  local lead, C, H, W
  r, lead, C, H, W = shuffle_args(name, x, r, "downscale_factor")
  if H % r ~= 0 or W % r ~= 0 then
    raise("%s: the spatial size %dx%d is not divisible by downscale_factor %d", name, H, W, r)
  end
  return shuffle(x, lead, { C, H // r, r, W // r, r }, { 1, 3, 5, 2, 4 }, { C * r * r, H // r, W // r })
end
function R.pixel_unshuffle(x, r) return R.pixel_unshuffle_as("nn.pixel_unshuffle", x, r) end

-- the functional forms gpu.nn puts into nn.functional
R.functional = {
  max_pool1d = R.max_pool1d, avg_pool1d = R.avg_pool1d,
  adaptive_avg_pool1d = R.adaptive_avg_pool1d, adaptive_avg_pool2d = R.adaptive_avg_pool2d,
  adaptive_max_pool1d = R.adaptive_max_pool1d, adaptive_max_pool2d = R.adaptive_max_pool2d,
  interpolate = R.interpolate, pixel_shuffle = R.pixel_shuffle, pixel_unshuffle = R.pixel_unshuffle,
}

return R

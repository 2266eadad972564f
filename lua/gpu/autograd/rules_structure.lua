-- gpu.autograd.rules, second part: the rules of the ops that move, pick, join and
-- combine elements (sorting, indexing and joining, linear algebra, fused kernels,
-- convolution, pooling, batch norm). rules.lua calls this with its table and the shared
-- helpers; the conventions are rules.lua's header.

local gpu = require "gpu"
local G = gpu._grad
local is_array = require("gpu.options").is_array

return function(R, H)
local tracked, unbroadcast, norm_axis, no_grad = H.tracked, H.unbroadcast, H.norm_axis, H.no_grad
local op_node, scatter_add, put_key, scatter_along = H.op_node, H.scatter_add, H.put_key, H.scatter_along

-- ---- sorting --------------------------------------------------------------------------------------------

R.sort = { saves = {}, backward = function(g, node)
  local x, a2, a3 = node[1], node[2], node[3]
  local axis = type(a2) == "number" and a2 or -1
  local o = type(a2) == "table" and a2 or a3
  local idx = no_grad(function() return x:argsort(axis, o) end)
  if x.ndim == 0 then return g end
  return scatter_along(x, idx, g, axis)
end }
R.topk = { saves = {}, backward = function(g, node)
  local x = node[1]
  local axis = type(node[3]) == "number" and node[3] or -1
  return scatter_along(x, node.extra[1], g, axis)
end }

-- ---- indexing and joining ----------------------------------------------------------------------------------

R.take = { saves = { 2 }, backward = function(g, node)
  local x, idx, axis = node[1], node[2], node[3]
  if axis == nil then
    local flat = scatter_add(gpu.zeros(x.size, { device = x.device }), 1, idx:reshape(idx.size), g:reshape(g.size))
    return flat:reshape(x.shape)
  end
  axis = norm_axis(axis, x.ndim)
  local s = {}
  local xs = x.shape
  for i = 1, axis - 1 do s[#s + 1] = xs[i] end
  s[#s + 1] = idx.size
  for i = axis + 1, #xs do s[#s + 1] = xs[i] end
  return scatter_add(x, axis, idx:reshape(idx.size), g:reshape(s))
end }
R.index = { saves = { 3 }, backward = function(g, node)
  local x, axis, idx = node[1], node[2], node[3]
  return R.take.backward(g, { x, idx, axis, n = 3 })
end }
R.masked_select = { saves = { 2 }, backward = function(g, node) return put_key(node[1], node[2], g) end }
-- x[key]: slices, x.T, integer and mask arrays (recorded by larray.c's __index)
R.getindex = { saves = {}, backward = function(g, node)
  local x, key = node[1], node[2]
  if key == "T" then return g:transpose() end
  if is_array(key) and key.dtype ~= "bool" then
    local s = { key.size }
    local xs = x.shape
    for d = 2, #xs do s[d] = xs[d] end
    return scatter_add(x, 1, key:reshape(key.size), g:reshape(s))
  end
  return put_key(x, key, g)
end }

local function join(stacking)
  return { saves = {}, backward = function(g, node)
    local list, axis = node[1], node[2] or 1
    axis = norm_axis(axis, g.ndim)
    local sizes = {}
    for i = 1, #list do sizes[i] = stacking and 1 or list[i].shape[axis] end
    local parts = g:split(sizes, axis)
    if stacking then
      for i = 1, #parts do parts[i] = parts[i]:reshape(list[i].shape) end
    end
    return parts          -- a list: one gradient per array of the list argument
  end, list = true }
end
R.concat = join(false)
R.concatenate = R.concat
R.stack = join(true)

-- split: each piece is its own node, whose gradient lands in its slice of x
R.split = { saves = {}, record = function(node, pieces)
  local a = R._node_args(node)
  local x, axis = a[1], a[3] or 1
  axis = norm_axis(axis, x.ndim)
  local start = 1
  for i = 1, #pieces do
    local len = pieces[i].shape[axis]
    local key = {}
    for d = 1, x.ndim do key[d] = ":" end
    key[axis] = { start, start + len - 1 }
    start = start + len
    G.set_node(pieces[i], op_node(R.getindex, pieces[i], x, key))
  end
end }

R["repeat"] = { saves = {}, backward = function(g, node)
  local x, reps, axis = node[1], node[2], node[3]
  if is_array(reps) then
    local ax = axis and norm_axis(axis, x.ndim) or 1
    local src = axis and x or x:reshape(x.size)
    local n = src.shape[ax]
    local pos = gpu.arange(1, n + 1, { device = x.device }):repeat_interleave(reps)
    local z = scatter_add(src, ax, pos, axis and g or g:reshape(g.size))
    return z:reshape(x.shape)
  end
  if axis == nil then return g:reshape(x.size, reps):sum(2):reshape(x.shape) end
  axis = norm_axis(axis, x.ndim)
  local s = {}
  local xs = x.shape
  for i = 1, #xs do
    s[#s + 1] = xs[i]
    if i == axis then s[#s + 1] = reps end
  end
  return g:reshape(s):sum(axis + 1)
end }
R.repeat_interleave = R["repeat"]

-- ---- linear algebra ----------------------------------------------------------------------------------------

local function matmul_grads(g, a, b)
  local an, bn = a.ndim, b.ndim
  if an == 1 and bn == 1 then return g * b, g * a end
  local a2 = an == 1 and a:reshape(1, a.shape[1]) or a
  local b2 = bn == 1 and b:reshape(b.shape[1], 1) or b
  local g2 = g
  if an == 1 then g2 = g2:unsqueeze(-2) end
  if bn == 1 then g2 = g2:unsqueeze(-1) end
  local ga, gb
  if tracked(a) then
    ga = unbroadcast(g2:matmul(b2:transpose(-1, -2)), a2.shape)
    if an == 1 then ga = ga:reshape(a.shape) end
  end
  if tracked(b) then
    gb = unbroadcast(a2:transpose(-1, -2):matmul(g2), b2.shape)
    if bn == 1 then gb = gb:reshape(b.shape) end
  end
  return ga, gb
end
R.matmul = { backward = function(g, node) return matmul_grads(g, node[1], node[2]) end }
R.dot = { backward = function(g, node)
  local a, b = node[1], node[2]
  if a.ndim == 0 or b.ndim == 0 then return g * b, g * a end
  if b.ndim <= 2 then return matmul_grads(g, a, b) end
  error("dot: the gradient of N-D dot with a >2-D second operand is not implemented (use matmul)")
end }
R.outer = { backward = function(g, node)
  local a, b = node[1], node[2]
  return g:matmul(b:reshape(b.size)):reshape(a.shape), g:transpose():matmul(a:reshape(a.size)):reshape(b.shape)
end }

-- ---- fused kernels ---------------------------------------------------------------------------------------------

-- fused.linear(x (..., in), w (out, in) [, b (out)]) = x w^T + b
R["fused.linear"] = { backward = function(g, node)
  local x, w, b = node[1], node[2], node[3]
  local gx, gw, gb
  local g2 = g.ndim == 2 and g or g:reshape(-1, g.shape[g.ndim])
  if tracked(x) then gx = g:matmul(w) end
  if tracked(w) then
    local x2 = x.ndim == 2 and x or x:reshape(-1, x.shape[x.ndim])
    gw = g2:transpose():matmul(x2)
  end
  if b ~= nil and tracked(b) then gb = g2:sum(1) end
  return gx, gw, gb
end }

-- fused.cross_entropy(z (N, C), labels (N) | target (N, C) [, opts]) -> loss (N), probs
-- (N, C): d loss_i / d z = probs_i - t_i. The fused backward when grad is off; with
-- create_graph the same formula in array ops, so it is differentiable again.
R["fused.cross_entropy"] = { saves = { 2 }, backward = function(g, node)
  local z, lt, o = node[1], node[2], node[3]
  local eps = o and o.label_smoothing or 0
  local labels = lt.dtype:match("int") ~= nil
  if not G.grad_enabled() then
    local p = node.extra[1]
    local gz = gpu.fused.cross_entropy_backward(p, lt, g, { label_smoothing = eps, scale = 1 })
    local gt = (not labels and tracked(lt)) and (-(z - z:logsumexp(2, { keepdims = true })) * g:reshape(-1, 1)) or nil
    return gz, gt
  end
  local C = z.shape[2]
  local lse = z:logsumexp(2, { keepdims = true })
  local p = (z - lse):exp()
  local t
  if labels then
    t = lt:reshape(-1, 1):eq(gpu.arange(1, C + 1, { device = z.device })):astype(z.dtype)
    if eps > 0 then t = t * (1 - eps) + eps / C end
  else
    t = lt
  end
  local gg = g:reshape(-1, 1)
  return (p - t) * gg, (not labels) and (-(z - lse) * gg) or nil
end }

-- ---- convolution, pooling, batch norm, softmax -----------------------------------------------------------------

local function window_opts(o)
  local w = {}
  for _, k in ipairs { "kernel", "stride", "padding", "dilation" } do w[k] = o and o[k] end
  return w
end
R.im2col = { saves = {}, backward = function(g, node)
  local x = node[1]
  return gpu.col2im(g, x.shape, window_opts(node[2]))
end }
R.col2im = { saves = {}, backward = function(g, node)
  return gpu.im2col(g, window_opts(node[3]))
end }
R["dnn.conv2d"] = { backward = function(g, node)
  local x, w, o = node[1], node[2], node[3]
  local gx = tracked(x) and gpu.dnn.conv2d_backward_data(g, w, x.shape, o) or nil
  local gw = tracked(w) and gpu.dnn.conv2d_backward_filter(x, g, w.shape, o) or nil
  return gx, gw
end }
local function pool(name)
  return { uses_y = true, backward = function(g, node, y)
    return gpu.dnn[name .. "_backward"](node[1], y, g, node[2])
  end }
end
R["dnn.max_pool2d"] = pool("max_pool2d")
R["dnn.avg_pool2d"] = pool("avg_pool2d")
R["dnn.softmax"] = { saves = {}, uses_y = true, backward = function(g, node, y)
  if g.dtype ~= y.dtype then g = g:astype(y.dtype) end
  return gpu.dnn.softmax_backward(y, g, node[2])
end }
-- batch_norm(x, w, b, running_mean, running_var [, {training, momentum, eps}]): training
-- returns y, save_mean, save_invstd (node.extra); eval uses the running statistics
R["dnn.batch_norm"] = { saves = { 1, 2, 4, 5 }, backward = function(g, node)
  local x, w, b, rm, rv, o = node[1], node[2], node[3], node[4], node[5], node[6]
  local eps = o and o.eps or 1e-5
  if o == nil or o.training ~= false then
    local sm, si = node.extra[1], node.extra[2]
    local dx, dw, db = gpu.dnn.batch_norm_backward(x, g, w, sm, si, { eps = eps })
    return dx, dw, db
  end
  local shape = { 1, x.shape[2] }
  for _ = 3, x.ndim do shape[#shape + 1] = 1 end
  local axes = { 1 }
  for d = 3, x.ndim do axes[#axes + 1] = d end
  local invstd = (rv + eps):rsqrt()
  local xhat = (x - rm:reshape(shape)) * invstd:reshape(shape)
  return g * (invstd * w):reshape(shape), (g * xhat):sum(axes), g:sum(axes)
end }

end

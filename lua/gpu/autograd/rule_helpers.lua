-- gpu.autograd.rule_helpers: what the backward rules (rules.lua, rules_structure.lua) and
-- the engine (autograd.lua) share: the layout of a tape node, and the differentiable
-- helpers the rules are written in (unbroadcast, the scatters that are adjoints of take,
-- x[key] and take_along_axis, custom nodes inside a rule, no_grad).

local gpu = require "gpu"

local G = gpu._grad
local H = {}

local is_array = require("gpu.options").is_array
H.is_array = is_array
local function tracked(v) return is_array(v) and G.node(v) ~= nil end
H.tracked = tracked

-- ---- nodes -----------------------------------------------------------------------------------
-- An op's node reads as the table { rule, n, the result's storage version, the n
-- arguments' storage versions (0 for non-arrays), the n arguments }; node.extra holds the
-- results after the first. The dispatch makes them as userdata that its metatable shows
-- in that layout (src/lua/lgrad.c: one allocation per tracked op); op_node below makes
-- the same as a plain table for the Lua-side recorders.
local HEAD = 3
H.HEAD = HEAD

-- op_node(rule, out, ...) -> the node the dispatch would give out for a call with ...
local function op_node(rule, out, ...)
  local n = select("#", ...)
  local node = { rule, n, G.version(out) }
  for i = 1, n do
    local v = select(i, ...)
    node[HEAD + i] = is_array(v) and G.version(v) or 0
    node[HEAD + n + i] = v
  end
  return node
end
H.op_node = op_node

-- node_args(node) -> the call's arguments {[1..n], n =, extra =}, as the rules take them
function H.node_args(node)
  if type(node) == "userdata" then return G.node_args(node) end   -- the dispatch's nodes
  local n = node[2]
  return table.move(node, HEAD + n + 1, HEAD + 2 * n, 1, { n = n, extra = node.extra })
end

-- the rule of a custom function (autograd.record): backward(g) gives the inputs' gradients
function H.custom_rule(backward)
  return { custom = true, backward = function(g) return backward(g) end }
end

-- ---- helpers (all differentiable) ----------------------------------------------------------

-- Sums g down to 'shape' (undoes broadcasting).
local function unbroadcast(g, shape)
  local gs = g.shape
  local gn, xn = #gs, #shape
  if gn == xn then
    local same = true
    for i = 1, gn do if gs[i] ~= shape[i] then same = false break end end
    if same then return g end
  end
  local axes = {}
  local lead = gn - xn
  for i = 1, lead do axes[#axes + 1] = i end
  for i = 1, xn do
    if shape[i] == 1 and gs[lead + i] ~= 1 then axes[#axes + 1] = lead + i end
  end
  if #axes > 0 then g = g:sum(axes) end
  return g:reshape(shape)
end
H.unbroadcast = unbroadcast

local function norm_axis(a, nd) if a < 0 then return nd + a + 1 end return a end
H.norm_axis = norm_axis

-- A custom differentiable function inside a rule: out computed with grad off, recorded
-- with its own backward when an input is tracked and grad is on (create_graph).
local function custom(out, inputs, backward)
  if not G.grad_enabled() then return out end
  for i = 1, #inputs do
    if tracked(inputs[i]) then
      G.set_node(out, op_node(H.custom_rule(backward), out, table.unpack(inputs, 1, #inputs)))
      break
    end
  end
  return out
end

local function no_grad(f, ...)
  local was = G.set_grad_enabled(false)
  local ok, a, b = pcall(f, ...)
  G.set_grad_enabled(was)
  if not ok then error(a, 0) end
  return a, b
end

-- zeros of x's shape with g added at positions idx along axis (take's adjoint)
local function scatter_add(x, axis, idx, g)
  local z = no_grad(function()
    local out = gpu.zeros(x.shape, { dtype = g.dtype, device = g.device })
    out:index_put_(axis, idx, g, { accumulate = true })
    return out
  end)
  return custom(z, { g }, function(gz) return gz:take(idx, axis) end)
end
H.scatter_add = scatter_add

-- zeros of x's shape with z[key] = g (the adjoint of x[key])
local function put_key(x, key, g)
  local meta = getmetatable(x)
  local z = no_grad(function()
    local out = gpu.zeros(x.shape, { dtype = g.dtype, device = g.device })
    meta.__newindex(out, key, g)
    return out
  end)
  return custom(z, { g }, function(gz) return gz[key] end)
end

-- g gathered along 'axis' at per-row 1-based positions idx (same shape as g, or of idx):
-- NumPy's take_along_axis, built on a flat take.
local function take_along(g, idx, axis)
  local nd = g.ndim
  axis = norm_axis(axis, nd)
  local gl = axis == nd and g or g:transpose(axis, nd)
  local il = axis == nd and idx or idx:transpose(axis, nd)
  gl, il = gl:contiguous(), il:contiguous()
  local L, K = gl.shape[nd], il.shape[nd]
  local rows = gl.size // L
  local base = (gpu.arange(0, rows, { device = g.device }) * L):reshape(rows, 1)
  local flat = (il:reshape(rows, K):astype("int64") + base):reshape(rows * K)
  local out = gl:reshape(rows * L):take(flat):reshape(il.shape)
  if axis ~= nd then out = out:transpose(axis, nd) end
  return out
end

-- zeros of x's shape with g added at per-row positions idx along axis (take_along's adjoint)
local function scatter_along(x, idx, g, axis)
  local nd = x.ndim
  axis = norm_axis(axis, nd)
  local z = no_grad(function()
    local xs = axis == nd and x.shape or x:transpose(axis, nd).shape
    local il = (axis == nd and idx or idx:transpose(axis, nd)):contiguous()
    local gl = (axis == nd and g or g:transpose(axis, nd)):contiguous()
    local L, K = xs[nd], il.shape[nd]
    local rows = il.size // K
    local base = (gpu.arange(0, rows, { device = g.device }) * L):reshape(rows, 1)
    local flat = (il:reshape(rows, K):astype("int64") + base):reshape(rows * K)
    local out = gpu.zeros(rows * L, { dtype = g.dtype, device = g.device })
    out:index_put_(1, flat, gl:reshape(rows * K), { accumulate = true })
    out = out:reshape(xs)
    if axis ~= nd then out = out:transpose(axis, nd):contiguous() end
    return out
  end)
  return custom(z, { g }, function(gz) return take_along(gz, idx, axis) end)
end

H.no_grad, H.put_key, H.scatter_along = no_grad, put_key, scatter_along

-- ---- complex (PyTorch's conventions) --------------------------------------------------------
-- For a real loss L of a complex z = x + iy the gradient the tape carries for z is
-- dL/dx + i dL/dy (twice the conjugate Wirtinger derivative dL/dz*), so that a gradient step
-- z - lr * grad descends. Hence:
--   y = f(z) holomorphic            grad_z = grad_y * conj(f'(z))
--   y real, from a complex z         grad_z = dy/dx * g + i dy/dy * g   (abs: g z / |z|)
--   a real input promoted to complex the real part of its complex gradient (the engine's
--                                    cast to the input's dtype takes it, as astype does)
-- so the real rules hold for complex operands once each derivative factor is conjugated:
-- conj(v) below is v itself for real arrays and numbers.

local dtypes = gpu._dtypes
local function is_complex(v) return is_array(v) and dtypes[v.dtype].kind == "complex" end
H.is_complex = is_complex

-- the complex conjugate of an array or a Lua complex scalar; real values as they are
function H.conj(v)
  if is_array(v) then return is_complex(v) and v:conj() or v end
  if type(v) == "number" then return v end
  return v:conj()
end

-- z / |z| with 0 at 0 (NumPy 2's sign of a complex number, PyTorch's sgn); x:sign() for reals.
-- The zero case divides by 1, so a second derivative never meets 0 / 0.
function H.sgn(x)
  if not is_complex(x) then return x:sign() end
  local a = x:abs()
  return x / gpu.where(a:eq(0), 1, a)
end

-- The real (k = 1) or imaginary (k = 2) part of a complex array, as a real array made of
-- differentiable views (view_as_real, a slice of its last axis, the shape back: a 0-d z's
-- part is a 0-d array, not the number an integer key would read).
local function part(z, k)
  local key = {}
  for d = 1, z.ndim do key[d] = ":" end
  key[z.ndim + 1] = { k, k }
  return gpu.view_as_real(z)[key]:reshape(z.shape)
end
H.part = part

-- re + i im from two real arrays of one shape and dtype (differentiable: stack, then
-- view_as_complex)
function H.from_parts(re, im)
  return gpu.view_as_complex(gpu.stack({ re, im }, re.ndim + 1))
end

return H

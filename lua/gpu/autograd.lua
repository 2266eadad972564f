-- gpu.autograd: reverse-mode automatic differentiation over gpu arrays (a tape in Lua).
--
--   local w = gpu.randn(3, 2):requires_grad()
--   local loss = (x:matmul(w)):relu():sum()
--   loss:backward()            -- fills w.grad
--   gpu.no_grad(function() w:sub_(w.grad * 0.1) end)
--
-- Array userdata hold no Lua fields, so the state lives in a weak-keyed side table
-- (`nodes`): an array that requires grad maps to a node; a leaf's node holds its
-- accumulated .grad, an op result's node holds its inputs and a backward closure.
-- The differentiable ops (gpu.f, x:f and the operators) are wrapped the first time an
-- array asks for gradients, so a program that never does pays nothing; afterwards a
-- wrapped op costs one table lookup per array argument when no input requires grad.
--
-- Rules: gradients broadcast back to each input's shape (summed over broadcast axes) and
-- are cast to its dtype and device; a leaf's .grad accumulates over backward calls
-- until zero_grad (nn/optim) or x.grad is reset; the graph is freed by backward unless
-- {retain_graph = true}. In-place ops (add_, mul_, x[k] = v ...) are not recorded.

local gpu = require "gpu"

-- One tape per gpu module: a second require after package.loaded was reset (busted
-- insulates each spec file) returns the instance whose wrappers the ops already carry
-- and that a cached gpu.nn records on.
do
  local prev = rawget(gpu, "autograd")
  if prev ~= nil then return prev end
end

local M = {}
local methods = gpu.methods
local meta = getmetatable(gpu.zeros(1, { device = "cpu" }))

local nodes = setmetatable({}, { __mode = "k" })   -- array -> node
local enabled = true                               -- false inside no_grad
local installed = false

local raw = {}                 -- the unwrapped functions, by name
local raw_index = meta.__index

local floating = { float32 = true, float64 = true, float16 = true, bfloat16 = true }

-- ---- the tape --------------------------------------------------------------------------

local function tracked(x) return nodes[x] ~= nil end

-- record(out, inputs, backward): out gets a node; backward(g) returns one gradient per
-- input (nil where none flows). Inputs that are not arrays or not tracked are skipped.
local function record(out, inputs, backward)
  local n = { inputs = inputs, backward = backward, n = #inputs }
  nodes[out] = n
  return out
end

-- Any tracked array among the first k arguments (a quick test, done once per call)?
local function any_tracked(a, b, c)
  return enabled and (nodes[a] ~= nil or nodes[b] ~= nil or (c ~= nil and nodes[c] ~= nil))
end

-- Sums g down to 'shape' (undoing broadcasting).
local function unbroadcast(g, shape)
  local gs = g.shape
  local gn, xn = #gs, #shape
  local same = gn == xn
  if same then
    for i = 1, gn do if gs[i] ~= shape[i] then same = false break end end
  end
  if same then return g end
  local axes = {}
  local lead = gn - xn
  for i = 1, lead do axes[#axes + 1] = i end
  for i = 1, xn do
    if shape[i] == 1 and gs[lead + i] ~= 1 then axes[#axes + 1] = lead + i end
  end
  if #axes > 0 then g = raw.sum(g, axes) end
  return raw.reshape(g, shape)
end

local function fit_to(g, x)
  if type(x) ~= "userdata" then return g end
  g = unbroadcast(g, x.shape)
  if g.dtype ~= x.dtype then g = raw.astype(g, x.dtype) end
  if g.device ~= x.device then g = raw.to(g, x.device) end
  return g
end

-- Topological order (inputs before outputs) of the arrays reachable from 'root':
-- an iterative post-order DFS; an array is placed once all its inputs are.
local function topo(root)
  local order, state = {}, {}     -- state: 1 expanded, 2 placed
  local stack = { root }
  while #stack > 0 do
    local x = stack[#stack]
    local st = state[x]
    if st == 2 then
      stack[#stack] = nil
    elseif st == 1 then
      state[x] = 2
      stack[#stack] = nil
      order[#order + 1] = x
    else
      state[x] = 1
      local n = nodes[x]
      if n and n.inputs then
        for i = 1, n.n do
          local y = n.inputs[i]
          if type(y) == "userdata" and nodes[y] and state[y] == nil then stack[#stack + 1] = y end
        end
      end
    end
  end
  return order
end

-- x:backward([grad] [, {retain_graph = true}])
local function backward(root, grad, opts)
  if type(grad) == "table" and opts == nil then grad, opts = nil, grad end
  local rn = nodes[root]
  if rn == nil then
    error("backward: the array does not require grad (call requires_grad() on an input first)", 2)
  end
  if grad == nil then
    if root.size ~= 1 then
      error(("backward: a gradient is implicit only for a one-element output; got shape (%s) (pass grad)")
        :format(table.concat(root.shape, ",")), 2)
    end
    grad = gpu.ones_like(root)
  elseif type(grad) ~= "userdata" then
    error("backward: grad must be a gpu.array, got " .. type(grad), 2)
  end
  local retain = opts and opts.retain_graph
  local order = topo(root)
  local grads = { [root] = grad }
  local was = enabled
  enabled = false
  local ok, err = pcall(function()
    for i = #order, 1, -1 do
      local x = order[i]
      local n = nodes[x]
      local g = grads[x]
      grads[x] = nil
      if g ~= nil and n ~= nil then
        if n.inputs == nil then                   -- a leaf: accumulate into .grad
          if n.grad == nil then n.grad = raw.copy(fit_to(g, x))
          else n.grad = n.grad + fit_to(g, x) end
        else
          if n.freed then
            error("backward: the graph was freed by an earlier backward (pass {retain_graph = true} to keep it)")
          end
          if n.retain then n.grad = n.grad and n.grad + g or raw.copy(g) end
          local gs = table.pack(n.backward(g))
          for k = 1, n.n do
            local y, gy = n.inputs[k], gs[k]
            if gy ~= nil and type(y) == "userdata" and nodes[y] then
              gy = fit_to(gy, y)
              local old = grads[y]
              grads[y] = old and old + gy or gy
            end
          end
          if not retain then n.freed = true; n.backward = nil end
        end
      end
    end
  end)
  enabled = was
  if not ok then error(err, 0) end
end

-- ---- public functions --------------------------------------------------------------------

function M.is_enabled() return enabled end

-- gpu.no_grad(fn, ...): runs fn with recording off and returns its results.
function M.no_grad(fn, ...)
  if type(fn) ~= "function" then error("no_grad: a function expected, got " .. type(fn), 2) end
  local was = enabled
  enabled = false
  local res = table.pack(pcall(fn, ...))
  enabled = was
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function M.enable_grad(fn, ...)
  local was = enabled
  enabled = true
  local res = table.pack(pcall(fn, ...))
  enabled = was
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function M.set_grad_enabled(on) local was = enabled; enabled = not not on; return was end

-- gpu.autocast's state (set by gpu.amp): the half dtype ("float16"/"bfloat16") that
-- matmul and dot compute in, or nil outside autocast.
local cast_dtype = nil
function M.autocast_dtype() return cast_dtype end
function M.set_autocast_dtype(d) local was = cast_dtype; cast_dtype = d; return was end

-- record(out, inputs, backward): for layers defining their own differentiable ops
-- (nn's fused linear and cross-entropy). Records only when enabled and an input is
-- tracked; returns out.
function M.record(out, inputs, backward)
  if not enabled then return out end
  for i = 1, #inputs do
    if type(inputs[i]) == "userdata" and nodes[inputs[i]] then return record(out, inputs, backward) end
  end
  return out
end

M.tracked = function(x) return enabled and nodes[x] ~= nil end
-- requires_grad(x): x is on the tape (a leaf that requires grad, or an op result that
-- depends on one), whatever the grad mode; what backward rules test inputs with.
M.requires_grad = function(x) return nodes[x] ~= nil end
M.unbroadcast = unbroadcast

local install

-- x:requires_grad([flag]) -> x : makes x a leaf whose .grad backward fills.
function methods.requires_grad(x, flag)
  if type(x) ~= "userdata" then error("requires_grad: a gpu.array expected, got " .. type(x), 2) end
  if flag == false then
    local n = nodes[x]
    if n and n.inputs then error("requires_grad: only a leaf can stop requiring grad (use detach())", 2) end
    nodes[x] = nil
    return x
  end
  if not floating[x.dtype] then
    error(("requires_grad: only floating-point arrays can require gradients, got %s"):format(x.dtype), 2)
  end
  if not installed then install() end
  if nodes[x] == nil then nodes[x] = { grad = nil } end
  return x
end
methods.requires_grad_ = methods.requires_grad

-- x:detach(): a view of x that records nothing.
local raw_view = methods.view
function methods.detach(x)
  return raw_view(x, x.shape)
end

function methods.backward(x, grad, opts) return backward(x, grad, opts) end

-- x:is_leaf(), x:grad_fn() (true when x is an op result), x:retain_grad()
function methods.is_leaf(x) local n = nodes[x]; return n == nil or n.inputs == nil end
function methods.retain_grad(x)
  local n = nodes[x]
  if n and n.inputs then n.retain = true end
  return x
end

-- x:zero_grad() / x:set_grad(g): reset or replace the accumulated gradient of a leaf.
function methods.set_grad(x, g)
  local n = nodes[x]
  if n == nil then error("set_grad: the array does not require grad", 2) end
  n.grad = g
  return x
end

function M.grad(x) local n = nodes[x]; return n and n.grad end

gpu.no_grad = M.no_grad
gpu.enable_grad = M.enable_grad

-- ---- gradient rules -----------------------------------------------------------------------

local function zeros_like(x) return gpu.zeros(x.shape, { dtype = x.dtype, device = x.device }) end

local is_array = require("gpu.options").is_array      -- the one is_array of the Lua parts

-- The reduced axes (0-based flags) of an axis argument, and whether opts say keepdims.
local function reduce_args(x, axis, opts)
  if type(axis) == "table" then
    local k = next(axis)
    if type(k) == "string" then opts, axis = axis, nil end
  end
  local nd = x.ndim
  local red = {}
  local all = axis == nil
  if type(axis) == "number" then axis = { axis } end
  if all then for i = 1, nd do red[i] = true end
  else
    for _, a in ipairs(axis) do
      if a < 0 then a = nd + a + 1 end
      red[a] = true
    end
  end
  return red, opts and opts.keepdims, (not all) and axis or nil, opts
end

-- g of a reduction back to x's shape (as a broadcastable view): re-inserts the axes.
local function unreduce(g, x, red, keepdims)
  local shape = x.shape
  if not keepdims then
    local s = {}
    for i = 1, #shape do s[i] = red[i] and 1 or shape[i] end
    g = raw.reshape(g, s)
  end
  return g
end

local function count(x, red)
  local c = 1
  local shape = x.shape
  for i = 1, #shape do if red[i] then c = c * shape[i] end end
  return c
end

local SQRT_2PI_INV = 1 / math.sqrt(2 * math.pi)

local unary = {
  neg = function(g) return -g end,
  negative = function(g) return -g end,
  exp = function(g, x, y) return g * y end,
  expm1 = function(g, x, y) return g * (y + 1) end,
  log = function(g, x) return g / x end,
  log1p = function(g, x) return g / (x + 1) end,
  log2 = function(g, x) return g / (x * math.log(2)) end,
  log10 = function(g, x) return g / (x * math.log(10)) end,
  sqrt = function(g, x, y) return g * 0.5 / y end,
  rsqrt = function(g, x, y) return g * -0.5 * y * y * y end,
  square = function(g, x) return g * x * 2 end,
  reciprocal = function(g, x, y) return -g * y * y end,
  abs = function(g, x) return g * raw.sign(x) end,
  tanh = function(g, x, y) return g * (1 - y * y) end,
  sigmoid = function(g, x, y) return g * y * (1 - y) end,
  relu = function(g, x) return raw.where(raw.gt(x, 0), g, 0) end,
  softplus = function(g, x) return g * raw.sigmoid(x) end,
  gelu = function(g, x)
    local cdf = (raw.erf(x * (1 / math.sqrt(2))) + 1) * 0.5
    return g * (cdf + x * raw.exp(x * x * -0.5) * SQRT_2PI_INV)
  end,
  erf = function(g, x) return g * raw.exp(-(x * x)) * (2 / math.sqrt(math.pi)) end,
  sin = function(g, x) return g * raw.cos(x) end,
  cos = function(g, x) return -g * raw.sin(x) end,
  tan = function(g, x, y) return g * (y * y + 1) end,
  sinh = function(g, x) return g * raw.cosh(x) end,
  cosh = function(g, x) return g * raw.sinh(x) end,
  contiguous = function(g) return g end,
  copy = function(g) return g end,
  clone = function(g) return g end,
  astype = function(g) return g end,           -- fit_to casts back
  to = function(g) return g end,               -- fit_to moves back
  cpu = function(g) return g end,
  cuda = function(g) return g end,
  expand = function(g) return g end,           -- fit_to sums the broadcast axes
  reshape = function(g, x) return raw.reshape(g, x.shape) end,
  view = function(g, x) return raw.reshape(g, x.shape) end,
  flatten = function(g, x) return raw.reshape(g, x.shape) end,
  squeeze = function(g, x) return raw.reshape(g, x.shape) end,
  unsqueeze = function(g, x) return raw.reshape(g, x.shape) end,
  transpose = function(g, x, y, a, b)
    if a == nil then return raw.transpose(g) end
    if type(a) == "table" then
      local inv = {}
      for i, p in ipairs(a) do
        if p < 0 then p = x.ndim + p + 1 end
        inv[p] = i
      end
      return raw.transpose(g, inv)
    end
    return raw.transpose(g, a, b)
  end,
  permute = function(g, x, y, p, ...)
    if type(p) ~= "table" then p = { p, ... } end
    local inv = {}
    for i, q in ipairs(p) do
      if q < 0 then q = x.ndim + q + 1 end
      inv[q] = i
    end
    return raw.permute(g, inv)
  end,
  flip = function(g, x, y, axis) return raw.flip(g, axis) end,
  sum = function(g, x, y, axis, opts)
    local red, keep = reduce_args(x, axis, opts)
    return raw.expand(unreduce(g, x, red, keep), x.shape)
  end,
  mean = function(g, x, y, axis, opts)
    local red, keep = reduce_args(x, axis, opts)
    return raw.expand(unreduce(g, x, red, keep) * (1 / count(x, red)), x.shape)
  end,
  logsumexp = function(g, x, y, axis, opts)
    local red, keep = reduce_args(x, axis, opts)
    return unreduce(g, x, red, keep) * raw.exp(x - unreduce(y, x, red, keep))
  end,
  max = function(g, x, y, axis, opts)
    local red, keep, ax = reduce_args(x, axis, opts)
    local mask = raw.astype(raw.eq(x, unreduce(y, x, red, keep)), x.dtype)
    local ties = raw.sum(mask, ax, { keepdims = true })
    return unreduce(g, x, red, keep) * mask / ties
  end,
  var = function(g, x, y, axis, opts)
    local red, keep, ax, o = reduce_args(x, axis, opts)
    local ddof = o and o.ddof or 0
    local mu = raw.mean(x, ax, { keepdims = true })
    return unreduce(g, x, red, keep) * (x - mu) * (2 / (count(x, red) - ddof))
  end,
  std = function(g, x, y, axis, opts)
    local red, keep, ax, o = reduce_args(x, axis, opts)
    local ddof = o and o.ddof or 0
    local mu = raw.mean(x, ax, { keepdims = true })
    return unreduce(g, x, red, keep) * (x - mu) / (unreduce(y, x, red, keep) * (count(x, red) - ddof))
  end,
  take = function(g, x, y, idx, axis)
    local z
    if axis == nil then
      z = gpu.zeros(x.size, { dtype = x.dtype, device = x.device })
      raw.index_put_(z, 1, raw.reshape(idx, idx.size), raw.reshape(g, g.size), { accumulate = true })
      return raw.reshape(z, x.shape)
    end
    if axis < 0 then axis = x.ndim + axis + 1 end
    z = zeros_like(x)
    local s = {}
    local xs = x.shape
    for i = 1, axis - 1 do s[#s + 1] = xs[i] end
    s[#s + 1] = idx.size
    for i = axis + 1, #xs do s[#s + 1] = xs[i] end
    raw.index_put_(z, axis, raw.reshape(idx, idx.size), raw.reshape(g, s), { accumulate = true })
    return z
  end,
  masked_select = function(g, x, y, mask)
    local z = zeros_like(x)
    meta.__newindex(z, mask, g)
    return z
  end,
}
unary.min = unary.max
unary.index = function(g, x, y, axis, idx) return unary.take(g, x, y, idx, axis) end

-- Binary ops: return (ga, gb); a or b may be a Lua number.
local binary = {
  add = function(g) return g, g end,
  sub = function(g) return g, -g end,
  mul = function(g, a, b) return g * b, g * a end,
  div = function(g, a, b, y)
    return g / b, is_array(b) and -g * y / b or nil
  end,
  pow = function(g, a, b, y)
    local ga, gb
    if is_array(a) and nodes[a] then
      if is_array(b) then ga = g * b * raw.pow(a, b - 1)
      else ga = g * b * raw.pow(a, b - 1) end
    end
    if is_array(b) and nodes[b] then
      local la = is_array(a) and raw.log(a) or math.log(a)
      gb = g * y * la
    end
    return ga, gb
  end,
  maximum = function(g, a, b)
    local m = raw.ge(a, b)
    return raw.where(m, g, 0), raw.where(m, 0, g)
  end,
  minimum = function(g, a, b)
    local m = raw.le(a, b)
    return raw.where(m, g, 0), raw.where(m, 0, g)
  end,
}
binary.subtract, binary.multiply, binary.divide, binary.true_divide, binary.power =
  binary.sub, binary.mul, binary.div, binary.div, binary.pow

-- matmul with NumPy semantics: promote 1-D operands, then ga = g b^T, gb = a^T g.
local function matmul_grads(g, a, b)
  local an, bn = a.ndim, b.ndim
  if an == 1 and bn == 1 then return g * b, g * a end
  local a2 = an == 1 and raw.reshape(a, 1, a.shape[1]) or a
  local b2 = bn == 1 and raw.reshape(b, b.shape[1], 1) or b
  local g2 = g
  if an == 1 then g2 = raw.unsqueeze(g2, -2) end
  if bn == 1 then g2 = raw.unsqueeze(g2, -1) end
  local ga, gb
  if nodes[a] then
    ga = raw.matmul(g2, raw.transpose(b2, -1, -2))
    ga = unbroadcast(ga, a2.shape)
    if an == 1 then ga = raw.reshape(ga, a.shape) end
  end
  if nodes[b] then
    gb = raw.matmul(raw.transpose(a2, -1, -2), g2)
    gb = unbroadcast(gb, b2.shape)
    if bn == 1 then gb = raw.reshape(gb, b.shape) end
  end
  return ga, gb
end

-- ---- wrapping ----------------------------------------------------------------------------

-- The wrapped C functions are called through pcall so that their errors read as if the
-- user had called them directly: lauxlib names a function after its call site and
-- places the error at its caller, both of which a wrapper would change. call(f, ...)
-- returns f's one result, or re-raises its error under the wrapper's name (method
-- calls number arguments from the receiver, as luaL_argerror does) at the user's line.
local function rewrite(msg, info, opname)
  if type(msg) ~= "string" then return msg end
  local name = info and info.name or opname
  local n, rest = msg:match("^bad argument #(%d+) to '[^']*' (%(.*)$")
  if n then
    n = tonumber(n)
    if info and info.namewhat == "method" then
      n = n - 1
      if n == 0 then return ("calling '%s' on bad self %s"):format(name, rest) end
    end
    return ("bad argument #%d to '%s' %s"):format(n, name, rest)
  end
  local what = msg:match("^[%w_.?]+: (.*)$")
  if what then return name .. ": " .. what end
  return msg
end

local opnames = setmetatable({}, { __mode = "k" })   -- raw function -> its name

local function call(f, ...)
  local ok, y = pcall(f, ...)
  if ok then return y end
  error(rewrite(y, debug.getinfo(2, "n"), opnames[f] or "?"), 3)
end


local function wrap_unary(name, f, rule)
  return function(...)
    local x = ...
    local y = call(f, ...)
    if enabled and nodes[x] ~= nil and type(y) == "userdata" and not rawequal(x, y) then
      local args = table.pack(select(2, ...))
      record(y, { x }, function(g) return rule(g, x, y, table.unpack(args, 1, args.n)) end)
    end
    return y
  end
end

local function wrap_binary(f, rule)
  return function(...)
    local a, b = ...
    local y = call(f, ...)
    if enabled and (nodes[a] ~= nil or nodes[b] ~= nil) then
      record(y, { a, b }, function(g) return rule(g, a, b, y) end)
    end
    return y
  end
end

local wrapped = {}   -- name -> wrapper

local function set_both(name, w)
  if rawget(gpu, name) ~= nil then gpu[name] = w end
  if rawget(methods, name) ~= nil then methods[name] = w end
  wrapped[name] = w
end

local function grab(name)
  local f = rawget(methods, name) or rawget(gpu, name)
  if f and opnames[f] == nil then opnames[f] = name end
  return f
end

install = function()
  if installed then return end
  installed = true
  -- raw (unwrapped) functions used by the rules
  for _, n in ipairs { "sum", "mean", "reshape", "astype", "to", "copy", "transpose", "permute", "expand",
                       "unsqueeze", "matmul", "where", "gt", "ge", "le", "eq", "sign", "sigmoid", "erf",
                       "exp", "log", "pow", "cos", "sin", "cosh", "sinh", "flip", "index_put_", "split",
                       "squeeze" } do
    raw[n] = grab(n)
  end

  for name, rule in pairs(unary) do
    local f = grab(name)
    if f then set_both(name, wrap_unary(name, f, rule)) end
  end
  for name, rule in pairs(binary) do
    local f = grab(name)
    if f then set_both(name, wrap_binary(f, rule)) end
  end

  -- operators
  local ops = { __add = "add", __sub = "sub", __mul = "mul", __div = "div", __pow = "pow" }
  for mm, name in pairs(ops) do
    local f = meta[mm]
    if f then opnames[f] = opnames[f] or name end
    if f then meta[mm] = wrap_binary(f, binary[name]) end
  end
  local unm = meta.__unm
  if unm then
    opnames[unm] = opnames[unm] or "unm"
    meta.__unm = function(...)
      local x = ...
      local y = call(unm, ...)
      if enabled and nodes[x] ~= nil then record(y, { x }, function(g) return -g end) end
      return y
    end
  end

  -- Under gpu.autocast: matmul/dot cast their float32/float64 operands to the half dtype
  -- (recorded, so the gradient is cast back to the float32 master weights), run in half
  -- precision, and return float32 (the cast back is recorded too).
  local wide = { float32 = true, float64 = true }
  local function castable(a, b)
    return (type(a) == "userdata" and wide[a.dtype]) or (type(b) == "userdata" and wide[b.dtype])
  end
  local function down(x, d)
    if type(x) == "userdata" and wide[x.dtype] then return wrapped.astype(x, d) end
    return x
  end
  local function up(y, d)
    if type(y) == "userdata" and y.dtype == d then return wrapped.astype(y, "float32") end
    return y
  end

  -- matmul, dot, outer
  local mm = grab("matmul")
  local function matmul(...)
    local a, b = ...
    if cast_dtype ~= nil and castable(a, b) then
      local d = cast_dtype
      return up(matmul(down(a, d), down(b, d), select(3, ...)), d)
    end
    local y = call(mm, ...)
    if enabled and (nodes[a] ~= nil or nodes[b] ~= nil) then
      record(y, { a, b }, function(g) return matmul_grads(g, a, b) end)
    end
    return y
  end
  set_both("matmul", matmul)
  local dot_raw = grab("dot")
  if dot_raw then
    local function dot(...)
      local a, b = ...
      if cast_dtype ~= nil and castable(a, b) then
        local d = cast_dtype
        return up(dot(down(a, d), down(b, d), select(3, ...)), d)
      end
      local y = call(dot_raw, ...)
      if enabled and (nodes[a] ~= nil or nodes[b] ~= nil) then
        record(y, { a, b }, function(g) return matmul_grads(g, a, b) end)
      end
      return y
    end
    set_both("dot", dot)
  end
  local outer = grab("outer")
  if outer then
    set_both("outer", function(...)
      local a, b = ...
      local y = call(outer, ...)
      if enabled and (nodes[a] ~= nil or nodes[b] ~= nil) then
        record(y, { a, b }, function(g)
          return raw.matmul(g, raw.reshape(b, b.size)), raw.matmul(raw.transpose(g), raw.reshape(a, a.size))
        end)
      end
      return y
    end)
  end

  -- where(cond, a, b) and clip(x, lo, hi)
  local where = grab("where")
  set_both("where", function(...)
    local c, a, b = ...
    local y = call(where, ...)
    if enabled and (nodes[a] ~= nil or nodes[b] ~= nil) then
      record(y, { c, a, b }, function(g) return nil, where(c, g, 0), where(c, 0, g) end)
    end
    return y
  end)
  local clip = grab("clip")
  set_both("clip", function(...)
    local x, lo, hi = ...
    local y = call(clip, ...)
    if enabled and (nodes[x] ~= nil or nodes[lo] ~= nil or nodes[hi] ~= nil) then
      record(y, { x, lo, hi }, function(g)
        local inside = g
        local glo, ghi
        if lo ~= nil then
          local below = raw.gt(lo, x)
          inside = where(below, 0, inside)
          if is_array(lo) then glo = where(below, g, 0) end
        end
        if hi ~= nil then
          local above = raw.gt(x, hi)
          inside = where(above, 0, inside)
          if is_array(hi) then ghi = where(above, g, 0) end
        end
        return inside, glo, ghi
      end)
    end
    return y
  end)

  -- concat / stack: the gradient splits along the axis
  local function join(f, stacking)
    return function(...)
      local list, axis = ...
      local y = call(f, ...)
      if enabled then
        local any = false
        for i = 1, #list do if nodes[list[i]] then any = true break end end
        if any then
          local xs = { table.unpack(list) }
          record(y, xs, function(g)
            local ax = axis or 1
            if ax < 0 then ax = g.ndim + ax + 1 end
            local sizes = {}
            for i = 1, #xs do sizes[i] = stacking and 1 or xs[i].shape[ax] end
            local parts = raw.split(g, sizes, ax)
            if stacking then
              for i = 1, #parts do parts[i] = raw.reshape(parts[i], xs[i].shape) end
            end
            return table.unpack(parts, 1, #xs)
          end)
        end
      end
      return y
    end
  end
  for _, n in ipairs { "concat", "concatenate" } do
    local f = grab(n)
    if f then set_both(n, join(f, false)) end
  end
  set_both("stack", join(grab("stack"), true))

  -- split: each piece's gradient lands in its slice of a zero array
  local split = grab("split")
  set_both("split", function(...)
    local x, parts, axis = ...
    local ys = call(split, ...)
    if enabled and nodes[x] ~= nil then
      local ax = axis or 1
      if ax < 0 then ax = x.ndim + ax + 1 end
      local start = 1
      for i = 1, #ys do
        local len = ys[i].shape[ax]
        local key = {}
        for d = 1, x.ndim do key[d] = ":" end
        key[ax] = { start, start + len - 1 }
        start = start + len
        record(ys[i], { x }, function(g)
          local z = zeros_like(x)
          meta.__newindex(z, key, g)
          return z
        end)
      end
    end
    return ys
  end)

  -- x.grad, x.T and x[key] (slicing, integer-array and mask indexing)
  local newindex = meta.__newindex
  opnames[raw_index] = "index"
  meta.__index = function(x, k)
    if type(k) == "string" then
      if k == "grad" then
        local n = nodes[x]
        return n and n.grad
      end
      local v = call(raw_index, x, k)
      if k == "T" and enabled and nodes[x] ~= nil then
        record(v, { x }, function(g) return raw.transpose(g) end)
      end
      return v
    end
    local y = call(raw_index, x, k)
    if enabled and nodes[x] ~= nil and type(y) == "userdata" then
      record(y, { x }, function(g)
        local z = zeros_like(x)
        if type(k) == "userdata" and k.dtype ~= "bool" then
          local s = { k.size }
          local xs = x.shape
          for d = 2, #xs do s[d] = xs[d] end
          raw.index_put_(z, 1, raw.reshape(k, k.size), raw.reshape(g, s), { accumulate = true })
        else
          newindex(z, k, g)
        end
        return z
      end)
    end
    return y
  end
end

M.install = install

-- gradcheck(fn, inputs [, {eps = 1e-6, tol = 1e-5}]): compares the gradients backward
-- gives for fn(inputs...) (weighted by fixed random numbers, so every output element
-- counts) with central differences. Inputs should be float64. Returns true, or false
-- and a message naming the input and element.
function M.gradcheck(fn, inputs, opts)
  opts = opts or {}
  local eps, tol = opts.eps or 1e-6, opts.tol or 1e-5
  for _, x in ipairs(inputs) do if type(x) == "userdata" then x:requires_grad(); x:set_grad(nil) end end
  local out = fn(table.unpack(inputs))
  local w = gpu.random.Generator(7):uniform(0.5, 1.5, out.shape, { dtype = out.dtype, device = out.device })
  local function value()
    return M.no_grad(function() return (fn(table.unpack(inputs)) * w):sum():item() end)
  end
  ;(out * w):sum():backward()
  for k, x in ipairs(inputs) do
    if type(x) == "userdata" and nodes[x] then
      local g = nodes[x].grad
      if g == nil then return false, ("input %d: no gradient"):format(k) end
      local flat = raw_view(x, x.size)
      local gf = g:reshape(g.size)
      for i = 1, x.size do
        local v = flat[i]
        flat[i] = v + eps
        local fp = value()
        flat[i] = v - eps
        local fm = value()
        flat[i] = v
        local num = (fp - fm) / (2 * eps)
        local ana = gf[i]
        if math.abs(num - ana) > tol * (1 + math.abs(num)) then
          return false, ("input %d element %d: backward gives %.10g, finite differences %.10g"):format(k, i, ana, num)
        end
      end
    end
  end
  return true
end
M.nodes = nodes      -- for tests and nn internals

rawset(gpu, "autograd", M)
return M

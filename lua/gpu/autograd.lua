-- gpu.autograd: reverse-mode automatic differentiation over gpu arrays.
--
--   local w = gpu.randn(3, 2):requires_grad()
--   local loss = (x:matmul(w)):relu():sum()
--   loss:backward()                          -- fills w.grad
--   gpu.no_grad(function() w:sub_(w.grad * 0.1) end)
--   local gx = gpu.autograd.grad(y, x, {create_graph = true})   -- torch.autograd.grad
--
-- Recording happens in the C dispatch (src/lua/lgrad.c): an op with a tracked input and
-- grad mode on stores a node in its result's user value, naming its rule in
-- gpu.autograd.rules (lua/gpu/autograd/rules.lua). This module is the engine that walks
-- those nodes backwards (backward, grad, hooks), the grad-mode switches (no_grad,
-- enable_grad, set_grad_enabled: per coroutine), custom differentiable functions
-- (record) and the central-difference checker (gradcheck).
--
-- Rules: gradients are summed back to each input's shape and cast to its dtype and
-- device; a leaf's .grad accumulates over backward calls until zero_grad (nn/optim) or
-- x.grad = nil; the graph is freed by backward unless {retain_graph = true}; with
-- {create_graph = true} the backward pass is recorded too (gradients of gradients). An
-- array that a node saved and that was then changed in place makes backward raise.

local gpu = require "gpu"
local options = require "gpu.options"

-- One engine per gpu module: a second require after package.loaded was reset (busted
-- insulates each spec file) returns the instance the C side already calls.
do
  local prev = rawget(gpu, "autograd")
  if prev ~= nil then return prev end
end

local G = gpu._grad
local rules = require "gpu.autograd.rules"
local is_array = options.is_array
local raise, argerror = options.raise, options.argerror

local M = { rules = rules }

local node_of, set_node, version = G.node, G.set_node, G.version
local function tracked(x) return is_array(x) and node_of(x) ~= nil end

-- ---- grad mode (per coroutine) ---------------------------------------------------------------

-- Runs fn(...) with grad mode 'on' for the running coroutine and restores the mode after,
-- also when fn raises. (A coroutine abandoned inside takes its own mode with it.)
local function with_mode(on, fname, fn, ...)
  if type(fn) ~= "function" then argerror(fname, 1, "a function expected, got %s", type(fn)) end
  local was = G.set_grad_enabled(on)
  local res = table.pack(pcall(fn, ...))
  G.set_grad_enabled(was)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function M.no_grad(fn, ...) return with_mode(false, "no_grad", fn, ...) end

-- inference_mode([mode = true,] fn, ...): torch.inference_mode: fn(...) with grad off (mode
-- false: as it is, PyTorch's inference_mode(False)); is_inference_mode_enabled() says
-- whether a call runs inside one. Arrays made inside are ordinary arrays (PyTorch marks
-- them inference tensors and refuses them in autograd later).
local inference_depth = 0
local function inference(argn, mode, fn, ...)
  if type(fn) ~= "function" then
    argerror("inference_mode", argn, "a function expected, got %s", options.type_name(fn))
  end
  if not mode then return fn(...) end
  inference_depth = inference_depth + 1
  local res = table.pack(pcall(with_mode, false, "inference_mode", fn, ...))
  inference_depth = inference_depth - 1
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end
function M.inference_mode(mode, ...)
  if type(mode) == "boolean" then return inference(2, mode, ...) end
  return inference(1, true, mode, ...)
end
function M.is_inference_mode_enabled() return inference_depth > 0 end
function M.enable_grad(fn, ...) return with_mode(true, "enable_grad", fn, ...) end
function M.set_grad_enabled(on) return G.set_grad_enabled(on) end
function M.is_grad_enabled() return G.grad_enabled() end
M.is_enabled = M.is_grad_enabled

-- gpu.autocast's state (gpu.amp sets it): the half dtype matmul-like ops compute in
function M.autocast_dtype() return G.autocast_dtype() end
function M.set_autocast_dtype(d) return G.set_autocast(d or nil) end

-- requires_grad(x): x is on the tape, whatever the grad mode (what backward rules ask);
-- tracked(x): and grad mode is on, so an op on x would be recorded.
function M.requires_grad(x) return tracked(x) end
function M.tracked(x) return G.grad_enabled() and tracked(x) end
M.unbroadcast = rules._unbroadcast

-- record(out, inputs, backward) -> out: a custom differentiable function (as
-- torch.autograd.Function): when grad mode is on and an input is tracked, out gets a node
-- whose backward(g) returns one gradient per input (nil where none). Compute out with
-- grad off (gpu.no_grad) so its own ops are not recorded as well; out must be a new
-- array (a view of an input returned as is), as a node of its own input is a cycle.
local HEAD, op_node, node_args = rules._HEAD, rules._op_node, rules._node_args

function M.record(out, inputs, backward)
  if not is_array(out) then argerror("autograd.record", 1, "a gpu.array expected, got %s", type(out)) end
  if type(inputs) ~= "table" or is_array(inputs) then
    argerror("autograd.record", 2, "a list of inputs expected, got %s", is_array(inputs) and "a gpu.array" or type(inputs))
  end
  if type(backward) ~= "function" then argerror("autograd.record", 3, "a function expected, got %s", type(backward)) end
  for i = 1, #inputs do
    if rawequal(inputs[i], out) then       -- its node would be its own input: a cycle backward cannot walk
      argerror("autograd.record", 1, "the output is input #%d; record a new array (x:view(x.shape) or x:copy())", i)
    end
  end
  if not G.grad_enabled() then return out end
  for i = 1, #inputs do
    if tracked(inputs[i]) then
      set_node(out, op_node(rules._custom_rule(backward), out, table.unpack(inputs, 1, #inputs)))
      return out
    end
  end
  return out
end

-- record_op(name, results, ...) -> results...: what the dispatch does for op 'name' called
-- with the arguments ..., for a stand-in written in Lua (a test double of a library
-- kernel): the first result gets the node of rule 'name', the others are node.extra.
function M.record_op(name, results, ...)
  local rule = rules[name]
  if type(rule) ~= "table" then raise("autograd.record_op: no rule '%s'", tostring(name)) end
  local n = select("#", ...)
  local args = { ... }
  local any = false
  for i = 1, n do if tracked(args[i]) then any = true end end
  if any and G.grad_enabled() and is_array(results[1]) then
    local node = op_node(rule, results[1], ...)
    if #results > 1 then node.extra = { table.unpack(results, 2) } end
    set_node(results[1], node)
  end
  return table.unpack(results)
end

-- ---- in-place ops -----------------------------------------------------------------------------
--
-- As PyTorch records them: x:op_(...) on a tracked x (or with a tracked operand), grad on,
-- gives x a new node whose input #1 is x before the op (its previous node, node.prev);
-- edges recorded before reach that one (resolve). A leaf that requires grad is refused, as
-- is a view of a tracked array (PyTorch rebases the view's history; here the in-place op
-- is refused, before anything is written), and a view used after the array it views was
-- changed makes backward raise (topo).

-- the rules of in-place nodes whose input #1 is x before the op: x's new values do not
-- depend on it (zeros, as PyTorch's), or they are input #2's
local OVERWRITE = { saves = {}, backward = function(g) return gpu.zeros_like(g) end }
local ASSIGN = { saves = {}, backward = function(g) return gpu.zeros_like(g), g end }

-- Whether node (not a leaf) made array v as a view of its input #1 (the same bytes)
local function is_view_node(node, v)
  if node.self then return false end                  -- an in-place op's: its input #1 is v before it
  local a = node[HEAD + node[2] + 1]
  return node[2] >= 1 and is_array(a) and G.same_storage(v, a)
end

local function inplace_checks(fname, x)
  local node = node_of(x)
  if node ~= nil and node.leaf then
    raise("%s: a leaf array that requires grad is used in an in-place op (run it in gpu.no_grad, as an "
      .. "optimizer step does, or change a copy: x:clone())", fname)
  end
  if node ~= nil and is_view_node(node, x) then
    raise("%s: the array is a view of an array that requires grad (x[key], x.T, reshape...), which the in-place op "
      .. "would change behind the tape's back; use the out-of-place form, or clone() the view first", fname)
  end
  return node
end

-- x's values before the op, for a rule that reads them: a copy at x's version, on x's
-- node (the graph goes on from it)
local function snapshot(x, node)
  local c = M.no_grad(function() return x:copy() end)
  G.set_version(c, (version(x)))
  if node ~= nil then set_node(c, node) end
  return c
end

local function saves_first(rule, x, ...)
  local s = rule.saves
  if type(s) == "function" then s = s(op_node(rule, x, x, ...)) end
  if s == nil then return true end
  for _, i in ipairs(s) do if i == 1 then return true end end
  return false
end

-- The dispatch's in-place ops (src/lua/lgrad.c: dispatch_inplace), in two steps around
-- the op itself: inplace_begin(name, x, ...) checks and keeps what the record needs (a
-- token; nil: nothing to record), the op runs, inplace_end(token) records it. The rule is
-- the op's own (rules.relu_) or its out-of-place form's (rules.relu).
local function inplace_begin(name, x, ...)
  if not is_array(x) then return nil end             -- the op's own error follows
  local rule = rules[name]
  if rule == nil then rule = rules[name:sub(1, -2)] end
  if rule == nil then
    raise("%s is not differentiable: an input requires grad (detach it, or call it in gpu.no_grad)", name)
  end
  local node = inplace_checks(name, x)
  local first = x
  -- x's values before the op are kept where this op's rule reads them, or where the node
  -- that made them reads its own result (x:sigmoid_() then x:add_(1))
  if rule and (saves_first(rule, x, ...) or (node ~= nil and node[1].uses_y)) then first = snapshot(x, node) end
  return { rule = rule, node = node, before = version(x), first = first, n = select("#", ...) + 1, x, ... }
end

local function inplace_end(t)
  local x, n, rule = t[1], t.n, t.rule
  local N
  if rule == false then
    N = op_node(OVERWRITE, x, x)
    N[HEAD + 1] = t.before
  else
    local args = { table.unpack(t, 1, n) }
    for i = 1, n do if rawequal(args[i], x) then args[i] = t.first end end
    N = op_node(rule, x, table.unpack(args, 1, n))
    for i = 1, n do if rawequal(args[i], x) then N[HEAD + i] = t.before end end
  end
  N.self, N.prev, N.before = true, t.node, t.before
  set_node(x, N)
end

-- inplace_via(fname, x, compute) -> x: an in-place routine written in Lua, under autograd:
-- compute(x0) gives x's new values (an array that broadcasts to x) from x0 (x, or its
-- snapshot on the tape), recorded as any op; x takes them, and a node whose input they are.
local function inplace_via(fname, x, compute)
  local node = inplace_checks(fname, x)
  local before = version(x)
  local y = compute(node ~= nil and snapshot(x, node) or x)
  M.no_grad(function() x[":"] = y end)
  if node == nil and not tracked(y) then return x end
  local N = tracked(y) and op_node(ASSIGN, x, x, y) or op_node(OVERWRITE, x, x)
  N[HEAD + 1] = before
  N.self, N.prev, N.before = true, node, before
  set_node(x, N)
  return x
end

-- x[key] = v with grad on and x or v on the tape (src/lua/larray.c): x takes a copy with
-- v written at key; x's gradient is zero there, v's what x[key] selects (summed back to v)
local function setindex(x, key, v)
  return inplace_via("index assignment", x, function(x0)
    local keep, out = M.no_grad(function()
      local m = gpu.ones(x.shape, { dtype = "bool", device = x.device })
      m[key] = false
      local o = x0:copy()
      o[key] = v
      return m, o
    end)
    local inputs = { x0 }
    if is_array(v) then inputs[2] = v end
    return M.record(out, inputs, function(g)
      local gv
      if is_array(v) then
        gv = g[key]
        if type(gv) == "number" then gv = gpu.full({}, gv, { dtype = g.dtype, device = g.device }) end
      end
      return gpu.where(keep, g, 0), gv
    end)
  end)
end

-- ---- the engine ------------------------------------------------------------------------------

local function fit_to(g, x)
  g = rules._unbroadcast(g, x.shape)
  if g.dtype ~= x.dtype then g = g:astype(x.dtype) end
  if g.device ~= x.device then g = g:to(x.device) end
  return g
end

-- The node an edge reaches: the node array v had when its storage was at version r. An
-- in-place op recorded on v gave it a newer node (node.before: v's version just before
-- that op, node.prev: the node it replaced), so an edge recorded earlier walks back.
local function resolve(v, r)
  local node = node_of(v)
  while node ~= nil and r ~= nil do
    local before = node.before
    if before == nil or r > before then break end
    node = node.prev
  end
  return node
end

-- The edges of a node: f(target node, array, position, index in a list argument, the
-- array's version when the node was recorded) for each input whose gradient flows back. An in-place op's node (node.self: true) takes its
-- input #1 as the array before the op, which is its previous node.
local function each_edge(node, f)
  local rule, n = node[1], node[2]
  for i = 1, n do
    local v = node[HEAD + n + i]
    if is_array(v) then
      local t
      if i == 1 and node.self then t = node.prev else t = resolve(v, node[HEAD + i]) end
      if t ~= nil then f(t, v, i, nil, node[HEAD + i]) end
    elseif type(v) == "table" and rule and rule.list and i == 1 then
      local vs = v._versions
      for k = 1, #v do
        local e = v[k]
        local t = is_array(e) and resolve(e, vs and vs[k]) or nil
        if t ~= nil then f(t, e, i, k, vs and vs[k]) end
      end
    end
  end
end

local function rule_name(rule)
  if rule.custom then return "a custom function" end
  for k, v in pairs(rules) do if v == rule then return k end end
  return "an op"
end

-- Topological order (inputs before outputs) of the nodes reachable from roots (nodes);
-- arr[node]: an array that node made (the one whose version the node recorded, if an
-- edge reaches it through that one: a snapshot taken for an in-place op)
local function topo(roots, arr)
  local order, state = {}, {}
  local stack = {}
  for i = #roots, 1, -1 do stack[#stack + 1] = roots[i] end
  while #stack > 0 do
    local n = stack[#stack]
    local st = state[n]
    if st == 2 then
      stack[#stack] = nil
    elseif st == 1 then
      state[n] = 2
      stack[#stack] = nil
      order[#order + 1] = n
    else
      state[n] = 1
      if not n.leaf then
        each_edge(n, function(t, v, _, _, r)
          if r ~= nil and not t.leaf and r ~= t[3] and is_view_node(t, v) then
            local _, writer = version(v)
            raise("backward: a view (%s) was used after %s changed the array it views; the gradient through it would "
              .. "be wrong (clone() the view before changing the array, or take the view after)", rule_name(t[1]),
              writer or "an in-place op")
          end
          local a = arr[t]
          if a == nil or (a ~= v and version(v) == t[3]) then arr[t] = v end
          if state[t] == nil then stack[#stack + 1] = t end
        end)
      end
    end
  end
  return order
end


-- An array a node saved has changed since it was recorded: name the op that changed it
-- (the rule's name is looked up only then: it is a walk over the rules table).
local function stale(node, v, recorded)
  local now, writer = version(v)
  if now ~= recorded then
    raise("backward: an array needed for the gradient of %s was modified in place by %s (version %d, saved at %d); "
      .. "copy it before changing it, or record after the change", rule_name(node[1]), writer or "an in-place op",
      now, recorded)
  end
end

local function check_saved(node, y)
  local rule, n = node[1], node[2]
  if rule.custom then return end
  local saves = rule.saves
  if type(saves) == "function" then saves = saves(node) end
  if saves == nil then
    for i = 1, n do
      local v = node[HEAD + n + i]
      if is_array(v) then stale(node, v, node[HEAD + i]) end
    end
  else
    for _, i in ipairs(saves) do
      local v = node[HEAD + n + i]
      if is_array(v) then stale(node, v, node[HEAD + i]) end
    end
  end
  if rule.uses_y then stale(node, y, node[3]) end
end

local function shape_str(x) return "(" .. table.concat(x.shape, ",") .. ")" end

local function run_hooks(node, g)
  local hooks = node.hooks
  if hooks then
    for _, h in ipairs(hooks) do
      local r = h(g)
      if r ~= nil then
        if not is_array(r) then raise("backward: a hook returned %s, expected a gpu.array or nil", type(r)) end
        local gs, rs = g.shape, r.shape
        local same = #gs == #rs
        for d = 1, #gs do same = same and gs[d] == rs[d] end
        if not same then
          raise("backward: a hook returned an array of shape %s for a gradient of shape %s", shape_str(r), shape_str(g))
        end
        g = r
      end
    end
  end
  return g
end

-- Checks what a custom function's backward gave for input #pos (x): nil, or an array
-- that x's shape broadcasts to (the gradient is summed back to it).
local function check_custom_grad(gy, x, pos)
  if gy == nil then return end
  if not is_array(gy) then
    raise("backward: the backward function of autograd.record returned %s for input #%d, expected a gpu.array or nil",
      type(gy), pos)
  end
  local gs, xs = gy.shape, x.shape
  local ok = #gs >= #xs
  for d = 1, #xs do
    local gd = gs[#gs - #xs + d]
    ok = ok and (gd == xs[d] or xs[d] == 1)
  end
  if not ok then
    raise("backward: the backward function of autograd.record returned shape %s for input #%d of shape %s",
      shape_str(gy), pos, shape_str(x))
  end
end

-- Walks back from roots (with their gradients). accumulate: add into the leaves' .grad
-- (backward); capture: the arrays whose total gradient to return (grad()).
-- Anomaly detection (set_detect_anomaly, detect_anomaly): each gradient a rule gives is
-- checked for NaN, and the first is an error naming the rule
local anomaly = false

local function run(roots, grads_in, retain, create, accumulate, capture)
  local arr, rnodes = {}, {}
  for i, r in ipairs(roots) do
    local n = node_of(r)
    rnodes[i] = n
    if arr[n] == nil then arr[n] = r end
  end
  local order = topo(rnodes, arr)
  local grads = {}
  for i, n in ipairs(rnodes) do
    grads[n] = grads[n] and grads[n] + grads_in[i] or grads_in[i]
  end
  local cap = {}                             -- node -> the input array whose gradient grad() returns
  if capture then for x in pairs(capture) do cap[node_of(x)] = x end end
  local captured = {}
  local was = G.set_grad_enabled(create)
  local ok, err = pcall(function()
    for i = #order, 1, -1 do
      local node = order[i]
      local x = arr[node]
      local g = grads[node]
      grads[node] = nil
      if g ~= nil then
        g = run_hooks(node, g)
        if cap[node] then captured[cap[node]] = g end
        if node.leaf then
          if accumulate then
            g = fit_to(g, x)
            node.grad = node.grad and node.grad + g or (create and g or g:copy())
            local post = node.post_hooks
            if post then for _, h in ipairs(post) do h(x) end end
          end
        else
          if node.freed then
            raise("backward: the graph was freed by an earlier backward (pass {retain_graph = true} to keep it)")
          end
          if accumulate and node.retain then node.grad = node.grad and node.grad + g or g:copy() end
          check_saved(node, x)
          local gs = table.pack(node[1].backward(g, node_args(node), x))
          local custom = node[1].custom
          each_edge(node, function(t, y, pos, k)
            local gy = gs[pos]
            if k ~= nil then gy = type(gy) == "table" and gy[k] or nil end
            if custom then check_custom_grad(gy, y, pos) end
            if gy ~= nil and anomaly and is_array(gy) and gy.size > 0 and gy:isnan():any():item() then
              raise("backward: the gradient of %s for its input #%d holds NaN (anomaly detection)", rule_name(node[1]), pos)
            end
            if gy ~= nil then
              gy = fit_to(gy, y)
              local old = grads[t]
              grads[t] = old and old + gy or gy
            end
          end)
          if not retain then node.freed = true end
        end
      end
    end
  end)
  G.set_grad_enabled(was)
  if not ok then error(err, 0) end
  return captured
end

local BACKWARD = options.declare("backward", {
  retain_graph = "boolean", create_graph = "boolean",
}, { example = "local x = gpu.ones(2):requires_grad(); (x * x):sum():backward(nil, %s)" })

local dtypes = gpu._dtypes
local function is_complex(x) return dtypes[x.dtype].kind == "complex" end

local function root_grad(fname, root, grad)
  if grad == nil then
    if is_complex(root) then          -- PyTorch's rule: the loss is real; say which part
      raise("%s: a gradient is implicit only for a real output, got %s (take .real, abs() or pass grad)", fname,
        root.dtype)
    end
    if root.size ~= 1 then
      raise("%s: a gradient is implicit only for a one-element output; got shape (%s) (pass grad)", fname,
        table.concat(root.shape, ","))
    end
    return gpu.ones_like(root)
  end
  if not is_array(grad) then raise("%s: grad must be a gpu.array, got %s", fname, type(grad)) end
  local same = grad.ndim == root.ndim
  for d = 1, root.ndim do same = same and grad.shape[d] == root.shape[d] end
  if not same then
    raise("%s: grad has shape (%s), the output (%s)", fname, table.concat(grad.shape, ","), table.concat(root.shape, ","))
  end
  return grad
end

-- x:backward([grad] [, {retain_graph = false, create_graph = false}])
function M.backward(root, grad, opts)
  if type(grad) == "table" and not is_array(grad) and opts == nil then grad, opts = nil, grad end
  local o = BACKWARD:check(opts, 2)
  if not tracked(root) then
    raise("backward: the array does not require grad (call requires_grad() on an input first)")
  end
  local g = root_grad("backward", root, grad)
  local ok, err = pcall(run, { root }, { g }, o.retain_graph or o.create_graph, o.create_graph or false, true, nil)
  local queued = M._queued
  M._queued = nil
  if not ok then error(err, 0) end
  if queued then for _, fn in ipairs(queued) do fn() end end
end

-- queue_callback(fn): fn() runs once when the backward in progress has filled every .grad
-- (torch's engine callback; DistributedDataParallel waits for its all-reduces there).
function M.queue_callback(fn)
  if type(fn) ~= "function" then argerror("autograd.queue_callback", 1, "a function expected, got %s", type(fn)) end
  M._queued = M._queued or {}
  local q = M._queued
  q[#q + 1] = fn
end

local GRAD = options.declare("autograd.grad", {
  grad_outputs = "array|table", retain_graph = "boolean", create_graph = "boolean", allow_unused = "boolean",
}, { example = "local x = gpu.ones(2):requires_grad(); gpu.autograd.grad((x * x):sum(), x, %s)" })

-- grad(outputs, inputs [, {grad_outputs, retain_graph, create_graph, allow_unused}]):
-- torch.autograd.grad: the gradients of outputs (an array or a list) with respect to
-- inputs (an array or a list), without touching any .grad. An array for an array, a list
-- for a list.
function M.grad(outputs, inputs, opts)
  local o = GRAD:check(opts, 3, "autograd.grad")
  local outs = is_array(outputs) and { outputs } or outputs
  local ins = is_array(inputs) and { inputs } or inputs
  if type(outs) ~= "table" or #outs == 0 then argerror("autograd.grad", 1, "an array or a list of arrays expected") end
  if type(ins) ~= "table" or #ins == 0 then argerror("autograd.grad", 2, "an array or a list of arrays expected") end
  local gos = o.grad_outputs
  if is_array(gos) then gos = { gos } end
  local roots, gs = {}, {}
  for i, y in ipairs(outs) do
    if not tracked(y) then argerror("autograd.grad", 1, "output #%d does not require grad", i) end
    roots[i] = y
    gs[i] = root_grad("autograd.grad", y, gos and gos[i])
  end
  local capture = {}
  for i, x in ipairs(ins) do
    if not tracked(x) then argerror("autograd.grad", 2, "input #%d does not require grad", i) end
    capture[x] = true
  end
  local create = o.create_graph or false
  local got = run(roots, gs, o.retain_graph or create, create, false, capture)
  local res = {}
  for i, x in ipairs(ins) do
    local g = got[x]
    if g == nil then
      if not o.allow_unused then
        raise("autograd.grad: input #%d is not used by the outputs (pass {allow_unused = true} to get nil)", i)
      end
    else
      res[i] = fit_to(g, x)
    end
  end
  if is_array(inputs) then return res[1] end
  return res
end

-- fn appended to the list node[field] (made on first use); the handle whose remove() takes
-- it off
local function add_hook(node, field, fn)
  local hooks = node[field] or {}
  node[field] = hooks
  hooks[#hooks + 1] = fn
  return { remove = function()
    for i, h in ipairs(hooks) do if h == fn then table.remove(hooks, i) return end end
  end }
end

-- register_post_accumulate_grad_hook(x, fn) -> handle: fn(x) runs when a leaf's .grad has
-- been accumulated by backward (torch's Tensor.register_post_accumulate_grad_hook).
function M.register_post_accumulate_grad_hook(x, fn)
  if type(fn) ~= "function" then
    argerror("register_post_accumulate_grad_hook", 1, "a function expected, got %s", type(fn))
  end
  local node = node_of(x)
  if node == nil or not node.leaf then
    raise("register_post_accumulate_grad_hook: the array is not a leaf that requires grad")
  end
  return add_hook(node, "post_hooks", fn)
end

-- x:register_hook(fn) -> handle: fn(grad) runs when x's gradient is computed and may
-- return a replacement; handle:remove() takes it off.
function M.register_hook(x, fn)
  if type(fn) ~= "function" then argerror("register_hook", 1, "a function expected, got %s", type(fn)) end
  local node = node_of(x)
  if node == nil then raise("register_hook: the array does not require grad") end
  return add_hook(node, "hooks", fn)
end

-- ---- checking -------------------------------------------------------------------------------

local GRADCHECK = options.declare("autograd.gradcheck", {
  eps = { type = "number", min = 0, min_open = true }, tol = { type = "number", min = 0 },
}, { example = "gpu.autograd.gradcheck(function(x) return x * x end, {gpu.ones(2, {dtype = 'float64'})}, %s)" })

-- gradcheck(fn, inputs [, {eps = 1e-6, tol = 1e-5}]): compares the gradients backward
-- gives for fn(inputs...) (weighted by fixed random numbers, so every output element
-- counts) with central differences. Inputs should be float64 or complex128. Returns true,
-- or false and a message naming the input and element.
-- Complex arrays are pairs of reals, as torch.autograd.gradcheck takes them: a complex
-- output is weighted through view_as_real (both parts count), and each part of a complex
-- input is stepped on its own, the pair of differences compared with the gradient's real
-- and imaginary parts (dL/dx + i dL/dy, PyTorch's convention).
function M.gradcheck(fn, inputs, opts)
  if type(fn) ~= "function" then argerror("autograd.gradcheck", 1, "a function expected, got %s", type(fn)) end
  if type(inputs) ~= "table" or is_array(inputs) then
    argerror("autograd.gradcheck", 2, "a list of inputs expected, got %s", is_array(inputs) and "a gpu.array" or type(inputs))
  end
  local o = GRADCHECK:check(opts, 3, "autograd.gradcheck")
  local eps, tol = o.eps or 1e-6, o.tol or 1e-5
  for _, x in ipairs(inputs) do
    if is_array(x) then x:requires_grad(); x.grad = nil end
  end
  local out = fn(table.unpack(inputs))
  if not is_array(out) then raise("autograd.gradcheck: the function returned %s, expected a gpu.array", type(out)) end
  -- the real numbers of an array: itself, or its (..., 2) view of (real, imaginary) pairs
  local function reals(y) return is_complex(y) and gpu.view_as_real(y) or y end
  local ro = reals(out)
  local w = gpu.random.Generator(7):uniform(0.5, 1.5, ro.shape, { dtype = ro.dtype, device = ro.device })
  local function value()
    return M.no_grad(function() return (reals(fn(table.unpack(inputs))) * w):sum():item() end)
  end
  ;(ro * w):sum():backward()
  for k, x in ipairs(inputs) do
    if is_array(x) then
      local g = x.grad
      if g == nil then return false, ("input %d: no gradient"):format(k) end
      local cplx = is_complex(x)
      local flat = reals(x:detach():view(x.size))
      local gf = reals(g:reshape(g.size))
      local n = cplx and 2 * x.size or x.size
      flat, gf = flat:view(n), gf:reshape(n)
      local function where(i)
        if not cplx then return ("element %d"):format(i) end
        return ("element %d (%s part)"):format((i + 1) // 2, i % 2 == 1 and "real" or "imaginary")
      end
      for i = 1, n do
        local v = flat[i]
        flat[i] = v + eps
        local fp = value()
        flat[i] = v - eps
        local fm = value()
        flat[i] = v
        local num = (fp - fm) / (2 * eps)
        local ana = gf[i]
        if math.abs(num - ana) > tol * (1 + math.abs(num)) then
          return false, ("input %d %s: backward gives %.10g, finite differences %.10g"):format(k, where(i), ana, num)
        end
      end
    end
  end
  return true
end

-- set_detect_anomaly(on), is_anomaly_enabled(), detect_anomaly(fn, ...): fn(...) with
-- anomaly detection on (restored after, also when fn raises)
function M.set_detect_anomaly(on)
  options.value(on, { type = "boolean" }, "autograd.set_detect_anomaly", 1, "mode")
  anomaly = on
end
function M.is_anomaly_enabled() return anomaly end
function M.detect_anomaly(fn, ...)
  options.value(fn, { type = "callable" }, "autograd.detect_anomaly", 1, "fn")
  local was = anomaly
  anomaly = true
  local res = table.pack(pcall(fn, ...))
  anomaly = was
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- what C calls (src/lua/lgrad.c's push_engine), and the in-place recorder the Lua routines use
M._engine = {
  backward = M.backward, register_hook = M.register_hook, inplace_begin = inplace_begin, inplace_end = inplace_end,
  setindex = setindex, inplace_via = inplace_via,
}
G.register(rules, M._engine)
options.counted("no_grad", M.no_grad)             -- (fn, ...): any number, passed on to fn
options.counted("enable_grad", M.enable_grad)
gpu.no_grad = M.no_grad
gpu.enable_grad = M.enable_grad
options.counted("inference_mode", M.inference_mode)      -- ([mode,] fn, ...): passed on to fn
gpu.inference_mode = M.inference_mode
options.count_all("autograd.", M)
gpu.is_inference_mode_enabled = M.is_inference_mode_enabled
rawset(gpu, "autograd", M)
-- gpu.autograd.functional (lua/gpu/autograd/functional.lua): loaded at first use
setmetatable(M, { __index = function(_, k)
  if k ~= "functional" then return nil end
  local f = require "gpu.autograd.functional"
  rawset(M, "functional", f)
  return f
end })
return M

-- gpu.utils: torch.utils' checkpoint (activation checkpointing): a part of a forward pass
-- run without keeping its intermediates, and run again in the backward pass to get them.
--
--   local y = gpu.utils.checkpoint(function(x) return block2(block1(x)) end, x)
local gpu = require "gpu"
local options = require "gpu.options"
local autograd = require "gpu.autograd"

local raise, is_array, type_name = options.raise, options.is_array, options.type_name

local U = {}

-- checkpoint(fn, ...) -> fn(...): fn runs without recording; its result gets one node whose
-- backward runs fn again (with the random state of the first run, as PyTorch's
-- preserve_rng_state) and back-propagates through that run: into the arguments that
-- require grad and into the parameters fn uses (their .grad, as PyTorch's reentrant
-- checkpoint). fn returns one array. It is not compatible with gpu.autograd.grad for
-- parameters fn closes over (only the arguments' gradients come back there).
function U.checkpoint(fn, ...)
  local fname = "utils.checkpoint"
  options.value(fn, { type = "callable" }, fname, 1, "function")
  local args = table.pack(...)
  local state = gpu.random.get_state()
  local out = autograd.no_grad(fn, ...)
  if not is_array(out) then raise("%s: the function returned %s; it must return one array", fname, type_name(out)) end
  if not autograd.is_grad_enabled() then return out end
  local inputs, where = {}, {}
  for i = 1, args.n do
    if is_array(args[i]) and autograd.requires_grad(args[i]) then inputs[#inputs + 1], where[#inputs + 1] = args[i], i end
  end
  local again = function()
    local now = gpu.random.get_state()
    gpu.random.set_state(state)
    local copy, detached = { n = args.n }, {}
    for i = 1, args.n do copy[i] = args[i] end
    for k, i in ipairs(where) do
      detached[k] = args[i]:detach():requires_grad()
      copy[i] = detached[k]
    end
    local ok, y = pcall(autograd.enable_grad, fn, table.unpack(copy, 1, copy.n))
    gpu.random.set_state(now)
    if not ok then error(y, 0) end
    return y, detached
  end
  -- a node needs an input that is tracked: without tracked arguments, the parameters fn
  -- uses are reached through a stand-in input (a zero-size array that requires grad)
  local anchor
  if #inputs == 0 then
    anchor = gpu.zeros(0):requires_grad()
    inputs[1] = anchor
  end
  return autograd.record(out:view(out.shape), inputs, function(g)
    local y, detached = again()
    if not is_array(y) or options.shape_str(y.shape) ~= options.shape_str(g.shape) then
      raise("%s: the function gave another result when run again in backward", fname)
    end
    if not autograd.requires_grad(y) then return end
    autograd.backward(y, g)
    local res = {}
    for k, d in ipairs(detached) do res[k] = d.grad end
    return table.unpack(res, 1, math.max(#detached, 1))
  end)
end

return options.count_all("utils.", U)

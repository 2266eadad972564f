-- spec/nn_utils_spec.lua — gpu.nn.utils' parameters_to_vector, vector_to_parameters and
-- pad_sequence, as torch.nn.utils' (their results follow from the layout PyTorch documents:
-- the parameters flattened in order; sequences padded to the longest and stacked).
local h = require "spec.helper"
local gpu = h.gpu
local U = gpu.nn.utils

for _, dev in ipairs(h.devices()) do
  describe("gpu.nn.utils on " .. dev, function()
    it("parameters_to_vector flattens the parameters in order, differentiably", function()
      local m = gpu.nn.Linear(3, 2, { device = dev })
      U.vector_to_parameters(gpu.arange(1, 9, { device = dev }):astype("float32"), m)
      assert.same({ { 1, 2, 3 }, { 4, 5, 6 } }, m.weight:totable())
      assert.same({ 7, 8 }, m.bias:totable())
      local v = U.parameters_to_vector(m:parameters())
      assert.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, v:totable())
      assert.same(v:totable(), U.parameters_to_vector(m):totable())
      assert.same(v:totable(), U.parameters_to_vector(m:named_parameters()):totable())
      local loss = (v * gpu.arange(8, { device = dev }):astype("float32")):sum()
      loss:backward()
      assert.same({ { 0, 1, 2 }, { 3, 4, 5 } }, m.weight.grad:totable())
      assert.same({ 6, 7 }, m.bias.grad:totable())
      assert.is_true(gpu.autograd.requires_grad(m.weight))
    end)

    it("pad_sequence pads to the longest and stacks, time or batch first, right or left", function()
      local a = gpu.array({ { 1, 1 }, { 2, 2 }, { 3, 3 } }, { device = dev })
      local b = gpu.array({ { 4, 4 } }, { device = dev })
      local p = U.pad_sequence({ a, b }, { batch_first = true, padding_value = -1 })
      assert.same({ { { 1, 1 }, { 2, 2 }, { 3, 3 } }, { { 4, 4 }, { -1, -1 }, { -1, -1 } } }, p:totable())
      local t = U.rnn.pad_sequence({ a, b })
      assert.same({ 3, 2, 2 }, t.shape)
      assert.same({ { 1, 1 }, { 4, 4 } }, t:totable()[1])
      local l = U.pad_sequence({ a, b }, { batch_first = true, padding_side = "left" })
      assert.same({ { 0, 0 }, { 0, 0 }, { 4, 4 } }, l:totable()[2])
      local x = gpu.ones(2, { device = dev }):requires_grad()
      local s = U.pad_sequence({ x, gpu.ones(4, { device = dev }) }):sum()
      s:backward()
      assert.same({ 1, 1 }, x.grad:totable())
    end)
  end)
end

describe("gpu.nn.utils misuse", function()
  it("is refused by name", function()
    local m = gpu.nn.Linear(3, 2)
    local cases = {
      { function() return U.parameters_to_vector({}) end, "no parameters" },
      { function() return U.parameters_to_vector(42) end, "parameters (a list of arrays, an array or a module) expected" },
      { function() return U.vector_to_parameters(gpu.ones(7), m) end, "the vector has 7 elements, the parameters 8" },
      { function() return U.vector_to_parameters(gpu.ones(2, 4), m) end, "a 1-D array expected" },
      { function() return U.pad_sequence({}) end, "a non-empty list of arrays expected" },
      { function() return U.pad_sequence({ gpu.ones(2, 3), gpu.ones(2, 4) }) end, "all but the length must agree" },
      { function() return U.pad_sequence({ gpu.ones(2), gpu.ones(2, { dtype = "float64" }) }) end, "all but the length must agree" },
      { function() return U.pad_sequence({ gpu.array(1) }) end, "is 0-d" },
      { function() return U.pad_sequence({ gpu.ones(2) }, { padding_side = "top" }) end, "padding_side" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
    -- a refused vector_to_parameters changed nothing
    local before = m.weight:totable()
    pcall(U.vector_to_parameters, gpu.ones(7), m)
    assert.same(before, m.weight:totable())
  end)
end)

-- spec/light_spec.lua — light arrays: small cpu results of the
-- elementwise ops keep their bytes inside their userdata, under a metatable without __gc
-- (src/lua/larray.c). What must hold: they are arrays like any other (type tests, methods,
-- options, every host), a view of one keeps its bytes alive after the base is dropped and
-- collected (the anchor), closing either side is safe, and the tape node a tracked op keeps
-- inline in its result gives the same gradients as a node of its own.
local h = require "spec.helper"
local gpu = h.gpu
local light, heavy = gpu._metatables[2], gpu._metatables[1]

local is_array = require("gpu.options").is_array
local function is_light(x) return getmetatable(x) == light end
local function full_gc() collectgarbage(); collectgarbage() end

describe("light arrays", function()
  it("are what small cpu elementwise results are, and only those", function()
    local a, b = gpu.arange(1, 101, { dtype = "float32" }), gpu.ones(100, { dtype = "float32" })
    assert.is_true(is_light(a + b))
    assert.is_true(is_light(-a))
    assert.is_true(is_light(a:exp()))
    assert.is_true(is_light(a:lt(b)))                   -- bool result
    assert.is_true(is_light(a + 1))                     -- scalar operand
    assert.is_true(is_light(gpu.add(a, b)))
    local big = gpu.ones(1000, { dtype = "float32" })   -- 4000 bytes: past the limit
    assert.are.equal(heavy, getmetatable(big + 1))
    assert.are.equal(heavy, getmetatable(gpu.ones(3)))  -- creation functions: unchanged
    local e = gpu.zeros({ 0 }) + 1                      -- empty
    assert.is_true(is_light(e))
    assert.are.equal(0, e.size)
  end)

  it("answer every array test and method as heavy arrays do", function()
    local c = gpu.array({ 1, 2, 3 }, { dtype = "float64" }) * 2
    assert.is_true(is_light(c))
    assert.is_true(is_array(c))
    assert.are.same({ 2, 4, 6 }, c:totable())
    assert.are.same({ 3 }, c.shape)
    assert.are.equal("float64", c.dtype)
    assert.are.equal("cpu", c.device)
    assert.are.equal(6, c[3])
    c[2] = 10
    assert.are.same({ 2, 10, 6 }, c:totable())
    assert.are.equal(18, c:sum():item())
    assert.truthy(tostring(c):find("gpu.array", 1, true))
    local ok, err = pcall(gpu.nn.Linear, 3, 2, { dtype = c })         -- options still type-check it
    assert.is_false(ok)
    assert.truthy(err:find("dtype", 1, true))
    -- an optimizer takes a light array as a parameter (the Lua parts' one is_array)
    local p = (gpu.zeros(4, { dtype = "float32" }) + 1):requires_grad()
    local opt = gpu.optim.SGD({ p }, { lr = 0.5 })
    ;(p * p):sum():backward()
    opt:step()
    h.assert_close(p, { 0, 0, 0, 0 })
  end)

  it("keep their bytes while a view of them lives, whatever the view", function()
    local views = {}
    do
      local c = gpu.arange(0, 12, { dtype = "float32" }) + 0
      assert.is_true(is_light(c))
      views.slice = c[{ { 2, 5 } }]
      views.reshape = c:reshape(3, 4)
      views.T = c:reshape(3, 4).T
      views.detach = c:detach()
      views.split = c:split(3)
      views.split2 = gpu.split(c, 2)
      views.expand = c:reshape(1, 12):expand(2, 12)
      views.view_of_view = c:reshape(3, 4)[2]
    end
    full_gc()
    for _ = 1, 200 do local _ = gpu.ones(100) + 1 end     -- reuse what the collector freed
    full_gc()
    assert.are.same({ 1, 2, 3, 4 }, views.slice:totable())
    assert.are.same({ 4, 5, 6, 7 }, views.reshape[2]:totable())
    assert.are.same({ 1, 5, 9 }, views.T[2]:totable())
    assert.are.same({ 11 }, { views.detach[12] })
    assert.are.equal(3, #views.split)
    assert.are.same({ 8, 9, 10, 11 }, views.split[3]:totable())
    assert.are.same({ 6, 7, 8, 9, 10, 11 }, views.split2[2]:totable())
    assert.are.same({ 2, 12 }, views.expand.shape)
    assert.are.same({ 0, 1, 2 }, { views.expand[{ 2, 1 }], views.expand[{ 2, 2 }], views.expand[{ 2, 3 }] })
    assert.are.same({ 4, 5, 6, 7 }, views.view_of_view:totable())
    -- writes through a view land in the shared bytes
    views.reshape[{ 1, 1 }] = 100
    assert.are.equal(100, views.detach[1])
  end)

  it("can be closed on either side of a view", function()
    local c = gpu.ones(8) + 1
    local v = c[{ { 1, 4 } }]
    c:close()
    assert.is_true(c:is_closed())
    assert.are.same({ 2, 2, 2, 2 }, v:totable())
    v:close()
    full_gc()
    local d = gpu.ones(8) * 3
    do local _ <close> = d end
    assert.is_true(d:is_closed())
    assert.has_error(function() return d + 1 end)
  end)

  it("survive many collections of their neighbours (no finalizer, no leak)", function()
    local keep = {}
    for i = 1, 3000 do
      local c = gpu.full({ 16 }, i, { dtype = "float32" }) + 0
      if i % 100 == 0 then keep[#keep + 1] = c[{ { 2, 3 } }] end
    end
    full_gc()
    for k, v in ipairs(keep) do assert.are.same({ k * 100, k * 100 }, v:totable()) end
  end)

  it("carry their tape node inline, with the gradients of a node of its own", function()
    local x = gpu.array({ 0.5, 1.0, 1.5 }, { dtype = "float64" }):requires_grad()
    local y = ((x * 2 + 1):exp() - x:sin()) / (x + 3)
    assert.is_true(is_light(y))
    assert.is_false(y:is_leaf())
    y:sum():backward()
    local want = {}
    for i, v in ipairs({ 0.5, 1.0, 1.5 }) do
      local e = math.exp(2 * v + 1)
      want[i] = ((2 * e - math.cos(v)) * (v + 3) - (e - math.sin(v))) / (v + 3) ^ 2
    end
    h.assert_close(x.grad, want, 1e-12)
    -- second order through inline nodes (create_graph)
    local z = gpu.array({ 2.0 }, { dtype = "float64" }):requires_grad()
    local g = gpu.autograd.grad({ (z * z * z):sum() }, { z }, { create_graph = true })[1]
    local g2 = gpu.autograd.grad({ g:sum() }, { z })[1]
    h.assert_close(g2, { 12 }, 1e-12)
    -- an inline node checks its saved arrays' versions as a node of its own does
    local w = gpu.array({ 1, 2 }, { dtype = "float64" }):requires_grad()
    local s = w * 1
    local t = s * s
    gpu.no_grad(function() s:add_(1) end)
    assert.has_error(function() t:sum():backward() end)
  end)

  it("are arrays of the same module after a host requires gpu again (own process)", function()
    -- a second luaopen_gpu in one state re-fills the shared metatables: run it apart
    local script = os.tmpname()
    h.spit(script, [[
      local gpu = require "gpu"
      local c = gpu.ones(4) + 1
      package.loaded.gpu = nil
      local gpu2 = require "gpu"
      io.write(table.concat(gpu2.add(c, 1):totable(), " "), " ", tostring(gpu2.where(c:gt(0), c, 0)[1]))]])
    local lua = os.getenv("BUSTED_LUA") or "lua5.4"
    local code, out, err = h.run("LUA_CPATH='./?.so;;' " .. lua .. " " .. script)
    os.remove(script)
    assert.are.equal(0, code, err)
    assert.are.equal("3.0 3.0 3.0 3.0 2.0", out)
  end)

end)

-- gpu.so inside the stock lua5.4: loading, threaded work and a clean exit.
local h = require "spec.helper"

describe("gpu.so in lua5.4", function()
  it("exits cleanly after OpenMP work (the module is never unloaded under its threads)", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[local gpu = require "gpu"
local a = gpu.ones(512, 512)
local c
for i = 1, 20 do c = (a + a):exp() end
print(c[{1, 1}] > 7)]])
    f:close()
    for _ = 1, 5 do
      local lua = os.getenv("BUSTED_LUA") or "lua5.4"        -- a path on the GPU machine
      local code, out, err = h.run("LUA_CPATH='./?.so;;' " .. lua .. " " .. script)
      assert.equal(0, code, err)
      assert.equal("true\n", out)
    end
    os.remove(script)
  end)
end)

-- Random misuse of the whole Lua API never crashes the process (tools/apifuzz.lua).
local h = require "spec.helper"

describe("random calls of every function", function()
  it("leave the process alive (3 seeds x 3000 calls, in a subprocess)", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    for seed = 11, 13 do
      local code, out, err = h.run(bin .. " tools/apifuzz.lua " .. seed .. " 3000")
      assert.equal(0, code, err)
      assert.equal("apifuzz ok\t" .. seed .. "\n", out)
    end
  end)
end)

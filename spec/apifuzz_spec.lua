-- Random misuse of the whole Lua API (tools/apifuzz.lua, run by tools/apifuzz.sh under a
-- memory cap): no call crashes, hangs, takes seconds, changes an argument it must not,
-- or leaves an array, the random state or a setting changed after it raised. A short
-- run here; `make fuzz-api` runs many seeds.
local h = require "spec.helper"

describe("random calls of every function", function()
  it("keep every promise over 3 seeds x 20000 calls (in a subprocess)", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local code, out, err = h.run("sh tools/apifuzz.sh " .. bin .. " 11 3 20000")
    assert.equal(0, code, out .. err)
    assert.matches("apifuzz: 3 seeds, 0 failed", out, 1, true)
  end)
end)

-- tools/gpu-run.sh, the one command of a lent-GPU run, tested on the cpu through its
-- --dry-run: what comes back from a GPU run is at most 8 files, and a command killed at its
-- limit loses what it had not written, so the harness must stream TAP into $OUT, pack
-- every other log into one archive, and cut each stage to the time that is left.
local h = require "spec.helper"

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

-- runs the dry run with the given variables into a fresh OUT; status, OUT, stdout
local function dry(vars)
  local out = h.tmpdir()
  local env = { "OUT=" .. out, "GPULUA_BIN=" .. BIN }
  for k, v in pairs(vars) do env[#env + 1] = ("%s='%s'"):format(k, v) end
  table.sort(env)
  local code, stdout, stderr = h.run("env " .. table.concat(env, " ") .. " bash tools/gpu-run.sh --dry-run")
  return code, out, stdout .. stderr
end

local function files(dir)
  local list = {}
  local p = io.popen("cd " .. dir .. " && find . -type f | sort")
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

local function archive(dir)
  local p = io.popen("tar -tzf " .. dir .. "/logs.tgz")
  local s = p:read("a")
  p:close()
  return s
end

local SLOW = "spec/fixtures/gpu_run/slow.lua"

describe("tools/gpu-run.sh --dry-run", function()
  it("leaves at most 8 files, the logs packed into one archive, and its summary line", function()
    local code, out, log = dry { GPU_RUN_STAGES = "check bench examples", GPU_RUN_EXAMPLES = "quickstart" }
    assert.equal(0, code, log)
    local got = files(out)
    assert.is_true(#got <= 8, table.concat(got, " "))
    assert.same({ "./bench.txt", "./logs.tgz", "./summary.txt" }, got)
    local tgz = archive(out)
    for _, name in ipairs { "check.log", "bench.log", "examples.log", "targets-gpulua.txt" } do
      assert.truthy(tgz:find("./" .. name, 1, true), name .. " not in logs.tgz: " .. tgz)
    end
    local summary = h.slurp(out .. "/summary.txt")
    assert.matches("\n%d+ passed, 0 failed\n$", summary)
    assert.matches("RESULT gpulua add ", h.slurp(out .. "/bench.txt"), 1, true)
  end)

  it("keeps the TAP lines of a stage killed at its limit, and counts the timeout as a failure", function()
    local code, out, log = dry { GPU_RUN_STAGES = "specs", GPU_RUN_SPECS = SLOW, GPU_RUN_BUDGET_specs = "3" }
    assert.is_not.equal(0, code, log)
    assert.matches("^ok 1 %- a stage that runs past its limit passes at once\n", h.slurp(out .. "/tap-specs.txt"))
    local summary = h.slurp(out .. "/summary.txt")
    assert.matches("specs: TIMED OUT after %d+ s %(limit 3 s%)", summary)
    assert.matches("harness: FAILED: stage specs ran to its end", summary, 1, true)
    assert.matches("\n%d+ passed, 1 failed\n$", summary)
    assert.truthy(archive(out):find("./specs.log", 1, true))
  end)

  it("cuts a stage to the time left of GPU_RUN_SECONDS and skips a stage that has none", function()
    -- 14 s less the 10 s kept for packing: the specs get 4 s, check nothing
    local code, out, log = dry { GPU_RUN_SECONDS = "14", GPU_RUN_STAGES = "specs check", GPU_RUN_SPECS = SLOW }
    assert.is_not.equal(0, code, log)
    local summary = h.slurp(out .. "/summary.txt")
    assert.matches("specs (limit 4 s)", summary, 1, true)
    assert.matches("check: skipped (no time left of 14 s)", summary, 1, true)
  end)

  it("fails when OUT holds more files than come back", function()
    local code, out, log = dry { GPU_RUN_STAGES = "check", GPU_RUN_MAX_FILES = "1" }
    assert.is_not.equal(0, code, log)
    assert.matches("harness: FAILED: at most 1 files in OUT", h.slurp(out .. "/summary.txt"), 1, true)
  end)
end)

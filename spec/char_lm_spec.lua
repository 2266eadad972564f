-- spec/char_lm_spec.lua — examples/char_lm.lua as a user runs it, on tiny
-- settings: both models train and print bits per character, sample text, a checkpoint
-- resumed continues exactly as the uninterrupted run, bad options are refused.
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local CORPUS = "/usr/share/games/fortunes"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- run(args...) -> exit status, stdout + stderr of `BIN examples/char_lm.lua args`
local function run(...)
  local parts = { "GPULUA_DEVICE=cpu", q(BIN), "examples/char_lm.lua" }
  for _, a in ipairs({ ... }) do parts[#parts + 1] = q(a) end
  parts[#parts + 1] = "2>&1; echo \"exit=$?\""
  local p = assert(io.popen(table.concat(parts, " "), "r"))
  local out = p:read("a")
  p:close()
  return tonumber(out:match("exit=(%d+)%s*$")), out
end

local TINY = { "--limit", "40000", "--context", "16", "--batch", "4", "--eval-batches", "1" }
local function tiny(...)
  local t = {}
  for _, a in ipairs(TINY) do t[#t + 1] = a end
  for _, a in ipairs({ ... }) do t[#t + 1] = a end
  return table.unpack(t)
end

local function step_line(out, n)
  return out:match(("step%%s+%d%%s+train ([%%d.]+) bits/char%%s+val ([%%d.]+) bits/char"):format(n))
end

describe("examples/char_lm.lua", function()
  local have_corpus = io.open(CORPUS .. "/fortunes", "rb")
  if have_corpus then have_corpus:close() end

  it("trains the transformer and samples text", function()
    if not have_corpus then pending("no corpus: make deps installs the fortunes package") return end
    local status, out = run(tiny("--steps", "4", "--eval-every", "2", "--sample", "30"))
    assert.are.equal(0, status, out)
    assert.is_truthy(out:find("char_lm: transformer, %d+ parameters, vocabulary %d+"), out)
    local tr, val = step_line(out, 4)
    assert.is_truthy(tr and val, out)
    assert.is_true(tonumber(val) > 0 and tonumber(val) < 10, out)
    assert.is_truthy(out:find("%-%-%-%- 30 characters at temperature 0%.80 %-%-%-%-"), out)
    assert.is_falsy(out:find("stack traceback"), out)
  end)

  it("continues from a checkpoint exactly as the run that did not stop (lstm)", function()
    if not have_corpus then pending("no corpus: make deps installs the fortunes package") return end
    local ck = os.tmpname()
    local s1, whole = run(tiny("--model", "lstm", "--steps", "4", "--eval-every", "2", "--sample", "0"))
    assert.are.equal(0, s1, whole)
    local s2, first = run(tiny("--model", "lstm", "--steps", "2", "--eval-every", "2", "--sample", "0", "--save", ck))
    assert.are.equal(0, s2, first)
    local s3, rest = run(tiny("--model", "lstm", "--steps", "4", "--eval-every", "2", "--sample", "0", "--resume", ck))
    os.remove(ck)
    assert.are.equal(0, s3, rest)
    local a1, a2 = step_line(whole, 4)
    local b1, b2 = step_line(rest, 4)
    assert.is_truthy(a1 and b1, whole .. rest)
    assert.are.equal(a1, b1)
    assert.are.equal(a2, b2)
  end)

  it("refuses an unknown option and a bad model name", function()
    local status, out = run("--epochs", "3")
    assert.are_not.equal(0, status)
    assert.is_truthy(out:find("char_lm: unknown option --epochs", 1, true), out)
    status, out = run("--model", "gru")
    assert.are_not.equal(0, status)
    assert.is_truthy(out:find("char_lm: --model is transformer or lstm", 1, true), out)
  end)
end)

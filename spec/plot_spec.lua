-- gpu.plot: gnuplot's pictures. Files written are PNGs (read back with gpu.image.load) or
-- SVGs of the size asked; what the dumb terminal draws (captured through io.output())
-- holds the title and the legend; errors name the function and the fault, and a missing
-- gnuplot names the Debian package. Specs that need gnuplot are pending without it.
local h = require "spec.helper"
local slurp = h.slurp
local gpu = h.gpu

local have_gnuplot = os.execute("command -v gnuplot >/dev/null 2>&1")
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

local dir, tmp = h.tmpdir("plot")

-- What f() writes through io.write, as a string.
local function captured(f)
  local p = tmp("txt")
  local old = io.output()
  io.output(p)
  local ok, err = pcall(f)
  io.output():close()
  io.output(old)
  if not ok then error(err, 0) end
  return slurp(p)
end

local function needs_gnuplot(name, f)
  it(name, function()
    if not have_gnuplot then return pending("gnuplot is not installed (Debian package gnuplot-nox)") end
    f()
  end)
end

-- A PNG file of (3, height, width), as gpu.image.load reads it.
local function assert_png(p, w, hh)
  local img = gpu.image.load(p)
  assert.are.same({ 3, hh, w }, img.shape)
  assert.is_true(img:astype("int32"):max():item() > img:astype("int32"):min():item(), "an empty picture")
end

local hist = { loss = { 1.0, 0.6, 0.4, 0.3 }, val_loss = { 1.1, 0.8, 0.6, 0.55 },
               accuracy = { 0.5, 0.7, 0.8, 0.85 }, val_accuracy = { 0.45, 0.6, 0.7, 0.72 } }

describe("gpu.plot to files", function()
  needs_gnuplot("plot writes a PNG of the size asked", function()
    local p = tmp()
    gpu.plot.plot(gpu.arange(20):sin(), { file = p, width = 320, height = 200, title = "sine" })
    assert_png(p, 320, 200)
  end)
  needs_gnuplot("the default size is 640x480; a list of series with names and x", function()
    local p = tmp()
    local x = gpu.linspace(0, 1, 11)
    gpu.plot.plot({ { "a", x, x * 2 }, { "b", gpu.arange(11) }, gpu.ones(11) }, { file = p, legend = true })
    assert_png(p, 640, 480)
  end)
  needs_gnuplot("an SVG with the size asked", function()
    local p = tmp("svg")
    gpu.plot.scatter(gpu.random.randn(30), gpu.random.randn(30), { file = p, width = 400, height = 300 })
    local s = slurp(p)
    assert.truthy(s:find("<svg", 1, true))
    assert.truthy(s:find('width="400"', 1, true))
  end)
  needs_gnuplot("hist, scatter, imagesc and history write PNGs", function()
    local p = tmp()
    gpu.plot.hist(gpu.random.randn(500), { bins = 15, file = p, width = 300, height = 250 })
    assert_png(p, 300, 250)
    gpu.plot.scatter({ 1, 2, 3 }, { 3, 1, 2 }, { file = p, width = 200, height = 150 })
    assert_png(p, 200, 150)
    gpu.plot.imagesc(gpu.random.rand(6, 9), { file = p, width = 300, height = 200, palette = "color" })
    assert_png(p, 300, 200)
    gpu.plot.history(hist, { file = p, width = 500, height = 400, title = "training" })
    assert_png(p, 500, 400)
    gpu.plot.history(hist, { file = p })                  -- two panels: 300 pixels each
    assert_png(p, 640, 600)
  end)
end)

describe("gpu.plot on the dumb terminal", function()
  needs_gnuplot("plot draws text art with the title and the series' names", function()
    local out = captured(function()
      gpu.plot.plot({ { "train", gpu.arange(5) }, { "valid", gpu.arange(5) * 0.5 } },
        { terminal = "dumb", title = "my curves", width = 70, height = 20, xlabel = "step" })
    end)
    assert.truthy(out:find("my curves", 1, true))
    assert.truthy(out:find("train", 1, true))
    assert.truthy(out:find("valid", 1, true))
    assert.truthy(out:find("step", 1, true))
    local lines = 0
    for line in out:gmatch("[^\n]*\n") do
      lines = lines + 1
      assert.is_true(#line <= 71, "a line wider than asked: " .. line)
    end
    assert.are.equal(20, lines)
  end)
  needs_gnuplot("hist and history draw with their titles", function()
    local out = captured(function() gpu.plot.hist({ 1, 2, 2, 3, 3, 3 }, { terminal = "dumb", title = "counts", bins = 3 }) end)
    assert.truthy(out:find("counts", 1, true))
    out = captured(function() gpu.plot.history({ history = hist }, { terminal = "dumb", width = 60 }) end)
    assert.truthy(out:find("loss", 1, true))
    assert.truthy(out:find("accuracy", 1, true))
    assert.truthy(out:find("validation", 1, true))
  end)
  needs_gnuplot("terminal = 'sixel' writes a sixel image (DCS ... ST)", function()
    local out = captured(function() gpu.plot.plot({ 1, 3, 2 }, { terminal = "sixel", width = 120, height = 80 }) end)
    assert.are.equal("\27Pq", out:sub(1, 3))
    assert.truthy(out:find("\27\\", 4, true))
  end)
  it("imagesc draws a character ramp, row 1 on top", function()
    local out = captured(function()
      gpu.plot.imagesc(gpu.array { { 0, 0 }, { 1, 1 } }, { terminal = "dumb", title = "ramp" })
    end)
    assert.are.equal("ramp\n    \n@@@@\n", out)
  end)
end)

describe("gpu.plot errors", function()
  it("unknown options, bad values", function()
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), { titel = "x" }) end,
      "bad argument #2 to 'plot.plot' (unknown option 'titel'; did you mean 'title'?)")
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), gpu.arange(3), { widht = 3 }) end,
      "bad argument #3 to 'plot.plot' (unknown option 'widht'; did you mean 'width'?)")
    assert.has_error(function() gpu.plot.hist(gpu.arange(3), { bins = 0 }) end,
      "bad argument #2 to 'plot.hist' (option 'bins' must be >= 1, got integer 0)")
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), { file = "x.jpg" }) end,
      "bad argument #2 to 'plot.plot' (option 'file' must end in .png or .svg, got 'x.jpg')")
    assert.has_error(function() gpu.plot.imagesc(gpu.eye(2), { palette = "grey" }) end,
      "bad argument #2 to 'plot.imagesc' (option 'palette' must be one of gray, color, got 'grey'; did you mean 'gray'?)")
  end)
  it("wrong shapes and types", function()
    assert.has_error(function() gpu.plot.plot(gpu.zeros(2, 2)) end,
      "bad argument #1 to 'plot.plot' (y: a 1-D array expected, got shape (2, 2))")
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), gpu.arange(4)) end,
      "bad argument #1 to 'plot.plot' (x has 4 values and y has 3)")
    assert.has_error(function() gpu.plot.plot("abc") end,
      "bad argument #1 to 'plot.plot' (a 1-D gpu.array, a list of numbers or a list of series expected, got 'abc')")
    assert.has_error(function() gpu.plot.plot({ 1, "x" }) end,
      "bad argument #1 to 'plot.plot' (y: entry 2 is 'x', not a number)")
    assert.has_error(function() gpu.plot.imagesc(gpu.zeros(3)) end,
      "bad argument #1 to 'plot.imagesc' (a non-empty 2-D array expected, got shape (3))")
    assert.has_error(function() gpu.plot.scatter(gpu.arange(3)) end,
      "bad argument #2 to 'plot.scatter' (y expected, got no value)")
    assert.has_error(function() gpu.plot.history({ precision = "bf16" }) end,
      "bad argument #1 to 'plot.history' (no metric in the history (expected lists such as loss = {...}))")
    assert.has_error(function() gpu.plot.hist({ 0 / 0 }) end, "bad argument #1 to 'plot.hist' (no finite values to count)")
  end)
  it("a gnuplot that is not there names the Debian package", function()
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), { gnuplot = "/nonexistent/gnuplot" }) end,
      "gpu.plot.plot: gnuplot not found (/nonexistent/gnuplot; install the Debian package gnuplot-nox)")
  end)
  it("a PATH without gnuplot, and GPULUA_GNUPLOT naming a missing one", function()
    local code = "local ok, e = pcall(require('gpu').plot.hist, {1, 2}) io.write(tostring(e))"
    local p = io.popen("env PATH=/nonexistent " .. BIN .. " -e \"" .. code .. "\" 2>&1")
    local out = p:read("a")
    p:close()
    assert.matches("gpu.plot.hist: gnuplot not found %(gnuplot; install the Debian package gnuplot%-nox%)", out)
    p = io.popen("GPULUA_GNUPLOT=/no/gp " .. BIN .. " -e \"" .. code .. "\" 2>&1")
    out = p:read("a")
    p:close()
    assert.matches("gnuplot not found %(/no/gp;", out)
  end)
  it("gnuplot's own failure is reported with its stderr", function()
    local fake = tmp("sh")
    h.spit(fake, "#!/bin/sh\necho 'line 3: cannot open file' >&2\nexit 1\n")
    assert(os.execute("chmod +x " .. fake))
    local ok, err = pcall(gpu.plot.plot, gpu.arange(3), { file = tmp(), gnuplot = fake })
    assert.is_false(ok)
    assert.matches("gpu.plot.plot: gnuplot failed %(exit 1%): line 3: cannot open file", err)
  end)
  needs_gnuplot("a file in a missing directory names the file and the fault", function()
    local ok, err = pcall(gpu.plot.plot, gpu.arange(3), { file = dir .. "/no/such/dir/x.png" })
    assert.is_false(ok)
    assert.matches("gpu.plot.plot: '.-/no/such/dir/x.png': cannot create %(No such file or directory%)", err)
  end)
  it("a NUL byte in a string is refused, naming the option", function()
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), { title = "a\0b" }) end,
      "bad argument #2 to 'plot.plot' (option 'title' contains a NUL byte, which gnuplot cannot show)")
    assert.has_error(function() gpu.plot.plot({ { "a\0b", gpu.arange(3) } }) end,
      "bad argument #1 to 'plot.plot' (series name 'a\\0b': contains a NUL byte, which gnuplot cannot show)")
    assert.has_error(function() gpu.plot.history({ ["l\0ss"] = { 1, 2 } }) end,
      "bad argument #1 to 'plot.history' (metric 'l\\0ss': contains a NUL byte, which gnuplot cannot show)")
    assert.has_error(function() gpu.plot.plot(gpu.arange(3), { file = "a\0b.png" }) end)
  end)
end)

describe("the examples' --plot", function()
  for _, ex in ipairs { "keras_mlp", "cnn" } do
    needs_gnuplot(ex .. " --small --plot DIR writes the curves, a grid of test images and its caption", function()
      local out = io.popen(BIN .. " examples/" .. ex .. ".lua --small --plot " .. dir .. " 2>&1; echo exit=$?"):read("a")
      assert.matches("exit=0", out)
      assert_png(dir .. "/" .. ex .. "_history.png", 640, 600)
      -- 32 images of 28x28, 8 a row, padding 2: 4 * 30 + 2 high, 8 * 30 + 2 wide, gray
      assert.are.same({ 1, 122, 242 }, gpu.image.load(dir .. "/" .. ex .. "_predictions.png").shape)
      local caption = slurp(dir .. "/" .. ex .. "_predictions.txt")
      local rows = 0
      for line in caption:gmatch("[^\n]+") do
        rows = rows + 1
        local _, commas = line:gsub(", ", "")
        assert.are.equal(7, commas, line)
      end
      assert.are.equal(4, rows)
    end)
  end
end)

describe("gpu.plot files are saved as every save", function()
  needs_gnuplot("a directory is refused, a failed plot keeps the old file, no temporary is left", function()
    assert.has_error(function() gpu.plot.plot({ 1, 2 }, { file = dir .. "/" }) end)
    local sub = dir .. "/d.png"
    assert(os.execute("mkdir -p " .. sub))
    local ok, err = pcall(gpu.plot.plot, { 1, 2 }, { file = sub })
    assert.is_false(ok)
    assert.matches("gpu.plot.plot: '.-d.png': not a regular file: refusing to replace it", err)
    local p = tmp()
    local f = assert(io.open(p, "wb"))
    f:write("old")
    f:close()
    ok, err = pcall(gpu.plot.plot, { 1, 2 }, { file = p, gnuplot = "false" })   -- a "gnuplot" that fails
    assert.is_false(ok)
    assert.are.equal("gpu.plot.plot: gnuplot failed (exit 1): no message", (err:gsub("^.-:%d+: ", "")))
    assert.are.equal("old", slurp(p))
    gpu.plot.plot({ 1, 2 }, { file = p, width = 100, height = 80 })
    assert_png(p, 100, 80)
    assert.is_nil(io.popen("ls " .. dir):read("a"):find("tmp%-"))
  end)
end)

-- Strings that would end a gnuplot command or start a substitution if passed as they are:
-- each tries to touch a marker file. None may run; the plot is drawn with the text as is.
describe("gpu.plot passes the caller's strings as text, never as commands", function()
  local marks = dir .. "/marks"
  local function attacks(m)
    return {
      "a\n!touch " .. m .. "1\n",
      "a\nsystem(\"touch " .. m .. "2\")\n",
      "a'\n!touch " .. m .. "3\n'",
      'a"\n!touch ' .. m .. '4\n"',
      "a`touch " .. m .. "5`b",
      "a\\\n!touch " .. m .. "6",
      "a\r!touch " .. m .. "7\r",
      "a\n print system('touch " .. m .. "8')",
      "@a $b \\0101 \t \195\169",
    }
  end
  before_each(function() assert(os.execute("rm -rf " .. marks .. " && mkdir -p " .. marks)) end)
  local function no_marks()
    local left = io.popen("ls -A " .. marks):read("a")
    assert.are.equal("", left, "a command ran: " .. left)
  end

  needs_gnuplot("title, xlabel, ylabel and series names (plot, scatter, hist, imagesc)", function()
    for i, a in ipairs(attacks(marks .. "/t")) do
      local p = tmp()
      gpu.plot.plot({ { a, gpu.arange(4) }, { a .. "2", gpu.arange(4) * 2 } },
        { file = p, title = a, xlabel = a, ylabel = a, legend = true, width = 200, height = 150 })
      assert_png(p, 200, 150)
      gpu.plot.scatter({ 1, 2, 3 }, { 3, 1, 2 }, { file = p, title = a, xlabel = a, ylabel = a, width = 160, height = 120 })
      assert_png(p, 160, 120)
      gpu.plot.hist({ 1, 2, 2, 3 }, { file = p, title = a, xlabel = a, ylabel = a, legend = true, width = 160, height = 120 })
      assert_png(p, 160, 120)
      gpu.plot.imagesc(gpu.eye(3), { file = p, title = a, xlabel = a, ylabel = a, width = 160, height = 120 })
      assert_png(p, 160, 120)
      local out = captured(function()
        gpu.plot.plot({ { a, gpu.arange(4) } }, { terminal = "dumb", title = a, width = 120, height = 30 })
      end)
      assert.truthy(out:find("a", 1, true), "attack " .. i)
    end
    no_marks()
  end)
  needs_gnuplot("history's metric names, title and xlabel", function()
    for _, a in ipairs(attacks(marks .. "/h")) do
      local p = tmp()
      gpu.plot.history({ loss = { 1, 0.5 }, [a] = { 0.1, 0.2 }, ["val_" .. a] = { 0.2, 0.3 } },
        { file = p, title = a, xlabel = a, width = 200, height = 300 })
      assert_png(p, 200, 300)
      captured(function() gpu.plot.history({ [a] = { 1, 2 } }, { terminal = "dumb", title = a, ylabel = a }) end)
    end
    no_marks()
  end)
  needs_gnuplot("file names: written as named, never read by gnuplot", function()
    -- a file name holds no "/" but its directories': the markers are in the current directory
    local m = "gpulua-plot-mark-" .. dir:gsub("%W", "")
    for i, a in ipairs(attacks(m)) do
      local p = dir .. "/" .. a .. i .. ".png"
      gpu.plot.plot({ 1, 3, 2 }, { file = p, width = 120, height = 90 })
      assert_png(p, 120, 90)
      os.remove(p)
    end
    local left = io.popen("ls -A | grep -F " .. m):read("a")
    os.execute("rm -f ./" .. m .. "*")
    assert.are.equal("", left, "a command ran: " .. left)
  end)
  needs_gnuplot("the text is drawn as given: quotes, backslashes, backquotes, a newline as a line break", function()
    local title = [[it's "q" \n `x` @y $z #w]]
    local out = captured(function()
      gpu.plot.plot({ 1, 2, 3 }, { terminal = "dumb", title = title .. "\nsecond line", width = 100, height = 24 })
    end)
    assert.truthy(out:find(title, 1, true), out)
    assert.truthy(out:find("\n%s*second line"), out)
  end)
end)

describe("gpu.plot writes no file through a planted link", function()
  needs_gnuplot("links at the names a temporary once had leave their targets alone", function()
    local p = tmp()
    local victim = tmp("txt")
    h.spit(victim, "victim")
    -- the old temporary was <file>.tmp-<6 hex digits of math.random>: plant those names
    math.randomseed(26)
    local planted = {}
    for i = 1, 8 do
      planted[i] = ("%s.tmp-%06x"):format(p, math.random(0, 0xffffff))
      assert(os.execute(("ln -sf %s '%s'"):format(victim, planted[i])))
    end
    math.randomseed(26)
    gpu.plot.plot({ 1, 3, 2 }, { file = p, width = 120, height = 90 })
    assert_png(p, 120, 90)
    assert.are.equal("victim", slurp(victim))
    for _, l in ipairs(planted) do os.remove(l) end
  end)
  needs_gnuplot("a save to a path that is a link writes the file it points to and keeps the link", function()
    local target, link = tmp(), tmp()
    h.spit(target, "old")
    assert(os.execute(("ln -s %s %s"):format(target, link)))
    gpu.plot.plot({ 1, 3, 2 }, { file = link, width = 120, height = 90 })
    assert_png(target, 120, 90)
    assert.is_true(os.execute("test -L " .. link))
    local dangling = tmp()
    assert(os.execute(("ln -s %s/missing.png %s"):format(dir, dangling)))
    local ok, err = pcall(gpu.plot.plot, { 1, 3, 2 }, { file = dangling })
    assert.is_false(ok)
    assert.matches("gpu.plot.plot: '.-': a symbolic link to a missing file", err)
    assert.is_nil(io.open(dir .. "/missing.png"))
  end)
end)

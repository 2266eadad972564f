-- spec/progress_spec.lua — fit's progress lines: the bar fits a given width,
-- each redraw clears the rest of the line, an epoch ends in one Keras line, and off a
-- terminal (or with verbose = 2) only epoch lines are written; verbose = 0 writes nothing.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
-- through gpu.nn: busted unloads the Lua parts a spec file required, gpu.nn stays cached
local P = nn._progress

local vals = { { "loss", 0.123456 }, { "accuracy", 0.7747 }, { "val_loss", 0.5 }, { "val_accuracy", 0.25 } }

describe("progress line", function()
  it("never exceeds the width it is given, shortening the bar, then dropping fields", function()
    for _, width in ipairs { 8, 20, 40, 60, 79, 100, 200 } do
      for _, done in ipairs { 0, 1, 234, 469 } do
        local line = P.line(done, 469, 3.5, vals, width, true)
        assert.is_true(#line <= width, ("%d > %d: %s"):format(#line, width, line))
      end
    end
    local wide = P.line(100, 469, 1, vals, 200, true)
    assert.matches("%[=+>%.+%]", wide)                      -- a 30-column bar where it fits
    assert.equal(32, #wide:match("%[[=>.]+%]"))
    local narrow = P.line(100, 469, 1, vals, 70, true)
    local bar = narrow:match("%[[=>.]+%]")
    assert.is_true(bar == nil or #bar < 32, narrow)
    assert.matches("loss: 0.1235", P.line(100, 469, 1, vals, 40, true), 1, true)
    assert.not_matches("val_accuracy", P.line(100, 469, 1, vals, 40, true), 1, true)
  end)

  it("ends each epoch as Keras: steps, bar, time, time per step, every field", function()
    local line = P.line(469, 469, 2.1, { { "loss", 0.5 }, { "accuracy", 0.8 } }, 120, true, true)
    assert.equal("469/469 [==============================] - 2.1s 4ms/step - loss: 0.5000 - accuracy: 0.8000", line)
    -- the last line keeps every field even where it is wider than the terminal
    local last = P.line(469, 469, 2.1, vals, 40, true, true)
    assert.matches("val_accuracy: 0.2500", last, 1, true)
    assert.equal("Epoch 2/3 - 469/469 - 2.1s 4ms/step - loss: 0.5000",
      P.plain_line(2, 3, 469, 2.1, { { "loss", 0.5 } }))
    assert.matches("^ 12/469 %- ETA: ", P.line(12, 469, 1, {}, nil, false))
  end)

  it("redraws from the line's start and clears what a longer line left", function()
    local r = P.redraw(P.line(1, 10, 0.1, { { "accuracy", 0.7747 } }, 79, true))
    assert.equal("\r", r:sub(1, 1))
    assert.equal("\27[K", r:sub(-3))
  end)

  it("takes the width from $COLUMNS when the terminal does not say, else 80", function()
    assert.is_nil(gpu.terminal_size(io.tmpfile()))           -- a file is no terminal
    if gpu.terminal_size(io.stdout) == nil then
      local w = P.width()
      assert.is_true(w == tonumber(os.getenv("COLUMNS") or "80") - 1, tostring(w))
    end
    local f = io.tmpfile(); f:close()
    assert.has_error(function() gpu.terminal_size(f) end)
    assert.has_error(function() gpu.terminal_size(3) end)
  end)
end)

describe("on a pseudo-terminal", function()
  local has_script = os.execute("command -v script >/dev/null 2>&1")
  local bin = os.getenv("GPULUA_BIN") or "./gpulua"
  local function sq(str) return "'" .. str:gsub("'", "'\\''") .. "'" end     -- a shell word
  local function in_pty(cols, code)
    return h.run(("script -qec %s /dev/null"):format(sq(("stty cols %d rows 20; %s -e %s"):format(cols, bin, sq(code)))))
  end

  it("gpu.terminal_size reads the terminal's size, and fit's bar fits it", function()
    if not has_script then pending("script (util-linux) is not installed") return end
    local code, out, err = in_pty(47, "print(gpu.terminal_size())")
    assert.equal(0, code, err)
    assert.matches("^47\t20", out)
    code, out, err = in_pty(81, [[
      local nn = gpu.nn
      local m = nn.Sequential { nn.Linear(3, 2), nn.Softmax() }
      m:compile { optimizer = 'sgd', loss = 'sparse_categorical_crossentropy', metrics = { 'accuracy' } }
      local y = gpu.array({ 1, 2, 1, 2, 1, 2, 1, 2 }, { dtype = 'int64' })
      m:fit(gpu.ones(8, 3), y, { epochs = 2, batch_size = 2 })]])
    assert.equal(0, code, err)
    assert.matches("Epoch 1/2\r?\n", out)
    local n = 0
    for draw in out:gmatch("\r([^\r\n]*)\27%[K") do
      n = n + 1
      assert.is_true(#draw <= 80, draw)
    end
    assert.is_true(n >= 2, out)
    assert.matches("\r4/4 %[=+%] %- [%d.]+s", out)
  end)
end)

describe("fit's output", function()
  local function run(verbose, terminal_width)
    local m = nn.Sequential { nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Softmax() }
    m:compile { optimizer = "sgd", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
    local x = gpu.random.Generator(1):normal(0, 1, { 40, 3 })
    local y = gpu.array({ 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2,
                          1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2 }, { dtype = "int64" })
    local out, write, tw = {}, io.write, P.terminal_width
    io.write = function(...) out[#out + 1] = table.concat({ ... }) end
    P.terminal_width = function() return terminal_width end
    local ok, hist = pcall(m.fit, m, x, y, { epochs = 3, batch_size = 8, verbose = verbose, validation_split = 0.25 })
    io.write, P.terminal_width = write, tw
    assert.is_true(ok, hist)
    return table.concat(out), hist
  end

  it("off a terminal prints one line per epoch with verbose 1 and 2, nothing with 0", function()
    for _, v in ipairs { 1, 2, true } do
      local out = run(v, nil)
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal(3, #lines, out)
      for i, l in ipairs(lines) do
        assert.matches("^Epoch " .. i .. "/3 %- 4/4 %- [%d.]+s %d+[mu]?s/step %- loss: [%d.]+ %- accuracy: [%d.]+ %- " ..
          "val_loss: [%d.]+ %- val_accuracy: [%d.]+$", l)
      end
      assert.not_matches("[\r\27]", out)
    end
    assert.equal("", (run(0, nil)))
    assert.equal("", (run(false, nil)))
  end)

  it("on a terminal draws a bar per epoch, each redraw within the width and cleared", function()
    local out = run(1, 59)
    assert.equal(3, select(2, out:gsub("Epoch %d/3\n", "")))
    for draw in out:gmatch("\r([^\r\n]*)\27%[K") do
      assert.is_true(#draw <= 59 or draw:match("^4/4 ") ~= nil, draw)   -- the last one keeps its fields
    end
    assert.matches("\r4/4 %- [%d.]+s .* %- val_accuracy: [%d.]+\27%[K\n", out)
    assert.matches("\r4/4 %[[=]+%] %- [%d.]+s [%d]+[mu]?s/step %- loss: [%d.]+ %- accuracy: [%d.]+ %- val_loss", (run(1, 150)))
    -- verbose = 2 on a terminal: epoch lines only
    assert.not_matches("[\r\27]", (run(2, 59)))
  end)

  it("returns Keras's history.history beside the lists", function()
    local _, hist = run(0, nil)
    assert.equal(hist.loss, hist.history.loss)
    assert.equal(hist.accuracy, hist.history.accuracy)
    assert.equal(hist.val_loss, hist.history.val_loss)
    assert.equal(3, #hist.history.val_accuracy)
    for k in pairs(hist) do assert.not_equal("history", k) end     -- pairs sees the lists only
  end)

  it("keeps refusing bad verbose values", function()
    local m = nn.Sequential { nn.Linear(2, 2) }
    m:compile { optimizer = "sgd", loss = "mse" }
    local ok, err = pcall(m.fit, m, gpu.ones(4, 2), gpu.ones(4, 2), { verbose = 3 })
    assert.is_false(ok)
    assert.matches("verbose", err)
  end)
end)

-- gpu.plot: plots through gnuplot (Debian gnuplot-nox), after Torch7's gnuplot package.
--
--   gpu.plot.plot(y [, x] [, opts])      lines: y a 1-D array (or a list of numbers), or a
--                                        list of series: arrays or {"name", y} / {"name", x, y}
--   gpu.plot.scatter(x, y [, opts])      points
--   gpu.plot.hist(x [, {bins = 10, min =, max =}])
--   gpu.plot.imagesc(m [, {palette = "gray" | "color"}])      a 2-D array as an image
--   gpu.plot.history(h [, opts])         fit's history: one panel per metric, train and val
--
-- Common options: title, xlabel, ylabel, legend (default: shown when series have names),
-- width and height (characters on the terminal, pixels in a file), file (".png" through
-- the pngcairo terminal, else png; ".svg"), terminal ("dumb" or "sixel" when drawing on
-- the screen; the default is sixel when $TERM names a terminal known to show it or
-- GPULUA_SIXEL=1, else dumb: text art sized to the terminal, $COLUMNS/$LINES, else 80x24),
-- gnuplot (the program to run; default $GPULUA_GNUPLOT, else "gnuplot" on PATH).
--
-- A script with the data inline ($data << EOD blocks) goes to gnuplot through a temporary
-- file; what gnuplot draws on the screen is written to io.output(). gnuplot missing is an
-- error naming the Debian package, and a gnuplot failure is an error with its stderr.
-- Every string of the caller's (titles, labels, series names, history's metric names)
-- reaches gnuplot as a string literal in which every byte but letters, digits, spaces and
-- inert punctuation is an octal escape, so no character can end the command or start a
-- substitution (a newline is drawn as a line break); a NUL byte is refused. gnuplot
-- draws a file's picture on its standard output and gpulua saves it as every save
-- (gpu._save_bytes): gnuplot never opens a path.
-- imagesc on the dumb terminal (which has no pixels) is drawn here as a character ramp.

local gpu = require "gpu"
local options = require "gpu.options"

local M = {}

-- gnuplot's strings end at a NUL byte: a title cut short would be a silent wrong answer
local function no_nul(v)
  if v:find("\0", 1, true) then return false, "contains a NUL byte, which gnuplot cannot show" end
  return true
end
local TEXT = { type = "string", check = no_nul }

local COMMON = {
  title = TEXT, xlabel = TEXT, ylabel = TEXT, legend = "boolean",
  file = { type = "string", check = function(v)
    if not no_nul(v) then return false, "contains a NUL byte" end
    local ext = v:lower():match("%.(%w+)$")
    if ext == "png" or ext == "svg" then return true end
    return false, "must end in .png or .svg, got '" .. v .. "'"
  end },
  width = { type = "integer", min = 1, max = 100000 },
  height = { type = "integer", min = 1, max = 100000 },
  terminal = { choices = { "dumb", "sixel" } },
  gnuplot = "string",
}

local function declare(name, extra, example)
  local keys = {}
  for k, v in pairs(COMMON) do keys[k] = v end
  for k, v in pairs(extra or {}) do keys[k] = v end
  return options.declare("plot." .. name, keys, { example = example })
end

local PLOT = declare("plot", { style = { choices = { "lines", "points", "linespoints" }, default = "lines" } },
  "gpu.plot.plot(gpu.arange(3), %s)")
local SCATTER = declare("scatter", nil, "gpu.plot.scatter(gpu.arange(3), gpu.arange(3), %s)")
local HIST = declare("hist", { bins = { type = "integer", min = 1, max = 100000, default = 10 }, min = "number", max = "number" },
  "gpu.plot.hist(gpu.arange(3), %s)")
local IMAGESC = declare("imagesc", { palette = { choices = { "gray", "color" }, default = "gray" } },
  "gpu.plot.imagesc(gpu.eye(3), %s)")
local HISTORY = declare("history", nil, "gpu.plot.history({loss = {1, 0.5}}, %s)")

-- ---- data ------------------------------------------------------------------------------------

-- A list of Lua numbers from a 1-D array (any dtype, any device) or a list of numbers.
local function numbers(v, fname, argn, what)
  if options.is_array(v) then
    options.check_array(v, fname, argn, what)
    if v.ndim ~= 1 then
      options.argerror(fname, argn, "%s: a 1-D array expected, got shape %s", what, options.shape_str(v.shape))
    end
    return v:astype("float64"):cpu():totable()
  end
  if type(v) == "table" then
    for i = 1, #v do
      if type(v[i]) ~= "number" then
        options.argerror(fname, argn, "%s: entry %d is %s, not a number", what, i, options.type_name(v[i]))
      end
    end
    return v
  end
  options.argerror(fname, argn, "%s: a 1-D gpu.array or a list of numbers expected, got %s", what, options.type_name(v))
end

local function is_list_of_numbers(v) return type(v) == "table" and not options.is_array(v) and type(v[1]) == "number" end

local function num(v)
  if v ~= v or v == math.huge or v == -math.huge then return "NaN" end
  return ("%.17g"):format(v)
end

-- A gnuplot string literal: double quotes (where gnuplot reads octal escapes), every byte
-- outside the inert set escaped. gnuplot reads up to four digits after "\0" and three
-- after "\1".."\3", so bytes below 0100 take four digits: a digit after one is a digit.
local function escape(c)
  local b = c:byte()
  return b < 64 and ("\\0%03o"):format(b) or ("\\%03o"):format(b)
end
local function quote(s)
  s = tostring(s)
  assert(not s:find("\0", 1, true), "a NUL byte reached gnuplot")
  return '"' .. s:gsub("[^%w %-_.,:;+*/=()<>!?%%&|~^{}%[%]]", escape) .. '"'
end

-- A shell word.
local function shq(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- ---- gnuplot ---------------------------------------------------------------------------------

local function gnuplot_path(o, fname)
  local bin = o.gnuplot or os.getenv("GPULUA_GNUPLOT") or "gnuplot"
  if not os.execute("command -v " .. shq(bin) .. " >/dev/null 2>&1") then
    options.raise("gpu.plot.%s: gnuplot not found (%s; install the Debian package gnuplot-nox)", fname, bin)
  end
  return bin
end

local function read_file(p)
  local f = io.open(p, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

-- Runs a script; returns what gnuplot wrote on stdout. Raises with its stderr on failure.
local function run(bin, script, fname)
  local sp, ep = os.tmpname(), os.tmpname()
  local f = assert(io.open(sp, "wb"))
  f:write(script)
  f:close()
  local p = io.popen(shq(bin) .. " " .. shq(sp) .. " 2>" .. shq(ep), "r")
  local out = p:read("a")
  local ok, _, code = p:close()
  local err = read_file(ep)
  os.remove(sp)
  os.remove(ep)
  if not ok then
    err = err:gsub('"' .. sp:gsub("%p", "%%%0") .. '"', "script"):gsub("%s+$", "")
    options.raise("gpu.plot.%s: gnuplot failed (exit %s): %s", fname, tostring(code), err ~= "" and err or "no message")
  end
  return out
end

local terminals_cache = {}
local function has_terminal(bin, name)
  if terminals_cache[bin] == nil then
    local p = io.popen(shq(bin) .. " -e 'set terminal' 2>&1", "r")
    terminals_cache[bin] = p:read("a")
    p:close()
  end
  return terminals_cache[bin]:find("%f[%w]" .. name .. "%f[%W]") ~= nil
end

local function screen_size()
  local cols, lines = tonumber(os.getenv("COLUMNS") or ""), tonumber(os.getenv("LINES") or "")
  if not cols then
    local p = io.popen("stty size 2>/dev/null", "r")
    local s = p and p:read("a") or ""
    if p then p:close() end
    local l, c = s:match("(%d+)%s+(%d+)")
    cols, lines = tonumber(c), lines or tonumber(l)
  end
  return cols or 80, lines or 24
end

local sixel_terms = { mlterm = true, yaft = true, foot = true, contour = true, wezterm = true }
local function wants_sixel()
  if os.getenv("GPULUA_SIXEL") == "1" then return true end
  local term = os.getenv("TERM") or ""
  return term:find("sixel") ~= nil or sixel_terms[term:match("^[%w]+") or ""] == true
end

-- Where the plot goes: the terminal line and the output line of the script, and whether
-- gnuplot's stdout is the picture (drawn on the screen). panels stacks plots (history).
local function target(o, bin, panels)
  panels = panels or 1
  if o.file then
    local ext = o.file:lower():match("%.(%w+)$")
    local w, h = o.width or 640, o.height or math.max(480, 300 * panels)
    local term
    if ext == "svg" then term = ("svg size %d,%d noenhanced"):format(w, h)
    elseif has_terminal(bin, "pngcairo") then term = ("pngcairo size %d,%d noenhanced"):format(w, h)
    else term = ("png size %d,%d noenhanced"):format(w, h) end
    return "set terminal " .. term .. "\nset output\n", false
  end
  local kind = o.terminal or (wants_sixel() and "sixel" or "dumb")
  if kind == "sixel" then
    local w, h = o.width or 640, o.height or math.max(480, 300 * panels)
    return ("set terminal sixelgd size %d,%d noenhanced\nset output\n"):format(w, h), true
  end
  local cols, lines = screen_size()
  local w, h = o.width or cols, o.height or math.max(12, math.min(lines - 1, 24)) * (panels > 1 and panels or 1)
  return ("set terminal dumb size %d,%d noenhanced\nset output\n"):format(w, h), true
end

local function labels(o)
  local s = {}
  if o.title then s[#s + 1] = "set title " .. quote(o.title) end
  if o.xlabel then s[#s + 1] = "set xlabel " .. quote(o.xlabel) end
  if o.ylabel then s[#s + 1] = "set ylabel " .. quote(o.ylabel) end
  return table.concat(s, "\n") .. "\n"
end

-- A datablock of rows of numbers: name, then the columns (lists of equal length).
local function datablock(name, ...)
  local cols = { ... }
  local rows = { "$" .. name .. " << EOD" }
  for i = 1, #cols[1] do
    local r = {}
    for j = 1, #cols do r[j] = num(cols[j][i]) end
    rows[#rows + 1] = table.concat(r, " ")
  end
  rows[#rows + 1] = "EOD"
  return table.concat(rows, "\n") .. "\n"
end

local function range(n)
  local t = {}
  for i = 1, n do t[i] = i end
  return t
end

-- Draws: runs the script and writes what comes back for the screen.
-- A file's picture comes back on gnuplot's standard output and is saved as every save
-- (a temporary made with mkstemp, fsync, rename; through a link, the file it points to):
-- a failed plot leaves an existing file as it was, and a target that exists but is not a
-- regular file (a directory, a FIFO) is refused, never replaced, before gnuplot runs.
local function draw(fname, o, bin, body, panels)
  if o.file and os.execute("test -e " .. shq(o.file) .. " && test ! -f " .. shq(o.file)) then
    options.raise("gpu.plot.%s: '%s': not a regular file: refusing to replace it", fname, o.file)
  end
  local term, screen = target(o, bin, panels)
  local out = run(bin, term .. body, fname)
  if o.file then
    local ok, err = pcall(gpu._save_bytes, o.file, out, "plot." .. fname)
    if not ok then options.raise("%s", tostring(err)) end
  end
  if screen then
    if term:find("terminal dumb", 1, true) then out = out:gsub("\f", "") end   -- a form feed starts each page
    io.write(out)
    io.flush()
  end
end

-- series: list of {name =, x =, y =}; style: gnuplot's "with" clause.
local function series_plot(fname, o, series, style)
  local bin = gnuplot_path(o, fname)
  local named = false
  for _, s in ipairs(series) do named = named or s.name ~= nil end
  local body = { labels(o) }
  local legend = o.legend
  if legend == nil then legend = named end
  body[#body + 1] = legend and "set key below\n" or "unset key\n"
  local items = {}
  for i, s in ipairs(series) do
    body[#body + 1] = datablock("d" .. i, s.x, s.y)
    items[#items + 1] = ("$d%d using 1:2 with %s title %s"):format(i, style, quote(s.name or ("series " .. i)))
  end
  body[#body + 1] = "plot " .. table.concat(items, ", ") .. "\n"
  draw(fname, o, bin, table.concat(body))
end

-- One series from y (and x): lengths checked.
local function make_series(fname, argn, y, x, name)
  if name and name:find("\0", 1, true) then
    options.argerror(fname, argn, "series name '%s': contains a NUL byte, which gnuplot cannot show",
      (name:gsub("\0", "\\0")))
  end
  local ys = numbers(y, fname, argn, "y")
  local xs = x ~= nil and numbers(x, fname, argn, "x") or range(#ys)
  if #xs ~= #ys then
    options.argerror(fname, argn, "x has %d values and y has %d", #xs, #ys)
  end
  if #ys == 0 then options.argerror(fname, argn, "nothing to plot (no values)") end
  return { name = name, x = xs, y = ys }
end

-- ---- the plots -------------------------------------------------------------------------------

-- plot(y [, x] [, opts])
function M.plot(y, x, opts)
  local argn = 3
  if opts == nil and type(x) == "table" and not options.is_array(x) and not is_list_of_numbers(x) then
    x, opts = nil, x
    argn = 2
  end
  local o = PLOT:check(opts, argn)
  local series = {}
  if options.is_array(y) or is_list_of_numbers(y) then
    series[1] = make_series("plot.plot", 1, y, x)
  elseif type(y) == "table" and #y > 0 then
    if x ~= nil then options.argerror("plot.plot", 2, "x goes inside each series ({name, x, y}) when y is a list of series") end
    for i, s in ipairs(y) do
      if options.is_array(s) then
        series[i] = make_series("plot.plot", 1, s)
      elseif type(s) == "table" and type(s[1]) == "string" and (#s == 2 or #s == 3) then
        series[i] = #s == 2 and make_series("plot.plot", 1, s[2], nil, s[1]) or make_series("plot.plot", 1, s[3], s[2], s[1])
      else
        options.argerror("plot.plot", 1, "series %d: a 1-D gpu.array, {name, y} or {name, x, y} expected, got %s",
          i, options.type_name(s))
      end
    end
  else
    options.argerror("plot.plot", 1, "a 1-D gpu.array, a list of numbers or a list of series expected, got %s",
      options.type_name(y))
  end
  series_plot("plot", o, series, o.style)
end

-- scatter(x, y [, opts])
function M.scatter(x, y, opts)
  local o = SCATTER:check(opts, 3)
  if y == nil then options.argerror("plot.scatter", 2, "y expected, got no value") end
  local s = make_series("plot.scatter", 1, y, x)
  series_plot("scatter", o, { s }, "points pt 7 ps 0.6")
end

-- hist(x [, {bins =, min =, max =}]): the counts of bins equal bins over [min, max]
-- (default: the finite values' range); the last bin holds max.
function M.hist(x, opts)
  local o = HIST:check(opts, 2)
  if options.is_array(x) then
    options.check_array(x, "plot.hist", 1, "x")
    x = x:contiguous():reshape(x.size)
  end
  local v = numbers(x, "plot.hist", 1, "x")
  local lo, hi = o.min, o.max
  for _, e in ipairs(v) do
    if e == e and e ~= math.huge and e ~= -math.huge then
      if o.min == nil and (lo == nil or e < lo) then lo = e end
      if o.max == nil and (hi == nil or e > hi) then hi = e end
    end
  end
  if lo == nil or hi == nil then options.argerror("plot.hist", 1, "no finite values to count") end
  if hi < lo then options.argerror("plot.hist", 2, "min (%s) is above max (%s)", num(lo), num(hi)) end
  if hi == lo then lo, hi = lo - 0.5, hi + 0.5 end
  local width = (hi - lo) / o.bins
  local counts = {}
  for i = 1, o.bins do counts[i] = 0 end
  for _, e in ipairs(v) do
    if e >= lo and e <= hi then
      local b = math.min(o.bins, math.floor((e - lo) / width) + 1)
      counts[b] = counts[b] + 1
    end
  end
  local centers = {}
  for i = 1, o.bins do centers[i] = lo + (i - 0.5) * width end
  local bin = gnuplot_path(o, "hist")
  local body = labels(o) .. (o.legend and "set key below\n" or "unset key\n")
    .. ("set boxwidth %s\nset style fill solid 0.5\nset yrange [0:*]\n"):format(num(width))
    .. datablock("d", centers, counts) .. "plot $d using 1:2 with boxes title 'count'\n"
  draw("hist", o, bin, body)
end

-- The dumb terminal has no pixels: m drawn as a ramp of characters, darkest to lightest.
local RAMP = " .:-=+*#%@"
local function ramp_image(o, rows, lo, hi)
  local h, w = #rows, #rows[1]
  local cols, lines = screen_size()
  local W = math.min(w * 2, o.width or cols)
  local H = math.min(h, o.height or math.max(4, lines - 2))
  local out = {}
  if o.title then out[#out + 1] = o.title end
  for r = 1, H do
    local line = {}
    for c = 1, W do
      local e = rows[math.floor((r - 1) * h / H) + 1][math.floor((c - 1) * w / W) + 1]
      local t = (hi > lo and e == e) and (e - lo) / (hi - lo) or 0
      local k = math.floor(math.max(0, math.min(1, t)) * (#RAMP - 1) + 0.5) + 1
      line[c] = RAMP:sub(k, k)
    end
    out[#out + 1] = table.concat(line)
  end
  io.write(table.concat(out, "\n"), "\n")
  io.flush()
end

-- imagesc(m [, {palette =}]): a 2-D array, row 1 at the top, scaled to its range.
function M.imagesc(m, opts)
  local o = IMAGESC:check(opts, 2)
  options.check_array(m, "plot.imagesc", 1, "m")
  if m.ndim ~= 2 or m.size == 0 then
    options.argerror("plot.imagesc", 1, "a non-empty 2-D array expected, got shape %s", options.shape_str(m.shape))
  end
  local rows = m:astype("float64"):cpu():totable()
  local lo, hi
  for _, r in ipairs(rows) do
    for _, e in ipairs(r) do
      if e == e then lo, hi = math.min(lo or e, e), math.max(hi or e, e) end
    end
  end
  lo, hi = lo or 0, hi or 0
  if not o.file and (o.terminal or (wants_sixel() and "sixel" or "dumb")) == "dumb" then
    return ramp_image(o, rows, lo, hi)
  end
  local bin = gnuplot_path(o, "imagesc")
  local lines = { "$m << EOD" }
  for _, r in ipairs(rows) do
    local t = {}
    for j, e in ipairs(r) do t[j] = num(e) end
    lines[#lines + 1] = table.concat(t, " ")
  end
  lines[#lines + 1] = "EOD"
  local h, w = #rows, #rows[1]
  local body = labels(o) .. "unset key\n"
    .. (o.palette == "gray" and "set palette gray\n" or "set palette rgbformulae 33,13,10\n")
    .. ("set xrange [0.5:%d.5]\nset yrange [%d.5:0.5]\nset size ratio -1\n"):format(w, h)
    .. table.concat(lines, "\n") .. "\nplot $m using ($1+1):($2+1):3 matrix with image\n"
  draw("imagesc", o, bin, body)
end

-- history(h [, opts]): what fit returns ({loss = {...}, accuracy = {...}, val_loss = ...},
-- or an object holding it as .history): a panel per metric, train and validation.
function M.history(h, opts)
  local o = HISTORY:check(opts, 2)
  if type(h) ~= "table" then options.argerror("plot.history", 1, "fit's history (a table) expected, got %s", options.type_name(h)) end
  if h.loss == nil and type(h.history) == "table" then h = h.history end
  local names = {}
  for k, v in pairs(h) do
    if type(k) == "string" and not k:match("^val_") and is_list_of_numbers(v) and k ~= "skipped" then
      names[#names + 1] = k
    end
  end
  table.sort(names, function(a, b)
    if (a == "loss") ~= (b == "loss") then return a == "loss" end
    return a < b
  end)
  if #names == 0 then options.argerror("plot.history", 1, "no metric in the history (expected lists such as loss = {...})") end
  for _, k in ipairs(names) do
    if k:find("\0", 1, true) then
      options.argerror("plot.history", 1, "metric '%s': contains a NUL byte, which gnuplot cannot show",
        (k:gsub("\0", "\\0")))
    end
  end
  local bin = gnuplot_path(o, "history")
  local body = { ("set multiplot layout %d,1%s\n"):format(#names, o.title and (" title " .. quote(o.title)) or "") }
  body[#body + 1] = "set key below\n"
  body[#body + 1] = "set xlabel " .. quote(o.xlabel or "epoch") .. "\n"
  if #h[names[1]] <= 20 then body[#body + 1] = "set xtics 1\n" end   -- whole epochs
  for i, k in ipairs(names) do
    local train = h[k]
    local items = {}
    body[#body + 1] = "set title " .. quote(k) .. "\n"
    body[#body + 1] = datablock("t" .. i, range(#train), train)
    items[1] = ("$t%d using 1:2 with linespoints title 'train'"):format(i)
    local val = h["val_" .. k]
    if is_list_of_numbers(val) then
      body[#body + 1] = datablock("v" .. i, range(#val), val)
      items[2] = ("$v%d using 1:2 with linespoints title 'validation'"):format(i)
    end
    body[#body + 1] = "plot " .. table.concat(items, ", ") .. "\n"
  end
  body[#body + 1] = "unset multiplot\n"
  draw("history", o, bin, table.concat(body), #names)
end

return options.count_all("plot.", M)

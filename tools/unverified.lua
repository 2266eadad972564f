-- tools/unverified.lua — the ledger of GPU code that has not run on a GPU in its present form.
--
--   lua5.4 tools/unverified.lua                 print doc/UNVERIFIED.md as the tree makes it
--   lua5.4 tools/unverified.lua --check FILE    exit 1 (naming the first difference) when FILE
--                                               is not what the tree makes
--   lua5.4 tools/unverified.lua --record DATE DEVICE
--                                               print the record lines of the tree as it is, to
--                                               append to bench/gpu-ran.tsv after its cuda
--                                               specs passed on a GPU
--
-- The GPU side is every file of src/backend/cuda and of kernels/ (the .cu files and the
-- headers whose math both gcc and nvcc compile). Each top-level function of those files is
-- found by its definition (a line at column 0 that opens a parameter list, up to the brace
-- that closes its body), and each macro of several lines (an op list, a stamp) by its
-- #define; each is fingerprinted with
-- comments and white space left out, so a reworded comment changes nothing and any change to
-- the code does. bench/gpu-ran.tsv lists, for each run on a GPU whose cuda specs passed, the
-- fingerprint of every function that was in the build (date, device, path, function,
-- fingerprint). A function whose present fingerprint is in that list has run in this form;
-- every other one is listed as not run. Being in a build whose suite passed on a GPU says the
-- file's paths ran, not that each function was called: the record is per build.
-- Plain Lua 5.4, no modules: it runs under lua5.4 and under gpulua from the repository root.

local SOURCES = { "src/backend/cuda", "kernels" }
local RECORD = "bench/gpu-ran.tsv"
local ATTRIBUTES = { __launch_bounds__ = true, __attribute__ = true, __align__ = true, __declspec = true }

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function gpu_files()
  local files = {}
  for _, dir in ipairs(SOURCES) do
    local p = assert(io.popen("ls -1 " .. dir .. " 2>/dev/null"))
    for name in p:lines() do
      local take = dir == "kernels" and (name:match("%.cu$") or name:match("%.cuh$") or name:match("%.h$"))
                   or (dir ~= "kernels" and (name:match("%.[ch]$")))
      if take then files[#files + 1] = dir .. "/" .. name end
    end
    p:close()
  end
  table.sort(files)
  return files
end

-- The code of a piece of C without comments, string contents kept, white space dropped.
local function code_only(text)
  text = text:gsub("/%*.-%*/", " "):gsub("//[^\n]*", " ")
  return (text:gsub("%s+", ""))
end

-- FNV-1a, 64 bits (Lua's integers wrap), as 16 hex digits.
local function fingerprint(s)
  local h = -3750763034362895579            -- 0xcbf29ce484222325
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = h * 1099511628211
  end
  return string.format("%016x", h)
end

-- The top-level functions of a C or CUDA file: { name, line, fingerprint } in file order.
-- A definition starts at a column-0 line holding "name(" that is not a preprocessor line,
-- a comment, a declaration ending in ';' or a macro's continuation, and ends where the
-- braces of its body balance.
local function functions(path)
  local text = read(path)
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local out, i, n = {}, 1, #lines
  local in_comment = false
  while i <= n do
    local l = lines[i]
    local continued = i > 1 and lines[i - 1]:match("\\%s*$")
    if in_comment then
      if l:find("%*/") then in_comment = false end
      i = i + 1
    elseif l:match("^/%*") and not l:find("%*/") then
      in_comment = true
      i = i + 1
    elseif l:match("^#%s*define%s+[%w_]+.*\\%s*$") then
      -- a macro over several lines (an op list, a stamp): its body is code as much as a
      -- function's, so a new row of an X-macro list is a change
      local j = i
      while j < n and lines[j]:match("\\%s*$") do j = j + 1 end
      out[#out + 1] = { name = l:match("^#%s*define%s+([%w_]+)"), line = i,
                        fp = fingerprint(code_only(table.concat(lines, "\n", i, j))) }
      i = j + 1
    elseif not continued and l:match("^[%a_]") and not l:match("^#") and l:find("[%w_]%s*%(")
           and not l:match("^typedef") and not l:match("^struct%s+[%w_]+%s*{") then
      -- the header runs to the line that opens the body; a ';' first means a declaration
      local j, body = i, nil
      while j <= n and j < i + 12 do
        local h = lines[j]:gsub("//.*", "")
        if j > i and (h:match("^%s*$") or h:match("^#")) then break end   -- a macro's use, not a definition
        if h:find("{") then body = j break end
        if h:find(";%s*$") then break end
        j = j + 1
      end
      if body then
        -- the body ends where its braces balance (strings, characters and comments aside)
        local k, depth = body, 0
        while k <= n do
          local c = lines[k]:gsub("\\.", ""):gsub('"[^"]*"', ""):gsub("'[^']*'", "")
                            :gsub("/%*.-%*/", ""):gsub("//.*", "")
          local _, opens = c:gsub("{", "")
          local _, closes = c:gsub("}", "")
          depth = depth + opens - closes
          if depth <= 0 and opens + closes > 0 then break end
          k = k + 1
        end
        local head = table.concat(lines, "\n", i, body)
        local name = "?"
        for id in head:gsub("/%*.-%*/", ""):gmatch("([%a_][%w_]*)%s*%b()") do
          if not ATTRIBUTES[id] then name = id break end
        end
        out[#out + 1] = { name = name, line = i,
                          fp = fingerprint(code_only(table.concat(lines, "\n", i, k))) }
        i = k + 1
      else
        i = j + 1
      end
    else
      i = i + 1
    end
  end
  return out
end

local function load_record()
  local ran, runs = {}, {}
  local text = read(RECORD) or ""
  for line in text:gmatch("[^\n]+") do
    if not line:match("^#") then
      local date, device, path, name, fp = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t([^\t]+)\t(%x+)$")
      assert(date, RECORD .. ": a line is not date, device, path, function, fingerprint: " .. line)
      local key = path .. "\0" .. name .. "\0" .. fp
      ran[key] = ran[key] or (date .. ", " .. device)
      runs[date .. ", " .. device] = true
    end
  end
  local list = {}
  for r in pairs(runs) do list[#list + 1] = r end
  table.sort(list)
  return ran, list
end

local function ledger()
  local ran, runs = load_record()
  local o = {}
  local function w(s) o[#o + 1] = s end
  w("# GPU code not run on a GPU in its present form")
  w("")
  w("Generated by `make unverified` (tools/unverified.lua) from the sources and")
  w("bench/gpu-ran.tsv; spec/unverified_spec.lua fails when this file differs from what the")
  w("tree makes. Do not edit it: change the code, or record a GPU run (doc/HACKING.md,")
  w("\"Running on a lent GPU\"), then `make unverified`.")
  w("")
  w("A function (or a macro of several lines: an op list, a stamp) counts as run when a build")
  w("holding it in this very form (comments and white space aside) passed its cuda specs on a")
  w("GPU. Runs on record: " ..
    (#runs > 0 and table.concat(runs, "; ") or "none") .. ".")
  w("Everything else below has been compiled (nvcc, warning-free) and, for kernels, run on")
  w("the CPU by kemu (`make test-kemu`), which is no substitute for a GPU.")
  w("")
  local total, never, rows = 0, 0, {}
  for _, path in ipairs(gpu_files()) do
    local fns = functions(path)
    local not_run, done = {}, 0
    for _, f in ipairs(fns) do
      total = total + 1
      if ran[path .. "\0" .. f.name .. "\0" .. f.fp] then
        done = done + 1
      else
        never = never + 1
        not_run[#not_run + 1] = "`" .. f.name .. "`"
      end
    end
    if #fns > 0 then rows[#rows + 1] = { path = path, n = #fns, done = done, not_run = not_run } end
  end
  w(string.format("%d of %d functions have not run on a GPU in their present form.", never, total))
  w("")
  w("| file | functions | run as they are |")
  w("|---|---:|---:|")
  for _, r in ipairs(rows) do
    w(string.format("| %s | %d | %d |", r.path, r.n, r.done))
  end
  w("")
  w("## Not run, by file")
  for _, r in ipairs(rows) do
    if #r.not_run > 0 then
      w("")
      w("- " .. r.path .. ": " .. table.concat(r.not_run, ", "))
    end
  end
  return table.concat(o, "\n") .. "\n"
end

local mode = arg[1]
if mode == "--record" then
  local date, device = assert(arg[2], "--record DATE DEVICE"), assert(arg[3], "--record DATE DEVICE")
  for _, path in ipairs(gpu_files()) do
    for _, f in ipairs(functions(path)) do
      io.write(date, "\t", device, "\t", path, "\t", f.name, "\t", f.fp, "\n")
    end
  end
elseif mode == "--check" then
  local file = assert(arg[2], "--check FILE")
  local want, have = ledger(), read(file)
  if want ~= have then
    local wl, hl = {}, {}
    for l in want:gmatch("([^\n]*)\n") do wl[#wl + 1] = l end
    for l in (have or ""):gmatch("([^\n]*)\n") do hl[#hl + 1] = l end
    local i = 1
    while wl[i] == hl[i] do i = i + 1 end
    io.stderr:write(string.format("%s is stale (run make unverified): line %d is\n  %s\nwhere the tree makes\n  %s\n",
      file, i, tostring(hl[i]), tostring(wl[i])))
    os.exit(1)
  end
elseif mode == nil then
  io.write(ledger())
else
  io.stderr:write("usage: lua5.4 tools/unverified.lua [--check FILE | --record DATE DEVICE]\n")
  os.exit(2)
end

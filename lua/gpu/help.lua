-- gpu.help — doc/API.md's entry for a function or a name, from the copy of doc/API.md
-- compiled into gpulua and gpu.so (the Makefile makes it the Lua part gpu._apidoc).
--
--   gpu.help(gpu.matmul)      prints the table row of gpu.matmul (and x:matmul)
--   gpu.help("nn.Linear")     by name: "gpu.nn.Linear", "nn.Linear", "Linear", "x:sum"
--   gpu.help(gpu.nn)          a part: its heading, first paragraph and entry names
--   gpu.help()                how to use it, and the sections of the reference
--   gpu.help.text(q)          the text it would print, or nil and the message
--
-- A function value is named by walking the gpu module (its fields, the array methods,
-- the Lua parts already loaded) for the same value; rawget only, nothing is called.
-- An unknown name is answered with the nearest names the reference has.
-- At gpulua's prompt `help` is a global for gpu.help.
local distance = require("gpu.options").distance

local M = {}

local WIDTH = 78

-- "gpu.nn.Linear" -> "nn.Linear", "x:matmul" -> "matmul": the key a name is found by
local function key(name)
  return (name:gsub("^gpu%.", ""):gsub("^[%a_][%w_]*:", ""))
end

-- The reference's entries: { names = {...}, head = first cell, text = description,
-- section = heading }, and an index key -> list of entries.
-- chapters: "## " headings that name a part (`gpu.nn`): part -> { head, intro, entries }
local entries, index, sections, chapters
local function load()
  if entries then return end
  entries, index, sections, chapters = {}, {}, {}, {}
  local section, chapter = "", nil
  for line in (require "gpu._apidoc"):gmatch("[^\n]*") do
    local level, h = line:match("^(#+)%s+(.*)")
    if h then
      section = h
      sections[#sections + 1] = h
      if level == "##" then
        local part = h:match("^[^`]*`gpu%.([%w_]+)`")
        chapter = part and not chapters[part] and { head = h, intro = {}, entries = {} } or nil
        if chapter then chapters[part] = chapter end
      end
    elseif chapter and section == chapter.head and not chapter.read then
      if line:match("^%s*$") or line:match("^|") then     -- the first paragraph only
        chapter.read = #chapter.intro > 0 or line:match("^|") ~= nil
      else
        chapter.intro[#chapter.intro + 1] = line
      end
    end
    local head, text = line:match("^|%s*(.-)%s*|%s*(.-)%s*|%s*$")
    if head and not head:match("^%-*$") and head ~= "Function" and head:find("`", 1, true) then
      local e = { head = head, text = text, section = section, names = {} }
      if chapter then chapter.entries[#chapter.entries + 1] = e end
      for code in head:gmatch("`([^`]*)`") do
        local name = code:match("^[%a_][%w_.:]*")
        if name then
          e.names[#e.names + 1] = name
          local k = key(name)
          index[k] = index[k] or {}
          local list = index[k]
          if list[#list] ~= e then list[#list + 1] = e end
        end
      end
      entries[#entries + 1] = e
    end
  end
end

-- The name of a value of the gpu module ("matmul", "nn.Linear"), or nil.
local function name_of(v)
  local gpu = package.loaded.gpu
  local seen = {}
  local function walk(t, prefix, depth)
    if seen[t] or depth > 3 then return nil end
    seen[t] = true
    local keys = {}
    for k in next, t do if type(k) == "string" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do if rawequal(rawget(t, k), v) then return prefix .. k end end
    for _, k in ipairs(keys) do
      local f = rawget(t, k)
      if type(f) == "table" and k:sub(1, 1) ~= "_" then
        local found = walk(f, prefix .. k .. ".", depth + 1)
        if found then return found end
      end
    end
  end
  local found = walk(gpu, "", 1)
  if found then return found end
  for name, part in pairs(package.loaded) do
    local short = name:match("^gpu%.(.+)")
    if short and type(part) == "table" then
      found = walk(part, short .. ".", 2)
      if found then return found end
    end
  end
  local methods = rawget(gpu, "methods")
  return type(methods) == "table" and walk(methods, "", 1) or nil
end

local function wrap(text, indent)
  local lines, line = {}, indent
  for word in text:gmatch("%S+") do
    if #line > #indent and #line + 1 + #word > WIDTH then
      lines[#lines + 1] = line
      line = indent .. word
    else
      line = line .. (#line > #indent and " " or "") .. word
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

local function show(e)
  local out = e.head:gsub("`", "") .. "\n"
  if e.text ~= "" then out = out .. wrap(e.text:gsub("`", ""), "  ") .. "\n" end
  return out .. "  (doc/API.md: " .. e.section .. ")\n"
end

local function nearest(k, n)
  local all = {}
  for name in pairs(index) do all[#all + 1] = name end
  local lk = k:lower()
  local function score(name)
    local ln = name:lower()
    return (ln:find(lk, 1, true) and 0 or 100) + distance(lk, ln)
  end
  local scores = {}
  for _, name in ipairs(all) do scores[name] = score(name) end
  table.sort(all, function(a, b)
    if scores[a] ~= scores[b] then return scores[a] < scores[b] end
    return a < b
  end)
  return { table.unpack(all, 1, math.min(n, #all)) }
end

-- a part of gpu (help(gpu.nn), help("optim")): its heading, its introduction, its names
local function show_chapter(c)
  local names = {}
  for _, e in ipairs(c.entries) do names[#names + 1] = e.names[1] end
  local intro = table.concat(c.intro, " "):gsub("`", "")
  return c.head:gsub("`", "") .. "\n" .. (intro:match("%S") and wrap(intro, "  ") .. "\n" or "") ..
         wrap("Entries: " .. table.concat(names, ", "), "  ") .. "\n"
end

local function usage()
  local out = { "help(f) or help(\"name\"): the entry of doc/API.md for a function of gpu",
                "(help(gpu.matmul), help(\"nn.Linear\"), help(\"x:sum\")). Sections:" }
  for _, s in ipairs(sections) do out[#out + 1] = "  " .. s end
  return table.concat(out, "\n") .. "\n"
end

-- text(q): the entries of q (a name or a value of the gpu module), or nil and a message
function M.text(q)
  load()
  if q == nil then return usage() end
  local name = q
  if type(q) ~= "string" then
    name = name_of(q)
    if not name then return nil, ("help: %s is not a function or table of the gpu module"):format(tostring(q)) end
  end
  local k = key(name)
  if chapters[k] then return show_chapter(chapters[k]) end
  local list = index[k]
  if not list then       -- a last component alone: "Linear" for nn.Linear
    for other, l in pairs(index) do
      if other:match("[.:]([%w_]+)$") == k then list = l break end
    end
  end
  if not list then
    return nil, ("help: no entry for '%s' in doc/API.md; nearest: %s"):format(name, table.concat(nearest(k, 5), ", "))
  end
  local out = {}
  for i, e in ipairs(list) do out[i] = show(e) end
  return table.concat(out, "\n")
end

-- names(): every name the reference has an entry for (keys: "matmul", "nn.Linear", ...)
function M.names()
  load()
  local out = {}
  for k in pairs(index) do out[#out + 1] = k end
  table.sort(out)
  return out
end

require("gpu.options").count_all("help.", M)
return setmetatable(M, {
  __call = function(_, q)
    local text, err = M.text(q)
    io.write(text or (err .. "\n"))
  end,
})

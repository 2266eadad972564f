-- gpu.repl — what gpulua's interactive prompt adds to Lua's (after Torch7's trepl):
--
--   candidates(word [, env])  Tab completion: every global, keyword, table field, array
--                             method or property that extends `word` ("gpu.rando",
--                             "x:ma", "gpu.nn.Lin"), as full words, sorted
--   pretty(v)                 a value as text: tables as {1, 2, a = {b = "x"}} (sequence
--                             first, then sorted keys, strings %q-quoted, a depth and an
--                             item limit, <cycle> for a table inside itself); anything
--                             with __tostring, and every non-table, as tostring(v)
--   print(...)                what the prompt shows for an expression's values
--   printed(v)                a function that printed a report (summary, profile,
--                             bench) and returns it calls this, so that the prompt
--                             does not show the same report a second time
--
-- Completion never calls anything the user wrote: tables are read with next/rawget,
-- metatables with debug.getmetatable, and __index is followed only while it is a table
-- (never an __index function, never an array property getter). gpu's own Lua parts
-- that are not loaded yet (gpu.nn before its first use) are listed from
-- package.preload, and required when a completion goes inside them: that runs only
-- gpulua's code.
--
-- The host (src/host/gpulua.c) uses pretty printing only when stdin is a terminal, so
-- piped input (`gpulua -i < file`) prints exactly what lua5.4 prints.
local M = {}

M.pretty_depth = 3     -- tables nested deeper print as {...}
M.pretty_items = 50    -- at most this many entries of one table, then ...
M.width = 78           -- a table longer than this is laid out one entry per line
M.enabled = true       -- false: the prompt prints as lua5.4 does

local KEYWORDS = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
  "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
}

-- The array properties (src/lua/larray.c's push_property): computed by a getter, so
-- they are named here instead of being read.
local ARRAY_PROPERTIES = { "T", "_version", "device", "dtype", "grad", "itemsize", "nbytes", "ndim", "shape", "size" }

local getmetatable = debug and debug.getmetatable or getmetatable

local function is_array(v)
  local mt = type(v) == "userdata" and getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "gpu.array"
end

local function is_identifier(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

-- gpu's Lua parts not loaded yet: gpu.<name> for each package.preload "gpu.<name>"
local function lazy_parts(t, out)
  if t ~= package.loaded.gpu then return end
  for name in pairs(package.preload) do
    local part = name:match("^gpu%.([%a_][%w_]*)$")
    if part then out[part] = true end
  end
end

-- The tables of t's __index chain: t, its metatable's __index table if a table, and so
-- on, each once.
local function index_chain(t)
  local seen = {}
  return function()
    if type(t) ~= "table" or seen[t] then return nil end
    local here = t
    seen[here] = true
    local mt = getmetatable(here)
    t = type(mt) == "table" and rawget(mt, "__index") or nil
    return here
  end
end

-- The string keys of a table, and of the tables its metatables' __index chain reaches.
local function table_keys(t, out)
  for here in index_chain(t) do
    for k in next, here do if is_identifier(k) then out[k] = true end end
    lazy_parts(here, out)
  end
  return out
end

-- The keys after `v.` or `v:` (methods only after `:`).
local function keys_of(v, colon)
  local out = {}
  if is_array(v) then
    local methods = rawget(package.loaded.gpu or {}, "methods")
    if type(methods) == "table" then table_keys(methods, out) end
    if not colon then for _, p in ipairs(ARRAY_PROPERTIES) do out[p] = true end end
    return out
  end
  if type(v) == "string" then v = string end
  if type(v) == "userdata" then   -- a file's methods: its metatable's __index table
    local mt = getmetatable(v)
    v = type(mt) == "table" and rawget(mt, "__index") or nil
  end
  table_keys(v, out)
  if colon then
    for k in pairs(out) do
      local f = M.field(v, k)
      if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f)) then out[k] = nil end
    end
  end
  return out
end

-- t[k] without calling anything: rawget along the __index chain of tables; a gpu Lua
-- part that is not loaded yet is required (gpulua's own code, nothing the user wrote).
function M.field(t, k)
  for here in index_chain(t) do
    local v = rawget(here, k)
    if v ~= nil then return v end
    if here == package.loaded.gpu and package.preload["gpu." .. k] then
      local ok, part = pcall(require, "gpu." .. k)
      return ok and part or nil
    end
  end
  return nil
end

-- The value a dotted path names in env ("gpu.nn" -> env.gpu.nn), or nil.
local function resolve(path, env)
  local v = env
  for name in path:gmatch("[^.]+") do
    v = M.field(v, name)
    if v == nil then return nil end
  end
  return v
end

local function sorted(set)
  local list = {}
  for k in pairs(set) do list[#list + 1] = k end
  table.sort(list)
  return list
end

-- candidates(word [, env]): the completions of word (full words, sorted, no duplicates).
-- word is what the terminal treats as one word: a name, or names joined by . and one :.
function M.candidates(word, env)
  env = env or _G
  local head, sep, tail = word:match("^(.-)([.:])([%w_]*)$")
  local prefix, pool
  if head and head:match("^[%a_][%w_.]*$") then
    local v = resolve(head, env)
    if v == nil then return {} end
    prefix, pool = head .. sep, keys_of(v, sep == ":")
  elseif word:match("^[%a_]?[%w_]*$") then
    prefix, tail, pool = "", word, table_keys(env, {})
    for _, k in ipairs(KEYWORDS) do pool[k] = true end
  else
    return {}
  end
  local out = {}
  local private = tail:sub(1, 1) == "_"   -- metamethods (__index...) only when asked for
  for _, k in ipairs(sorted(pool)) do
    if k:sub(1, #tail) == tail and (private or k:sub(1, 2) ~= "__") then out[#out + 1] = prefix .. k end
  end
  return out
end

-- ---- pretty printing ----------------------------------------------------------------------

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__tostring") ~= nil
end

-- order of the non-sequence keys: numbers, then strings, then the rest by their text
local KIND = { number = 1, string = 2, boolean = 3 }
local function key_less(a, b)
  local ka, kb = KIND[type(a)] or 4, KIND[type(b)] or 4
  if ka ~= kb then return ka < kb end
  if ka <= 2 then return a < b end
  return tostring(a) < tostring(b)
end

local format

local KEYWORD = {}
for _, w in ipairs(KEYWORDS) do KEYWORD[w] = true end

local function format_key(k)
  if is_identifier(k) and not KEYWORD[k] then return k end
  if type(k) == "string" then return ("[%q]"):format(k) end
  return "[" .. format(k, 1, {}, "") .. "]"
end

-- The entries of a table as text, the sequence 1..n first.
local function entries(t, depth, path, indent)
  local items, n = {}, 0
  local len = 0
  while rawget(t, len + 1) ~= nil do len = len + 1 end
  local rest = {}
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= len) then rest[#rest + 1] = k end
  end
  table.sort(rest, key_less)
  local total = len + #rest
  for i = 1, len do
    if n == M.pretty_items then break end
    n = n + 1
    items[n] = format(rawget(t, i), depth + 1, path, indent)
  end
  for _, k in ipairs(rest) do
    if n == M.pretty_items then break end
    n = n + 1
    items[n] = format_key(k) .. " = " .. format(rawget(t, k), depth + 1, path, indent)
  end
  if total > n then items[n + 1] = "..." end
  return items
end

local function format_table(t, depth, path, indent)
  if path[t] then return "<cycle>" end
  if next(t) == nil then return "{}" end
  if depth > M.pretty_depth then return "{...}" end
  path[t] = true
  local inner = indent .. "  "
  local items = entries(t, depth, path, inner)
  path[t] = nil
  local line = "{" .. table.concat(items, ", ") .. "}"
  if #indent + #line <= M.width and not line:find("\n", 1, true) then return line end
  return "{\n" .. inner .. table.concat(items, ",\n" .. inner) .. "\n" .. indent .. "}"
end

-- format(v, depth, path, indent): v inside a table (strings quoted)
function format(v, depth, path, indent)
  if type(v) == "string" then return (("%q"):format(v):gsub("\\\n", "\\n")) end
  if type(v) == "table" and not has_tostring(v) then return format_table(v, depth, path, indent) end
  return (tostring(v):gsub("\n", "\n" .. indent))   -- an array's rows stay aligned
end

-- pretty(v): the text the prompt shows for v. Strings, numbers and everything with a
-- __tostring show as tostring(v), exactly as lua5.4 prints them.
function M.pretty(v)
  if type(v) == "table" and not has_tostring(v) then return format_table(v, 1, {}, "") end
  return tostring(v)
end

-- ---- what the prompt prints -----------------------------------------------------------------

local shown = {}   -- reports printed during the current evaluation

-- printed(v): v was just printed by the function that returns it; answers v.
function M.printed(v)
  if #shown >= 8 then table.remove(shown, 1) end   -- outside the prompt nobody clears it
  shown[#shown + 1] = v
  return v
end

-- print(...): the values of one evaluation through the global print, each pretty; a
-- value that was printed as a report during the evaluation is left out.
function M.print(...)
  local out, n = {}, 0
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    local skip = false
    for _, s in ipairs(shown) do if rawequal(s, v) then skip = true end end
    if not skip then
      n = n + 1
      out[n] = M.enabled and M.pretty(v) or v
    end
  end
  shown = {}
  if n > 0 then print(table.unpack(out, 1, n)) end
end

return M

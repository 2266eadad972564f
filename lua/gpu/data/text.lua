-- gpu.data.text: a corpus of text files and a character vocabulary (for a character-level
-- language model); gpu.data exports read_text, list_text_files and CharVocab.
--
--   local text, files = gpu.data.read_text("/usr/share/games/fortunes")  -- plain text files, sorted
--   local vocab = gpu.data.CharVocab(text)
--   local ids = vocab:encode(text)          -- int64 (N), ids 1..#vocab (nn.Embedding's 1-based rows)
--   print(vocab:decode(ids[{ {1, 80} }]))
local gpu = require "gpu"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name
local M = {}

local function slurp(fname, path)
  local f, err = io.open(path, "rb")
  if f == nil then raise("%s: cannot read %s (%s)", fname, path, err) end
  local s = f:read("a")
  f:close()
  if s == nil then raise("%s: cannot read %s", fname, path) end
  return s
end

-- binary(s): s holds a NUL byte, or is not UTF-8 and has control bytes other than
-- tab, newline, carriage return, form feed, backspace (fortunes' overstriking) and escape
local function binary(s)
  if s:find("\0", 1, true) then return true end
  if utf8.len(s) == nil and s:find("[\1-\7\14-\26\28-\31]") then return true end
  return false
end
M.is_binary = binary

local function is_dir(path)
  local f = io.open(path, "rb")
  if f == nil then return false end
  local ok, _, code = f:read(1)
  f:close()
  return ok == nil and code == 21                  -- EISDIR
end

-- list_text_files(dir [, {pattern =}]) -> the regular files of dir (no symbolic links, no
-- sub-folders), sorted by name, whose name matches pattern (a Lua pattern) and does not
-- end in .dat
local LIST = options.declare("data.list_text_files", {
  pattern = { type = "string" },
}, { example = "gpu.data.list_text_files('/', %s)" })
function M.list_text_files(dir, opts)
  local fname = "data.list_text_files"
  if type(dir) ~= "string" then argerror(fname, 1, "a folder path expected, got %s", type_name(dir)) end
  local o = LIST:check(opts, 2)
  if not is_dir(dir) then raise("%s: %s is not a folder", fname, dir) end
  local p = io.popen("find '" .. dir:gsub("'", "'\\''") .. "' -mindepth 1 -maxdepth 1 -type f 2>/dev/null")
  local files = {}
  for line in p:lines() do
    local name = line:match("([^/]+)$")
    if name and not name:find("%.dat$") and (o.pattern == nil or name:find(o.pattern)) then files[#files + 1] = line end
  end
  p:close()
  table.sort(files)
  return files
end

-- read_text(paths | dir [, {skip_binary = true, pattern =, separator = ""}]) -> text, files:
-- the files' contents joined in order (a folder: its text files in sorted order, as
-- list_text_files), binary files left out (with skip_binary), and the list of files read
local READ = options.declare("data.read_text", {
  skip_binary = { type = "boolean", default = true }, pattern = { type = "string" },
  separator = { type = "string", default = "" },
}, { example = "gpu.data.read_text({}, %s)" })
function M.read_text(paths, opts)
  local fname = "data.read_text"
  local o = READ:check(opts, 2)
  if type(paths) == "string" then
    if is_dir(paths) then paths = M.list_text_files(paths, { pattern = o.pattern }) else paths = { paths } end
  elseif type(paths) ~= "table" then
    argerror(fname, 1, "a file, a folder or a list of files expected, got %s", type_name(paths))
  end
  local parts, used = {}, {}
  for i, path in ipairs(paths) do
    if type(path) ~= "string" then argerror(fname, 1, "paths[%d] is %s, not a path", i, type_name(path)) end
    local s = slurp(fname, path)
    if not (o.skip_binary and binary(s)) then
      parts[#parts + 1] = s
      used[#used + 1] = path
    end
  end
  return table.concat(parts, o.separator), used
end

-- ---- CharVocab ---------------------------------------------------------------------------------

local CharVocab, is_vocab = options.class("CharVocab", "vocab")
CharVocab.__len = function(self) return #self.itos end
CharVocab.__tostring = function(self) return ("CharVocab(%d characters, %s)"):format(#self.itos, self.mode) end

local VOCAB = options.declare("data.CharVocab", {
  mode = { choices = { "auto", "utf8", "bytes" }, default = "auto" },
  unk = { type = "string" },
}, { example = "gpu.data.CharVocab('abc', %s)" })

-- CharVocab(text | {text, ...} [, {mode = "auto" | "utf8" | "bytes", unk =}]): the
-- distinct characters of the text(s) (UTF-8 code points when every text is valid UTF-8
-- and mode is "auto", else bytes), sorted, with ids 1..#vocab: vocab.itos[id] -> char,
-- vocab.stoi[char] -> id. unk: a character of the vocabulary that encode gives for
-- characters outside it (without it, such a character is an error).
function M.CharVocab(text, opts)
  local fname = "data.CharVocab"
  local texts = type(text) == "string" and { text } or text
  if type(texts) ~= "table" or is_array(texts) then
    argerror(fname, 1, "a string or a list of strings expected, got %s", type_name(text))
  end
  local o = VOCAB:check(opts, 2)
  local mode = o.mode
  for i, t in ipairs(texts) do
    if type(t) ~= "string" then argerror(fname, 1, "texts[%d] is %s, not a string", i, type_name(t)) end
  end
  if mode == "auto" then
    mode = "utf8"
    for _, t in ipairs(texts) do if utf8.len(t) == nil then mode = "bytes" break end end
  elseif mode == "utf8" then
    for i, t in ipairs(texts) do
      local _, bad = utf8.len(t)
      if bad then raise("%s: text %d is not valid UTF-8 (byte %d); use mode = 'bytes'", fname, i, bad) end
    end
  end
  local seen = {}
  for _, t in ipairs(texts) do
    if mode == "bytes" then
      for i = 1, #t do seen[t:sub(i, i)] = true end
    else
      for _, c in utf8.codes(t) do seen[utf8.char(c)] = true end
    end
  end
  local itos = {}
  for c in pairs(seen) do itos[#itos + 1] = c end
  table.sort(itos, function(a, b)
    if mode == "bytes" then return a < b end
    return utf8.codepoint(a) < utf8.codepoint(b)
  end)
  local stoi = {}
  for i, c in ipairs(itos) do stoi[c] = i end
  if o.unk ~= nil and stoi[o.unk] == nil then
    raise("%s: unk = %q is not a character of the vocabulary", fname, o.unk)
  end
  if #itos == 0 then raise("%s: the text is empty: no characters for a vocabulary", fname) end
  return setmetatable({ itos = itos, stoi = stoi, mode = mode, unk = o.unk }, CharVocab)
end

local ENCODE = options.declare("CharVocab:encode", {
  device = { type = "device", what = "a device name (" .. gpu._device_syntax .. ")" },
}, { example = "gpu.data.CharVocab('abc'):encode('cab', %s)" })

-- encode(s [, {device =}]) -> int64 (#chars) of ids 1..#vocab
function CharVocab:encode(s, opts)
  local fname = "CharVocab:encode"
  if type(s) ~= "string" then argerror(fname, 1, "a string expected, got %s", type_name(s)) end
  local o = ENCODE:check(opts, 2)
  local stoi, unk = self.stoi, self.unk and self.stoi[self.unk]
  local parts, ids = {}, {}
  local function flush()
    if #ids > 0 then parts[#parts + 1] = gpu.array(ids, { dtype = "int64" }); ids = {} end
  end
  local function put(c, pos)
    local id = stoi[c] or unk
    if id == nil then raise("%s: character %q at %d is not in the vocabulary (give the vocabulary unk =)", fname, c, pos) end
    ids[#ids + 1] = id
    if #ids >= 1 << 20 then flush() end
  end
  if self.mode == "bytes" then
    local byte_id = {}
    for b = 0, 255 do byte_id[b] = stoi[string.char(b)] or unk or false end
    local n = #s
    for i = 1, n, 4096 do
      local bytes = { s:byte(i, math.min(n, i + 4095)) }
      for k, b in ipairs(bytes) do
        local id = byte_id[b]
        if not id then put(string.char(b), i + k - 1) else
          ids[#ids + 1] = id
        end
      end
      if #ids >= 1 << 20 then flush() end
    end
  else
    local _, bad = utf8.len(s)
    if bad then raise("%s: the string is not valid UTF-8 (byte %d) and the vocabulary's characters are", fname, bad) end
    -- bytes in chunks (a chunk ends at a character's end); ASCII by a table, the rest by
    -- the character's bytes
    local ascii = {}
    for b = 0, 127 do ascii[b] = stoi[string.char(b)] or unk or false end
    local n, i = #s, 1
    while i <= n do
      local j = math.min(n, i + 4095)
      while j < n do
        local nb = s:byte(j + 1)
        if nb < 0x80 or nb >= 0xC0 then break end          -- the next byte starts a character
        j = j + 1
      end
      local bytes = { s:byte(i, j) }
      local k, m = 1, #bytes
      while k <= m do
        local b = bytes[k]
        if b < 0x80 then
          local id = ascii[b]
          if id then ids[#ids + 1] = id else put(string.char(b), i + k - 1) end
          k = k + 1
        else
          local len = b >= 0xF0 and 4 or b >= 0xE0 and 3 or 2
          put(s:sub(i + k - 1, i + k + len - 2), i + k - 1)
          k = k + len
        end
      end
      if #ids >= 1 << 20 then flush() end
      i = j + 1
    end
  end
  flush()
  local out
  if #parts == 0 then out = gpu.zeros(0, { dtype = "int64" })
  elseif #parts == 1 then out = parts[1]
  else out = gpu.concat(parts, 1) end
  if o.device then out = out:to(o.device) end
  return out
end

-- decode(ids) -> the string of ids (a 1-D integer array on any device, or a list)
function CharVocab:decode(ids)
  local fname = "CharVocab:decode"
  if is_array(ids) then
    if ids.ndim > 1 then argerror(fname, 1, "a 1-D array of ids expected, got shape %s", options.shape_str(ids.shape)) end
    if ids.dtype:find("float") or ids.dtype == "bool" then
      argerror(fname, 1, "an integer array of ids expected, got %s", ids.dtype)
    end
    ids = ids.ndim == 0 and { ids:item() } or ids:totable()
  elseif type(ids) == "number" then
    ids = { ids }
  elseif type(ids) ~= "table" then
    argerror(fname, 1, "ids (an integer array or a list) expected, got %s", type_name(ids))
  end
  local out, itos = {}, self.itos
  for i, id in ipairs(ids) do
    local c = itos[id]
    if c == nil then argerror(fname, 1, "id %s at %d is not in 1..%d", tostring(id), i, #itos) end
    out[i] = c
  end
  return table.concat(out)
end

M.CharVocab_class = CharVocab
return M

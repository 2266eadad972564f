-- gpu.serialization — gpu.save(path, t) of a Lua table and gpu.load of what it wrote: a
-- whole training state in one file, as torch.save / torch.load of a dict, e.g.
--   gpu.save("ckpt.pt", { model = m:state_dict(), optimizer = opt:state_dict(),
--                         scheduler = sched:state_dict(), epoch = 7, rng = gpu.random.get_state() })
-- src/lua/lio.c hands gpu.save a table and gpu.load a safetensors file to this part.
--
-- The file is safetensors (any safetensors reader sees the arrays): each distinct array
-- once, named "0", "1", ... in the order first met, and the table itself as JSON under the
-- metadata key "gpulua.tree" (with "gpulua.format" = "1"). A value of the tree is
--   true / false                   a boolean
--   ["s", "..."]                   a string: bytes 0x00-0x1f, '"', '\' and 0x80-0xff escaped
--                                  (\u00XX is the byte XX), so any byte string comes back
--   ["i", "-12"]                   an integer, in decimal (all 64 bits)
--   ["f", "0x1.8p+1"]              a float, in hexadecimal ("inf", "-inf", "nan"): exact
--   ["a", "3"]                     the array "3"
--   ["c", "3"]                     the complex128 array whose real view is "3" (safetensors
--                                  has no complex128)
--   ["t", [k1, v1, k2, v2, ...]]   a table: its keys (strings, numbers, booleans) and values
-- Loading reads only data: the JSON by its own small parser, never `load`; a file gpu.save
-- did not write (no tree, another format number, an array the tree does not name, a
-- damaged tree) is refused with an error naming the fault.
local gpu = require "gpu"
local options = require "gpu.options"

local is_array, raise = options.is_array, options.raise

local M = {}

local FORMAT = "1"
local MAXDEPTH = 200          -- tables nested deeper than this are refused (both ways)

-- ---- saving ---------------------------------------------------------------------------

-- "value.model['0.weight'][3]": where v sits, for messages
local function where(path, k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return path .. "." .. k end
  if type(k) == "string" then return path .. ("[%q]"):format(k) end
  return path .. "[" .. tostring(k) .. "]"
end

local function json_string(s)
  return '"' .. s:gsub('[%c"\\\128-\255]', function(c) return ("\\u%04x"):format(c:byte()) end) .. '"'
end

-- NaN of either sign (0/0's sign is the machine's), as tostring names them
local NAN = 0 / 0
local PLUS_NAN, MINUS_NAN = NAN, -NAN
if tostring(NAN):sub(1, 1) == "-" then PLUS_NAN, MINUS_NAN = -NAN, NAN end

local function float_text(x)
  if x ~= x then return tostring(x):sub(1, 1) == "-" and "-nan" or "nan" end
  if x == math.huge then return "inf" end
  if x == -math.huge then return "-inf" end
  return ("%a"):format(x)
end

-- The JSON of value v (at 'path') into out; arrays met are numbered in arrays/names.
local function encode(v, path, st, depth)
  local tv = type(v)
  if tv == "boolean" then
    st.out[#st.out + 1] = v and "true" or "false"
  elseif tv == "string" then
    st.out[#st.out + 1] = '["s",' .. json_string(v) .. "]"
  elseif math.type(v) == "integer" then
    st.out[#st.out + 1] = ('["i","%d"]'):format(v)
  elseif tv == "number" then
    st.out[#st.out + 1] = '["f","' .. float_text(v) .. '"]'
  elseif is_array(v) then
    if v:is_closed() then raise("%s: %s is a closed array", st.fname, path) end
    local name = st.names[v]
    local complex128 = v.dtype == "complex128"
    if name == nil then
      name = tostring(#st.list)
      st.names[v] = name
      st.list[#st.list + 1] = v
      st.tensors[name] = complex128 and gpu.view_as_real(v:contiguous()) or v
    end
    st.out[#st.out + 1] = '["' .. (complex128 and "c" or "a") .. '","' .. name .. '"]'
  elseif tv == "table" then
    if getmetatable(v) ~= nil then
      raise("%s: %s is an object (a table with a metatable); save its state_dict() or a plain table", st.fname, path)
    end
    if st.open[v] then raise("%s: %s contains itself (a cycle)", st.fname, path) end
    if depth >= MAXDEPTH then raise("%s: %s is nested deeper than %d tables", st.fname, path, MAXDEPTH) end
    st.open[v] = true
    local keys = {}
    for k in next, v do
      local tk = type(k)
      if not (tk == "string" or tk == "number" or tk == "boolean") then
        raise("%s: %s has a key that is a %s (keys must be strings, numbers or booleans)", st.fname, path,
          is_array(k) and "gpu.array" or tk)
      end
      keys[#keys + 1] = k
    end
    -- a stable order: the file is the same for the same table
    table.sort(keys, function(a, b)
      local ta, tb = type(a), type(b)
      if ta ~= tb then return ta < tb end
      if ta == "boolean" then return (not a) and b end
      return a < b
    end)
    st.out[#st.out + 1] = '["t",['
    for i, k in ipairs(keys) do
      if i > 1 then st.out[#st.out + 1] = "," end
      encode(k, path, st, depth + 1)
      st.out[#st.out + 1] = ","
      encode(rawget(v, k), where(path, k), st, depth + 1)
    end
    st.out[#st.out + 1] = "]]"
    st.open[v] = nil
  else
    raise("%s: %s is a %s (arrays, numbers, strings, booleans and tables of them are saved)", st.fname, path, tv)
  end
end

-- The arrays and the metadata of value's file (errors name fname and the value as path).
local function layout(value, fname, path)
  local st = { out = {}, names = {}, list = {}, tensors = {}, open = {}, fname = fname }
  encode(value, path or "value", st, 0)
  return st.tensors, { ["gpulua.format"] = FORMAT, ["gpulua.tree"] = table.concat(st.out) }
end

function M.save(path, value)
  local tensors, meta = layout(value, "gpu.save")  -- every check before the file is touched
  local ok, err = pcall(gpu.save_safetensors, path, tensors, meta)
  if not ok then raise("%s", (tostring(err):gsub("^.-gpu%.save_safetensors: ", "gpu.save: "))) end
end

-- dumps(value [, fname, path]) -> the bytes gpu.save(p, value) writes, as a string; loads
-- of them gives the value back with cpu arrays. A DataLoader's workers send batches so.
function M.dumps(value, fname, path)
  return gpu._safetensors_bytes(layout(value, fname or "serialization.dumps", path))
end

-- ---- loading --------------------------------------------------------------------------

-- A parser of the JSON gpu.save writes (and any JSON of arrays, strings and booleans):
-- fail(what) reports a damaged tree.
local function parse(text, fail)
  local pos = 1
  local function skip() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function str()
    local parts = {}
    pos = pos + 1                                -- the opening quote
    while true do
      local s, e = text:find('["\\%c]', pos)
      if not s then fail("a string without its end") end
      parts[#parts + 1] = text:sub(pos, s - 1)
      local c = text:sub(s, s)
      if c == '"' then
        pos = s + 1
        return table.concat(parts)
      elseif c == "\\" then
        local esc = text:sub(s + 1, s + 1)
        local simple = ({ ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" })[esc]
        if simple then
          parts[#parts + 1] = simple
          pos = s + 2
        elseif esc == "u" then
          local hex = text:sub(s + 2, s + 5)
          local code = #hex == 4 and hex:match("^%x+$") and tonumber(hex, 16)
          if not code or code > 255 then fail("a \\u escape past \\u00ff") end
          parts[#parts + 1] = string.char(code)
          pos = s + 6
        else
          fail("a bad escape")
        end
      else
        fail("a control character in a string")
      end
    end
  end
  function value(depth)
    if depth > MAXDEPTH + 2 then fail("nesting deeper than " .. MAXDEPTH) end
    skip()
    local c = text:sub(pos, pos)
    if c == '"' then return str() end
    if c == "[" then
      pos = pos + 1
      local list = {}
      skip()
      if text:sub(pos, pos) == "]" then
        pos = pos + 1
        return list
      end
      while true do
        list[#list + 1] = value(depth + 1)
        skip()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return list end
        if d ~= "," then fail("a list without ',' or ']'") end
      end
    end
    if text:sub(pos, pos + 3) == "true" then
      pos = pos + 4
      return true
    end
    if text:sub(pos, pos + 4) == "false" then
      pos = pos + 5
      return false
    end
    fail(pos > #text and "an early end" or ("an unexpected character %q"):format(c))
  end
  local v = value(0)
  skip()
  if pos <= #text then fail("text after the end") end
  return v
end

local function number_of(text, fail)
  local tag = type(text) == "string" and text or fail("a number that is not text")
  if tag == "inf" then return math.huge elseif tag == "-inf" then return -math.huge
  elseif tag == "nan" then return PLUS_NAN elseif tag == "-nan" then return MINUS_NAN end
  local x = tag:match("^%-?0x[%x.]+p[-+]?%d+$") and tonumber(tag)
  if math.type(x) ~= "float" then fail("a bad float " .. ("%q"):format(tag)) end
  return x
end

-- The Lua value of parsed node n; arrays from tensors (each marked used).
local function build(n, tensors, used, fail, depth)
  if type(n) == "boolean" then return n end
  if type(n) ~= "table" or type(n[1]) ~= "string" or #n ~= 2 then fail("a value that is not [tag, body]") end
  local tag, body = n[1], n[2]
  if tag == "s" then
    if type(body) ~= "string" then fail("a string that is not text") end
    return body
  elseif tag == "i" then
    local x = type(body) == "string" and body:match("^%-?%d+$") and math.tointeger(tonumber(body))
    if not x or ("%d"):format(x) ~= body then fail("a bad integer " .. ("%q"):format(tostring(body))) end
    return x
  elseif tag == "f" then
    return number_of(body, fail)
  elseif tag == "a" or tag == "c" then
    local x = type(body) == "string" and tensors[body]
    if not x then fail("an array " .. ("%q"):format(tostring(body)) .. " that the file does not hold") end
    used[body] = true
    if tag == "c" then
      if x.dtype ~= "float64" or x.ndim < 1 or x.shape[x.ndim] ~= 2 then fail("a complex128 array stored otherwise") end
      return gpu.view_as_complex(x)
    end
    return x
  elseif tag == "t" then
    if type(body) ~= "table" or #body % 2 ~= 0 then fail("a table whose entries are not key, value pairs") end
    local t = {}
    for i = 1, #body, 2 do
      local k = build(body[i], tensors, used, fail, depth + 1)
      if type(k) == "table" or is_array(k) then fail("a key that is a table or an array") end
      if k ~= k then fail("a key that is NaN") end
      if t[k] ~= nil then fail("a key twice") end
      t[k] = build(body[i + 1], tensors, used, fail, depth + 1)
    end
    return t
  end
  fail("an unknown tag " .. ("%q"):format(tag))
end

-- The value of a file's tensors and metadata (what: the file, for errors).
local function value_of(tensors, meta, path, fname)
  local tree = meta and meta["gpulua.tree"]
  if tree == nil then
    raise("%s: '%s' is a safetensors file that gpu.save did not write (no gpulua tree); " ..
      "gpu.load_safetensors reads its arrays", fname, path)
  end
  if meta["gpulua.format"] ~= FORMAT then
    raise("%s: '%s' is in gpulua's format %s, which this version does not read (it reads %s)", fname, path,
      tostring(meta["gpulua.format"]), FORMAT)
  end
  local function fail(what) raise("%s: '%s': its gpulua tree is damaged (%s)", fname, path, what) end
  local used = {}
  local value = build(parse(tree, fail), tensors, used, fail, 0)
  for name in pairs(tensors) do
    if not used[name] then fail("an array " .. ("%q"):format(name) .. " that the tree does not name") end
  end
  return value
end

function M.load(path, opts)
  local ok, tensors, meta = pcall(gpu.load_safetensors, path, opts)
  if not ok then raise("%s", (tostring(tensors):gsub("^.-gpu%.load_safetensors: ", "gpu.load: "))) end
  return value_of(tensors, meta, path, "gpu.load")
end

function M.loads(bytes)
  local ok, tensors, meta = pcall(gpu._safetensors_parse, bytes)
  if not ok then raise("serialization.loads: %s", (tostring(tensors):gsub("^.-_safetensors_parse: '%(bytes%)': ", ""))) end
  return value_of(tensors, meta, "(bytes)", "serialization.loads")
end

return M

-- gpu.options: how the library's Lua functions declare and read their options (the reader
-- itself is C's, src/lua/largs.c, one for C and Lua), and where they raise their errors.
--
--   local options = require "gpu.options"
--   local DENSE = options.declare("nn.Dense", {
--     activation = { type = "string|function", default = "linear" },
--     use_bias = { type = "boolean", default = true },
--     units = { type = "integer", min = 1 },
--   }, { example = "gpu.nn.Dense(4, %s)" })
--   function Dense:init(units, opts) local o = DENSE:check(opts, 2) ... end
--
-- A declaration names every key a function takes, with its type, range or choices and
-- default. A key is a type string or a table: type (one or more of any, boolean, number,
-- integer, string, table, function, callable, array, dtype, device, joined by '|'),
-- default, min / max (min_open / max_open: the bound itself is out), choices (a list of
-- words), check (function(v) -> ok [, why]: any further rule, run after the others), what
-- (the type as errors say it), unsupported (true or why: a key PyTorch or Keras has that
-- is not implemented here, an error rather than silently ignored). check(opts, argn)
-- returns a new table holding every declared key (the given value, or the default; a
-- dtype under its canonical name) and raises, before the caller has changed anything, on
-- an unknown key (naming the nearest known one), a wrong type or an out-of-range value,
-- in the words the C functions use:
--   bad argument #2 to 'nn.Dense' (unknown option 'activaton'; did you mean 'activation'?)
--   bad argument #2 to 'nn.Dense' (option 'use_bias' must be a boolean, got integer 1)
-- Every declaration, C's included, is listed in gpu._options (name -> {keys =, example =}):
-- spec/options_spec.lua calls each example with an unknown key, so no option goes unchecked.
--
-- Errors raised with options.raise / options.argerror point at the user's line: the
-- first caller outside the library's own Lua files (chunks "@lua/gpu/...") and C
-- functions, not at the library's internals.

local gpu = require "gpu"

local M = {}

-- ---- errors at the user's line --------------------------------------------------------------

-- The level, for error(), of the first frame outside gpu's Lua files and C functions.
local function user_level()
  local level = 3                  -- 1: user_level, 2: raise/argerror, 3: its caller
  while true do
    local info = debug.getinfo(level, "S")
    if info == nil then return 1 end
    local src = info.source
    if not (src:sub(1, 9) == "@lua/gpu/" or info.what == "C") then return level - 1 end
    level = level + 1
  end
end
M.user_level = user_level

-- raise(fmt, ...): error("fmt" formatted) at the user's line.
function M.raise(fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  error(msg, user_level())
end

-- guarded(name, f): f, whose errors name `name`: an error from an op it calls (which names
-- that op, or '?' for a method called by value) is raised again at the user's line as
-- "name: <message>"; one that names the function already passes unchanged.
function M.guarded(name, f)
  local quoted, prefix = "'" .. name .. "'", name .. ":"
  local n = M.nparams(f)
  local function wrapper(...)
    local got = select("#", ...)
    if got > n then M.argerror(name, n + 1, "at most %d argument%s expected, got %d", n, n == 1 and "" or "s", got) end
    local res = table.pack(pcall(f, ...))
    if res[1] then return table.unpack(res, 2, res.n) end
    local msg = res[2]
    if type(msg) ~= "string" or msg:find(quoted, 1, true) or msg:find(prefix, 1, true) then error(msg, 0) end
    msg = msg:gsub("^lua/gpu/[%w_/]+%.lua:%d+: ", "")
    msg = msg:gsub("^bad argument #%d+ to '%?' %((.*)%)$", "%1"):gsub("^calling '%?' on bad self %((.*)%)$", "%1")
    error(prefix .. " " .. msg, user_level())
  end
  if n ~= math.huge then gpu._arity(wrapper, n) end      -- f's count, which counted() keeps
  return wrapper
end

-- call(fname, f, ...): f(...)'s results; an error it raises is raised again at the user's
-- line as "fname: <message>" (less a position inside the library's files), so a failure
-- deep inside (a C function called by the library) names the function the user called.
function M.call(fname, f, ...)
  local res = table.pack(pcall(f, ...))
  if res[1] then return table.unpack(res, 2, res.n) end
  local msg = tostring(res[2]):gsub("^lua/gpu/[%w_/]+%.lua:%d+: ", "")
  error(fname .. ": " .. msg, user_level())
end

-- argerror(fname, argn, fmt, ...): "bad argument #argn to 'fname' (msg)" at the user's line.
function M.argerror(fname, argn, fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  error(("bad argument #%d to '%s' (%s)"):format(argn, fname, msg), user_level())
end

-- ---- what a function takes ------------------------------------------------------------------

-- nparams(f): how many arguments the Lua function f takes: its parameters, or math.huge
-- when it takes '...'.
function M.nparams(f)
  local info = debug.getinfo(f, "u")
  return info.isvararg and math.huge or info.nparams
end

-- counted(name, f [, n]): f, refusing a call with more than n arguments (f's parameters
-- by default) as the C functions do, "bad argument #3 to 'nn.relu' (at most 2 arguments
-- expected, got 3)" at the user's line, and declared in gpu._arity (spec/arity_spec.lua
-- calls it with one more). A function that takes any number is declared and returned as
-- it is.
function M.counted(name, f, n)
  n = n or gpu._arity(f) or M.nparams(f)
  if n == math.huge then
    gpu._arity(f, n)
    return f
  end
  local function counted(...)
    local got = select("#", ...)
    if got > n then M.argerror(name, n + 1, "at most %d argument%s expected, got %d", n, n == 1 and "" or "s", got) end
    return f(...)
  end
  gpu._arity(counted, n)
  return counted
end

-- count_all(prefix, t) -> t: every public function of the table t (a name not starting with
-- '_') that declares no count yet counted as counted(prefix .. name, f): a Lua part's
-- functions, in one line at its end.
function M.count_all(prefix, t)
  for k, f in pairs(t) do
    if type(k) == "string" and type(f) == "function" and k:sub(1, 1) ~= "_" and gpu._arity(f) == nil then
      t[k] = M.counted(prefix .. k, f)
    end
  end
  return t
end

-- ---- types ------------------------------------------------------------------------------------

-- an array's metatable is one of two: small cpu results are light arrays (their bytes
-- inside the userdata, no finalizer; src/lua/larray.c), the rest have a __gc
local array_meta, light_meta = gpu._metatables[1], gpu._metatables[2]

-- is_array(v): v is a gpu array (open or closed); the one test the Lua parts use.
local function is_array(v)
  if type(v) ~= "userdata" then return false end
  local mt = getmetatable(v)
  return mt == array_meta or mt == light_meta
end
M.is_array = is_array

-- the dtype table of C (src/core/dtype.h): each row under its name and its aliases
local dtype_rows = gpu._dtypes
-- dtype(v): the canonical dtype name of a name or alias ("float" -> "float32"), or nil
function M.dtype(v)
  local row = type(v) == "string" and dtype_rows[v] or nil
  return type(row) == "table" and row.name or nil
end

-- type_name(v): v as errors show it: "integer 3", "number 0.5", "'relu'", "gpu.array", "table"
local type_name = gpu._describe
M.type_name = type_name

-- ---- nearest key -----------------------------------------------------------------------------

-- distance(a, b): the C reader's edit distance (Damerau-Levenshtein, adjacent swaps
-- count one; src/lua/largs.c), one measure for every "did you mean"; words of 64 bytes
-- or more count as far apart (1000), so a long unknown name costs nothing to compare.
M.distance = gpu._word_distance

-- nearest(word, candidates): the closest candidate, when close enough to be a typo, as the
-- C reader picks it (case aside); on a tie the first in sorted order.
M.nearest = gpu._nearest

-- ---- declarations ----------------------------------------------------------------------------

-- A declaration is read by the C options reader (src/lua/largs.c), which makes every
-- message: declare hands it the keys once (gpu._declare_options, which also lists the
-- declaration in gpu._options), check reads a table with it (gpu._read_options).
local declare_options, read_options, check_value = gpu._declare_options, gpu._read_options, gpu._check_value

local Decl = {}
Decl.__index = Decl

-- declare(fname, keys [, {example = "lua code with %s for the options table"}]) -> decl;
-- decl.keys is the keys table, whose entries options.value also takes. In gpu._options the
-- declaration is marked lua = true.
function M.declare(fname, keys, meta)
  local decl = setmetatable({ name = fname, keys = keys, reader = declare_options(fname, keys, meta and meta.example) },
    Decl)
  gpu._options[fname].lua = true
  return decl
end

-- check(opts, argn [, fname]) -> a new table: every declared key, given or defaulted.
-- opts may be nil (all defaults). argn is the argument position named in errors.
function Decl:check(opts, argn, fname)
  local out, why = read_options(self.reader, opts, fname)
  if out == nil then M.argerror(fname or self.name, argn, "%s", why) end
  return out
end

-- value(v, spec, fname, argn, what): checks one positional argument against a key-style
-- spec (type, range, choices) and returns it (or its default when nil).
function M.value(v, spec, fname, argn, what)
  local ok, r = check_value(v, spec, what)
  if not ok then M.argerror(fname, argn, "%s", r) end
  return r
end


-- shape_str(shape): "(2, 3)", as errors show a shape
function M.shape_str(shape) return "(" .. table.concat(shape, ", ") .. ")" end

-- The keys of t, sorted.
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- check_array(v, fname, argn, what): v is an open gpu array, else "bad argument #argn to
-- 'fname' (what: gpu.array expected, got ...)".
function M.check_array(v, fname, argn, what)
  if not is_array(v) then
    M.argerror(fname, argn, "%s: gpu.array expected, got %s", what, type_name(v))
  end
  if v:is_closed() then M.argerror(fname, argn, "%s: the gpu.array is closed", what) end
  return v
end

-- ---- methods called with '.' -------------------------------------------------------------------

-- guard_methods(cls, kind, noun, is_self): from now on, every function stored in the class
-- table cls under a name not starting with "__" (and every one already there) is wrapped
-- so that a call whose first argument is not an instance (is_self(v) false) -- the usual
-- slip `model.parameters()` for `model:parameters()` -- raises
--   Module:parameters: use model:parameters() (a method: call it with ':')
-- instead of "attempt to index a nil value" from inside the method. It also counts the
-- arguments as counted does (the method's parameters after self; init is the constructor):
--   bad argument #2 to 'Linear:forward' (at most 1 argument expected, got 2)
-- The wrapper costs two tests and a tail call per method call (a tail call: errors raised
-- inside the method still point where they did).
function M.guard_methods(cls, kind, noun, is_self)
  local function guarded(name, f)
    local hint = ("%s:%s: use %s:%s() (a method: call it with ':')"):format(kind, name, noun, name)
    local n, fname = math.max(M.nparams(f) - 1, 0), kind .. ":" .. name
    local function method(self, ...)
      if not is_self(self) then M.raise(hint) end
      local got = select("#", ...)
      if got > n then M.argerror(fname, n + 1, "at most %d argument%s expected, got %d", n, n == 1 and "" or "s", got) end
      return f(self, ...)
    end
    gpu._arity(method, n + 1)
    return method
  end
  local function wrapped(k, v)
    if type(v) == "function" and type(k) == "string" and k:sub(1, 2) ~= "__" then return guarded(k, v) end
    return v
  end
  for k, v in pairs(cls) do rawset(cls, k, wrapped(k, v)) end
  local mt = getmetatable(cls)
  if mt == nil then
    mt = {}
    setmetatable(cls, mt)
  end
  mt.__newindex = function(t, k, v) rawset(t, k, wrapped(k, v)) end
  return cls
end

-- class_table(name) -> the one metatable of that class for the life of the Lua state (kept
-- in the registry), emptied for the module that asks, which fills it anew: a module loaded
-- a second time (a host that clears package.loaded, as busted does between spec files,
-- while gpulua's gpu table keeps the first copy's objects) still recognises the instances
-- the first copy made, and they take the new copy's methods
local class_tables = debug.getregistry()["gpulua.classes"] or {}
debug.getregistry()["gpulua.classes"] = class_tables
function M.class_table(name)
  local cls = class_tables[name]
  if not cls then
    cls = {}
    class_tables[name] = cls
  else
    setmetatable(cls, nil)
    for k in next, cls do cls[k] = nil end
  end
  cls.__name = name
  return cls
end

-- class(name, noun) -> cls, is_cls: a class table (its own __index, __name = name) whose
-- methods guard_methods guards (noun: what the hint calls an instance), and the test of
-- an instance
function M.class(name, noun)
  local cls = M.class_table(name)
  cls.__index = cls
  local function is_cls(v) return getmetatable(v) == cls end
  return M.guard_methods(cls, name, noun, is_cls), is_cls
end

return M

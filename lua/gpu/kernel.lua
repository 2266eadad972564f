-- gpu.kernel — kernels written as strings (CuPy's ElementwiseKernel, ReductionKernel,
-- RawKernel, RawModule) and gpu.fuse, compiled at run time: C by the system C compiler on
-- the cpu (src/ops/jit.c compiles and caches, src/backend/cpu/cpu_jit.c launches). This
-- file parses the parameter strings, binds the types, broadcasts, allocates the outputs
-- and writes the C source; the C side never sees a parameter string.
--
-- The generated C: the prelude (kernels/half.h, elem.h, jit_ops.h, jit_abi.h, embedded in
-- the binary), <tgmath.h> (so sqrt(x) of a float is sqrtf), then per kernel the typedefs
-- of the bound type placeholders, the user's preamble and the loops. Elementwise kernels
-- get a contiguous loop (vectorised by the compiler) and a strided one; reductions an
-- init / part / post triple (cpu_jit.c shares outputs, or one output's elements, among
-- the threads).
--
-- On cuda the same parsed kernel is written as CUDA (elementwise_source_cuda,
-- reduction_source_cuda), compiled by NVRTC for the device's architecture and cached
-- (src/ops/jit_cuda.c) and launched by gpu._jit.cuda_launch (src/lua/lkernel.c).
local gpu = require "gpu"
local options = require "gpu.options"
local jit = gpu._jit

local M = {}

-- ---- dtypes in C ---------------------------------------------------------------------------

-- Per dtype, from its row of kernels/dtypes.h (gpu._dtypes): c, the compute type (the type
-- a parameter has in the body; bool computes as C's bool); s, the stored element; load /
-- store: the conversions between them (bool is != 0, halves widen to float through
-- kernels/half.h); round: a float rounded to the half; fn: the suffix of jit_ops.h's
-- functions for the compute type (f, d, an integer or complex dtype's id; bool computes in
-- uint8's); real: a complex dtype's part type (its parts are .re and .im). FLOAT: the float
-- dtypes; SAT: kernels/convert.h's saturating conversion of a double to each integer dtype.
local JIT_FN = { float = "f", double = "d" }
local CT, FLOAT, SAT = {}, {}, {}
local REAL_PART = { complex64 = "float32", complex128 = "float64" }
for _, row in ipairs(gpu._dtypes) do
  local fn = row.kind == "bool" and "uint8" or (row.kind == "int" or row.kind == "uint" or row.kind == "complex") and row.id
    or JIT_FN[row.compute]
  local t = { c = row.compute, s = row.storage, fn = fn, real = row.kind == "complex" and REAL_PART[row.name] or nil }
  if row.kind == "bool" then
    t.c, t.load, t.store = "bool", "(%s != 0)", "(" .. row.storage .. ")((%s) != 0)"
  elseif row.half then
    local widen, narrow = "gl_" .. row.half .. "_to_f32(", "gl_f32_to_" .. row.half .. "((float)(%s))"
    t.load, t.store, t.round = widen .. "%s)", narrow, widen .. narrow .. ")"
  end
  CT[row.name] = t
  if row.kind == "float" then FLOAT[row.name] = true end
  if row.kind == "uint" or row.kind == "int" then SAT[row.name] = "gl_sat_" .. row.id end
end

local function load(dt, e) return CT[dt].load and CT[dt].load:format(e) or e end
local function store(dt, e) return CT[dt].store and CT[dt].store:format(e) or ("(" .. CT[dt].s .. ")(" .. e .. ")") end

-- The value e of dtype 'from' as a value of dtype 'to', converted as gpulua's astype does
-- (halves rounded, floats to integers saturated, NaN to 0; bool is != 0; a real value is a
-- complex one's real part, a complex value's real part is its real value; a complex is true
-- where either part is nonzero).
local function convert(e, from, to)
  if from == to then return e end
  if CT[to].real then
    if CT[from].real then return ("gl_%s(%s)"):format(to == "complex128" and "complex64_widen" or "complex128_narrow", e) end
    return ("gl_make_%s((%s)(%s), 0)"):format(to, CT[CT[to].real].c, e)
  end
  if CT[from].real then
    if to == "bool" then return ("(!gl_j%s_logical_not(%s))"):format(from, e) end
    return convert("(" .. e .. ").re", CT[from].real, to)
  end
  if to == "bool" then return "((" .. e .. ") != 0)" end
  if CT[to].round then return CT[to].round:format(e) end
  if FLOAT[to] then return "((" .. CT[to].c .. ")(" .. e .. "))" end
  if FLOAT[from] then return SAT[to] .. "((double)(" .. e .. "))" end
  return "((" .. CT[to].c .. ")(" .. e .. "))"
end

-- ---- parameter strings ---------------------------------------------------------------------

local C_WORDS = {}
for w in ([[auto break case char const continue default do double else enum extern float for goto if
  inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
  void volatile while bool true false i]]):gmatch("%S+") do C_WORDS[w] = true end

local DTYPE_NAMES = {}
for _, row in ipairs(gpu._dtypes) do DTYPE_NAMES[row.name] = true end

local function argerror(fname, argn, fmt, ...) options.argerror(fname, argn, fmt, ...) end

-- "float32 x, raw T y" -> { {name = "x", type = "float32"}, {name = "y", type = "T", raw = true} }
local function parse_params(fname, argn, s, seen, what)
  if type(s) ~= "string" then argerror(fname, argn, "%s: string expected, got %s", what, options.type_name(s)) end
  local list = {}
  if s:match("^%s*$") then return list end
  for item in (s .. ","):gmatch("([^,]*),") do
    local words = {}
    for w in item:gmatch("%S+") do words[#words + 1] = w end
    local raw = words[1] == "raw"
    if raw then table.remove(words, 1) end
    if #words ~= 2 then
      argerror(fname, argn, "%s: bad parameter '%s' (expected \"[raw] type name\", as \"float32 x\" or \"raw T y\")",
        what, item:match("^%s*(.-)%s*$"))
    end
    local ty, name = words[1], words[2]
    if not ty:match("^[%a_][%w_]*$") then argerror(fname, argn, "%s: bad type '%s'", what, ty) end
    if not DTYPE_NAMES[ty] and (C_WORDS[ty] or ty:match("_t$") or ty:sub(1, 4) == "_gl_") then
      -- a placeholder becomes a typedef: a C word there fails only in the compiler's log
      local dt = rawget(gpu, ty)
      argerror(fname, argn, "%s: '%s %s': '%s' is a C name, not a dtype or a type placeholder (%s)", what, ty, name, ty,
        type(dt) == "string" and DTYPE_NAMES[dt] and ("use the dtype " .. dt) or "use a dtype such as float32, or T")
    end
    if not name:match("^[%a_][%w_]*$") or C_WORDS[name] or DTYPE_NAMES[name] or name:sub(1, 4) == "_gl_" then
      argerror(fname, argn, "%s: bad parameter name '%s'", what, name)
    end
    if seen[name] == "reserved" then argerror(fname, argn, "%s: parameter name '%s' is reserved (a and b are the reduction's)", what, name) end
    if seen[name] then argerror(fname, argn, "%s: parameter '%s' named twice", what, name) end
    seen[name] = true
    list[#list + 1] = { name = name, type = ty, raw = raw, generic = not DTYPE_NAMES[ty] }
  end
  return list
end

-- ---- compiling -----------------------------------------------------------------------------

local modules = {}     -- source -> module (the C side also caches; this skips its hash)
M._last = {}           -- what the last compile did: origin, ms, on_disk (for specs and bench)

local function compile(fname, src)
  local m = modules[src]
  if m then
    M._last.origin, M._last.ms = "memory", 0
    return m
  end
  local mod, origin, ms, on_disk = jit.compile(src)
  if not mod then options.raise("%s: %s", fname, origin) end
  modules[src] = mod
  M._last.origin, M._last.ms, M._last.on_disk = origin, ms, on_disk
  return mod
end

-- CUDA source compiled by NVRTC for target: a device ("cuda:0", its own architecture) or
-- "sm_XY" (compile only, for specs: no GPU needed). raw: RawKernel's source (no prelude).
local function compile_cuda(fname, src, target, raw)
  local key = target .. "\0" .. src
  local m = modules[key]
  if m then
    M._last.origin, M._last.ms = "memory", 0
    return m
  end
  local mod, origin, ms, on_disk, bytes, ckey = jit.cuda_compile(src, target, raw)
  if not mod then options.raise("%s: %s", fname, origin) end
  modules[key] = mod
  M._last.origin, M._last.ms, M._last.on_disk, M._last.bytes, M._last.key = origin, ms, on_disk, bytes, ckey
  return mod
end

-- ---- binding the arguments -----------------------------------------------------------------

local is_array = options.is_array

-- NumPy broadcasting of the shapes in list; nil and the two that clash on failure
local function broadcast(shapes)
  local nd = 0
  for _, s in ipairs(shapes) do if #s > nd then nd = #s end end
  local out = {}
  for d = 1, nd do out[d] = 1 end
  for _, s in ipairs(shapes) do
    local off = nd - #s
    for d = 1, #s do
      local e = s[d]
      if out[off + d] == 1 then out[off + d] = e
      elseif e ~= 1 and e ~= out[off + d] then return nil, s end
    end
  end
  return out
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for d = 1, #a do if a[d] ~= b[d] then return false end end
  return true
end

-- The dtype a Lua number binds a generic parameter to (CuPy: int -> int64, float -> float64)
local function number_dtype(v)
  if type(v) == "boolean" then return "bool" end
  return math.type(v) == "integer" and "int64" or "float64"
end

-- Binds the placeholder types of params from args (arrays first, then scalars); returns
-- types (placeholder -> dtype) and each param's dtype.
local function bind_types(fname, params, args, outs_given)
  local types = {}
  for pass = 1, 2 do
    for k, p in ipairs(params) do
      local v = args[k]
      if p.generic and types[p.type] == nil and v ~= nil then
        if is_array(v) and (pass == 1) then types[p.type] = v.dtype
        elseif pass == 2 and not is_array(v) then types[p.type] = number_dtype(v) end
      end
    end
  end
  local dts = {}
  for k, p in ipairs(params) do
    local dt = p.generic and types[p.type] or (not p.generic and p.type) or nil
    if dt == nil then
      if k > #args and not outs_given then
        options.raise("%s: cannot tell the type %s of output '%s' from the inputs (pass the output)", fname, p.type, p.name)
      end
    end
    dts[k] = dt
  end
  return types, dts
end

-- Whether device dev's kernels are C compiled here (the cpu's) rather than CUDA source: the
-- language its backend compiles at run time.
local function compiles_c(dev) return select(3, gpu._device_name(dev)) == "c" end

local function check_device(fname, arrays)
  local dev
  for _, a in ipairs(arrays) do
    if dev == nil then dev = a.device
    elseif a.device ~= dev then
      options.raise("%s: arrays on %s and %s (use :to() to move one)", fname, dev, a.device)
    end
  end
  return dev or gpu.device()
end

-- Reads the call's arguments against nin inputs and nout outputs: args (a list), the
-- outputs given (or nil), the trailing options table (or nil).
local function split_call(fname, nin, nout, ...)
  local n = select("#", ...)
  local args = { ... }
  local opts
  if n > 0 and type(args[n]) == "table" and not is_array(args[n]) then
    opts = args[n]
    args[n] = nil
    n = n - 1
  end
  if n ~= nin and n ~= nin + nout then
    options.raise("%s: %d arguments expected (%d inputs%s), got %d", fname, nin, nin,
      nout > 0 and (", or the inputs and " .. nout .. " outputs") or "", n)
  end
  return args, n == nin + nout and nout > 0, opts, n
end

-- Checks one argument against its parameter; converts typed array inputs when their
-- dtype differs (as CuPy casts them).
local function check_arg(fname, k, p, v, dt, is_out)
  if is_array(v) then
    if v:is_closed() then argerror(fname, k, "the gpu.array is closed") end
    if v.dtype ~= dt then
      if is_out or p.raw then
        argerror(fname, k, "'%s' is %s %s but the array is %s", p.name, p.raw and "raw" or "", dt, v.dtype)
      end
      return v:astype(dt)
    end
    return v
  end
  if is_out then argerror(fname, k, "output '%s': gpu.array expected, got %s", p.name, options.type_name(v)) end
  if p.raw then argerror(fname, k, "raw parameter '%s': gpu.array expected, got %s", p.name, options.type_name(v)) end
  if type(v) ~= "number" and type(v) ~= "boolean" then
    argerror(fname, k, "'%s': gpu.array or number expected, got %s", p.name, options.type_name(v))
  end
  if type(v) == "number" and math.type(v) == "float" and not FLOAT[dt] and dt ~= "bool" then
    if v ~= math.floor(v) or v ~= v then argerror(fname, k, "'%s': %s expected, got %s", p.name, dt, tostring(v)) end
  end
  return v
end

-- ---- the source of an elementwise kernel ---------------------------------------------------

-- params: {name, dt, role} with role i (input array), o (output array), r/w (raw), s (scalar)
local function typedefs(types)
  local out = {}
  for _, t in ipairs(options.sorted_keys(types)) do out[#out + 1] = ("typedef %s %s;"):format(CT[types[t]].c, t) end
  return table.concat(out, "\n")
end

-- The source's first lines, as a list to append to: the typedefs of the bound type
-- placeholders, a reduction's accumulator type _gl_rt (rtype), the user's preamble.
local function source_head(types, preamble, rtype)
  local L = { typedefs(types) }
  if rtype then L[#L + 1] = ("typedef %s _gl_rt;"):format(CT[rtype].c) end
  L[#L + 1] = preamble or ""
  return L
end

local function declare_pointers(ps)
  local out = {}
  for k, p in ipairs(ps) do
    local c, s = CT[p.dt].c, CT[p.dt].s
    if p.role == "s" then
      out[#out + 1] = ("  const %s %s = %s;"):format(c, p.name, load(p.dt, ("*(const %s *)_gl_p[%d]"):format(s, k - 1)))
    elseif p.role == "r" or p.role == "w" then
      out[#out + 1] = ("  %s%s *const %s = (%s%s *)_gl_p[%d];"):format(p.role == "r" and "const " or "", s, p.name,
        p.role == "r" and "const " or "", s, k - 1)
    else
      out[#out + 1] = ("  %s%s *const _gl_p_%s = (%s%s *)_gl_p[%d];"):format(p.role == "i" and "const " or "", s, p.name,
        p.role == "i" and "const " or "", s, k - 1)
    end
  end
  return table.concat(out, "\n")
end

-- The lines f(k, p) writes for each parameter p (k-th) whose role is in roles.
local function per_param(ps, roles, f)
  local out = {}
  for k, p in ipairs(ps) do
    if roles[p.role] then out[#out + 1] = f(k, p) end
  end
  return table.concat(out, "\n")
end

-- the array parameters' element k-th at index(k) read into locals, and written back
local function loads(ps, index)
  return per_param(ps, { i = true, o = true }, function(k, p)
    return ("    %s%s %s = %s;"):format(p.role == "i" and "const " or "", CT[p.dt].c, p.name,
      load(p.dt, ("_gl_p_%s[%s]"):format(p.name, index(k))))
  end)
end

local function stores(ps, index)
  return per_param(ps, { o = true }, function(k, p)
    return ("    _gl_p_%s[%s] = %s;"):format(p.name, index(k), store(p.dt, p.name))
  end)
end

-- ps with the parameters of other roles than role masked (role "-": no load, no store)
local function only(ps, role)
  local out = {}
  for k, p in ipairs(ps) do out[k] = p.role == role and p or { role = "-" } end
  return out
end

-- A reduction's last step for the output element at _gl_ko: its outputs loaded, post_map,
-- the outputs stored (the accumulator is a).
local function post_map_lines(ps, post_map)
  local outs = only(ps, "o")
  local at = function(k) return ("_gl_ko[%d]"):format(k - 1) end
  return table.concat({ loads(outs, at), "    {\n" .. post_map .. "\n;\n    }", stores(outs, at) }, "\n")
end

-- The C loop over elements lo..hi-1 in runs along the innermost axis: w.count counts the
-- elements, w.nd axes of shape w.shape with per-argument strides w.str, located at w.idx
-- (and the arguments' offsets at _gl_off); w.base formats argument k's first offset from
-- k - 1 (twice where it has two %d). body(idx) gives the lines of one element, idx(k) the
-- index expression of argument k.
local function inner_runs(L, nargs, w, body)
  local last = w.nd .. " - 1"
  L[#L + 1] = ("  while (%s < _gl_hi) {"):format(w.count)
  L[#L + 1] = ("    int64_t _gl_n = %s[%s] - %s[%s];"):format(w.shape, last, w.idx, last)
  L[#L + 1] = ("    if (_gl_n > _gl_hi - %s) _gl_n = _gl_hi - %s;"):format(w.count, w.count)
  for k = 1, nargs do
    L[#L + 1] = ("    const int64_t _gl_s%d = %s[%d][%s], _gl_o%d = %s;"):format(k, w.str, k - 1, last, k,
      w.base:format(k - 1, k - 1))
  end
  L[#L + 1] = ("    for (int64_t _gl_j = 0; _gl_j < _gl_n; _gl_j++, %s++) {"):format(w.count)
  for _, line in ipairs(body(function(k) return ("_gl_o%d + _gl_j * _gl_s%d"):format(k, k) end)) do L[#L + 1] = line end
  L[#L + 1] = "    }"
  L[#L + 1] = ("    gl_jit_advance(%d, %s, _gl_off, _gl_n, %s, %s, %s);"):format(nargs, w.idx, w.nd, w.shape, w.str)
  L[#L + 1] = "  }"
end

local function elementwise_source(name, ps, types, preamble, body)
  local nargs = #ps
  local L = source_head(types, preamble)
  L[#L + 1] = ("void %s_contig(int64_t _gl_lo, int64_t _gl_hi, char *const *_gl_p) {"):format(name)
  L[#L + 1] = declare_pointers(ps)
  L[#L + 1] = "  for (int64_t i = _gl_lo; i < _gl_hi; i++) {"
  L[#L + 1] = loads(ps, function() return "i" end)
  L[#L + 1] = "    {\n" .. body .. "\n;\n    }"
  L[#L + 1] = stores(ps, function() return "i" end)
  L[#L + 1] = "  }\n}"
  L[#L + 1] = ("void %s_strided(int64_t _gl_lo, int64_t _gl_hi, const gl_jit_geom *_gl_g, char *const *_gl_p) {"):format(name)
  L[#L + 1] = declare_pointers(ps)
  L[#L + 1] = ("  int64_t _gl_idx[GL_JIT_MAXDIMS], _gl_off[%d];"):format(nargs)
  L[#L + 1] = "  const int _gl_nd = _gl_g->nd;"
  L[#L + 1] = ("  gl_jit_locate(_gl_lo, %d, _gl_idx, _gl_off, _gl_nd, _gl_g->shape, _gl_g->str);"):format(nargs)
  L[#L + 1] = "  int64_t i = _gl_lo;"
  inner_runs(L, nargs, { count = "i", nd = "_gl_nd", idx = "_gl_idx", shape = "_gl_g->shape", str = "_gl_g->str",
    base = "_gl_off[%d]" }, function(idx)
    return { loads(ps, idx), "    {\n" .. body .. "\n;\n    }", stores(ps, idx) }
  end)
  L[#L + 1] = "}"
  return table.concat(L, "\n")
end

-- ---- the CUDA source (NVRTC) ---------------------------------------------------------------
-- The same parsed kernel as a __global__ function: arrays are typed pointers, scalars are
-- passed by value (their stored type), the geometry struct (kernels/jit_abi.h) by value.
-- Elementwise: name_contig(n, ...) walks i = 0..n-1 of contiguous arrays, name_strided(g,
-- ...) locates each i through g's strides; both grid-stride loops, i the same 0-based flat
-- C-order index as on the cpu. Reduction: name_reduce(g, ...) gives each output to a block
-- of CUDA_BLOCK threads (src/lua/lkernel.c launches that many), which map and reduce a
-- share of the reduced elements each, then combine the partials in shared memory with
-- reduce_expr; thread 0 applies post_map.
local CUDA_BLOCK = 256

local function cuda_params(ps)
  local out = {}
  for k, p in ipairs(ps) do
    local s = CT[p.dt].s
    if p.role == "s" then out[k] = ("const %s _gl_s_%s"):format(s, p.name)
    elseif p.role == "r" then out[k] = ("const %s *const %s"):format(s, p.name)
    elseif p.role == "w" then out[k] = ("%s *const %s"):format(s, p.name)
    elseif p.role == "i" then out[k] = ("const %s *const _gl_p_%s"):format(s, p.name)
    else out[k] = ("%s *const _gl_p_%s"):format(s, p.name) end
  end
  return table.concat(out, ", ")
end

local function cuda_scalars(ps)
  return per_param(ps, { s = true }, function(_, p)
    return ("  const %s %s = %s;"):format(CT[p.dt].c, p.name, load(p.dt, "_gl_s_" .. p.name))
  end)
end

local GRID_LOOP = "for (int64_t %s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; %s < %s; %s += (int64_t)gridDim.x * blockDim.x) {"

local function elementwise_source_cuda(name, ps, types, preamble, body)
  local nargs = #ps
  local params = cuda_params(ps)
  local L = source_head(types, preamble)
  L[#L + 1] = ('extern "C" __global__ void %s_contig(const int64_t _gl_n%s%s) {'):format(name, nargs > 0 and ", " or "", params)
  L[#L + 1] = cuda_scalars(ps)
  L[#L + 1] = "  " .. GRID_LOOP:format("i", "i", "_gl_n", "i")
  L[#L + 1] = loads(ps, function() return "i" end)
  L[#L + 1] = "    {\n" .. body .. "\n;\n    }"
  L[#L + 1] = stores(ps, function() return "i" end)
  L[#L + 1] = "  }\n}"
  L[#L + 1] = ('extern "C" __global__ void %s_strided(const gl_jit_geom _gl_g%s%s) {'):format(name, nargs > 0 and ", " or "", params)
  L[#L + 1] = cuda_scalars(ps)
  L[#L + 1] = ("  int64_t _gl_idx[GL_JIT_MAXDIMS], _gl_off[%d];"):format(math.max(nargs, 1))
  L[#L + 1] = "  " .. GRID_LOOP:format("i", "i", "_gl_g.size", "i")
  L[#L + 1] = ("    gl_jit_locate(i, %d, _gl_idx, _gl_off, _gl_g.nd, _gl_g.shape, _gl_g.str);"):format(nargs)
  local idx = function(k) return ("_gl_off[%d]"):format(k - 1) end
  L[#L + 1] = loads(ps, idx)
  L[#L + 1] = "    {\n" .. body .. "\n;\n    }"
  L[#L + 1] = stores(ps, idx)
  L[#L + 1] = "  }\n}"
  return table.concat(L, "\n")
end

local function reduction_source_cuda(name, ps, types, rtype, preamble, identity, map_expr, reduce_expr, post_map)
  local nargs = #ps
  local L = source_head(types, preamble, rtype)
  L[#L + 1] = ('extern "C" __global__ void %s_reduce(const gl_jit_geom _gl_g, %s) {'):format(name, cuda_params(ps))
  L[#L + 1] = ("  __shared__ _gl_rt _gl_sh[%d];"):format(CUDA_BLOCK)
  L[#L + 1] = cuda_scalars(ps)
  L[#L + 1] = ("  int64_t _gl_idx[GL_JIT_MAXDIMS], _gl_ko[%d], _gl_ridx[GL_JIT_MAXDIMS], _gl_off[%d];"):format(nargs, nargs)
  L[#L + 1] = "  int64_t _gl_m = 1;"
  L[#L + 1] = "  for (int _gl_d = 0; _gl_d < _gl_g.nr; _gl_d++) _gl_m *= _gl_g.rshape[_gl_d];"
  L[#L + 1] = "  for (int64_t _gl_o = blockIdx.x; _gl_o < _gl_g.size; _gl_o += gridDim.x) {"
  L[#L + 1] = ("    gl_jit_locate(_gl_o, %d, _gl_idx, _gl_ko, _gl_g.nd, _gl_g.shape, _gl_g.str);"):format(nargs)
  L[#L + 1] = ("    _gl_rt a = (_gl_rt)(%s);"):format(identity)
  L[#L + 1] = "    for (int64_t _gl_e = threadIdx.x; _gl_e < _gl_m; _gl_e += blockDim.x) {"
  L[#L + 1] = ("      gl_jit_locate(_gl_e, %d, _gl_ridx, _gl_off, _gl_g.nr, _gl_g.rshape, _gl_g.rstr);"):format(nargs)
  local ins = only(ps, "i")
  L[#L + 1] = loads(ins, function(k) return ("_gl_ko[%d] + _gl_off[%d]"):format(k - 1, k - 1) end)
  L[#L + 1] = ("      const _gl_rt b = (_gl_rt)(%s);"):format(map_expr)
  L[#L + 1] = ("      a = (_gl_rt)(%s);"):format(reduce_expr)
  L[#L + 1] = "    }"
  L[#L + 1] = "    _gl_sh[threadIdx.x] = a;"
  L[#L + 1] = "    __syncthreads();"
  L[#L + 1] = "    for (unsigned _gl_h = blockDim.x / 2; _gl_h > 0; _gl_h >>= 1) {"
  L[#L + 1] = "      if (threadIdx.x < _gl_h) {"
  L[#L + 1] = "        _gl_rt a = _gl_sh[threadIdx.x];"
  L[#L + 1] = "        const _gl_rt b = _gl_sh[threadIdx.x + _gl_h];"
  L[#L + 1] = ("        _gl_sh[threadIdx.x] = (_gl_rt)(%s);"):format(reduce_expr)
  L[#L + 1] = "      }"
  L[#L + 1] = "      __syncthreads();"
  L[#L + 1] = "    }"
  L[#L + 1] = "    if (threadIdx.x == 0) {"
  L[#L + 1] = "      a = _gl_sh[0];"
  L[#L + 1] = post_map_lines(ps, post_map)
  L[#L + 1] = "    }"
  L[#L + 1] = "    __syncthreads();"
  L[#L + 1] = "  }\n}"
  return table.concat(L, "\n")
end

-- When a table, kernel calls do not compile or launch: they append the CUDA source they
-- would compile and return their (unwritten) outputs. For spec/kernel_cuda_spec.lua, which
-- compiles those sources with NVRTC on a machine without a GPU.
M._capture = nil

-- Compiles (once per signature and device) and launches a kernel object's call: C on the
-- cpu, CUDA elsewhere (and under _capture, which only collects the CUDA source).
-- source(cuda) writes the source; mask: the reduced axes of a reduction.
local function run(self, fname, sig, dev, source, roles, args, mask)
  local cuda = not compiles_c(dev) or M._capture ~= nil
  local key = cuda and (sig .. "|" .. dev) or sig
  self._mods = self._mods or {}
  local entry = self._mods[key]
  if not entry then
    local src = source(cuda)
    if M._capture then
      M._capture[#M._capture + 1] = src
      return
    end
    entry = { mod = cuda and compile_cuda(fname, src, dev) or compile(fname, src), src = src }
    self._mods[key] = entry
  end
  options.call(fname, cuda and jit.cuda_launch or jit.launch, entry.mod, self.name, roles, args, mask)
end

-- ---- ElementwiseKernel ---------------------------------------------------------------------

local EW = options.declare("ElementwiseKernel", {
  preamble = { type = "string", default = "" },
  reduce_dims = { type = "boolean", default = true },
}, { example = [[gpu.ElementwiseKernel("T x", "T y", "y = x", "copy", %s)]] })
local EW_CALL = options.declare("ElementwiseKernel.__call", {
  size = { type = "integer", min = 0 },
}, { example = [[gpu.ElementwiseKernel("T x", "T y", "y = x", "copy")(gpu.ones(2), %s)]] })

local Elementwise = {}
Elementwise.__index = Elementwise

local function check_name(fname, argn, name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or C_WORDS[name] then
    argerror(fname, argn, "kernel name: a C identifier expected, got %s",
      type(name) == "string" and ("'" .. name .. "'") or options.type_name(name))
  end
end

-- ElementwiseKernel(in_params, out_params, body, name [, {preamble =, reduce_dims =}])
function M.ElementwiseKernel(in_params, out_params, body, name, opts)
  local fname = "gpu.ElementwiseKernel"
  local seen = {}
  local ins = parse_params(fname, 1, in_params, seen, "in_params")
  local outs = parse_params(fname, 2, out_params, seen, "out_params")
  if #outs == 0 then argerror(fname, 2, "out_params: at least one output expected") end
  if type(body) ~= "string" then argerror(fname, 3, "body: string expected, got %s", options.type_name(body)) end
  if name == nil then name = "kernel" end
  check_name(fname, 4, name)
  local o = EW:check(opts, 5, fname)
  return setmetatable({ name = name, ins = ins, outs = outs, body = body, preamble = o.preamble,
    in_params = in_params, out_params = out_params, fname = "ElementwiseKernel '" .. name .. "'" }, Elementwise)
end

-- bind_call(kernel, decl, outputs_shape, ...) -> o, params, types, dts, vals, shapes, shape,
-- dev: a call's options (checked against decl), its parameters (inputs then outputs), their
-- bound types, the checked values, the shapes that broadcast (the non-raw arrays; outputs'
-- too when outputs_shape), the shape they broadcast to and the one device of the arrays
local function bind_call(kernel, decl, outputs_shape, ...)
  local fname = kernel.fname
  local nin = #kernel.ins
  local args, outs_given, opts = split_call(fname, nin, #kernel.outs, ...)
  local o = decl:check(opts, select("#", ...), fname)
  local params = {}
  for _, p in ipairs(kernel.ins) do params[#params + 1] = p end
  for _, p in ipairs(kernel.outs) do params[#params + 1] = p end
  local types, dts = bind_types(fname, params, args, outs_given)
  local vals, arrays, shapes = {}, {}, {}
  for k, p in ipairs(params) do
    local v = args[k]
    if v ~= nil then
      v = check_arg(fname, k, p, v, dts[k], k > nin)
      vals[k] = v
      if is_array(v) then
        arrays[#arrays + 1] = v
        if (outputs_shape or k <= nin) and not p.raw then shapes[#shapes + 1] = v.shape end
      end
    end
  end
  if not kernel._complex then
    for k, p in ipairs(params) do
      if dts[k] and CT[dts[k]].real then
        options.raise("%s: '%s' is %s: ElementwiseKernel and ReductionKernel take real dtypes only (view a complex " ..
          "array as its real and imaginary parts with gpu.view_as_real, or fuse complex math with gpu.fuse)",
          fname, p.name, dts[k])
      end
    end
  end
  local dev = check_device(fname, arrays)
  local shape, clash = broadcast(shapes)
  if not shape then options.raise("%s: shapes do not broadcast (%s)", fname, options.shape_str(clash)) end
  return o, params, types, dts, vals, shapes, shape, dev
end

-- launch_call(kernel, params, dts, vals, dev, shape, output, sig, source, mask): launches
-- a bound call and answers its outputs. The inputs are broadcast to shape (raw ones made
-- contiguous); output(k, p, v) makes output k (v nil) or checks the one given and answers
-- it and the array to launch; sig extends the signature the compiled kernel is cached
-- under; source(name, ps, cuda) writes the kernel for ps, the parameters with their dtypes
-- and roles: i input, o output, r / w raw read / written, s scalar.
local function launch_call(kernel, params, dts, vals, dev, shape, output, sig, source, mask)
  local nin = #kernel.ins
  local roles, launch, results = {}, {}, {}
  for k, p in ipairs(params) do
    local v = vals[k]
    if k > nin then
      v, launch[k] = output(k, p, v)
      results[#results + 1] = v
      roles[k] = p.raw and "w" or "o"
    elseif p.raw then
      roles[k] = "r"
      launch[k] = v:is_contiguous() and v or v:contiguous()
    elseif is_array(v) then
      roles[k] = "i"
      launch[k] = same_shape(v.shape, shape) and v or v:expand(shape)
    else
      roles[k] = "s"
      launch[k] = { v, dts[k] }
    end
  end
  local ps = {}
  for k, p in ipairs(params) do ps[k] = { name = p.name, dt = dts[k], role = roles[k] } end
  roles = table.concat(roles)
  run(kernel, kernel.fname, roles .. "|" .. table.concat(dts, ",") .. sig, dev,
    function(cuda) return source(kernel.name, ps, cuda) end, roles, launch, mask)
  return table.unpack(results)
end

-- k(inputs... [, outputs...] [, {size =}]): the outputs (one value, or several)
function Elementwise:__call(...)
  local fname = self.fname
  local o, params, types, dts, vals, shapes, shape, dev = bind_call(self, EW_CALL, true, ...)
  if #shapes == 0 then
    if o.size == nil then options.raise("%s: no array argument gives the size: pass {size = n}", fname) end
    shape = { o.size }
  elseif o.size ~= nil and o.size ~= gpu.zeros(shape).size then
    options.raise("%s: size %d does not match the arguments' size", fname, o.size)
  end
  -- outputs: given ones must have the broadcast shape; the others are made
  local function output(k, p, v)
    if v == nil then
      v = gpu.empty(shape, { dtype = dts[k], device = dev })
    elseif not p.raw and not same_shape(v.shape, shape) then
      argerror(fname, k, "output '%s' has shape %s, the arguments broadcast to %s", p.name,
        options.shape_str(v.shape), options.shape_str(shape))
    end
    if p.raw and not v:is_contiguous() then argerror(fname, k, "raw output '%s' must be contiguous", p.name) end
    return v, v
  end
  return launch_call(self, params, dts, vals, dev, shape, output, "", function(name, ps, cuda)
    return (cuda and elementwise_source_cuda or elementwise_source)(name, ps, types, self.preamble, self.body)
  end)
end

-- ---- ReductionKernel -----------------------------------------------------------------------

local RK = options.declare("ReductionKernel", {
  reduce_type = { type = "string" },
  preamble = { type = "string", default = "" },
  reduce_dims = { type = "boolean", default = true },
}, { example = [[gpu.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_", %s)]] })
local RK_CALL = options.declare("ReductionKernel.__call", {
  axis = { type = "integer|table" },
  keepdims = { type = "boolean", default = false },
}, { example = [[gpu.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_")(gpu.ones(2), %s)]] })

local Reduction = {}
Reduction.__index = Reduction

-- ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
--                 name [, {reduce_type =, preamble =, reduce_dims =}])
function M.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name, opts)
  local fname = "gpu.ReductionKernel"
  local seen = { a = "reserved", b = "reserved" }
  local ins = parse_params(fname, 1, in_params, seen, "in_params")
  local outs = parse_params(fname, 2, out_params, seen, "out_params")
  if #ins == 0 then argerror(fname, 1, "in_params: at least one input expected") end
  if #outs == 0 then argerror(fname, 2, "out_params: at least one output expected") end
  for argn, v in ipairs({ map_expr, reduce_expr, post_map_expr }) do
    if type(v) ~= "string" then argerror(fname, argn + 2, "string expected, got %s", options.type_name(v)) end
  end
  if type(identity) == "number" then identity = tostring(identity) end
  if identity ~= nil and type(identity) ~= "string" then
    argerror(fname, 6, "identity: string or number expected, got %s", options.type_name(identity))
  end
  if name == nil then name = "reduce_kernel" end
  check_name(fname, 7, name)
  local o = RK:check(opts, 8, fname)
  if o.reduce_type ~= nil and not DTYPE_NAMES[o.reduce_type] then
    local placeholder = false
    for _, p in ipairs(ins) do if p.type == o.reduce_type then placeholder = true end end
    for _, p in ipairs(outs) do if p.type == o.reduce_type then placeholder = true end end
    if not placeholder then argerror(fname, 8, "reduce_type: a dtype or a type of the parameters expected, got '%s'", o.reduce_type) end
  end
  for _, p in ipairs(outs) do
    if p.raw then argerror(fname, 2, "out_params: a reduction's output cannot be raw ('%s')", p.name) end
  end
  return setmetatable({ name = name, ins = ins, outs = outs, map_expr = map_expr, reduce_expr = reduce_expr,
    post_map_expr = post_map_expr, identity = identity, reduce_type = o.reduce_type, preamble = o.preamble,
    fname = "ReductionKernel '" .. name .. "'" }, Reduction)
end

local function reduction_source(name, ps, types, rtype, preamble, identity, map_expr, reduce_expr, post_map)
  local nargs = #ps
  local L = source_head(types, preamble, rtype)
  L[#L + 1] = ("void %s_init(void *_gl_acc) { *(_gl_rt *)_gl_acc = (_gl_rt)(%s); }"):format(name, identity)
  L[#L + 1] = ("void %s_part(int64_t _gl_o, int64_t _gl_lo, int64_t _gl_hi, const gl_jit_geom *_gl_g, char *const *_gl_p, void *_gl_acc) {"):format(name)
  L[#L + 1] = declare_pointers(ps)
  L[#L + 1] = ("  int64_t _gl_idx[GL_JIT_MAXDIMS], _gl_ko[%d], _gl_ridx[GL_JIT_MAXDIMS], _gl_off[%d];"):format(nargs, nargs)
  L[#L + 1] = ("  gl_jit_locate(_gl_o, %d, _gl_idx, _gl_ko, _gl_g->nd, _gl_g->shape, _gl_g->str);"):format(nargs)
  L[#L + 1] = "  const int _gl_nr = _gl_g->nr;"
  L[#L + 1] = ("  gl_jit_locate(_gl_lo, %d, _gl_ridx, _gl_off, _gl_nr, _gl_g->rshape, _gl_g->rstr);"):format(nargs)
  L[#L + 1] = "  _gl_rt a = *(_gl_rt *)_gl_acc;"
  L[#L + 1] = "  int64_t _gl_e = _gl_lo;"
  local ins = only(ps, "i")
  inner_runs(L, nargs, { count = "_gl_e", nd = "_gl_nr", idx = "_gl_ridx", shape = "_gl_g->rshape", str = "_gl_g->rstr",
    base = "_gl_ko[%d] + _gl_off[%d]" }, function(idx)
    return { loads(ins, idx), ("      const _gl_rt b = (_gl_rt)(%s);"):format(map_expr),
             ("      a = (_gl_rt)(%s);"):format(reduce_expr) }
  end)
  L[#L + 1] = "  *(_gl_rt *)_gl_acc = a;\n}"
  L[#L + 1] = ("void %s_post(int64_t _gl_o, const gl_jit_geom *_gl_g, char *const *_gl_p, const void *_gl_acc, int _gl_nacc) {"):format(name)
  L[#L + 1] = declare_pointers(ps)
  L[#L + 1] = ("  int64_t _gl_idx[GL_JIT_MAXDIMS], _gl_ko[%d];"):format(nargs)
  L[#L + 1] = ("  gl_jit_locate(_gl_o, %d, _gl_idx, _gl_ko, _gl_g->nd, _gl_g->shape, _gl_g->str);"):format(nargs)
  L[#L + 1] = "  _gl_rt a = *(const _gl_rt *)_gl_acc;"
  L[#L + 1] = "  for (int _gl_t = 1; _gl_t < _gl_nacc; _gl_t++) {"
  L[#L + 1] = "    const _gl_rt b = *(const _gl_rt *)((const char *)_gl_acc + 8 * _gl_t);"
  L[#L + 1] = ("    a = (_gl_rt)(%s);"):format(reduce_expr)
  L[#L + 1] = "  }"
  L[#L + 1] = "  {"
  L[#L + 1] = post_map_lines(ps, post_map)
  L[#L + 1] = "  }\n}"
  return table.concat(L, "\n")
end

-- The reduced axes (a set of 1-based axes) from axis (nil: all; a number; a table)
local function reduced_axes(fname, argn, axis, nd)
  local set, list = {}, {}
  if axis == nil then
    for d = 1, nd do set[d] = true end
    return set
  end
  if type(axis) == "number" then list = { axis } else list = axis end
  for _, a in ipairs(list) do
    if math.type(a) ~= "integer" then argerror(fname, argn, "axis must be an integer, got %s", tostring(a)) end
    local d = a < 0 and nd + 1 + a or a
    if d < 1 or d > nd then argerror(fname, argn, "axis %d is out of range for an array of %d dimensions", a, nd) end
    if set[d] then argerror(fname, argn, "axis %d repeated", a) end
    set[d] = true
  end
  return set
end

-- The kernel's call: k(inputs... [, outputs...] [, {axis =, keepdims =}])
function Reduction:__call(...)
  local fname = self.fname
  local o, params, types, dts, vals, shapes, shape, dev = bind_call(self, RK_CALL, false, ...)
  if #shapes == 0 then options.raise("%s: no input array to reduce", fname) end
  local nd = #shape
  local red = reduced_axes(fname, select("#", ...), o.axis, nd)
  local kshape, oshape, mask = {}, {}, {}
  for d = 1, nd do
    mask[d] = red[d] and "1" or "0"
    kshape[d] = red[d] and 1 or shape[d]
    if not red[d] then oshape[#oshape + 1] = shape[d] elseif o.keepdims then oshape[#oshape + 1] = 1 end
  end
  local function output(k, p, v)
    if v == nil then v = gpu.empty(oshape, { dtype = dts[k], device = dev })
    elseif not same_shape(v.shape, oshape) then
      argerror(fname, k, "output '%s' has shape %s, the reduction gives %s", p.name, options.shape_str(v.shape),
        options.shape_str(oshape))
    end
    return v, v:view(kshape)
  end
  -- the reduction's type: reduce_type, else the first input's
  local rtype = self.reduce_type and (DTYPE_NAMES[self.reduce_type] and self.reduce_type or types[self.reduce_type]) or dts[1]
  if rtype == nil then options.raise("%s: cannot tell reduce_type %s from the arguments", fname, self.reduce_type) end
  return launch_call(self, params, dts, vals, dev, shape, output, "|" .. rtype, function(name, ps, cuda)
    return (cuda and reduction_source_cuda or reduction_source)(name, ps, types, rtype, self.preamble,
      self.identity or "0", self.map_expr, self.reduce_expr, self.post_map_expr)
  end, table.concat(mask))
end

-- ---- RawKernel, RawModule ----------------------------------------------------------------------

local Raw = {}
Raw.__index = Raw

function M.RawKernel(code, name, opts)
  local fname = "gpu.RawKernel"
  if type(code) ~= "string" then argerror(fname, 1, "code: string expected, got %s", options.type_name(code)) end
  check_name(fname, 2, name)
  if opts ~= nil and type(opts) ~= "table" then argerror(fname, 3, "options table expected, got %s", options.type_name(opts)) end
  return setmetatable({ code = code, name = name, fname = "RawKernel '" .. name .. "'" }, Raw)
end

-- k({grid}, {block}, {args...} [, {shared_mem =}]): a CUDA kernel; the cpu has none.
-- args: arrays (their device pointers) and scalars as {value, dtype} (the kernel's
-- parameter type: C has no way to tell it from a Lua number).
local RAW_CALL = options.declare("RawKernel.__call", { shared_mem = { type = "integer", min = 0, default = 0 } },
  -- (the example runs everywhere: on a machine without a GPU the call's own refusal is expected)
  { example = [[local ok, e = pcall(gpu.RawKernel('extern "C" __global__ void f() {}', "f"), {1}, {1}, {}, %s) ]] ..
    [[if not ok and not tostring(e):find("on a GPU only", 1, true) then error(e, 0) end]] })
function Raw:__call(grid, block, args, opts)
  if type(grid) ~= "table" then argerror(self.fname, 1, "grid: table expected, got %s", options.type_name(grid)) end
  if type(block) ~= "table" then argerror(self.fname, 2, "block: table expected, got %s", options.type_name(block)) end
  if type(args) ~= "table" then argerror(self.fname, 3, "args: table expected, got %s", options.type_name(args)) end
  local o = RAW_CALL:check(opts, 4, self.fname)
  local dev
  for _, a in ipairs(args) do if is_array(a) then dev = dev or a.device end end
  dev = dev or gpu.device()
  if compiles_c(dev) then
    options.raise("%s: RawKernel is CUDA source and runs on a GPU only; on the %s use gpu.ElementwiseKernel or " ..
      "gpu.ReductionKernel", self.fname, dev)
  end
  options.call(self.fname, jit.raw, self.code, self.name, grid, block, args, o.shared_mem)
end

local RawMod = {}
RawMod.__index = RawMod

function M.RawModule(code, opts)
  local fname = "gpu.RawModule"
  if type(code) ~= "string" then argerror(fname, 1, "code: string expected, got %s", options.type_name(code)) end
  if opts ~= nil and type(opts) ~= "table" then argerror(fname, 2, "options table expected, got %s", options.type_name(opts)) end
  return setmetatable({ code = code }, RawMod)
end

function RawMod:get_function(name)
  check_name("RawModule:get_function", 1, name)
  return setmetatable({ code = self.code, name = name, fname = "RawModule function '" .. name .. "'" }, Raw)
end

-- fuse(fn): lua/gpu/fuse.lua
function M.fuse(fn, opts) return require("gpu.fuse").fuse(fn, opts) end

-- what each takes (gpu.ElementwiseKernel & co., lkernel.c's stubs, pass their calls on here)
for _, k in ipairs { "ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule", "fuse" } do
  M[k] = options.counted(k, M[k])
end

M._CT, M._convert, M._load, M._store, M._compile, M._compile_cuda = CT, convert, load, store, compile, compile_cuda
M._broadcast, M._reduced_axes = broadcast, reduced_axes
return M

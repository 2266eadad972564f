-- gpu.fuse(fn): runs fn's elementwise ops (and one final reduction) as one generated
-- kernel (lua/gpu/kernel.lua compiles it).
--
-- At each call, fn runs once on tracers: stand-ins for its array arguments that have the
-- array operators and methods but compute nothing; each op they see becomes a line of C.
-- The dtype of each op's result comes from running the op itself on 0-d probes of the
-- operands' dtypes (the scalars with their own values), so the promotions, the weak Lua
-- scalars and the refusals are gpulua's own; the element math comes from kernels/elem.h
-- (the prelude's gl_jf_<op> & co.), each result rounded to its dtype as the unfused op
-- stores it: the fused kernel computes what the unfused ops compute. Lua numbers become
-- kernel parameters, so a kernel compiled once serves every value (and an upvalue that
-- changes between calls is seen: tracing runs at every call, a few microseconds an op).
--
-- Anything the tracer does not know (another function, x:item(), a reduction that is not
-- the last op, outputs of different shapes, an op the probe refuses, more parameters than
-- a kernel takes: gpu._jit.max_args) ends the trace, and
-- fn runs unfused: slower, never wrong. So does a call with an input that requires grad
-- (with grad mode on): the unfused ops record the backward per op. Without a C compiler
-- every call runs unfused, after a notice on stderr (once per process). Inputs on cuda run
-- the same kernel compiled by NVRTC (kernel.lua); without NVRTC they run unfused, after a
-- notice. Complex operands fuse too (jit_ops.h's gl_jcomplex64_<op>: complex.h's math, the
-- unfused ops' own); a reduction of complex values ends the trace.
local gpu = require "gpu"
local options = require "gpu.options"
local kernel = require "gpu.kernel"

local M = {}

local CT, convert = kernel._CT, kernel._convert
local is_array = options.is_array
local UNARY, BINARY, MAX_ARGS = gpu._jit.unary, gpu._jit.binary, gpu._jit.max_args
local ALIAS = gpu._ops.aliases            -- NumPy names of ops, in order and name -> op
local REDUCE = { sum = true, prod = true, mean = true, max = true, min = true }
-- the dtype a cast method converts to (x:half(), x:float(): a method named by a dtype or an
-- alias of one, src/lua/lshape.c), or nil
local function cast_of(name)
  local row = gpu._dtypes[name]
  return type(row) == "table" and type(rawget(gpu.methods, name)) == "function" and row.name or nil
end

-- ---- the trace -----------------------------------------------------------------------------

local Tracer = {}
local trace       -- the trace in progress: { lines, nvar, inputs, scalars }
local unfusable = setmetatable({}, { __tostring = function() return "gpu.fuse: not fusable" end })

local function stop(why)
  trace.why = why
  error(unfusable, 0)
end

local function is_tracer(v) return getmetatable(v) == Tracer end

local function new_node(dt, shape, expr)
  trace.nvar = trace.nvar + 1
  local var = "t" .. trace.nvar
  trace.lines[#trace.lines + 1] = ("const %s %s = %s;"):format(CT[dt].c, var, expr)
  return setmetatable({ dtype = dt, shape = shape, var = var, probe = gpu.ones({}, { dtype = dt }),
    ndim = #shape, device = trace.device }, Tracer)
end

-- A Lua number as a kernel parameter: its C name, dtype and the probe value (itself)
local function scalar(v)
  local dt = type(v) == "boolean" and "bool" or math.type(v) == "integer" and "int64" or "float64"
  local k = #trace.scalars + 1
  trace.scalars[k] = { value = v, dtype = dt }
  return { var = "c" .. k, dtype = dt, probe = v, shape = {} }
end

local function operand(v)
  if is_tracer(v) then
    if rawget(v, "reduced") then stop("a reduction's result used again") end
    return v
  end
  if type(v) == "number" or type(v) == "boolean" then return scalar(v) end
  stop("an operand that is not an argument of the fused function (" .. options.type_name(v) .. ")")
end

local function merged_shape(a, b, c)
  local shape = kernel._broadcast({ a.shape, b and b.shape or {}, c and c.shape or {} })
  if not shape then stop("shapes that do not broadcast") end
  return shape
end

-- The probe's answer, or the end of the trace
local function probe(f, ...)
  local ok, r = pcall(f, ...)
  if not ok or not is_array(r) then stop("the op refuses these operands: " .. tostring(r)) end
  return r.dtype
end

-- The C function of jit_ops.h for op name computing in dtype ct, and the dtype its
-- result is a value of (float for the halves, uint8 for bool; a complex function returns
-- the op's result r: complex, its real part's type (abs, angle) or bool)
local function fn(name, ct, r)
  local f = CT[ct].fn
  if not f then stop("no fused math for " .. ct) end
  local rdt = CT[ct].c == "float" and "float32" or ct == "bool" and "uint8" or CT[ct].real and r or ct
  return "gl_j" .. f .. "_" .. name, rdt
end

local function unary(name, x)
  x = operand(x)
  local kind = UNARY[name]
  local r = probe(gpu[name], x.probe)
  if x.dtype == "bool" and kind ~= "UL" and kind ~= "UP" then stop(name .. " on bool") end
  -- (a complex operand computes in its own dtype, whatever the op returns)
  local ct = (kind == "UP" or kind == "UL" or kind == "UB" or CT[x.dtype].real) and x.dtype or r
  if ct == "bool" then ct = "uint8" end
  local f, fdt = fn(name, ct, r)
  return new_node(r, x.shape, convert(f .. "(" .. convert(x.var, x.dtype, ct) .. ")", fdt, r))
end

local function binary(name, a, b, opfn)
  a, b = operand(a), operand(b)
  local kind = BINARY[name]
  local r = probe(opfn or gpu[name], a.probe, b.probe)
  local ct = r
  if kind == "BC" or kind == "BL" then ct = probe(gpu.add, a.probe, b.probe) end
  if ct == "bool" and kind ~= "BC" and kind ~= "BL" then stop(name .. " on bool") end
  local f, fdt = fn(name, ct, r)
  if ct == "bool" then ct = "uint8" end
  local e = ("%s(%s, %s)"):format(f, convert(a.var, a.dtype, ct), convert(b.var, b.dtype, ct))
  return new_node(r, merged_shape(a, b), convert(e, fdt, r))
end

local function where(c, a, b)
  c, a, b = operand(c), operand(a), operand(b)
  local r = probe(gpu.where, c.probe, a.probe, b.probe)
  local e = ("(%s ? %s : %s)"):format(convert(c.var, c.dtype, "bool"), convert(a.var, a.dtype, r), convert(b.var, b.dtype, r))
  return new_node(r, merged_shape(c, a, b), e)
end

local function astype(x, dt)
  x = operand(x)
  local r = probe(function(p) return p:astype(dt) end, x.probe)
  return new_node(r, x.shape, convert(x.var, x.dtype, r))
end

-- x:sum([axis] [, {keepdims =}]) & co.: the last op of the function
local function reduction(name, x, axis, opts)
  x = operand(x)
  if type(axis) == "table" then
    if opts ~= nil or axis[1] ~= nil then stop("a reduction over several axes") end
    axis, opts = nil, axis
  end
  if opts ~= nil then
    for key in pairs(opts) do if key ~= "keepdims" then stop("the reduction option " .. tostring(key)) end end
  end
  if axis ~= nil and math.type(axis) ~= "integer" then stop("a reduction axis that is not an integer") end
  if CT[x.dtype].real then stop("a reduction of " .. x.dtype) end
  local r = probe(function(p) return p[name](p) end, x.probe)
  local keepdims = opts and opts.keepdims or false
  local n = setmetatable({ dtype = r, shape = {}, var = "-", probe = gpu.ones({}, { dtype = r }), reduced = true,
    of = x, op = name, axis = axis, keepdims = keepdims }, Tracer)
  return n
end

-- ---- the tracer's operators and methods ----------------------------------------------------

local META = { __add = "add", __sub = "sub", __mul = "mul", __div = "div", __mod = "mod", __pow = "pow",
  __idiv = "floordiv", __band = "bitwise_and", __bor = "bitwise_or", __bxor = "bitwise_xor",
  __shl = "left_shift", __shr = "right_shift" }
for mm, name in pairs(META) do
  local op = load("local a, b = ... return a " .. ({ __add = "+", __sub = "-", __mul = "*", __div = "/", __mod = "%",
    __pow = "^", __idiv = "//", __band = "&", __bor = "|", __bxor = "~", __shl = "<<", __shr = ">>" })[mm] .. " b")
  Tracer[mm] = function(a, b) return binary(name, a, b, op) end
end
Tracer.__unm = function(a) return unary("neg", a) end
Tracer.__bnot = function(a) return unary("bitwise_not", a) end
Tracer.__len = function(a) return a.shape[1] end
Tracer.__index = function(t, key)
  if key == "size" then
    local n = 1
    for _, e in ipairs(t.shape) do n = n * e end
    return n
  end
  local name = ALIAS[key] or key
  if UNARY[name] then return function(x) return unary(name, x) end end
  if BINARY[name] then return function(a, b) return binary(name, a, b) end end
  if REDUCE[name] then return function(x, axis, opts) return reduction(name, x, axis, opts) end end
  if name == "astype" then return astype end
  local cast = cast_of(name)
  if cast then return function(x) return astype(x, cast) end end
  stop("x." .. tostring(key))
end
Tracer.__newindex = function() stop("an assignment into an array") end

-- gpu.f(x, ...) while tracing: gpu's module functions that the tracer knows, with a tracer
-- argument, trace; with arrays only they run as usual (the module table is restored after).
local function any_tracer(...)
  for i = 1, select("#", ...) do if is_tracer((select(i, ...))) then return true end end
  return false
end

local function wrappers()
  local w = {}
  local function wrap(name, traced)
    local orig = rawget(gpu, name)
    if type(orig) ~= "function" then return end
    w[name] = { orig = orig, f = function(...) if any_tracer(...) then return traced(...) end return orig(...) end }
  end
  for name in pairs(UNARY) do wrap(name, function(x) return unary(name, x) end) end
  for name in pairs(BINARY) do wrap(name, function(a, b) return binary(name, a, b) end) end
  for _, alias in ipairs(ALIAS) do
    local name = ALIAS[alias]
    if UNARY[name] then wrap(alias, function(x) return unary(name, x) end)
    else wrap(alias, function(a, b) return binary(name, a, b) end) end
  end
  for name in pairs(REDUCE) do wrap(name, function(x, axis, opts) return reduction(name, x, axis, opts) end) end
  wrap("where", where)
  wrap("astype", astype)
  return w
end

-- ---- from a trace to a kernel --------------------------------------------------------------

local kernels = {}     -- generated body -> kernel object

local function elementwise_kernel(ins, outs, body)
  local key = "E|" .. body
  local k = kernels[key]
  if not k then
    k = kernel.ElementwiseKernel(ins, outs, body, "fused")
    k._complex = true           -- its body is jit_ops.h's calls, which take complex values
    kernels[key] = k
  end
  return k
end

local REDUCE_C = {
  sum = { expr = "a + b", identity = "0" },
  mean = { expr = "a + b", identity = "0" },
  prod = { expr = "a * b", identity = "1" },
  max = { float = "gl_max(a, b)", int = "(a > b ? a : b)", ifloat = "-INFINITY", iint = "INT64_MIN" },
  min = { float = "gl_min(a, b)", int = "(a < b ? a : b)", ifloat = "INFINITY", iint = "INT64_MAX" },
}

-- The compilers a fused call can find missing: the error's words, what f.why says, and the
-- notice printed once (given: whether it was)
local missing_compilers = {
  { words = "no C compiler", why = "no C compiler", notice = "; fused functions run unfused\n" },
  { words = "cannot load NVRTC", why = "no NVRTC", notice = "; fused functions on cuda run unfused\n" },
}

local function run_unfused(fn, ...) return fn(...) end
-- Traces fn on the call's arguments; returns a runner, or nil (and the reason) when fn
-- must run unfused.
local function build(args, n)
  trace = { lines = {}, nvar = 0, scalars = {}, inputs = {}, device = "cpu" }
  local tr = {}
  for i = 1, n do
    local v = args[i]
    if is_array(v) then
      if v:is_closed() then return nil, "a closed array" end
      local k = #trace.inputs + 1
      local t = setmetatable({ dtype = v.dtype, shape = v.shape, var = "x" .. k, probe = gpu.ones({}, { dtype = v.dtype }),
        ndim = v.ndim, device = v.device, input = k }, Tracer)
      trace.device = v.device
      trace.inputs[k] = v
      tr[i] = t
    else
      tr[i] = v
    end
  end
  return tr
end

local function generate(results, nres)
  if nres == 0 then return nil, "no result" end
  local shape
  for i = 1, nres do
    local r = results[i]
    if not is_tracer(r) then return nil, "a result that is not an array" end
    if rawget(r, "reduced") and nres > 1 then return nil, "a reduction among several results" end
    local s = rawget(r, "reduced") and r.of.shape or r.shape
    if shape and not (#s == #shape and table.concat(s, ",") == table.concat(shape, ",")) then
      return nil, "results of different shapes"
    end
    shape = s
  end
  -- parameters: the inputs (in order), the scalars, the outputs
  local ins = {}
  for k, v in ipairs(trace.inputs) do ins[#ins + 1] = v.dtype .. " x" .. k end
  for k, s in ipairs(trace.scalars) do ins[#ins + 1] = s.dtype .. " c" .. k end
  local body = table.concat(trace.lines, "\n")
  local vals = {}
  for k, v in ipairs(trace.inputs) do vals[#vals + 1] = v end
  for _, s in ipairs(trace.scalars) do vals[#vals + 1] = s.value end
  -- a kernel takes at most MAX_ARGS parameters: more (inputs, Lua numbers, outputs, the
  -- count of a mean) run unfused
  local nparams = #ins + 1
  if not rawget(results[1], "reduced") then
    nparams = #ins
    for i = 1, nres do if not rawget(results[i], "input") then nparams = nparams + 1 end end
  elseif results[1].op == "mean" then
    nparams = nparams + 1
  end
  if nparams > MAX_ARGS then return nil, ("more than %d kernel parameters (%d)"):format(MAX_ARGS, nparams) end
  local r1 = results[1]
  if rawget(r1, "reduced") then
    local x, op = r1.of, REDUCE_C[r1.op]
    local isfloat = x.dtype:find("float") ~= nil
    local acc = (op.expr and (isfloat and "float64" or "int64")) or (isfloat and "float64" or "int64")
    local nelem
    if r1.op == "mean" then
      nelem = 1
      if rawget(r1, "axis") == nil then for _, e in ipairs(x.shape) do nelem = nelem * e end
      else
        local d = r1.axis < 0 and #x.shape + 1 + r1.axis or r1.axis
        nelem = x.shape[d]
        if nelem == nil then return nil, "axis out of range" end
      end
      ins[#ins + 1] = "float64 cnt"
      vals[#vals + 1] = nelem
    end
    local total = 1
    for _, e in ipairs(x.shape) do total = total * e end
    if (r1.op == "max" or r1.op == "min") and total == 0 then return nil, "max/min of an empty array" end
    local map = ("({ %s\n %s; })"):format(body, convert(x.var, x.dtype, acc))
    local preamble = ""
    if trace.device ~= "cpu" or kernel._capture then
      -- NVRTC has no statement expressions: the map is a device function of the preamble
      -- (GL_JIT_FN: kernels/jit_ops.h), called with the inputs and the scalars
      local formals, actuals = {}, {}
      for k, v in ipairs(trace.inputs) do formals[#formals + 1] = CT[v.dtype].c .. " x" .. k; actuals[#actuals + 1] = "x" .. k end
      for k, sc in ipairs(trace.scalars) do formals[#formals + 1] = CT[sc.dtype].c .. " c" .. k; actuals[#actuals + 1] = "c" .. k end
      preamble = ("GL_JIT_FN %s _gl_fused_map(%s) {\n%s\nreturn %s;\n}"):format(CT[acc].c, table.concat(formals, ", "), body,
        convert(x.var, x.dtype, acc))
      map = ("_gl_fused_map(%s)"):format(table.concat(actuals, ", "))
    end
    local post = r1.op == "mean" and ("y1 = %s;"):format(convert("(double)a / cnt", "float64", r1.dtype))
      or ("y1 = %s;"):format(convert("a", acc, r1.dtype))
    local rexpr = op.expr or (isfloat and op.float or op.int)
    local ident = op.identity or (isfloat and op.ifloat or op.iint)
    local key = "R|" .. table.concat(ins, ",") .. "|" .. map .. "|" .. rexpr .. "|" .. post .. "|" .. acc .. "|" .. r1.dtype ..
      "|" .. preamble
    local k = kernels[key]
    if not k then
      k = kernel.ReductionKernel(table.concat(ins, ", "), r1.dtype .. " y1", map, rexpr, post, ident, "fused_reduce",
        { reduce_type = acc, preamble = preamble })
      kernels[key] = k
    end
    local axis, keepdims = rawget(r1, "axis"), r1.keepdims
    local call_args = { table.unpack(vals, 1, #ins) }
    call_args[#ins + 1] = { axis = axis, keepdims = keepdims }
    return function() return k(table.unpack(call_args, 1, #ins + 1)) end
  end
  local outs, lines = {}, {}
  local passthrough = {}
  for i = 1, nres do
    local r = results[i]
    if rawget(r, "input") then passthrough[i] = trace.inputs[r.input]
    else
      outs[#outs + 1] = r.dtype .. " y" .. i
      lines[#lines + 1] = ("y%d = %s;"):format(i, r.var)
    end
  end
  if #outs == 0 then
    return function() return table.unpack(passthrough, 1, nres) end
  end
  -- every input is broadcast to the results' shape by the kernel; one with a bigger shape
  -- than the results (used by none of them) would make the kernel's shape bigger
  for _, v in ipairs(trace.inputs) do
    local b = kernel._broadcast({ v.shape, shape })
    if not b or #b ~= #shape or table.concat(b, ",") ~= table.concat(shape, ",") then
      return nil, "an input bigger than the results"
    end
  end
  if #trace.inputs == 0 then return nil, "no array input" end
  local k = elementwise_kernel(table.concat(ins, ", "), table.concat(outs, ", "), body .. "\n" .. table.concat(lines, "\n"))
  return function()
    local res = table.pack(k(table.unpack(vals, 1, #ins)))
    local out, j = {}, 0
    for i = 1, nres do
      if passthrough[i] then out[i] = passthrough[i] else j = j + 1; out[i] = res[j] end
    end
    return table.unpack(out, 1, nres)
  end
end

local function tracked(args, n)
  if not gpu.autograd.is_grad_enabled() then return false end
  for i = 1, n do
    if is_array(args[i]) and gpu.autograd.requires_grad(args[i]) then return true end
  end
  return false
end

-- fuse(fn) -> a function that runs fn fused where it can (see the top of this file)
function M.fuse(fn, opts)
  if type(fn) ~= "function" and not (type(fn) == "table" and getmetatable(fn) and getmetatable(fn).__call) then
    options.argerror("gpu.fuse", 1, "function expected, got %s", options.type_name(fn))
  end
  if opts ~= nil and type(opts) ~= "table" then
    options.argerror("gpu.fuse", 2, "options table expected, got %s", options.type_name(opts))
  end
  local stats = { fused = 0, unfused = 0 }
  local f = {}
  local function call(...)
    local n = select("#", ...)
    local args = { ... }
    local devs = {}
    for i = 1, n do if is_array(args[i]) then devs[args[i].device] = true end end
    if next(devs) == nil or next(devs, next(devs)) ~= nil or tracked(args, n) then
      stats.unfused = stats.unfused + 1
      f.why = "inputs on two devices, none, or tracked by autograd"
      return run_unfused(fn, ...)
    end
    local tr = build(args, n)
    local runner, why
    if tr then
      local w = wrappers()
      for name, e in pairs(w) do rawset(gpu, name, e.f) end
      local res = table.pack(pcall(fn, table.unpack(tr, 1, n)))
      for name, e in pairs(w) do rawset(gpu, name, e.orig) end
      if res[1] then runner, why = generate({ table.unpack(res, 2, res.n) }, res.n - 1)
      elseif res[2] == unfusable then why = trace.why
      else why = "the trace failed: " .. tostring(res[2]) end
    end
    trace = nil
    if runner then
      local res = table.pack(pcall(runner))
      if res[1] then
        stats.fused = stats.fused + 1
        f.why = nil
        return table.unpack(res, 2, res.n)
      end
      local msg = res[2]
      local m
      for _, c in ipairs(missing_compilers) do
        if type(msg) == "string" and msg:find(c.words, 1, true) then m = c break end
      end
      if not m then error(msg, 0) end
      if not m.given then
        m.given = true
        io.stderr:write("gpu.fuse: ", (msg:gsub("^.-(" .. m.words .. ")", "%1")), m.notice)
      end
      why = m.why
    end
    stats.unfused = stats.unfused + 1
    f.why = why
    return run_unfused(fn, ...)
  end
  f.stats = stats
  return setmetatable(f, { __call = function(_, ...) return call(...) end })
end

return M

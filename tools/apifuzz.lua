-- tools/apifuzz.lua — calls every gpu function (gpu.random, gpu.fused and gpu.dnn too),
-- array method and metamethod with random
-- arguments inside pcall; the process must survive every call (run under the ASan build
-- for memory errors).  usage: gpulua tools/apifuzz.lua [seed] [calls]
local seed = tonumber(arg[1]) or 1
math.randomseed(seed)
local skip = { bench = true, profile = true, range = true, empty_cache = false, set_device = false,
  save = true, savez = true, savez_compressed = true, save_safetensors = true, savetxt = true,
  load = true, loadz = true, load_safetensors = true, loadtxt = true, load_idx = true,
  autograd = true, nn = true, optim = true, data = true, check = true, no_grad = true, enable_grad = true,
  autocast = true, clock = true, synchronize = true }
local dtypes = { "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool" }
local function rarray()
  local k = math.random(6)
  local dt = dtypes[math.random(#dtypes)]
  local ok, a
  if k == 1 then ok, a = pcall(gpu.zeros, 0, { dtype = dt })
  elseif k == 2 then ok, a = pcall(gpu.array, 3.5, { dtype = dt })
  elseif k == 3 then ok, a = pcall(function() return gpu.arange(12, { dtype = dt }):reshape(3, 4) end)
  elseif k == 4 then ok, a = pcall(function() return gpu.arange(24, { dtype = dt }):reshape(2, 3, 4).T end)
  elseif k == 5 then ok, a = pcall(function() return gpu.arange(10, { dtype = dt })[{ { 1, 10, 3 } }] end)
  else ok, a = pcall(function() local x = gpu.ones(4, { dtype = dt }); x:close(); return x end) end
  return ok and a or nil
end
local vals = {
  function() return nil end, function() return 0 end, function() return -1 end, function() return 1 end,
  function() return 2 end, function() return 1e300 end, function() return -2^62 end, function() return 0 / 0 end,
  function() return 2.5 end, function() return "x" end, function() return "float32" end, function() return ":" end,
  function() return {} end, function() return { 1, 2 } end, function() return { -1 } end, function() return { 2, 0, -1 } end,
  function() return { dtype = "int32" } end, function() return { keepdims = true, axis = 9 } end,
  function() return true end, function() return print end, rarray, rarray, rarray, rarray,
}
local function rval() return vals[math.random(#vals)]() end
local names = {}
for k, v in pairs(gpu) do if type(v) == "function" and not skip[k] then names[#names + 1] = k end end
for k, v in pairs(gpu.methods) do if type(v) == "function" and not skip[k] then names[#names + 1] = "m:" .. k end end
for k, v in pairs(gpu.random) do if type(v) == "function" then names[#names + 1] = "r:" .. k end end
for k, v in pairs(gpu.fused) do if type(v) == "function" then names[#names + 1] = "f:" .. k end end
for k, v in pairs(gpu.dnn) do if type(v) == "function" then names[#names + 1] = "d:" .. k end end
table.sort(names)
local ops = { "__add", "__sub", "__mul", "__div", "__idiv", "__mod", "__pow", "__band", "__shl", "__lt", "__le", "__index", "__newindex", "__len", "__unm" }
local meta = getmetatable(gpu.zeros(1))
for i = 1, tonumber(arg[2]) or 20000 do
  local name = names[math.random(#names)]
  local f
  if name:sub(1, 2) == "m:" then f = gpu.methods[name:sub(3)]
  elseif name:sub(1, 2) == "r:" then f = gpu.random[name:sub(3)]
  elseif name:sub(1, 2) == "f:" then f = gpu.fused[name:sub(3)]
  elseif name:sub(1, 2) == "d:" then f = gpu.dnn[name:sub(3)]
  else f = gpu[name] end
  local n = math.random(0, 6)
  local args = {}
  for j = 1, n do args[j] = rval() end
  if math.random(4) == 1 then args[1] = rarray() end
  pcall(f, table.unpack(args, 1, n))
  local op = ops[math.random(#ops)]
  pcall(meta[op], rval(), rval(), rval())
  if i % 2000 == 0 then collectgarbage() end
end
print("apifuzz ok", seed)

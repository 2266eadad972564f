-- check_gpu.lua — is there a usable GPU, which one will gpulua use, and which versions
-- of CUDA, the driver, cuBLAS, cuDNN and BLAS are in play (the seeds'
-- torch.cuda.is_available(), tf.config.list_physical_devices('GPU'), nvcc --version).
--
-- Choosing the device:
--   GPULUA_DEVICE=cuda:1 ./gpulua script.lua    gpulua's default device (cpu, cuda, cuda:N)
--   ./gpulua --device cpu script.lua            the same from the command line
--   CUDA_VISIBLE_DEVICES=2,3 ./gpulua ...        the CUDA runtime only shows GPUs 2 and 3
--                                               (as cuda:0 and cuda:1); "" hides them all
--   gpu.set_device("cuda:1") / x:to("cuda:1")   from a script
--
-- Run: ./gpulua examples/check_gpu.lua [--small]
local gpu = require "gpu"

local function gib(n) return type(n) == "number" and ("%.1f GiB"):format(n / 2^30) or "-" end

-- 1. availability, and the reason when there is none
local ok, why = gpu.is_available()
print("CUDA available: " .. tostring(ok) .. (ok and "" or " (" .. tostring(why) .. ")"))
print("GPUs: " .. gpu.device_count())

-- 2. what was chosen and why
local env_dev, env_vis = os.getenv("GPULUA_DEVICE"), os.getenv("CUDA_VISIBLE_DEVICES")
if env_dev == "" then env_dev = nil end                 -- empty: as if unset
print("GPULUA_DEVICE=" .. (env_dev or "(unset)") .. "  CUDA_VISIBLE_DEVICES=" .. (env_vis or "(unset)"))
print("new arrays go to: " .. gpu.device() .. (env_dev and "  (from GPULUA_DEVICE)" or
      ok and "  (the first GPU)" or "  (no GPU, so the CPU)"))

-- 3. every device
for i, d in ipairs(gpu.devices()) do
  local extra = d.capability and ("  compute capability %s, %s SMs"):format(
    type(d.capability) == "table" and table.concat(d.capability, ".") or tostring(d.capability),
    tostring(d.multiprocessors)) or ("  %s cores"):format(tostring(d.cores))
  print(("  %d. %-7s %s, %s%s"):format(i, d.device, d.name, gib(d.total_memory), extra))
end

-- 4. versions: gpulua, Lua, what it was built with, what it found at run time
local c = gpu.config()
print(("gpulua %s on %s, built with %s"):format(c.version, c.lua, c.build.compiler))
local built = {}
for _, k in ipairs({"cuda", "cudnn", "openmp", "sanitizers"}) do
  built[#built + 1] = k .. "=" .. tostring(c.build[k])
end
print("build: " .. table.concat(built, " "))
local v = c.versions
for _, k in ipairs({"cuda_runtime", "cuda_driver", "cublas", "cudnn", "blas"}) do
  print(("  %-13s %s"):format(k, v[k] ~= nil and tostring(v[k]) or "-"))
end
if v.cuda_runtime and not v.cuda_driver then
  print("  (no driver answered: the runtime needs a driver at least as new as itself)")
end

-- 5. a tiny self-test on the chosen device, and moving an array between devices
local x = gpu.arange(1, 4, {dtype = "float32"})
local y = (x * x):to("cpu")
print(("self-test on %s: (1..3)^2 = {%s}"):format(x.device, table.concat(y:totable(), ", ")))
if ok then
  local z = x:to("cpu"):to("cuda:0")
  print("cpu -> cuda:0 round trip: " .. tostring(z:to("cpu"):eq(y:sqrt()):all():item()))
end
print("check_gpu ok")

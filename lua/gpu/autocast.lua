-- gpu.autocast(dtype, fn, ...): see gpu.amp (lua/gpu/amp.lua).
return require("gpu.amp").autocast

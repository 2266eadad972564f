-- luarocks: builds the gpu module (gpu.so, with its Lua sources compiled in) for a stock
-- Lua 5.4 from this checkout:
--   luarocks --lua-version 5.4 make                  (into the default tree)
--   luarocks --lua-version 5.4 --tree /tmp/t make    (into /tmp/t/lib/lua/5.4/gpu.so)
-- CUDA is auto-detected as by `make` (nvcc under CUDA_HOME, /usr/local/cuda or on PATH);
-- `CUDA=0 luarocks ... make` builds the CPU-only module. The build stays in build/rock
-- (ROCK_BUILD in the environment moves it).
rockspec_format = "3.0"
package = "gpulua"
version = "scm-1"
source = {
  -- the rock is built from a checkout (`luarocks make`); the project is not published
  url = "git+file://./",
}
description = {
  summary = "NumPy/CuPy-style arrays for Lua 5.4 on CPU (OpenMP, OpenBLAS) and CUDA",
  detailed = [[
The gpu module: n-dimensional arrays with broadcasting, reductions, linear algebra,
automatic differentiation and neural-network layers, on the CPU or on NVIDIA GPUs.
The gpulua interpreter and the embedding library are installed by `make install`.]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
build = {
  type = "make",
  build_target = "rock",
  build_variables = {
    LUA_INC = "$(LUA_INCDIR)",
  },
  install_target = "install-rock",
  install_variables = {
    LUA_INC = "$(LUA_INCDIR)",
    INST_LIBDIR = "$(LIBDIR)",
  },
}

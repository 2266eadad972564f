-- The Makefile's checks for optional CUDA libraries: NCCL's code is compiled only where
-- <nccl.h> is found (a toolkit without it must still build), and the kernels do not
-- depend on it. Dry runs (make -n) into a scratch build folder: nothing is compiled.
local h = require "spec.helper"

local function make_n(args)
  local dir = "build/spec-make-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e6))
  -- the make running the specs passes its own variables (CUDA=0) down, in MAKEFLAGS and the
  -- environment (command-line variables are exported): not here
  local code, out, err = h.run(("env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CUDA make -n BUILD=%s BIN=%s/gpulua SO=%s/gpu.so LIB=%s/libgpulua.a %s"):format(
    dir, dir, dir, dir, args))
  os.execute("rm -rf " .. dir)
  return code, out, err
end

local cuda = os.execute("command -v nvcc >/dev/null 2>&1 || test -x /usr/local/cuda/bin/nvcc")

describe("the build's check for NCCL", function()
  it("leaves cuda_nccl.c and GL_WITH_NCCL out when nccl.h is not found", function()
    if not cuda then return pending("no CUDA toolkit here") end
    local code, out, err = make_n("NCCL_INC=/nonexistent")
    assert.equal(0, code, err)
    assert.is_nil(out:find("cuda_nccl", 1, true), "cuda_nccl.c is compiled without nccl.h")
    assert.is_nil(out:find("GL_WITH_NCCL", 1, true), "GL_WITH_NCCL is defined without nccl.h")
    assert.truthy(out:find("cuda_backend.c", 1, true), "the CUDA backend is not built")
  end)

  it("compiles cuda_nccl.c with GL_WITH_NCCL where nccl.h is, and never passes it to nvcc", function()
    if not cuda then return pending("no CUDA toolkit here") end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. " && touch " .. dir .. "/nccl.h"))
    local code, out, err = make_n("NCCL_INC=" .. dir)
    os.execute("rm -rf " .. dir)
    assert.equal(0, code, err)
    local nccl_line = out:match("[^\n]*%-c src/backend/cuda/cuda_nccl%.c[^\n]*")
    assert.truthy(nccl_line, "cuda_nccl.c is not compiled")
    assert.truthy(nccl_line:find("-DGL_WITH_NCCL -I" .. dir, 1, true), nccl_line)
    local kernels = 0
    for line in out:gmatch("[^\n]+") do
      if line:find("nvcc", 1, true) and line:find("%.cu ") then
        kernels = kernels + 1
        assert.is_nil(line:find("GL_WITH_NCCL", 1, true), line)
      end
    end
    assert.is_true(kernels > 0, "no kernel is compiled")
  end)
end)

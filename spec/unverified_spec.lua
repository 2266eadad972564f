-- spec/unverified_spec.lua — doc/UNVERIFIED.md is what tools/unverified.lua makes of the tree,
-- and the generator finds the functions, fingerprints their code (not comments) and reads the
-- record of GPU runs.
local h = require "spec.helper"
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local ROOT = io.popen("pwd"):read("l")

-- the generator run in folder dir (default: the repository) with args
local function gen(args, dir)
  return h.run(string.format("cd %s && %s %s/tools/unverified.lua %s", dir or ".",
                             BIN:match("^/") and BIN or ROOT .. "/" .. BIN, ROOT, args))
end

describe("doc/UNVERIFIED.md", function()
  it("is what the tree makes (make unverified)", function()
    local code, out, err = gen("--check doc/UNVERIFIED.md")
    assert.are.equal("", err)
    assert.are.equal("", out)
    assert.are.equal(0, code)
  end)

  it("names the top-level functions of the GPU files, each with a fingerprint", function()
    local code, out = gen("--record 2000-01-01 test")
    assert.are.equal(0, code)
    local n, names = 0, {}
    for path, name, fp in out:gmatch("2000%-01%-01\ttest\t([^\t]+)\t([^\t]+)\t([^\n]+)\n") do
      assert.truthy(path:match("^src/backend/cuda/") or path:match("^kernels/.*%.cuh?$") or path:match("^kernels/.*%.h$"), path)
      assert.truthy(fp:match("^%x+$") and #fp == 16, fp)
      assert.is_nil(name:match("^__"), name)        -- an attribute is not the function's name
      names[name] = true
      n = n + 1
    end
    assert.is_true(n > 100)
    assert.is_true(names.gl_klaunch_binary)
    assert.is_true(names.GL_BINARY_OPS)          -- an op list: a new row is a change
  end)

  describe("on a small tree", function()
    local dir
    before_each(function()
      dir = h.tmpdir()
      assert(os.execute("mkdir -p " .. dir .. "/src/backend/cuda " .. dir .. "/kernels " .. dir .. "/bench"))
    end)
    after_each(function() os.execute("rm -rf " .. dir) end)
    local function kernel(text) h.spit(dir .. "/kernels/a.cu", text) end
    local function record() local code, out = gen("--record d g", dir); assert.are.equal(0, code); return out end
    local function ledger() local code, out = gen("", dir); assert.are.equal(0, code); return out end

    it("leaves comments, spacing, declarations and macro uses out", function()
      kernel("/* one */\n__global__ void __launch_bounds__(256) k(int *x)\n{\n  x[0] = 1;  // set\n}\n"
             .. "static int twice(int v);\nstatic int twice(int v) { return 2 * v; }\nGL_LIST(GL_X)\n#undef GL_X\n")
      local a = record()
      assert.are.equal(2, select(2, a:gsub("\n", "")))
      assert.truthy(a:match("kernels/a%.cu\tk\t%x+\n"))
      assert.truthy(a:match("kernels/a%.cu\ttwice\t%x+\n"))
      kernel("/* two */\n__global__ void __launch_bounds__(256) k(int *x)\n{\n    x[0] = 1;   /* set it */\n}\n"
             .. "static int twice(int v);\nstatic int twice(int v) { return 2 * v; }\nGL_LIST(GL_X)\n#undef GL_X\n")
      assert.are.equal(a, record())
      kernel("__global__ void __launch_bounds__(256) k(int *x)\n{\n  x[0] = 2;\n}\n")
      assert.are_not.equal(a:match("\tk\t(%x+)"), record():match("\tk\t(%x+)"))
      -- a macro of several lines counts as code; a one-line one does not
      kernel("#define ONE 1\n#define GL_LIST(X) \\\n  X(a) \\\n  X(b)\n")
      local m = record()
      assert.truthy(m:match("kernels/a%.cu\tGL_LIST\t%x+\n"), m)
      assert.falsy(m:find("\tONE\t", 1, true))
      kernel("#define ONE 1\n#define GL_LIST(X) \\\n  X(a) \\\n  X(b) \\\n  X(c)\n")
      assert.are_not.equal(m, record())
    end)

    it("counts a recorded function as run until its code changes", function()
      kernel("__global__ void k(int *x)\n{\n  x[0] = 2;\n}\n")
      assert.truthy(ledger():find("1 of 1 functions have not run", 1, true))
      h.spit(dir .. "/bench/gpu-ran.tsv", "# date, device, path, function, fingerprint\n" .. record())
      local l = ledger()
      assert.truthy(l:find("0 of 1 functions have not run", 1, true), l)
      assert.truthy(l:find("Runs on record: d, g.", 1, true), l)
      kernel("__global__ void k(int *x)\n{\n  x[0] = 3;\n}\n")
      l = ledger()
      assert.truthy(l:find("1 of 1 functions have not run", 1, true), l)
      assert.truthy(l:find("- kernels/a.cu: `k`", 1, true), l)
    end)

    it("refuses a record line it cannot read, and names a stale ledger", function()
      kernel("__global__ void k(int *x)\n{\n  x[0] = 2;\n}\n")
      h.spit(dir .. "/bench/gpu-ran.tsv", "d\tg\tkernels/a.cu\n")
      local code, _, err = gen("", dir)
      assert.are_not.equal(0, code)
      assert.truthy(err:find("gpu-ran.tsv: a line is not date, device, path, function, fingerprint", 1, true), err)
      h.spit(dir .. "/bench/gpu-ran.tsv", "")
      h.spit(dir .. "/U.md", "# old\n")
      code, _, err = gen("--check U.md", dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("U.md is stale (run make unverified): line 1", 1, true), err)
    end)
  end)
end)

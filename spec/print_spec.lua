-- print_spec.lua — tostring(x) after NumPy's repr.
local h = require "spec.helper"
local gpu = h.gpu

local S = tostring

describe("tostring", function()
  -- the expected strings say device=cpu: make new arrays there even where a GPU answers
  local saved
  setup(function() saved = gpu.device(); gpu.set_device("cpu") end)
  teardown(function() gpu.set_device(saved) end)

  it("integers, aligned to the widest", function()
    assert.equal("gpu.array([0, 1, 2, 3, 4], dtype=int64, device=cpu)", S(gpu.arange(5)))
    assert.equal("gpu.array([10,  7,  4,  1], dtype=int64, device=cpu)", S(gpu.arange(10, 0, -3)))
    assert.equal("gpu.array([-5, 20], dtype=int32, device=cpu)", S(gpu.array({-5, 20}, {dtype = "int32"})))
    assert.equal("gpu.array([255,   0], dtype=uint8, device=cpu)", S(gpu.array({255, 0}, {dtype = "uint8"})))
  end)

  it("floats: shortest digits, points aligned", function()
    assert.equal("gpu.array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32, device=cpu)", S(gpu.linspace(0, 1, 5)))
    assert.equal("gpu.array([0. , 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], dtype=float32, device=cpu)",
                 S(gpu.arange(0, 1, 0.1)))
    assert.equal("gpu.array([1., 2., 3.], dtype=float32, device=cpu)", S(gpu.array{1, 2, 3}))
    assert.equal("gpu.array([-1.5,  2. ], dtype=float32, device=cpu)", S(gpu.array{-1.5, 2}))
    assert.equal("gpu.array([3.14159], dtype=float64, device=cpu)", S(gpu.array({3.14159}, {dtype = "float64"})))
    assert.equal("gpu.array([0.1], dtype=float32, device=cpu)", S(gpu.array{0.1}))
    assert.equal("gpu.array([ inf, -inf,  nan,   1.], dtype=float32, device=cpu)", S(gpu.array{1/0, -1/0, 0/0, 1}))
  end)

  it("floats: scientific notation for wide or extreme magnitudes", function()
    assert.equal("gpu.array([1.e-05, 1.e+10], dtype=float32, device=cpu)", S(gpu.array{1e-5, 1e10}))
    assert.equal("gpu.array([1.5e+00, 1.0e+10], dtype=float32, device=cpu)", S(gpu.array{1.5, 1e10}))
    assert.equal("gpu.array([1.0000e-03, 1.2325e+02], dtype=float32, device=cpu)", S(gpu.array{0.001, 123.25}))
    assert.equal("gpu.array([1.e+00, 2.e+00, 1.e+06], dtype=float32, device=cpu)", S(gpu.array{1, 2, 1e6}))
    assert.equal("gpu.array([1.e+08], dtype=float32, device=cpu)", S(gpu.array{1e8}))
  end)

  it("bool, float16 and bfloat16", function()
    assert.equal("gpu.array([[ true, false],\n           [false,  true]], dtype=bool, device=cpu)",
                 S(gpu.array{{true, false}, {false, true}}))
    assert.equal("gpu.array([0.1 , 0.25, 1.  ], dtype=float16, device=cpu)", S(gpu.array({0.1, 0.25, 1}, {dtype = "float16"})))
    -- the shortest digits that read back in float16, zero-padded in scientific mode
    assert.equal("gpu.array([1.000e-01, 6.550e+04, 3.333e-01], dtype=float16, device=cpu)",
                 S(gpu.array({0.1, 65504, 1/3}, {dtype = "float16"})))
    assert.equal("gpu.array([0.334], dtype=bfloat16, device=cpu)", S(gpu.array({1/3}, {dtype = "bfloat16"})))
  end)

  it("empty arrays", function()
    assert.equal("gpu.array([], dtype=float32, device=cpu)", S(gpu.zeros(0)))
    assert.equal("gpu.array([], shape=(0,3), dtype=float32, device=cpu)", S(gpu.zeros(0, 3)))
    assert.equal("gpu.array([], shape=(2,0), dtype=int64, device=cpu)", S(gpu.zeros(2, 0, {dtype = "int64"})))
  end)

  it("0-d arrays print as gpu.array(value, dtype=, device=) (NumPy's repr), never as a bare number", function()
    assert.equal("gpu.array(3.5, dtype=float32, device=cpu)", S(gpu.array(3.5)))
    assert.equal("gpu.array(2., dtype=float32, device=cpu)", S(gpu.array(2)))
    assert.equal("gpu.array(-0.25, dtype=float16, device=cpu)", S(gpu.array(-0.25, {dtype = "float16"})))
    assert.equal("gpu.array(0.1, dtype=float16, device=cpu)", S(gpu.array(0.1, {dtype = "float16"})))
    assert.equal("gpu.array(7, dtype=int32, device=cpu)", S(gpu.array(7, {dtype = "int32"})))
    assert.equal("gpu.array(true, dtype=bool, device=cpu)", S(gpu.array(true)))
    assert.equal("gpu.array(nan, dtype=float32, device=cpu)", S(gpu.array(0/0)))
    assert.equal("gpu.array(-inf, dtype=float32, device=cpu)", S(gpu.array(-1/0)))
    assert.equal("gpu.array(1.e+20, dtype=float32, device=cpu)", S(gpu.array(1e20)))
    assert.equal("gpu.array(1.e-08, dtype=float32, device=cpu)", S(gpu.array(1e-8)))
    assert.equal("gpu.array(9007199254740993, dtype=int64, device=cpu)", S(gpu.array((1 << 53) + 1, {dtype = "int64"})))
    assert.equal("gpu.array(5, dtype=int64, device=cpu)", S(gpu.arange(10)[{{6, 6}}]:reshape({})))
  end)

  it("2-D and 3-D, with a blank line between blocks", function()
    assert.equal("gpu.array([[0., 0., 0.],\n           [0., 0., 0.]], dtype=float32, device=cpu)", S(gpu.zeros(2, 3)))
    assert.equal(table.concat({
      "gpu.array([[[0, 1],",
      "            [2, 3]],",
      "",
      "           [[4, 5],",
      "            [6, 7]]], dtype=int64, device=cpu)" }, "\n"), S(gpu.arange(8):reshape(2, 2, 2)))
    assert.equal("gpu.array([[0, 2],\n           [4, 6]], dtype=int64, device=cpu)",
                 S(gpu.arange(8):reshape(2, 2, 2)[{":", ":", 1}]))
  end)

  it("summarises more than 1000 elements with ...", function()
    assert.equal("gpu.array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int64, device=cpu)", S(gpu.arange(2000)))
    assert.equal(table.concat({
      "gpu.array([[   0,    1,    2, ...,  997,  998,  999],",
      "           [1000, 1001, 1002, ..., 1997, 1998, 1999]], dtype=int64, device=cpu)" }, "\n"),
      S(gpu.arange(2000):reshape(2, 1000)))
    local s = S(gpu.arange(1001 * 7):reshape(1001, 7))
    assert.truthy(s:find("...,\n", 1, true))
    local lines = 0
    for _ in s:gmatch("\n") do lines = lines + 1 end
    assert.equal(6, lines)                          -- 3 rows, "...", 3 rows
    assert.equal(S(gpu.arange(1000)):find("...", 1, true), nil)   -- exactly 1000: all shown
  end)

  it("wraps long rows at 75 columns without trailing blanks", function()
    local s = S(gpu.arange(30):astype("float32"))
    assert.equal(table.concat({
      "gpu.array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.,",
      "           12., 13., 14., 15., 16., 17., 18., 19., 20., 21., 22., 23.,",
      "           24., 25., 26., 27., 28., 29.], dtype=float32, device=cpu)" }, "\n"), s)
    for line in (S(gpu.arange(100)) .. "\n"):gmatch("(.-)\n") do
      assert.falsy(line:find(" $"))
      if not line:find("dtype=") then assert.truthy(#line <= 75, line) end
    end
    local s2 = S(gpu.arange(40):astype("float32"):reshape(2, 20))
    for line in (s2 .. "\n"):gmatch("(.-)\n") do
      if not line:find("dtype=") then assert.truthy(#line <= 75, line) end
      assert.falsy(line:find(" $"))
    end
  end)

  it("closed arrays print as such", function()
    local x = gpu.zeros(2); x:close()
    assert.equal("gpu.array(closed)", S(x))
  end)
end)

-- bench/autograd.lua — what recording costs: an elementwise op on a tracked
-- array (the dispatch stores a tape node in the result) against the same op untracked,
-- the untracked op once autograd is in use (the dispatch then looks for tracked inputs),
-- and a small MLP's forward + backward. Twin: bench/autograd.py (PyTorch's autograd).
package.path = "bench/lib/?.lua;" .. package.path
local B = require "bench"
local gpu = require "gpu"
local opts = { device = B.device }

local a, b = gpu.ones(100, opts), gpu.ones(100, opts)
-- untracked first: no array has required grad yet in this process, the dispatch's fast path
B.case("x + b: 100 float32", function(n) local c for _ = 1, n do c = a + b end return c end,
       { impl = "before any requires_grad" })
B.case("x:add(b): 100 float32", function(n) local c for _ = 1, n do c = a:add(b) end return c end,
       { impl = "before any requires_grad" })
local w = gpu.ones(100, opts):requires_grad()
-- tracked and untracked in alternating repeats (B.pair): their ratio is the target
B.target("x + b: 100 float32", 1.3, "untracked")
B.pair("x + b: 100 float32",
       { function(n) local c for _ = 1, n do c = w + b end return c end, note = "x requires grad: a node per result" },
       { function(n) local c for _ = 1, n do c = a + b end return c end, impl = "untracked" })
B.target("x:add(b): 100 float32", 1.3, "untracked")
B.pair("x:add(b): 100 float32",
       { function(n) local c for _ = 1, n do c = w:add(b) end return c end },
       { function(n) local c for _ = 1, n do c = a:add(b) end return c end, impl = "untracked" })
B.pair("x:exp(): 100 float32",
       { function(n) local c for _ = 1, n do c = w:exp() end return c end },
       { function(n) local c for _ = 1, n do c = a:exp() end return c end, impl = "untracked" })
B.case("x.shape", function(n) local s for _ = 1, n do s = w.shape end return s end)
B.case("x.shape", function(n) local s for _ = 1, n do s = a.shape end return s end, { impl = "untracked" })

-- forward + backward of a 32-64-10 MLP on a batch of 16 (the per-op overhead of training)
local nn = gpu.nn
gpu.random.seed(1)
local model = nn.Sequential{ nn.Linear(32, 64, opts), nn.ReLU(), nn.Linear(64, 10, opts) }
local x = gpu.random.rand(16, 32, opts)
local y = gpu.random.randint(1, 10, 16, opts)
B.case("MLP 32-64-10, batch 16: forward + backward", function(n)
  for _ = 1, n do
    model:zero_grad()
    nn.cross_entropy(model(x), y):backward()
  end
end)

-- examples/char_lm.lua — a character-level language model on the fortunes corpus (Debian's
-- `fortunes` package): every plain text file of /usr/share/games/fortunes in sorted order,
-- read as bytes, the last 10% held out for validation.
--
--   gpulua examples/char_lm.lua [--model transformer|lstm] [--steps N] [--eval-every N]
--       [--device cpu|cuda] [--save PATH] [--resume PATH] [--sample N] [--temperature T]
--       [--small] [--limit BYTES] [--seed N] [--batch N] [--context N] [--eval-batches N]
--
-- --model transformer (default): a GPT-style decoder, 4 layers of 4 heads, width 128,
--   context 128, pre-norm, a GELU MLP of 4x width, learned positions; AdamW lr 1e-3,
--   betas (0.9, 0.95), weight decay 0.1, batch 32.
-- --model lstm: char-rnn's classic 2 x 256 LSTM (AdamW lr 2e-3 without weight decay,
--   gradients clipped to norm 5).
-- Every --eval-every steps it prints the train and validation loss in bits per character;
-- at the end it samples --sample characters at --temperature. --save PATH writes a
-- checkpoint (model, optimizer, step and the batch generator) every evaluation and at the
-- end; --resume PATH continues from one exactly as if the run had not stopped.
-- --small: a one-minute run on the corpus's first 200 KB (what the specs run).
-- bench/char_lm.py is the PyTorch twin (same data order, architecture and optimizer);
-- bench/char_lm.sh runs both and compares step times and validation losses.
local gpu = require "gpu"
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

local opts = { model = "transformer", steps = 2000, eval_every = 250, device = gpu.device(), sample = 400,
               temperature = 0.8, seed = 1, batch = 32, context = 128, eval_batches = 20, limit = nil,
               corpus = "/usr/share/games/fortunes" }
local numeric = { steps = true, eval_every = true, sample = true, temperature = true, seed = true, batch = true,
                  context = true, eval_batches = true, limit = true }
local usage = "usage: char_lm.lua [--model transformer|lstm] [--steps N] [--eval-every N] [--device D] "
  .. "[--save PATH] [--resume PATH] [--sample N] [--temperature T] [--small] [--limit BYTES] [--seed N] "
  .. "[--batch N] [--context N] [--eval-batches N] [--corpus DIR]"
local i = 1
while arg and arg[i] do
  local a = arg[i]
  local key = a:match("^%-%-([%w-]+)$")
  key = key and key:gsub("-", "_")
  if a == "--small" then
    opts.small = true
  elseif key and (opts[key] ~= nil or numeric[key] or key == "save" or key == "resume") and arg[i + 1] then
    local v = arg[i + 1]
    if numeric[key] then
      v = tonumber(v)
      if v == nil then error("char_lm: --" .. key .. " takes a number\n" .. usage, 0) end
    end
    opts[key] = v
    i = i + 1
  else
    error("char_lm: unknown option " .. a .. "\n" .. usage, 0)
  end
  i = i + 1
end
if opts.small then
  opts.limit = opts.limit or 200000
  opts.steps, opts.eval_every, opts.eval_batches, opts.sample = math.min(opts.steps, 30), 15, 2, 80
  if opts.model == "transformer" then opts.context = math.min(opts.context, 64) end
end
if opts.model ~= "transformer" and opts.model ~= "lstm" then error("char_lm: --model is transformer or lstm", 0) end
gpu.random.seed(opts.seed)

-- ---- data ----------------------------------------------------------------------------------
-- The bytes of the corpus, ids 1..V in byte order (the twin's ids are 0..V-1 in the same order).
local text = data.read_text(opts.corpus)
if opts.limit then text = text:sub(1, opts.limit) end
local vocab = data.CharVocab(text, { mode = "bytes" })
local V = #vocab
local ids = vocab:encode(text)
local n_train = math.floor(#text * 0.9)
local train_ids, val_ids = ids[{ { 1, n_train } }], ids[{ { n_train + 1, #text } }]

-- SplitMix64: the batch order both twins share (Lua's integers wrap as the C original's).
local function splitmix(state)
  local g = { s = state }
  function g.next()
    g.s = g.s + 0x9E3779B97F4A7C15
    local z = g.s
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  return g
end

-- batch(ids, gen) -> x, y (B, T) int64: rows of T ids at offsets drawn by gen, y shifted by one
local function batch(source, gen)
  local span = source.shape[1] - opts.context - 1
  local xs, ys = {}, {}
  for b = 1, opts.batch do
    local o = (gen.next() >> 1) % span
    xs[b] = source[{ { o + 1, o + opts.context } }]
    ys[b] = source[{ { o + 2, o + opts.context + 1 } }]
  end
  return gpu.stack(xs):to(opts.device), gpu.stack(ys):to(opts.device)
end

-- ---- models --------------------------------------------------------------------------------
local GPT = nn.class("GPT")
function GPT:init(v, width, layers, heads, context)
  self.tok = nn.Embedding(v, width)
  self.pos = nn.Embedding(context, width)
  local layer = nn.TransformerEncoderLayer(width, heads, { dim_feedforward = 4 * width, dropout = 0,
                                                           activation = "gelu", batch_first = true, norm_first = true })
  self.blocks = nn.TransformerEncoder(layer, layers)
  self.norm = nn.LayerNorm(width)
  self.head = nn.Linear(width, v)
  self:register_buffer("mask", gpu.full({ context, context }, -math.huge):triu(1))
end
function GPT:forward(x)
  local t = x.shape[2]
  local h = self.tok(x) + self.pos(gpu.arange(1, t + 1, { dtype = "int64", device = x.device }))
  h = self.blocks(h, { mask = self.mask[{ { 1, t }, { 1, t } }] })
  return self.head(self.norm(h))
end

local CharRNN = nn.class("CharRNN")
function CharRNN:init(v, hidden, layers)
  self.tok = nn.Embedding(v, hidden)
  self.lstm = nn.LSTM(hidden, hidden, { num_layers = layers, batch_first = true })
  self.head = nn.Linear(hidden, v)
end
function CharRNN:forward(x)
  local h = self.lstm(self.tok(x))
  return self.head(h)
end

local model, opt, clip
if opts.model == "transformer" then
  model = GPT(V, 128, 4, 4, opts.context):to(opts.device)
  opt = optim.AdamW(model:parameters(), { lr = 1e-3, betas = { 0.9, 0.95 }, weight_decay = 0.1 })
else
  model = CharRNN(V, 256, 2):to(opts.device)
  opt = optim.AdamW(model:parameters(), { lr = 2e-3, betas = { 0.9, 0.95 }, weight_decay = 0 })
  clip = 5
end

local function loss_of(x, y)
  local logits = model(x)
  return nn.cross_entropy(logits:reshape(-1, V), y:reshape(-1))
end

-- ---- checkpoints ---------------------------------------------------------------------------
-- One .npz: the model's state dict under "model.", the optimizer's state under "opt.", the
-- step and the batch generator's state (as two 32-bit halves: npz has no place for a Lua
-- integer's 64 bits otherwise).
local gen = splitmix(opts.seed)
local step = 0

local function save(path)
  local t = {}
  for name, v in pairs(model:state_dict()) do t["model." .. name] = v end
  local osd = opt:state_dict()
  for pi, st in pairs(osd.state) do
    for k, v in pairs(st) do
      t[("opt.%d.%s"):format(pi, k)] = gpu.options.is_array(v) and v
        or gpu.array(v, { dtype = math.type(v) == "integer" and "int64" or "float64" })
    end
  end
  t["meta.step"] = gpu.array(step, { dtype = "int64" })
  t["meta.gen"] = gpu.array({ gen.s >> 32, gen.s & 0xffffffff }, { dtype = "int64" })
  gpu.savez(path, t)
end

local function resume(path)
  local t = gpu.load(path)
  local sd, osd = {}, opt:state_dict()
  for k, v in pairs(t) do
    local name = k:match("^model%.(.+)$")
    if name then sd[name] = v end
  end
  model:load_state_dict(sd)
  osd.state = {}
  for k, v in pairs(t) do
    local pi, key = k:match("^opt%.(%d+)%.(.+)$")
    if pi then
      pi = tonumber(pi)
      osd.state[pi] = osd.state[pi] or {}
      -- numbers were saved as 0-d arrays (int64 for integers, float64 else); arrays as they are
      local number = v.ndim == 0 and (v.dtype == "float64" or v.dtype == "int64")
      osd.state[pi][key] = number and v:item() or v
    end
  end
  opt:load_state_dict(osd)
  step = t["meta.step"]:item()
  local g = t["meta.gen"]:totable()
  gen.s = (math.tointeger(g[1]) << 32) | math.tointeger(g[2])
end

if opts.resume then resume(opts.resume) end

-- ---- training ------------------------------------------------------------------------------
local LN2 = math.log(2)
local function evaluate()
  local vgen = splitmix(opts.seed + 1000)
  model:eval()
  local total = gpu.no_grad(function()
    local s = 0
    for _ = 1, opts.eval_batches do
      local x, y = batch(val_ids, vgen)
      s = s + loss_of(x, y):item()
    end
    return s
  end)
  model:train()
  return total / opts.eval_batches
end

local P = nn._progress
local width = P.terminal_width()
print(("char_lm: %s, %d parameters, vocabulary %d, %d training and %d validation characters, device %s")
  :format(opts.model, model:num_parameters(), V, n_train, #text - n_train, opts.device))
local t0, since, running, nrun = gpu.clock(), gpu.clock(), 0, 0
local step_times = {}
while step < opts.steps do
  local x, y = batch(train_ids, gen)
  local ts = gpu.clock()
  local loss = loss_of(x, y)
  opt:zero_grad()
  loss:backward()
  if clip then nn.utils.clip_grad_norm_(model:parameters(), clip) end
  opt:step()
  local l = loss:item()
  step_times[#step_times + 1] = gpu.clock() - ts
  step = step + 1
  running, nrun = running + l, nrun + 1
  if l ~= l then error(("char_lm: the loss became NaN at step %d"):format(step), 0) end
  local in_block = (step - 1) % opts.eval_every + 1
  if width then
    io.write(P.redraw(P.line(in_block, opts.eval_every, gpu.clock() - since, { { "bits/char", l / LN2 } }, width, true)))
    io.flush()
  end
  if step % opts.eval_every == 0 or step == opts.steps then
    local v = evaluate()
    if width then io.write("\r\27[K") end
    print(("step %5d  train %.4f bits/char  val %.4f bits/char  (%.0f ms/step)"):format(
      step, running / nrun / LN2, v / LN2, (gpu.clock() - since) / nrun * 1e3))
    running, nrun, since = 0, 0, gpu.clock()
    if opts.save then save(opts.save) end
  end
end
local elapsed = gpu.clock() - t0
table.sort(step_times)
local median = step_times[#step_times // 2 + 1] or 0
print(("%d steps in %.1f s, median step %.1f ms"):format(#step_times, elapsed, median * 1e3))

-- ---- sampling ------------------------------------------------------------------------------
-- From a newline, one character at a time: softmax of the last position's logits / T, a
-- draw by the cumulative distribution (gpu.random's uniform, so --seed fixes the text).
local function sample(n, temperature)
  local out = { vocab:encode("\n"):item() }
  model:eval()
  gpu.no_grad(function()
    for _ = 1, n do
      local first = math.max(1, #out - opts.context + 1)
      local ctx = gpu.array({ table.move(out, first, #out, 1, {}) }, { dtype = "int64", device = opts.device })
      local logits = model(ctx)[{ 1, -1 }]
      local p = nn.softmax(logits / temperature):totable()
      local u, c, pick = gpu.random.rand(1):item(), 0, #p
      for k = 1, #p do
        c = c + p[k]
        if u < c then pick = k break end
      end
      out[#out + 1] = pick
    end
  end)
  model:train()
  return vocab:decode(out)
end
if opts.sample > 0 then
  print(("---- %d characters at temperature %.2f ----"):format(opts.sample, opts.temperature))
  print(sample(opts.sample, opts.temperature))
end

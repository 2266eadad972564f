-- examples/torch_cifar.lua — PyTorch's tutorial "Training a classifier" (cifar10_tutorial.py)
-- transcribed: a Dataset of images through transforms (Compose, ToTensor, RandomHorizontalFlip,
-- Normalize), DataLoaders with two worker processes, the tutorial's Net (an nn.Module
-- subclass: two Conv2d + MaxPool2d, three Linear), cross-entropy, SGD with momentum, a StepLR
-- schedule, a whole-state checkpoint each epoch (gpu.save of the model's, the optimizer's
-- and the scheduler's state_dict and the epoch) and resuming from it (gpu.load), then the
-- test accuracy, overall and per class.
--
-- The data is CIFAR-10's binary version when it is in $CIFAR10 (or
-- /usr/share/datasets/cifar-10), else Fashion-MNIST (Debian's dataset-fashion-mnist).
--
--   gpulua examples/torch_cifar.lua [--epochs N] [--device cpu|cuda] [--workers K]
--                                   [--checkpoint PATH] [--resume] [--small]
-- --checkpoint PATH: where the state is saved after each epoch (default torch_cifar.ckpt;
-- with --small a temporary file, removed at the end); --resume: start from it (the epochs
-- already done are skipped); --small: 600 training and 600 test images and 1 epoch (what
-- the specs run).
local gpu = require "gpu"
local nn, optim, data = gpu.nn, gpu.optim, gpu.data
local T = data.transforms

local epochs, device, workers, ckpt, resume, small = 2, gpu.device(), 2, nil, false, false
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = math.tointeger(tonumber(arg[i + 1] or "")); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--workers" then workers = math.tointeger(tonumber(arg[i + 1] or "")); i = i + 1
  elseif a == "--checkpoint" then ckpt = arg[i + 1]; i = i + 1
  elseif a == "--resume" then resume = true
  elseif a == "--small" then small = true; epochs = 1
  else error("torch_cifar: unknown option " .. a .. " (--epochs N, --device D, --workers K, --checkpoint PATH, " ..
    "--resume, --small)") end
  i = i + 1
end
assert(epochs and epochs >= 1 and workers and workers >= 0, "torch_cifar: bad --epochs or --workers")
local scratch = small and ckpt == nil
ckpt = ckpt or (scratch and os.tmpname() or "torch_cifar.ckpt")
gpu.random.seed(0)

-- ---- data ------------------------------------------------------------------------------------
local limit = small and 600 or nil
local cifar_dir = os.getenv("CIFAR10") or "/usr/share/datasets/cifar-10"
local train, test, classes, channels, side
local ok, tr = pcall(data.cifar10, cifar_dir, { limit = limit })
if ok then
  -- stored (N, 3, 32, 32); ToTensor takes an image (H, W, C) as torchvision's takes a PIL image
  train, test = tr, data.cifar10(cifar_dir, { train = false, limit = limit })
  train.x, test.x = train.x:permute({ 1, 3, 4, 2 }), test.x:permute({ 1, 3, 4, 2 })
  classes, channels, side = data.cifar10_classes, 3, 32
  print("data: CIFAR-10 from " .. cifar_dir)
else
  local fm = data.fashion_mnist { limit = limit }
  train, test, classes, channels, side = fm.train, fm.test, fm.classes, 1, 28
  print("data: Fashion-MNIST (no CIFAR-10 in " .. cifar_dir .. ")")
end

local half = {}
for c = 1, channels do half[c] = 0.5 end
local train_tf = T.Compose { T.ToTensor(), T.RandomHorizontalFlip(), T.Normalize(half, half) }
local test_tf = T.Compose { T.ToTensor(), T.Normalize(half, half) }

-- a map-style Dataset (#ds, ds:get(i)) of uint8 images and labels 1..10, as torchvision's
-- CIFAR10(transform = ...): each sample transformed when it is read (in the workers)
local Images = {}
Images.__index = Images
Images.__len = function(self) return self.x.shape[1] end
function Images:get(i) return { self.transform(self.x[i]), self.y[i] } end
local function images(split, tf) return setmetatable({ x = split.x, y = split.y, transform = tf }, Images) end

local trainloader = data.DataLoader(images(train, train_tf), { batch_size = 32, shuffle = true, num_workers = workers,
                                                                device = device })
local testloader = data.DataLoader(images(test, test_tf), { batch_size = 100, num_workers = workers, device = device })
print(("train: %d images %dx%dx%d, test: %d, workers: %d"):format(#trainloader.dataset, channels, side, side,
  #testloader.dataset, workers))

-- ---- the network -----------------------------------------------------------------------------
local Net = nn.class("TorchCifarNet")
function Net:init(c, s)
  self.conv1 = nn.Conv2d(c, 6, 5)
  self.pool = nn.MaxPool2d(2, { stride = 2 })
  self.conv2 = nn.Conv2d(6, 16, 5)
  local f = ((s - 4) // 2 - 4) // 2                 -- the side after both conv + pool
  self.fc1 = nn.Linear(16 * f * f, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end
function Net:forward(x)
  local relu = nn.functional.relu
  x = self.pool(relu(self.conv1(x)))
  x = self.pool(relu(self.conv2(x)))
  x = gpu.flatten(x, 2)                             -- all but the batch axis
  x = relu(self.fc1(x))
  x = relu(self.fc2(x))
  return self.fc3(x)
end

local net = Net(channels, side):to(device)
local criterion = nn.CrossEntropyLoss()
local opt = optim.SGD(net:parameters(), { lr = 0.01, momentum = 0.9 })
local sched = optim.StepLR(opt, 1, { gamma = 0.5 })

-- ---- resume, train, checkpoint ---------------------------------------------------------------
local first = 1
if resume then
  local state = gpu.load(ckpt)
  net:load_state_dict(state.model)
  opt:load_state_dict(state.optimizer)
  sched:load_state_dict(state.scheduler)
  gpu.random.set_state(state.rng)
  first = state.epoch + 1
  print(("resumed from %s after epoch %d (lr %g)"):format(ckpt, state.epoch, opt.param_groups[1].lr))
end

for epoch = first, epochs do
  local running, n, t0 = 0, 0, gpu.clock()
  for inputs, labels in trainloader:iter() do
    opt:zero_grad()
    local loss = criterion(net(inputs), labels)
    loss:backward()
    opt:step()
    running = running + loss:item()
    n = n + 1
  end
  sched:step()
  print(("epoch %d/%d: loss %.3f (%d batches, %.1f s)"):format(epoch, epochs, running / n, n, gpu.clock() - t0))
  gpu.save(ckpt, { model = net:state_dict(), optimizer = opt:state_dict(), scheduler = sched:state_dict(),
                   epoch = epoch, rng = gpu.random.get_state() })
end
if scratch then os.remove(ckpt) else print("checkpoint: " .. ckpt) end

-- ---- test ------------------------------------------------------------------------------------
net:eval()
local correct, total, hit, seen = 0, 0, {}, {}
for c = 1, 10 do hit[c], seen[c] = 0, 0 end
gpu.no_grad(function()
  for inputs, labels in testloader:iter() do
    local predicted = net(inputs):argmax(2)
    local right = predicted:eq(labels)
    correct = correct + right:sum():item()
    total = total + labels.shape[1]
    local l, r = labels:totable(), right:totable()
    for k = 1, #l do
      seen[l[k]] = seen[l[k]] + 1
      if r[k] then hit[l[k]] = hit[l[k]] + 1 end
    end
  end
end)
print(("test accuracy %.4f (%d images)"):format(correct / total, total))
for c = 1, 10 do
  if seen[c] > 0 then print(("  %-12s %5.1f %%"):format(classes[c], 100 * hit[c] / seen[c])) end
end

-- examples/keras_functional.lua — Keras's mnist_convnet example, transcribed line by line with
-- the functional API, on Fashion-MNIST (the same 28x28 grey images, ten classes):
-- Input, two Conv2D(relu) + MaxPooling2D, Flatten, Dropout, Dense(softmax), compiled with
-- categorical cross-entropy, adam, accuracy, Precision and Recall; fit with validation_split,
-- evaluate on the test set.
--
--   gpulua examples/keras_functional.lua [--epochs N] [--device cpu|cuda] [--small]
-- --small: 600 training and test images and 1 epoch (what the specs run).
local gpu = require "gpu"
local nn = gpu.nn
local keras = { layers = nn, metrics = nn.metrics, utils = { to_categorical = nn.one_hot } }

local epochs, device, small = 15, nil, false
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--epochs" then epochs = tonumber(arg[i + 1]); i = i + 1
  elseif a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true; epochs = 1
  else error("keras_functional: unknown option " .. a .. " (--epochs N, --device D, --small)") end
  i = i + 1
end
if device then gpu.set_device(device) end
gpu.random.seed(1337)

-- Model / data parameters
local num_classes = 10
local input_shape = { 28, 28, 1 }

-- Load the data and split it between train and test sets; scale images to [0, 1]; make
-- sure images have shape (28, 28, 1)
local ds = gpu.data.fashion_mnist{ scale = true, limit = small and 600 or nil }
local x_train = ds.train.x:reshape(-1, 28, 28, 1)
local x_test = ds.test.x:reshape(-1, 28, 28, 1)
print("x_train shape: " .. table.concat(x_train.shape, "x"))
print(("%d train samples, %d test samples"):format(x_train.shape[1], x_test.shape[1]))

-- convert class vectors to binary class matrices (labels are 1..10 here)
local y_train = keras.utils.to_categorical(ds.train.y, num_classes)
local y_test = keras.utils.to_categorical(ds.test.y, num_classes)

-- Build the model
local inputs = nn.Input(input_shape)
local x = keras.layers.Conv2D(32, { 3, 3 }, { activation = "relu" })(inputs)
x = keras.layers.MaxPooling2D({ 2, 2 })(x)
x = keras.layers.Conv2D(64, { 3, 3 }, { activation = "relu" })(x)
x = keras.layers.MaxPooling2D({ 2, 2 })(x)
x = keras.layers.Flatten()(x)
x = keras.layers.Dropout(0.5)(x)
local outputs = keras.layers.Dense(num_classes, { activation = "softmax" })(x)
local model = nn.Model(inputs, outputs, { name = "mnist_convnet" })
model:summary()

-- Train the model
local batch_size = 128
model:compile{ loss = "categorical_crossentropy", optimizer = "adam",
  metrics = { "accuracy", keras.metrics.Precision(), keras.metrics.Recall() } }
model:fit(x_train, y_train, { batch_size = batch_size, epochs = epochs, validation_split = 0.1 })

-- Evaluate the trained model
local score = model:evaluate(x_test, y_test)
print(("Test loss: %.4f"):format(score.loss))
print(("Test accuracy: %.4f"):format(score.accuracy))
print(("Test precision: %.4f, recall: %.4f"):format(score.precision, score.recall))
print("keras_functional ok")

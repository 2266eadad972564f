-- gpu.distributions: torch.distributions' families, transforms and KL divergences over gpu
-- arrays.
--
--   local D = gpu.distributions
--   local n = D.Normal(gpu.zeros(3), 1)          -- batch_shape {3}
--   local x = n:rsample({100})                     -- (100, 3), differentiable in loc and scale
--   local lp = n:log_prob(x)                       -- (100, 3)
--   local kl = D.kl_divergence(n, D.Normal(1, 2))  -- (3)
--
-- Parameters are numbers or arrays (one float dtype: float64 when an array is, else the
-- default; one device), broadcast together to the batch shape. Every distribution has
-- sample, rsample (where PyTorch's is reparameterised), log_prob, entropy, cdf, icdf,
-- enumerate_support (where PyTorch has them), and the properties mean, mode, variance,
-- stddev, batch_shape, event_shape, support, has_rsample. validate_args (on by default, as
-- PyTorch's) checks the parameters at construction and the values of log_prob and cdf.
-- The parts: gpu.distributions.core (the base class, parameters, constraints),
-- .transforms, .transformed (TransformedDistribution, Independent), .continuous,
-- .discrete, .multivariate, .kl.
local options = require "gpu.options"
local C = require "gpu.distributions.core"
local T = require "gpu.distributions.transforms"

local M = {}

require "gpu.distributions.transformed"(M)
require "gpu.distributions.continuous"(M)
require "gpu.distributions.discrete"(M)
require "gpu.distributions.multivariate"(M)
require "gpu.distributions.kl"(M, C.classes)

for _, name in ipairs { "ExpTransform", "AffineTransform", "SigmoidTransform", "TanhTransform", "AbsTransform",
  "PowerTransform", "ComposeTransform" } do
  M[name] = T[name]
end

-- set_default_validate_args(on): whether distributions made from now on validate their
-- parameters and values when not told (PyTorch's Distribution.set_default_validate_args)
function M.set_default_validate_args(on)
  if type(on) ~= "boolean" then
    options.argerror("gpu.distributions.set_default_validate_args", 1, "a boolean expected, got %s", options.type_name(on))
  end
  C.default_validate = on
end

-- is_distribution(v): v is a distribution of this module
function M.is_distribution(v) return C.is_dist(v) end

return options.count_all("gpu.distributions.", M)

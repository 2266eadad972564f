-- gpu.routines.matrix: matrix products and factorisations written over the dispatched ops.
-- PyTorch's fused products addmm, baddbmm, addmv (beta * input + alpha * product, input
-- broadcast to the product's shape), and its matrix_exp and cholesky_solve (the
-- computations live in gpu.linalg; here they are gpu.f and x:f as in torch). Written in
-- array ops, so both devices and autograd come with them.
local gpu = require "gpu"
local options = require "gpu.options"

local M = {}

local SCALE = { beta = { type = "number", default = 1 }, alpha = { type = "number", default = 1 } }
local DECL = {
  addmm = options.declare("addmm", SCALE, { example = "gpu.addmm(gpu.zeros(2, 2), gpu.eye(2), gpu.eye(2), %s)" }),
  baddbmm = options.declare("baddbmm", SCALE,
    { example = "gpu.baddbmm(gpu.zeros(1, 2, 2), gpu.ones(1, 2, 2), gpu.ones(1, 2, 2), %s)" }),
  addmv = options.declare("addmv", SCALE, { example = "gpu.addmv(gpu.zeros(2), gpu.eye(2), gpu.ones(2), %s)" }),
}

-- The operands' dimensions checked ('ndims': what each of the two must have), then
-- beta * input + alpha * (a @ b) as torch: beta = 0 ignores input (a NaN there does not
-- reach the result), and a factor of 1 costs no op. input must broadcast to the product's
-- shape (not the other way).
local function scaled_product(fname, input, a, b, opts, nda, ndb, wa, wb)
  options.check_array(input, fname, 1, "input")
  options.check_array(a, fname, 2, wa)
  options.check_array(b, fname, 3, wb)
  local o = DECL[fname]:check(opts, 4)
  if a.ndim ~= nda then options.argerror(fname, 2, "%s must be %d-D, got %d-D", wa, nda, a.ndim) end
  if b.ndim ~= ndb then options.argerror(fname, 3, "%s must be %d-D, got %d-D", wb, ndb, b.ndim) end
  if nda == 3 and a.shape[1] ~= b.shape[1] then
    options.raise("%s: %s and %s must have the same batch size, got %d and %d", fname, wa, wb, a.shape[1], b.shape[1])
  end
  local ka, kb = a.shape[a.ndim], b.shape[ndb == 1 and 1 or b.ndim - 1]
  if ka ~= kb then
    options.raise("%s: %s and %s shapes cannot be multiplied (%s and %s)", fname, wa, wb,
      options.shape_str(a.shape), options.shape_str(b.shape))
  end
  local p = a:matmul(b)
  local fits = input.ndim <= p.ndim
  for i = 1, input.ndim do
    local d = input.shape[input.ndim - i + 1]
    fits = fits and (d == 1 or d == p.shape[p.ndim - i + 1])
  end
  if not fits then
    options.raise("%s: input of shape %s does not broadcast to the product's shape %s", fname,
      options.shape_str(input.shape), options.shape_str(p.shape))
  end
  if o.alpha ~= 1 then p = p * o.alpha end
  if o.beta == 0 then return p end
  return (o.beta == 1 and input or input * o.beta) + p
end

-- addmm(input, mat1 (n, m), mat2 (m, p) [, {beta = 1, alpha = 1}]) -> (n, p)
function M.addmm(input, mat1, mat2, opts)
  return scaled_product("addmm", input, mat1, mat2, opts, 2, 2, "mat1", "mat2")
end

-- baddbmm(input, batch1 (b, n, m), batch2 (b, m, p) [, {beta = 1, alpha = 1}]) -> (b, n, p)
function M.baddbmm(input, batch1, batch2, opts)
  return scaled_product("baddbmm", input, batch1, batch2, opts, 3, 3, "batch1", "batch2")
end

-- addmv(input, mat (n, m), vec (m) [, {beta = 1, alpha = 1}]) -> (n)
function M.addmv(input, mat, vec, opts)
  return scaled_product("addmv", input, mat, vec, opts, 2, 1, "mat", "vec")
end

-- matrix_exp(A (..., n, n)): torch.matrix_exp, i.e. gpu.linalg.matrix_exp
function M.matrix_exp(a) return require("gpu.linalg").matrix_exp(a) end

-- cholesky_solve(B (..., n, k), L (..., n, n) [, upper = false]): torch.cholesky_solve, the
-- solution of A X = B given A's Cholesky factor L (A = L L^H; upper: A = U^H U)
function M.cholesky_solve(b, l, upper) return require("gpu.linalg").cholesky_solve(b, l, upper) end

return M

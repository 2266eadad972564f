-- spec/complex_grad_spec.lua — autograd through complex arrays, PyTorch's conventions: the
-- gradient of a real loss L with respect to z = x + iy is dL/dx + i dL/dy (twice the conjugate
-- Wirtinger derivative), a real input that meets complex values gets a real gradient (the real
-- part). Every rule that has a complex meaning is checked in float64 / complex128 against
-- central differences taken on the real and imaginary parts separately (gpu.autograd.gradcheck,
-- as torch.autograd.gradcheck does for complex), for its first derivative and, through
-- create_graph, its second; plus a few values PyTorch gives, and the misuses.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"

-- inputs: uniform in [lo, hi) (a seed per shape), signed and away from 0 (S), complex with both
-- parts signed and away from 0 (Z), complex near 1 + 0.5i (ZP: inside the principal branch
-- of log, sqrt, the inverse trigonometric functions)
local seed = 0
local function U(dev, lo, hi, shape)
  seed = seed + 1
  return gpu.random.Generator(seed):uniform(lo, hi, shape, { dtype = "float64", device = dev })
end
local function signs(dev, shape)
  seed = seed + 1
  return gpu.random.Generator(seed):bernoulli(0.5, shape, { dtype = "float64", device = dev }) * 2 - 1
end
local function S(dev, ...) local s = { ... }; return U(dev, 0.3, 1.2, s) * signs(dev, s) end
local function pairs_of(shape) local s = { table.unpack(shape) }; s[#s + 1] = 2; return s end
local function Z(dev, ...)
  local s = pairs_of { ... }
  return gpu.view_as_complex(U(dev, 0.3, 1.2, s) * signs(dev, s))
end
local function ZP(dev, ...)
  local s = pairs_of { ... }
  return gpu.view_as_complex(U(dev, -0.25, 0.25, s) + gpu.array({ 0.5, 0.25 }, { dtype = "float64", device = dev }))
end

-- cases: name -> function(dev) returning fn, inputs [, gradcheck options]
local cases, order = {}, {}
local function case(name, make) cases[name] = make; order[#order + 1] = name end

-- ---- elementwise, unary: holomorphic (grad * conj(f'(z))) -----------------------------------------
for _, n in ipairs { "exp", "expm1", "square", "tanh", "sin", "cos", "tan", "sinh", "cosh", "reciprocal", "neg" } do
  case(n, function(dev) return function(z) return z[n](z) end, { Z(dev, 2, 3) } end)
end
for _, n in ipairs { "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "asin", "acos", "atan", "asinh", "acosh", "atanh" } do
  case(n, function(dev) return function(z) return z[n](z) end, { ZP(dev, 2, 3) } end)
end
-- acosh away from its cut (x < 1 on the real axis), where sqrt(z^2 - 1) would take the
-- other branch than the principal acosh's: z with a negative real part
case("acosh (negative real part)", function(dev) return function(z) return z:acosh() end, { -ZP(dev, 2, 3) * 2 } end)
-- sign: z / |z| (NumPy 2's), a function of the direction only
case("sign", function(dev) return function(z) return z:sign() end, { Z(dev, 2, 3) } end)
-- real results of a complex argument
case("abs", function(dev) return function(z) return z:abs() end, { Z(dev, 2, 3) } end)
case("angle", function(dev) return function(z) return gpu.angle(z) end, { Z(dev, 2, 3) } end)
case("real", function(dev) return function(z) return z.real * 1 end, { Z(dev, 2, 3) } end)
case("imag", function(dev) return function(z) return z.imag * 1 end, { Z(dev, 2, 3) } end)
case("conj", function(dev) return function(z) return z:conj() end, { Z(dev, 2, 3) } end)
case("conj (transposed)", function(dev) return function(z) return z:transpose():conj() * z:transpose() end, { Z(dev, 2, 3) } end)

-- ---- making complex arrays from real ones: the real inputs get real gradients ----------------
case("complex", function(dev) return function(re, im) return gpu.complex(re, im) end, { S(dev, 2, 3), S(dev, 3) } end)
case("polar", function(dev) return function(r, t) return gpu.polar(r, t) end, { U(dev, 0.5, 1.5, { 2, 3 }), S(dev, 2, 3) * 2 } end)
case("view_as_complex", function(dev) return function(x) return gpu.view_as_complex(x) end, { S(dev, 2, 3, 2) } end)
case("view_as_real", function(dev) return function(z) return gpu.view_as_real(z:transpose()) end, { Z(dev, 2, 3) } end)
case("astype (real to complex)", function(dev)
  return function(x) return x:astype("complex128") * x end, { S(dev, 2, 3) }
end)
case("astype (complex to real: the real part)", function(dev)
  return function(z) return z:astype("float64") end, { Z(dev, 2, 3) }
end)

-- ---- elementwise, binary ------------------------------------------------------------------------------
for _, n in ipairs { "add", "sub", "mul", "div" } do
  case(n, function(dev) return function(a, b) return gpu[n](a, b) end, { Z(dev, 2, 3), Z(dev, 3) } end)
  case(n .. " (real array and complex)", function(dev)
    return function(a, b) return gpu[n](a, b) end, { S(dev, 2, 3), Z(dev, 3) }
  end)
  case(n .. " (complex and a number)", function(dev) return function(a) return gpu[n](a, 1.7) end, { Z(dev, 2, 3) } end)
end
-- Lua complex scalars as the other operand: their conjugates in the derivative factors
for _, n in ipairs { "mul", "div", "pow" } do
  case(n .. " (complex array and a complex scalar)", function(dev)
    local c = gpu.complex(0.8, -0.6)
    return function(a) return gpu[n](a, c) + gpu[n](c, a) end, { ZP(dev, 2, 3) }
  end)
end
case("pow", function(dev) return function(a, b) return gpu.pow(a, b) end, { ZP(dev, 2, 3), Z(dev, 3) * 0.5 } end)
case("pow (complex base, number exponent)", function(dev) return function(a) return a ^ 3 end, { Z(dev, 2, 3) } end)
case("pow (real base, complex exponent)", function(dev)
  return function(a, b) return gpu.pow(a, b) end, { U(dev, 0.5, 1.5, { 2, 3 }), Z(dev, 3) * 0.5 }
end)
case("pow (negative real base and number, complex exponent)", function(dev)
  return function(b) return gpu.pow(gpu.array({ -1.5, 2, -0.5 }, { dtype = "float64", device = dev }), b) + gpu.pow(-2, b) end,
    { Z(dev, 2, 3) * 0.5 }
end)
case("where", function(dev)
  local c = gpu.array({ true, false, true }, { device = dev })
  return function(a, b) return gpu.where(c, a, b) end, { Z(dev, 2, 3), Z(dev, 3) }
end)

-- ---- reductions and scans -----------------------------------------------------------------------------
case("sum", function(dev) return function(z) return z:sum(2) end, { Z(dev, 2, 3) } end)
case("mean", function(dev) return function(z) return z:mean() end, { Z(dev, 2, 3) } end)
case("prod", function(dev) return function(z) return z:prod(2) end, { Z(dev, 2, 3) } end)
case("var (real result)", function(dev) return function(z) return z:var(2, { ddof = 1 }) end, { Z(dev, 2, 3) } end)
case("std (real result)", function(dev) return function(z) return z:std(1) end, { Z(dev, 2, 3) } end)
case("norm", function(dev) return function(z) return z:norm(2) end, { Z(dev, 2, 3) } end)
case("norm (ord 1, inf, 3)", function(dev)
  return function(z)
    return gpu.concat({ z:norm(2, { ord = 1 }), z:norm(2, { ord = math.huge }), z:norm(2, { ord = 3 }) })
  end, { Z(dev, 2, 3) }
end)
case("cumsum", function(dev) return function(z) return z:cumsum(2) end, { Z(dev, 2, 3) } end)
case("cumprod", function(dev) return function(z) return z:cumprod(2) end, { Z(dev, 2, 3) } end)

-- ---- matrix products: g @ b^H, a^H @ g -------------------------------------------------------------------
case("matmul", function(dev) return function(a, b) return a:matmul(b) end, { Z(dev, 2, 2, 3), Z(dev, 3, 2) } end)
case("matmul (real and complex)", function(dev) return function(a, b) return a:matmul(b) end, { S(dev, 2, 3), Z(dev, 3, 2) } end)
case("matmul (vectors)", function(dev) return function(a, b) return a:matmul(b) end, { Z(dev, 3), Z(dev, 3) } end)
case("dot", function(dev) return function(a, b) return gpu.dot(a, b) end, { Z(dev, 2, 3), Z(dev, 3) } end)
case("outer", function(dev) return function(a, b) return gpu.outer(a, b) end, { Z(dev, 3), Z(dev, 2) } end)
case("vdot (conjugates a)", function(dev) return function(a, b) return gpu.vdot(a, b) end, { Z(dev, 2, 3), Z(dev, 2, 3) } end)
case("inner", function(dev) return function(a, b) return gpu.inner(a, b) end, { Z(dev, 2, 3), Z(dev, 3) } end)
case("einsum", function(dev) return function(a, b) return gpu.einsum("ij,jk->ik", a, b) end, { Z(dev, 2, 3), Z(dev, 3, 2) } end)

-- ---- gpu.linalg on complex matrices: the conjugate transposes (and svd's and eig's phases) ---------
local LA = gpu.linalg
local function ZW(dev, ...)                       -- well conditioned: a shift by 2 I
  local z = Z(dev, ...)
  return z + gpu.eye(z.shape[z.ndim], { dtype = "float64", device = dev }) * 2
end
local function herm(z)                            -- z z^H + I: Hermitian positive definite
  return z:matmul(z:transpose(-1, -2):conj()) + gpu.eye(z.shape[z.ndim], { dtype = "float64", device = z.device })
end
case("linalg.solve", function(dev) return function(a, b) return LA.solve(a, b) end, { ZW(dev, 2, 3, 3), Z(dev, 3, 2) } end)
case("linalg.inv", function(dev) return function(a) return LA.inv(a) end, { ZW(dev, 3, 3) } end)
case("linalg.det", function(dev) return function(a) return LA.det(a) end, { ZW(dev, 2, 3, 3) } end)
case("linalg.slogdet (logabsdet)", function(dev) return function(a) return (select(2, LA.slogdet(a))) end, { Z(dev, 2, 3, 3) } end)
case("linalg.cholesky", function(dev)
  return function(x) return LA.cholesky(herm(x)) + LA.cholesky(herm(x), { upper = true }) * 0.5 end, { Z(dev, 3, 3) }
end)
case("linalg.qr", function(dev)
  return function(a) local q, r = LA.qr(a); return gpu.concat({ q:reshape(-1), r:reshape(-1) }) end, { Z(dev, 4, 3) }
end)
case("linalg.qr (m < n)", function(dev)
  return function(a) local q, r = LA.qr(a); return gpu.concat({ q:reshape(-1), r:reshape(-1) }) end, { Z(dev, 3, 5) }
end)
case("linalg.svd (u vh, s: free of the vectors' phases)", function(dev)
  return function(a)
    local u, s, vh = LA.svd(a, { full_matrices = false })
    return gpu.concat({ u:matmul(vh):reshape(-1), s:astype("complex128"), (u * u:conj()):reshape(-1) })
  end, { Z(dev, 4, 3) }
end)
case("linalg.eigh", function(dev)
  return function(x) local w, v = LA.eigh(herm(x)); return gpu.concat({ w, (v * v:conj()).real:reshape(-1) }) end, { Z(dev, 3, 3) }
end)
case("linalg.eig", function(dev)
  return function(x) local w, v = LA.eig(x); return gpu.concat({ w, (v * v:conj()):reshape(-1) }) end, { ZW(dev, 3, 3) }
end)
case("linalg.eigvals", function(dev) return function(x) return LA.eigvals(x) end, { ZW(dev, 2, 3, 3) } end)
case("linalg.lstsq", function(dev) return function(a, b) return (LA.lstsq(a, b)) end, { Z(dev, 5, 3), Z(dev, 5, 2) } end)

-- ---- shapes, views and indexing -----------------------------------------------------------------------
case("reshape, transpose, flip", function(dev)
  return function(z) return z:reshape(3, 2):transpose():flip(2) end, { Z(dev, 2, 3) }
end)
case("getindex", function(dev) return function(z) return z[{ ":", { 2, 3 } }] + z.T[1]:reshape(3, 1) end, { Z(dev, 3, 3) } end)
case("take", function(dev)
  return function(z) return z:take(gpu.array({ 3, 1, 3 }, { dtype = "int64", device = dev }), 2) end, { Z(dev, 2, 3) }
end)
case("concat, stack", function(dev)
  return function(a, b) return gpu.stack({ gpu.concat({ a, b }, 2), gpu.concat({ b, a }, 2) }, 1) end,
    { Z(dev, 2, 3), Z(dev, 2, 2) }
end)
case("expand (broadcast back)", function(dev) return function(a, b) return a * b end, { Z(dev, 1, 3), Z(dev, 2, 1) } end)

-- ---- convolution ----------------------------------------------------------------------------------------
for _, mode in ipairs { "full", "same", "valid" } do
  case("convolve " .. mode, function(dev)
    return function(a, v) return gpu.convolve(a, v, mode) end, { Z(dev, 5), Z(dev, 3) }
  end)
  case("correlate " .. mode .. " (conjugates v)", function(dev)
    return function(a, v) return gpu.correlate(a, v, mode) end, { Z(dev, 3), Z(dev, 4) }
  end)
end
case("convolve (fft)", function(dev)
  return function(a, v) return gpu.convolve(a, v, "same", { method = "fft" }) end, { Z(dev, 6), Z(dev, 3) }
end)
case("correlate (real and complex, fft)", function(dev)
  return function(a, v) return gpu.correlate(a, v, "full", { method = "fft" }) end, { S(dev, 6), Z(dev, 3) }
end)

-- ---- real losses of complex intermediates, to real inputs -------------------------------------------
case("abs of exp of complex(x, y)", function(dev)
  return function(x, y) return (gpu.complex(x, y):exp() * gpu.complex(y, x)):abs() end, { S(dev, 2, 3), S(dev, 2, 3) }
end)
case("angle and real of a product with a real array", function(dev)
  return function(x, z) return gpu.angle(z * x) + (z * z * x).real end, { S(dev, 2, 3), Z(dev, 2, 3) }
end)
case("polar, then abs squared", function(dev)
  return function(r, t) local p = gpu.polar(r, t) * gpu.polar(t, r); return (p * p:conj()).real end,
    { U(dev, 0.5, 1.5, { 3 }), S(dev, 3) }
end)

-- second derivatives: linear ops give untracked first derivatives, which end the check

for _, dev in ipairs(h.devices()) do
  describe("complex gradients on " .. dev .. " against central differences (complex128)", function()
    for _, n in ipairs(order) do
      it(n, function()
        local fn, inputs, opts = cases[n](dev)
        local ok, msg = ag.gradcheck(fn, inputs, opts)
        assert(ok, n .. ": " .. tostring(msg))
      end)
      it(n .. " (second derivative through create_graph)", function()
        local fn, inputs, opts = cases[n](dev)
        local x = inputs[1]
        local first = h.first_derivative(fn, inputs)
        x:requires_grad()
        local g = first(x)
        assert.equal(x.dtype, g.dtype)
        if not ag.requires_grad(g) then return end
        local ok, msg = ag.gradcheck(first, { x }, opts)
        assert(ok, n .. " (second): " .. tostring(msg))
      end)
    end
  end)

  describe("complex gradients on " .. dev .. ": PyTorch's values and the rules of the tape", function()
    local function z34() return gpu.view_as_complex(gpu.array({ 3, 4 }, { dtype = "float64", device = dev })):copy() end
    local function parts(g) return h.flat(gpu.view_as_real(g)) end

    it("gives dL/dx + i dL/dy: abs(3+4i) -> 0.6+0.8i, its real part -> 1, its imaginary part -> i", function()
      local z = z34():requires_grad()
      gpu.view_as_real(z):sum():backward()                     -- L = x + y
      assert.same({ 1, 1 }, parts(z.grad))
      z.grad = nil
      z:abs():backward()
      h.assert_close({ 0.6, 0.8 }, parts(z.grad), 1e-12)
      z.grad = nil
      z.real:backward()
      assert.same({ 1, 0 }, parts(z.grad))
      z.grad = nil
      z.imag:backward()
      assert.same({ 0, 1 }, parts(z.grad))
    end)

    it("angle(3+4i) -> (-4 + 3i) / 25; abs and angle of 0 give 0 (PyTorch's choice at the kink)", function()
      local z = z34():requires_grad()
      gpu.angle(z):backward()
      h.assert_close({ -0.16, 0.12 }, parts(z.grad), 1e-12)
      local o = gpu.zeros(2, { dtype = "complex128", device = dev }):requires_grad()
      ;(o:abs() + gpu.angle(o)):sum():backward()
      assert.same({ 0, 0, 0, 0 }, parts(o.grad))
    end)

    it("a real leaf multiplied by a complex array gets the real part of g * conj(b)", function()
      local x = gpu.array({ 2 }, { dtype = "float64", device = dev }):requires_grad()
      local b = gpu.view_as_complex(gpu.array({ { 1, 2 } }, { dtype = "float64", device = dev }))
      ;(x * b).imag:sum():backward()                           -- L = 2 x: dL/dx = 2 = Re(i * conj(1+2i))
      assert.equal("float64", x.grad.dtype)
      assert.same({ 2 }, h.flat(x.grad))
    end)

    it("refuses an implicit gradient for a complex output, and a real .grad for a complex leaf", function()
      local z = z34():requires_grad()
      h.fails({ "backward", "a gradient is implicit only for a real output, got complex128" }, function()
        (z * 2):backward()
      end)
      h.fails({ "grad", "the gradient must be complex, got float64" }, function()
        z.grad = gpu.zeros({}, { dtype = "float64", device = dev })
      end)
      h.fails({ "requires_grad", "only floating-point and complex arrays can require gradients, got int64" }, function()
        gpu.arange(3, { device = dev }):requires_grad()
      end)
    end)

    it("copies a transposed complex128 view of a small float64 array (its bytes aligned as complex128's)", function()
      for n = 1, 6 do                                            -- userdata at either 8-byte phase
        local a = gpu.ones({ 3, n, 2 }, { dtype = "float64", device = dev }) * 1
        local c = gpu.view_as_complex(a):transpose():copy()
        assert.same({ n, 3 }, c.shape)
      end
    end)

    it("takes an explicit complex gradient for a complex output (the vector-Jacobian product)", function()
      local z = z34():requires_grad()
      local g = gpu.view_as_complex(gpu.array({ 1, -1 }, { dtype = "float64", device = dev }))
      gpu.view_as_complex(gpu.view_as_real(z) * 2):backward(g)
      assert.same({ 2, -2 }, parts(z.grad))
    end)
  end)
end

-- spec/attention_gemm_spec.lua — gpu.fused.attention's CPU forward in GEMM tiles (64 query rows
-- x 64 keys, src/backend/cpu/cpu_fused.c) against the plain composite softmax(q k^T scale
-- [+ causal mask]) v and its logsumexp, on shapes that cross tile edges (several query tiles,
-- several key blocks, lengths that are not multiples of 64, L < S and L > S with is_causal,
-- one query row), float64 and float32.
local h = require "spec.helper"
local gpu = h.gpu

local function reference(q, k, v, scale, causal)
  local nd = q.ndim
  local L, S = q.shape[nd - 1], k.shape[nd - 1]
  local s = q:matmul(k:swapaxes(-1, -2)) * scale
  if causal then
    s = gpu.where(gpu.tril(gpu.ones({ L, S }, { dtype = q.dtype })):gt(0), s, -math.huge)
  end
  local lse = s:logsumexp(-1)
  return (s - lse:unsqueeze(-1)):exp():matmul(v), lse
end

describe("gpu.fused.attention on the cpu in GEMM tiles", function()
  local shapes = {
    { 2, 130, 70, 16, 24 }, { 1, 64, 64, 8, 8 }, { 3, 1, 200, 5, 3 }, { 2, 150, 150, 32, 32 },
    { 1, 70, 129, 4, 65 }, { 2, 3, 7, 1, 1 },
  }
  for _, dt in ipairs { "float64", "float32" } do
    it("agrees with the composite (" .. dt .. "): values and logsumexp, causal or not", function()
      local tol = dt == "float64" and 1e-11 or 2e-5
      for si, sh in ipairs(shapes) do
        local B, L, S, E, Ev = table.unpack(sh)
        local g = gpu.random.Generator(si)
        local o = { dtype = dt }
        local q, k, v = g:normal(0, 1, { B, L, E }, o), g:normal(0, 1, { B, S, E }, o), g:normal(0, 1, { B, S, Ev }, o)
        for _, causal in ipairs { false, true } do
          local scale = 1 / math.sqrt(E)
          local out, lse = gpu.fused.attention(q, k, v, { scale = scale, is_causal = causal })
          local want, wlse = reference(q, k, v, scale, causal)
          assert.equal(dt, out.dtype)
          assert.same({ B, L, Ev }, out.shape)
          assert(h.close(out, want, tol), ("shape %d causal %s: out differs"):format(si, tostring(causal)))
          assert(h.close(lse, wlse, tol), ("shape %d causal %s: lse differs"):format(si, tostring(causal)))
        end
      end
    end)
  end
  it("keeps large scores finite (the online maximum) and 4-D heads", function()
    local g = gpu.random.Generator(9)
    local o = { dtype = "float64" }
    local q, k, v = g:normal(0, 30, { 2, 3, 90, 8 }, o), g:normal(0, 30, { 2, 3, 100, 8 }, o), g:normal(0, 1, { 2, 3, 100, 5 }, o)
    local out, lse = gpu.fused.attention(q, k, v, { scale = 1, is_causal = true })
    local want, wlse = reference(q, k, v, 1, true)
    assert(h.close(out, want, 1e-9))
    assert(h.close(lse, wlse, 1e-9))
    assert.is_true(out:isfinite():all():item())
  end)
end)

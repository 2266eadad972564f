#!/usr/bin/python3
"""Writes spec/fixtures/attention/torch.lua: PyTorch 1.13's values and gradients of scaled
dot-product attention (the composite softmax(q k^T scale [+ causal mask]) v: 1.13 has no
F.scaled_dot_product_attention) for spec/attention_bwd_spec.lua, and of a
MultiheadAttention and a TransformerEncoderLayer without masks and the layer with a
causal mask (the paths through gpu.fused.attention). The specs need no Python. Run with Debian's python3-torch:

    /usr/bin/python3 tools/gen_attention_fixtures.py

Every number is written as float64. float32 cases draw their inputs in float32 (so the
written values are exact float32 numbers) and compute the reference in float64 from them.
Each attention case: q, k, v, gy (the weights of the loss sum(y * gy)), y, lse (the
logsumexp of each row's scaled, masked scores), gq, gk, gv. A case with 'dead' (a 1-based
query row) has the gradients of the loss with that row's gy zeroed: the spec hands the
backward lse = -inf and a NaN out on that row (a row without keys) and expects them."""
import math
import os
import torch
import torch.nn as nn

from luafix import num, tensor

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "attention")
torch.manual_seed(1413)
D = torch.float64


def draw(shape, dtype):
    return torch.randn(*shape, dtype=dtype).to(D)


def reference(q, k, v, scale, causal):
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


# name, leading axes, L, S, E, Ev, causal, dtype, scale (None: 1/sqrt(E)), dead row (1-based)
CASES = [
    ("heads", (2, 3), 5, 7, 4, 6, False, "float64", None, None),
    ("causal_tiles", (1,), 70, 130, 4, 3, True, "float64", None, None),
    ("causal_L_gt_S", (2,), 9, 6, 3, 5, True, "float32", None, None),
    ("tiles_scale", (1, 2), 65, 65, 6, 4, True, "float32", 0.3, None),
    ("long_keys", (3,), 4, 66, 5, 2, False, "float32", None, None),
    ("dead_row", (2,), 6, 5, 3, 4, True, "float64", None, 4),
    ("unbatched", (), 3, 4, 2, 3, False, "float64", 0.8, None),
]


def attention_case(name, lead, L, S, E, Ev, causal, dtype, scale, dead):
    dt = torch.float32 if dtype == "float32" else torch.float64
    q = draw(lead + (L, E), dt).requires_grad_()
    k = draw(lead + (S, E), dt).requires_grad_()
    v = draw(lead + (S, Ev), dt).requires_grad_()
    gy = draw(lead + (L, Ev), dt)
    sc = scale if scale is not None else 1 / math.sqrt(E)
    y, lse = reference(q, k, v, sc, causal)
    gw = gy.clone()
    if dead is not None:
        gw[..., dead - 1, :] = 0
    gq, gk, gv = torch.autograd.grad((y * gw).sum(), [q, k, v])
    fields = ["name = %r" % name, "dtype = %r" % dtype, "causal = %s" % ("true" if causal else "false")]
    if scale is not None:
        fields.append("scale = %s" % num(scale))
    if dead is not None:
        fields.append("dead = %d" % dead)
    for key, t in (("q", q), ("k", k), ("v", v), ("gy", gy), ("y", y), ("lse", lse), ("gq", gq), ("gk", gk),
                   ("gv", gv)):
        fields.append("%s = %s" % (key, tensor(t)))
    return "  {" + ",\n   ".join(fields) + "},"


def sd(m):
    return "{" + ", ".join('["%s"] = %s' % (k, tensor(v)) for k, v in m.state_dict().items()) + "}"


def layers():
    out = []
    m = nn.MultiheadAttention(8, 2, batch_first=True, dtype=D)
    with torch.no_grad():
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    x = torch.randn(3, 20, 8, dtype=D, requires_grad=True)
    y, _ = m(x, x, x, need_weights=False)
    gy = torch.randn(y.shape, dtype=D)
    gx, gw, gb, gow = torch.autograd.grad((y * gy).sum(), [x, m.in_proj_weight, m.in_proj_bias, m.out_proj.weight])
    out.append("  mha = {sd = %s,\n   x = %s,\n   y = %s,\n   gy = %s,\n   gx = %s,\n   g_in_proj_weight = %s,\n"
               "   g_in_proj_bias = %s,\n   g_out_proj_weight = %s}," % (sd(m), tensor(x), tensor(y), tensor(gy),
                                                                       tensor(gx), tensor(gw), tensor(gb), tensor(gow)))
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True,
                                       activation="gelu", dtype=D)
    x = torch.randn(2, 24, 8, dtype=D, requires_grad=True)
    y = layer(x)
    gy = torch.randn(y.shape, dtype=D)
    gx, g1, gw = torch.autograd.grad((y * gy).sum(), [x, layer.linear1.weight, layer.self_attn.in_proj_weight])
    out.append("  encoder = {sd = %s,\n   x = %s,\n   y = %s,\n   gy = %s,\n   gx = %s,\n   g_linear1 = %s,\n"
               "   g_in_proj_weight = %s}," % (sd(layer), tensor(x), tensor(y), tensor(gy), tensor(gx), tensor(g1),
                                               tensor(gw)))
    # the same layer with a causal mask: gpulua's is_causal = true (the fused op's causal flag)
    x = torch.randn(2, 24, 8, dtype=D, requires_grad=True)
    causal = torch.ones(24, 24, dtype=torch.bool).triu(1)
    y = layer(x, src_mask=causal)
    gy = torch.randn(y.shape, dtype=D)
    gx, g1, gw = torch.autograd.grad((y * gy).sum(), [x, layer.linear1.weight, layer.self_attn.in_proj_weight])
    out.append("  encoder_causal = {x = %s,\n   y = %s,\n   gy = %s,\n   gx = %s,\n   g_linear1 = %s,\n"
               "   g_in_proj_weight = %s}," % (tensor(x), tensor(y), tensor(gy), tensor(gx), tensor(g1), tensor(gw)))
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = ["-- PyTorch %s values and gradients of attention, written by tools/gen_attention_fixtures.py; "
             "do not edit." % torch.__version__, "return {", " cases = {"]
    for c in CASES:
        lines.append(attention_case(*c))
    lines.append(" },")
    lines.append(" layers = {")
    lines.extend(layers())
    lines.append(" },")
    lines.append("}")
    with open(os.path.join(OUT, "torch.lua"), "w") as f:
        f.write("\n".join(lines) + "\n")


main()

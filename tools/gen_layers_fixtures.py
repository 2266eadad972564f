#!/usr/bin/python3
# Generates spec/fixtures/layers/torch.lua (PyTorch reference values for spec/layers_spec.lua
# and spec/losses_spec.lua) and spec/fixtures/layers/encoder.safetensors (a PyTorch
# TransformerEncoder state_dict); run once with Debian's python3-torch:
#   /usr/bin/python3 tools/gen_layers_fixtures.py
# Every value is float64; labels are written 1-based (PyTorch's + 1).
import json, math, os, struct
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(14)
d = torch.float64
here = os.path.dirname(os.path.abspath(__file__))
out_dir = os.path.join(here, "..", "spec", "fixtures", "layers")
os.makedirs(out_dir, exist_ok=True)
lines = []


def lua(t):
    if isinstance(t, (bool,)):
        return "true" if t else "false"
    if isinstance(t, (int, float)):
        return repr(float(t))
    if isinstance(t, dict):
        return "{" + ", ".join('["%s"] = %s' % (k, lua(v)) for k, v in t.items()) + "}"
    t = t.detach()
    if t.dtype == torch.bool:
        t = t.double()
    if t.dim() == 0:
        return repr(float(t))
    return "{" + ", ".join(lua(s) for s in t) + "}"


def emit(name, value):
    lines.append("  %s = %s," % (name, lua(value)))


def section(name, fn):
    lines.append(" %s = {" % name)
    fn()
    lines.append(" },")


def grads(y, inputs):
    gy = torch.randn(y.shape, dtype=d)
    gs = torch.autograd.grad((y * gy).sum(), inputs, allow_unused=True)
    return gy, gs


# ---- activations ------------------------------------------------------------------------------
def activations():
    x = (torch.randn(3, 5, dtype=d) * 3).requires_grad_()
    emit("x", x)
    forms = {
        "silu": F.silu, "elu": lambda t: F.elu(t, 0.7), "selu": F.selu, "mish": F.mish,
        "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "hardtanh": lambda t: F.hardtanh(t, -2.0, 1.5),
        "logsigmoid": F.logsigmoid, "softsign": F.softsign, "tanhshrink": F.tanhshrink, "relu6": F.relu6,
        "celu": lambda t: F.celu(t, 1.3), "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
        "prelu": lambda t: F.prelu(t, torch.tensor([0.1, -0.2, 0.3, 0.4, 0.5], dtype=d)),
    }
    for name, f in forms.items():
        y = f(x)
        gy, (gx,) = grads(y, [x])
        emit(name, {"y": y, "gy": gy, "gx": gx})


# ---- norms ------------------------------------------------------------------------------------
def norms():
    x = torch.randn(2, 3, 4, dtype=d, requires_grad=True)
    w = torch.randn(3, 4, dtype=d, requires_grad=True)
    b = torch.randn(3, 4, dtype=d, requires_grad=True)
    y = F.layer_norm(x, (3, 4), w, b, eps=1e-3)
    gy, (gx, gw, gb) = grads(y, [x, w, b])
    emit("layer_norm", {"x": x, "w": w, "b": b, "y": y, "gy": gy, "gx": gx, "gw": gw, "gb": gb})
    w1 = torch.randn(4, dtype=d, requires_grad=True)
    eps = torch.finfo(d).eps
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w1     # RMSNorm (PyTorch 2.4's formula)
    gy, (gx, gw) = grads(y, [x, w1])
    emit("rms_norm", {"w": w1, "y": y, "gy": gy, "gx": gx, "gw": gw})
    xg = torch.randn(2, 6, 5, dtype=d, requires_grad=True)
    wg = torch.randn(6, dtype=d, requires_grad=True)
    bg = torch.randn(6, dtype=d, requires_grad=True)
    y = F.group_norm(xg, 3, wg, bg, eps=1e-5)
    gy, (gx, gw, gb) = grads(y, [xg, wg, bg])
    emit("group_norm", {"x": xg, "w": wg, "b": bg, "y": y, "gy": gy, "gx": gx, "gw": gw, "gb": gb})


# ---- attention --------------------------------------------------------------------------------
def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ k.transpose(-1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if causal:
        L, S = s.shape[-2], s.shape[-1]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def attention():
    q = torch.randn(2, 2, 5, 4, dtype=d, requires_grad=True)
    k = torch.randn(2, 2, 6, 4, dtype=d, requires_grad=True)
    v = torch.randn(2, 2, 6, 3, dtype=d, requires_grad=True)
    emit("q", q); emit("k", k); emit("v", v)
    bmask = torch.rand(5, 6) > 0.3
    bmask[:, 0] = True
    fmask = torch.randn(2, 1, 5, 6, dtype=d)
    cases = {"plain": {}, "bool_mask": {"mask": bmask}, "float_mask": {"mask": fmask}, "scale": {"scale": 0.3}}
    emit("mask_bool", bmask)
    emit("mask_float", fmask)
    for name, c in cases.items():
        y = sdpa_ref(q, k, v, c.get("mask"), False, c.get("scale"))
        gy, (gq, gk, gv) = grads(y, [q, k, v])
        emit(name, {"y": y, "gy": gy, "gq": gq, "gk": gk, "gv": gv})
    qc = torch.randn(1, 2, 7, 4, dtype=d, requires_grad=True)
    kc = torch.randn(1, 2, 7, 4, dtype=d, requires_grad=True)
    vc = torch.randn(1, 2, 7, 4, dtype=d, requires_grad=True)
    y = sdpa_ref(qc, kc, vc, None, True)
    gy, (gq, gk, gv) = grads(y, [qc, kc, vc])
    emit("causal", {"q": qc, "k": kc, "v": vc, "y": y, "gy": gy, "gq": gq, "gk": gk, "gv": gv})


def sd(m):
    return {k: v for k, v in m.state_dict().items()}


def mha():
    m = nn.MultiheadAttention(8, 2, dtype=d)
    with torch.no_grad():
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    q = torch.randn(5, 3, 8, dtype=d, requires_grad=True)
    kv = torch.randn(6, 3, 8, dtype=d, requires_grad=True)
    kpm = torch.zeros(3, 6, dtype=torch.bool)
    kpm[1, 4:] = True
    am = torch.randn(5, 6, dtype=d)
    y, w = m(q, kv, kv, key_padding_mask=kpm, attn_mask=am)
    gy, (gq, gkv, gw) = grads(y, [q, kv, m.in_proj_weight])
    emit("mha", {"sd": sd(m), "q": q, "kv": kv, "kpm": kpm, "am": am, "y": y, "w": w, "gy": gy, "gq": gq,
                 "gkv": gkv, "gw": gw})
    _, wh = m(q, kv, kv, average_attn_weights=False)
    emit("mha_heads", {"w": wh})
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    yc, _ = m(q, q, q, attn_mask=causal)
    emit("mha_causal", {"y": yc})
    m2 = nn.MultiheadAttention(8, 4, kdim=5, vdim=3, batch_first=True, add_bias_kv=True, dtype=d)
    with torch.no_grad():
        m2.in_proj_bias.normal_()
    q2 = torch.randn(2, 4, 8, dtype=d)
    k2 = torch.randn(2, 6, 5, dtype=d)
    v2 = torch.randn(2, 6, 3, dtype=d)
    y2, w2 = m2(q2, k2, v2)
    emit("mha_kv", {"sd": sd(m2), "q": q2, "k": k2, "v": v2, "y": y2, "w": w2})
    # unbatched
    y3, w3 = m(q[:, 0], kv[:, 0], kv[:, 0])
    emit("mha_unbatched", {"y": y3, "w": w3})


def transformer():
    for name, kw in [("enc_post", dict(activation="relu")), ("enc_pre", dict(activation="gelu", norm_first=True))]:
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, dtype=d, **kw)
        x = torch.randn(2, 5, 8, dtype=d, requires_grad=True)
        mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
        y = layer(x, src_mask=mask)
        gy, (gx, g1) = grads(y, [x, layer.linear1.weight])
        emit(name, {"sd": sd(layer), "x": x, "y": y, "gy": gy, "gx": gx, "g_linear1": g1})
    for name, kw in [("dec_post", dict()), ("dec_pre", dict(norm_first=True, activation="gelu"))]:
        layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=d, **kw)
        t = torch.randn(4, 2, 8, dtype=d, requires_grad=True)
        mem = torch.randn(6, 2, 8, dtype=d, requires_grad=True)
        tmask = torch.ones(4, 4, dtype=torch.bool).triu(1)
        y = layer(t, mem, tgt_mask=tmask)
        gy, (gt, gm) = grads(y, [t, mem])
        emit(name, {"sd": sd(layer), "t": t, "mem": mem, "y": y, "gy": gy, "gt": gt, "gm": gm})
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=d)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dtype=d), enable_nested_tensor=False)
    with torch.no_grad():
        for p in enc.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    x = torch.randn(5, 2, 8, dtype=d)
    kpm = torch.zeros(2, 5, dtype=torch.bool)
    kpm[0, 3:] = True
    y = enc(x, src_key_padding_mask=kpm)
    emit("encoder", {"x": x, "kpm": kpm, "y": y})
    write_safetensors(os.path.join(out_dir, "encoder.safetensors"), enc.state_dict())


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        t = tensors[k].detach().contiguous().to(torch.float64)
        b = t.numpy().tobytes()
        header[k] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---- losses -----------------------------------------------------------------------------------
def losses():
    z = torch.randn(6, 4, dtype=d, requires_grad=True)
    y = torch.tensor([0, 3, 1, 1, 2, 3])
    w = torch.tensor([0.5, 2.0, 1.0, 1.5], dtype=d)
    emit("z", z); emit("labels", y + 1); emit("weight", w)
    yi = y.clone(); yi[2] = -100
    emit("labels_ignored", torch.where(yi == -100, yi, yi + 1))
    yk = y.clone(); yk[4] = 1                 # ignore_index = 1 (0-based) is label 2 here
    emit("labels_ig2", yk + 1)
    for red in ["mean", "sum", "none"]:
        for name, f in [
            ("ce", lambda: F.cross_entropy(z, y, reduction=red)),
            ("ce_w", lambda: F.cross_entropy(z, y, weight=w, reduction=red)),
            ("ce_ig", lambda: F.cross_entropy(z, yi, reduction=red)),
            ("ce_w_ig_ls", lambda: F.cross_entropy(z, yi, weight=w, label_smoothing=0.2, reduction=red)),
            ("ce_ig_ls", lambda: F.cross_entropy(z, yi, label_smoothing=0.2, reduction=red)),
            ("ce_ig2", lambda: F.cross_entropy(z, yk, ignore_index=1, weight=w, reduction=red)),
            ("nll_w", lambda: F.nll_loss(F.log_softmax(z, 1), y, weight=w, reduction=red)),
            ("nll_w_ig", lambda: F.nll_loss(F.log_softmax(z, 1), yi, weight=w, reduction=red)),
        ]:
            out = f()
            gy, (gz,) = grads(out, [z])
            emit("%s_%s" % (name, red), {"y": out, "gy": gy, "gz": gz})
    z3 = torch.randn(2, 4, 3, dtype=d, requires_grad=True)
    y3 = torch.tensor([[0, 3, 2], [1, 1, 0]])
    out = F.cross_entropy(z3, y3, weight=w, reduction="none")
    gy, (gz,) = grads(out, [z3])
    emit("ce_kdim", {"z": z3, "labels": y3 + 1, "y": out, "gy": gy, "gz": gz,
                     "mean": F.cross_entropy(z3, y3, weight=w)})
    a = torch.randn(3, 4, dtype=d, requires_grad=True)
    b = torch.randn(3, 4, dtype=d, requires_grad=True)
    emit("a", a); emit("b", b)
    p = torch.softmax(torch.randn(3, 4, dtype=d), 1)
    p[0, 1] = 0.0
    emit("p", p)
    lq = torch.log_softmax(a, 1)
    for red in ["mean", "sum", "none"]:
        for name, f in [
            ("l1", lambda: F.l1_loss(a, b, reduction=red)),
            ("smooth_l1", lambda: F.smooth_l1_loss(a, b, beta=0.7, reduction=red)),
            ("huber", lambda: F.huber_loss(a, b, delta=0.6, reduction=red)),
            ("kl", lambda: F.kl_div(torch.log_softmax(a, 1), p, reduction=red)),
            ("kl_log", lambda: F.kl_div(torch.log_softmax(a, 1), torch.log_softmax(b, 1), reduction=red,
                                        log_target=True)),
        ]:
            out = f()
            gy, (ga, gb) = grads(out, [a, b])
            emit("%s_%s" % (name, red), {"y": out, "gy": gy, "ga": ga, "gb": gb if gb is not None else torch.zeros(3, 4)})
    out = F.kl_div(torch.log_softmax(a, 1), p, reduction="batchmean")
    (ga,) = torch.autograd.grad(out, [a])
    emit("kl_batchmean", {"y": out, "ga": ga})
    t = torch.tensor([1.0, -1.0, -1.0], dtype=d)
    for red in ["mean", "sum", "none"]:
        out = F.cosine_embedding_loss(a, b, t, margin=-0.2, reduction=red)
        gy, (ga, gb) = grads(out, [a, b])
        emit("cosine_%s" % red, {"y": out, "gy": gy, "ga": ga, "gb": gb})
        x1, x2 = a[:, 0], b[:, 0]
        out = F.margin_ranking_loss(x1, x2, t, margin=0.3, reduction=red)
        gy, (ga, gb) = grads(out, [a, b])
        emit("ranking_%s" % red, {"y": out, "gy": gy, "ga": ga, "gb": gb})
    emit("t", t)
    n = torch.randn(3, 4, dtype=d, requires_grad=True)
    emit("n", n)
    for name, kw in [("triplet", dict(margin=1.5)), ("triplet_p1_swap", dict(margin=0.5, p=1, swap=True))]:
        out = F.triplet_margin_loss(a, b, n, reduction="none", **kw)
        gy, (ga, gb, gn) = grads(out, [a, b, n])
        emit(name, {"y": out, "gy": gy, "ga": ga, "gb": gb, "gn": gn,
                    "mean": F.triplet_margin_loss(a, b, n, **kw)})


lines.append("-- PyTorch %s reference values, generated by tools/gen_layers_fixtures.py; do not edit." % torch.__version__)
lines.append("return {")
section("activations", activations)
section("norms", norms)
section("attention", attention)
section("mha", mha)
section("transformer", transformer)
section("losses", losses)
lines.append("}")
with open(os.path.join(out_dir, "torch.lua"), "w") as f:
    f.write("\n".join(lines) + "\n")

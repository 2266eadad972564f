"""tools/luafix.py — writing torch tensors as Lua fixtures, shared by the fixture generators
(gen_seq_fixtures.py, gen_attention_fixtures.py): a number as a Lua expression (NaN and
the infinities as 0/0 and +-1/0) and a tensor as {shape = {...}, data = {...}} in float64."""
import math

import torch


def num(v):
    v = float(v)
    if math.isnan(v):
        return "0/0"
    if math.isinf(v):
        return "1/0" if v > 0 else "-1/0"
    return repr(v)


def tensor(t):
    t = t.detach().to(torch.float64).contiguous()
    return "{shape = {%s}, data = {%s}}" % (", ".join(str(s) for s in t.shape),
                                            ", ".join(num(v) for v in t.reshape(-1).tolist()))

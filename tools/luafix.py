"""tools/luafix.py — writing values as Lua fixtures, shared by the fixture generators
(gen_fixtures.py, gen_routines_fixtures.py, gen_seq_fixtures.py, gen_attention_fixtures.py):
a number as a Lua expression (booleans as true/false, integers exactly, with int64's
minimum as math.mininteger, since Lua reads -9223372036854775808 as a float; floats with
NaN and the infinities as 0/0 and +-1/0) and a torch tensor as {shape = {...}, data = {...}}
in float64."""
import math
import numbers

try:
    import numpy
    BOOLS = (bool, numpy.bool_)
except ImportError:             # the torch generators need no NumPy
    BOOLS = (bool,)


def num(v):
    if isinstance(v, BOOLS):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        v = int(v)
        return "math.mininteger" if v == -2**63 else str(v)
    v = float(v)
    if math.isnan(v):
        return "0/0"
    if math.isinf(v):
        return "1/0" if v > 0 else "-1/0"
    return repr(v)


def tensor(t):
    import torch
    t = t.detach().to(torch.float64).contiguous()
    return "{shape = {%s}, data = {%s}}" % (", ".join(str(s) for s in t.shape),
                                            ", ".join(num(v) for v in t.reshape(-1).tolist()))

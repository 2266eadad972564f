#!/usr/bin/python3
"""Writes spec/fixtures/seq/layers.lua: PyTorch's outputs and gradients of the recurrent,
1-D, transposed, adaptive and resampling layers on fixed inputs
and weights; spec/seq_spec.lua reads them (the specs need no Python). Also writes
spec/fixtures/seq/lstm_state.npz, a PyTorch LSTM's state_dict, for load_state_dict.
Run with Debian's /usr/bin/python3 (PyTorch 1.13, CPU):

    /usr/bin/python3 tools/gen_seq_fixtures.py

Each case: 'ctor' (Lua that builds the gpu layer, float64), the inputs, the layer's
parameters by PyTorch's names, its outputs (flattened: LSTM's (out, (h, c)) is out, h, c;
indices as float64, 1-based), the weights 'gy' of the loss sum_i sum(out_i * gy_i), and
the gradients of that loss for the inputs ('gin') and the parameters ('gparams')."""
import os
import numpy as np
import torch
import torch.nn as nn

from luafix import tensor

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "seq")
torch.manual_seed(14)
D = torch.float64


def tlist(ts):
    return "{" + ", ".join(tensor(t) for t in ts) + "}"


def tdict(d):
    return "{" + ", ".join('["%s"] = %s' % (k, tensor(v)) for k, v in d.items()) + "}"


cases = []


def flatten(res):
    if isinstance(res, (tuple, list)):
        out = []
        for r in res:
            out += flatten(r)
        return out
    return [res]


def case(name, ctor, module, inputs, call=None):
    """inputs: list of tensors (the state of an LSTM as a nested tuple is given as call)."""
    module = module.to(D)
    inputs = [t.to(D).requires_grad_(True) for t in inputs]
    res = flatten(call(module, *inputs) if call else module(*inputs))
    gys = [torch.randn(r.shape, dtype=D) if r.is_floating_point() and r.requires_grad else None for r in res]
    loss = sum((r * g).sum() for r, g in zip(res, gys) if g is not None)
    params = dict(module.named_parameters())
    gin = torch.autograd.grad(loss, inputs + list(params.values()), allow_unused=True)
    gparams = {k: g for k, g in zip(params.keys(), gin[len(inputs):]) if g is not None}
    outs = [r if r.is_floating_point() else r.to(D) + 1 for r in res]
    gy = "{" + ", ".join(tensor(g) if g is not None else "false" for g in gys) + "}"
    cases.append("  {name = %s, ctor = %s,\n   inputs = %s,\n   params = %s,\n   outs = %s,\n   gy = %s,\n"
                  "   gin = %s,\n   gparams = %s},\n" % (
                      repr(name), repr(ctor), tlist(inputs), tdict(params), tlist(outs), gy,
                      tlist(gin[:len(inputs)]), tdict(gparams)))


def randn(*s):
    return torch.randn(*s, dtype=D)


F64 = 'dtype = "float64"'

# ---- recurrent --------------------------------------------------------------------------------
case("RNN tanh, 1 layer", 'gpu.nn.RNN(3, 4, {%s})' % F64, nn.RNN(3, 4), [randn(5, 2, 3)])
case("RNN relu, 2 layers, h0", 'gpu.nn.RNN(3, 4, {num_layers = 2, nonlinearity = "relu", %s})' % F64,
     nn.RNN(3, 4, num_layers=2, nonlinearity="relu"), [randn(4, 2, 3), randn(2, 2, 4)])
case("LSTM, 1 layer", 'gpu.nn.LSTM(3, 5, {%s})' % F64, nn.LSTM(3, 5), [randn(6, 2, 3)])
case("LSTM 2 layers bidirectional batch_first, state", 'gpu.nn.LSTM(3, 4, {num_layers = 2, bidirectional = true, '
     'batch_first = true, %s})' % F64, nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True),
     [randn(2, 5, 3), randn(4, 2, 4), randn(4, 2, 4)], call=lambda m, x, h, c: m(x, (h, c)))
case("LSTM no bias, unbatched", 'gpu.nn.LSTM(2, 3, {bias = false, %s})' % F64, nn.LSTM(2, 3, bias=False),
     [randn(4, 2)])
case("GRU, 1 layer", 'gpu.nn.GRU(3, 4, {%s})' % F64, nn.GRU(3, 4), [randn(5, 2, 3)])
case("GRU 2 layers bidirectional, h0", 'gpu.nn.GRU(2, 3, {num_layers = 2, bidirectional = true, %s})' % F64,
     nn.GRU(2, 3, num_layers=2, bidirectional=True), [randn(4, 3, 2), randn(4, 3, 3)])

# ---- convolutions -----------------------------------------------------------------------------
case("Conv1d stride 2 padding 1 dilation 2 groups 2", 'gpu.nn.Conv1d(4, 6, 3, {stride = 2, padding = 1, '
     'dilation = 2, groups = 2, %s})' % F64, nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
     [randn(2, 4, 11)])
case("Conv1d unbatched, no bias", 'gpu.nn.Conv1d(2, 3, 2, {bias = false, %s})' % F64, nn.Conv1d(2, 3, 2, bias=False),
     [randn(2, 7)])
case("ConvTranspose1d stride 3 padding 1 output_padding 2", 'gpu.nn.ConvTranspose1d(3, 2, 4, {stride = 3, '
     'padding = 1, output_padding = 2, %s})' % F64, nn.ConvTranspose1d(3, 2, 4, stride=3, padding=1, output_padding=2),
     [randn(2, 3, 5)])
case("ConvTranspose2d stride 2 padding 1 output_padding 1 groups 2", 'gpu.nn.ConvTranspose2d(4, 6, 3, {stride = 2, '
     'padding = 1, output_padding = 1, groups = 2, %s})' % F64,
     nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), [randn(2, 4, 3, 4)])
case("ConvTranspose2d (2, 3) kernel, stride (1, 2), dilation 2", 'gpu.nn.ConvTranspose2d(2, 3, {2, 3}, '
     '{stride = {1, 2}, dilation = 2, %s})' % F64, nn.ConvTranspose2d(2, 3, (2, 3), stride=(1, 2), dilation=2),
     [randn(1, 2, 4, 3)])

# ---- pooling ----------------------------------------------------------------------------------
case("MaxPool1d 3 stride 2 padding 1, indices", 'gpu.nn.MaxPool1d(3, {stride = 2, padding = 1, '
     'return_indices = true})', nn.MaxPool1d(3, stride=2, padding=1, return_indices=True), [randn(2, 3, 9)])
case("AvgPool1d 3 stride 2 padding 1", 'gpu.nn.AvgPool1d(3, {stride = 2, padding = 1})',
     nn.AvgPool1d(3, stride=2, padding=1), [randn(2, 3, 8)])
case("AdaptiveAvgPool1d 4 from 10", 'gpu.nn.AdaptiveAvgPool1d(4)', nn.AdaptiveAvgPool1d(4), [randn(2, 3, 10)])
case("AdaptiveAvgPool2d (3, 2) from 7x5", 'gpu.nn.AdaptiveAvgPool2d({3, 2})', nn.AdaptiveAvgPool2d((3, 2)),
     [randn(2, 3, 7, 5)])
case("AdaptiveAvgPool2d (2, None) divisible", 'gpu.nn.AdaptiveAvgPool2d({2, false})',
     nn.AdaptiveAvgPool2d((2, None)), [randn(1, 2, 6, 3)])
case("AdaptiveMaxPool2d 3 from 7x5, indices", 'gpu.nn.AdaptiveMaxPool2d(3, {return_indices = true})',
     nn.AdaptiveMaxPool2d(3, return_indices=True), [randn(2, 3, 7, 5)])
case("AdaptiveMaxPool1d 3 from 8", 'gpu.nn.AdaptiveMaxPool1d(3)', nn.AdaptiveMaxPool1d(3), [randn(2, 2, 8)])

# ---- resampling -------------------------------------------------------------------------------
case("Upsample nearest x2", 'gpu.nn.Upsample{scale_factor = 2}', nn.Upsample(scale_factor=2), [randn(1, 2, 3, 4)])
case("Upsample nearest size (5, 7)", 'gpu.nn.Upsample{size = {5, 7}}', nn.Upsample(size=(5, 7)), [randn(1, 2, 3, 4)])
case("Upsample nearest x1.5 (1-D)", 'gpu.nn.Upsample{scale_factor = 1.5}', nn.Upsample(scale_factor=1.5),
     [randn(2, 2, 5)])
case("Upsample bilinear x2", 'gpu.nn.Upsample{scale_factor = 2, mode = "bilinear"}',
     nn.Upsample(scale_factor=2, mode="bilinear"), [randn(1, 2, 3, 4)])
case("Upsample bilinear size (5, 3) align_corners", 'gpu.nn.Upsample{size = {5, 3}, mode = "bilinear", '
     'align_corners = true}', nn.Upsample(size=(5, 3), mode="bilinear", align_corners=True), [randn(2, 1, 3, 4)])
case("Upsample bilinear x0.6 (downsampling)", 'gpu.nn.Upsample{scale_factor = 0.6, mode = "bilinear"}',
     nn.Upsample(scale_factor=0.6, mode="bilinear"), [randn(1, 2, 5, 6)])
case("Upsample linear size 7", 'gpu.nn.Upsample{size = 7, mode = "linear"}', nn.Upsample(size=7, mode="linear"),
     [randn(2, 3, 4)])
case("PixelShuffle 2", 'gpu.nn.PixelShuffle(2)', nn.PixelShuffle(2), [randn(2, 8, 3, 2)])
case("PixelUnshuffle 2", 'gpu.nn.PixelUnshuffle(2)', nn.PixelUnshuffle(2), [randn(2, 2, 4, 6)])

os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "layers.lua"), "w") as f:
    f.write("-- PyTorch %s outputs and gradients, written by tools/gen_seq_fixtures.py; do not edit.\n" %
            torch.__version__)
    f.write("return {\n")
    f.writelines(cases)
    f.write("}\n")

# a PyTorch state_dict as npz (names as PyTorch writes them), and the output it gives
m = nn.LSTM(3, 4, num_layers=2, bidirectional=True).to(D)
x = randn(5, 2, 3)
y, (h, c) = m(x)
np.savez(os.path.join(OUT, "lstm_state.npz"), **{k: v.detach().numpy() for k, v in m.state_dict().items()})
with open(os.path.join(OUT, "lstm_state.lua"), "w") as f:
    f.write("-- the input and output of lstm_state.npz's LSTM(3, 4, num_layers 2, bidirectional), written by\n"
            "-- tools/gen_seq_fixtures.py; do not edit.\n")
    f.write("return {x = %s, y = %s, h = %s, c = %s}\n" % (tensor(x), tensor(y), tensor(h), tensor(c)))

"""bench/layers.py — PyTorch twin of bench/layers.lua (same case names), 2 threads."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import case, try_import, DEVICE

torch = try_import("torch")
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    torch.set_num_threads(2)
    torch.manual_seed(1)
    nn, F = torch.nn, torch.nn.functional
    g = {"torch": torch, "F": F,
         "x": torch.randn(32 * 128, 128, device=dev, requires_grad=True),
         "ln": nn.LayerNorm(128).to(dev), "g": torch.randn(32 * 128, 128, device=dev)}
    case("LayerNorm (4096, 128): forward + backward", "torch",
         "x.grad = None; ln.zero_grad(); (ln(x) * g).sum().backward()", globals=g)

    def attention_case(shape):
        """The causal attention case on q, k, v (with gradients) and an output gradient of one shape."""
        n = shape[2]
        g = {"torch": torch, "mask": torch.ones(n, n, dtype=torch.bool, device=dev).tril(),
             "ga": torch.randn(*shape, device=dev),
             "q": torch.randn(*shape, device=dev, requires_grad=True),
             "k": torch.randn(*shape, device=dev, requires_grad=True),
             "v": torch.randn(*shape, device=dev, requires_grad=True)}
        # PyTorch 1.13 has no scaled_dot_product_attention: the same composite it would run
        case("attention (%s) causal: forward + backward" % ", ".join(map(str, shape)), "torch",
             "q.grad = k.grad = v.grad = None\n"
             "s = (q @ k.transpose(-1, -2) / %d ** 0.5).masked_fill(~mask, float('-inf'))\n"
             "((torch.softmax(s, -1) @ v) * ga).sum().backward()" % shape[3], globals=g)

    attention_case((32, 4, 128, 32))
    attention_case((8, 4, 512, 64))
    L = 128
    layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, activation="gelu",
                                       norm_first=True, batch_first=True).to(dev)
    causal = torch.ones(L, L, dtype=torch.bool, device=dev).triu(1)
    g3 = {"layer": layer, "causal": causal, "xs": torch.randn(32, L, 128, device=dev, requires_grad=True),
          "gs": torch.randn(32, L, 128, device=dev)}
    case("encoder layer E=128 h=4 ff=512, (32, 128): forward + backward", "torch",
         "xs.grad = None; layer.zero_grad(); (layer(xs, src_mask=causal) * gs).sum().backward()", globals=g3)

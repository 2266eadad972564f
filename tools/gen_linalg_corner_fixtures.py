#!/usr/bin/python3
"""Writes spec/fixtures/linalg_corners/*.npy: inputs and NumPy's results for the NumPy
corners of gpu.linalg that spec/linalg_corners_spec.lua checks (hermitian svd/pinv/
matrix_rank, cond of singular matrices, 2-vector cross products, NumPy 2's rtol).

    /usr/bin/python3 tools/gen_linalg_corner_fixtures.py

NumPy here is 1.24, which has no rtol: the rtol results are made with NumPy 2's rule
written out (pinv: rcond = rtol; matrix_rank: tol = rtol * the largest singular value).
Sign-free results only (singular values, pseudo-inverses, ranks, condition numbers).
"""
import os
import warnings
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "linalg_corners")
rng = np.random.default_rng(20261203)


def save(name, x):
    np.save(os.path.join(OUT, name + ".npy"), np.array(x, order="C"))


def sym(*shape):
    """Symmetric matrices with eigenvalues of distinct magnitudes, some negative."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.arange(1, n + 1, dtype=float) * 1.5 * np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def main():
    os.makedirs(OUT, exist_ok=True)
    warnings.simplefilter("ignore")
    # hermitian: svd values, pinv, matrix_rank (a rank-deficient one too)
    h4, hb = sym(4, 4), sym(2, 3, 3)
    v = rng.standard_normal((5, 2))
    hd = v @ v.T                                    # rank 2 of 5, symmetric
    for tag, a in (("h4", h4), ("hb", hb), ("hd", hd)):
        save(tag, a)
        save(tag + "_svals", np.linalg.svd(a, compute_uv=False, hermitian=True))
        save(tag + "_pinv", np.linalg.pinv(a, hermitian=True))
        save(tag + "_rank", np.linalg.matrix_rank(a, hermitian=True))
    # rtol (NumPy 2) beside rcond/tol
    a = rng.standard_normal((6, 4)) * np.array([1.0, 1e-2, 1e-4, 1e-7])
    save("r64", a)
    for rtol in (1e-3, 1e-5):
        tag = "%g" % rtol
        save("r64_pinv_rtol_" + tag, np.linalg.pinv(a, rcond=rtol))
        s = np.linalg.svd(a, compute_uv=False)
        save("r64_rank_rtol_" + tag, np.count_nonzero(s > s.max() * rtol))
    save("r64_rank_tol", np.linalg.matrix_rank(a, tol=1e-3))
    # cond of singular matrices: inf, not an error
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    save("sing", sing)
    for p, tag in ((None, "none"), (2, "2"), (-2, "m2"), (1, "1"), (np.inf, "inf"), ("fro", "fro")):
        save("sing_cond_" + tag, np.linalg.cond(sing, p))
    batch = np.stack([np.eye(2) * 2, sing, np.zeros((2, 2))])
    save("sbatch", batch)
    for p, tag in ((None, "none"), (1, "1"), ("fro", "fro")):
        save("sbatch_cond_" + tag, np.linalg.cond(batch, p))
    # 2-vector cross products
    a2, b2, b3 = rng.standard_normal((4, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 3))
    save("c_a2", a2); save("c_b2", b2); save("c_b3", b3)
    save("c_a2_b2", np.cross(a2, b2))
    save("c_a2_b3", np.cross(a2, b3))
    save("c_b3_a2", np.cross(b3, a2))
    save("c_col", np.cross(a2.T, b2.T, axis=0))


if __name__ == "__main__":
    main()

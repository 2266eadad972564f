"""bench/lib/report.py — reads the records of bench/run.sh (stdin or files) and prints
one table per group: a row per case, a column per implementation (best ns, median in
parentheses), ratios of gpulua to the others (in a group of more than MAX_RATIOS others, to
those its targets name and lua5.4+gpu.so), and each target met or missed. Columns "pypi X"
come from the benchmarks' virtual environment (bench/venv.sh), beside Debian's X. With
--markdown FILE it also writes the tables, with the date and the machine, to FILE; --strict makes a missed target exit 1.

Records (tab-separated):
  result <group> <case> <impl> <best_ns> <median_ns> <note>
  target <group> <case> max_ns <N>                  gpulua's best and median <= N ns
  target <group> <case> max_ratio <R> <baseline>    gpulua / baseline <= R (best and median)
                                                    (a case may have several targets)
  info <key> <value>                                machine and build facts
"""
import sys
from collections import OrderedDict

IMPL_ORDER = ["gpulua", "lua5.4+gpu.so", "lua5.4", "numpy", "cupy", "scipy", "scipy workers=-1", "torch",
              "pyfftw", "FFTW", "STREAM"]
MAX_RATIOS = 6         # more baselines than this: ratio columns only for the targets' ones
PYTAG = "pypi "        # the columns of the benchmarks' virtual environment (bench/venv.sh)


def impl_key(impl):
    """Column order: IMPL_ORDER, each library's PyPI column beside its Debian one."""
    base = impl[len(PYTAG):] if impl.startswith(PYTAG) else impl
    return (IMPL_ORDER.index(base) if base in IMPL_ORDER else 99, base, impl != base)


def fmt_ns(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return "%.2f ms" % (v / 1e6)
    if v >= 1e4:
        return "%.1f µs" % (v / 1e3)
    return "%.0f ns" % v


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def read(lines):
    groups, targets, info, notes = OrderedDict(), {}, OrderedDict(), {}
    for line in lines:
        f = line.rstrip("\n").split("\t")
        if f[0] == "result" and len(f) >= 6:
            g, c, impl = f[1], f[2], f[3]
            groups.setdefault(g, OrderedDict()).setdefault(c, {})[impl] = (num(f[4]), num(f[5]))
            note = f[6] if len(f) > 6 else ""
            if note.startswith("error:"):
                notes[(g, c, impl)] = note
        elif f[0] == "target" and len(f) >= 5:
            t = (f[3], float(f[4]), f[5] if len(f) > 5 else None)
            ts = targets.setdefault((f[1], f[2]), [])
            if t not in ts:                # each host of a group emits its targets
                ts.append(t)
            groups.setdefault(f[1], OrderedDict()).setdefault(f[2], {})
        elif f[0] == "info" and len(f) >= 3:
            info[f[1]] = f[2]
    return groups, targets, info, notes


def check(target, row):
    kind, value, base = target
    g = row.get("gpulua")
    if not g or g[0] is None:
        return "no result"
    if kind == "max_ns":
        ok = g[0] <= value and g[1] <= value
        return "%s (≤ %.0f ns)" % ("met" if ok else "MISSED", value)
    b = row.get(base)
    if not b or b[0] is None:
        return "no %s result" % base
    rb, rm = g[0] / b[0], g[1] / b[1]
    ok = rb <= value and rm <= value
    return "%s (≤ %.3g× %s)" % ("met" if ok else "MISSED", value, base)


def tables(groups, targets, notes):
    out, missed = [], 0
    for g, cases in groups.items():
        impls = sorted({i for row in cases.values() for i in row}, key=impl_key)
        others = [i for i in impls if i != "gpulua"]
        if len(others) > MAX_RATIOS:         # a wide group: the ratios its targets speak of
            named = {t[2] for c in cases for t in targets.get((g, c), [])}
            others = [i for i in others if i == "lua5.4+gpu.so" or i in named]
        head = ["case"] + impls + ["gpulua ÷ %s" % i for i in others] + ["target"]
        out.append("### %s\n" % g)
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 2) + ["---"]) + "|")
        for c, row in cases.items():
            cells = [c]
            for i in impls:
                v = row.get(i)
                if (g, c, i) in notes:
                    cells.append("error")
                elif v is None or v[0] is None:
                    cells.append("-")
                else:
                    cells.append("%s (%s)" % (fmt_ns(v[0]), fmt_ns(v[1])))
            gl = row.get("gpulua")
            for i in others:
                v = row.get(i)
                if gl and v and gl[0] is not None and v[0] and v[0] > 0:
                    cells.append("%.2f× (%.2f×)" % (gl[0] / v[0], gl[1] / v[1]))
                else:
                    cells.append("-")
            verdicts = [check(t, row) for t in targets.get((g, c), [])]
            missed += sum(v.startswith("MISSED") or v.startswith("no ") for v in verdicts)
            cells.append("; ".join(verdicts))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    for (g, c, i), n in notes.items():
        out.append("- %s / %s / %s: %s" % (g, c, i, n))
    return out, missed


def main():
    args = [a for a in sys.argv[1:] if a != "--strict"]
    md = None
    if len(args) >= 2 and args[0] == "--markdown":
        md, args = args[1], args[2:]
    lines = []
    for path in args or ["-"]:
        lines += (sys.stdin if path == "-" else open(path)).readlines()
    groups, targets, info, notes = read(lines)
    body, missed = tables(groups, targets, notes)
    print("\n".join(body))
    print("targets missed: %d" % missed)
    if md:
        with open(md, "w") as f:
            f.write("# gpulua benchmarks\n\n")
            f.write("Written by `make bench` (bench/run.sh); each cell is the best time per "
                    "operation with the median of the repeats in parentheses, Lua/Python loop "
                    "overhead subtracted (whole processes for `startup`). Ratios are gpulua's "
                    "time over the other's: below 1 is faster.\n\n")
            for k, v in info.items():
                f.write("- %s: %s\n" % (k, v))
            f.write("\n" + "\n".join(body) + "\n")
    strict = "--strict" in sys.argv
    return 1 if missed and strict else 0


if __name__ == "__main__":
    sys.exit(main())

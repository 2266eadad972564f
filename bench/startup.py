"""bench/startup.py — process start-up: `gpulua -e ''` against `lua5.4 -e ''` (target:
within 2x), and what loading gpu.so into lua5.4 costs. No Lua twin: this group times
whole processes, spawned from here (posix_spawn + waitpid), interleaved so that both
commands see the same machine state. Env: GPULUA_BENCH_BIN (the gpulua under test),
GPULUA_BENCH_SO_DIR (the folder holding its gpu.so), BENCH_QUICK=1 for fewer runs.
"""
import os, shutil, statistics, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import emit, QUICK, PYTAG

if PYTAG:        # whole processes, no Python library: the first Python's run measured them
    sys.exit(0)

BIN = os.environ.get("GPULUA_BENCH_BIN", "./gpulua")
SO_DIR = os.environ.get("GPULUA_BENCH_SO_DIR", ".")
LUA = shutil.which("lua5.4")
N = 100 if QUICK else 500

env = {k: v for k, v in os.environ.items() if not k.startswith("LUA_")}
env_so = dict(env, LUA_CPATH=os.path.join(SO_DIR, "?.so") + ";;")

# one row: start, run -e '', exit; lua5.4+gpu.so also loads the module (`require "gpu"`),
# which gpulua has preloaded as the global `gpu`
CASE = "start + -e '' + exit"
cases = [(CASE, "gpulua", [BIN, "-e", ""], env)]
if LUA:
    cases += [(CASE, "lua5.4", [LUA, "-e", ""], env),
              (CASE, "lua5.4+gpu.so", [LUA, "-e", "require 'gpu'"], env_so)]
devnull = os.open(os.devnull, os.O_WRONLY)


def run_once(argv, e):
    t = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, e, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status = os.waitpid(pid, 0)
    t = time.perf_counter_ns() - t
    if status != 0:
        raise RuntimeError("%s exited with status %d" % (" ".join(argv), status))
    return t


emit("target", "startup", CASE, "max_ratio", 2, "lua5.4")
times = {i: [] for i in range(len(cases))}
for i, c in enumerate(cases):          # warm the page cache
    for _ in range(5):
        run_once(c[2], c[3])
for _ in range(N):
    for i, c in enumerate(cases):
        times[i].append(run_once(c[2], c[3]))
for i, (name, impl, argv, _) in enumerate(cases):
    ts = times[i]
    emit("result", "startup", name, impl, "%.0f" % min(ts), "%.0f" % statistics.median(ts),
         "%s (%d runs)" % (" ".join(repr(a) if a == "" else a for a in argv[1:]), N))

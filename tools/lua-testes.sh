#!/bin/sh
# Runs Lua 5.4.4's own test suite (the `testes` folder of the Lua repository,
# tag v5.4.4) under an interpreter, ./gpulua unless told otherwise.
#
#   tools/lua-testes.sh [--host PROG] [--portable] [SOURCE]
#
# SOURCE (or $LUA_TESTES_SRC) is where the tests come from: a `testes` folder,
# a folder that holds one, or a git repository of Lua (bare or not) from which
# tag v5.4.4 is read.  Without one the tag is cloned from GitHub.  The tests
# are copied into a scratch folder ($LUA_TESTES_DIR, else a temporary one that
# is removed at the end); nothing is written into the source or this tree.
#
# The suite runs as a release build of lua can run it: without the internal
# tests of a build with ltests (`T` stays nil), with the C libraries of
# testes/libs built against the Lua headers ($LUA_INC, else pkg-config's
# lua5.4, else /usr/include/lua5.4).  --portable runs the "user" mode of
# all.lua's header instead (`-e"_U=true"`: no stand-alone interpreter, C
# library or other non-portable test).
#
# Each of the 29 files all.lua runs is run alone, in a fresh interpreter, with
# the globals and checks all.lua gives it (the driver below), so that one
# failure does not hide the rest; then all.lua runs whole, as the 30th.  Each
# gets a PASS/FAIL line (a failure shows its log's tail; a file that fails is
# run a second time, and passes only if that run passes, with the first run's
# tail shown), and the last line is "N passed, N failed".  The status is 0
# only when none failed.
set -u

tag=v5.4.4
host=./gpulua
portable=0
src=${LUA_TESTES_SRC:-}
while [ $# -gt 0 ]; do
  case $1 in
    --host) host=$2; shift 2 ;;
    --host=*) host=${1#--host=}; shift ;;
    --portable) portable=1; shift ;;
    -h|--help) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "lua-testes.sh: unknown option $1" >&2; exit 2 ;;
    *) src=$1; shift ;;
  esac
done

# the host by absolute path: the tests run in their own folder, and main.lua
# starts the interpreter again by the name it was given
case $host in
  */*) host=$(cd "$(dirname "$host")" && pwd)/$(basename "$host") ;;
  *) host=$(command -v "$host") || { echo "lua-testes.sh: no $host" >&2; exit 2; } ;;
esac
[ -x "$host" ] || { echo "lua-testes.sh: $host is not executable" >&2; exit 2; }

if [ -n "${LUA_TESTES_DIR:-}" ]; then
  work=$LUA_TESTES_DIR
  rm -rf "$work/testes"
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

# --- fetch ------------------------------------------------------------------
if [ -z "$src" ]; then
  git clone -q --depth 1 --branch "$tag" https://github.com/lua/lua "$work/lua" ||
    { echo "lua-testes.sh: cannot clone lua $tag" >&2; exit 2; }
  src=$work/lua
fi
if [ -f "$src/all.lua" ]; then
  cp -R "$src" "$work/testes"
elif [ -f "$src/testes/all.lua" ]; then
  cp -R "$src/testes" "$work/testes"
elif git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$src" archive "$tag" testes | tar -x -C "$work" ||
    { echo "lua-testes.sh: no $tag:testes in $src" >&2; exit 2; }
else
  echo "lua-testes.sh: no Lua tests in $src" >&2
  exit 2
fi
t=$work/testes

# --- the C libraries of attrib.lua's require tests ------------------------------
if [ "$portable" = 0 ]; then
  inc=${LUA_INC:-$(pkg-config --variable=includedir lua5.4 2>/dev/null)/lua5.4}
  [ -f "$inc/lua.h" ] || inc=/usr/include/lua5.4
  make -s -C "$t/libs" LUA_DIR="$inc" CC="${CC:-cc}" >"$work/libs.log" 2>&1 ||
    { cat "$work/libs.log" >&2; echo "lua-testes.sh: testes/libs did not build" >&2; exit 2; }
fi

# --- the driver: one test file with all.lua's set-up and checks -------------------
cat >"$t/one.lua" <<'EOF'
local name = arg[1]
_G.ARG = arg
if rawget(_G, "_U") then _soft, _port, _nomsg = true, true, true end
_soft = rawget(_G, "_soft") or false
_port = rawget(_G, "_port") or false
_nomsg = rawget(_G, "_nomsg") or false
debug = nil
T = nil
function Message (m) if not _nomsg then print(m) end end
math.randomseed()
assert(os.setlocale"C")
if name ~= "main.lua" then require"tracegc".start() end

-- how all.lua runs each file: through string.dump and load (stripped or
-- not), plainly, or as a coroutine; and what it checks of the result
local how = {
  ["gc.lua"] = "plain", ["strings.lua"] = "plain", ["literals.lua"] = "plain",
  ["code.lua"] = "strip", ["goto.lua"] = "strip", ["sort.lua"] = "strip",
  ["verybig.lua"] = "strip", ["big.lua"] = "coroutine",
}
local expect = {
  ["calls.lua"] = function (r) return r == deep and deep end,
  ["attrib.lua"] = 27, ["locals.lua"] = 5, ["events.lua"] = 12, ["verybig.lua"] = 10,
}
local f = assert(loadfile(name))
local r
if how[name] == "coroutine" then
  if not _soft then
    f = coroutine.wrap(f)
    assert(f() == 'b')
    assert(f() == 'a')
  end
elseif how[name] == "plain" then
  r = f()
else
  r = assert(load(string.dump(f, how[name] == "strip")))()
end
local e = expect[name]
if type(e) == "function" then assert(e(r), name .. ": wrong result")
elseif e then assert(r == e, name .. ": returned " .. tostring(r)) end
print("\n" .. name .. " OK")
EOF

# --- run --------------------------------------------------------------------------
files=$(sed -n 's/.*\(dofile\|report\)[("'"'"']*\([a-z0-9]*\.lua\)["'"'"')].*/\2/p' "$t/all.lua")
set -- $files all.lua
pass=0
fail=0
pre=
[ "$portable" = 1 ] && pre=-e_U=true
echo "host: $host$( [ "$portable" = 1 ] && echo ' (portable mode)')"
# one file (or all.lua) in a fresh interpreter, its log in $work/NAME.log.
# It runs in a session of its own, ended when it returns: a failed Ctrl-C test
# of main.lua leaves a looping interpreter behind in it
run () {
  if [ "$1" = all.lua ]; then set -- all.lua all.lua 'final OK !!!'
  else set -- "$1" "one.lua $1" "$1 OK"; fi
  rm -f "$t/time.txt"
  # stdin is a pipe: files.lua expects a seek on stdin to fail
  (cd "$t" && exec setsid sh -c ': | exec env -u LUA_INIT -u LUA_INIT_5_4 "$0" $1 $2' \
     "$host" "$pre" "$2") >"$work/${1%.lua}.log" 2>&1 &
  pid=$!
  wait $pid
  status=$?
  kill -KILL -- -$pid 2>/dev/null
  [ $status = 0 ] && grep -qxF "$3" "$work/${1%.lua}.log"
}
for f in "$@"; do
  if run "$f"; then
    pass=$((pass + 1))
    echo "PASS $f"
  else
    # main.lua's Ctrl-C test reads the background job's pid and the job's
    # first line from one pipe, a race a loaded machine can lose: a failure
    # is run once more, and both runs are shown
    first=$(tail -n 15 "$work/${f%.lua}.log")
    if run "$f"; then
      pass=$((pass + 1))
      echo "PASS $f (on the second run; the first ended:)"
      echo "$first" | sed 's/^/    /'
    else
      fail=$((fail + 1))
      echo "FAIL $f"
      tail -n 15 "$work/${f%.lua}.log" | sed 's/^/    /'
    fi
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

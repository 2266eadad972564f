#!/bin/sh
# tools/install-check.sh (`make install-check`, a suite of .ci/run): installs gpulua the
# three ways a user would, into temporary places, and uses each from another directory
# with only the installed paths:
#   make install PREFIX=<tmp>/prefix        gpulua on PATH, gpu.so for lua5.4, the man page,
#                                           the embedding example through pkg-config
#   make install DESTDIR=<tmp>/stage        the staged layout, then make uninstall
#   luarocks --tree <tmp>/rocks make        gpu.so for a stock lua5.4 from a rock tree
# One CPU-only build in build/install (INSTALL_BUILD) serves all three; the main tree is
# not touched. Ends with "N passed, N failed"; the status is non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
B=${INSTALL_BUILD:-build/install}
JOBS=${JOBS:-2}
LUAROCKS=${LUAROCKS:-luarocks --lua-version 5.4}
# build with luarocks' compiler, so that the rock's build finds the same objects up to date
CC_ROCK=$($LUAROCKS config variables.CC 2>/dev/null || echo cc)
MAKEARGS="CUDA=0 CC=$CC_ROCK BUILD=$B BIN=$B/gpulua SO=$B/gpu.so LIB=$B/libgpulua.a"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix
mkdir -p "$tmp/elsewhere"
passed=0
failed=0

# check NAME CMD...: one test; its output is shown only when it fails
check() {
  name=$1; shift
  if "$@" > "$tmp/log" 2>&1; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; tail -20 "$tmp/log"
  fi
}

# in_elsewhere CMD...: from an empty directory, with only system paths and what is given
in_elsewhere() {
  (cd "$tmp/elsewhere" && env -i HOME="$tmp" PATH="$P/bin:/usr/bin:/bin" "$@")
}

has_files() {   # has_files ROOT FILE... : every FILE under ROOT exists and is not empty
  r=$1; shift
  for f in "$@"; do [ -s "$r/$f" ] || { echo "missing: $r/$f"; return 1; }; done
}

LAYOUT="bin/gpulua lib/lua/5.4/gpu.so include/gpulua.h lib/libgpulua.a lib/pkgconfig/gpulua.pc
        share/man/man1/gpulua.1 share/doc/gpulua/README.md share/doc/gpulua/doc/API.md"

# ---- make install PREFIX=... ---------------------------------------------------------------
check "make install PREFIX=$P (CPU-only build in $B)" make -j"$JOBS" --no-print-directory $MAKEARGS install PREFIX="$P"
# shellcheck disable=SC2086
check "the installed layout" has_files "$P" $LAYOUT

lua_gpu() {   # a small computation through require "gpu" with the given cpath only
  in_elsewhere PREFIX_DIR="$1" LUA_PATH="$1/share/lua/5.4/?.lua" LUA_CPATH="$1/lib/lua/5.4/?.so" lua5.4 -e '
    local gpu = require "gpu"
    assert(package.searchpath("gpu", package.cpath):find(os.getenv("PREFIX_DIR"), 1, true) == 1)
    local x = gpu.arange(6):reshape(2, 3):astype("float32")
    assert(gpu.matmul(x, x.T):sum():item() == 83)  -- 5 + 14 + 14 + 50
    assert(require("gpu.nn").Linear, "gpu.nn from the embedded sources")
    print("ok")'
}
check "lua5.4 -e 'require \"gpu\"' from elsewhere, LUA_CPATH=$P/lib/lua/5.4/?.so only" lua_gpu "$P"

gpulua_on_path() {
  out=$(in_elsewhere gpulua -e 'io.write(gpu.ones(2, 3):sum():item() == 6 and "six" or "?", " ", package.searchpath("gpu.nn", "") or "embedded")') &&
  [ "$out" = "six embedded" ] || { echo "got: $out"; return 1; }
  [ "$(in_elsewhere sh -c "command -v gpulua")" = "$P/bin/gpulua" ]
}
check "the installed gpulua on PATH runs -e" gpulua_on_path
check "gpulua --help names the installed docs" sh -c \
  "cd '$tmp/elsewhere' && '$P/bin/gpulua' --help | grep -F '$P/share/doc/gpulua'"
if command -v man >/dev/null 2>&1; then
  check "man gpulua with MANPATH=$P/share/man" sh -c \
    "MANPATH='$P/share/man' MANWIDTH=80 man gpulua 2>/dev/null | grep -q GPULUA_MEMORY_LIMIT"
fi

embed() {
  cp examples/embed/main.c "$tmp/elsewhere/main.c" &&
  flags=$(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags --libs gpulua) &&
  echo "pkg-config: $flags" &&
  (cd "$tmp/elsewhere" && cc -O1 -o embed main.c $flags) &&
  in_elsewhere ./embed | grep -q "^embed: ok"
}
check "the embedding example built with pkg-config --cflags --libs gpulua" embed

# ---- DESTDIR staging, then uninstall ----------------------------------------------------------
S=$tmp/stage
check "make install DESTDIR=$S PREFIX=/usr/local" make --no-print-directory $MAKEARGS install DESTDIR="$S" PREFIX=/usr/local
# shellcheck disable=SC2086
check "the staged layout under DESTDIR" has_files "$S/usr/local" $LAYOUT
check "gpulua.pc names the PREFIX, not DESTDIR" sh -c \
  "grep -qx 'prefix=/usr/local' '$S/usr/local/lib/pkgconfig/gpulua.pc' && ! grep -q '$S' '$S/usr/local/lib/pkgconfig/gpulua.pc'"
check "make uninstall DESTDIR=$S leaves no file" sh -c \
  "make --no-print-directory $MAKEARGS uninstall DESTDIR='$S' PREFIX=/usr/local && [ -z \"\$(find '$S' -type f)\" ]"

# ---- luarocks make into a temporary tree ------------------------------------------------------
R=$tmp/rocks
check "luarocks --tree $R make (CUDA=0)" env CUDA=0 ROCK_BUILD="$B" MAKEFLAGS=-j"$JOBS" \
  $LUAROCKS --tree "$R" make gpulua-scm-1.rockspec
check "lua5.4 requires gpu.so from the rock tree, from elsewhere" lua_gpu "$R"
check "luarocks --tree $R remove gpulua" sh -c \
  "$LUAROCKS --tree '$R' remove gpulua && [ ! -e '$R/lib/lua/5.4/gpu.so' ]"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

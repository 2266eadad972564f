#!/bin/sh
# bench/dist/run.sh — figures on this machine's CPU, 2 ranks (Open MPI):
#   1. all_reduce bus bandwidth, 1 KB .. 256 MB (float32 sum), gpulua's all_reduce beside a
#      C loop of plain MPI_Allreduce on the same sizes; busbw as nccl-tests defines it for
#      all-reduce: algbw * 2 (n - 1) / n, algbw = bytes / time;
#   2. a DDP MLP epoch on 2 ranks x 1 thread against 1 rank x 1 thread (scaling efficiency
#      t1 / (2 t2)).
# The two all-reduce loops run one after the other, ROUNDS times (default 3) alternating, and
# each size keeps its best time per side: on a shared machine a load spike then hits both.
# usage: sh bench/dist/run.sh [./gpulua] [max_bytes]   env: ROUNDS
set -eu
BIN=${1:-./gpulua}
MAX=${2:-268435456}
NP=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=; [ "$(id -u)" = 0 ] && root=--allow-run-as-root
MPIRUN="mpirun --oversubscribe $root --bind-to none"
mpicc -O2 -o "$tmp/allreduce" bench/dist/allreduce.c
export OMP_NUM_THREADS=1
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, $NP ranks, OMP_NUM_THREADS=1"
ROUNDS=${ROUNDS:-3}
best() { awk '!($1 in t) || $2 < t[$1] { t[$1] = $2 } END { for (b in t) print b, t[b] }' "$@" | sort -n; }
r=1
while [ $r -le "$ROUNDS" ]; do
  $MPIRUN -np $NP "$tmp/allreduce" "$MAX" > "$tmp/mpi.$r"
  $MPIRUN -np $NP "$BIN" bench/dist/allreduce.lua "$MAX" > "$tmp/gl.$r"
  r=$((r + 1))
done
best "$tmp"/mpi.* > "$tmp/mpi.tsv"
best "$tmp"/gl.* > "$tmp/gl.tsv"
echo "# best of $ROUNDS alternating runs per side"
echo "| size | MPI_Allreduce busbw GB/s | gpulua all_reduce busbw GB/s | ratio |"
echo "|---:|---:|---:|---:|"
join "$tmp/mpi.tsv" "$tmp/gl.tsv" | awk -v n=$NP '{
  f = 2 * (n - 1) / n; b = $1
  size = b >= 1048576 ? sprintf("%d MB", b / 1048576) : sprintf("%d KB", b / 1024)
  m = b / $2 * f / 1e9; g = b / $3 * f / 1e9
  printf "| %s | %.3f | %.3f | %.2f |\n", size, m, g, g / m }'
t1=$($MPIRUN -np 1 "$BIN" bench/dist/ddp.lua | cut -f2)
t2=$($MPIRUN -np 2 "$BIN" bench/dist/ddp.lua | cut -f2)
echo
echo "DDP MLP epoch (784-256-10, 16384 samples, global batch 128): 1 rank ${t1} s, 2 ranks ${t2} s," \
  "speed-up $(echo "$t1 $t2" | awk '{printf "%.2f", $1 / $2}'), scaling efficiency" \
  "$(echo "$t1 $t2" | awk '{printf "%.0f%%", 100 * $1 / (2 * $2)}')"

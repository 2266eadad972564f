#!/bin/sh
# bench/char_lm.sh — char-LM comparison: examples/char_lm.lua under gpulua and its
# PyTorch twin bench/char_lm.py, the same steps of the same batches from the same corpus, at
# 2 threads each, one after the other (a quiet machine matters: each side takes minutes).
# usage: sh bench/char_lm.sh [./gpulua] ; env: STEPS (500), MODELS ("transformer lstm"),
# THREADS (2), LIMIT (corpus bytes, 0 = all). Prints one table row per model.
set -eu
BIN=${1:-./gpulua}
STEPS=${STEPS:-500}
MODELS=${MODELS:-"transformer lstm"}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-0}
PY=/usr/bin/python3
lim=; [ "$LIMIT" -gt 0 ] && lim="--limit $LIMIT"
echo "char_lm: $STEPS steps, $THREADS threads, $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
printf '| model | gpulua ms/step | PyTorch ms/step | ratio | gpulua val bits/char | PyTorch val bits/char | difference |\n|---|---:|---:|---:|---:|---:|---:|\n'
for m in $MODELS; do
  g=$(OMP_NUM_THREADS=$THREADS GPULUA_PLAIN=1 "$BIN" examples/char_lm.lua --model "$m" --steps "$STEPS" \
        --eval-every "$STEPS" --sample 0 --device cpu $lim)
  gms=$(echo "$g" | sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p')
  gval=$(echo "$g" | sed -n 's/.*val \([0-9.]*\) bits\/char.*/\1/p' | tail -1)
  t=$("$PY" bench/char_lm.py --model "$m" --steps "$STEPS" --threads "$THREADS" $lim)
  tms=$(echo "$t" | awk -F'\t' '$2 == "step_ms_median" { print $3 }')
  tval=$(echo "$t" | awk -F'\t' '$2 == "val_bpc" { print $3 }')
  awk -v m="$m" -v gms="$gms" -v tms="$tms" -v gv="$gval" -v tv="$tval" 'BEGIN {
    printf "| %s | %.1f | %.1f | %.2fx | %.4f | %.4f | %+.1f%% |\n", m, gms, tms, gms / tms, gv, tv, (gv - tv) / tv * 100 }'
done

#!/usr/bin/env bash
# Runs on a GPU machine: `lbm bench` once per PTX file given (variants from
# scripts/ptx-variant.py, staged under .device-bin/), in one process each,
# so the variants meet the same GPU in one run. Extra bench options
# come from BENCH_ARGS. Output to $OUT/ptx-ab.txt (or ./gpu-logs).
#   usage: BENCH_ARGS="--precisions f32,f16" scripts/ptx-ab.sh A.ptx B.ptx ...
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
args=(--backend gpu --sizes 256,512 --streaming esoteric-pull --steps 200)
read -r -a extra <<< "${BENCH_ARGS:-}"
for ptx in "$@"; do
  echo "=== $ptx ==="
  LBM_PTX_FILE="$ptx" .device-bin/lbm bench "${args[@]}" "${extra[@]}" 2>&1 | grep -E "^d3q|^d2q|copy bandwidth"
done | tee "$out/ptx-ab.txt"

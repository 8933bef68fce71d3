#!/usr/bin/env bash
# One run on a machine of several GPUs, over binaries staged by
# scripts/stage-gpu-binaries.sh: refinement levels split over the GPUs give
# one GPU's populations (tests/refinement.rs), and the refined sphere tunnel
# (halfway walls, 400 steps) run on one GPU and on all of them writes the
# same forces, pictures and summary. Logs go to $OUT (or ./gpu-logs).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
export LBM_REQUIRE_GPU=1
bin=.device-bin
n=$(nvidia-smi -L | wc -l)
devices=$(seq -s, 0 $((n - 1)))
{
  if [ -x "$bin/refinement" ]; then
    "$bin/refinement" --test-threads 1 --nocapture levels_split_over_gpus
  fi
  for d in 0 "$devices"; do
    # The same case name (the file's) on both, so that the outputs share their names.
    mkdir -p "/tmp/gpus-${d//,/}"
    sed -e '/wall = "interpolated"/d' -e 's/^steps = .*/steps = 400/' -e 's/^every = .*/every = 200/' \
      -e 's/^forces_every = .*/forces_every = 100/' -e "s/^\[simulation\]/[simulation]\ndevices = [$d]/" \
      cases/sphere-refined.toml > "/tmp/gpus-${d//,/}/sphere.toml"
    "$bin/lbm" run "/tmp/gpus-${d//,/}/sphere.toml" --output "$out/sphere-${d//,/}" --report quiet
  done
  for f in "$out/sphere-0"/*; do
    name=$(basename "$f")
    [ "$name" = summary.json ] && continue
    cmp -s "$f" "$out/sphere-${devices//,/}/$name" && echo "$name: identical on $n GPUs" || echo "$name: DIFFERS on $n GPUs"
  done
  grep -h "forces_mean" -A3 "$out"/sphere-*/summary.json | head -20
} 2>&1 | tee "$out/refined-split.log"

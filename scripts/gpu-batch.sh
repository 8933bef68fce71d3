#!/usr/bin/env bash
# Runs on a GPU machine over binaries staged by scripts/stage-gpu-binaries.sh:
# device info, the GPU variants of every test with LBM_REQUIRE_GPU=1 (the CPU
# variants run in CI), the ptxas check with the machine's ptxas, an example
# case, and `lbm bench`. Logs go to $OUT (or ./gpu-logs).
#   usage: scripts/gpu-batch.sh [test-name-filter] [bench sizes]
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.device-bin
out="${OUT:-gpu-logs}"
mkdir -p "$out"
export LBM_REQUIRE_GPU=1 LBM_REQUIRE_PTXAS=1 LBM_PTXAS="${LBM_PTXAS:-ptxas}"
filter="${1:-gpu}"
sizes="${2:-256}"
status=0
{
  nvidia-smi -L
  "$bin/lbm" info
  echo "=== test ptx ==="
  "$bin/ptx" --test-threads 1 --nocapture || status=1
  for t in equivalence validation multi_gpu sparse; do
    echo "=== test $t (filter: $filter) ==="
    "$bin/$t" --test-threads 1 --nocapture "$filter" || status=1
    # The one-rank NCCL executor's instances of the conformance cases.
    echo "=== test $t (filter: nccl) ==="
    "$bin/$t" --test-threads 1 --nocapture nccl || status=1
  done
  echo "=== test cli: a dead NCCL rank ends the job (two GPUs; skipped on one) ==="
  LBM_BIN="$bin/lbm" "$bin/cli" --test-threads 1 --nocapture dead_rank || status=1
  echo "tests exit status: $status"
  echo "=== lbm validate --backend gpu --full ==="
  "$bin/lbm" validate --backend gpu --full || status=1
  echo "=== lbm run cases/cavity3d.toml ==="
  "$bin/lbm" run cases/cavity3d.toml --backend gpu --output "$out/cavity3d" || status=1
  echo "=== lbm bench --sizes $sizes ==="
  "$bin/lbm" bench --backend gpu --sizes "$sizes" --geometry cavity,periodic --steps 200 || status=1
} 2>&1 | tee "$out/gpu-batch.log"
exit $status

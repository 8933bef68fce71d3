#!/usr/bin/env bash
# One device call on a 4-GPU machine: GPU layout/partition tests, the
# multi-GPU scaling benchmarks (strong, weak, exchange comparison) and the
# NCCL path at 512^3. Logs and JSON go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
export LBM_REQUIRE_GPU=1
bin=.device-bin
{
  $bin/equivalence --test-threads 1 gpu 2>&1 | grep -E "test result|FAILED|panicked"
  $bin/multi_gpu --test-threads 1 --nocapture 2>&1 | grep -c " 0 differ"
  for ptx in "${@}"; do
    echo "=== single GPU with $ptx ==="
    LBM_PTX_FILE=$ptx $bin/lbm bench --backend gpu --sizes 256,512 --precisions f32 --streaming esoteric-pull --steps 200
  done
  $bin/lbm bench --gpus 1,2,4 --sizes 128,256,512 --lattices d3q19,d3q27 --steps 200 --json "$out/scaling.json"
  $bin/lbm bench --gpus 1,2,4 --weak --sizes 256 --lattices d3q19,d3q27 --exchange disaggregated,soa --steps 200 --json "$out/weak.json"
  scripts/nccl-local.sh 4 --size 512 --steps 200 2>&1 | grep -i "differ\|error"
  scripts/nccl-local.sh 4 --lattice d3q27 --size 512 --steps 200 2>&1 | grep -i "differ\|error"
} 2>&1 | tee "$out/scaling.log"

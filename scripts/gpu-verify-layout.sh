#!/usr/bin/env bash
# One device call: every GPU correctness test, NCCL bit-identity on 2 and 4
# ranks, and the single-GPU D3Q19/D3Q27 f32 speed. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
export LBM_REQUIRE_GPU=1 LBM_REQUIRE_PTXAS=1 LBM_PTXAS="${LBM_PTXAS:-ptxas}"
status=0
{
  for t in ptx equivalence validation multi_gpu; do
    echo "=== test $t ==="
    .device-bin/$t --test-threads 1 --nocapture gpu 2>&1 | grep -E "differ|test result|FAILED|panicked|error" || status=1
  done
  .device-bin/multi_gpu --test-threads 1 --nocapture 2>&1 | grep -c " 0 differ"
  for n in 2 4; do for l in d3q19 d3q27; do for s in esoteric-pull two-lattice; do
    scripts/nccl-local.sh $n --lattice $l --streaming $s --size 64 --steps 1001 2>&1 | grep -i "differ\|error" || status=1
  done; done; done
  scripts/nccl-local.sh 4 --size 512 --steps 200 2>&1 | grep -i "differ\|error"
  scripts/nccl-local.sh 2 --size 512 --steps 200 2>&1 | grep -i "differ\|error"
  .device-bin/lbm bench --backend gpu --sizes 256,512 --precisions f32,f16 --streaming esoteric-pull --steps 200 --json "$out/bench.json" || status=1
} 2>&1 | tee "$out/verify.log"
exit $status

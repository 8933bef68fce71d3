#!/usr/bin/env bash
# One run on a 4-GPU machine: the multi-GPU bit-identity test, NCCL
# bit-identity on 2 and 4 ranks, the scaling benchmarks (strong with the
# three exchanges side by side, weak, sparse grids) and NCCL at 512^3. Logs and JSON go
# to $OUT (or ./gpu-logs).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-logs}"; mkdir -p "$out"
export LBM_REQUIRE_GPU=1
bin=.device-bin
{
  $bin/multi_gpu --test-threads 1 --nocapture > "$out/multi_gpu.log" 2>&1
  echo "multi_gpu test: $(grep -c " 0 differ" "$out/multi_gpu.log") of $(grep -c " differ" "$out/multi_gpu.log") configurations bit-identical; $(grep "test result" "$out/multi_gpu.log")"
  for n in 2 4; do for l in d3q19 d3q27; do for s in esoteric-pull two-lattice; do for g in dense sparse8; do
    scripts/nccl-local.sh $n --lattice $l --streaming $s --grid $g --size 64 --steps 1001 2>&1 | grep -i "differ\|error"
  done; done; done; done
  $bin/lbm bench --gpus 1,2,4 --sizes 128,256,512 --lattices d3q19,d3q27 --steps 200 --json "$out/scaling.json"
  $bin/lbm bench --gpus 1,2,4 --weak --sizes 256 --lattices d3q19,d3q27 --exchange disaggregated,soa --steps 200 --json "$out/weak.json"
  # Sparse grids: halos as strided copies of the crossing layers of the blocks.
  $bin/lbm bench --gpus 1,2,4 --sizes 256,512 --lattices d3q19,d3q27 --grids sparse4,sparse8 --exchange disaggregated,soa --steps 200 --json "$out/sparse-scaling.json"
  for l in d3q19 d3q27; do
    scripts/nccl-local.sh 4 --lattice $l --size 512 --steps 200 2>&1 | grep -i "differ\|error"
  done
  # A case over NCCL writes what one GPU writes; a resumed one too.
  $bin/lbm run cases/cavity3d.toml --backend gpu --output "$out/run-1gpu" --report quiet
  scripts/nccl-local.sh 4 run cases/cavity3d.toml --output "$out/run-nccl" --report quiet
  scripts/nccl-local.sh 4 run cases/cavity3d.toml --output "$out/run-resumed" --report quiet --steps 3001
  scripts/nccl-local.sh 4 run cases/cavity3d.toml --output "$out/run-resumed" --report quiet --resume
  for d in run-nccl run-resumed; do
    for f in "$out"/run-1gpu/*.csv; do
      cmp -s "$f" "$out/$d/$(basename "$f")" && echo "$d: $(basename "$f") identical" || echo "$d: $(basename "$f") DIFFERS"
    done
  done
} 2>&1 | tee "$out/scaling.log"

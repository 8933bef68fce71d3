#!/usr/bin/env bash
# Starts N processes of `lbm nccl` on this machine, one per GPU, as a
# launcher would (RANK, WORLD_SIZE, LOCAL_RANK), with a fresh file
# rendezvous; fails if any rank fails.
#   usage: scripts/nccl-local.sh N [lbm nccl options...]
set -uo pipefail
n="$1"; shift
bin="${LBM_BIN:-.device-bin/lbm}"
id="$(mktemp -u /tmp/lbm-nccl-id.XXXXXX)"
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r "$bin" nccl --rendezvous "file:$id" "$@" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status

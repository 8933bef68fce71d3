#!/usr/bin/env bash
# Starts N processes of `lbm nccl` (or `lbm run`) on this machine, one per
# GPU, as a launcher would (RANK, WORLD_SIZE, LOCAL_RANK), with a fresh file
# rendezvous; fails if any rank fails.
#   usage: scripts/nccl-local.sh N [lbm nccl options...]
#          scripts/nccl-local.sh N run CASE.toml [lbm run options...]
set -uo pipefail
n="$1"; shift
command=nccl
if [ "${1:-}" = run ]; then command=run; shift; fi
bin="${LBM_BIN:-.device-bin/lbm}"
id="$(mktemp -u /tmp/lbm-nccl-id.XXXXXX)"
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r "$bin" "$command" --rendezvous "file:$id" "$@" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status

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
# The first rank to fail ends the others (they would wait for it forever),
# as mpirun and srun --kill-on-bad-exit do.
status=0
running=("${pids[@]}")
while [ ${#running[@]} -gt 0 ]; do
  still=()
  for p in "${running[@]}"; do
    if kill -0 "$p" 2>/dev/null; then
      still+=("$p")
    elif ! wait "$p"; then
      status=1
    fi
  done
  running=("${still[@]}")
  if [ $status -ne 0 ] && [ ${#running[@]} -gt 0 ]; then
    kill "${running[@]}" 2>/dev/null
    wait "${running[@]}" 2>/dev/null
    running=()
  fi
  [ ${#running[@]} -gt 0 ] && sleep 0.2
done
exit $status

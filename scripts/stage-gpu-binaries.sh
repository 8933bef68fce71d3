#!/usr/bin/env bash
# Builds the lbm binary, the test binaries and the criterion bench, and copies
# them (stripped) into .device-bin/ (git-ignored) for the GPU machines, which
# have no Rust toolchain. Run scripts/gpu-batch.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device-bin
rm -rf "$out" && mkdir -p "$out"
cargo build --release --bin lbm
cp target/release/lbm "$out/"
cargo test --release --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], sys.argv[1] + "/" + m["target"]["name"])
' "$out"
cargo bench --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["bench"]:
        shutil.copy(m["executable"], sys.argv[1] + "/bench_" + m["target"]["name"])
' "$out"
strip "$out"/* 2>/dev/null || true
ls -la "$out"
du -sh "$out"

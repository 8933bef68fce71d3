#!/usr/bin/env bash
# Builds the lbm binary, the test binaries and the criterion bench, and copies
# them (stripped) into .device-bin/ (git-ignored) for a GPU machine without a
# Rust toolchain. Run scripts/gpu-batch.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device-bin
rm -rf "$out" && mkdir -p "$out"
cargo build --release --bin lbm
cp target/release/lbm "$out/"
# Copies the executables of one target kind (test or bench) that cargo reports.
copy_executables() { # KIND PREFIX < cargo --message-format=json output
  python3 -c '
import json, sys, shutil
kind, prefix, out = sys.argv[1:]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == [kind]:
        shutil.copy(m["executable"], out + "/" + prefix + m["target"]["name"])
' "$1" "$2" "$out"
}
cargo test --release --no-run --message-format=json 2>/dev/null | copy_executables test ""
cargo bench --no-run --message-format=json 2>/dev/null | copy_executables bench bench_
strip "$out"/* 2>/dev/null || true
ls -la "$out"
du -sh "$out"

#!/usr/bin/env bash
# The test suite, from a fresh machine: installs the pinned toolchain (from
# rust-toolchain.toml) and ptxas 13.0 (a pip wheel, for the offline PTX check),
# then runs every test. GPU tests run when a GPU is present and report
# themselves skipped otherwise (LBM_REQUIRE_GPU=1 makes that a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install
tools="$PWD/.tools"
ptxas="$tools/nvcc/nvidia/cu13/bin/ptxas"
if [ ! -x "$ptxas" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$tools/nvcc" nvidia-cuda-nvcc==13.0.88
fi
export LBM_PTXAS="$ptxas" LBM_REQUIRE_PTXAS=1
cargo fmt --all -- --check
cargo clippy --release --workspace --all-targets -- -D warnings
cargo test --release --workspace "$@"

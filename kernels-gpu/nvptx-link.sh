#!/usr/bin/env bash
# Linker for the nvptx64-nvidia-cuda target (rustc's own `llvm-bitcode-linker`
# is not distributed for this toolchain). rustc hands us LLVM bitcode objects,
# the names to export and the output path; we link them with the llvm-tools
# shipped with the toolchain: llvm-link -> opt (internalise all but the
# kernels, O3) -> llc (PTX). LBM_LLVM_BIN is set by build.rs.
set -euo pipefail
bin="${LBM_LLVM_BIN:?LBM_LLVM_BIN must point at the llvm-tools bin directory of the toolchain}"
cpu=sm_90
ptx_isa="${LBM_PTX_ISA:-ptx80}"
out=""
exports=()
objects=()
while [ $# -gt 0 ]; do
  case "$1" in
    --export-symbol) exports+=("$2"); shift 2 ;;
    --target-cpu) cpu="$2"; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    -L|--target|--target-feature|--linker-plugin-lto) shift 2 ;;
    *.o) objects+=("$1"); shift ;;
    *) shift ;;  # rlibs (compiler_builtins), -O3, --debug etc.
  esac
done
[ -n "$out" ] || { echo "nvptx-link: no -o given" >&2; exit 1; }
[ ${#objects[@]} -gt 0 ] || { echo "nvptx-link: no bitcode objects given" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/llvm-link" "${objects[@]}" -o "$tmp/linked.bc"
api=$(IFS=,; echo "${exports[*]}")
"$bin/opt" -unroll-threshold=4000 --internalize-public-api-list="$api" -passes='internalize,default<O3>' "$tmp/linked.bc" -o "$tmp/opt.bc"
[ -n "${LBM_KEEP_BITCODE:-}" ] && cp "$tmp/opt.bc" "$LBM_KEEP_BITCODE"
"$bin/llc" -O3 -march=nvptx64 -mcpu="$cpu" -mattr=+"$ptx_isa" "$tmp/opt.bc" -o "$out"

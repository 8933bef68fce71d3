//! Compiles `kernels-gpu` to PTX with rustc's nvptx64 back end and leaves it
//! in `OUT_DIR/kernels.ptx` for `src/ptx.rs` to embed.
//!
//! Settings (environment): `LBM_CUDA_ARCH` (default `sm_90`, Hopper) is the
//! GPU architecture the PTX targets.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let arch = env::var("LBM_CUDA_ARCH").unwrap_or_else(|_| "sm_90".into());
    println!("cargo:rerun-if-env-changed=LBM_CUDA_ARCH");
    println!("cargo:rerun-if-env-changed=LBM_KEEP_BITCODE");
    println!("cargo:rerun-if-changed=kernels-gpu/src");
    println!("cargo:rerun-if-changed=kernels-gpu/Cargo.toml");
    println!("cargo:rerun-if-changed=kernels-gpu/nvptx-link.sh");

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = capture(Command::new(&rustc).args(["--print", "sysroot"]));
    let host = env::var("HOST").unwrap();
    let llvm_bin = Path::new(sysroot.trim()).join(format!("lib/rustlib/{host}/bin"));
    if !llvm_bin.join("llc").exists() {
        fail(&format!(
            "llc not found in {}: install the toolchain's llvm-tools component \
             (`rustup toolchain install` reads rust-toolchain.toml)",
            llvm_bin.display()
        ));
    }

    // One nested build per profile directory, not per run of this script:
    // `cargo clippy` and `cargo test` run it with different hashes (so
    // different `OUT_DIR`s), and the second then finds the PTX fresh instead
    // of building it again. `OUT_DIR` is `<profile dir>/build/<unit>/out`.
    let target_dir = out.ancestors().nth(3).unwrap_or(&out).join("ptx-build");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(manifest.join("kernels-gpu"))
        .args(["rustc", "--release", "--lib", "--target", "nvptx64-nvidia-cuda"])
        .args(["-Zbuild-std=core", "--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "-C", &format!("target-cpu={arch}"), "-C", "llvm-args=-unroll-threshold=4000"])
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env("CARGO_PROFILE_RELEASE_LTO", "fat")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "3")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_TARGET_NVPTX64_NVIDIA_CUDA_LINKER", manifest.join("kernels-gpu/nvptx-link.sh"))
        .env("LBM_LLVM_BIN", &llvm_bin);
    if let Ok(keep) = env::var("LBM_KEEP_BITCODE") {
        // Developer knob: keep the optimised bitcode for experiments with llc.
        cmd.env("LBM_KEEP_BITCODE", keep);
    }
    // The outer build's settings must not leak into the nested one.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().unwrap_or_else(|e| fail(&format!("cannot run cargo: {e}")));
    if !status.success() {
        fail("building kernels-gpu for nvptx64-nvidia-cuda failed (see the output above)");
    }
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/kernels_gpu.ptx");
    let text = fs::read_to_string(&ptx).unwrap_or_else(|e| fail(&format!("no PTX at {}: {e}", ptx.display())));
    fs::write(out.join("kernels.ptx"), cap_registers(&text)).unwrap();
    println!("cargo:rustc-env=LBM_CUDA_ARCH={arch}");
}

/// Inserts `.maxnreg N` (PTX performance directive, between an entry's
/// parameter list and its body) where `kernels_gpu::kernels::register_cap`
/// asks for one: rustc has no launch-bounds attribute.
fn cap_registers(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 1024);
    let mut cap: Option<u32> = None;
    for line in ptx.lines() {
        if let Some(rest) = line.split(".entry ").nth(1) {
            let name = rest.split('(').next().unwrap_or("").trim();
            cap = kernels_gpu::kernels::register_cap_for_entry(name);
        }
        if line == "{" {
            if let Some(n) = cap.take() {
                out.push_str(&format!(".maxnreg {n}\n"));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn capture(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| fail(&format!("{cmd:?}: {e}")));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

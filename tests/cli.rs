//! The `lbm` command line: runs a case to VTK files, and refuses bad input
//! with a message instead of a panic.

use std::path::PathBuf;
use std::process::Command;

fn lbm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lbm"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbm-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_writes_fields_and_reports_mlups() {
    let out = scratch("run");
    let o = lbm()
        .args([
            "run",
            "cases/cavity3d.toml",
            "--backend",
            "cpu",
            "--size",
            "12",
            "--steps",
            "20",
            "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "lbm run failed: {}{}",
        stdout,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("MLUPS"), "{stdout}");
    let vtk = std::fs::read(out.join("cavity3d_00000020.vtk")).unwrap();
    assert!(vtk.starts_with(b"# vtk DataFile Version 3.0"));
    assert!(String::from_utf8_lossy(&vtk).contains("DIMENSIONS 12 12 12"));
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn every_example_case_is_valid() {
    for entry in std::fs::read_dir("cases").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let case = lbm::host::case::Case::load(&path).unwrap();
        case.setup(&path, None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let dir = scratch("bad");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[simulation]\nlattice = \"D3Q20\"\n").unwrap();
    for args in [
        vec![
            "run".to_string(),
            bad.display().to_string(),
            "--backend".into(),
            "cpu".into(),
        ],
        vec!["run".into(), dir.join("missing.toml").display().to_string()],
    ] {
        let o = lbm().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn gpu_request_without_gpu_is_a_clear_error() {
    if lbm::host::gpu::device_count().is_ok() {
        eprintln!("SKIPPED gpu_request_without_gpu_is_a_clear_error: this machine has a GPU");
        return;
    }
    let o = lbm()
        .args(["run", "cases/cavity3d.toml", "--backend", "gpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("no usable GPU") && err.contains("--backend cpu"),
        "{err}"
    );
}

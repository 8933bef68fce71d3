//! Shared test helpers: backends, and the GPU skip rule.
#![allow(dead_code)]

use lbm::host::validation::Factory;
use lbm::BackendKind;

/// The factory the validation cases use: the embedded PTX.
pub fn factory() -> Factory<'static> {
    &|c, b| lbm::build_solver(c, b)
}

/// The GPU backend, or `None` (test skipped) when no GPU can be used.
/// With `LBM_REQUIRE_GPU=1` a missing GPU fails the test instead.
pub fn gpu(test: &str) -> Option<BackendKind> {
    match lbm::host::gpu::device_count() {
        Ok(_) => Some(BackendKind::Gpu(0)),
        Err(e) => {
            if std::env::var("LBM_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: LBM_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("SKIPPED {test}: no GPU ({e})");
            None
        }
    }
}

/// Instantiates a test body `fn(BackendKind)` for the CPU and the GPU
/// backend: for cases one layer thick (nothing a split executor could
/// split); the others run on every executor ([`on_executors`]).
#[macro_export]
macro_rules! on_backends {
    ($body:ident) => {
        mod $body {
            #[test]
            fn cpu() {
                super::$body(lbm::BackendKind::Cpu);
            }
            #[test]
            fn gpu() {
                if let Some(b) = super::common::gpu(concat!(stringify!($body), "::gpu")) {
                    super::$body(b);
                }
            }
        }
    };
}

/// Where a conformance test runs: one executor of the step plan.
#[derive(Clone, Copy, Debug)]
pub struct On(pub lbm::ExecutorKind);

impl On {
    /// The backend the executor runs on (what the validation cases report).
    pub fn backend(self) -> BackendKind {
        use lbm::ExecutorKind::*;
        match self.0 {
            Cpu | CpuPartitions(_) => BackendKind::Cpu,
            Gpu(o) | GpuPartitions(o, _) | Nccl(o) => BackendKind::Gpu(o),
        }
    }

    /// A solver for `config` on this executor.
    pub fn build(self, config: lbm::SolverConfig) -> Box<dyn lbm::Solver> {
        lbm::build_on(config, self.0).unwrap()
    }

    /// The factory the validation cases take: every solver on this executor.
    pub fn factory(self) -> impl Fn(lbm::SolverConfig, BackendKind) -> lbm::Result<Box<dyn lbm::Solver>> {
        move |c, _| lbm::build_on(c, self.0)
    }
}

impl From<BackendKind> for On {
    fn from(b: BackendKind) -> Self {
        match b {
            BackendKind::Cpu => On(lbm::ExecutorKind::Cpu),
            BackendKind::Gpu(o) => On(lbm::ExecutorKind::Gpu(o)),
        }
    }
}

/// Whether the NCCL library can be loaded (the one-rank NCCL executor needs it).
pub fn nccl(test: &str) -> bool {
    let present = lbm::host::nccl::library_present();
    if !present {
        if std::env::var("LBM_REQUIRE_GPU").as_deref() == Ok("1") {
            panic!("{test}: LBM_REQUIRE_GPU=1 but the NCCL library is missing");
        }
        eprintln!("SKIPPED {test}: no NCCL library");
    }
    present
}

/// Instantiates a test body `fn(On)` for every executor of the step plan:
/// the CPU, the CPU split into partitions, one GPU, one GPU split into
/// partitions (the multi-GPU path with peer copies on one device), and a
/// one-rank NCCL job (halos through NCCL to itself). A split executor takes
/// as many partitions (up to 3) as the domain has layers for.
#[macro_export]
macro_rules! on_executors {
    ($body:ident) => {
        mod $body {
            use lbm::ExecutorKind::*;
            use $crate::common::On;
            #[test]
            fn cpu() {
                super::$body(On(Cpu));
            }
            #[test]
            fn cpu_partitions() {
                super::$body(On(CpuPartitions(3)));
            }
            #[test]
            fn gpu() {
                if super::common::gpu(concat!(stringify!($body), "::gpu")).is_some() {
                    super::$body(On(Gpu(0)));
                }
            }
            #[test]
            fn gpu_partitions() {
                if super::common::gpu(concat!(stringify!($body), "::gpu_partitions")).is_some() {
                    super::$body(On(GpuPartitions(0, 3)));
                }
            }
            #[test]
            fn nccl() {
                let name = concat!(stringify!($body), "::nccl");
                if super::common::gpu(name).is_some() && super::common::nccl(name) {
                    super::$body(On(Nccl(0)));
                }
            }
        }
    };
}

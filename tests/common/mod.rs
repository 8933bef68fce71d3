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

/// Instantiates a test body `fn(BackendKind)` for the CPU and the GPU backend.
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

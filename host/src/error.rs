//! The host crate's error type: every message says what is wrong and how to fix it.

use std::path::PathBuf;

/// Errors of the host side.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A GPU was asked for but none can be used.
    #[error("no usable GPU: {0}. Run on the CPU with `--backend cpu`, or check the NVIDIA driver with `nvidia-smi`")]
    NoGpu(String),
    /// A CUDA driver call failed.
    #[error("CUDA error while {context}: {source}")]
    Cuda {
        /// What was being done.
        context: String,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// The simulation does not fit the device.
    #[error("the case needs {need_gib:.2} GiB on {device} but only {free_gib:.2} GiB are free: reduce the domain size or use f32 instead of f64")]
    OutOfMemory {
        /// Device name.
        device: String,
        /// Bytes needed, GiB.
        need_gib: f64,
        /// Bytes free, GiB.
        free_gib: f64,
    },
    /// A set-up that cannot run (bad size, unstable parameters...).
    #[error("invalid set-up: {0}")]
    Setup(String),
    /// A case file that cannot be used.
    #[error("{path}: {message}")]
    Case {
        /// The case file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The run diverged.
    #[error("the simulation diverged at step {step} (non-finite value or runaway velocity at cell {cell:?}): lower the velocity, raise the resolution or raise tau")]
    Diverged {
        /// Time step at which it was seen.
        step: u64,
        /// First bad cell.
        cell: (u32, u32, u32),
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches context to a CUDA driver result.
pub(crate) trait CudaContextExt<T> {
    fn ctx(self, context: impl Into<String>) -> Result<T>;
}

impl<T> CudaContextExt<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn ctx(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| Error::Cuda { context: context.into(), source })
    }
}

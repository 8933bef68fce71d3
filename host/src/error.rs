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
    /// Colloids that cannot go on (overlapping, too fast, at a wall).
    #[error("colloids: {0}")]
    Colloid(String),
    /// A name (of a streaming scheme, an exchange, a bench geometry...) that
    /// is not one of the choices.
    #[error("unknown {what} `{name}`: use {choices}")]
    UnknownName {
        /// What the name names.
        what: &'static str,
        /// The name given.
        name: String,
        /// The names that are accepted.
        choices: String,
    },
    /// An STL file that cannot be loaded.
    #[error(transparent)]
    Stl(#[from] crate::stl::StlError),
    /// A shape or grid that cannot be voxelised.
    #[error(transparent)]
    Voxel(#[from] crate::voxel::VoxelError),
    /// A voxel image (raw or `.npy`) that cannot be used.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// A `[[geometry]]` object that cannot be built.
    #[error("geometry `{name}`: {source}")]
    Geometry {
        /// The object's name.
        name: String,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// An NCCL call failed.
    #[error("NCCL error while {context}: {code}; another rank may have failed first: look for its error in the job's output")]
    Nccl {
        /// What was being done.
        context: String,
        /// NCCL's result code.
        code: String,
    },
    /// A case file that cannot be used.
    #[error("{path}: {message}")]
    Case {
        /// The case file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A case file entry refused by the part of the solver that uses it.
    #[error("{path}: {key}: {source}")]
    CaseEntry {
        /// The case file.
        path: PathBuf,
        /// The entry, e.g. `[simulation] streaming`.
        key: &'static str,
        /// Why.
        #[source]
        source: Box<Error>,
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
        /// A bad cell (the first of its block found).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An NCCL failure says what was being done, NCCL's code, and that the
    /// cause may be another rank's failure.
    #[test]
    fn nccl_errors_name_the_call_and_hint_at_other_ranks() {
        use cudarc::nccl::sys::ncclResult_t;
        assert!(crate::nccl::nccl_result(ncclResult_t::ncclSuccess, "sending").is_ok());
        let e = crate::nccl::nccl_result(ncclResult_t::ncclRemoteError, "sending halo planes").unwrap_err();
        assert!(
            matches!(&e, Error::Nccl { context, code } if context == "sending halo planes" && code == "ncclRemoteError")
        );
        let m = e.to_string();
        assert!(
            m.starts_with("NCCL error while sending halo planes: ncclRemoteError") && m.contains("another rank"),
            "{m}"
        );
    }

    /// STL and voxel errors are host errors with their own messages.
    #[test]
    fn stl_and_voxel_errors_keep_their_messages() {
        let e: Error = crate::stl::StlError::EmptyFile { path: "a.stl".into() }.into();
        assert!(e.to_string().starts_with("STL file a.stl is empty"), "{e}");
        let e: Error = crate::voxel::VoxelError::InvalidGrid("dimensions 0".into()).into();
        assert_eq!(e.to_string(), "invalid voxel grid: dimensions 0");
    }
}

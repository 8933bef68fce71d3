//! `lbm`: a lattice Boltzmann solver with GPU kernels written in Rust.
pub mod ptx;
pub use lbm_host as host;

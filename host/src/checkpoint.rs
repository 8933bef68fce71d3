//! Checkpoints: a solver's state on disk, written atomically, with a SHA-256
//! checksum of the populations and a fingerprint of the set-up, so a resume
//! continues bit for bit or refuses with a reason.
//!
//! Layout (little-endian): magic `LBMCKPT\0`, format version (u32), reserved
//! (u32), set-up fingerprint (32 bytes), time step (u64), payload length
//! (u64), payload SHA-256 (32 bytes), payload (the population buffer).

use crate::error::{Error, Result};
use crate::files::write_atomic;
use crate::solver::{SavedState, SolverConfig};
use sha2::{Digest, Sha256};
use std::path::Path;

const MAGIC: &[u8; 8] = b"LBMCKPT\0";
/// Format 3: populations are stored blocked by layer, in storage-slot order
/// (format 2: plain SoA in direction order; format 1: older direction order
/// and flag byte), so older population buffers mean other things.
const VERSION: u32 = 3;
const HEADER: usize = 8 + 4 + 4 + 32 + 8 + 8 + 32;

/// SHA-256 over everything that decides how a state evolves: lattice,
/// storage, scheme, size, tau, force, wall velocities and every cell flag.
pub fn fingerprint(config: &SolverConfig) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(config.lattice.name().as_bytes());
    h.update(config.precision.name().as_bytes());
    h.update([config.streaming as u8]);
    let d = config.domain.dims;
    for v in [d.nx, d.ny, d.nz] {
        h.update(v.to_le_bytes());
    }
    h.update(config.tau.to_le_bytes());
    for f in config.force {
        h.update(f.to_le_bytes());
    }
    for u in &config.domain.wall_velocities {
        for c in u {
            h.update(c.to_le_bytes());
        }
    }
    for g in &config.domain.open {
        let s = g.state;
        h.update([s.kind as u8]);
        for c in [s.density].iter().chain(&s.velocity) {
            h.update(c.to_le_bytes());
        }
        for n in s.normal {
            h.update(n.to_le_bytes());
        }
        for n in &g.cells {
            h.update(n.to_le_bytes());
        }
    }
    h.update(&config.domain.flags);
    h.finalize().into()
}

/// Writes `state` of a solver built from `config` to `path`, atomically.
pub fn write(path: &Path, config: &SolverConfig, state: &SavedState) -> Result<()> {
    let mut bytes = Vec::with_capacity(HEADER + state.populations.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&fingerprint(config));
    bytes.extend_from_slice(&state.time.to_le_bytes());
    bytes.extend_from_slice(&(state.populations.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&Sha256::digest(&state.populations));
    bytes.extend_from_slice(&state.populations);
    write_atomic(path, &bytes)
}

/// Reads a checkpoint for a solver built from `config`, checking that it is
/// complete, uncorrupted and from the same set-up.
pub fn read(path: &Path, config: &SolverConfig) -> Result<SavedState> {
    let bad = |message: String| Error::Case { path: path.into(), message };
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(bad("not an lbm checkpoint (bad header)".into()));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    if u32_at(8) != VERSION {
        return Err(bad(format!(
            "checkpoint format {} is not supported (this lbm writes {VERSION}): resume it with the lbm version that \
             wrote it, or start the case again",
            u32_at(8)
        )));
    }
    if bytes[16..48] != fingerprint(config) {
        return Err(bad(
            "checkpoint was written by a different set-up (lattice, size, viscosity, walls or geometry changed): \
             resume with the case file it was written with, or start without --resume"
                .into(),
        ));
    }
    let time = u64_at(48);
    let len = u64_at(56) as usize;
    let payload = &bytes[HEADER..];
    if payload.len() != len {
        return Err(bad(format!(
            "checkpoint is truncated ({} of {len} bytes): use an older one or restart",
            payload.len()
        )));
    }
    if Sha256::digest(payload)[..] != bytes[64..96] {
        return Err(bad("checkpoint is corrupted (checksum mismatch): use an older one or restart".into()));
    }
    Ok(SavedState { time, populations: payload.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::cavity_config;
    use crate::{LatticeKind, Precision};
    use kernels_gpu::Streaming;

    #[test]
    fn round_trip_and_every_kind_of_damage_is_refused() {
        let config = cavity_config(LatticeKind::D2Q9, Precision::F32, Streaming::EsotericPull, 6, 10.0, 0.05).unwrap();
        let state = SavedState { time: 17, populations: (0..=255u8).cycle().take(9 * 64 * 4).collect() };
        let dir = std::env::temp_dir().join(format!("lbm-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.lbm");
        write(&path, &config, &state).unwrap();
        assert_eq!(read(&path, &config).unwrap(), state);

        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("corrupted"));
        std::fs::write(&path, &good[..good.len() - 10]).unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("truncated"));
        std::fs::write(&path, b"hello").unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("not an lbm checkpoint"));
        std::fs::write(&path, &good).unwrap();
        let other = cavity_config(LatticeKind::D2Q9, Precision::F32, Streaming::EsotericPull, 6, 20.0, 0.05).unwrap();
        assert!(read(&path, &other).unwrap_err().to_string().contains("different set-up"));
        for version in [1u32, 2] {
            let mut old = good.clone();
            old[8..12].copy_from_slice(&version.to_le_bytes());
            std::fs::write(&path, &old).unwrap();
            let err = read(&path, &config).unwrap_err().to_string();
            assert!(
                err.contains(&format!("format {version} is not supported")) && err.contains("start the case"),
                "{err}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

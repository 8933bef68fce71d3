//! Checkpoints: a solver's state on disk, written atomically, partition by
//! partition, with a SHA-256 checksum of each partition's populations and a
//! fingerprint of the set-up, so a resume continues bit for bit or refuses
//! with a reason. A checkpoint written by one partitioning resumes on any
//! other: each partition takes the layers it needs.
//!
//! Layout (little-endian): magic `LBMCKPT\0`, format version (u32), reserved
//! (u32), set-up fingerprint (32 bytes), time step (u64), number of parts
//! (u64); per part its first and end layer (u32 each), its length (u64) and
//! its SHA-256 (32 bytes); then the parts' populations in that order (the
//! whole domain's buffer, as layers are contiguous).

use crate::error::{Error, Result};
use crate::files::write_atomic_pieces;
use crate::solver::{SavedPart, SavedState, SolverConfig};
use sha2::{Digest, Sha256};
use std::path::Path;

const MAGIC: &[u8; 8] = b"LBMCKPT\0";
/// Format 4: one checksum per partition's layers (format 3: one checksum
/// over the blocked-by-layer buffer; format 2: plain SoA in direction order;
/// format 1: older direction order and flag byte).
const VERSION: u32 = 4;
const HEADER: usize = 8 + 4 + 4 + 32 + 8 + 8;
/// Bytes of one part's entry in the table after the header.
const PART: usize = 4 + 4 + 8 + 32;

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
        // Cell numbers as 32 bits where they fit (as before boxes grew past 2^32).
        let wide = config.domain.dims.cells() > u32::MAX as usize;
        for &n in &g.cells {
            match wide {
                false => h.update((n as u32).to_le_bytes()),
                true => h.update((n as u64).to_le_bytes()),
            }
        }
    }
    let d = config.domain.dims;
    let mut row = Vec::with_capacity(d.nx as usize);
    for z in 0..d.nz {
        for y in 0..d.ny {
            row.clear();
            row.extend((0..d.nx).map(|x| config.domain.flags[[x, y, z]]));
            h.update(&row);
        }
    }
    h.finalize().into()
}

/// Writes `state` of a solver built from `config` to `path`, atomically, one
/// partition's populations after the other.
pub fn write(path: &Path, config: &SolverConfig, state: &SavedState) -> Result<()> {
    let mut head = Vec::with_capacity(HEADER + PART * state.parts.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&fingerprint(config));
    head.extend_from_slice(&state.time.to_le_bytes());
    head.extend_from_slice(&(state.parts.len() as u64).to_le_bytes());
    for p in &state.parts {
        head.extend_from_slice(&p.layers.start.to_le_bytes());
        head.extend_from_slice(&p.layers.end.to_le_bytes());
        head.extend_from_slice(&(p.populations.len() as u64).to_le_bytes());
        head.extend_from_slice(&Sha256::digest(&p.populations));
    }
    let pieces: Vec<&[u8]> = std::iter::once(&head[..]).chain(state.parts.iter().map(|p| &p.populations[..])).collect();
    write_atomic_pieces(path, &pieces)
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
    let count = u64_at(56) as usize;
    let table_end = count.checked_mul(PART).and_then(|t| t.checked_add(HEADER)).filter(|&e| e <= bytes.len());
    let Some(mut at) = table_end else {
        return Err(bad(
            "checkpoint is truncated (its table of parts is incomplete): use an older one or restart".into()
        ));
    };
    let mut parts = Vec::with_capacity(count);
    for k in 0..count {
        let entry = HEADER + k * PART;
        let (layers, len) = (u32_at(entry)..u32_at(entry + 4), u64_at(entry + 8) as usize);
        let Some(populations) = at.checked_add(len).and_then(|end| bytes.get(at..end)) else {
            return Err(bad(format!(
                "checkpoint is truncated (part {k} of {count}, layers {layers:?}, is incomplete): use an older one or restart"
            )));
        };
        if Sha256::digest(populations)[..] != bytes[entry + 16..entry + PART] {
            return Err(bad(format!(
                "checkpoint is corrupted (checksum mismatch in layers {layers:?}): use an older one or restart"
            )));
        }
        parts.push(SavedPart { layers, populations: populations.to_vec() });
        at += len;
    }
    if at != bytes.len() {
        return Err(bad("checkpoint has bytes after its last part: it is damaged; use an older one or restart".into()));
    }
    Ok(SavedState { time, parts })
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
        // Two parts (layers 0..1 and 1..1 of a one-layer 2D box: any split is stored as given).
        let bytes: Vec<u8> = (0..=255u8).cycle().take(9 * 64 * 4).collect();
        let state = SavedState {
            time: 17,
            parts: vec![
                SavedPart { layers: 0..1, populations: bytes[..1000].to_vec() },
                SavedPart { layers: 1..1, populations: bytes[1000..].to_vec() },
            ],
        };
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
        std::fs::write(&path, &good[..HEADER + 20]).unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("table of parts"));
        let mut first = good.clone();
        first[HEADER + 2 * PART + 5] ^= 1;
        std::fs::write(&path, &first).unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("layers 0..1"), "names the damaged part");
        std::fs::write(&path, b"hello").unwrap();
        assert!(read(&path, &config).unwrap_err().to_string().contains("not an lbm checkpoint"));
        std::fs::write(&path, &good).unwrap();
        let other = cavity_config(LatticeKind::D2Q9, Precision::F32, Streaming::EsotericPull, 6, 20.0, 0.05).unwrap();
        assert!(read(&path, &other).unwrap_err().to_string().contains("different set-up"));
        for version in [1u32, 2, 3] {
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

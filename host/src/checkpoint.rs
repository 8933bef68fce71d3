//! Checkpoints: a solver's state on disk, written atomically, partition by
//! partition, with a SHA-256 checksum of each partition's populations and a
//! fingerprint of the set-up, so a resume continues bit for bit or refuses
//! with a reason. A checkpoint written by one partitioning resumes on any
//! other: each partition takes the layers it needs.
//!
//! Layout (little-endian): magic `LBMCKPT\0`, format version (u32), reserved
//! (u32), set-up fingerprint (32 bytes), time step (u64), number of parts
//! (u64); per part its first and end layer (u32 each), its payload's length
//! (u64) and SHA-256 (32 bytes), its block edge (3 u32, zeros for dense
//! layers) and its number of blocks (u64); then the parts' payloads in that
//! order: a sparse part's block corners (3 u32 each), then the populations
//! (see [`crate::saved`]).

use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use crate::files::write_atomic_pieces;
use crate::saved::{SavedBlocks, SavedPart, SavedState};
use crate::solver::SolverConfig;
use sha2::{Digest, Sha256};
use std::path::Path;

const MAGIC: &[u8; 8] = b"LBMCKPT\0";
/// Format 5: parts of dense layers or of sparse blocks (format 4: dense
/// layers only, still read; format 3: one checksum over the
/// blocked-by-layer buffer; format 2: plain SoA in direction order; format
/// 1: older direction order and flag byte).
const VERSION: u32 = 5;
const HEADER: usize = 8 + 4 + 4 + 32 + 8 + 8;
/// Bytes of one part's entry in the table after the header.
const PART: usize = 4 + 4 + 8 + 32 + 12 + 8;
/// [`PART`] of format 4.
const PART_4: usize = 4 + 4 + 8 + 32;

/// SHA-256 over everything that decides how a state evolves: lattice,
/// storage, scheme, size, tau, force, wall velocities and every cell flag.
///
/// A box of fewer than 2^32 cells hashes its flags in dense order, row by
/// row (the bytes checkpoints have always hashed); a larger one, which no
/// older checkpoint holds, hashes them block by block, a block of one kind
/// as that kind alone, so that its cost goes with the blocks, not the box.
pub fn fingerprint(config: &SolverConfig) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(config.lattice.name().as_bytes());
    h.update(config.precision.name().as_bytes());
    h.update([config.streaming as u8]);
    let d = config.domain.dims;
    let wide = d.cells() > u32::MAX as usize;
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
        // Ramps and profiles only where present, so older checkpoints still match.
        if s.ramp_steps > 0 {
            h.update(s.ramp_steps.to_le_bytes());
        }
        for c in g.velocities.iter().flatten() {
            h.update(c.to_le_bytes());
        }
        // Cell numbers as 32 bits where they fit (as before boxes grew past 2^32).
        for &n in &g.cells {
            match wide {
                false => h.update((n as u32).to_le_bytes()),
                true => h.update((n as u64).to_le_bytes()),
            }
        }
    }
    // Sponges only where present, so older checkpoints still match.
    for b in &config.domain.sponges {
        for v in [b.density].iter().chain(&b.velocity).chain(&b.strength) {
            h.update(v.to_le_bytes());
        }
        for &n in &b.cells {
            h.update((n as u64).to_le_bytes());
        }
    }
    hash_flags(&mut h, &config.domain.flags, wide);
    h.finalize().into()
}

/// Adds the cell flags to `h`: in dense order, a row at a time, or with
/// `by_blocks` block by block (see [`fingerprint`]).
fn hash_flags(h: &mut Sha256, flags: &CellBlocks<u8>, by_blocks: bool) {
    if by_blocks {
        flags.for_each_block_values(|values| match values {
            [kind] => h.update([0, *kind]),
            cells => {
                h.update([1]);
                h.update(cells);
            }
        });
        return;
    }
    let d = flags.dims();
    let mut row = Vec::with_capacity(d.nx as usize);
    for z in 0..d.nz {
        for y in 0..d.ny {
            row.clear();
            flags.extend_row(y, z, &mut row);
            h.update(&row);
        }
    }
}

/// Writes `state` of a solver built from `config` to `path`, atomically, one
/// partition's share after the other.
pub fn write(path: &Path, config: &SolverConfig, state: &SavedState) -> Result<()> {
    write_for(path, &fingerprint(config), state)
}

/// [`write()`] for the set-up whose fingerprint is `set_up` (a refined
/// domain's: [`crate::levels::Levels::fingerprint`]).
pub fn write_for(path: &Path, set_up: &[u8; 32], state: &SavedState) -> Result<()> {
    let (head, payloads) = encode(set_up, state);
    let pieces: Vec<&[u8]> =
        std::iter::once(&head[..]).chain(payloads.iter().flat_map(|(corners, p)| [&corners[..], &p[..]])).collect();
    write_atomic_pieces(path, &pieces)
}

/// A part's payload: its blocks' corners (none for dense layers) and its populations.
type Payload<'a> = (Vec<u8>, &'a [u8]);

/// The header and table of `state`, and each part's payload: its blocks'
/// corners (none for dense layers) and its populations.
fn encode<'a>(set_up: &[u8; 32], state: &'a SavedState) -> (Vec<u8>, Vec<Payload<'a>>) {
    let mut head = Vec::with_capacity(HEADER + PART * state.parts.len());
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(set_up);
    head.extend_from_slice(&state.time.to_le_bytes());
    head.extend_from_slice(&(state.parts.len() as u64).to_le_bytes());
    let mut payloads = Vec::with_capacity(state.parts.len());
    for p in &state.parts {
        let (edge, corners) = match &p.blocks {
            Some(b) => (b.edge, b.corners.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()),
            None => ([0; 3], Vec::new()),
        };
        let mut sha = Sha256::new();
        sha.update(&corners);
        sha.update(&p.populations);
        head.extend_from_slice(&p.layers.start.to_le_bytes());
        head.extend_from_slice(&p.layers.end.to_le_bytes());
        head.extend_from_slice(&((corners.len() + p.populations.len()) as u64).to_le_bytes());
        head.extend_from_slice(&sha.finalize());
        edge.iter().for_each(|e| head.extend_from_slice(&e.to_le_bytes()));
        head.extend_from_slice(&(corners.len() as u64 / 12).to_le_bytes());
        payloads.push((corners, &p.populations[..]));
    }
    (head, payloads)
}

/// `state` as one run of bytes that [`decode`] reads for the same `config`
/// (to send a state to another process).
pub fn to_bytes(config: &SolverConfig, state: &SavedState) -> Vec<u8> {
    let (mut out, payloads) = encode(&fingerprint(config), state);
    for (corners, p) in payloads {
        out.extend_from_slice(&corners);
        out.extend_from_slice(p);
    }
    out
}

/// Reads a checkpoint for a solver built from `config`, checking that it is
/// complete, uncorrupted and from the same set-up.
pub fn read(path: &Path, config: &SolverConfig) -> Result<SavedState> {
    read_for(path, &fingerprint(config))
}

/// [`read`] for the set-up whose fingerprint is `set_up` (see [`write_for`]).
pub fn read_for(path: &Path, set_up: &[u8; 32]) -> Result<SavedState> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io { path: path.into(), source })?;
    decode_for(&bytes, set_up).map_err(|message| Error::Case { path: path.into(), message })
}

/// The state in `bytes` (a checkpoint file's), checked as [`read`] does;
/// the error says what is wrong.
pub fn decode(bytes: &[u8], config: &SolverConfig) -> std::result::Result<SavedState, String> {
    decode_for(bytes, &fingerprint(config))
}

fn decode_for(bytes: &[u8], set_up: &[u8; 32]) -> std::result::Result<SavedState, String> {
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err("not an lbm checkpoint (bad header)".into());
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    // Format 4 is format 5 with dense layers only, and shorter table entries.
    let part_bytes = match u32_at(8) {
        VERSION => PART,
        4 => PART_4,
        v => {
            return Err(format!(
                "checkpoint format {v} is not supported (this lbm writes {VERSION}): resume it with the lbm version \
                 that wrote it, or start the case again"
            ))
        }
    };
    if bytes[16..48] != set_up[..] {
        return Err("checkpoint was written by a different set-up (lattice, size, viscosity, walls, geometry or \
                    refinement changed): resume with the case file it was written with, or start without --resume"
            .into());
    }
    let time = u64_at(48);
    let count = u64_at(56) as usize;
    let table_end = count.checked_mul(part_bytes).and_then(|t| t.checked_add(HEADER)).filter(|&e| e <= bytes.len());
    let Some(mut at) = table_end else {
        return Err("checkpoint is truncated (its table of parts is incomplete): use an older one or restart".into());
    };
    let mut parts = Vec::with_capacity(count);
    for k in 0..count {
        let entry = HEADER + k * part_bytes;
        let (layers, len) = (u32_at(entry)..u32_at(entry + 4), u64_at(entry + 8) as usize);
        let Some(payload) = at.checked_add(len).and_then(|end| bytes.get(at..end)) else {
            return Err(format!(
                "checkpoint is truncated (part {k} of {count}, layers {layers:?}, is incomplete): use an older one or restart"
            ));
        };
        if Sha256::digest(payload)[..] != bytes[entry + 16..entry + 48] {
            return Err(format!(
                "checkpoint is corrupted (checksum mismatch in layers {layers:?}): use an older one or restart"
            ));
        }
        let (blocks, populations) = match part_bytes {
            PART if u32_at(entry + 48) != 0 => {
                let edge = [0, 1, 2].map(|a| u32_at(entry + 48 + 4 * a));
                let n = u64_at(entry + 60) as usize;
                let Some((corners, populations)) = n.checked_mul(12).and_then(|c| payload.split_at_checked(c)) else {
                    return Err(format!(
                        "checkpoint part {k} (layers {layers:?}) is damaged: use an older one or restart"
                    ));
                };
                let corners = corners.chunks_exact(12).map(|c| [0, 4, 8].map(|o| u32_at_in(c, o))).collect();
                (Some(SavedBlocks { edge, corners }), populations)
            }
            _ => (None, payload),
        };
        parts.push(SavedPart { layers, blocks, populations: populations.to_vec() });
        at += len;
    }
    if at != bytes.len() {
        return Err("checkpoint has bytes after its last part: it is damaged; use an older one or restart".into());
    }
    Ok(SavedState { time, parts })
}

fn u32_at_in(bytes: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap())
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
                SavedPart { layers: 0..1, blocks: None, populations: bytes[..1000].to_vec() },
                SavedPart { layers: 1..1, blocks: None, populations: bytes[1000..].to_vec() },
            ],
        };
        // Sparse parts keep their blocks.
        let blocks = SavedBlocks { edge: [4, 4, 1], corners: vec![[0, 0, 0], [4, 0, 0]] };
        let sparse = SavedState {
            time: 18,
            parts: vec![SavedPart {
                layers: 0..1,
                blocks: Some(blocks),
                populations: bytes[..2 * 9 * 16 * 4].to_vec(),
            }],
        };
        let dir = std::env::temp_dir().join(format!("lbm-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.lbm");
        write(&path, &config, &sparse).unwrap();
        assert_eq!(read(&path, &config).unwrap(), sparse);
        assert_eq!(decode(&to_bytes(&config, &sparse), &config).unwrap(), sparse);
        write(&path, &config, &state).unwrap();
        assert_eq!(read(&path, &config).unwrap(), state);
        // Format 4 (dense parts, shorter table entries) still reads.
        let mut v4 = std::fs::read(&path).unwrap();
        v4[8..12].copy_from_slice(&4u32.to_le_bytes());
        for k in (0..2).rev() {
            let entry = HEADER + k * PART;
            v4.drain(entry + PART_4..entry + PART);
        }
        std::fs::write(&path, &v4).unwrap();
        assert_eq!(read(&path, &config).unwrap(), state);
        write(&path, &config, &state).unwrap();

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
        for version in [1u32, 2, 3, 6] {
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

    /// A box of fewer than 2^32 cells hashes its flags as its dense array
    /// (the bytes older checkpoints were fingerprinted with), without making
    /// that array; a larger one hashes its blocks, the same however they are
    /// stored, and still sees a change of one flag.
    #[test]
    fn flags_are_hashed_in_dense_order_or_by_blocks() {
        let hash = |flags: &CellBlocks<u8>, by_blocks: bool| {
            let mut h = Sha256::new();
            hash_flags(&mut h, flags, by_blocks);
            h.finalize()
        };
        // Not whole blocks along any axis, a mixed block and a uniform one.
        let dims = kernels_gpu::Dims::new(37, 21, 18);
        let mut flags = CellBlocks::new(dims, 1u8);
        flags.fill([0, 0, 0], [37, 21, 1], 2);
        flags.set([20, 3, 17], 0);
        assert_eq!(hash(&flags, false), Sha256::digest(flags.to_dense()));
        assert_ne!(hash(&flags, true), hash(&flags, false));

        let mut as_cells = flags.clone();
        as_cells.set([36, 20, 17], 0); // the far corner's block becomes mixed...
        assert_ne!(hash(&as_cells, true), hash(&flags, true));
        as_cells.set([36, 20, 17], 1); // ...and back to one kind, still stored cell by cell
        assert_eq!(hash(&as_cells, true), hash(&flags, true));
        assert_eq!(hash(&CellBlocks::from_dense(dims, &flags.to_dense()), true), hash(&flags, true));
        let mut moved = flags.clone();
        moved.set([20, 3, 17], 1);
        moved.set([21, 3, 17], 0);
        assert_ne!(hash(&moved, true), hash(&flags, true));
    }
}

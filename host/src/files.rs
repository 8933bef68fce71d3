//! Writing files so that a crash or Ctrl-C never leaves half a file behind.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// flushed to disk, then renamed over `path` (atomic on POSIX file systems).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_pieces(path, &[bytes])
}

/// As [`write_atomic`], for a file made of `pieces` written one after the
/// other (no copy of the whole file in memory).
pub fn write_atomic_pieces(path: &Path, pieces: &[&[u8]]) -> Result<()> {
    let io = |source| Error::Io { path: path.into(), source };
    let mut tmp_name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io)?);
    for piece in pieces {
        f.write_all(piece).map_err(io)?;
    }
    let f = f.into_inner().map_err(|e| io(e.into_error()))?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io)
}

//! What `lbm run` writes of a refined domain: one VTK file per level under
//! a `.vtm` collection, picture slices and probes sampled on the finest
//! level owning each point, and the health and steadiness checks over all
//! levels.

use super::{LevelFields, Levels};
use crate::error::Result;
use crate::fields::Fields;
use crate::files::write_atomic;
use crate::picture::{Quantity, Slice};
use crate::vtk::{LevelView, View};
use kernels_gpu::flags::{is_flow, is_open, COALESCED, LEVEL_MASK, REFINED};
use std::path::{Path, PathBuf};

/// Whether a cell of flag `flag` (as a level's domain holds it) is one its
/// level owns: fluid, open, or next to the finer level.
pub fn owns(flag: u8) -> bool {
    is_flow(flag) && (flag & LEVEL_MASK == 0 || flag == COALESCED || is_open(flag))
}

/// Fills the cells each level stores but does not own, so that differences
/// across a level's edge (vorticity) see the flow: cells a finer level
/// covers take the mean of their finer cells, ghost cells their parent's
/// value (coarsest to finest).
pub fn fill_unowned(levels: &Levels, fields: &mut LevelFields) {
    let children = levels.children;
    let flat = children == 4;
    let cells_of = |l: usize| {
        let level = &levels.levels[l];
        (0..level.layout.cells() as u32).filter_map(move |n| level.layout.cell_position(n))
    };
    for l in (0..levels.len().saturating_sub(1)).rev() {
        let (coarse, fine) = fields.split_at_mut(l + 1);
        let (coarse, fine) = (&mut coarse[l], &fine[0]);
        for p in cells_of(l).filter(|&p| levels.levels[l].domain.flags[p] == REFINED) {
            let mut sum = [0.0; 4];
            for k in 0..children as u32 {
                let q = [2 * p[0] + (k & 1), 2 * p[1] + (k >> 1 & 1), if flat { 0 } else { 2 * p[2] + (k >> 2) }];
                let (rho, u) = (fine.rho[q], fine.u[q]);
                for (s, v) in sum.iter_mut().zip([rho, u[0], u[1], u[2]]) {
                    *s += v / children as f64;
                }
            }
            coarse.set(p, sum);
        }
    }
    for l in 1..levels.len() {
        let (coarse, fine) = fields.split_at_mut(l);
        let (coarse, fine) = (&coarse[l - 1], &mut fine[0]);
        let flags = &levels.levels[l].domain.flags;
        for p in cells_of(l).filter(|&p| is_flow(flags[p]) && !owns(flags[p])) {
            let q = [p[0] / 2, p[1] / 2, if flat { 0 } else { p[2] / 2 }];
            let u = coarse.u[q];
            fine.set(p, [coarse.rho[q], u[0], u[1], u[2]]);
        }
    }
}

/// The level owning the level-0 point `x` (cell `i` at `i`) and its cell
/// there: down from level 0 through cells a finer level covers. `None` in
/// a solid.
pub fn owner(levels: &Levels, x: [f64; 3]) -> Option<(usize, [u32; 3])> {
    for (l, level) in levels.levels.iter().enumerate() {
        let d = level.domain.dims;
        let n = [d.nx, d.ny, d.nz];
        let s = (1u64 << l) as f64;
        let p: [u32; 3] = std::array::from_fn(|a| (((x[a] + 0.5) * s).floor().max(0.0) as u32).min(n[a] - 1));
        let flag = level.domain.flags[p];
        if owns(flag) {
            return Some((l, p));
        }
        if flag != REFINED {
            return None;
        }
    }
    None
}

/// The velocity at level-0 point `x`, interpolated trilinearly on the
/// finest level whose own cells hold the whole stencil there (level 0's
/// cells otherwise, as a uniform grid samples).
pub fn velocity_at(levels: &Levels, fields: &LevelFields, x: [f64; 3]) -> [f64; 3] {
    let flat = levels.children == 4;
    for (l, level) in levels.levels.iter().enumerate().rev() {
        let d = level.domain.dims;
        let n = [d.nx, d.ny, d.nz];
        let s = (1u64 << l) as f64;
        let at: [f64; 3] = std::array::from_fn(|a| if flat && a == 2 { 0.0 } else { (x[a] + 0.5) * s - 0.5 });
        if (0..3).any(|a| at[a] < 0.0 || at[a] > (n[a] - 1) as f64) {
            continue;
        }
        let base: [u32; 3] = std::array::from_fn(|a| at[a].floor() as u32);
        let stencil_owned = (0..8u32).all(|k| {
            let q: [u32; 3] = std::array::from_fn(|a| (base[a] + (k >> a & 1)).min(n[a] - 1));
            owns(level.domain.flags[q])
        });
        if stencil_owned || l == 0 {
            return fields[l].velocity_at(at);
        }
    }
    [0.0; 3]
}

/// The picture slice `slice` (its index in level-0 cells) sampled at the
/// finest level's spacing: its width and height in pixels and each pixel's
/// value (`None` in solids), from the level owning the pixel's centre.
/// Vorticity is taken on that level and given in level-0 units.
pub fn slice_values(
    levels: &Levels,
    fields: &LevelFields,
    quantity: Quantity,
    slice: Slice,
) -> (u32, u32, Vec<Option<f64>>) {
    let base = levels.levels[0].domain.dims;
    let n = [base.nx, base.ny, base.nz];
    let (a, b) = match slice.normal {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    // The finest level, but no more than 2^24 pixels.
    let mut fine = levels.len() - 1;
    while fine > 0 && (n[a] as u64 * n[b] as u64) << (2 * fine) > 1 << 24 {
        fine -= 1;
    }
    let s = 1u32 << fine;
    let (w, h) = (n[a] * s, if n[b] == 1 { 1 } else { n[b] * s });
    let values = (0..h)
        .flat_map(|j| (0..w).map(move |i| (i, j)))
        .map(|(i, j)| {
            let mut x = [0.0; 3];
            x[slice.normal] = slice.index as f64;
            x[a] = (i as f64 + 0.5) / s as f64 - 0.5;
            x[b] = if n[b] == 1 { 0.0 } else { (j as f64 + 0.5) / s as f64 - 0.5 };
            let (l, p) = owner(levels, x)?;
            let flags = &levels.levels[l].domain.flags;
            Some(match quantity {
                Quantity::Velocity => crate::fields::speed(fields[l].u[p]),
                Quantity::Vorticity => fields[l].vorticity_at(flags, p) * (1u64 << l) as f64,
            })
        })
        .collect();
    (w, h, values)
}

/// The first unhealthy cell of any level ([`Fields::first_unhealthy`]), in
/// level-0 cells.
pub fn first_unhealthy(fields: &LevelFields, limit: f64) -> Option<[u32; 3]> {
    fields.iter().enumerate().find_map(|(l, f)| f.first_unhealthy(limit).map(|p| p.map(|v| v >> l)))
}

/// The largest speed on any level.
pub fn max_speed(fields: &LevelFields) -> f64 {
    fields.iter().map(Fields::max_speed).fold(0.0, f64::max)
}

/// The largest change of a velocity component on any level since `before`.
pub fn max_change(fields: &LevelFields, before: &LevelFields) -> f64 {
    fields.iter().zip(before).map(|(f, b)| f.max_change(&b.u)).fold(0.0, f64::max)
}

/// Writes each level's own cells to `stem/level<l>.vtu` and the collection
/// `stem.vtm` that ParaView opens as one dataset (one block per level),
/// atomically; returns the `.vtm`'s path.
pub fn write_vtm(stem: &Path, levels: &Levels, fields: &LevelFields, title: &str, view: &View) -> Result<PathBuf> {
    let dir = stem.with_extension("");
    std::fs::create_dir_all(&dir).map_err(|source| crate::error::Error::Io { path: dir.clone(), source })?;
    let folder = dir.file_name().and_then(|s| s.to_str()).unwrap_or("levels").to_string();
    let mut blocks = String::new();
    for (l, level) in levels.levels.iter().enumerate() {
        let file = format!("level{l}.vtu");
        let flags = &level.domain.flags;
        let keep = |p: [u32; 3]| owns(flags[p]);
        let at = LevelView { level: l as u32, keep: &keep };
        let title = format!("{title}, level {l}");
        crate::vtk::write_level_fields(&dir.join(&file), &fields[l], flags, &level.layout, &title, view, &at)?;
        blocks.push_str(&format!("<DataSet index=\"{l}\" name=\"level {l}\" file=\"{folder}/{file}\"/>\n"));
    }
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"vtkMultiBlockDataSet\" version=\"1.0\" byte_order=\"LittleEndian\">\n<vtkMultiBlockDataSet>\n{blocks}</vtkMultiBlockDataSet>\n</VTKFile>\n"
    );
    let path = stem.with_extension("vtm");
    write_atomic(&path, xml.as_bytes())?;
    Ok(path)
}

//! PNG pictures of a slice through the fields, with a colour bar, so a user
//! sees the flow while it runs without opening ParaView.

use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use crate::fields::{speed, Fields};
use crate::files::write_atomic;
use image::{Rgb, RgbImage};
use std::path::Path;

/// What a picture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    /// |u|, lattice units.
    Velocity,
    /// |curl u|, lattice units.
    Vorticity,
}

/// A slice: the axis normal to it (0, 1, 2) and the cell index along that axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Normal axis.
    pub normal: usize,
    /// Cell index along the normal.
    pub index: u32,
}

/// Viridis at nine evenly spaced stops (perceptually uniform, colour-blind safe).
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

/// Colour of `t` in [0, 1].
pub fn colour(t: f64) -> Rgb<u8> {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 } * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + f * (b as f64 - a as f64)).round() as u8;
    Rgb([0, 1, 2].map(|k| mix(VIRIDIS[i][k], VIRIDIS[i + 1][k])))
}

const SOLID: Rgb<u8> = Rgb([128, 128, 128]);
const BACKGROUND: Rgb<u8> = Rgb([255, 255, 255]);
const INK: Rgb<u8> = Rgb([0, 0, 0]);

/// Renders `quantity` on `slice` and writes a PNG (atomically). Solid cells
/// are grey; the colour bar on the right is labelled with the range.
pub fn write_slice(
    path: &Path,
    fields: &Fields,
    flags: &CellBlocks<u8>,
    quantity: Quantity,
    slice: Slice,
) -> Result<()> {
    let d = fields.dims;
    let n = [d.nx, d.ny, d.nz];
    if slice.normal > 2 || slice.index >= n[slice.normal] {
        return Err(Error::Setup(format!(
            "picture slice {} along axis {} is outside the domain",
            slice.index, slice.normal
        )));
    }
    // In-plane axes: the two others, in order (x-y for a z slice, x-z for y, y-z for x).
    let (a, b) = match slice.normal {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let (w, h) = (n[a], n[b]);
    // The slice's values, `None` in solid cells.
    let values: Vec<Option<f64>> = (0..h)
        .flat_map(|j| (0..w).map(move |i| (i, j)))
        .map(|(i, j)| {
            let mut p = [0u32; 3];
            p[slice.normal] = slice.index;
            p[a] = i;
            p[b] = j;
            kernels_gpu::flags::is_flow(flags[p]).then(|| match quantity {
                Quantity::Velocity => speed(fields.u[p]),
                Quantity::Vorticity => fields.vorticity_at(flags, p),
            })
        })
        .collect();
    write_values(path, w, h, &values)
}

/// Renders `values` (`w` by `h`, rows from the bottom up, `None` in solid
/// cells, grey) with a colour bar labelled with their range, and writes a
/// PNG (atomically).
pub fn write_values(path: &Path, w: u32, h: u32, values: &[Option<f64>]) -> Result<()> {
    let max = values.iter().flatten().filter(|v| v.is_finite()).fold(0.0f64, |m, &v| m.max(v));
    write_range(path, w, h, values, 0.0, max)
}

/// [`write_values`] with the colour bar spanning `min ..= max` (values
/// outside take the end colours).
pub fn write_range(path: &Path, w: u32, h: u32, values: &[Option<f64>], min: f64, max: f64) -> Result<()> {
    let span = max - min;
    // Scale small grids up so the picture is at least ~1024 pixels across.
    let scale = (1024 / w.max(h)).clamp(1, 16);
    let bar_w = 90;
    let (img_w, img_h) = (w * scale + bar_w, (h * scale).max(120));
    let mut img = RgbImage::from_pixel(img_w, img_h, BACKGROUND);
    for j in 0..h {
        for i in 0..w {
            let px = match values[(i + w * j) as usize] {
                Some(v) => colour(if span > 0.0 { (v - min) / span } else { 0.0 }),
                None => SOLID,
            };
            for dy in 0..scale {
                for dx in 0..scale {
                    // Image rows go down; the second in-plane axis goes up.
                    img.put_pixel(i * scale + dx, (h - 1 - j) * scale + dy, px);
                }
            }
        }
    }
    // Colour bar with its range.
    let (x0, top, bottom) = (w * scale + 12, 14, img_h - 14);
    for y in top..bottom {
        let t = (bottom - 1 - y) as f64 / (bottom - top - 1).max(1) as f64;
        for x in x0..x0 + 16 {
            img.put_pixel(x, y, colour(t));
        }
    }
    draw_text(&mut img, x0 + 20, top, &format!("{max:.2e}"));
    draw_text(&mut img, x0 + 20, bottom - 7, &if min == 0.0 { "0".to_string() } else { format!("{min:.2e}") });
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| Error::Setup(format!("cannot encode PNG {}: {e}", path.display())))?;
    write_atomic(path, &png)
}

/// 3x5 pixel glyphs for the characters numbers need, one row per u8 (3 bits).
fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        '-' => [0, 0, 7, 0, 0],
        '+' => [0, 2, 7, 2, 0],
        'e' => [0, 7, 7, 4, 7],
        _ => [0; 5],
    }
}

/// Draws `text` at (x, y), each glyph pixel as a 2x2 block.
fn draw_text(img: &mut RgbImage, x: u32, y: u32, text: &str) {
    for (k, ch) in text.chars().enumerate() {
        for (row, bits) in glyph(ch).iter().enumerate() {
            for col in 0..3 {
                if bits >> (2 - col) & 1 == 1 {
                    for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                        let (px, py) = (x + k as u32 * 8 + col * 2 + dx, y + row as u32 * 2 + dy);
                        if px < img.width() && py < img.height() {
                            img.put_pixel(px, py, INK);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::Dims;

    #[test]
    fn writes_a_png_with_solids_grey_and_the_fastest_cell_yellow() {
        let dims = Dims::new(20, 10, 1);
        let mut u = vec![[0.0; 3]; dims.cells()];
        u[dims.index(5, 5, 0)] = [0.1, 0.0, 0.0];
        let mut flags = CellBlocks::new(dims, 0u8);
        flags.set([0, 0, 0], kernels_gpu::flags::WALL);
        let f = Fields::from_dense(dims, &vec![1.0; dims.cells()], &u);
        let dir = std::env::temp_dir().join(format!("lbm-png-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.png");
        write_slice(&path, &f, &flags, Quantity::Velocity, Slice { normal: 2, index: 0 }).unwrap();
        let img = image::open(&path).unwrap().to_rgb8();
        let scale = (1024 / 20u32).clamp(1, 16);
        assert_eq!(img.width(), 20 * scale + 90);
        assert_eq!(*img.get_pixel(0, (10 * scale) - 1), SOLID, "cell (0,0) is at the bottom left");
        assert_eq!(*img.get_pixel(5 * scale, (10 - 1 - 5) * scale), Rgb(VIRIDIS[8]));
        assert_eq!(*img.get_pixel(3 * scale, (10 - 1 - 5) * scale), Rgb(VIRIDIS[0]));
        assert!(write_slice(&path, &f, &flags, Quantity::Velocity, Slice { normal: 2, index: 1 }).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}

//! Pictures the subcommands write: an RGB canvas with lines, boxes and text (a 5x7
//! bitmap font of our own, upper case, digits and the punctuation legends need), a
//! key strip below the picture (legend and scale bar), written as PNG.

use std::path::Path;

use crate::output::io_error;

pub type Rgb = [u8; 3];

pub const WHITE: Rgb = [255, 255, 255];
pub const BLACK: Rgb = [0, 0, 0];

/// An RGB image, row-major, top row first.
pub struct Canvas {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Canvas {
    pub fn new(width: u32, height: u32, background: Rgb) -> Self {
        let mut pixels = Vec::with_capacity((width * height * 3) as usize);
        for _ in 0..width * height {
            pixels.extend_from_slice(&background);
        }
        Self {
            width,
            height,
            pixels,
        }
    }

    /// The same picture with each pixel drawn as a `k` x `k` block.
    pub fn upscaled(&self, k: u32) -> Canvas {
        let k = k.max(1);
        let mut out = Canvas::new(self.width * k, self.height * k, BLACK);
        for y in 0..out.height {
            for x in 0..out.width {
                let c = self.get(x / k, y / k);
                out.put(x as i64, y as i64, c);
            }
        }
        out
    }

    /// Sets one pixel; outside the image does nothing.
    pub fn put(&mut self, x: i64, y: i64, c: Rgb) {
        if x >= 0 && y >= 0 && (x as u32) < self.width && (y as u32) < self.height {
            let i = ((y as u32 * self.width + x as u32) * 3) as usize;
            self.pixels[i..i + 3].copy_from_slice(&c);
        }
    }

    pub fn get(&self, x: u32, y: u32) -> Rgb {
        let i = ((y * self.width + x) * 3) as usize;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    /// A filled rectangle, corners inclusive of `x0, y0` and exclusive of `x1, y1`.
    pub fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        for y in y0.max(0)..y1.min(self.height as i64) {
            for x in x0.max(0)..x1.min(self.width as i64) {
                self.put(x, y, c);
            }
        }
    }

    /// A rectangle outline one pixel wide.
    pub fn frame(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        self.line(x0 as f32, y0 as f32, (x1 - 1) as f32, y0 as f32, c);
        self.line(
            x0 as f32,
            (y1 - 1) as f32,
            (x1 - 1) as f32,
            (y1 - 1) as f32,
            c,
        );
        self.line(x0 as f32, y0 as f32, x0 as f32, (y1 - 1) as f32, c);
        self.line(
            (x1 - 1) as f32,
            y0 as f32,
            (x1 - 1) as f32,
            (y1 - 1) as f32,
            c,
        );
    }

    /// A line one pixel wide (sampled at every pixel step along its longer axis).
    pub fn line(&mut self, x0: f32, y0: f32, x1: f32, y1: f32, c: Rgb) {
        if !(x0.is_finite() && y0.is_finite() && x1.is_finite() && y1.is_finite()) {
            return;
        }
        let steps = (x1 - x0).abs().max((y1 - y0).abs()).ceil().min(1e5) as i64;
        for s in 0..=steps.max(1) {
            let t = s as f32 / steps.max(1) as f32;
            self.put(
                (x0 + (x1 - x0) * t).round() as i64,
                (y0 + (y1 - y0) * t).round() as i64,
                c,
            );
        }
    }

    /// Text at `(x, y)` (top left), `scale` pixels per font pixel; returns the width.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, c: Rgb) -> i64 {
        let mut cx = x;
        for ch in text.chars() {
            let rows = glyph(ch);
            for (ry, row) in rows.iter().enumerate() {
                for rx in 0..5 {
                    if row & (0x10 >> rx) != 0 {
                        self.fill(
                            cx + rx * scale,
                            y + ry as i64 * scale,
                            cx + (rx + 1) * scale,
                            y + (ry as i64 + 1) * scale,
                            c,
                        );
                    }
                }
            }
            cx += 6 * scale;
        }
        cx - x
    }

    /// The picture with a key strip added below it, so nothing drawn is covered: a
    /// title, one swatch and label per entry (in as many columns as fit), and a
    /// scale bar `units` long at `pixels_per_unit`, labelled.
    pub fn with_key(
        &self,
        title: &str,
        entries: &[(Rgb, &str)],
        pixels_per_unit: f32,
        units: f32,
        scale_label: &str,
    ) -> Canvas {
        let s = if self.width >= 600 { 2 } else { 1 };
        let line = 11 * s;
        let label_w = entries
            .iter()
            .map(|(_, l)| l.chars().count())
            .max()
            .unwrap_or(0) as i64
            * 6
            * s;
        let col_w = label_w + 24 * s;
        let columns = ((self.width as i64 - 8 * s) / col_w).max(1);
        let rows = entries.len().div_ceil(columns as usize) as i64;
        let strip = 8 * s + line * (rows + 1) + 22 * s;
        let mut out = Canvas::new(self.width, self.height + strip as u32, [20, 20, 24]);
        out.pixels[..self.pixels.len()].copy_from_slice(&self.pixels);
        let top = self.height as i64;
        out.fill(0, top, self.width as i64, top + s, [200, 200, 200]);
        out.text(6 * s, top + 5 * s, title, s, WHITE);
        for (i, (c, label)) in entries.iter().enumerate() {
            let (col, row) = (i as i64 % columns, i as i64 / columns);
            let x = 6 * s + col * col_w;
            let y = top + 5 * s + line * (row + 1);
            out.fill(x, y, x + 8 * s, y + 7 * s, *c);
            out.frame(x, y, x + 8 * s, y + 7 * s, [140, 140, 140]);
            out.fill(x + 2 * s, y + 2 * s, x + 6 * s, y + 5 * s, *c);
            out.text(x + 12 * s, y, label, s, WHITE);
        }
        let len = (units * pixels_per_unit).round() as i64;
        let (x0, y) = (6 * s, out.height as i64 - 8 * s);
        out.fill(x0, y, x0 + len, y + 2 * s, WHITE);
        out.fill(x0, y - 4 * s, x0 + s, y + 2 * s, WHITE);
        out.fill(x0 + len - s, y - 4 * s, x0 + len, y + 2 * s, WHITE);
        out.text(x0 + len + 6 * s, y - 5 * s, scale_label, s, WHITE);
        out
    }

    /// Writes the picture as an 8-bit RGB PNG; errors name the path.
    pub fn write_png(&self, path: &Path) -> Result<(), String> {
        let file = std::fs::File::create(path).map_err(|e| io_error(path, &e))?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc
            .write_header()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        w.write_image_data(&self.pixels)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        w.finish().map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// A round length for a scale bar about a fifth of `world` units.
pub fn nice_length(world: f32) -> f32 {
    let target = (world / 5.0).max(1e-3);
    let p = 10f32.powf(target.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .rfind(|&l| l <= target)
        .unwrap_or(p)
}

/// Rows of a 5x7 glyph, bit 4 the leftmost pixel. Lower case draws as upper case;
/// a character without a glyph draws as a box.
fn glyph(c: char) -> [u8; 7] {
    let rows: &[u8; 7] = match c.to_ascii_uppercase() {
        ' ' => &[0, 0, 0, 0, 0, 0, 0],
        'A' => &[0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => &[0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => &[0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => &[0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E],
        'E' => &[0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => &[0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => &[0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => &[0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => &[0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => &[0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => &[0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => &[0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => &[0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => &[0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => &[0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => &[0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => &[0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => &[0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => &[0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => &[0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => &[0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => &[0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => &[0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => &[0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => &[0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04],
        'Z' => &[0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        '0' => &[0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => &[0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => &[0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => &[0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => &[0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => &[0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => &[0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => &[0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => &[0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => &[0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        '.' => &[0, 0, 0, 0, 0, 0x0C, 0x0C],
        ',' => &[0, 0, 0, 0, 0x0C, 0x04, 0x08],
        ':' => &[0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0],
        '-' => &[0, 0, 0, 0x1F, 0, 0, 0],
        '+' => &[0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0],
        '/' => &[0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10],
        '(' => &[0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => &[0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '=' => &[0, 0, 0x1F, 0, 0x1F, 0, 0],
        '%' => &[0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        '<' => &[0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02],
        '>' => &[0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08],
        '*' => &[0, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0],
        _ => &[0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F],
    };
    *rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_draws_glyph_pixels_and_the_key_goes_below_the_picture() {
        let mut c = Canvas::new(200, 100, BLACK);
        let w = c.text(10, 10, "LOD0", 1, WHITE);
        assert_eq!(w, 24);
        // 'L' has its vertical stroke in the first column, rows 0..7.
        assert_eq!(c.get(10, 10), WHITE);
        assert_eq!(c.get(10, 16), WHITE);
        assert_eq!(c.get(11, 10), BLACK);
        let c = Canvas::new(200, 100, BLACK).with_key(
            "KEY",
            &[([255, 0, 0], "RED")],
            1.0,
            50.0,
            "50 M",
        );
        assert!(c.height > 100, "the key is a strip below the picture");
        assert_eq!(c.get(0, 50), BLACK, "the picture is untouched");
        // The first swatch's centre, below the title.
        assert_eq!(c.get(10, 100 + 5 + 11 + 3), [255, 0, 0]);
        assert_eq!(nice_length(3072.0), 500.0);
        assert_eq!(nice_length(100.0), 20.0);
    }
}

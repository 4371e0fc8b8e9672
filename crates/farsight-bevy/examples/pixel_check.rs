//! Checks an example's `--screenshot` PNG: not blank, and each expected tint covers
//! at least its share of the pixels. `.ci/run` uses it; exit status 1 on failure.
//!
//! `cargo run -p farsight-bevy --example pixel_check -- shot.png --expect green:0.02`
//!
//! `--compare REF.png --max-mean-diff D` compares the picture with another of the
//! same size: per channel (R, G, B), the mean absolute difference in 0-255 steps over
//! the pixels where either picture is not its background (its top-left pixel's
//! colour), which must be at most `D` in every channel. `--montage OUT A.png B.png
//! ...` writes the pictures side by side into `OUT` (for the README) and checks
//! nothing.
//!
//! Tints are classified by hue, since lighting scales their brightness: `green`,
//! `yellow`, `red`, `blue`, `brown` (dark orange, the terrain's soil) and `grey`.

use std::process::ExitCode;

fn classify([r, g, b]: [f32; 3]) -> Option<&'static str> {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max < 0.06 {
        return None;
    }
    let sat = (max - min) / max;
    if sat < 0.2 {
        return Some("grey");
    }
    let h = if max == r {
        60.0 * ((g - b) / (max - min)).rem_euclid(6.0)
    } else if max == g {
        60.0 * ((b - r) / (max - min) + 2.0)
    } else {
        60.0 * ((r - g) / (max - min) + 4.0)
    };
    if sat < 0.45 {
        // The terrain's grass under the sun: a light, soft green.
        return (sat >= 0.2 && (70.0..160.0).contains(&h) && max > 0.6).then_some("pale-green");
    }
    Some(match h {
        h if !(15.0..345.0).contains(&h) => "red",
        h if h < 40.0 => "brown",
        h if h < 70.0 => "yellow",
        h if h < 160.0 => "green",
        h if (190.0..260.0).contains(&h) => "blue",
        _ => return None,
    })
}

/// An 8-bit RGBA PNG: width, height, pixels.
fn read_png(path: &str) -> Result<(u32, u32, Vec<u8>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .map_err(|e| format!("{path} is not a PNG: {e}"))?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("{path}: {e}"))?;
    if info.color_type != png::ColorType::Rgba || info.bit_depth != png::BitDepth::Eight {
        return Err(format!("{path}: expected 8-bit RGBA"));
    }
    buf.truncate(info.buffer_size());
    Ok((info.width, info.height, buf))
}

/// Per channel, the mean absolute difference of `a` and `b` (same size) over the
/// pixels where either is not its background, and how many pixels that is.
fn mean_diff(a: &[u8], b: &[u8]) -> ([f64; 3], u64) {
    let (bg_a, bg_b) = (&a[..4], &b[..4]);
    let mut sum = [0u64; 3];
    let mut n = 0u64;
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        if p == bg_a && q == bg_b {
            continue;
        }
        n += 1;
        for k in 0..3 {
            sum[k] += p[k].abs_diff(q[k]) as u64;
        }
    }
    (sum.map(|s| s as f64 / n.max(1) as f64), n)
}

/// `--montage OUT A B ...`: the pictures side by side.
fn montage(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let out = args.next().ok_or("--montage needs OUT and pictures")?;
    let pictures = args.map(|p| read_png(&p)).collect::<Result<Vec<_>, _>>()?;
    let h = pictures
        .iter()
        .map(|p| p.1)
        .max()
        .ok_or("--montage needs pictures")?;
    let w: u32 = pictures.iter().map(|p| p.0).sum();
    let mut rgba = vec![0u8; (w * h * 4) as usize];
    let mut x0 = 0;
    for (pw, ph, px) in &pictures {
        for y in 0..*ph {
            let src = &px[(y * pw * 4) as usize..((y + 1) * pw * 4) as usize];
            let at = ((y * w + x0) * 4) as usize;
            rgba[at..at + src.len()].copy_from_slice(src);
        }
        x0 += pw;
    }
    let file = std::fs::File::create(&out).map_err(|e| format!("cannot write {out}: {e}"))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Best);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&rgba).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    println!("wrote {out} ({w}x{h})");
    Ok(())
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or(
        "usage: pixel_check PNG [--expect COLOR:SHARE]... [--compare REF --max-mean-diff D] \
         | pixel_check --montage OUT PNG...",
    )?;
    if path == "--montage" {
        return montage(args);
    }
    let mut expect = Vec::new();
    let (mut compare, mut max_diff) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--expect" => {
                let v = args.next().ok_or("--expect needs COLOR:SHARE")?;
                let (c, s) = v
                    .split_once(':')
                    .and_then(|(c, s)| Some((c.to_string(), s.parse::<f64>().ok()?)))
                    .ok_or_else(|| format!("--expect wants COLOR:SHARE, found {v:?}"))?;
                expect.push((c, s));
            }
            "--compare" => compare = Some(args.next().ok_or("--compare needs a PNG")?),
            "--max-mean-diff" => {
                let v = args.next().ok_or("--max-mean-diff needs a number")?;
                let d = v.parse::<f64>().ok().filter(|d| *d >= 0.0);
                max_diff =
                    Some(d.ok_or_else(|| format!("--max-mean-diff wants a number, found {v:?}"))?);
            }
            _ => return Err(format!("unknown option {a:?}")),
        }
    }
    if compare.is_some() != max_diff.is_some() {
        return Err("--compare and --max-mean-diff go together".into());
    }
    let (width, height, buf) = read_png(&path)?;
    let info = (width, height);
    let px = &buf[..];
    let n = (px.len() / 4) as f64;
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    let (mut sum, mut sum2) = (0.0f64, 0.0f64);
    for p in px.chunks_exact(4) {
        let c = [p[0], p[1], p[2]].map(|v| v as f32 / 255.0);
        let l = (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) as f64;
        sum += l;
        sum2 += l * l;
        if let Some(k) = classify(c) {
            *counts.entry(k).or_default() += 1;
        }
    }
    let mean = sum / n;
    let std = (sum2 / n - mean * mean).max(0.0).sqrt();
    let shares: Vec<String> = counts
        .iter()
        .map(|(k, c)| format!("{k} {:.3}", *c as f64 / n))
        .collect();
    println!(
        "{path}: {}x{}, luminance mean {mean:.3} std {std:.3}; {}",
        info.0,
        info.1,
        shares.join(", ")
    );
    let mut failed = Vec::new();
    if let (Some(reference), Some(max)) = (&compare, max_diff) {
        let (rw, rh, other) = read_png(reference)?;
        if (rw, rh) != info {
            return Err(format!(
                "{path} is {}x{}, {reference} {rw}x{rh}",
                info.0, info.1
            ));
        }
        let (d, n) = mean_diff(px, &other);
        println!(
            "{path} against {reference}: mean absolute difference R {:.2} G {:.2} B {:.2} (of 255) over {n} pixels",
            d[0], d[1], d[2]
        );
        if n == 0 {
            failed.push("both pictures are background only".into());
        }
        for (k, c) in d.iter().zip(["R", "G", "B"]) {
            if *k > max {
                failed.push(format!(
                    "{c} differs from {reference} by {k:.2} on average, at most {max} allowed"
                ));
            }
        }
    }
    if std < 0.02 {
        failed.push(format!("blank: luminance std {std:.4}"));
    }
    for (c, share) in &expect {
        let got = counts.get(c.as_str()).copied().unwrap_or(0) as f64 / n;
        if got < *share {
            failed.push(format!("{c} covers {got:.4}, expected at least {share}"));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("{path}: {}", failed.join("; ")))
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("check failed: {e}");
            ExitCode::FAILURE
        }
    }
}

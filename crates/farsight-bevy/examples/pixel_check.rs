//! Checks an example's `--screenshot` PNG: not blank, and each expected tint covers
//! at least its share of the pixels. `.ci/run` uses it; exit status 1 on failure.
//!
//! `cargo run -p farsight-bevy --example pixel_check -- shot.png --expect green:0.02`
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

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: pixel_check PNG [--expect COLOR:SHARE]...")?;
    let mut expect = Vec::new();
    while let Some(a) = args.next() {
        if a != "--expect" {
            return Err(format!("unknown option {a:?}"));
        }
        let v = args.next().ok_or("--expect needs COLOR:SHARE")?;
        let (c, s) = v
            .split_once(':')
            .and_then(|(c, s)| Some((c.to_string(), s.parse::<f64>().ok()?)))
            .ok_or_else(|| format!("--expect wants COLOR:SHARE, found {v:?}"))?;
        expect.push((c, s));
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("cannot open {path}: {e}"))?;
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
    let px = &buf[..info.buffer_size()];
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
        info.width,
        info.height,
        shares.join(", ")
    );
    let mut failed = Vec::new();
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

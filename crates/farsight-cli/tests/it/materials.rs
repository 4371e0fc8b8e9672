//! `farsight cook mesh` keeps a model's materials and stores its textures beside
//! the cooked file (or inside it), and `farsight inspect` lists them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(cwd: &Path, args: &[&str]) -> (bool, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_farsight"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

/// A `w` x `h` RGB PNG written with the png crate.
fn write_png(path: &Path, w: u32, h: u32) {
    let file = std::fs::File::create(path).unwrap();
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i % 251) as u8).collect();
    encoder
        .write_header()
        .unwrap()
        .write_image_data(&pixels)
        .unwrap();
}

fn png_size(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    (info.width, info.height)
}

/// A textured OBJ: two materials, one with a 600 x 40 base colour image.
fn textured_obj(dir: &Path) -> PathBuf {
    write_png(&dir.join("planks.png"), 600, 40);
    std::fs::write(
        dir.join("crate.mtl"),
        "newmtl planks\nKd 0.8 0.6 0.4\nmap_Kd planks.png\n\nnewmtl iron\nKd 0.2 0.2 0.25\n",
    )
    .unwrap();
    let obj = dir.join("crate.obj");
    std::fs::write(
        &obj,
        "mtllib crate.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
         usemtl planks\nf 1/1 2/2 3/3\nusemtl iron\nf 1/1 3/3 4/4\n",
    )
    .unwrap();
    obj
}

/// `cook mesh OBJ -o OUT --lod-chain` with `extra` options.
fn cook(d: &Path, obj: &str, out: &str, extra: &[&str]) -> (bool, String) {
    let mut args = vec!["cook", "mesh", obj, "-o", out, "--lod-chain"];
    args.extend_from_slice(extra);
    run(d, &args)
}

#[test]
fn cook_stores_textures_beside_or_inside_and_inspect_lists_materials() {
    let d = std::env::temp_dir().join(format!("farsight-cli-materials-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("out")).unwrap();
    let obj = textured_obj(&d);
    let obj = obj.to_str().unwrap();
    let (ok, text) = cook(
        &d,
        obj,
        "out/crate.farsight",
        &["--max-texture-size", "256"],
    );
    assert!(ok, "{text}");
    assert!(text.contains("2 materials, 1 textures, 1 images"), "{text}");
    let images: Vec<PathBuf> = std::fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(png_size(&images[0]), (256, 17));
    let (ok, text) = run(&d, &["inspect", "out/crate.farsight"]);
    assert!(ok, "{text}");
    assert!(text.contains("materials   2 (1 textures)"), "{text}");
    assert!(text.contains("planks") && text.contains("iron"), "{text}");
    assert!(text.contains("base_color           texture 0"), "{text}");
    let name = images[0].file_name().unwrap().to_str().unwrap();
    assert!(
        text.contains(&format!("Png 256x17 {name} (planks.png)")),
        "{text}"
    );
    // Embedded: no image beside the file, the image a record of it.
    let (ok, text) = cook(
        &d,
        obj,
        "embedded.farsight",
        &["--embed-textures", "--mips"],
    );
    assert!(ok, "{text}");
    assert!(text.contains("inside the file"), "{text}");
    let (ok, text) = run(&d, &["inspect", "embedded.farsight"]);
    assert!(ok, "{text}");
    assert!(text.contains("Png 600x40 record #"), "{text}");
    assert!(text.contains("+ 9 mips"), "{text}");
    assert!(text.contains("an embedded texture image"), "{text}");
    let (ok, text) = run(
        &d,
        &[
            "cook",
            "mesh",
            obj,
            "-o",
            "bad.farsight",
            "--max-texture-size",
            "0",
        ],
    );
    assert!(!ok && text.contains("max-texture-size"), "{text}");
}

/// `world build --models` cooks each model as `cook mesh` does: the images its
/// materials name are written beside its cooked file in the world's `models/`, so
/// the world folder is whole (nothing it names lives outside it).
#[test]
fn world_build_writes_a_models_textures_beside_its_cooked_file() {
    let d = std::env::temp_dir().join(format!("farsight-cli-world-tex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let src = d.join("src");
    std::fs::create_dir_all(&src).unwrap();
    textured_obj(&src);
    std::fs::remove_file(src.join("planks.png")).unwrap();
    write_png(&src.join("planks.png"), 64, 32);
    let models = d.join("models");
    std::fs::create_dir_all(&models).unwrap();
    for f in ["crate.obj", "crate.mtl", "planks.png"] {
        std::fs::copy(src.join(f), models.join(f)).unwrap();
    }
    let (ok, text) = run(
        &d,
        &[
            "world", "build", "-o", "w", "--models", "models", "--grid", "1",
        ],
    );
    assert!(ok, "{text}");
    let (ok, text) = run(&d, &["inspect", "w/models/crate.farsight"]);
    assert!(ok, "{text}");
    let images: Vec<PathBuf> = std::fs::read_dir(d.join("w/models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    assert_eq!(images.len(), 1, "one image beside the model: {images:?}");
    let name = images[0].file_name().unwrap().to_str().unwrap();
    assert!(text.contains(name), "the cooked file names {name}: {text}");
    assert_eq!(png_size(&images[0]), (64, 32));
    std::fs::remove_dir_all(&d).unwrap();
}

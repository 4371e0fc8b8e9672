//! Materials and textures through the cook: every material field and texture
//! reference read back from the cooked file, images stored once under their
//! content hash (or inside the file), scaled down and given mips on request, and
//! what cannot be kept said in a warning.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use farsight_format::{
    AlignedBytes, AlphaMode, ImageFormat, Material, TextureData, UvTransform, Wrap, TEXTURE_TAG,
};
use farsight_mesh::{
    cook_file_with, decode_lod_entry, read_lod_chain, ChainRecords, CookKind, CookOutput,
    LodChainConfig, TextureConfig, Warning,
};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-materials-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A one-level, full-precision chain: the cheapest cook that keeps every uv as
/// the source gave it.
fn chain_kind() -> CookKind {
    let config = LodChainConfig {
        max_levels: 1,
        ..LodChainConfig::default()
    };
    CookKind::LodChain(config, ChainRecords::Full)
}

/// Images scaled down to at most `n` pixels a side, stored beside the file.
fn at_most(n: u32) -> TextureConfig {
    TextureConfig {
        max_size: Some(n),
        ..Default::default()
    }
}

fn cook(path: &Path, options: TextureConfig) -> CookOutput {
    cook_file_with(path, &chain_kind(), &options).unwrap_or_else(|e| panic!("{e}"))
}

/// A PNG of `w` x `h` pixels, a gradient so no two sizes or seeds give one image.
fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        image::Rgba([(x % 256) as u8, (y % 256) as u8, seed, 255])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 128]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(
            &mut std::io::Cursor::new(&mut out),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    out
}

/// A glTF of one quad drawn once per material (one primitive each), the quad's
/// uvs its corners, with `materials`, `textures`, `images` and `samplers` as JSON
/// arrays. `embedded` is appended to the buffer as buffer view 3 (an image a
/// `bufferView` image can name).
fn quad_gltf(
    dir: &Path,
    name: &str,
    materials: &str,
    textures: &str,
    images: &str,
    embedded: &[u8],
) -> PathBuf {
    let mut buffer = Vec::new();
    for p in [
        [0.0f32, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
    ] {
        for c in p {
            buffer.extend_from_slice(&c.to_le_bytes());
        }
    }
    for uv in [[0.0f32, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]] {
        for c in uv {
            buffer.extend_from_slice(&c.to_le_bytes());
        }
    }
    for i in [0u16, 1, 2, 0, 2, 3] {
        buffer.extend_from_slice(&i.to_le_bytes());
    }
    // Buffer view 3 always has bytes (four zeros when no image is given).
    let embedded = if embedded.is_empty() {
        &[0u8; 4][..]
    } else {
        embedded
    };
    buffer.extend_from_slice(embedded);
    let count = materials.matches("\"name\"").count().max(1);
    let primitives: Vec<String> = (0..count)
        .map(|m| {
            format!(r#"{{"attributes": {{"POSITION": 0, "TEXCOORD_0": 1}}, "indices": 2, "material": {m}}}"#)
        })
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&buffer);
    let json = format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "scene": 0, "scenes": [{{"nodes": [0]}}], "nodes": [{{"mesh": 0}}],
  "meshes": [{{"name": "quad", "primitives": [{}]}}],
  "buffers": [{{"byteLength": {}, "uri": "data:application/octet-stream;base64,{b64}"}}],
  "bufferViews": [
    {{"buffer": 0, "byteOffset": 0, "byteLength": 48}},
    {{"buffer": 0, "byteOffset": 48, "byteLength": 32}},
    {{"buffer": 0, "byteOffset": 80, "byteLength": 12}},
    {{"buffer": 0, "byteOffset": 92, "byteLength": {}}}
  ],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]}},
    {{"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC2"}},
    {{"bufferView": 2, "componentType": 5123, "count": 6, "type": "SCALAR"}}
  ],
  "samplers": [{{"wrapS": 33071, "wrapT": 33648}}],
  "materials": {materials},
  "textures": {textures},
  "images": {images}
}}"#,
        primitives.join(", "),
        buffer.len(),
        embedded.len(),
    );
    let path = dir.join(name);
    std::fs::write(&path, json).unwrap();
    path
}

/// The cooked chain's manifest table equals the cook's own, and every texture
/// reference names an image the cook stored, hashed to its name and of its format.
fn check_written(out: &CookOutput) -> farsight_format::MaterialTable {
    let bytes = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&bytes).unwrap();
    let table = file.manifest().material_table.clone();
    if !out.looks.embed {
        assert_eq!(table, out.looks.table);
    }
    for t in &table.textures {
        for d in std::iter::once(&t.data).chain(&t.mips) {
            let stored = match d {
                TextureData::File(name) => {
                    let image = out.looks.images.iter().find(|i| &i.name == name);
                    let image = image.unwrap_or_else(|| panic!("{name} not stored"));
                    let hash = blake3::hash(&image.bytes).to_hex();
                    assert!(name.starts_with(&hash.as_str()[..32]), "{name}");
                    image.bytes.clone()
                }
                TextureData::Embedded(r) => {
                    let record = file.record(*r).unwrap();
                    assert_eq!(record.tag, TEXTURE_TAG);
                    record.bytes.to_vec()
                }
            };
            assert_eq!(ImageFormat::sniff(&stored), Some(t.format), "{}", t.name);
        }
    }
    // Every material a sub-mesh names that the table defines is found by name.
    for l in file.manifest().all_levels() {
        for s in &l.submeshes {
            if let Some(m) = table.get(&s.material) {
                assert_eq!(m.name, s.material);
            }
        }
    }
    table
}

fn dims(bytes: &[u8]) -> (u32, u32) {
    let img = image::load_from_memory(bytes).unwrap();
    (img.width(), img.height())
}

#[test]
fn every_material_field_and_texture_source_is_kept() {
    let dir = temp_dir("fields");
    std::fs::write(dir.join("base.png"), png(8, 4, 1)).unwrap();
    let data_uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png(2, 2, 3))
    );
    let view = png(4, 4, 2);
    let materials = r#"[
      {"name": "painted",
       "pbrMetallicRoughness": {"baseColorFactor": [0.5, 0.25, 0.125, 0.75],
         "baseColorTexture": {"index": 0},
         "metallicFactor": 0.3, "roughnessFactor": 0.6,
         "metallicRoughnessTexture": {"index": 1, "texCoord": 1}},
       "normalTexture": {"index": 2, "scale": 0.8},
       "occlusionTexture": {"index": 1, "strength": 0.4},
       "emissiveTexture": {"index": 0},
       "emissiveFactor": [1.0, 0.5, 0.25],
       "alphaMode": "MASK", "alphaCutoff": 0.35, "doubleSided": true,
       "extensions": {
         "KHR_materials_emissive_strength": {"emissiveStrength": 3.0},
         "KHR_materials_ior": {"ior": 1.33},
         "KHR_materials_transmission": {"transmissionFactor": 0.2},
         "KHR_materials_volume": {"thicknessFactor": 0.1, "attenuationDistance": 2.0, "attenuationColor": [0.9, 0.8, 0.7]},
         "KHR_materials_specular": {"specularFactor": 0.7, "specularColorFactor": [1.0, 0.9, 0.8]},
         "KHR_materials_clearcoat": {"clearcoatFactor": 0.5, "clearcoatRoughnessFactor": 0.1},
         "KHR_materials_anisotropy": {"anisotropyStrength": 0.6, "anisotropyRotation": 0.5}}},
      {"name": "flat", "alphaMode": "BLEND",
       "extensions": {"KHR_materials_unlit": {}}}
    ]"#;
    let textures = r#"[{"source": 0, "sampler": 0}, {"source": 1}, {"source": 2}]"#;
    let images = format!(
        r#"[{{"uri": "base.png"}}, {{"bufferView": 3, "mimeType": "image/png"}}, {{"uri": "{data_uri}"}}]"#
    );
    let path = quad_gltf(&dir, "fields.gltf", materials, textures, &images, &view);
    let out = cook(&path, TextureConfig::default());
    assert!(
        out.warnings.iter().all(|w| !matches!(
            w,
            Warning::TextureMissing { .. } | Warning::MaterialFeaturesDropped { .. }
        )),
        "{:?}",
        out.warnings
    );
    let table = check_written(&out);
    assert_eq!(table.materials.len(), 2);
    let m = table.get("painted").unwrap();
    assert_eq!(m.base_color, [0.5, 0.25, 0.125, 0.75]);
    assert_eq!((m.metallic, m.roughness), (0.3, 0.6));
    assert_eq!((m.normal_scale, m.occlusion_strength), (0.8, 0.4));
    assert_eq!(m.emissive, [1.0, 0.5, 0.25]);
    assert_eq!(m.emissive_strength, 3.0);
    assert_eq!(
        (m.alpha_mode, m.alpha_cutoff, m.double_sided, m.unlit),
        (AlphaMode::Mask, 0.35, true, false)
    );
    let x = m.extras;
    assert_eq!(
        (x.ior, x.transmission, x.thickness),
        (Some(1.33), Some(0.2), Some(0.1))
    );
    assert_eq!(
        (x.attenuation_distance, x.attenuation_color),
        (Some(2.0), Some([0.9, 0.8, 0.7]))
    );
    assert_eq!(
        (x.specular, x.specular_color),
        (Some(0.7), Some([1.0, 0.9, 0.8]))
    );
    assert_eq!((x.clearcoat, x.clearcoat_roughness), (Some(0.5), Some(0.1)));
    assert_eq!(
        (x.anisotropy, x.anisotropy_rotation),
        (Some(0.6), Some(0.5))
    );
    // Slots: the file image (with its sampler's wraps), the buffer view image
    // (sampled from uv set 1 for metal-roughness), the data URI image.
    let base = m.base_color_texture.unwrap();
    let mr = m.metallic_roughness_texture.unwrap();
    assert_eq!(mr.texcoord, 1);
    assert_eq!(m.occlusion_texture.unwrap().texture, mr.texture);
    assert_eq!(m.emissive_texture.unwrap().texture, base.texture);
    let tex = |i: u32| &table.textures[i as usize];
    assert_eq!((tex(base.texture).width, tex(base.texture).height), (8, 4));
    assert_eq!(tex(base.texture).name, "base.png");
    assert_eq!(
        (tex(base.texture).wrap_u, tex(base.texture).wrap_v),
        (Wrap::ClampToEdge, Wrap::MirroredRepeat)
    );
    assert_eq!(
        (tex(mr.texture).width, tex(mr.texture).wrap_u),
        (4, Wrap::Repeat)
    );
    assert_eq!(tex(m.normal_texture.unwrap().texture).width, 2);
    assert_eq!(table.textures.len(), 3);
    assert_eq!(out.looks.images.len(), 3);
    // Unscaled images are stored as the source's bytes.
    let stored = |t: u32| match &tex(t).data {
        TextureData::File(n) => out
            .looks
            .images
            .iter()
            .find(|i| &i.name == n)
            .unwrap()
            .bytes
            .clone(),
        d => panic!("{d:?}"),
    };
    assert_eq!(
        stored(base.texture),
        std::fs::read(dir.join("base.png")).unwrap()
    );
    assert_eq!(stored(mr.texture), view);
    let flat = table.get("flat").unwrap();
    assert!(flat.unlit);
    assert_eq!(flat.alpha_mode, AlphaMode::Blend);
    let mut want = Material::named("flat");
    want.unlit = true;
    want.alpha_mode = AlphaMode::Blend;
    assert_eq!(*flat, want);
    // Embedded: the same table with each image a record of the file.
    let embedded = cook(
        &path,
        TextureConfig {
            embed: true,
            ..Default::default()
        },
    );
    let t2 = check_written(&embedded);
    assert_eq!(t2.materials, table.materials);
    assert!(t2
        .textures
        .iter()
        .all(|t| matches!(t.data, TextureData::Embedded(_))));
    let dir2 = temp_dir("fields-embedded");
    assert_eq!(embedded.looks.write_beside(&dir2).unwrap(), 0);
}

#[test]
fn an_image_used_by_two_models_is_written_once() {
    let dir = temp_dir("dedup");
    std::fs::write(dir.join("shared.png"), png(16, 16, 7)).unwrap();
    let materials = r#"[
      {"name": "a", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
      {"name": "b", "normalTexture": {"index": 1}}]"#;
    // Two textures (two samplers' worth) of one image in one model.
    let textures = r#"[{"source": 0}, {"source": 0, "sampler": 0}]"#;
    let images = r#"[{"uri": "shared.png"}]"#;
    let one = quad_gltf(&dir, "one.gltf", materials, textures, images, &[]);
    let two = quad_gltf(&dir, "two.gltf", materials, textures, images, &[]);
    let out_dir = temp_dir("dedup-out");
    let a = cook(&one, TextureConfig::default());
    let b = cook(&two, TextureConfig::default());
    assert_eq!(a.looks.images.len(), 1);
    assert_eq!(a.looks.table.textures.len(), 2);
    assert_eq!(a.looks.images, b.looks.images);
    assert_eq!(a.looks.write_beside(&out_dir).unwrap(), 1);
    assert_eq!(b.looks.write_beside(&out_dir).unwrap(), 0);
    let files: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert_eq!(files.len(), 1);
    check_written(&a);
}

#[test]
fn max_texture_size_scales_down_and_mips_halve_to_one_pixel() {
    let dir = temp_dir("scaled");
    std::fs::write(dir.join("wide.png"), png(600, 300, 1)).unwrap();
    std::fs::write(dir.join("small.jpg"), jpeg(100, 60)).unwrap();
    let materials = r#"[{"name": "m", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}},
       "normalTexture": {"index": 1}}]"#;
    let textures = r#"[{"source": 0}, {"source": 1}]"#;
    let images = r#"[{"uri": "wide.png"}, {"uri": "small.jpg"}]"#;
    let path = quad_gltf(&dir, "scaled.gltf", materials, textures, images, &[]);
    let out = cook(&path, at_most(256));
    let table = check_written(&out);
    assert_eq!(
        (table.textures[0].width, table.textures[0].height),
        (256, 128)
    );
    assert_eq!(
        (table.textures[1].width, table.textures[1].height),
        (100, 60)
    );
    for image in &out.looks.images {
        let (w, h) = dims(&image.bytes);
        assert!(w <= 256 && h <= 256, "{}: {w}x{h}", image.name);
    }
    // The JPEG was small enough: its bytes are the source's.
    assert!(out
        .looks
        .images
        .iter()
        .any(|i| i.bytes == std::fs::read(dir.join("small.jpg")).unwrap()));
    let mips = cook(
        &path,
        TextureConfig {
            max_size: Some(256),
            mips: true,
            embed: true,
        },
    );
    let table = check_written(&mips);
    let file_bytes = AlignedBytes::from(&mips.bytes[..]);
    let file = read_lod_chain(&file_bytes).unwrap();
    for t in &table.textures {
        let mut size = (t.width, t.height);
        assert!(!t.mips.is_empty());
        for d in &t.mips {
            let TextureData::Embedded(r) = d else {
                panic!("{d:?}")
            };
            size = ((size.0 / 2).max(1), (size.1 / 2).max(1));
            assert_eq!(dims(file.record(*r).unwrap().bytes), size, "{}", t.name);
        }
        assert_eq!(size, (1, 1));
    }
}

#[test]
fn missing_and_foreign_images_are_warnings_and_factors_stay() {
    let dir = temp_dir("missing");
    let mut ktx2 = b"\xABKTX 20\xBB\r\n\x1A\n".to_vec();
    ktx2.extend_from_slice(&[0; 8]);
    ktx2.extend_from_slice(&64u32.to_le_bytes());
    ktx2.extend_from_slice(&32u32.to_le_bytes());
    ktx2.extend_from_slice(&[0; 40]);
    std::fs::write(dir.join("packed.ktx2"), &ktx2).unwrap();
    let materials = r#"[{"name": "m",
      "pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.4, 0.6, 1.0], "baseColorTexture": {"index": 0}},
      "normalTexture": {"index": 1},
      "extensions": {"KHR_materials_sheen": {"sheenColorFactor": [1, 1, 1]},
                     "KHR_materials_clearcoat": {"clearcoatFactor": 1.0, "clearcoatTexture": {"index": 0}}}},
      {"name": "n", "extensions": {"KHR_materials_sheen": {}}}]"#;
    let textures = r#"[{"source": 0}, {"source": 1}]"#;
    let images = r#"[{"uri": "gone.png"}, {"uri": "packed.ktx2"}]"#;
    let path = quad_gltf(&dir, "missing.gltf", materials, textures, images, &[]);
    let out = cook(&path, at_most(16));
    let missing: Vec<_> = out
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::TextureMissing { texture, .. } => Some(texture.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(missing, ["gone.png"]);
    assert!(out
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::TextureCopied { texture, .. } if texture == "packed.ktx2")));
    let dropped: Vec<_> = out
        .warnings
        .iter()
        .filter_map(|w| match w {
            Warning::MaterialFeaturesDropped { names } => Some(names.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        dropped,
        [vec![
            "KHR_materials_sheen".to_string(),
            "KHR_materials_clearcoat.clearcoatTexture".into()
        ]]
    );
    let text = out
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("gone.png") && text.contains("packed.ktx2"),
        "{text}"
    );
    let table = check_written(&out);
    let m = table.get("m").unwrap();
    assert_eq!(m.base_color, [0.2, 0.4, 0.6, 1.0]);
    assert_eq!(m.base_color_texture, None);
    assert_eq!(m.extras.clearcoat, Some(1.0));
    let normal = &table.textures[m.normal_texture.unwrap().texture as usize];
    assert_eq!(
        (normal.format, normal.width, normal.height),
        (ImageFormat::Ktx2, 64, 32)
    );
    assert_eq!(table.textures.len(), 1);
    // Copied as it is, not scaled.
    assert_eq!(out.looks.images[0].bytes, ktx2);
}

/// The cooked sub-meshes' uvs, level 0, by material.
fn cooked_uvs(out: &CookOutput, material: &str) -> Vec<[f32; 2]> {
    let bytes = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&bytes).unwrap();
    let mut uvs = Vec::new();
    for s in &file.manifest().levels[0].submeshes {
        if s.material == material {
            let sub = decode_lod_entry(&file.record(s.record).unwrap(), s).unwrap();
            uvs.extend(sub.vertices.iter().map(|v| v.uv));
        }
    }
    uvs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    uvs
}

#[test]
fn a_texture_transform_every_texture_shares_goes_into_the_uvs() {
    let dir = temp_dir("transform");
    std::fs::write(dir.join("t.png"), png(4, 4, 9)).unwrap();
    let t = r#""extensions": {"KHR_texture_transform": {"offset": [0.5, 0.25], "scale": [2, 2]}}"#;
    let materials = format!(
        r#"[{{"name": "shared", "pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0, {t}}}}},
            "normalTexture": {{"index": 0, {t}}}}},
           {{"name": "apart", "pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0, {t}}}}},
            "normalTexture": {{"index": 0}}}}]"#
    );
    let path = quad_gltf(
        &dir,
        "transform.gltf",
        &materials,
        r#"[{"source": 0}]"#,
        r#"[{"uri": "t.png"}]"#,
        &[],
    );
    let out = cook(&path, TextureConfig::default());
    let table = check_written(&out);
    let shared = table.get("shared").unwrap();
    assert_eq!(shared.base_color_texture.unwrap().transform, None);
    assert_eq!(shared.normal_texture.unwrap().transform, None);
    let mut want: Vec<[f32; 2]> = [[0.5, 0.25], [2.5, 0.25], [2.5, 2.25], [0.5, 2.25]].to_vec();
    want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(cooked_uvs(&out, "shared"), want);
    let apart = table.get("apart").unwrap();
    assert_eq!(
        apart.base_color_texture.unwrap().transform,
        Some(UvTransform {
            offset: [0.5, 0.25],
            rotation: 0.0,
            scale: [2.0, 2.0]
        })
    );
    assert_eq!(apart.normal_texture.unwrap().transform, None);
    let mut corners: Vec<[f32; 2]> = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]].to_vec();
    corners.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(cooked_uvs(&out, "apart"), corners);
}

#[test]
fn an_obj_keeps_what_its_mtl_says() {
    let dir = temp_dir("obj");
    std::fs::write(dir.join("bark.png"), png(8, 8, 4)).unwrap();
    std::fs::write(dir.join("bump.png"), png(8, 8, 5)).unwrap();
    std::fs::write(
        dir.join("tree.mtl"),
        "newmtl bark\nKd 0.4 0.3 0.2\nd 0.5\nmap_Kd bark.png\nmap_Bump -bm 1.0 bump.png\n\nnewmtl leaf\nKd 0.1 0.8 0.1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tree.obj"),
        "mtllib tree.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
         usemtl bark\nf 1/1 2/2 3/3\nusemtl leaf\nf 1/1 3/3 4/4\n",
    )
    .unwrap();
    let out = cook(&dir.join("tree.obj"), TextureConfig::default());
    let table = check_written(&out);
    let bark = table.get("bark").unwrap();
    assert_eq!(bark.base_color, [0.4, 0.3, 0.2, 0.5]);
    assert_eq!(bark.alpha_mode, AlphaMode::Blend);
    assert_eq!(bark.metallic, 0.0);
    let base = &table.textures[bark.base_color_texture.unwrap().texture as usize];
    let normal = &table.textures[bark.normal_texture.unwrap().texture as usize];
    assert_eq!(
        (base.name.as_str(), normal.name.as_str()),
        ("bark.png", "bump.png")
    );
    let leaf = table.get("leaf").unwrap();
    assert_eq!(leaf.base_color, [0.1, 0.8, 0.1, 1.0]);
    assert_eq!(leaf.alpha_mode, AlphaMode::Opaque);
    assert_eq!(leaf.base_color_texture, None);
}

/// FlightHelmet from the shared corpus, its 15 textures: six materials with
/// base colour, normal and occlusion-roughness-metal maps, each image stored
/// once, read back from cluster and chain files alike.
/// The corpus's FlightHelmet, `None` (where the corpus is not required) when its
/// textures are not there.
fn textured_helmet() -> Option<PathBuf> {
    let path = farsight_testkit::shared_meshes().join("FlightHelmet/FlightHelmet.gltf");
    if !path
        .parent()
        .unwrap()
        .join("FlightHelmet_Materials_LensesMat_Normal.png")
        .exists()
    {
        assert!(
            std::env::var_os(farsight_testkit::REQUIRE_CORPUS)
                .is_none_or(|v| v.is_empty() || v == "0"),
            "{} has no textures",
            path.display()
        );
        return None;
    }
    Some(path)
}

#[test]
fn flight_helmet_keeps_its_six_materials_and_fifteen_textures() {
    let Some(path) = textured_helmet() else {
        return;
    };
    let out = cook(&path, TextureConfig::default());
    let table = check_written(&out);
    assert_eq!(table.materials.len(), 6);
    assert_eq!(table.textures.len(), 15);
    assert_eq!(out.looks.images.len(), 15);
    for m in &table.materials {
        let orm = m
            .metallic_roughness_texture
            .unwrap_or_else(|| panic!("{}", m.name));
        assert!(
            m.base_color_texture.is_some() && m.normal_texture.is_some(),
            "{}",
            m.name
        );
        assert_eq!(
            m.occlusion_texture.map(|s| s.texture),
            Some(orm.texture),
            "{}",
            m.name
        );
    }
    assert!(out
        .warnings
        .iter()
        .all(|w| !matches!(w, Warning::TextureMissing { .. })));
}

/// Every corpus mesh cooked: the file's table is the cook's, every texture
/// reference names a stored image of its format, and each glTF material's factors
/// and texture slots are the source's as the gltf crate reads them (a slot left
/// out only where its image could not be read, which a warning then names).
#[test]
fn every_corpus_mesh_reads_back_its_materials() {
    let mut textured = 0;
    for path in farsight_testkit::corpus() {
        let out = cook(&path, TextureConfig::default());
        let table = check_written(&out);
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !matches!(ext, "gltf" | "glb") {
            continue;
        }
        let missing = out
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::TextureMissing { .. }));
        let doc = gltf::Gltf::open(&path).unwrap().document;
        for source in doc.materials() {
            let name = source.name().map_or_else(
                || format!("material{}", source.index().unwrap()),
                str::to_owned,
            );
            let Some(m) = table.get(&name) else {
                continue;
            };
            let what = format!("{}: {name}", path.display());
            let pbr = source.pbr_metallic_roughness();
            assert_eq!(m.base_color, pbr.base_color_factor(), "{what}");
            assert_eq!(
                (m.metallic, m.roughness),
                (pbr.metallic_factor(), pbr.roughness_factor()),
                "{what}"
            );
            assert_eq!(m.emissive, source.emissive_factor(), "{what}");
            assert_eq!(m.double_sided, source.double_sided(), "{what}");
            assert_eq!(
                m.alpha_cutoff,
                source.alpha_cutoff().unwrap_or(0.5),
                "{what}"
            );
            let mode = match source.alpha_mode() {
                gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
                gltf::material::AlphaMode::Mask => AlphaMode::Mask,
                gltf::material::AlphaMode::Blend => AlphaMode::Blend,
            };
            assert_eq!(m.alpha_mode, mode, "{what}");
            let has = [
                pbr.base_color_texture().is_some(),
                pbr.metallic_roughness_texture().is_some(),
                source.normal_texture().is_some(),
                source.occlusion_texture().is_some(),
                source.emissive_texture().is_some(),
            ];
            for ((field, slot), has) in m.texture_slots().into_iter().zip(has) {
                assert!(slot.is_none() || has, "{what}: {field} not in the source");
                assert!(
                    slot.is_some() || !has || missing,
                    "{what}: {field} lost without a warning"
                );
                textured += usize::from(slot.is_some());
            }
            if let Some(n) = source.normal_texture() {
                assert_eq!(m.normal_scale, n.scale(), "{what}");
            }
            if let Some(o) = source.occlusion_texture() {
                assert_eq!(m.occlusion_strength, o.strength(), "{what}");
            }
        }
    }
    if farsight_testkit::corpus_is_shared() {
        // FlightHelmet alone has 6 materials of 4 slots each.
        assert!(textured >= 24, "{textured} texture slots in the corpus");
    }
}

/// A chain file whose material table is damaged (a factor out of range, a slot
/// naming a texture the table lacks, a texture file name with a folder in it)
/// is refused by the reader with a typed error naming the field.
#[test]
fn a_chain_file_with_a_damaged_material_table_is_refused() {
    let dir = temp_dir("damaged");
    std::fs::write(dir.join("t.png"), png(4, 4, 1)).unwrap();
    let materials =
        r#"[{"name": "m", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]"#;
    let path = quad_gltf(
        &dir,
        "damaged.gltf",
        materials,
        r#"[{"source": 0}]"#,
        r#"[{"uri": "t.png"}]"#,
        &[],
    );
    let out = cook(&path, TextureConfig::default());
    let farsight_mesh::Cooked::LodChain { chains, instances } = &out.cooked else {
        panic!("a chain")
    };
    let write = |damage: &dyn Fn(&mut farsight_mesh::Looks)| {
        let mut looks = out.looks.clone();
        damage(&mut looks);
        farsight_mesh::encode_lod_chains_with(
            &[("quad", &chains[0])],
            instances,
            &ChainRecords::Full,
            &looks,
        )
        .unwrap()
    };
    let read = |bytes: Vec<u8>| read_lod_chain(&AlignedBytes::from(&bytes[..])).map(|_| ());
    read(write(&|_| {})).unwrap();
    // The field a typed error names.
    let field = |r: Result<(), farsight_format::FormatError>| match r {
        Err(farsight_format::FormatError::BadMaterial { field, .. }) => format!("material {field}"),
        Err(farsight_format::FormatError::BadTexture { field, .. }) => format!("texture {field}"),
        other => format!("{other:?}"),
    };
    let r = read(write(&|l| l.table.materials[0].roughness = 2.0));
    assert_eq!(field(r), "material roughness");
    let r = read(write(&|l| {
        let slot = l.table.materials[0].base_color_texture.as_mut();
        slot.unwrap().texture = 3
    }));
    assert_eq!(field(r), "material base_color_texture");
    let r = read(write(&|l| {
        l.table.textures[0].data = TextureData::File("sub/0123456789abcdef.png".into())
    }));
    assert_eq!(field(r), "texture file");
}

/// `path` cooked as a one-level chain of cooked records (which store tangents only
/// for the sub-meshes that have them; full-precision records always hold the field).
fn cook_cooked(path: &Path) -> CookOutput {
    let config = LodChainConfig {
        max_levels: 1,
        ..LodChainConfig::default()
    };
    let kind = CookKind::LodChain(config, ChainRecords::Cooked(Default::default()));
    cook_file_with(path, &kind, &TextureConfig::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Level 0's sub-meshes of a cooked chain, decoded, with their material names.
fn level0(out: &CookOutput) -> Vec<farsight_mesh::SubMesh> {
    let bytes = AlignedBytes::from(&out.bytes[..]);
    let file = read_lod_chain(&bytes).unwrap();
    file.manifest().levels[0]
        .submeshes
        .iter()
        .map(|s| decode_lod_entry(&file.record(s.record).unwrap(), s).unwrap())
        .collect()
}

/// The cooked chain stores tangents on exactly the sub-meshes whose material has a
/// normal map: made where the source had none (along +u on this quad, whose u
/// runs along +x), and none on the other material.
#[test]
fn tangents_are_made_for_a_normal_map_and_left_out_without_one() {
    let dir = temp_dir("tangents-made");
    let path = quad_gltf(
        &dir,
        "bumpy.gltf",
        r#"[{"name": "bumpy", "normalTexture": {"index": 0}}, {"name": "flat"}]"#,
        r#"[{"source": 0}]"#,
        r#"[{"bufferView": 3, "mimeType": "image/png"}]"#,
        &png(4, 4, 1),
    );
    let out = cook_cooked(&path);
    let subs = level0(&out);
    let bumpy: Vec<_> = subs.iter().filter(|s| s.material == "bumpy").collect();
    let flat: Vec<_> = subs.iter().filter(|s| s.material == "flat").collect();
    assert!(!bumpy.is_empty() && !flat.is_empty());
    for s in bumpy {
        assert!(s.has_tangents, "the normal-mapped material has tangents");
        for v in &s.vertices {
            let [x, y, z, w] = v.tangent;
            assert!(
                (x - 1.0).abs() < 1e-2 && y.abs() < 1e-2 && z.abs() < 1e-2,
                "{:?}",
                v.tangent
            );
            assert_eq!(w, 1.0);
        }
    }
    for s in flat {
        assert!(!s.has_tangents, "no normal map, no tangents");
    }
}

/// A source's tangents on materials without a normal map are dropped from the
/// cooked chain and zeroed in the cluster file (LightsPunctualLamp has tangents and
/// no normal map); FlightHelmet's, all normal-mapped, are kept as the source gave
/// them.
#[test]
fn source_tangents_stay_only_where_a_normal_map_reads_them() {
    let lamp = farsight_testkit::mesh("LightsPunctualLamp/LightsPunctualLamp.gltf");
    let source = farsight_mesh::import(&lamp, &Default::default()).unwrap();
    assert!(
        source
            .into_mesh()
            .0
            .submeshes
            .iter()
            .any(|s| s.has_tangents),
        "the source has tangents"
    );
    let out = cook_cooked(&lamp);
    for s in level0(&out) {
        assert!(
            !s.has_tangents,
            "{}: tangents kept without a normal map",
            s.material
        );
    }
    let clusters = cook_file_with(
        &lamp,
        &CookKind::Clusters(Default::default()),
        &TextureConfig::default(),
    )
    .unwrap();
    let farsight_mesh::Cooked::Clusters(mesh) = &clusters.cooked else {
        panic!("one cluster mesh")
    };
    let first = mesh.packed[0].tangent;
    assert!(mesh
        .packed
        .iter()
        .all(|v| v.tangent == first && v.flags == 0));

    let Some(helmet) = textured_helmet() else {
        return;
    };
    let out = cook_cooked(&helmet);
    let (source, _) = farsight_mesh::import(&helmet, &Default::default())
        .unwrap()
        .into_mesh();
    for s in level0(&out) {
        assert!(
            s.has_tangents,
            "{}: normal-mapped, tangents lost",
            s.material
        );
        // Level 0 keeps the source's vertices: each cooked tangent is one of the
        // source tangents of its material (up to the cooked precision).
        let src: Vec<[f32; 4]> = source
            .submeshes
            .iter()
            .filter(|m| m.material == s.material)
            .flat_map(|m| m.vertices.iter().map(|v| v.tangent))
            .collect();
        for v in s.vertices.iter().step_by(97) {
            let near = src.iter().any(|t| {
                t[3] == v.tangent[3] && (0..3).all(|k| (t[k] - v.tangent[k]).abs() < 2e-3)
            });
            assert!(
                near,
                "{}: tangent {:?} not the source's",
                s.material, v.tangent
            );
        }
    }
}

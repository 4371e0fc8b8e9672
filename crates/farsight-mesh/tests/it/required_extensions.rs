//! Required glTF extensions: those carrying no geometry (lights, materials,
//! textures) are ignored with a warning naming them; those that change the geometry
//! and that farsight cannot read, and unknown ones, are typed errors.

use crate::common;

use farsight_mesh::{import, ImportConfig, ImportErrorKind, Warning};
use farsight_testkit::scratch as dir;

/// Rewrites the JSON so the file requires `names` (and lists them as used, in
/// place of the list it had).
fn require(json: &str, names: &[&str]) -> String {
    let mut json = json.to_owned();
    if let Some(start) = json.find("\"extensionsUsed\"") {
        let end = start + json[start..].find(']').expect("a list") + 1;
        let comma = json[end..].starts_with(',') as usize;
        json.replace_range(start..end + comma, "");
    }
    let list = names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(",");
    json.replacen(
        "\"asset\"",
        &format!("\"extensionsRequired\":[{list}],\"extensionsUsed\":[{list}],\"asset\""),
        1,
    )
}

fn ignored(warnings: &[Warning]) -> Vec<String> {
    warnings
        .iter()
        .find_map(|w| match w {
            Warning::RequiredExtensionsIgnored { names } => Some(names.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn a_lamp_with_required_lights_imports_with_a_warning() {
    // The Khronos lamp uses lights and transmission; here it also requires them.
    let src = common::mesh_path("LightsPunctualLamp/LightsPunctualLamp.gltf");
    let plain = import(&src, &ImportConfig::default()).expect("the lamp imports");
    assert!(ignored(&plain.warnings).is_empty());
    let d = dir("lamp");
    std::fs::copy(
        src.with_file_name("LightsPunctualLamp.data.bin"),
        d.join("LightsPunctualLamp.data.bin"),
    )
    .unwrap();
    let json = std::fs::read_to_string(&src).unwrap();
    let names = ["KHR_lights_punctual", "KHR_materials_transmission"];
    let patched = d.join("LightsPunctualLamp.gltf");
    std::fs::write(&patched, require(&json, &names)).unwrap();
    let scene = import(&patched, &ImportConfig::default()).expect("ignorable extensions");
    assert_eq!(ignored(&scene.warnings), names);
    let w = scene
        .warnings
        .iter()
        .find(|w| matches!(w, Warning::RequiredExtensionsIgnored { .. }))
        .unwrap()
        .to_string();
    assert!(
        w.contains("KHR_lights_punctual, KHR_materials_transmission"),
        "{w}"
    );
    assert!(!w.contains('{'), "no Debug form: {w}");
    let tris = |s: &farsight_mesh::ImportedScene| -> usize {
        s.meshes
            .iter()
            .flat_map(|m| &m.submeshes)
            .map(|s| s.indices.len() / 3)
            .sum()
    };
    assert_eq!(tris(&scene), tris(&plain), "the same geometry either way");
}

#[test]
fn crafted_files_ignore_texture_extensions_and_refuse_geometry_ones() {
    let json = std::fs::read_to_string(common::mesh_path(
        "LightsPunctualLamp/LightsPunctualLamp.gltf",
    ))
    .unwrap();
    let d = dir("crafted");
    std::fs::copy(
        common::mesh_path("LightsPunctualLamp/LightsPunctualLamp.data.bin"),
        d.join("LightsPunctualLamp.data.bin"),
    )
    .unwrap();
    let ok = [
        "EXT_texture_webp",
        "KHR_texture_basisu",
        "KHR_materials_variants",
    ];
    let p = d.join("textures.gltf");
    std::fs::write(&p, require(&json, &ok)).unwrap();
    let scene = import(&p, &ImportConfig::default()).expect("texture extensions carry no geometry");
    assert_eq!(ignored(&scene.warnings), ok);

    for (name, geometry) in [
        ("KHR_draco_mesh_compression", true),
        ("EXT_meshopt_compression", true),
        ("KHR_mesh_quantization", true),
        ("VENDOR_unknown_thing", false),
    ] {
        let p = d.join(format!("{name}.gltf"));
        std::fs::write(&p, require(&json, &["KHR_lights_punctual", name])).unwrap();
        let e = import(&p, &ImportConfig::default()).expect_err(name);
        assert_eq!(e.path, p);
        match (&e.kind, geometry) {
            (ImportErrorKind::GeometryExtensionUnsupported { name: n }, true)
            | (ImportErrorKind::UnsupportedRequiredExtension { name: n }, false) => {
                assert_eq!(n, name)
            }
            (other, _) => panic!("{name}: {other:?}"),
        }
        assert!(e.to_string().contains(name), "{e}");
    }
}

//! The material table of a mesh manifest: it round-trips through a file, files
//! written before it read with none, and a damaged table (a value no writer
//! produces, a texture it lacks, a file name that could leave the folder, an
//! embedded image of another format) is a typed error naming what was found.

use farsight_format::{
    AlignedBytes, AlphaMode, ClusterMeshManifest, Container, FileWriter, FormatError, ImageFormat,
    Material, MaterialTable, RecordTag, Texture, TextureData, TextureSlot, UvTransform, Version,
    Wrap, TEXTURE_TAG,
};

/// The eight bytes every PNG starts with, and a little more.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn table(embedded: Option<farsight_format::RecordIndex>) -> MaterialTable {
    let mut helmet = Material::named("helmet");
    helmet.base_color = [0.8, 0.7, 0.6, 1.0];
    helmet.metallic = 0.25;
    helmet.roughness = 0.75;
    helmet.base_color_texture = Some(TextureSlot {
        texture: 0,
        texcoord: 0,
        transform: None,
    });
    helmet.normal_texture = Some(TextureSlot {
        texture: 1,
        texcoord: 1,
        transform: Some(UvTransform {
            offset: [0.5, 0.0],
            rotation: 0.25,
            scale: [2.0, 2.0],
        }),
    });
    helmet.normal_scale = 0.5;
    helmet.occlusion_strength = 0.9;
    helmet.emissive = [1.0, 0.5, 0.0];
    helmet.emissive_strength = 4.0;
    helmet.alpha_mode = AlphaMode::Mask;
    helmet.alpha_cutoff = 0.3;
    helmet.double_sided = true;
    helmet.extras.ior = Some(1.45);
    helmet.extras.clearcoat = Some(0.5);
    let mut glass = Material::named("glass");
    glass.unlit = true;
    glass.alpha_mode = AlphaMode::Blend;
    MaterialTable {
        materials: vec![helmet, glass],
        textures: vec![
            Texture {
                name: "helmet_base.png".into(),
                format: ImageFormat::Png,
                width: 512,
                height: 256,
                data: TextureData::File("0123456789abcdef0123456789abcdef.png".into()),
                mips: vec![TextureData::File(
                    "fedcba9876543210fedcba9876543210.png".into(),
                )],
                wrap_u: Wrap::ClampToEdge,
                wrap_v: Wrap::MirroredRepeat,
            },
            Texture {
                name: "image1".into(),
                format: ImageFormat::Png,
                width: 4,
                height: 4,
                data: match embedded {
                    Some(r) => TextureData::Embedded(r),
                    None => TextureData::File("00000000000000000000000000000000.png".into()),
                },
                mips: Vec::new(),
                wrap_u: Wrap::Repeat,
                wrap_v: Wrap::Repeat,
            },
        ],
    }
}

/// A cluster file (no levels) carrying `edit`ed materials, one embedded image
/// holding `image`.
fn file_with(image: &[u8], edit: &dyn Fn(&mut MaterialTable)) -> Vec<u8> {
    let mut w = FileWriter::new(Version::Streamed);
    let record = w.add_record(TEXTURE_TAG, image);
    let mut t = table(Some(record));
    edit(&mut t);
    let m = ClusterMeshManifest {
        name: "helmet".into(),
        materials: vec!["helmet".into(), "glass".into()],
        material_table: t,
        ..Default::default()
    };
    w.finish(&m).unwrap()
}

fn read(bytes: &[u8]) -> Result<ClusterMeshManifest, FormatError> {
    let bytes = AlignedBytes::from(bytes);
    Container::<ClusterMeshManifest>::read(&bytes).map(|f| f.manifest().clone())
}

#[test]
fn every_material_field_and_texture_reference_round_trips() {
    let bytes = file_with(PNG, &|_| {});
    let m = read(&bytes).unwrap();
    let record = match m.material_table.textures[1].data {
        TextureData::Embedded(r) => r,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(m.material_table, table(Some(record)));
    let aligned = AlignedBytes::from(&bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
    assert_eq!(file.record(record).unwrap().bytes, PNG);
    assert_eq!(m.material_table.get("glass").map(|g| g.unlit), Some(true));
}

/// Manifests without a table (every file written before materials were kept)
/// read with an empty one, and an empty table is left out of the text, so the
/// bytes of a file without materials do not change.
#[test]
fn files_without_materials_read_and_write_as_before() {
    let old = r#"(name: "rock", bounds_min: (0.0, 0.0, 0.0), bounds_max: (1.0, 1.0, 1.0), levels: [], materials: ["stone"])"#;
    let m: ClusterMeshManifest = ron::from_str(old).unwrap();
    assert!(m.material_table.is_empty());
    let text = ron::to_string(&m).unwrap();
    assert!(!text.contains("material_table"), "{text}");
    // A material with glTF's defaults writes only what it must.
    let plain = ron::to_string(&Material::named("stone")).unwrap();
    for absent in ["normal_scale", "alpha_mode", "emissive", "extras", "unlit"] {
        assert!(!plain.contains(absent), "{plain}");
    }
    let back: Material = ron::from_str(&plain).unwrap();
    assert_eq!(back, Material::named("stone"));
}

#[test]
fn a_damaged_material_table_is_a_typed_error() {
    type Damage<'a> = (&'a str, &'a dyn Fn(&mut MaterialTable));
    let materials: [Damage; 8] = [
        ("base_color.g", &|t| t.materials[0].base_color[1] = f32::NAN),
        ("roughness", &|t| t.materials[0].roughness = 1.5),
        ("metallic", &|t| t.materials[1].metallic = -0.1),
        ("emissive_strength", &|t| {
            t.materials[0].emissive_strength = f32::INFINITY
        }),
        ("normal_texture", &|t| {
            t.materials[0].normal_texture.as_mut().unwrap().texture = 7
        }),
        ("base_color_texture", &|t| {
            t.materials[0].base_color_texture.as_mut().unwrap().texcoord = 99
        }),
        ("ior", &|t| t.materials[0].extras.ior = Some(-1.0)),
        ("name", &|t| t.materials[1].name = "helmet".into()),
    ];
    for (field, damage) in materials {
        match read(&file_with(PNG, damage)) {
            Err(FormatError::BadMaterial { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let textures: [Damage; 3] = [
        ("file", &|t| {
            t.textures[0].data = TextureData::File("../../etc/passwd.png".into())
        }),
        ("file", &|t| {
            t.textures[0].mips[0] = TextureData::File("0123456789abcdef0123456789abcdef.jpg".into())
        }),
        ("embedded bytes", &|t| {
            t.textures[1].format = ImageFormat::Jpeg
        }),
    ];
    for (field, damage) in textures {
        match read(&file_with(PNG, damage)) {
            Err(FormatError::BadTexture { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    // Embedded bytes that are no image at all.
    match read(&file_with(b"not an image at all", &|_| {})) {
        Err(FormatError::BadTexture { texture: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
    // A texture slot naming a record of another kind.
    let mut w = FileWriter::new(Version::Streamed);
    let wrong = w.add_record(RecordTag::MESH_COOKED, PNG);
    let m = ClusterMeshManifest {
        name: "helmet".into(),
        material_table: table(Some(wrong)),
        ..Default::default()
    };
    let r = w.finish(&m);
    assert!(
        matches!(r, Err(FormatError::WrongRecordTag { .. })),
        "{r:?}"
    );
}

/// Every format's signature is recognised, and nothing else is.
#[test]
fn image_formats_are_known_by_their_signatures() {
    assert_eq!(ImageFormat::sniff(PNG), Some(ImageFormat::Png));
    assert_eq!(
        ImageFormat::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
        Some(ImageFormat::Jpeg)
    );
    assert_eq!(
        ImageFormat::sniff(b"\xABKTX 20\xBB\r\n\x1A\n\0\0"),
        Some(ImageFormat::Ktx2)
    );
    assert_eq!(
        ImageFormat::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
        Some(ImageFormat::WebP)
    );
    assert_eq!(ImageFormat::sniff(b"GIF89a"), None);
    assert_eq!(ImageFormat::sniff(b""), None);
}

/// glTF's transform: scale, then rotation counter-clockwise, then offset.
#[test]
fn uv_transforms_scale_rotate_then_offset() {
    let t = UvTransform {
        offset: [1.0, 2.0],
        rotation: std::f32::consts::FRAC_PI_2,
        scale: [2.0, 3.0],
    };
    let [u, v] = t.apply([1.0, 1.0]);
    // (2, 3) rotated by the glTF matrix (cos, sin; -sin, cos): (3, -2); offset.
    assert!((u - 4.0).abs() < 1e-5 && (v - 0.0).abs() < 1e-5, "{u} {v}");
    assert_eq!(UvTransform::IDENTITY.apply([0.3, 0.7]), [0.3, 0.7]);
}

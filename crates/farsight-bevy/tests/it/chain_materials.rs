//! A cooked model's materials in Bevy: each file material becomes one
//! `StandardMaterial` with the file's values, shared by every entity drawing the
//! model; textures come from the files beside the cooked file (by path, through the
//! asset server) or from its own records (decoded into `Image` assets); a material
//! the user gives wins. No window, no GPU.

use crate::common::{self, png};

use std::path::Path;
use std::time::Duration;

use bevy::asset::LoadState;
use bevy::image::Image;
use bevy::math::Affine2;
use bevy::mesh::UvChannel;
use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use farsight_bevy::farsight_format::{
    AlphaMode as FileAlphaMode, CookConfig, Material, MaterialExtras, TextureSlot, UvTransform,
};
use farsight_bevy::prelude::*;
use farsight_bevy::{standard_material, FarsightLodChainParts, LodChainAsset};
use farsight_mesh::{cook_file_with, ChainRecords, CookKind, LodChainConfig, TextureConfig};
use farsight_testkit::scratch as temp;

/// A quad of two materials (`bark`: textured, half transparent; `leaf`: a colour)
/// written as OBJ + MTL + PNGs into `src`, cooked as a cooked LOD chain into
/// `out/tree.farsight`, its images beside it unless `embed`.
fn cook_tree(src: &Path, out: &Path, embed: bool) {
    std::fs::write(src.join("bark.png"), png(8, 4)).unwrap();
    std::fs::write(src.join("bump.png"), png(4, 5)).unwrap();
    std::fs::write(
        src.join("tree.mtl"),
        "newmtl bark\nKd 0.4 0.3 0.2\nd 0.5\nmap_Kd bark.png\nmap_Bump bump.png\n\n\
         newmtl leaf\nKd 0.1 0.8 0.1\n",
    )
    .unwrap();
    std::fs::write(
        src.join("tree.obj"),
        "mtllib tree.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
         usemtl bark\nf 1/1 2/2 3/3\nusemtl leaf\nf 1/1 3/3 4/4\n",
    )
    .unwrap();
    let kind = CookKind::LodChain(
        LodChainConfig::default(),
        ChainRecords::Cooked(CookConfig::default()),
    );
    let options = TextureConfig {
        embed,
        ..TextureConfig::default()
    };
    let cooked = cook_file_with(&src.join("tree.obj"), &kind, &options).unwrap();
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(out.join("tree.farsight"), &cooked.bytes).unwrap();
    cooked.looks.write_beside(out).unwrap();
}

/// An app whose asset folder is `root`, with images and standard materials.
fn app(root: &Path) -> App {
    let mut app = common::asset_app(root);
    app.init_asset::<Image>().init_asset::<StandardMaterial>();
    app
}

/// Loads `path` as a chain and updates until it has loaded and been attached.
fn load_chain(app: &mut App, path: &str) -> Handle<LodChainAsset> {
    let h: Handle<LodChainAsset> = app.world().resource::<AssetServer>().load(path.to_owned());
    for _ in 0..5000 {
        app.update();
        match app.world().resource::<AssetServer>().load_state(&h) {
            LoadState::Loaded => {
                app.update();
                app.update();
                return h;
            }
            LoadState::Failed(e) => panic!("{path}: {e}"),
            _ => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    panic!("{path} never loaded");
}

fn chain(app: &App, h: &Handle<LodChainAsset>) -> LodChainAsset {
    let chains = app.world().resource::<Assets<LodChainAsset>>();
    chains.get(h).unwrap().clone()
}

/// The (material name, material handle) each part child of `e` draws with.
fn part_materials(app: &App, e: Entity) -> Vec<Handle<StandardMaterial>> {
    let parts = app
        .world()
        .get::<FarsightLodChainParts>(e)
        .expect("a chain of two materials is split in parts");
    parts
        .0
        .iter()
        .map(|&c| {
            assert!(app.world().get::<FarsightLod>(c).is_some());
            app.world()
                .get::<MeshMaterial3d<StandardMaterial>>(c)
                .expect("each part has its material")
                .0
                .clone()
        })
        .collect()
}

#[test]
fn every_field_of_a_file_material_reaches_the_standard_material() {
    let slot = |texture, texcoord| TextureSlot {
        texture,
        texcoord,
        transform: None,
    };
    let t = UvTransform {
        offset: [0.25, -0.5],
        rotation: 0.3,
        scale: [2.0, 3.0],
    };
    let m = Material {
        base_color: [0.2, 0.4, 0.6, 0.8],
        base_color_texture: Some(slot(0, 1)),
        metallic: 0.25,
        roughness: 0.75,
        metallic_roughness_texture: Some(slot(1, 0)),
        normal_texture: Some(TextureSlot {
            transform: Some(t),
            ..slot(2, 0)
        }),
        occlusion_texture: Some(slot(1, 0)),
        emissive: [0.5, 0.25, 0.0],
        emissive_texture: Some(slot(3, 0)),
        emissive_strength: 4.0,
        alpha_mode: FileAlphaMode::Mask,
        alpha_cutoff: 0.3,
        double_sided: true,
        unlit: true,
        extras: MaterialExtras {
            ior: Some(1.33),
            clearcoat: Some(0.5),
            ..MaterialExtras::default()
        },
        ..Material::named("all")
    };
    let mut images: Assets<Image> = Assets::default();
    let mut asked = Vec::new();
    let s = standard_material(&m, |slot, srgb| {
        asked.push((slot.texture, srgb));
        Some(images.add(Image::default()))
    });
    // Colour textures sRGB, data textures linear, as glTF says.
    assert_eq!(
        asked,
        [(0, true), (1, false), (2, false), (1, false), (3, true)]
    );
    assert_eq!(s.base_color, Color::linear_rgba(0.2, 0.4, 0.6, 0.8));
    assert_eq!((s.metallic, s.perceptual_roughness), (0.25, 0.75));
    assert_eq!(s.emissive, LinearRgba::rgb(2.0, 1.0, 0.0));
    assert_eq!(s.alpha_mode, AlphaMode::Mask(0.3));
    assert!(s.double_sided && s.unlit);
    assert_eq!(s.cull_mode, None);
    assert_eq!((s.ior, s.clearcoat), (1.33, 0.5));
    assert_eq!(s.base_color_channel, UvChannel::Uv1);
    assert_eq!(s.normal_map_channel, UvChannel::Uv0);
    for h in [
        &s.base_color_texture,
        &s.metallic_roughness_texture,
        &s.normal_map_texture,
        &s.occlusion_texture,
        &s.emissive_texture,
    ] {
        assert!(h.is_some());
    }
    // The transform moves a uv as the file's transform does.
    for uv in [[0.0, 0.0], [1.0, 0.0], [0.3, 0.7]] {
        let want = t.apply(uv);
        let got = s.uv_transform.transform_point2(Vec2::from(uv));
        assert!(
            (got - Vec2::from(want)).length() < 1e-5,
            "{uv:?}: {got} vs {want:?}"
        );
    }
    // One-sided, opaque, lit: Bevy's defaults.
    let plain = standard_material(&Material::named("plain"), |_, _| None);
    assert_eq!(plain.cull_mode, StandardMaterial::default().cull_mode);
    assert_eq!(plain.alpha_mode, AlphaMode::Opaque);
    assert!(!plain.unlit && !plain.double_sided);
    assert_eq!(plain.uv_transform, Affine2::IDENTITY);
}

#[test]
fn a_cooked_chain_draws_with_its_files_materials_shared_by_every_instance() {
    let d = temp("beside");
    cook_tree(&d, &d.join("models"), false);
    let mut app = app(&d);
    let h = load_chain(&mut app, "models/tree.farsight");
    let a = app.world_mut().spawn(FarsightLodChain(h.clone())).id();
    let b = app.world_mut().spawn(FarsightLodChain(h.clone())).id();
    app.update();
    app.update();
    let asset = chain(&app, &h);
    let (ma, mb) = (part_materials(&app, a), part_materials(&app, b));
    assert_eq!(ma.len(), 2);
    assert_eq!(ma, mb, "two instances share the materials");
    let names: Vec<_> = asset
        .parts
        .iter()
        .map(|p| p.material_name.as_str())
        .collect();
    assert_eq!(names, ["bark", "leaf"]);
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let bark = materials.get(&ma[0]).unwrap();
    let leaf = materials.get(&ma[1]).unwrap();
    assert_eq!(bark.base_color, Color::linear_rgba(0.4, 0.3, 0.2, 0.5));
    assert_eq!(bark.alpha_mode, AlphaMode::Blend);
    assert_eq!(leaf.base_color, Color::linear_rgba(0.1, 0.8, 0.1, 1.0));
    assert_eq!(leaf.alpha_mode, AlphaMode::Opaque);
    // MTL gives no metalness: the cook writes 0, and so does Bevy's material.
    assert_eq!(bark.metallic, 0.0);
    assert!(!bark.double_sided);
    assert!(leaf.base_color_texture.is_none());
    // The textures are asked for beside the cooked file, by their stored names.
    let stored: Vec<String> = std::fs::read_dir(d.join("models"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png"))
        .collect();
    assert_eq!(stored.len(), 2);
    for tex in [&bark.base_color_texture, &bark.normal_map_texture] {
        let path = tex.as_ref().unwrap().path().expect("loaded by path");
        let name = path.path().file_name().unwrap().to_string_lossy();
        assert_eq!(path.path().parent().unwrap(), Path::new("models"));
        assert!(stored.contains(&name.into_owned()), "{path} not stored");
    }
    assert_ne!(bark.base_color_texture, bark.normal_map_texture);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_embedded_texture_is_an_image_asset_in_its_colour_space() {
    let d = temp("embedded");
    cook_tree(&d.join("."), &d.join("out"), true);
    let mut app = app(&d);
    let h = load_chain(&mut app, "out/tree.farsight");
    let e = app.world_mut().spawn(FarsightLodChain(h)).id();
    app.update();
    app.update();
    let ma = part_materials(&app, e);
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let bark = materials.get(&ma[0]).unwrap();
    let images = app.world().resource::<Assets<Image>>();
    let base = images
        .get(bark.base_color_texture.as_ref().unwrap())
        .expect("the embedded image is an asset");
    assert_eq!((base.width(), base.height()), (8, 8));
    assert_eq!(
        base.texture_descriptor.format,
        TextureFormat::Rgba8UnormSrgb
    );
    let normal = images
        .get(bark.normal_map_texture.as_ref().unwrap())
        .unwrap();
    assert_eq!((normal.width(), normal.height()), (4, 4));
    assert_eq!(normal.texture_descriptor.format, TextureFormat::Rgba8Unorm);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_material_the_user_gives_wins_over_the_files() {
    let d = temp("override");
    cook_tree(&d, &d, false);
    let mut app = app(&d);
    let h = load_chain(&mut app, "tree.farsight");
    let mine = app
        .world_mut()
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::from_color(Color::WHITE));
    let e = app
        .world_mut()
        .spawn((FarsightLodChain(h.clone()), MeshMaterial3d(mine.clone())))
        .id();
    app.update();
    app.update();
    assert!(app.world().get::<FarsightLodChainParts>(e).is_none());
    assert_eq!(
        app.world()
            .get::<MeshMaterial3d<StandardMaterial>>(e)
            .unwrap()
            .0,
        mine
    );
    let asset = chain(&app, &h);
    let lod = app.world().get::<FarsightLod>(e).expect("drawn whole");
    assert_eq!(lod.levels()[0].mesh, asset.levels[0].mesh);
    std::fs::remove_dir_all(&d).unwrap();
}

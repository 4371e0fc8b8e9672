//! Headless `App` tests of the buildings plugin: the loader on full, cooked and
//! corrupt files, the spawn, and the band sweep of docs/design/baked-buildings.md run through Bevy's own
//! visibility-range cull.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bevy::asset::{AssetPlugin, LoadState};
use bevy::camera::primitives::MeshAabb;
use bevy::camera::visibility::{VisibilityRange, VisibleEntityRanges};
use bevy::camera::CameraPlugin;
use bevy::mesh::MeshPlugin;
use bevy::mesh::{Indices, UvChannel, VertexAttributeValues};
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::{
    plan, BuildingAsset, BuildingColliders, BuildingPalette, BuildingPiece, BuildingSpaces,
    FarsightBuilding, FarsightPlugin, ATTRIBUTE_CUT,
};
use farsight_building::bake::{bake, ManifoldKernel};
use farsight_building::{
    dither_coverage, BakedBuilding, Building, ColliderProxy, DrawBand, Element, Geometry, Instance,
    LodCell, LodPolicy, MergeGroup, Part, Pose, Room, Shape, Side,
};
use farsight_testkit::scratch as tmp_dir;

fn app(assets: Option<PathBuf>) -> App {
    let mut app = App::new();
    let asset = match assets {
        Some(p) => AssetPlugin {
            file_path: p.to_string_lossy().into_owned(),
            ..default()
        },
        None => AssetPlugin::default(),
    };
    app.add_plugins((
        MinimalPlugins,
        asset,
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
        FarsightPlugin,
    ));
    app
}

fn boxed(size: [f32; 3], t: [f32; 3]) -> Shape {
    Shape {
        geometry: Geometry::Box { size },
        at: Pose::yawed(t, 0.0),
    }
}

fn solid(id: &str, shape: Shape, binding: &str) -> Element {
    Element {
        id: id.into(),
        shape,
        union: vec![],
        cutters: vec![],
        side: Side::Exterior,
        binding: binding.into(),
        far: false,
    }
}

fn place(id: String, part: &str, t: [f32; 3]) -> Instance {
    Instance {
        id,
        part: part.into(),
        pose: Pose::yawed(t, 0.0),
        attachment: None,
        overrides: BTreeMap::new(),
    }
}

/// A row of `n` 6 m wall bays along +X, each with two windows, a sill (unioned) and a
/// 5 cm fin (separate), a column between bays, a merge group of two walls, a collider
/// per wall and one room.
fn row(n: usize) -> Building {
    let mut wall = solid("wall", boxed([6.0, 3.0, 0.3], [0.0, 1.5, 0.0]), "facade");
    for x in [-1.5, 1.5] {
        wall.cutters.push(boxed([1.8, 1.6, 0.3], [x, 1.6, 0.0]));
    }
    wall.union.push(boxed([6.0, 0.1, 0.2], [0.0, 0.55, 0.25]));
    let fin = solid("fin", boxed([0.05, 3.0, 0.4], [2.9, 1.5, 0.35]), "metal");
    let shaft = solid(
        "shaft",
        Shape {
            geometry: Geometry::Cylinder {
                radius: 0.4,
                height: 6.0,
                segments: 32,
            },
            at: Pose::yawed([0.0, 3.0, 0.0], 0.0),
        },
        "stone",
    );
    let mut instances = Vec::new();
    for i in 0..n {
        let x = i as f32 * 6.0;
        instances.push(place(format!("w{i}"), "wall", [x, 0.0, 0.0]));
        instances.push(place(format!("c{i}"), "column", [x + 3.0, 0.0, 0.5]));
    }
    Building {
        id: "row".into(),
        palette: BTreeMap::from([
            ("facade".into(), "brick".into()),
            ("metal".into(), "steel".into()),
            ("stone".into(), "granite".into()),
        ]),
        parts: vec![
            Part {
                id: "wall".into(),
                storey: Some(0),
                elements: vec![wall, fin],
            },
            Part {
                id: "column".into(),
                storey: None,
                elements: vec![shaft],
            },
        ],
        instances,
        merge_groups: vec![MergeGroup {
            id: "pair".into(),
            instances: vec!["w2".into(), "w3".into()],
        }],
        colliders: vec![ColliderProxy {
            part: "wall".into(),
            center: [0.0, 1.5, 0.0],
            size: [6.0, 3.0, 0.3],
        }],
        rooms: vec![Room {
            id: "hall".into(),
            min: [-3.0, 0.0, -5.0],
            max: [n as f32 * 6.0, 3.0, -0.2],
        }],
        portals: vec![],
    }
}

/// Updates until the handle is loaded or failed (or 30 s pass).
fn wait(app: &mut App, h: &Handle<BuildingAsset>) -> LoadState {
    let start = Instant::now();
    loop {
        app.update();
        let s = app.world().resource::<AssetServer>().load_state(h);
        if matches!(s, LoadState::Loaded | LoadState::Failed(_))
            || start.elapsed() > Duration::from_secs(30)
        {
            return s;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn pieces_of(app: &mut App, building: Entity) -> Vec<(Entity, BuildingPiece, Handle<Mesh>)> {
    let mut q = app
        .world_mut()
        .query::<(Entity, &BuildingPiece, &Mesh3d, &ChildOf)>();
    let mut out: Vec<_> = q
        .iter(app.world())
        .filter(|(_, p, _, c)| p.building == building && c.parent() == building)
        .map(|(e, p, m, _)| (e, p.clone(), m.0.clone()))
        .collect();
    out.sort_by_key(|(_, p, _)| (p.level, p.piece));
    out
}

#[test]
fn the_loader_reads_full_and_cooked_files_alike_and_refuses_a_corrupt_one() {
    let mut ladder = LodPolicy::ladder();
    ladder[2].cell = Some(LodCell::Side(35.0));
    let baked = bake(&row(6), &ladder, &ManifoldKernel).unwrap();
    let dir = tmp_dir("loader");
    let full = baked.write_full().unwrap();
    let cooked = baked
        .write_cooked(&farsight_building::uv_gradient_tangents)
        .unwrap();
    let mut corrupt = full.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x5a;
    std::fs::write(dir.join("row.farsight"), &full).unwrap();
    std::fs::write(dir.join("row.cooked.farsight"), &cooked).unwrap();
    std::fs::write(dir.join("corrupt.farsight"), &corrupt).unwrap();
    std::fs::write(dir.join("short.farsight"), &full[..40]).unwrap();

    let mut app = app(Some(dir.clone()));
    let server = app.world().resource::<AssetServer>().clone();
    let hf: Handle<BuildingAsset> = server.load("row.farsight");
    let hc: Handle<BuildingAsset> = server.load("row.cooked.farsight");
    let hx: Handle<BuildingAsset> = server.load("corrupt.farsight");
    let hs: Handle<BuildingAsset> = server.load("short.farsight");
    assert!(matches!(wait(&mut app, &hf), LoadState::Loaded));
    assert!(matches!(wait(&mut app, &hc), LoadState::Loaded));
    for (h, what) in [(&hx, "checksum"), (&hs, "")] {
        let LoadState::Failed(e) = wait(&mut app, h) else {
            panic!("a corrupt file loaded");
        };
        let msg = e.to_string();
        assert!(
            msg.contains("not a usable building file") && msg.contains(what),
            "{msg}"
        );
    }
    let assets = app.world().resource::<Assets<BuildingAsset>>();
    let (f, c) = (assets.get(&hf).unwrap(), assets.get(&hc).unwrap());
    assert!(!f.cooked && c.cooked);
    assert_eq!(f.id, "row");
    assert_eq!(f.levels, 3);
    assert_eq!(f.pieces.len(), c.pieces.len());
    assert_eq!(f.colliders.len(), 6, "one hull per wall");
    assert_eq!(f.rooms.len(), 1);
    let meshes = app.world().resource::<Assets<Mesh>>();
    for (a, b) in f.pieces.iter().zip(&c.pieces) {
        assert_eq!(a.levels, b.levels);
        // A cooked file keeps every face's provenance in its cooked order, so its
        // bands are the full file's.
        let (fa, ca) = (&a.range, &b.range);
        assert!(
            fa.start_margin == ca.start_margin && fa.end_margin == ca.end_margin,
            "piece {}: full {:?}..{:?}, cooked {:?}..{:?}",
            a.piece,
            fa.start_margin,
            fa.end_margin,
            ca.start_margin,
            ca.end_margin
        );
        assert_eq!(a.transform, b.transform);
        assert_eq!(a.material, b.material);
        // The box is the file's, not recomputed: it holds the (quantised) mesh.
        assert_eq!(a.aabb, b.aabb);
        let m = meshes
            .get(&b.mesh)
            .expect("a cooked mesh is a loaded sub-asset");
        assert!(m.asset_usage == bevy::asset::RenderAssetUsages::RENDER_WORLD);
        for attr in [
            Mesh::ATTRIBUTE_POSITION,
            Mesh::ATTRIBUTE_NORMAL,
            Mesh::ATTRIBUTE_UV_0,
            Mesh::ATTRIBUTE_TANGENT,
        ] {
            assert!(m.contains_attribute(attr.id), "{}", attr.name);
        }
        let computed = m.compute_aabb().unwrap();
        let (lo, hi) = (a.aabb.min(), a.aabb.max());
        let (clo, chi) = (computed.min(), computed.max());
        assert!(clo.cmpge(lo - 1e-2).all() && chi.cmple(hi + 1e-2).all());
        let fm = meshes.get(&a.mesh).unwrap();
        assert_eq!(
            fm.count_vertices() > 0,
            m.count_vertices() > 0,
            "full and cooked meshes both hold vertices"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_spawned_building_has_one_entity_per_band_shared_meshes_and_despawns_whole() {
    let baked = bake(&row(6), &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    let mut app = app(None);
    let asset = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        plan(&baked, |_, m| meshes.add(m)).unwrap()
    };
    let bands = farsight_building::bands(&baked, farsight_building::DEFAULT_CROSSFADE);
    let draws: usize = bands
        .iter()
        .flatten()
        .filter(|b| matches!(b, farsight_building::PieceBand::Draw(_)))
        .count();
    let continues = bands.iter().flatten().count() - draws;
    assert!(continues > 0, "the fin and the column run on unchanged");
    let expected = asset.pieces.len();
    assert_eq!(expected, draws);
    let handle = app
        .world_mut()
        .resource_mut::<Assets<BuildingAsset>>()
        .add(asset.clone());
    let b = app
        .world_mut()
        .spawn((
            FarsightBuilding(handle),
            Transform::from_xyz(100.0, 0.0, 0.0),
        ))
        .id();
    app.update();
    app.update();
    let pieces = pieces_of(&mut app, b);
    assert_eq!(pieces.len(), expected, "one entity per piece per band");
    // Per level: the entities whose band covers it are the level's pieces less none.
    for (n, level) in baked.levels.iter().enumerate() {
        let covering = pieces
            .iter()
            .filter(|(_, p, _)| (p.level..=p.last_level).contains(&n))
            .count();
        assert_eq!(covering, level.pieces().count(), "level {n}");
    }
    // A piece a coarser level left unchanged is one entity spanning both.
    assert!(pieces.iter().any(|(_, p, _)| p.last_level > p.level));
    // Instances of one part at one level share one mesh handle: four ungrouped walls'
    // fins at level 0 are one mesh, and so are six columns.
    let mut by_mesh: BTreeMap<AssetId<Mesh>, usize> = BTreeMap::new();
    for (_, _, m) in &pieces {
        *by_mesh.entry(m.id()).or_default() += 1;
    }
    assert!(by_mesh.values().any(|&c| c >= 6), "{by_mesh:?}");
    assert!(by_mesh.len() < pieces.len() / 2);
    // One material per name, shared.
    let mut mats: BTreeMap<String, BTreeSet<AssetId<StandardMaterial>>> = BTreeMap::new();
    for (e, p, _) in &pieces {
        if let Some(m) = app.world().get::<MeshMaterial3d<StandardMaterial>>(*e) {
            mats.entry(p.material.clone()).or_default().insert(m.id());
        }
    }
    assert!(mats.values().all(|s| s.len() == 1), "{mats:?}");
    // Bands measured to the piece's origin, never to its box.
    for (e, _, _) in &pieces {
        assert!(!app.world().get::<VisibilityRange>(*e).unwrap().use_aabb);
    }
    let colliders = app.world().get::<BuildingColliders>(b).unwrap();
    assert_eq!(colliders.0.len(), 6);
    assert_eq!(app.world().get::<BuildingSpaces>(b).unwrap().rooms.len(), 1);
    // Pieces are not mirrored into farsight's LOD store (their bands cull them).
    let fw = app.world().resource::<farsight_bevy::FarsightWorld>();
    assert_eq!(fw.len(), 0);

    app.world_mut().entity_mut(b).despawn();
    app.update();
    let left = app
        .world_mut()
        .query::<&BuildingPiece>()
        .iter(app.world())
        .count();
    assert_eq!(left, 0, "despawning the building despawns its pieces");
}

/// The per-face cut flag of a Bevy building mesh: for each triangle, whether all
/// three of its vertices carry the flag (`None` when a triangle's vertices disagree).
fn cut_flags(mesh: &Mesh) -> Vec<Option<bool>> {
    let Some(Indices::U32(indices)) = mesh.indices() else {
        panic!("u32 indices")
    };
    let Some(VertexAttributeValues::Float32x2(flags)) = mesh.attribute(ATTRIBUTE_CUT) else {
        return vec![Some(false); indices.len() / 3];
    };
    indices
        .chunks_exact(3)
        .map(|t| {
            let f: Vec<f32> = t.iter().map(|&i| flags[i as usize][0]).collect();
            match f.as_slice() {
                [1.0, 1.0, 1.0] => Some(true),
                [0.0, 0.0, 0.0] => Some(false),
                _ => None,
            }
        })
        .collect()
}

/// Cut faces reach the GPU per face, for element pieces and group batches (a merge
/// group and concatenated cells) alike, from full and cooked files: the Bevy mesh of
/// a piece with cut faces carries the flag on exactly the vertices of those faces,
/// every triangle keeps its corners, and a mesh without cut faces carries nothing
/// more. Pieces with cut faces wear their material's cut variant, whose texture holds
/// the kit's cut shade.
#[test]
fn cut_faces_are_flagged_per_face_and_shaded_by_the_kits_cut_shade() {
    let mut ladder = LodPolicy::ladder();
    ladder[2].cell = Some(LodCell::Side(35.0));
    let baked = bake(&row(6), &ladder, &ManifoldKernel).unwrap();
    let cooked = BakedBuilding::read(
        &baked
            .write_cooked(&farsight_building::uv_gradient_tangents)
            .unwrap(),
    )
    .unwrap();
    for b in [&baked, &cooked] {
        let mut app = app(None);
        let asset = {
            let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
            plan(b, |_, m| meshes.add(m)).unwrap()
        };
        let meshes = app.world().resource::<Assets<Mesh>>();
        let (mut cut_elements, mut cut_batches, mut plain) = (0, 0, 0);
        for spec in &asset.pieces {
            let level = &b.levels[*spec.levels.start()];
            let piece = level.pieces().nth(spec.piece).unwrap();
            let src = piece.mesh;
            let mesh = meshes.get(&spec.mesh).unwrap();
            let want: Vec<Option<bool>> = src.sources.iter().map(|s| Some(s.cut)).collect();
            assert_eq!(
                cut_flags(mesh),
                want,
                "level {:?} piece {}",
                spec.levels,
                spec.piece
            );
            assert_eq!(spec.cut, src.has_cut_faces());
            assert_eq!(mesh.attribute(ATTRIBUTE_CUT).is_some(), spec.cut);
            // The same triangles: each corner's normal and UV as the file has them.
            let Some(Indices::U32(indices)) = mesh.indices() else {
                unreachable!()
            };
            let Some(VertexAttributeValues::Float32x3(normals)) =
                mesh.attribute(Mesh::ATTRIBUTE_NORMAL)
            else {
                unreachable!()
            };
            let Some(VertexAttributeValues::Float32x2(uvs)) = mesh.attribute(Mesh::ATTRIBUTE_UV_0)
            else {
                unreachable!()
            };
            assert_eq!(indices.len(), src.indices.len());
            for (a, b) in indices.iter().zip(&src.indices) {
                assert_eq!(normals[*a as usize], src.normals[*b as usize]);
                assert_eq!(uvs[*a as usize], src.uvs[*b as usize]);
            }
            match (spec.cut, piece.kind) {
                (false, _) => plain += 1,
                (true, farsight_building::PieceKind::Element { .. }) => cut_elements += 1,
                (true, farsight_building::PieceKind::Batch { .. }) => cut_batches += 1,
            }
        }
        assert!(cut_elements > 0 && cut_batches > 0 && plain > 0);

        // Spawned with materials: the cut variant of a name is its material with the
        // kit's shade on the second UV channel.
        let shade = farsight_building::Kit::builtin("dark-city")
            .unwrap()
            .cut_shade;
        app.init_asset::<StandardMaterial>().init_asset::<Image>();
        app.world_mut().resource_mut::<BuildingPalette>().cut_shade = shade;
        let handle = app
            .world_mut()
            .resource_mut::<Assets<BuildingAsset>>()
            .add(asset);
        let e = app.world_mut().spawn(FarsightBuilding(handle)).id();
        app.update();
        app.update();
        let pieces = pieces_of(&mut app, e);
        assert!(!pieces.is_empty());
        let palette = app.world().resource::<BuildingPalette>().clone();
        let materials = app.world().resource::<Assets<StandardMaterial>>();
        let images = app.world().resource::<Assets<Image>>();
        for (entity, piece, _) in &pieces {
            let worn = app
                .world()
                .get::<MeshMaterial3d<StandardMaterial>>(*entity)
                .unwrap();
            assert_eq!(Some(worn.0.clone()), palette.material_of(piece));
            let m = materials.get(&worn.0).unwrap();
            let plain = materials.get(&palette.materials[&piece.material]).unwrap();
            assert_eq!(m.base_color, plain.base_color);
            if piece.cut {
                assert_ne!(worn.0, palette.materials[&piece.material]);
                assert_eq!(m.base_color_channel, UvChannel::Uv1);
                let image = images.get(m.base_color_texture.as_ref().unwrap()).unwrap();
                let texels = image.data.as_ref().unwrap();
                let byte = |v: f32| (v * 255.0).round() as u8;
                assert_eq!(&texels[..4], &[255, 255, 255, 255]);
                assert_eq!(&texels[4..7], &shade.map(byte));
            } else {
                assert_eq!(worn.0, palette.materials[&piece.material]);
                assert!(m.base_color_texture.is_none());
            }
        }
        assert!(pieces.iter().any(|(_, p, _)| p.cut));
    }
}

/// Plans `baked` into the app's assets and spawns it at `at` (spawned on the next
/// update).
fn spawn_planned(app: &mut App, baked: &BakedBuilding, at: Vec3) -> Entity {
    let asset = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        plan(baked, |_, m| meshes.add(m)).unwrap()
    };
    let handle = app
        .world_mut()
        .resource_mut::<Assets<BuildingAsset>>()
        .add(asset);
    app.world_mut()
        .spawn((FarsightBuilding(handle), Transform::from_translation(at)))
        .id()
}

/// The materials every spawned piece of `buildings` wears, with its piece.
fn worn(app: &mut App, buildings: &[Entity]) -> Vec<(BuildingPiece, Handle<StandardMaterial>)> {
    let mut out = Vec::new();
    for &b in buildings {
        for (e, piece, _) in pieces_of(app, b) {
            let m = app
                .world()
                .get::<MeshMaterial3d<StandardMaterial>>(e)
                .unwrap();
            out.push((piece, m.0.clone()));
        }
    }
    out
}

/// Pieces wear their kit's materials: the kit's colour, roughness, metalness and glow
/// (cut variants too), one material per name shared by every building and level
/// (made before the kit came, a material takes the kit's look in place), and the
/// level tint switches every piece to its level's colour and back.
#[test]
fn pieces_wear_their_kits_materials_shared_and_the_level_tint_switches_them() {
    use farsight_bevy::{BuildingLevelTint, LEVEL_TINTS};
    use farsight_building::{Kit, KitMaterial};
    let ladder = LodPolicy::ladder();
    let (short, long) = (
        bake(&row(4), &ladder, &ManifoldKernel).unwrap(),
        bake(&row(5), &ladder, &ManifoldKernel).unwrap(),
    );
    // The corporate kit's other fields, with looks for the names `row` wears.
    let mut kit = Kit::builtin("corporate").unwrap();
    kit.materials = BTreeMap::from([
        (
            "brick".to_string(),
            KitMaterial {
                colour: [0.6, 0.3, 0.2],
                roughness: 0.9,
                metallic: 0.0,
                emissive: 0.0,
            },
        ),
        (
            "steel".to_string(),
            KitMaterial {
                colour: [0.5, 0.52, 0.55],
                roughness: 0.3,
                metallic: 1.0,
                emissive: 0.0,
            },
        ),
        (
            "granite".to_string(),
            KitMaterial {
                colour: [0.4, 0.4, 0.38],
                roughness: 0.65,
                metallic: 0.05,
                emissive: 0.5,
            },
        ),
    ]);
    let mut app = app(None);
    app.init_asset::<StandardMaterial>().init_asset::<Image>();
    let spawn = |app: &mut App, baked: &BakedBuilding, x: f32| {
        let e = spawn_planned(app, baked, Vec3::new(x, 0.0, 0.0));
        app.update();
        app.update();
        e
    };
    // The first building spawns before the kit is given: its names get made-up colours.
    let a = spawn(&mut app, &short, 0.0);
    let before = worn(&mut app, &[a]);
    app.world_mut()
        .resource_scope(|world, mut palette: Mut<BuildingPalette>| {
            world.resource_scope(|world, mut materials: Mut<Assets<StandardMaterial>>| {
                let mut images = world.resource_mut::<Assets<Image>>();
                palette.add_kit(&kit, &mut materials, &mut images);
            });
        });
    let b = spawn(&mut app, &long, 40.0);
    let all = worn(&mut app, &[a, b]);
    assert_eq!(
        &all[..before.len()],
        &before[..],
        "the first building's handles stay"
    );
    let palette = app.world().resource::<BuildingPalette>().clone();
    assert_eq!(palette.cut_shade, kit.cut_shade);
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let images = app.world().resource::<Assets<Image>>();
    let mut by_name: BTreeMap<(String, bool), BTreeSet<AssetId<StandardMaterial>>> =
        BTreeMap::new();
    let mut levels: BTreeMap<AssetId<StandardMaterial>, BTreeSet<(usize, Entity)>> =
        BTreeMap::new();
    for (piece, handle) in &all {
        assert_eq!(Some(handle.clone()), palette.material_of(piece));
        let look = kit.materials[&piece.material];
        let m = materials.get(handle).unwrap();
        let [r, g, b] = look.colour;
        assert_eq!(m.base_color, Color::srgb(r, g, b), "{}", piece.material);
        assert_eq!(m.perceptual_roughness, look.roughness);
        assert_eq!(m.metallic, look.metallic);
        let lin = LinearRgba::from(m.base_color);
        assert_eq!(
            m.emissive,
            LinearRgba::rgb(
                lin.red * look.emissive,
                lin.green * look.emissive,
                lin.blue * look.emissive
            )
        );
        assert_eq!(m.base_color_texture.is_some(), piece.cut);
        if let Some(t) = &m.base_color_texture {
            // The texture made before the kit came now holds the kit's cut shade.
            let texels = images.get(t).unwrap().data.as_ref().unwrap();
            let byte = |v: f32| (v * 255.0).round() as u8;
            assert_eq!(&texels[4..7], &kit.cut_shade.map(byte));
        }
        by_name
            .entry((piece.material.clone(), piece.cut))
            .or_default()
            .insert(handle.id());
        levels
            .entry(handle.id())
            .or_default()
            .insert((piece.level, piece.building));
    }
    // One material per name (and cut variant), whichever building or level wears it;
    // no other material was made.
    assert!(by_name.values().all(|h| h.len() == 1), "{by_name:?}");
    let distinct: BTreeSet<_> = by_name.values().flatten().collect();
    assert_eq!(distinct.len(), by_name.len(), "{by_name:?}");
    assert_eq!(palette.materials.len(), 3);
    assert_eq!(
        materials.len(),
        palette.materials.len() + palette.cut_materials.len()
    );
    assert!(levels.values().any(|s| {
        let l: BTreeSet<usize> = s.iter().map(|x| x.0).collect();
        let e: BTreeSet<Entity> = s.iter().map(|x| x.1).collect();
        l.len() > 1 && e.len() > 1
    }));

    // The tint on: every piece wears its first level's colour, one material a level;
    // a building spawned meanwhile is tinted too.
    app.world_mut().resource_mut::<BuildingLevelTint>().on = true;
    app.update();
    let c = spawn(&mut app, &short, 80.0);
    let tinted = worn(&mut app, &[a, b, c]);
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let mut per_level: BTreeMap<usize, BTreeSet<AssetId<StandardMaterial>>> = BTreeMap::new();
    for (piece, handle) in &tinted {
        let m = materials.get(handle).unwrap();
        assert_eq!(m.base_color, LEVEL_TINTS[piece.level.min(2)]);
        per_level
            .entry(piece.level)
            .or_default()
            .insert(handle.id());
    }
    assert!(per_level.len() > 1);
    assert!(per_level.values().all(|h| h.len() == 1));
    // Off again: the kit's materials, the same handles as before.
    app.world_mut().resource_mut::<BuildingLevelTint>().on = false;
    app.update();
    let back = worn(&mut app, &[a, b]);
    assert_eq!(back, all);
    let c_back = worn(&mut app, &[c]);
    assert!(c_back
        .iter()
        .all(|(p, h)| Some(h.clone()) == palette.material_of(p)));
}

/// Bevy 0.19's dither level for an entity at `d` from the view (`mesh_functions.wgsl`,
/// `get_visibility_range_dither_level`, bevy_pbr 0.19.1), with WGSL's `round` (half to
/// even) and its saturating f32 -> i32 conversion.
fn shader_dither_level(r: &VisibilityRange, d: f32) -> i32 {
    let offset = if d >= r.end_margin.start { 0 } else { -16 };
    let (x, y) = if d >= r.end_margin.start {
        (r.end_margin.start, r.end_margin.end)
    } else {
        (r.start_margin.start, r.start_margin.end)
    };
    let level = ((d - x) / (y - x) * 16.0).round_ties_even() as i32;
    offset + level.clamp(0, 16)
}

/// The 4 x 4 threshold map of `pbr_functions.wgsl` (`DITHER_THRESHOLD_MAP`).
const THRESHOLDS: [u32; 4] = [0x0a020800, 0x060e040c, 0x09010b03, 0x050d070f];

/// Which of the sixteen pixels of the 4 x 4 pattern a fragment of the entity is kept
/// at (`visibility_range_dither` in `pbr_functions.wgsl`): bit `y * 4 + x`.
fn shader_coverage(dither: i32) -> u16 {
    let mut mask = 0u16;
    for y in 0..4u32 {
        for x in 0..4u32 {
            let t = ((THRESHOLDS[y as usize] >> (x * 8)) & 0xff) as i32;
            let discard = if dither == 0 {
                false
            } else if dither <= -16 || dither >= 16 {
                true
            } else {
                (dither >= 0 && dither + t >= 16) || (dither < 0 && 1 + dither + t <= 0)
            };
            if !discard {
                mask |= 1 << (y * 4 + x);
            }
        }
    }
    mask
}

fn ladders() -> Vec<(&'static str, Vec<LodPolicy>)> {
    let placed = LodPolicy::ladder();
    let mut far_cells = LodPolicy::ladder();
    far_cells[2].cell = Some(LodCell::Side(35.0));
    let mut cells_to_cells = LodPolicy::ladder();
    cells_to_cells[1].cell = Some(LodCell::Side(20.0));
    cells_to_cells[2].cell = Some(LodCell::Side(80.0));
    let mut cells_then_placed = LodPolicy::ladder();
    cells_then_placed[1].cell = Some(LodCell::Whole);
    vec![
        ("placed", placed),
        ("far cells of 35 m", far_cells),
        ("20 m cells to 80 m cells", cells_to_cells),
        ("whole building, then placed", cells_then_placed),
    ]
}

/// Sweeps cameras past the row through Bevy's `check_visibility_ranges` (32 views a
/// frame) and checks every wall is wholly covered by the shader's dither over the
/// entities drawing it. Returns the doubly drawn metres, summed over walls.
fn sweep(baked: &BakedBuilding, walls: &[String], cameras: &[Vec3], step: f32) -> f64 {
    let mut app = app(None);
    // The building is placed away from the origin, so Bevy's own transforms matter.
    let at = Vec3::new(-40.0, 0.0, 25.0);
    let b = spawn_planned(&mut app, baked, at);
    app.update();
    let pieces = pieces_of(&mut app, b);
    // Which walls each entity draws, from the piece it was spawned from.
    let mut by_wall: BTreeMap<&str, Vec<Entity>> = BTreeMap::new();
    let mut wall_entities = Vec::new();
    for (e, p, _) in &pieces {
        let level = baked.level(p.level).unwrap();
        let piece = level.pieces().nth(p.piece).unwrap();
        let mut any = false;
        for (inst, el) in level.placed_elements(&piece) {
            if el == "wall" {
                let w = walls.iter().find(|w| **w == inst).unwrap();
                by_wall.entry(w.as_str()).or_default().push(*e);
                any = true;
            }
        }
        if any {
            wall_entities.push(*e);
        }
    }
    assert_eq!(by_wall.len(), walls.len(), "every wall has a drawer");
    let views: Vec<Entity> = (0..32)
        .map(|_| {
            app.world_mut()
                .spawn((Camera3d::default(), Transform::default()))
                .id()
        })
        .collect();
    let mut doubled = 0.0f64;
    for chunk in cameras.chunks(32) {
        for (v, c) in views.iter().zip(chunk) {
            *app.world_mut().get_mut::<Transform>(*v).unwrap() =
                Transform::from_translation(at + *c);
        }
        app.update();
        let world = app.world();
        let ranges = world.resource::<VisibleEntityRanges>();
        for (v, c) in views.iter().zip(chunk) {
            let cam = at + *c;
            assert_eq!(world.get::<GlobalTransform>(*v).unwrap().translation(), cam);
            for w in walls {
                let (mut mask, mut drawing) = (0u16, 0);
                for &e in &by_wall[w.as_str()] {
                    let r = world.get::<VisibilityRange>(e).unwrap();
                    // Measured as Bevy measures: view to the entity's translation.
                    let origin = world.get::<GlobalTransform>(e).unwrap();
                    let view = world.get::<GlobalTransform>(*v).unwrap();
                    let d = (view.translation_vec3a() - origin.translation_vec3a()).length();
                    let in_range = ranges.entity_is_in_range_of_view(e, *v);
                    assert_eq!(in_range, r.is_visible_at_all(d));
                    if !in_range {
                        continue;
                    }
                    let m = shader_coverage(shader_dither_level(r, d));
                    // The library's reproduction agrees with the shader's rule
                    // (its bit order is by threshold, so compare counts).
                    let band = DrawBand {
                        start_margin: r.start_margin.clone(),
                        end_margin: r.end_margin.clone(),
                    };
                    assert_eq!(m.count_ones(), dither_coverage(&band, d).count_ones());
                    if m != 0 {
                        drawing += 1;
                    }
                    mask |= m;
                }
                assert_eq!(mask, u16::MAX, "wall {w} not wholly drawn from {cam:?}");
                if drawing > 1 {
                    doubled += step as f64;
                }
            }
        }
    }
    doubled
}

#[test]
fn every_wall_is_wholly_drawn_from_everywhere_with_bevys_cull_under_four_ladders() {
    let b = row(40);
    let walls: Vec<String> = b
        .instances
        .iter()
        .filter(|i| i.part == "wall")
        .map(|i| i.id.clone())
        .collect();
    // Lines parallel to the row at several offsets (through every handover), and an
    // approach along -Z toward its middle.
    let step = 0.5f32;
    let mut cameras = Vec::new();
    for offset in [3.0f32, 40.0, 120.0, 245.0, 300.0] {
        let mut x = -700.0;
        while x < 800.0 {
            cameras.push(Vec3::new(x, 1.7, -offset));
            x += step;
        }
    }
    let mut z = -900.0;
    while z < -0.5 {
        cameras.push(Vec3::new(117.0, 1.7, z));
        z += step;
    }
    for (name, ladder) in ladders() {
        let baked = bake(&b, &ladder, &ManifoldKernel).unwrap();
        let doubled = sweep(&baked, &walls, &cameras, step);
        println!(
            "{name}: {doubled:.1} doubly drawn metres over {} walls and {} camera positions",
            walls.len(),
            cameras.len()
        );
        // Only crossfades and pushed handovers draw twice: never most of the sweep.
        let total = cameras.len() as f64 * walls.len() as f64 * step as f64;
        assert!(doubled < total * 0.5, "{name}: {doubled} of {total}");
    }
}

#[test]
fn the_shaders_dither_levels_complement_across_a_handover() {
    let near = VisibilityRange {
        start_margin: 0.0..0.0,
        end_margin: 250.0..275.0,
        use_aabb: false,
    };
    let far = VisibilityRange {
        start_margin: 250.0..275.0,
        end_margin: f32::INFINITY..f32::INFINITY,
        use_aabb: false,
    };
    assert_eq!(shader_coverage(shader_dither_level(&near, 100.0)), u16::MAX);
    assert_eq!(shader_coverage(shader_dither_level(&far, 100.0)), 0);
    for d in [250.0, 251.0, 255.3, 262.5, 270.0, 274.9] {
        let (a, b) = (
            shader_coverage(shader_dither_level(&near, d)),
            shader_coverage(shader_dither_level(&far, d)),
        );
        assert_eq!(a | b, u16::MAX, "{d}");
        assert_eq!(a & b, 0, "{d}");
    }
    assert_eq!(
        shader_coverage(shader_dither_level(&near, 262.5)).count_ones(),
        8
    );
}

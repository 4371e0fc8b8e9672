//! A cluster model's materials in Bevy: one `StandardMaterial` per file material,
//! shared by every instance; each cluster drawn by the part of the material it
//! names; textures through the asset server where the file lies under the asset
//! folder, read and decoded from the file or its folder elsewhere; tangents where a
//! normal map reads them; a material the user gives wins. No window, no GPU.

use crate::common::{self, png};

use std::path::{Path, PathBuf};
use std::time::Duration;

use bevy::mesh::{Indices, VertexAttributeValues};
use bevy::prelude::*;
use farsight_bevy::prelude::*;
use farsight_bevy::{ClusterCut, ClusterModelAsset, PendingImages};
use farsight_mesh::{cook_file_with, ClusterConfig, CookKind, TextureConfig};
use farsight_testkit::scratch as temp;

/// Cells a side of the grid [`cook_grid`] writes.
const CELLS: usize = 24;

/// A flat grid of `CELLS` x `CELLS` quads in the xy plane (0..1), its left half
/// (x < 0.5) of material `bark` (a texture and a normal map), its right half of
/// `leaf` (a colour), written as OBJ + MTL + PNGs into `src` and cooked as a
/// cluster file into `out/grid.farsight`, its images beside it unless `embed`.
fn cook_grid(src: &Path, out: &Path, embed: bool) -> PathBuf {
    std::fs::create_dir_all(src).unwrap();
    std::fs::write(src.join("bark.png"), png(8, 4)).unwrap();
    std::fs::write(src.join("bump.png"), png(4, 5)).unwrap();
    std::fs::write(
        src.join("grid.mtl"),
        "newmtl bark\nKd 0.4 0.3 0.2\nmap_Kd bark.png\nmap_Bump bump.png\n\n\
         newmtl leaf\nKd 0.1 0.8 0.1\n",
    )
    .unwrap();
    let mut obj = String::from("mtllib grid.mtl\n");
    let n = CELLS + 1;
    for j in 0..n {
        for i in 0..n {
            let (x, y) = (i as f32 / CELLS as f32, j as f32 / CELLS as f32);
            // A gentle bump so the simplifier has something to keep.
            let z = 0.02 * ((x * 9.0).sin() + (y * 7.0).cos());
            obj += &format!("v {x} {y} {z}\nvt {x} {y}\n");
        }
    }
    for material in ["bark", "leaf"] {
        obj += &format!("usemtl {material}\n");
        for j in 0..CELLS {
            for i in 0..CELLS {
                if (i < CELLS / 2) != (material == "bark") {
                    continue;
                }
                let v = |i: usize, j: usize| j * n + i + 1;
                let (a, b, c, d) = (v(i, j), v(i + 1, j), v(i + 1, j + 1), v(i, j + 1));
                obj += &format!("f {a}/{a} {b}/{b} {c}/{c}\nf {a}/{a} {c}/{c} {d}/{d}\n");
            }
        }
    }
    std::fs::write(src.join("grid.obj"), obj).unwrap();
    let options = TextureConfig {
        embed,
        ..TextureConfig::default()
    };
    let kind = CookKind::Clusters(ClusterConfig::default());
    let cooked = cook_file_with(&src.join("grid.obj"), &kind, &options).unwrap();
    std::fs::create_dir_all(out).unwrap();
    let file = out.join("grid.farsight");
    std::fs::write(&file, &cooked.bytes).unwrap();
    cooked.looks.write_beside(out).unwrap();
    file
}

/// An app whose asset folder is `root`, with images and standard materials, and a
/// camera looking at the grid from `distance`.
fn app(root: &Path, distance: f32) -> App {
    let mut app = common::asset_app(root);
    app.init_asset::<Image>().init_asset::<StandardMaterial>();
    app.world_mut().spawn((
        Camera3d::default(),
        Transform::from_xyz(0.5, 0.5, distance).looking_at(Vec3::new(0.5, 0.5, 0.0), Vec3::Y),
    ));
    app
}

/// Frames until every model has drawn, no level is streaming and no image is
/// being decoded.
fn settle(app: &mut App) {
    let mut quiet = 0;
    for _ in 0..5000 {
        app.update();
        let w = app.world_mut();
        let drawn = w
            .query::<&ClusterCut>()
            .iter(w)
            .all(|c| c.finest_resident.is_some());
        let busy =
            w.resource::<FarsightClusters>().busy() || !w.resource::<PendingImages>().is_empty();
        quiet = if drawn && !busy { quiet + 1 } else { 0 };
        if quiet > 5 {
            return;
        }
        w.resource::<FarsightClusters>()
            .wait_for_io(Duration::from_millis(2));
    }
    panic!("never settled");
}

fn cut_of(app: &App, e: Entity) -> ClusterCut {
    app.world().get::<ClusterCut>(e).unwrap().clone()
}

/// What [`mesh_data`] reads of a mesh: positions, tangents (if any), triangles.
type MeshData = (Vec<[f32; 3]>, Option<Vec<[f32; 4]>>, usize);

/// The positions and tangents (if any) of `mesh`, and its triangles.
fn mesh_data(app: &App, mesh: &Handle<Mesh>) -> MeshData {
    let meshes = app.world().resource::<Assets<Mesh>>();
    let m = meshes.get(mesh).unwrap();
    let Some(VertexAttributeValues::Float32x3(p)) = m.attribute(Mesh::ATTRIBUTE_POSITION) else {
        panic!("no positions")
    };
    let t = match m.attribute(Mesh::ATTRIBUTE_TANGENT) {
        Some(VertexAttributeValues::Float32x4(t)) => Some(t.clone()),
        _ => None,
    };
    let Some(Indices::U32(idx)) = m.indices() else {
        panic!("no indices")
    };
    (p.clone(), t, idx.len() / 3)
}

/// The grid drawn from its path, outside the asset folder: one part per material,
/// each drawing only its clusters (bark's left of x = 0.5, leaf's right of it) with
/// the file's material, the two instances sharing the same materials; bark's
/// texture read from beside the file and decoded into the image its material holds,
/// its normal map's tangents made by the cook (+x, along u).
#[test]
fn each_cluster_draws_with_its_files_material_shared_by_every_instance() {
    let d = temp("cluster-materials-path");
    let file = cook_grid(&d.join("src"), &d.join("cooked"), false);
    let elsewhere = d.join("assets");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut app = app(&elsewhere, 1.2);
    let a = app.world_mut().spawn(FarsightClusterModel::new(&file)).id();
    let b = app
        .world_mut()
        .spawn((
            FarsightClusterModel::new(&file),
            Transform::from_xyz(2.0, 0.0, 0.0),
        ))
        .id();
    settle(&mut app);
    let clusters = app.world().resource::<FarsightClusters>();
    let (ca, cb) = (cut_of(&app, a), cut_of(&app, b));
    let m = ca.model.unwrap();
    let file_materials = clusters.materials(m).expect("the file's materials").clone();
    let names: Vec<&str> = file_materials
        .materials
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["bark", "leaf"]);
    assert!(ca.mesh.is_none(), "two materials: drawn in parts");
    assert_eq!(ca.parts.len(), 2);
    let geometry_names = clusters.models()[m as usize].geometry().materials.to_vec();
    let mut total = 0;
    for (cut, e) in [(&ca, a), (&cb, b)] {
        for part in &cut.parts {
            let name = &geometry_names[part.material as usize];
            let child = app.world().entity(part.entity);
            assert_eq!(child.get::<ChildOf>().map(|c| c.parent()), Some(e));
            let mat = &child.get::<MeshMaterial3d<StandardMaterial>>().unwrap().0;
            assert_eq!(
                Some(mat),
                file_materials.get(name),
                "{name}: the file's, shared"
            );
            let (p, t, tris) = mesh_data(&app, &part.mesh);
            assert_eq!(tris as u32, part.triangles);
            assert!(tris > 0, "{name}: drawn");
            let left = name == "bark";
            for q in &p {
                assert!(
                    if left {
                        q[0] <= 0.5 + 1e-3
                    } else {
                        q[0] >= 0.5 - 1e-3
                    },
                    "{name}: a vertex at x {} is the other material's",
                    q[0]
                );
            }
            // Every part carries tangents when some material of the model has a
            // normal map; bark's (normal-mapped) are the cook's, along +u = +x.
            let t = t.expect("tangents for the normal map");
            if left {
                for v in &t {
                    assert!(v[0] > 0.95 && v[3] == 1.0, "{v:?}");
                }
            }
        }
        total += cut.triangles;
        assert_eq!(
            cut.triangles,
            cut.parts.iter().map(|p| p.triangles).sum::<u32>()
        );
    }
    assert!(total > 0);
    // Bark's texture: the PNG beside the file, decoded into the handle it holds.
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let bark = materials.get(file_materials.get("bark").unwrap()).unwrap();
    let leaf = materials.get(file_materials.get("leaf").unwrap()).unwrap();
    assert!(leaf.base_color_texture.is_none());
    let images = app.world().resource::<Assets<Image>>();
    let tex = images
        .get(bark.base_color_texture.as_ref().expect("bark is textured"))
        .expect("decoded from beside the file");
    assert_eq!(tex.size(), UVec2::new(8, 8));
    let want = image::load_from_memory(&png(8, 4)).unwrap().to_rgba8();
    assert_eq!(tex.data.as_deref(), Some(want.as_raw().as_slice()));
    let normal = images
        .get(bark.normal_map_texture.as_ref().unwrap())
        .unwrap();
    assert_eq!(normal.size(), UVec2::new(4, 4));
}

/// Under the asset folder, the texture is an asset the asset server loads by its
/// path relative to the folder (so any other load of the same image shares it),
/// not one decoded here. (Loading it is Bevy's image loader's work: the `helmet`
/// example's pictures in `.ci/screenshots` show it drawn.)
#[test]
fn a_texture_under_the_asset_folder_loads_through_the_asset_server() {
    let d = temp("cluster-materials-root");
    let file = cook_grid(&d.join("src"), &d.join("assets/models"), false);
    let mut app = app(&d.join("assets"), 1.2);
    app.world_mut().spawn(FarsightClusterModel::new(&file));
    app.update();
    assert!(
        app.world().resource::<PendingImages>().is_empty(),
        "nothing decoded here"
    );
    settle(&mut app);
    let clusters = app.world().resource::<FarsightClusters>();
    let mats = clusters.materials(0).unwrap().clone();
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let bark = materials.get(mats.get("bark").unwrap()).unwrap();
    let tex = bark.base_color_texture.clone().unwrap();
    let server = app.world().resource::<AssetServer>().clone();
    let path = server.get_path(&tex).expect("an asset path");
    assert!(path.path().starts_with("models"), "{path}");
    assert!(
        path.path().extension().is_some_and(|e| e == "png"),
        "{path}"
    );
    assert!(d.join("assets").join(path.path()).exists(), "{path}");
    // The same image loaded by path is the same asset.
    let again: Handle<Image> = server.load(path.clone());
    assert_eq!(again.id(), tex.id());
}

/// Embedded in the file: decoded from its record (checked against the file's
/// checksum), for a model opened by path and for one loaded as an asset.
#[test]
fn an_embedded_texture_is_decoded_from_the_cluster_file() {
    let d = temp("cluster-materials-embedded");
    let file = cook_grid(&d.join("src"), &d.join("assets"), true);
    let names: Vec<_> = std::fs::read_dir(d.join("assets")).unwrap().collect();
    assert_eq!(names.len(), 1, "the images are inside the file");
    let mut app = app(&d.join("assets"), 1.2);
    let handle: Handle<ClusterModelAsset> =
        app.world().resource::<AssetServer>().load("grid.farsight");
    app.world_mut().spawn(FarsightClusterModel::new(&file));
    app.world_mut()
        .spawn(FarsightClusterModel::from_asset(handle));
    settle(&mut app);
    let clusters = app.world().resource::<FarsightClusters>();
    assert_eq!(clusters.models().len(), 1, "one file, one model");
    let mats = clusters.materials(0).unwrap().clone();
    let materials = app.world().resource::<Assets<StandardMaterial>>();
    let bark = materials.get(mats.get("bark").unwrap()).unwrap();
    let images = app.world().resource::<Assets<Image>>();
    let tex = images
        .get(bark.base_color_texture.as_ref().unwrap())
        .unwrap();
    let want = image::load_from_memory(&png(8, 4)).unwrap().to_rgba8();
    assert_eq!(tex.data.as_deref(), Some(want.as_raw().as_slice()));
    let mut q = app.world_mut().query::<&ClusterCut>();
    let cuts: Vec<ClusterCut> = q.iter(app.world()).cloned().collect();
    assert_eq!(cuts.len(), 2);
    for c in &cuts {
        assert_eq!(c.parts.len(), 2, "both drawn with the file's materials");
    }
}

/// A `StandardMaterial` of the user's on the entity: one mesh draws every cluster
/// with it, no parts. Level tints (the debug view) colour the vertices by level and
/// keep the material.
#[test]
fn a_material_the_user_gives_wins_and_level_tints_are_vertex_colours() {
    let d = temp("cluster-materials-user");
    let file = cook_grid(&d.join("src"), &d.join("cooked"), false);
    let mut app = app(&d, 1.2);
    let mine = app
        .world_mut()
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::default());
    let tint = Color::srgb(1.0, 0.0, 1.0);
    let e = app
        .world_mut()
        .spawn((
            FarsightClusterModel::new(&file).with_level_colors(vec![tint]),
            MeshMaterial3d(mine.clone()),
        ))
        .id();
    settle(&mut app);
    let cut = cut_of(&app, e);
    assert!(cut.parts.is_empty());
    assert_eq!(
        app.world()
            .get::<MeshMaterial3d<StandardMaterial>>(e)
            .unwrap()
            .0,
        mine
    );
    let meshes = app.world().resource::<Assets<Mesh>>();
    let mesh = meshes.get(cut.mesh.as_ref().unwrap()).unwrap();
    let Some(VertexAttributeValues::Float32x4(c)) = mesh.attribute(Mesh::ATTRIBUTE_COLOR) else {
        panic!("no colours")
    };
    let want = tint.to_linear().to_f32_array();
    assert!(!c.is_empty() && c.iter().all(|v| *v == want));
    let (_, _, tris) = mesh_data(&app, cut.mesh.as_ref().unwrap());
    assert_eq!(tris as u32, cut.triangles);
}

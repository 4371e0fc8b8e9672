//! Section 6 of issue 4 on the real meshes and a generated one: cook, write, read
//! back through the run-time crates, and check the DAG from the file alone.

use crate::common;

use std::collections::HashMap;

use farsight_cluster::{model_levels, ClusterDag, CutView, InstanceBounds, LevelMetric, LevelView};
use farsight_format::{AlignedBytes, ClusterLevel, ClusterMeshManifest, Container};
use farsight_lod::ProjectionInfo;
use farsight_mesh::{cook_clusters, import_prepared, ClusterConfig, ClusterMesh, Mesh};
use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};

struct Decoded {
    /// Per level: triangles as welded position ids (quantised positions).
    level_tris: Vec<Vec<[u32; 3]>>,
    /// Per level, per cluster: range of triangles in `level_tris`.
    cluster_tris: Vec<Vec<std::ops::Range<usize>>>,
    dag: ClusterDag,
    errors: Vec<f32>,
}

fn decode(bytes: &[u8]) -> Decoded {
    decode_geometry(bytes, 0)
}

/// The geometries of a cluster file (1 but for a cooked scene of several meshes).
fn geometry_count(bytes: &[u8]) -> usize {
    let aligned = AlignedBytes::from(bytes);
    let file = Container::<ClusterMeshManifest>::read(&aligned).expect("our own file reads back");
    file.manifest().geometry_count()
}

fn decode_geometry(bytes: &[u8], geometry: usize) -> Decoded {
    let aligned = AlignedBytes::from(bytes);
    let file = Container::<ClusterMeshManifest>::read(&aligned).expect("our own file reads back");
    let mut ids: HashMap<[u16; 3], u32> = HashMap::new();
    let mut level_tris = Vec::new();
    let mut cluster_tris = Vec::new();
    let mut parsed = Vec::new();
    let manifest = file.manifest();
    for entry in manifest
        .geometry(geometry)
        .expect("a geometry of the file")
        .levels
    {
        let record = file.record(entry.record).unwrap();
        let level = ClusterLevel::parse(record.bytes).unwrap();
        assert_eq!(level.header.max_parent_error, entry.max_parent_error);
        let mut tris = Vec::new();
        let mut ranges = Vec::new();
        for (c, info) in level.clusters.iter().enumerate() {
            let start = tris.len();
            let slot = &level.indices[c * 384..(c + 1) * 384];
            for t in slot.chunks_exact(3).take(info.triangle_count as usize) {
                let mut id = |i: u32| {
                    let p = level.vertices[i as usize].position;
                    let n = ids.len() as u32;
                    *ids.entry(p).or_insert(n)
                };
                tris.push([id(t[0]), id(t[1]), id(t[2])]);
            }
            // Padding is zero-area.
            for t in slot.chunks_exact(3).skip(info.triangle_count as usize) {
                assert!(t[0] == t[1] && t[1] == t[2]);
            }
            ranges.push(start..tris.len());
        }
        level_tris.push(tris);
        cluster_tris.push(ranges);
        parsed.push(level);
    }
    let dag = ClusterDag::from_levels(&parsed).expect("cooked DAG is well formed");
    let errors = dag.level_max_parent_errors();
    Decoded {
        level_tris,
        cluster_tris,
        dag,
        errors,
    }
}

fn edge_counts<'a>(tris: impl Iterator<Item = &'a [u32; 3]>) -> HashMap<(u32, u32), u32> {
    let mut m = HashMap::new();
    for t in tris {
        for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
            if a != b {
                *m.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
    }
    m
}

/// Position ids that belong to a connected part of LOD0 with an open border.
fn open_parts(lod0: &[[u32; 3]]) -> std::collections::HashSet<u32> {
    let n = lod0.iter().flatten().max().map_or(0, |&m| m as usize + 1);
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for t in lod0 {
        for (a, b) in [(t[0], t[1]), (t[1], t[2])] {
            let (ra, rb) = (find(&mut parent, a as usize), find(&mut parent, b as usize));
            parent[ra] = rb;
        }
    }
    let mut open_roots = std::collections::HashSet::new();
    for ((a, _), c) in edge_counts(lod0.iter()) {
        if c == 1 {
            open_roots.insert(find(&mut parent, a as usize));
        }
    }
    (0..n as u32)
        .filter(|&v| open_roots.contains(&find(&mut parent, v as usize)))
        .collect()
}

/// Open edges of `tris` that are cracks: on a closed part of LOD0, or open in no
/// level alone.
fn cracks(
    open_part: &std::collections::HashSet<u32>,
    level_open: &std::collections::HashSet<(u32, u32)>,
    tris: &[[u32; 3]],
) -> usize {
    edge_counts(tris.iter())
        .into_iter()
        .filter(|&((a, b), c)| {
            c == 1
                && !(open_part.contains(&a)
                    && open_part.contains(&b)
                    && level_open.contains(&(a, b)))
        })
        .count()
}

fn cut_tris(d: &Decoded, cut: &[u32]) -> Vec<[u32; 3]> {
    let mut out = Vec::new();
    for &c in cut {
        let cl = &d.dag.clusters[c as usize];
        let r = d.cluster_tris[cl.level as usize][cl.index_in_level as usize].clone();
        out.extend_from_slice(&d.level_tris[cl.level as usize][r]);
    }
    out
}

fn check_mesh(name: &str, mesh: &Mesh) -> ClusterMesh {
    let cooked =
        cook_clusters(mesh, &ClusterConfig::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes = cooked.encode().unwrap();
    // Cooking twice gives identical bytes, whatever the thread count.
    let again = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| {
            cook_clusters(mesh, &ClusterConfig::default())
                .unwrap()
                .encode()
                .unwrap()
        });
    assert!(bytes == again, "{name}: cooking twice gave different bytes");
    // The fused cook (checks beside the encoder, what `cook_file` runs) agrees.
    let (fused_mesh, fused) =
        farsight_mesh::cook_clusters_encoded(mesh, &ClusterConfig::default()).unwrap();
    assert!(
        fused == bytes && fused_mesh == cooked,
        "{name}: fused cook differs"
    );

    let d = decode(&bytes);
    let n = d.level_tris.len();
    assert!(n >= 3, "{name}: only {n} levels");
    // Monotonic error over every parent/child pair: every cluster's own error is at
    // most its group's (checked by ClusterDag), and the clusters simplified from a
    // group carry exactly that group's error as their own.
    for c in &d.dag.clusters {
        let g = &d.dag.groups[c.group as usize];
        assert!(
            c.error <= g.error,
            "{name}: cluster error {} above parent {}",
            c.error,
            g.error
        );
    }
    let finer_errors: std::collections::HashSet<u32> =
        d.dag.groups.iter().map(|g| g.error.to_bits()).collect();
    for c in d.dag.clusters.iter().filter(|c| c.level > 0) {
        assert!(
            finer_errors.contains(&c.error.to_bits()),
            "{name}: a coarse cluster's error matches no group"
        );
    }
    for w in d.errors.windows(2) {
        assert!(
            w[0] <= w[1],
            "{name}: level errors {:?} not ordered",
            d.errors
        );
    }
    assert_eq!(
        *d.errors.last().unwrap(),
        f32::MAX,
        "{name}: the coarsest level must always be needed"
    );

    // Each level alone is complete: closed parts of LOD0 stay closed.
    let open_part = open_parts(&d.level_tris[0]);
    let mut level_open = std::collections::HashSet::new();
    for (l, tris) in d.level_tris.iter().enumerate() {
        for ((a, b), c) in edge_counts(tris.iter()) {
            if c == 1 {
                assert!(
                    open_part.contains(&a) && open_part.contains(&b),
                    "{name}: level {l} opens a closed part at {a}-{b}"
                );
                level_open.insert((a, b));
            }
        }
    }
    // Triangles roughly halve per level (copies of stuck groups excluded by using
    // the cooked counts; the last two levels may stop short).
    for l in 1..n.saturating_sub(2) {
        let (a, b) = (
            cooked.levels[l - 1].triangle_count() as f32,
            cooked.levels[l].triangle_count() as f32,
        );
        let r = b / a;
        assert!(
            (0.35..=0.75).contains(&r),
            "{name}: level {l} keeps {r} of level {}",
            l - 1
        );
    }

    // Every uniform cut is watertight.
    let mut cut = Vec::new();
    let mut flat = Vec::new();
    let mut thresholds: Vec<f32> = d.errors.iter().copied().filter(|&e| e < f32::MAX).collect();
    thresholds.push(0.0);
    let far = Vec3::splat(1e9);
    for &t in &thresholds {
        // A uniform cut: an orthographic view whose pixel equals one model unit at t.
        let view = CutView {
            camera_local: far,
            scale: 1.0,
            projection: ProjectionInfo {
                p11: 2.0,
                orthographic: true,
            },
            viewport_height: 1.0,
            threshold_px: t,
        };
        d.dag.cut(&view, &mut cut);
        d.dag.cut_flat(&view, &mut flat);
        assert_eq!(
            cut, flat,
            "{name}: hierarchical and flat cuts differ at t={t}"
        );
        let tris = cut_tris(&d, &cut);
        assert_eq!(
            cracks(&open_part, &level_open, &tris),
            0,
            "{name}: uniform cut at {t} has a crack"
        );
    }
    // Random view-dependent cuts: watertight, and equal to the brute-force walk.
    let radius = mesh.bounds().radius();
    let center = mesh.bounds().center();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut seen_mixed = 0;
    for _ in 0..24 {
        let dir = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize_or(Vec3::X);
        // Put a random level's hand-over about at the model, so near and far
        // parts of the model pick different levels.
        let dist = radius * rng.random_range(0.8f32..3.0);
        let finite: Vec<f32> = d
            .errors
            .iter()
            .copied()
            .filter(|&e| e < f32::MAX && e > 0.0)
            .collect();
        let e = finite[rng.random_range(0..finite.len())];
        let projection = ProjectionInfo::perspective(60f32.to_radians());
        let threshold_px = rng.random_range(0.5f32..4.0);
        let view = CutView {
            camera_local: center + dir * dist,
            scale: rng.random_range(0.5f32..2.0),
            projection,
            viewport_height: threshold_px * dist / (e * projection.p11 * 0.5),
            threshold_px,
        };
        d.dag.cut(&view, &mut cut);
        d.dag.cut_flat(&view, &mut flat);
        assert_eq!(cut, flat, "{name}: hierarchical and flat cuts differ");
        let levels: std::collections::HashSet<u32> = cut
            .iter()
            .map(|&c| d.dag.clusters[c as usize].level)
            .collect();
        if levels.len() > 1 {
            seen_mixed += 1;
        }
        let tris = cut_tris(&d, &cut);
        assert!(!tris.is_empty());
        assert_eq!(
            cracks(&open_part, &level_open, &tris),
            0,
            "{name}: view cut from {dist} has a crack"
        );
    }
    assert!(
        seen_mixed > 0,
        "{name}: no random view mixed levels; the test would not see cracks"
    );
    let box_coarser = check_fit_against_cut(name, &bytes, &d);
    if name.starts_with("FlightHelmet") {
        // Its error spheres reach past its box's sphere: the old bound must fail
        // here, or these views would not see the defect the error bounds fix.
        assert!(box_coarser > 0, "{name}: no view separates the two bounds");
    }
    cooked
}

/// docs/design/region-streaming-and-cluster-lod.md#which-levels-a-model-needs: the CPU's
/// `fit` for an instance is the finest level the GPU cut of that instance may draw, so it
/// must never name a level coarser than a cluster the cut draws. Placed through the file's
/// error bounds ([`InstanceBounds::placed`]), from many viewpoints at many scales, with
/// hand-overs put about at the model. Returns how often the sphere around the box (the
/// bound the API documented before) would have named a coarser level.
fn check_fit_against_cut(name: &str, bytes: &[u8], d: &Decoded) -> usize {
    let aligned = AlignedBytes::from(bytes);
    let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
    let manifest = file.manifest();
    assert!(manifest.error_bounds.is_some(), "{name}: no error bounds");
    let box_only = ClusterMeshManifest {
        error_bounds: None,
        ..manifest.clone()
    };
    let finite: Vec<f32> = d
        .errors
        .iter()
        .copied()
        .filter(|&e| e < f32::MAX && e > 0.0)
        .collect();
    let lo = Vec3::from(manifest.bounds_min);
    let hi = Vec3::from(manifest.bounds_max);
    let (center, radius) = ((lo + hi) * 0.5, (hi - lo).length() * 0.5);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(19);
    let mut cut = Vec::new();
    let mut box_coarser = 0;
    for _ in 0..400 {
        let dir = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
        .normalize_or(Vec3::X);
        let dist = radius * rng.random_range(0.3f32..4.0);
        let e = finite[rng.random_range(0..finite.len())];
        let projection = ProjectionInfo::perspective(60f32.to_radians());
        let threshold_px = rng.random_range(0.5f32..4.0);
        let scale = rng.random_range(0.25f32..4.0);
        let offset = Vec3::new(
            rng.random_range(-500.0..500.0),
            rng.random_range(-50.0..50.0),
            rng.random_range(-500.0..500.0),
        );
        let world = Mat4::from_scale_rotation_translation(
            Vec3::splat(scale),
            glam::Quat::from_rotation_y(rng.random_range(0.0..std::f32::consts::TAU)),
            offset,
        );
        let camera_local = center + dir * dist;
        let view = CutView {
            camera_local,
            scale,
            projection,
            viewport_height: threshold_px * dist / (e * projection.p11 * 0.5),
            threshold_px,
        };
        d.dag.cut(&view, &mut cut);
        let Some(finest_drawn) = cut.iter().map(|&c| d.dag.clusters[c as usize].level).min() else {
            continue;
        };
        let level_view = LevelView {
            camera: world.transform_point3(camera_local),
            projection,
            viewport_height: view.viewport_height,
            threshold_px,
            bias: 0,
        };
        let metric = LevelMetric::ParentErrors(&d.errors);
        let fit = model_levels(
            metric,
            &InstanceBounds::placed(manifest, &world),
            &level_view,
        )
        .fit;
        assert!(
            fit <= finest_drawn,
            "{name}: fit names level {fit}, the cut draws level {finest_drawn} (camera {camera_local}, scale {scale})"
        );
        let old = model_levels(
            metric,
            &InstanceBounds::placed(&box_only, &world),
            &level_view,
        );
        if old.fit > finest_drawn {
            box_coarser += 1;
        }
    }
    eprintln!(
        "{name}: the box's sphere named a coarser level than the cut in {box_coarser} of 400 views"
    );
    box_coarser
}

#[test]
fn real_meshes_cook_into_a_trustworthy_dag() {
    for m in common::REAL {
        let (prepared, _) = import_prepared(&common::mesh_path(m)).unwrap();
        check_mesh(m, &prepared.mesh);
    }
}

#[test]
fn generated_sphere_cooks_into_a_trustworthy_dag() {
    let mesh = common::sphere(64);
    let prepared = farsight_mesh::prepare(&mesh);
    let cooked = check_mesh("sphere", &prepared.mesh);
    // A closed sphere goes down to one cluster.
    assert_eq!(cooked.levels.last().unwrap().clusters.len(), 1);
}

#[test]
fn level_limit_stops_the_dag_and_keeps_the_last_level_complete() {
    let prepared = farsight_mesh::prepare(&common::sphere(48));
    let config = ClusterConfig {
        max_levels: 3,
        ..ClusterConfig::default()
    };
    let cooked = cook_clusters(&prepared.mesh, &config).unwrap();
    assert_eq!(cooked.levels.len(), 3);
    assert!(cooked.levels[2]
        .clusters
        .iter()
        .all(|c| c.parent_error == f32::MAX));
    assert!(cooked
        .warnings
        .iter()
        .any(|w| matches!(w, farsight_mesh::Warning::LevelLimitReached { limit: 3 })));
}

/// The sphere in three latitude bands of different materials, each band with its
/// own copy of the vertices it uses (as an importer gives one vertex array per
/// primitive): the bands meet on seams where only positions are shared.
fn banded_sphere(n: u32) -> Mesh {
    let sphere = common::sphere(n);
    let s = &sphere.submeshes[0];
    let band = |t: &[u32]| {
        let y: f32 = t.iter().map(|&i| s.vertices[i as usize].position[1]).sum();
        if y > 1.0 {
            0
        } else if y > -1.0 {
            1
        } else {
            2
        }
    };
    let submeshes = ["cap", "belt", "base"]
        .iter()
        .enumerate()
        .map(|(b, name)| {
            let mut local = vec![u32::MAX; s.vertices.len()];
            let mut sub = farsight_mesh::SubMesh {
                name: (*name).into(),
                material: (*name).into(),
                vertices: Vec::new(),
                indices: Vec::new(),
                has_tangents: false,
            };
            for t in s.indices.chunks_exact(3).filter(|t| band(t) == b) {
                for &i in t {
                    if local[i as usize] == u32::MAX {
                        local[i as usize] = sub.vertices.len() as u32;
                        sub.vertices.push(s.vertices[i as usize]);
                    }
                    sub.indices.push(local[i as usize]);
                }
            }
            sub
        })
        .collect();
    Mesh {
        name: "banded sphere".into(),
        submeshes,
    }
}

/// Every cluster's triangles use only vertices of its material's sub-mesh (the
/// cook keeps `prepared`'s vertices, material by material), in memory and in the
/// file. Returns how many clusters of each material LOD0 has.
fn assert_one_material_per_cluster(
    name: &str,
    prepared: &Mesh,
    cooked: &ClusterMesh,
) -> Vec<usize> {
    let mut material_of_vertex: Vec<&str> = Vec::new();
    let mut vertices = Vec::new();
    for s in &prepared.submeshes {
        material_of_vertex.extend(std::iter::repeat_n(s.material.as_str(), s.vertices.len()));
        vertices.extend_from_slice(&s.vertices);
    }
    assert!(
        cooked.vertices == vertices,
        "{name}: vertices not kept per material"
    );
    for (l, level) in cooked.levels.iter().enumerate() {
        for (c, info) in level.clusters.iter().enumerate() {
            let m = cooked.materials[info.material as usize].as_str();
            for &v in level.cluster_triangles(c) {
                assert_eq!(
                    material_of_vertex[v as usize], m,
                    "{name}: level {l} cluster {c} (material {m}) has a vertex of another material"
                );
            }
        }
    }
    // The file says the same.
    let bytes = cooked.encode().unwrap();
    let aligned = AlignedBytes::from(&bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&aligned).unwrap();
    assert_eq!(file.manifest().materials, cooked.materials);
    for (entry, level) in file.manifest().levels.iter().zip(&cooked.levels) {
        let parsed = ClusterLevel::parse(file.record(entry.record).unwrap().bytes).unwrap();
        assert_eq!(
            parsed.header.material_count as usize,
            cooked.materials.len()
        );
        let from_file: Vec<u16> = parsed.clusters.iter().map(|c| c.material).collect();
        let in_memory: Vec<u16> = level.clusters.iter().map(|c| c.material).collect();
        assert_eq!(from_file, in_memory, "{name}: materials differ in the file");
    }
    let mut per_material = vec![0; cooked.materials.len()];
    for c in &cooked.levels[0].clusters {
        per_material[c.material as usize] += 1;
    }
    per_material
}

#[test]
fn flight_helmet_clusters_never_mix_materials() {
    let (prepared, _) =
        import_prepared(&common::mesh_path("FlightHelmet/FlightHelmet.gltf")).unwrap();
    let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default()).unwrap();
    let per_material = assert_one_material_per_cluster("FlightHelmet", &prepared.mesh, &cooked);
    assert_eq!(cooked.materials.len(), 6, "{:?}", cooked.materials);
    assert!(per_material.iter().all(|&n| n > 0), "{per_material:?}");
}

#[test]
fn material_seams_stay_watertight_in_every_cut() {
    let prepared = farsight_mesh::prepare(&banded_sphere(48));
    // The full trust check on a closed surface whose bands only share positions:
    // a seam that moved on one side would open the sphere.
    let cooked = check_mesh("banded sphere", &prepared.mesh);
    let per_material = assert_one_material_per_cluster("banded sphere", &prepared.mesh, &cooked);
    assert_eq!(per_material.len(), 3);
    assert!(per_material.iter().all(|&n| n > 1), "{per_material:?}");
    // Each band still simplifies: its coarsest cluster count is below LOD0's.
    let last = cooked.levels.last().unwrap();
    for m in 0..3u16 {
        let coarse = last.clusters.iter().filter(|c| c.material == m).count();
        assert!(
            coarse < per_material[m as usize],
            "material {m} did not simplify"
        );
    }
}

#[test]
fn a_cluster_that_mixes_materials_is_refused() {
    let prepared = farsight_mesh::prepare(&banded_sphere(24));
    let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default()).unwrap();
    let split = farsight_mesh::MaterialSplit::new(&prepared.mesh);
    farsight_mesh::check_cluster_materials(&cooked.levels, &split).unwrap();
    let mut levels = cooked.levels.clone();
    let c = &mut levels[1].clusters[0];
    c.material = (c.material + 1) % 3;
    let e = farsight_mesh::check_cluster_materials(&levels, &split).unwrap_err();
    assert!(
        matches!(
            e,
            farsight_mesh::CookError::MixedMaterials {
                level: 1,
                cluster: 0,
                ..
            }
        ),
        "{e}"
    );
}

/// Stuck groups
/// (docs/design/region-streaming-and-cluster-lod.md#what-farsights-build-adds-to-the-loop):
/// a band of locked vertices round the sphere's equator cannot simplify, so the groups
/// inside it get stuck; the build locks their borders for the coarser levels in the same
/// pass, the stamping copies the stuck clusters into every coarser level, and the result
/// passes every trust check (each level complete alone, errors monotonic, no crack in any
/// uniform cut).
#[test]
fn stuck_groups_are_locked_and_copied_into_coarser_levels_in_one_build() {
    use farsight_mesh::{build_dag_locked, check_cluster_levels, stamp_levels};
    let prepared = farsight_mesh::prepare(&common::sphere(64));
    let (vertices, indices) = prepared.mesh.merged();
    let band: Vec<bool> = vertices.iter().map(|v| v.position[1].abs() < 0.3).collect();
    let config = ClusterConfig::default();
    let built = build_dag_locked(&config, &vertices, &indices, &band);
    assert!(built.stuck_groups > 0, "no group got stuck");
    assert!(built.locked_vertices > 0);
    let levels = stamp_levels(&built.dag, config.max_levels);
    assert!(levels.len() > 2);
    assert!(levels[1..].iter().any(|l| l.copied_clusters > 0));
    check_cluster_levels(&levels, &vertices, &indices).unwrap();
}

/// meshoptimizer's `clod_build` on `vertices`/`indices` with `seam` locked,
/// stamped into levels and put through the cook's trust check; and the same for
/// farsight's build. (peer's refusal, ours, our stuck groups)
fn peer_and_ours(
    vertices: &[farsight_mesh::Vertex],
    indices: &[u32],
    seam: &[bool],
) -> (
    Option<farsight_mesh::CookError>,
    Result<(), farsight_mesh::CookError>,
    usize,
) {
    use farsight_mesh::{build_dag_locked, check_cluster_levels, clod_build_raw, stamp_levels};
    use meshopt::SimplifyVertex;
    let config = ClusterConfig::default();
    let attributes = farsight_mesh::simplifier_attributes(vertices);
    // A lock is bit 0 of meshoptimizer's vertex flags.
    let locks: Vec<SimplifyVertex> = seam
        .iter()
        .map(|&s| SimplifyVertex::from_bits_retain(u8::from(s)))
        .collect();
    let locks = seam.iter().any(|&s| s).then_some(&locks[..]);
    let peer = clod_build_raw(&config, vertices, indices, &attributes, locks);
    let peer = check_cluster_levels(&stamp_levels(&peer, config.max_levels), vertices, indices);
    let ours = build_dag_locked(&config, vertices, indices, seam);
    let checked = check_cluster_levels(
        &stamp_levels(&ours.dag, config.max_levels),
        vertices,
        indices,
    );
    (peer.err(), checked, ours.stuck_groups)
}

/// A unit UV sphere of `n` rings, flat shaded: every triangle has its own three
/// vertices with the face's normal (so every position is a normal seam).
fn flat_sphere(n: u32) -> Mesh {
    use farsight_mesh::{SubMesh, Vertex};
    let segs = 2 * n;
    let point = |r: u32, s: u32| {
        let th = std::f32::consts::PI * r as f32 / n as f32;
        let ph = 2.0 * std::f32::consts::PI * (s % segs) as f32 / segs as f32;
        match r {
            0 => Vec3::Y,
            r if r == n => -Vec3::Y,
            _ => Vec3::new(th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()),
        }
    };
    let mut vertices = Vec::new();
    for r in 0..n {
        for s in 0..segs {
            let q = [
                point(r, s),
                point(r, s + 1),
                point(r + 1, s),
                point(r + 1, s + 1),
            ];
            for t in [[q[0], q[2], q[1]], [q[1], q[2], q[3]]] {
                let normal = (t[1] - t[0]).cross(t[2] - t[0]);
                if normal.length_squared() < 1e-12 {
                    continue;
                }
                for p in t {
                    vertices.push(Vertex {
                        position: p.to_array(),
                        normal: normal.normalize().to_array(),
                        uv: [0.0; 2],
                        tangent: [0.0; 4],
                    });
                }
            }
        }
    }
    let indices = (0..vertices.len() as u32).collect();
    Mesh {
        name: "flat sphere".into(),
        submeshes: vec![SubMesh {
            name: "s".into(),
            material: "m".into(),
            vertices,
            indices,
            has_tangents: false,
        }],
    }
}

/// Issue 16, part 0, stuck groups: meshoptimizer abandons a group that cannot
/// simplify and forgets its border in the next level, so a neighbour walks away
/// from the stuck clusters that every coarser level copies (an open edge there;
/// `clod_build` on this flat-shaded sphere is refused). Ours keeps the border locked for the
/// rest of the build: the DAG passes the first time.
#[test]
fn a_stuck_groups_border_holds_in_every_coarser_level() {
    let prepared = farsight_mesh::prepare(&flat_sphere(64));
    let (vertices, indices) = prepared.mesh.merged();
    let band: Vec<bool> = vertices.iter().map(|v| v.position[1].abs() < 0.3).collect();
    let (peer, ours, stuck) = peer_and_ours(&vertices, &indices, &band);
    assert!(
        matches!(peer, Some(farsight_mesh::CookError::LevelIncomplete { .. })),
        "clod_build's DAG was expected to open a level: {peer:?}"
    );
    ours.unwrap();
    assert!(stuck > 0, "no group got stuck");
}

/// Issue 16, part 0, simplifications that open the surface: on AntiqueCamera's
/// tripod (6,120 triangles, no stuck group) a group's permissive or
/// vertex-clustering simplification leaves an edge used by one triangle on a part
/// of LOD0 that is closed, and `clod_build`'s level 5 is refused. Ours checks each
/// group's result on welded edges and takes one that keeps the surface.
#[test]
fn a_group_simplification_that_opens_the_surface_is_not_taken() {
    let path = common::mesh_path("AntiqueCamera/AntiqueCamera.gltf");
    let (prepared, _) = import_prepared(&path).unwrap();
    let split = farsight_mesh::MaterialSplit::new(&prepared.mesh);
    let tripod = split
        .parts
        .iter()
        .find(|p| p.name == "tripod")
        .expect("tripod");
    let (peer, ours, _) = peer_and_ours(split.part_vertices(tripod), &tripod.indices, &tripod.seam);
    assert!(
        matches!(peer, Some(farsight_mesh::CookError::LevelIncomplete { .. })),
        "clod_build's DAG was expected to open a level: {peer:?}"
    );
    ours.unwrap();
}

/// Issue 16's generated stress cases, as one mesh each: 100 parts of 2-300
/// triangles (each its own material), one 200-triangle patch placed 50 times side
/// by side, a 256 x 256 quad grid tile, a 12-triangle box with flat normals.
fn stress_cases() -> Vec<(&'static str, Mesh)> {
    use farsight_mesh::{SubMesh, Vertex};
    let patch = |tris: usize, w: usize, at: [f32; 3], material: String| {
        let rows = tris.div_ceil(2).div_ceil(w);
        let mut vertices = Vec::new();
        for y in 0..=rows {
            for x in 0..=w {
                let (fx, fy) = (x as f32 / w as f32, y as f32 / rows.max(1) as f32);
                let h = 0.05 * (fx * 7.0 + at[0]).sin() * (fy * 5.0 + at[2]).cos();
                vertices.push(Vertex {
                    position: [at[0] + fx, at[1] + h, at[2] + fy],
                    normal: [0.0, 1.0, 0.0],
                    uv: [fx, fy],
                    tangent: [0.0; 4],
                });
            }
        }
        let row = (w + 1) as u32;
        let mut indices = Vec::new();
        for q in 0..tris.div_ceil(2) {
            let i = (q / w) as u32 * row + (q % w) as u32;
            indices.extend_from_slice(&[i, i + row, i + 1, i + 1, i + row, i + row + 1]);
        }
        indices.truncate(3 * tris);
        SubMesh {
            name: material.clone(),
            material,
            vertices,
            indices,
            has_tangents: false,
        }
    };
    let mesh = |name: &str, submeshes| Mesh {
        name: name.into(),
        submeshes,
    };
    let parts = (0..100)
        .map(|i| {
            patch(
                2 + (i * 37) % 299,
                2 + i % 9,
                [i as f32 * 1.5, 0.0, 0.0],
                format!("m{i}"),
            )
        })
        .collect();
    let placed = (0..50)
        .map(|i| patch(200, 10, [0.0, 0.0, 1.5 * i as f32], format!("m{i}")))
        .collect();
    let grid = vec![patch(2 * 256 * 256, 256, [0.0; 3], "grid".into())];
    // The box: per face, 4 corners with the face's normal.
    let (mut vertices, mut indices) = (Vec::new(), Vec::new());
    for axis in 0..3 {
        for sign in [-1.0f32, 1.0] {
            let mut normal = [0.0; 3];
            normal[axis] = sign;
            let (u, w) = ((axis + 1) % 3, (axis + 2) % 3);
            let base = vertices.len() as u32;
            for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                let mut position = normal;
                position[u] = a * sign;
                position[w] = b;
                vertices.push(Vertex {
                    position,
                    normal,
                    uv: [(a + 1.0) / 2.0, (b + 1.0) / 2.0],
                    tangent: [0.0; 4],
                });
            }
            indices.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    let cube = vec![SubMesh {
        name: "box".into(),
        material: "box".into(),
        vertices,
        indices,
        has_tangents: false,
    }];
    vec![
        ("gen_parts100", mesh("gen_parts100", parts)),
        ("gen_placed50", mesh("gen_placed50", placed)),
        ("gen_grid256", mesh("gen_grid256", grid)),
        ("gen_box12", mesh("gen_box12", cube)),
    ]
}

/// Issue 16, part 0: the generated stress cases cook the first time too.
#[test]
fn every_stress_case_cooks_as_a_dag_the_first_time() {
    for (name, mesh) in stress_cases() {
        let prepared = farsight_mesh::prepare(&mesh);
        let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let refused: Vec<String> = cooked
            .warnings
            .iter()
            .filter(|w| matches!(w, farsight_mesh::Warning::SimplificationRestricted { .. }))
            .map(|w| w.to_string())
            .collect();
        assert!(refused.is_empty(), "{name}: {refused:?}");
    }
}

/// Issue 16, part 4: a cook too small to split runs inline on the calling thread
/// and a larger one on the pool; either way the file's bytes are the same on
/// pools of one and two threads and from outside any pool (the box and a
/// 2-part cut of the parts case are inline; the parts and placed cases are not).
#[test]
fn bytes_are_the_same_on_one_and_two_threads_inline_or_not() {
    let config = ClusterConfig::default();
    let mut cases: Vec<(&str, Mesh)> = stress_cases()
        .into_iter()
        .filter(|(name, _)| *name != "gen_grid256")
        .collect();
    let mut few = stress_cases().swap_remove(0).1;
    few.submeshes.truncate(2);
    cases.push(("gen_parts2", few));
    for (name, mesh) in cases {
        let prepared = farsight_mesh::prepare(&mesh).mesh;
        let outside = farsight_mesh::cook_clusters_encoded(&prepared, &config)
            .unwrap()
            .1;
        for threads in [1, 2] {
            let on_pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| farsight_mesh::cook_clusters_encoded(&prepared, &config))
                .unwrap()
                .1;
            assert!(
                on_pool == outside,
                "{name}: bytes differ on {threads} threads"
            );
        }
    }
}

/// Issue 16, part 0: every corpus mesh cooks the first time (no refused DAG, no
/// rebuild) as a cluster DAG whose every level, decoded from the file, keeps LOD0's
/// closed parts closed; and as a cooked LOD chain. (ToyCar, AntiqueCamera and
/// SubpassScene were refused and rebuilt before.)
#[test]
fn every_corpus_mesh_cooks_as_a_dag_the_first_time_and_as_a_cooked_chain() {
    use farsight_mesh::{cook_file, ChainRecords, CookKind, LodChainConfig, Warning};
    let dag = CookKind::Clusters(ClusterConfig::default());
    let chain = CookKind::LodChain(
        LodChainConfig::default(),
        ChainRecords::Cooked(farsight_format::CookConfig::default()),
    );
    let mut cooked = 0;
    for path in common::corpus() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let out = cook_file(&path, &dag).unwrap_or_else(|e| panic!("{name}: {e}"));
        let refused: Vec<String> = out
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::SimplificationRestricted { .. }))
            .map(|w| w.to_string())
            .collect();
        assert!(refused.is_empty(), "{name}: {refused:?}");
        // Every geometry of a cooked scene (cakeBirthday, SubpassScene) on its own.
        for g in 0..geometry_count(&out.bytes) {
            let d = decode_geometry(&out.bytes, g);
            let open_part = open_parts(&d.level_tris[0]);
            for (l, tris) in d.level_tris.iter().enumerate() {
                for ((a, b), c) in edge_counts(tris.iter()) {
                    assert!(
                        c != 1 || (open_part.contains(&a) && open_part.contains(&b)),
                        "{name}: geometry {g} level {l} opens a closed part at {a}-{b}"
                    );
                }
            }
        }
        cook_file(&path, &chain).unwrap_or_else(|e| panic!("{name} as a chain: {e}"));
        cooked += 1;
    }
    if farsight_testkit::corpus_is_shared() {
        assert_eq!(cooked, 16, "the corpus of ../shared/data/meshes");
    }
}

/// Issue 16, part 0: a glTF mesh drawn 125 times through `EXT_mesh_gpu_instancing`
/// is cooked once, its 125 placements kept in the manifest; a mesh drawn once has
/// none (and its manifest no `instances` entry).
#[test]
fn a_mesh_placed_many_times_is_cooked_once_with_its_instances() {
    use farsight_mesh::{cook_file, CookKind};
    let kind = CookKind::Clusters(ClusterConfig::default());
    let out = cook_file(
        &common::mesh_path("SimpleInstancing/SimpleInstancing.gltf"),
        &kind,
    )
    .unwrap();
    let bytes = AlignedBytes::from(&out.bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&bytes).unwrap();
    let m = file.manifest();
    assert_eq!(m.levels[0].triangles, 12, "the cube is stored once");
    assert_eq!(m.instances.len(), 125);
    let places: std::collections::HashSet<[u32; 3]> = m
        .instances
        .iter()
        .map(|t| [t[12].to_bits(), t[13].to_bits(), t[14].to_bits()])
        .collect();
    assert_eq!(places.len(), 125, "every instance has its own place");
    assert!(m.instances.iter().flatten().all(|v| v.is_finite()));
    assert!(file.raw().manifest_text().contains("instances"));
    let once = cook_file(&common::mesh_path("bunny.obj"), &kind).unwrap();
    let bytes = AlignedBytes::from(&once.bytes[..]);
    let file = Container::<ClusterMeshManifest>::read(&bytes).unwrap();
    assert!(file.manifest().instances.is_empty());
    assert!(!file.raw().manifest_text().contains("instances"));
}

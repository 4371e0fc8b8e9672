//! The loop over a generated world: a flight with loading screens, teleports and
//! edits draws no hole and holds the budget; the recorded run replays to the same
//! hashes; a changed input is found at its frame; bad manifests are refused.

use std::time::Duration;

use farsight_stream::cluster::CookedModel;
use farsight_terrain::{chunk_bounds, CollisionCache};
use farsight_testkit::scratch;
use farsight_testkit::world::recording;
use farsight_world::{
    generate, Edit, Flight, FrameInput, FrameReport, Recording, SyntheticConfig, SystemId,
    TerrainPublication, World, WorldConfig, WorldError, WorldManifest, BASES_PER_FRAME,
    MANIFEST_FILE, PREFETCH_COLLIDERS_PER_FRAME, REGION_OBJECTS_PER_FRAME, SYSTEMS,
};
use glam::{IVec3, Vec3};

fn fly(world: &mut World, frames: u32, rec: &mut Recording) -> (u32, u32, u8) {
    let flight = Flight::new(world.manifest(), frames);
    fly_with(world, &flight, frames, rec, &mut |_| {})
}

/// Flies `flight`, handing every flown (not loading) frame's report to `each`.
fn fly_with(
    world: &mut World,
    flight: &Flight,
    frames: u32,
    rec: &mut Recording,
    each: &mut dyn FnMut(&FrameReport),
) -> (u32, u32, u8) {
    let (mut holes, mut over, mut bias) = (0, 0, 0);
    farsight_testkit::world::fly(world, flight, frames, rec, &mut |r, loading| {
        if !loading {
            each(&r);
            holes += u32::from(r.holes() > 0);
            over += u32::from(r.over_budget);
            bias = bias.max(r.bias);
        }
    });
    (holes, over, bias)
}

#[test]
fn a_generated_world_flies_without_holes_and_replays_to_the_same_decisions() {
    let dir = scratch("fly");
    let spec = SyntheticConfig::small();
    let m = generate(&dir, &spec, &mut |_| {}).unwrap();
    assert_eq!(m.buildings.len(), spec.buildings as usize);
    let config = WorldConfig::default();
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let (holes, over, _) = fly(&mut world, 90, &mut rec);
    assert_eq!(holes, 0, "frames with a hole");
    assert_eq!(over, 0, "frames over budget");
    assert!(world.store().len() > 50, "objects streamed in");
    assert!(rec.frames.iter().any(|f| !f.edits.is_empty()));
    assert!(rec.frames.iter().any(|f| f.prefetch.is_some()));

    let path = dir.join("flight.rec");
    rec.write(&path).unwrap();
    let rec = Recording::read(&path).unwrap();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }

    // An edit that never happened changes the terrain's decisions at its frame.
    let k = rec.frames.iter().position(|f| !f.edits.is_empty()).unwrap();
    let mut tampered = rec.clone();
    tampered.frames[k].edits.clear();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    let mut first = None;
    for (i, input) in tampered.frames.iter().enumerate() {
        if let Err(m) = tampered.compare(i, &replay.replay(input).hashes) {
            first = Some(m);
            break;
        }
    }
    let m = first.expect("the replay differs");
    assert_eq!((m.frame as usize, m.system), (k, SystemId::Terrain), "{m}");
    assert!(m.to_string().contains(&format!("frame {k}")) && m.to_string().contains("terrain"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tight_budget_raises_the_bias_and_is_still_held() {
    let dir = scratch("tight");
    generate(&dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    let mut config = WorldConfig::default();
    config.budget.upload = 96 << 10;
    config.budget.memory = 64 << 20;
    config.budget.bias_frames = 5;
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let (_, over, bias) = fly(&mut world, 60, &mut rec);
    assert_eq!(over, 0, "frames over budget");
    assert!(bias > 0, "pressure coarsened the world");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_manifests_are_refused_with_the_path() {
    let dir = scratch("bad");
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(matches!(e, WorldError::Io { .. }) && e.to_string().contains(MANIFEST_FILE));
    std::fs::write(dir.join(MANIFEST_FILE), "not ron at all (").unwrap();
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(matches!(e, WorldError::Manifest { .. }), "{e}");
    generate(&dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    let mut m = WorldManifest::read(&dir).unwrap();
    m.version = 99;
    m.write(&dir).unwrap();
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(e.to_string().contains("version 99"), "{e}");
    m.version = farsight_world::WORLD_VERSION;
    m.write(&dir).unwrap();
    // A truncated model file is refused, naming it.
    let model = dir.join(&m.models[0].file);
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(&model, &bytes[..bytes.len() / 3]).unwrap();
    let e = World::open(&dir, WorldConfig::default()).unwrap_err();
    assert!(matches!(e, WorldError::Model(_)), "{e}");
    assert!(e.to_string().contains(&m.models[0].file), "{e}");
    m.models[0].file = "models/missing.farsight".into();
    m.write(&dir).unwrap();
    let e = World::open(&dir, WorldConfig::default()).unwrap_err();
    assert!(e.to_string().contains("missing.farsight"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_system_wanting_the_whole_pool_leaves_every_other_its_coarsest_levels() {
    let dir = scratch("pool");
    // Many models, many instances, all near the camera on a small ground: their
    // finest levels alone want more than the whole pool.
    let spec = SyntheticConfig {
        models: 120,
        objects: 6_000,
        ..SyntheticConfig::small()
    };
    let m = generate(&dir, &spec, &mut |_| {}).unwrap();
    let demand: u64 = m
        .models
        .iter()
        .map(|e| {
            let c = CookedModel::open_geometry(dir.join(&e.file), e.geometry as usize).unwrap();
            c.levels().map(|l| l.bytes).sum::<u64>()
        })
        .sum();
    let mut config = WorldConfig::default();
    config.budget.memory = 16 << 20;
    config.budget.upload = 1 << 20;
    config.budget.bias_frames = 10;
    assert!(
        demand > config.budget.memory,
        "the clusters alone want {demand} bytes"
    );
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let flight = Flight::new(world.manifest(), 120);
    let (mut peak, mut peak_upload, mut clusters_peak) = (0, 0, 0);
    let mut others = [0u64; SYSTEMS];
    let (holes, over, bias) = fly_with(&mut world, &flight, 120, &mut rec, &mut |r| {
        for s in SystemId::ALL {
            assert_eq!(
                r.systems[s as usize].holes,
                0,
                "frame {}: {} has a hole",
                r.frame,
                s.name()
            );
            others[s as usize] = others[s as usize].max(r.systems[s as usize].memory);
        }
        assert!(
            r.memory <= config.budget.memory,
            "frame {}: {} resident",
            r.frame,
            r.memory
        );
        assert!(
            r.upload <= config.budget.upload,
            "frame {}: {} uploaded",
            r.frame,
            r.upload
        );
        peak = peak.max(r.memory);
        peak_upload = peak_upload.max(r.upload);
        clusters_peak = clusters_peak.max(r.systems[SystemId::Clusters as usize].memory);
    });
    eprintln!(
        "demand {demand}, peak {peak} (clusters {clusters_peak}), upload peak {peak_upload}, per system {others:?}, bias {bias}"
    );
    assert_eq!((holes, over), (0, 0), "frames with a hole, over budget");
    assert!(bias > 0, "pressure coarsened every system");
    assert!(others[SystemId::Buildings as usize] > 0 && others[SystemId::Terrain as usize] > 0);
    assert!(
        clusters_peak <= config.budget.fine_memory(),
        "the clusters' finer levels stay out of the reserve"
    );
    assert!(
        peak > config.budget.memory / 2,
        "the pool was used: {peak} of {}",
        config.budget.memory
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_paused_terrain_mesher_leaves_no_hole_and_the_flight_still_replays() {
    let dir = scratch("paused");
    // Ground much larger than the draw distance: chunks come into range all along
    // the flight, and the mesher is paused after the first loading screen.
    let spec = SyntheticConfig {
        chunks_side: 12,
        ..SyntheticConfig::small()
    };
    generate(&dir, &spec, &mut |_| {}).unwrap();
    let config = WorldConfig {
        draw_distance: 150.0,
        source_radius: 150.0,
        ..WorldConfig::default()
    };
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let frames = 120;
    let flight = Flight::new(world.manifest(), frames);
    let mut input = FrameInput::default();
    let ff = flight.frame(0);
    input.camera = ff.camera.to_array();
    input.target = ff.target.to_array();
    input.loading = true;
    for _ in 0..5000 {
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        if world.ready() {
            break;
        }
        world.wait_for_io(Duration::from_millis(1));
    }
    assert!(world.ready(), "{:?}", world.waiting_on());
    let meshed = world
        .terrain_levels()
        .filter(|(_, l)| *l == Some(0))
        .count();
    world.set_terrain_meshing_paused(true);
    let (mut drawn, mut base) = (0, 0);
    let (holes, over, _) = fly_with(&mut world, &flight, frames, &mut rec, &mut |r| {
        assert_eq!(
            r.systems[SystemId::Terrain as usize].holes,
            0,
            "frame {}: a terrain hole with the mesher paused",
            r.frame
        );
    });
    for (c, level) in world.terrain_levels() {
        drawn += 1;
        if level == Some(farsight_terrain::LEVELS - 1) && world.terrain_base_mesh(c).is_some() {
            base += 1;
        }
    }
    assert_eq!((holes, over), (0, 0));
    assert!(meshed > 0, "the mesher ran before the pause");
    assert!(
        base > 0,
        "chunks that came into range draw their base: {base} of {drawn}"
    );

    // The base meshes are the loop's own decisions: the recording replays.
    let mut replay = World::open_replay(&dir, config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every source's chunks within `radius` (box distance), in the grid's range.
fn chunks_near(world: &World, source: Vec3, radius: f32) -> Vec<IVec3> {
    let (lo, hi) = world
        .grid()
        .chunk_coords()
        .fold((IVec3::MAX, IVec3::MIN), |(lo, hi), c| {
            (lo.min(c), hi.max(c))
        });
    let (lo, hi) = (lo - IVec3::ONE, hi + IVec3::ONE);
    let mut out = Vec::new();
    for z in lo.z..=hi.z {
        for y in lo.y..=hi.y {
            for x in lo.x..=hi.x {
                let c = IVec3::new(x, y, z);
                // (A chunk on the sphere itself may go either way in rounding.)
                if chunk_bounds(c).distance_squared(source).sqrt() < radius - 1e-3 {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// Issue 14: colliders are a range around the streaming sources, limited by the
/// one pool. On a ground whose colliders all together exceed the pool, the pool
/// holds every frame, and every chunk within the collision radius of the camera
/// has its collider, equal to the whole-grid cache's (edits included), every
/// frame; a prefetched teleport target's are built a few a frame (issue 27 item
/// 21), each equal to the whole grid's once built: two teleports with prefetch
/// (away, then back to where the colliders were freed) find theirs there on
/// arrival, building at most a frame's few then. The run replays to the same
/// decisions.
#[test]
fn colliders_are_a_range_around_the_sources_under_the_one_pool() {
    let dir = scratch("colliders");
    let spec = SyntheticConfig {
        chunks_side: 18,
        ..SyntheticConfig::small()
    };
    let m = generate(&dir, &spec, &mut |_| {}).unwrap();
    let mut config = WorldConfig {
        draw_distance: 300.0,
        source_radius: 200.0,
        ..WorldConfig::default()
    };
    let grid = farsight_terrain::read_grid(dir.join(&m.terrain.file)).unwrap();
    let mut full = CollisionCache::new(1);
    full.update(&grid);
    let whole = full.heap_bytes() as u64;
    config.budget.memory = whole * 3 / 4;
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let flight = Flight::new(world.manifest(), 3);
    let [w, d] = world.manifest().extent;
    let at = |x: f32, z: f32| Vec3::new(x * w, flight.ground(x * w, z * d) + 45.0, z * d);
    let (a, b) = (at(0.2, 0.2), at(0.8, 0.75));
    // 40 frames near a, prefetch b for 20, teleport; the same back to a.
    let mut script: Vec<(Vec3, Option<Vec3>, bool)> = Vec::new();
    for (from, to) in [(a, b), (b, a)] {
        for f in 0..60 {
            let p = from + Vec3::new(f as f32 * 3.0, 0.0, f as f32 * 1.5);
            let p = Vec3::new(p.x, flight.ground(p.x, p.z) + 45.0, p.z);
            script.push((p, (f >= 40).then_some(to), f == 0));
        }
    }
    script.push((a, None, true));
    let radius = config.collision_radius;
    let (mut peak, mut peak_colliders, mut built) = (0u64, 0usize, 0u32);
    let mut arrivals = Vec::new();
    let mut input = FrameInput::default();
    for (f, &(camera, prefetch, teleport)) in script.iter().enumerate() {
        input.camera = camera.to_array();
        input.target = (camera + Vec3::new(100.0, -40.0, 60.0)).to_array();
        input.prefetch = prefetch.map(|p| p.to_array());
        input.edits.clear();
        if f % 25 == 12 {
            let y = flight.ground(camera.x + 40.0, camera.z);
            input.edits.push(Edit {
                center: [camera.x + 40.0, y, camera.z],
                radius: 12.0,
                carve: f % 50 == 12,
            });
        }
        input.loading = teleport;
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        full.update(world.grid());
        assert!(
            r.memory <= config.budget.memory,
            "frame {f}: {} resident of {} ({:?})",
            r.memory,
            config.budget.memory,
            r.systems.map(|s| s.memory)
        );
        peak = peak.max(r.memory);
        peak_colliders = peak_colliders.max(world.collision().len());
        built += r.colliders_built;
        if teleport && f > 0 {
            let near = chunks_near(&world, camera, radius).len();
            eprintln!(
                "arrival at frame {f}: {} colliders built of {near} near",
                r.colliders_built
            );
            arrivals.push((r.colliders_built as usize, near));
        }
        let cache = world.collision();
        for (source, at_once) in std::iter::once((camera, true)).chain(prefetch.map(|p| (p, false)))
        {
            for c in chunks_near(&world, source, radius) {
                if !at_once && !cache.holds(c) {
                    // A prefetch target's colliders come a few a frame.
                    continue;
                }
                assert!(
                    cache.holds(c),
                    "frame {f}: chunk {c} near {source} not collided"
                );
                match (full.collider(c), cache.collider(c)) {
                    (None, None) => {}
                    (Some(x), Some(y)) => assert!(
                        x.triangles == y.triangles && x.shape.vertices().eq(y.shape.vertices()),
                        "frame {f}: chunk {c}'s collider is stale"
                    ),
                    (x, y) => panic!(
                        "frame {f}: chunk {c}: whole grid {} collider, the world {}",
                        x.is_some(),
                        y.is_some()
                    ),
                }
            }
        }
    }
    eprintln!(
        "colliders of the whole grid {whole} bytes ({} chunks), pool {}, peak resident {peak}, \
         at most {peak_colliders} colliders held, {built} built",
        full.len(),
        config.budget.memory
    );
    assert!(
        whole > config.budget.memory,
        "the whole set exceeds the pool"
    );
    assert!(
        peak_colliders < full.len(),
        "never the whole grid's colliders"
    );
    assert!(
        built as usize > peak_colliders,
        "colliders freed far away were built again on the way back"
    );
    // The prefetch built the target's colliders before the camera got there.
    assert_eq!(arrivals.len(), 2);
    for &(built, near) in &arrivals {
        assert!(
            built <= PREFETCH_COLLIDERS_PER_FRAME && near > 4 * PREFETCH_COLLIDERS_PER_FRAME,
            "{built} colliders built on arrival of {near}"
        );
    }

    let mut replay = World::open_replay(&dir, config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small world generated in `dir`, loaded with the camera 45 m above its middle
/// looking along +x, then the background mesher paused: what the edit tests start
/// from.
struct Paused {
    config: WorldConfig,
    world: World,
    rec: Recording,
    flight: Flight,
    input: FrameInput,
    x: f32,
    z: f32,
}

fn paused_over_the_middle(dir: &std::path::Path) -> Paused {
    generate(dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    let config = WorldConfig::default();
    let mut world = World::open(dir, config).unwrap();
    let mut rec = recording(dir, config);
    let flight = Flight::new(world.manifest(), 3);
    let [w, d] = world.manifest().extent;
    let (x, z) = (0.5 * w, 0.5 * d);
    let camera = Vec3::new(x, flight.ground(x, z) + 45.0, z);
    let mut input = FrameInput {
        camera: camera.to_array(),
        target: Vec3::new(x + 100.0, flight.ground(x + 100.0, z), z).to_array(),
        loading: true,
        ..FrameInput::default()
    };
    for _ in 0..5000 {
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        if world.ready() {
            break;
        }
        world.wait_for_io(Duration::from_millis(1));
    }
    assert!(world.ready(), "{:?}", world.waiting_on());
    world.set_terrain_meshing_paused(true);
    input.loading = false;
    Paused {
        config,
        world,
        rec,
        flight,
        input,
        x,
        z,
    }
}

/// Issue 14: a base mesh is remade after an edit while the mesher is paused. With
/// the background mesher paused, every edit's chunks (those drawing a published
/// mesh and those drawing their base) draw, from the edit's own frame on, a base
/// mesh equal to a fresh coarsest mesh of the edited grid: never the stale one, and
/// never a hole. The run replays.
#[test]
fn an_edit_with_the_mesher_paused_never_leaves_a_stale_mesh_drawn() {
    let dir = scratch("stale");
    let Paused {
        config,
        mut world,
        mut rec,
        flight,
        mut input,
        x,
        z,
    } = paused_over_the_middle(&dir);
    let coarsest = farsight_terrain::LEVELS - 1;
    let mut mesher = farsight_terrain::ChunkMesher::new();
    let same = |a: &farsight_terrain::ChunkMesh, b: &farsight_terrain::ChunkMesh| {
        a.vertices == b.vertices && a.indices == b.indices
    };
    let (mut finer, mut stale, mut checked, mut made) = (0, 0, 0, 0);
    // Digs (and mounds) on the seams of chunks in view, one every 5 frames.
    let spots = [
        (0.0, 0.0),
        (64.0, 0.0),
        (0.0, 128.0),
        (200.0, -128.0),
        (128.0, 128.0),
    ];
    for (k, &(dx, dz)) in spots.iter().enumerate() {
        let (ex, ez) = (
            (x / 128.0).round() * 128.0 + dx,
            (z / 128.0).round() * 128.0 + dz,
        );
        let center = Vec3::new(ex, flight.ground(ex, ez), ez);
        let before = world.grid().clone();
        let near: Vec<(IVec3, u8)> = world
            .terrain_levels()
            .filter_map(|(c, l)| Some((c, l?)))
            .filter(|(c, _)| chunk_bounds(*c).distance_squared(center) < 40.0 * 40.0)
            .collect();
        let mut changed = vec![false; near.len()];
        for f in 0..5 {
            input.edits.clear();
            if f == 0 {
                input.edits.push(Edit {
                    center: center.to_array(),
                    radius: 14.0,
                    carve: k % 2 == 0,
                });
            }
            let r = world.step(&mut input);
            rec.frames.push(input.clone());
            rec.hashes.push(r.hashes);
            assert_eq!(r.holes(), 0, "edit {k}, frame {f}: a hole");
            // Issue 27 item 21: the bases an edit needs are made on the worker
            // threads, a bounded number a frame; the frame's own thread makes one
            // at most.
            assert!(
                r.terrain_bases_made as usize <= BASES_PER_FRAME,
                "edit {k}, frame {f}: {} bases made",
                r.terrain_bases_made
            );
            assert!(
                r.terrain_bases_made_on_frame <= 1,
                "edit {k}, frame {f}: {} of {} bases made on the frame thread",
                r.terrain_bases_made_on_frame,
                r.terrain_bases_made
            );
            made = made.max(r.terrain_bases_made);
            if f == 0 {
                // Whether the mesh each chunk drew before the edit is stale now.
                for (i, &(c, level)) in near.iter().enumerate() {
                    let old = mesher.mesh(&before, c, level);
                    changed[i] = !same(&old, &mesher.mesh(world.grid(), c, level));
                    stale += usize::from(changed[i]);
                    finer += usize::from(changed[i] && level < coarsest);
                }
            }
            // Chunks in the stale queue (at most BASES_PER_FRAME are remade a
            // frame) may draw their mesh from before the edit; none once it drained,
            // which it does within the edit's five frames.
            let mut old_drawn = 0;
            for (&(c, level), &changed) in near.iter().zip(&changed) {
                let fresh = mesher.mesh(world.grid(), c, coarsest);
                let ok = match world.terrain_drawn_base(c) {
                    Some(drawn) => same(drawn, &fresh),
                    None if changed => {
                        fresh.is_empty()
                            && world.terrain_levels().any(|(d, l)| d == c && l.is_none())
                    }
                    None => true,
                };
                assert!(
                    ok || r.terrain_stale > 0,
                    "edit {k}, frame {f}: chunk {c} draws its level {level} mesh from \
                     before the edit, and no chunk waits in the stale queue"
                );
                old_drawn += u32::from(!ok);
                checked += 1;
            }
            assert!(old_drawn <= r.terrain_stale, "edit {k}, frame {f}");
            if f == 4 {
                assert_eq!(r.terrain_stale, 0, "edit {k}: the stale queue drained");
            }
        }
    }
    eprintln!("{stale} stale meshes replaced ({finer} finer), {checked} chunk frames checked");
    assert!(stale > 3, "the edits made meshes stale");
    assert!(finer > 0, "some edited chunks drew a finer published mesh");
    assert!(checked > 20, "{checked} chunk frames checked");
    assert!(
        made > 1,
        "an edit remade several bases at once: {made} at most"
    );

    let mut replay = World::open_replay(&dir, config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 27 item 21: an edit that makes many drawn meshes stale (a wide crater
/// beside the camera) stalled its frame remaking every base at once. The frame
/// remakes BASES_PER_FRAME of them at most, nearest the camera first, and the
/// others within a few frames; no hole meanwhile, and the run replays to the same
/// decisions on one worker thread and on four.
#[test]
fn a_wide_edit_remakes_its_stale_bases_a_few_a_frame_nearest_first() {
    let dir = scratch("wide-edit");
    let Paused {
        config,
        mut world,
        mut rec,
        flight,
        mut input,
        x,
        z,
    } = paused_over_the_middle(&dir);
    let mut step = |world: &mut World, input: &mut FrameInput| {
        let r = world.step(input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        r
    };
    // Craters along the seams of the chunks in view.
    for k in 0..9 {
        let (ex, ez) = (x + 32.0 * (k % 3) as f32, z + 32.0 * (k / 3) as f32 - 32.0);
        input.edits.push(Edit {
            center: [ex, flight.ground(ex, ez), ez],
            radius: 24.0,
            carve: k % 2 == 0,
        });
    }
    let coarsest = farsight_terrain::LEVELS - 1;
    let mut mesher = farsight_terrain::ChunkMesher::new();
    let (mut most_stale, mut total, mut frames) = (0, 0, 0);
    for f in 0..40 {
        let r = step(&mut world, &mut input);
        input.edits.clear();
        assert_eq!(r.holes(), 0, "frame {f}: a hole");
        assert!(
            r.terrain_bases_made as usize <= BASES_PER_FRAME,
            "frame {f}: {} bases made in one frame",
            r.terrain_bases_made
        );
        most_stale = most_stale.max(r.terrain_stale);
        total += r.terrain_bases_made;
        frames = f;
        if r.terrain_stale == 0 {
            break;
        }
    }
    assert!(
        most_stale > 0 && total as usize > BASES_PER_FRAME,
        "the edit made more stale meshes than one frame remakes: {most_stale} waited, {total} remade"
    );
    assert!(frames < 20, "the queue drained in {frames} frames");
    // Drained: every chunk drawing its base draws the edited grid's.
    for (c, level) in world.terrain_levels() {
        if let (Some(drawn), Some(_)) = (world.terrain_drawn_base(c), level) {
            let fresh = mesher.mesh(world.grid(), c, coarsest);
            assert!(
                drawn.vertices == fresh.vertices && drawn.indices == fresh.indices,
                "chunk {c} draws a stale base"
            );
        }
    }
    // The same decisions whatever the worker count: replayed on one worker thread
    // and on four.
    for threads in [1, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut replay = World::open_replay(&dir, config).unwrap();
            for (i, input) in rec.frames.iter().enumerate() {
                rec.compare(i, &replay.replay(input).hashes)
                    .unwrap_or_else(|m| panic!("{threads} threads: {m}"));
            }
        });
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pool holds whatever order the completions came in. Replayed completions
/// force the order the flaky live run met by chance: every chunk's first mesh is a
/// finer level, published before any base (a chunk with nothing drawn takes its
/// first mesh from the reserve), so the pool fills to the brim; then a prefetch
/// target appears and every collider within the collision radius of it is built at
/// once, before any pool is asked. Room is made for them (chunks far away draw their
/// base instead of their finer mesh), so the pool holds, and no chunk that drew
/// something stops drawing.
#[test]
fn colliders_built_at_once_never_exceed_a_pool_full_of_meshes() {
    let dir = scratch("full-pool");
    let spec = SyntheticConfig {
        chunks_side: 12,
        ..SyntheticConfig::small()
    };
    generate(&dir, &spec, &mut |_| {}).unwrap();
    let mut config = WorldConfig::default();
    config.budget.memory = 3 << 20;
    config.budget.upload = 1 << 30;
    let mut world = World::open_replay(&dir, config).unwrap();
    let flight = Flight::new(world.manifest(), 3);
    let [w, d] = world.manifest().extent;
    let at = |x: f32, z: f32| Vec3::new(x * w, flight.ground(x * w, z * d) + 45.0, z * d);
    let (a, b) = (at(0.3, 0.3), at(0.75, 0.8));
    let coarsest = farsight_terrain::LEVELS - 1;
    // Every dense chunk in reach publishes a finer mesh first, of sizes that leave
    // little of the pool unused.
    let mut terrain = Vec::new();
    for c in world.grid().chunk_coords() {
        let dense = world
            .grid()
            .entry(c)
            .is_some_and(|e| matches!(*e.cells, farsight_terrain::ChunkCells::Dense(_)));
        if dense && farsight_terrain::chunk_distance(a, c) <= config.draw_distance {
            terrain.push(TerrainPublication {
                chunk: c.to_array(),
                level: 0,
                bytes: (16 << 10) * (1 + terrain.len() as u64 % 4),
                empty: false,
            });
        }
    }
    terrain.sort_by_key(|p| p.chunk);
    let total: u64 = terrain.iter().map(|p| p.bytes).sum();
    assert!(total > config.budget.memory, "the meshes exceed the pool");
    let mut input = FrameInput {
        camera: a.to_array(),
        target: (a + Vec3::new(100.0, -40.0, 60.0)).to_array(),
        terrain,
        ..FrameInput::default()
    };
    let mut frames = Vec::new();
    let r0 = world.replay(&input);
    frames.push(input.clone());
    let pool = config.budget.memory;
    assert!(r0.memory <= pool, "{} resident of {pool}", r0.memory);
    assert!(
        r0.memory > pool - (64 << 10),
        "the meshes fill the pool: {} of {pool}",
        r0.memory
    );
    let drew: Vec<(IVec3, u8)> = world
        .terrain_levels()
        .filter_map(|(c, l)| Some((c, l?)))
        .collect();
    assert!(drew.iter().any(|&(_, l)| l == 0), "finer meshes drawn");

    input.terrain.clear();
    input.prefetch = Some(b.to_array());
    let r1 = world.replay(&input);
    frames.push(input.clone());
    let under_b = IVec3::new(
        (b.x / 128.0).floor() as i32,
        ((b.y - 45.0) / 128.0).floor() as i32,
        (b.z / 128.0).floor() as i32,
    );
    assert!(world.collision().holds(under_b), "the target's colliders");
    assert!(
        r1.collider_bytes > r0.collider_bytes + (pool - r0.memory),
        "the target's colliders alone overflow what was left: {} then {} bytes, {} free",
        r0.collider_bytes,
        r1.collider_bytes,
        pool - r0.memory
    );
    assert!(
        r1.memory <= pool,
        "{} resident of {pool} ({:?})",
        r1.memory,
        r1.systems.map(|s| s.memory)
    );
    let mut mesher = farsight_terrain::ChunkMesher::new();
    let mut based = 0;
    for &(c, _) in &drew {
        assert!(
            world.terrain_levels().any(|(d, l)| d == c && l.is_some()),
            "chunk {c} drew a mesh and draws none now"
        );
        if let Some(base) = world.terrain_drawn_base(c) {
            let fresh = mesher.mesh(world.grid(), c, coarsest);
            assert!(base.vertices == fresh.vertices && base.indices == fresh.indices);
            based += 1;
        }
    }
    assert!(
        based > 0,
        "chunks drawing a finer mesh draw their base instead"
    );

    // The same completions give the same decisions.
    let mut again = World::open_replay(&dir, config).unwrap();
    for (f, input) in frames.iter().enumerate() {
        let h = again.replay(input).hashes;
        assert_eq!(h, [r0.hashes, r1.hashes][f], "frame {f}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 27 item 21: a prefetched teleport target streams in over the frames
/// before the teleport, under per-frame budgets, instead of in the frame it
/// appears. On a world dense enough that the target's regions hold several
/// budgets of objects and its collision radius several frames of colliders, no
/// flown frame creates more than [`REGION_OBJECTS_PER_FRAME`] objects (a region
/// never splits, so one larger region may pass it alone) nor builds more than the
/// target's and the band's few colliders; the target is still streamed in by the
/// teleport (the loading screen after it waits for what is left), no frame has a
/// hole, and the run replays to the same decisions.
#[test]
fn a_prefetch_target_streams_in_a_few_objects_and_colliders_a_frame() {
    let dir = scratch("prefetch-budget");
    let spec = SyntheticConfig {
        regions_side: 64,
        buildings: 40,
        objects: 40_000,
        chunks_side: 12,
        ..SyntheticConfig::small()
    };
    generate(&dir, &spec, &mut |_| {}).unwrap();
    let config = WorldConfig {
        source_radius: 200.0,
        draw_distance: 400.0,
        ..WorldConfig::default()
    };
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let frames = 150;
    let flight = Flight::new(world.manifest(), frames);
    let (mut created, mut most_created, mut most_built) = (0u64, 0u32, 0u32);
    let (holes, over, _) = fly_with(&mut world, &flight, frames, &mut rec, &mut |r| {
        created += r.objects_created as u64;
        most_created = most_created.max(r.objects_created);
        most_built = most_built.max(r.colliders_built);
    });
    eprintln!(
        "{created} objects created in flown frames, at most {most_created} a frame; \
         at most {most_built} colliders built a frame"
    );
    assert_eq!(holes, 0, "frames with a hole");
    assert_eq!(over, 0, "frames over budget");
    assert!(
        created > 2 * REGION_OBJECTS_PER_FRAME as u64,
        "the prefetch targets bring several budgets of objects ({created})"
    );
    // The largest region of this world holds far fewer than the budget.
    assert!(
        most_created as usize <= REGION_OBJECTS_PER_FRAME,
        "{most_created} objects created in one frame"
    );
    // The target's few, the band's four, and the camera's move (a chunk row).
    assert!(
        most_built as usize <= PREFETCH_COLLIDERS_PER_FRAME + 4 + 8,
        "{most_built} colliders built in one frame"
    );
    let mut replay = World::open_replay(&dir, config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

//! `farsight world build / fly / replay` as a user runs them: a tiny world built into
//! a temporary folder, flown with a recording, replayed clean, and a tampered
//! recording refused at the frame and system that differ.

use std::path::{Path, PathBuf};
use std::process::Command;

use farsight_building::block_origin;
use farsight_stream::cluster::CookedModel;
use farsight_stream::region::{read_region_file, Scene};
use farsight_testkit::scratch;
use farsight_world::{EntityKind, Recording, SystemId, WorldManifest};

fn run(cwd: &Path, args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_farsight"))
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "error")
        .output()
        .expect("the binary runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A folder holding one small real mesh from the shared corpus.
fn one_mesh(d: &Path) -> PathBuf {
    let src = farsight_testkit::mesh("alien.glb");
    let models = d.join("meshes");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(src, models.join("alien.glb")).unwrap();
    models
}

#[test]
fn a_tiny_world_builds_flies_without_holes_within_budget_and_replays() {
    let d = scratch("fly");
    let models = one_mesh(&d);
    let (ok, out, err) = run(
        &d,
        &[
            "world",
            "build",
            "-o",
            "w",
            "--models",
            models.to_str().unwrap(),
            "--grid",
            "1",
            "--seed",
            "3",
        ],
    );
    assert!(ok, "{out}\n{err}");
    for what in ["terrain", "buildings", "models", "regions", "total"] {
        assert!(out.contains(what), "the summary names {what}: {out}");
    }
    assert!(d.join("w/world.ron").is_file());
    assert!(d.join("w/terrain.farsight").is_file());

    let (ok, out, err) = run(
        &d,
        &[
            "world",
            "fly",
            "w",
            "--frames",
            "90",
            "--record",
            "flight.rec",
            "--png",
            "above.png",
            "--plot",
            "budget.png",
            "--memory-mib",
            "64",
            "--upload-mib",
            "1",
        ],
    );
    assert!(ok, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        &lines[lines.len() - 2..],
        ["frames with a hole: 0", "frames over budget: 0"],
        "{out}"
    );
    for s in ["regions", "visibility", "clusters", "buildings", "terrain"] {
        assert!(out.contains(s), "the report names {s}: {out}");
    }
    assert!(std::fs::metadata(d.join("above.png")).unwrap().len() > 1000);
    assert!(std::fs::metadata(d.join("budget.png")).unwrap().len() > 1000);

    let (ok, out, err) = run(&d, &["world", "replay", "flight.rec"]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("every decision of every system matches"),
        "{out}"
    );

    // A recording whose I/O says one cluster read failed where it succeeded: the
    // cluster decisions of that frame differ (the scheduler reacts to a failed read on
    // the frame it hears of it), and the replay says so. (Moving a completion one frame
    // later is not enough: when the frame's upload budget is already spent, as it is
    // when reads finish in a burst on a loaded machine, the chunk waits either way.)
    let rec = Recording::read(&d.join("flight.rec")).unwrap();
    let k = rec
        .frames
        .iter()
        .position(|f| f.chunks_done.iter().any(|&(_, ok)| ok))
        .expect("a cluster read completed");
    let mut late = rec.clone();
    let c = late.frames[k]
        .chunks_done
        .iter_mut()
        .find(|(_, ok)| *ok)
        .expect("a successful read");
    c.1 = false;
    late.write(&d.join("late.rec")).unwrap();
    let (ok, _, err) = run(&d, &["world", "replay", "late.rec"]);
    assert!(!ok, "a tampered recording must fail");
    assert!(
        err.contains(&format!("frame {k}:")) && err.contains("clusters"),
        "names frame {k} and the clusters: {err}"
    );

    // A region read that never completed: the region system differs first.
    let r = rec
        .frames
        .iter()
        .position(|f| !f.regions_done.is_empty())
        .expect("a region loaded");
    let mut lost = rec.clone();
    lost.frames[r].regions_done.clear();
    lost.write(&d.join("lost.rec")).unwrap();
    let (ok, _, err) = run(&d, &["world", "replay", "lost.rec"]);
    assert!(!ok);
    assert!(
        err.contains(&format!("frame {r}:")) && err.contains("regions"),
        "names frame {r} and the regions: {err}"
    );

    // A changed decision hash is found at its frame and system.
    let mut forged = rec.clone();
    let f = forged.hashes.len() / 2;
    forged.hashes[f][SystemId::Terrain as usize] ^= 1;
    forged.write(&d.join("forged.rec")).unwrap();
    let (ok, _, err) = run(&d, &["world", "replay", "forged.rec"]);
    assert!(!ok);
    assert!(
        err.contains(&format!("frame {f}:")) && err.contains("terrain"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn world_build_refuses_bad_input_before_any_work() {
    let d = scratch("refuse");
    let models = one_mesh(&d);
    let m = models.to_str().unwrap();
    let (ok, _, err) = run(
        &d,
        &[
            "world", "build", "-o", "w", "--models", m, "--kit", "gothic",
        ],
    );
    assert!(!ok && err.contains("--kit gothic"), "{err}");
    assert!(!d.join("w").exists(), "nothing written");
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let (ok, _, err) = run(&d, &["world", "build", "-o", "w", "--models", "empty"]);
    assert!(
        !ok && err.contains("empty") && err.contains("no meshes"),
        "{err}"
    );
    std::fs::create_dir_all(d.join("full")).unwrap();
    std::fs::write(d.join("full/x"), b"x").unwrap();
    let (ok, _, err) = run(&d, &["world", "build", "-o", "full", "--models", m]);
    assert!(!ok && err.contains("not empty"), "{err}");
    let (ok, _, err) = run(&d, &["world", "fly", "nowhere"]);
    assert!(!ok && err.contains("nowhere"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Builds a world into `d/out` from `models`, with a few models and no props.
fn build(d: &Path, out: &str, models: &Path, extra: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "world",
        "build",
        "-o",
        out,
        "--models",
        models.to_str().unwrap(),
        "--props-per-block",
        "0",
    ];
    args.extend_from_slice(extra);
    run(d, &args)
}

/// The metropolis of `world build --grid 2` stands on its grid: each building in
/// the middle of its own block (ids name the block), one block side apart from its
/// neighbours, its footprint inside its block, no two footprints overlapping.
#[test]
fn world_build_stands_each_building_in_its_own_block() {
    let d = scratch("grid");
    let models = one_mesh(&d);
    let (ok, out, err) = build(
        &d,
        "w",
        &models,
        &["--grid", "2", "--models-per-block", "0"],
    );
    assert!(ok, "{out}\n{err}");
    let m = WorldManifest::read(&d.join("w")).unwrap();
    assert_eq!(m.buildings.len(), 4);
    let block = |id: &str| -> (u32, u32) {
        let mut parts = id.rsplit('-');
        let j = parts.next().unwrap().parse().unwrap();
        let i = parts.next().unwrap().parse().unwrap();
        (i, j)
    };
    let side = block_origin(1, 0)[0] - block_origin(0, 0)[0];
    let first = &m.buildings[0];
    let (i0, j0) = block(&first.id);
    let mut blocks = std::collections::BTreeSet::new();
    for b in &m.buildings {
        let (i, j) = block(&b.id);
        assert!(blocks.insert((i, j)), "two buildings in block {i} {j}");
        let (o, p) = (block_origin(i, j), block_origin(i0, j0));
        for axis in [0, 2] {
            let step = b.offset[axis] - first.offset[axis];
            assert!(
                (step - (o[axis] - p[axis])).abs() < 1e-3,
                "{}: offset {:?}, {} at {:?}",
                b.id,
                b.offset,
                first.id,
                first.offset
            );
            // The block is the one block side around the building's own origin.
            let (lo, hi) = (b.offset[axis] - side / 2.0, b.offset[axis] + side / 2.0);
            assert!(
                b.min[axis] >= lo && b.max[axis] <= hi,
                "{} leaves its block",
                b.id
            );
        }
    }
    assert_eq!(blocks.len(), 4);
    for (k, a) in m.buildings.iter().enumerate() {
        for b in &m.buildings[k + 1..] {
            let apart = (0..3)
                .step_by(2)
                .any(|x| a.max[x] <= b.min[x] || b.max[x] <= a.min[x]);
            assert!(apart, "{} and {} overlap", a.id, b.id);
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Every model entity of a world: (region, scale, its model's index).
fn model_entities(dir: &Path) -> Vec<(u32, f32, u32)> {
    let m = WorldManifest::read(dir).unwrap();
    let scene = Scene::open(&dir.join(&m.scene)).unwrap();
    let mut out = Vec::new();
    for r in 0..scene.manifest.regions.len() as u32 {
        for rec in read_region_file(&scene.region_path(r)).unwrap() {
            if let Some(EntityKind::Model(k)) = m.kind(rec.model) {
                out.push((r, rec.scale, k));
            }
        }
    }
    out
}

/// Models keep their authored size: scale 1 by default, `--model-scale` times
/// it otherwise, in region cells; a model wider than a region goes to region 0 (the
/// base, which spans the world) and one wider than the world is left out, each
/// said; a bad scale is refused before anything is written.
#[test]
fn world_build_keeps_the_authored_scale_and_places_models_where_they_fit() {
    let d = scratch("scale");
    let models = one_mesh(&d);
    let grid = ["--grid", "1", "--models-per-block", "6"];
    for (out, scale) in [("w1", None), ("w2", Some("2.5"))] {
        let mut extra = grid.to_vec();
        if let Some(s) = scale {
            extra.extend(["--model-scale", s]);
        }
        let (ok, stdout, err) = build(&d, out, &models, &extra);
        assert!(ok, "{stdout}\n{err}");
        let want: f32 = scale.map_or(1.0, |s| s.parse().unwrap());
        let placed = model_entities(&d.join(out));
        assert_eq!(placed.len(), 10, "{stdout}");
        for &(region, s, _) in &placed {
            assert_eq!(
                s, want,
                "{out}: every instance at the authored size times {want}"
            );
            assert_ne!(region, 0, "a small model stands in a region cell");
        }
    }
    // The model's width as authored, and the world's side: scales that make it
    // wider than a region cell, then wider than the world.
    let m = WorldManifest::read(&d.join("w1")).unwrap();
    let g = CookedModel::open(d.join("w1").join(&m.models[0].file)).unwrap();
    let (lo, hi) = (g.geometry().bounds_min, g.geometry().bounds_max);
    let across = (hi[0] - lo[0]).max(hi[2] - lo[2]);
    let wide = format!("{}", 1.5 * 64.0 / across);
    let mut extra = grid.to_vec();
    extra.extend(["--model-scale", &wide]);
    let (ok, stdout, err) = build(&d, "w3", &models, &extra);
    assert!(ok, "{stdout}\n{err}");
    let placed = model_entities(&d.join("w3"));
    assert_eq!(placed.len(), 10, "{stdout}");
    assert!(placed.iter().all(|p| p.0 == 0), "{placed:?}");
    assert!(
        stdout.contains("wider than a region (64)") && stdout.contains("region 0"),
        "{stdout}"
    );
    let huge = format!("{}", 1.5 * m.extent[0] / across);
    let mut extra = grid.to_vec();
    extra.extend(["--model-scale", &huge]);
    let (ok, stdout, err) = build(&d, "w4", &models, &extra);
    assert!(ok, "{stdout}\n{err}");
    assert!(model_entities(&d.join("w4")).is_empty());
    assert!(
        stdout.contains("wider than the world") && stdout.contains("left out"),
        "{stdout}"
    );
    for bad in ["0", "-1", "nan", "inf", "big"] {
        let (ok, _, err) = build(&d, "bad", &models, &["--model-scale", bad]);
        assert!(!ok && err.contains("--model-scale"), "{bad}: {err}");
        assert!(!d.join("bad").exists(), "{bad}: nothing written");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `world build --models DIR` takes the cluster files `cook mesh --clusters`
/// wrote as they are, beside source meshes and whatever their names (a scene of
/// several geometries too), says which, and flies the world; a LOD chain, a file
/// that only claims to be a farsight file and a damaged cluster file are each
/// refused before anything is written, naming the path once and what it is.
#[test]
fn world_build_takes_cooked_cluster_files_as_they_are() {
    let d = scratch("cooked");
    let mix = one_mesh(&d);
    let cook = |input: &str, out: &Path, kind: &str| {
        // Vendored in testdata/ (so a bare clone runs it), else the shared corpus.
        let input = farsight_testkit::mesh(input);
        let (ok, stdout, err) = run(
            &d,
            &[
                "cook",
                "mesh",
                input.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                kind,
            ],
        );
        assert!(ok, "{stdout}\n{err}");
    };
    cook(
        "craft_speederD/craft_speederD.gltf",
        &mix.join("speeder.farsight"),
        "--clusters",
    );
    // No extension: known by its first bytes.
    cook("cakeBirthday.glb", &mix.join("cake"), "--clusters");
    let (ok, out, err) = build(&d, "w", &mix, &["--grid", "1"]);
    assert!(ok, "{out}\n{err}");
    let line = out
        .lines()
        .find(|l| l.contains("taken as they are"))
        .unwrap_or_else(|| panic!("no line says what was taken as it is: {out}"));
    for f in ["speeder.farsight", "cake"] {
        assert!(line.contains(&*mix.join(f).to_string_lossy()), "{line}");
    }
    assert!(!line.contains("alien"), "alien.glb was cooked: {line}");
    let m = WorldManifest::read(&d.join("w")).unwrap();
    let files: std::collections::BTreeSet<&str> =
        m.models.iter().map(|e| e.file.as_str()).collect();
    assert_eq!(
        files.into_iter().collect::<Vec<_>>(),
        [
            "models/alien.farsight",
            "models/cake.farsight",
            "models/speeder.farsight"
        ]
    );
    assert!(m.models.len() > 3, "the cake's geometries are models each");
    for (f, src) in [("cake", "cake"), ("speeder", "speeder.farsight")] {
        let world = std::fs::read(d.join(format!("w/models/{f}.farsight"))).unwrap();
        assert!(
            world == std::fs::read(mix.join(src)).unwrap(),
            "{f} taken byte for byte"
        );
    }
    let (ok, out, err) = run(
        &d,
        &[
            "world", "fly", "w", "--frames", "3", "--png", "a.png", "--plot", "b.png",
        ],
    );
    assert!(ok, "{out}\n{err}");

    // Refused: a LOD chain, a .farsight that is not one, a damaged cluster file.
    let chain = d.join("chain");
    std::fs::create_dir_all(&chain).unwrap();
    cook("alien.glb", &chain.join("alien.farsight"), "--lod-chain");
    let fake = d.join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("model.farsight"), b"v 0 0 0\n").unwrap();
    let damaged = d.join("damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    let mut bytes = std::fs::read(mix.join("speeder.farsight")).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 4;
    std::fs::write(damaged.join("speeder.farsight"), bytes).unwrap();
    for (dir, file, what) in [
        (&chain, "alien.farsight", "LOD chain"),
        (&fake, "model.farsight", "not a farsight file"),
        (&damaged, "speeder.farsight", "damaged"),
    ] {
        let (ok, _, err) = build(&d, "refused", dir, &["--grid", "1"]);
        assert!(!ok, "{file} must be refused");
        let path = dir.join(file).to_string_lossy().into_owned();
        assert_eq!(err.matches(&path).count(), 1, "names {path} once: {err}");
        assert!(err.contains(what), "{what}: {err}");
        assert!(!d.join("refused").exists(), "nothing written for {file}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

//! `farsight world build / fly / replay` as a user runs them: a tiny world built into
//! a temporary folder, flown with a recording, replayed clean, and a tampered
//! recording refused at the frame and system that differ.

use std::path::{Path, PathBuf};
use std::process::Command;

use farsight_world::{Recording, SystemId};

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

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-world-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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

    // A recording whose I/O says one cluster read finished later than it did: the
    // cluster decisions of that frame differ, and the replay says so.
    let rec = Recording::read(&d.join("flight.rec")).unwrap();
    let k = rec
        .frames
        .iter()
        .position(|f| !f.chunks_done.is_empty())
        .expect("a cluster read completed");
    let mut late = rec.clone();
    let c = late.frames[k].chunks_done.remove(0);
    late.frames[k + 1].chunks_done.insert(0, c);
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

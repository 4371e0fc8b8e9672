//! The command line as a user meets it: the built `farsight` binary run as a
//! process on real files, its exit status, what it prints and what it writes.

use std::path::{Path, PathBuf};
use std::process::Command;

use farsight_testkit::scratch as temp;

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn farsight(cwd: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_farsight"))
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "error")
        .output()
        .expect("the binary runs");
    Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The vendored test meshes (`testdata/meshes`), so these tests run on a bare clone.
fn meshes() -> PathBuf {
    farsight_testkit::testdata_meshes()
}

/// An error is one plain sentence: no Rust Debug forms, the OS error said once.
fn assert_plain_error(o: &Out, must_name: &str) {
    assert!(!o.ok, "must fail: {}", o.stdout);
    let e = &o.stderr;
    assert!(e.contains(must_name), "names {must_name}: {e}");
    assert_eq!(e.matches(must_name).count(), 1, "names it once: {e}");
    for debug in ["Some(", "None", " { ", "Os {", "kind:"] {
        assert!(!e.contains(debug), "Debug form {debug:?}: {e}");
    }
    assert!(e.matches("os error").count() <= 1, "OS error twice: {e}");
    assert!(!e.contains("unexpected argument"), "{e}");
}

#[test]
fn terrain_of_two_chunks_flies_and_draws() {
    let d = temp("terrain2");
    let o = farsight(
        &d,
        &[
            "terrain",
            "--size",
            "2",
            "--frames",
            "4",
            "--frame-ms",
            "0",
            "--save",
            "t.farsight",
        ],
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let png = d.join("terrain.png");
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let info = dec.read_info().unwrap().info().clone();
    // 64 cell columns drawn 12 pixels each, the key below.
    assert_eq!(info.width, 768);
    assert!(info.height > 768, "{}", info.height);
    // A terrain save is described by inspect, never as "0 vertices 0 triangles".
    let i = farsight(&d, &["inspect", "t.farsight", "--no-manifest"]);
    assert!(i.ok, "{}", i.stderr);
    assert!(
        i.stdout.contains("TVOX") && i.stdout.contains("dense terrain chunk"),
        "{}",
        i.stdout
    );
    assert!(!i.stdout.contains("0 vertices"), "{}", i.stdout);
}

#[test]
fn bad_numbers_are_refused_in_plain_words_with_or_without_equals() {
    let d = temp("numbers");
    for args in [
        &["terrain", "--draw-distance", "nan"][..],
        &["terrain", "--draw-distance", "-5"],
        &["terrain", "--draw-distance=-5"],
        &["terrain", "--draw-distance", "inf"],
        &["terrain", "--size", "0"],
        &["terrain", "--size", "-3"],
        &["terrain", "--threads", "0"],
        &["demo", "--objects", "0"],
        &["demo", "--frames", "-1"],
        &["stream-sim", "--radius", "-1"],
        &["stream-sim", "--budget-mib", "nan"],
        &["stream-sim", "--fps", "-60"],
        &["stream-sim", "--regions-side", "0"],
        &["stream-sim", "--io-threads", "0"],
        &["stream-sim", "--frames", "10", "--teleport-frame", "10"],
        &[
            "cook",
            "mesh",
            "x.obj",
            "-o",
            "y",
            "--cluster-triangles",
            "2",
        ],
        &["cook", "mesh", "x.obj", "-o", "y", "--group-size", "0"],
        &["cook", "mesh", "x.obj", "-o", "y", "--max-levels", "-2"],
    ] {
        let o = farsight(&d, args);
        assert!(!o.ok, "{args:?} must fail");
        assert!(
            !o.stderr.contains("unexpected argument"),
            "{args:?}: {}",
            o.stderr
        );
        assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error:"), "{args:?}: {}", o.stderr);
        let flag = args.iter().rev().find(|a| a.starts_with("--")).unwrap();
        let flag = flag.split('=').next().unwrap();
        assert!(
            o.stderr.contains(flag),
            "{args:?} names {flag}: {}",
            o.stderr
        );
    }
    assert!(
        std::fs::read_dir(&d).unwrap().next().is_none(),
        "nothing written"
    );
}

#[test]
fn outputs_are_checked_before_the_work_and_named_once() {
    let d = temp("outputs");
    std::fs::write(d.join("afile"), b"x").unwrap();
    std::fs::create_dir(d.join("adir")).unwrap();
    let t = std::time::Instant::now();
    let o = farsight(&d, &["terrain", "--png", "nodir/t.png"]);
    assert_plain_error(&o, "nodir/t.png");
    assert!(o.stderr.contains("does not exist"), "{}", o.stderr);
    let o = farsight(&d, &["terrain", "--png", "adir"]);
    assert_plain_error(&o, "adir");
    let o = farsight(&d, &["terrain", "--save", "nodir/t.farsight"]);
    assert_plain_error(&o, "nodir/t.farsight");
    let o = farsight(&d, &["demo", "--out", "afile"]);
    assert_plain_error(&o, "afile");
    assert!(o.stderr.contains("not a folder"), "{}", o.stderr);
    let o = farsight(&d, &["stream-sim", "--out", "afile"]);
    assert_plain_error(&o, "afile");
    let o = farsight(&d, &["stream-sim", "--png", "nodir/s.png"]);
    assert_plain_error(&o, "nodir/s.png");
    // Found before long work: a full-size terrain run takes many seconds.
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    // Inputs too: a missing file is named once, no OS error twice.
    let o = farsight(&d, &["inspect", "missing.farsight"]);
    assert_plain_error(&o, "missing.farsight");
    let o = farsight(&d, &["cook", "mesh", "missing.gltf", "-o", "out.farsight"]);
    assert_plain_error(&o, "missing.gltf");
    // A glTF whose buffer file is missing: the uri is said plainly.
    std::fs::write(
        d.join("nobin.gltf"),
        r#"{"asset":{"version":"2.0"},"buffers":[{"byteLength":4,"uri":"x.bin"}]}"#,
    )
    .unwrap();
    let o = farsight(&d, &["cook", "mesh", "nobin.gltf", "-o", "out.farsight"]);
    assert_plain_error(&o, "nobin.gltf");
    assert!(o.stderr.contains("(x.bin)"), "{}", o.stderr);
}

#[test]
fn help_says_what_things_are() {
    let d = temp("help");
    for args in [
        &["--help"][..],
        &["demo", "--help"],
        &["terrain", "--help"],
        &["stream-sim", "--help"],
        &["inspect", "--help"],
        &["cook", "--help"],
        &["cook", "mesh", "--help"],
    ] {
        let o = farsight(&d, args);
        assert!(o.ok, "{args:?}");
        let lower = o.stdout.to_lowercase();
        assert!(!lower.contains("seed 00"), "{args:?}: {}", o.stdout);
    }
}

#[test]
fn cook_warns_in_words_and_inspect_describes_the_default_chain() {
    let d = temp("cook");
    let src = meshes().join("LightsPunctualLamp");
    std::fs::copy(
        src.join("LightsPunctualLamp.data.bin"),
        d.join("LightsPunctualLamp.data.bin"),
    )
    .unwrap();
    let json = std::fs::read_to_string(src.join("LightsPunctualLamp.gltf")).unwrap();
    let json = json.replacen(
        "\"asset\"",
        "\"extensionsRequired\":[\"KHR_lights_punctual\"],\"asset\"",
        1,
    );
    std::fs::write(d.join("lamp.gltf"), json).unwrap();
    let o = farsight(
        &d,
        &[
            "cook",
            "mesh",
            "lamp.gltf",
            "-o",
            "lamp.farsight",
            "--lod-chain",
        ],
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains(
            "warning: ignored required glTF extensions that carry no geometry: KHR_lights_punctual"
        ),
        "{}",
        o.stdout
    );
    for line in o.stdout.lines().filter(|l| l.starts_with("warning")) {
        assert!(!line.contains('{') && !line.contains("Some("), "{line}");
    }
    let i = farsight(&d, &["inspect", "lamp.farsight", "--no-manifest"]);
    assert!(i.ok, "{}", i.stderr);
    assert!(i.stdout.contains("LOD1"), "{}", i.stdout);
    assert!(!i.stdout.contains(" 0 vertices"), "{}", i.stdout);
    assert!(i.stdout.contains("total:"), "{}", i.stdout);
}

/// Issue 16, part 0: a cube drawn 125 times through `EXT_mesh_gpu_instancing`
/// cooks once, as a cooked LOD chain and as a cluster DAG, and inspect lists its
/// 125 placements.
#[test]
fn an_instanced_mesh_cooks_once_and_inspect_lists_its_instances() {
    let d = temp("instances");
    let src = meshes().join("SimpleInstancing");
    for f in ["SimpleInstancing.gltf", "SimpleInstancing_data.bin"] {
        std::fs::copy(src.join(f), d.join(f)).unwrap();
    }
    for (out, extra) in [
        ("chain.farsight", &["--lod-chain", "--cooked"][..]),
        ("dag.farsight", &[][..]),
    ] {
        let mut args = vec!["cook", "mesh", "SimpleInstancing.gltf", "-o", out];
        args.extend_from_slice(extra);
        let o = farsight(&d, &args);
        assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("drawn by 125 instances"), "{}", o.stdout);
        let i = farsight(&d, &["inspect", out, "--no-manifest"]);
        assert!(i.ok, "{}", i.stderr);
        assert!(
            i.stdout.contains("instances   125 of 1 geometries"),
            "{}",
            i.stdout
        );
        assert!(
            i.stdout.contains("instance 124  geometry 0"),
            "{}",
            i.stdout
        );
    }
    let i = farsight(&d, &["inspect", "chain.farsight", "--no-manifest"]);
    assert!(i.stdout.contains("MSS1"), "{}", i.stdout);
    assert!(
        i.stdout
            .contains("1 parts drawing 1 distinct ranges of 1 records"),
        "{}",
        i.stdout
    );
}

/// Issue 16, part 0: a scene of several meshes, one drawn five times
/// (cakeBirthday), cooks as a cluster DAG of one DAG per mesh; the cook's report
/// and inspect list the geometries and every placement.
#[test]
fn a_scene_cooks_one_cluster_dag_per_mesh_and_inspect_lists_them() {
    let d = temp("scene");
    std::fs::copy(meshes().join("cakeBirthday.glb"), d.join("cake.glb")).unwrap();
    let o = farsight(&d, &["cook", "mesh", "cake.glb", "-o", "cake.farsight"]);
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    assert!(
        o.stdout.contains("geometries stored once each, drawn by"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("geometry 1: "), "{}", o.stdout);
    let i = farsight(&d, &["inspect", "cake.farsight", "--no-manifest"]);
    assert!(i.ok, "{}", i.stderr);
    assert!(i.stdout.contains("  geometry 0   "), "{}", i.stdout);
    assert!(i.stdout.contains("triangles at level 0,"), "{}", i.stdout);
    assert!(
        i.stdout.contains("instance 0    geometry 0"),
        "{}",
        i.stdout
    );
}

#[test]
fn stream_sim_keeps_its_world_in_a_temporary_folder_unless_asked() {
    let d = temp("stream");
    // Two real meshes, cooked on the fly into cluster files and streamed.
    let src = d.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for m in ["alien.glb", "bunny.obj"] {
        std::fs::copy(meshes().join(m), src.join(m)).unwrap();
    }
    let small = [
        "stream-sim",
        "--regions-side",
        "4",
        "--meshes",
        "src",
        "--frames",
        "6",
        "--fps",
        "0",
    ];
    let o = farsight(&d, &small);
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let line = o
        .stdout
        .lines()
        .find(|l| l.contains("temporary folder, removed at exit"))
        .unwrap_or_else(|| panic!("{}", o.stdout));
    let path = line
        .split(" to ")
        .nth(1)
        .unwrap()
        .split(" (a temporary")
        .next()
        .unwrap();
    assert!(!Path::new(path).exists(), "{path} removed at exit");
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, ["src", "stream-sim.png"], "only the picture stays");
    assert!(o.stdout.contains("2 cooked models"), "{}", o.stdout);
    assert!(
        o.stdout.contains("failed reads or level checks 0"),
        "{}",
        o.stdout
    );
    let mut kept = small.to_vec();
    kept.extend(["--out", "world"]);
    let o = farsight(&d, &kept);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stdout.contains("(kept)"), "{}", o.stdout);
    let cooked = d.join("world").join("models");
    assert_eq!(std::fs::read_dir(&cooked).unwrap().count(), 2);
    // The kept cluster files stream again as --models.
    let o = farsight(
        &d,
        &[
            "stream-sim",
            "--regions-side",
            "4",
            "--models",
            "world/models",
            "--frames",
            "6",
            "--fps",
            "0",
        ],
    );
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stdout.contains("from world/models"), "{}", o.stdout);
    // A folder with nothing to stream is named once.
    let o = farsight(&d, &["stream-sim", "--models", "src"]);
    assert_plain_error(&o, "src");
    let o = farsight(&d, &["stream-sim", "--meshes", "nowhere"]);
    assert_plain_error(&o, "nowhere");
}

/// Every file under `dir` (relative path and bytes), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn two_shards_fill_the_cache_with_the_bytes_of_one_run_and_a_rerun_cooks_nothing() {
    let d = temp("shards");
    let m = meshes();
    let list = format!(
        "// five meshes, one as a cooked LOD chain\n(items: [\n\
         (input: \"{0}/bunny.obj\"),\n\
         (input: \"{0}/alien.glb\", max_levels: 3),\n\
         (input: \"{0}/Fox.glb\", cluster_triangles: 64),\n\
         (input: \"{0}/craft_speederD/craft_speederD.gltf\"),\n\
         (input: \"{0}/cakeBirthday.glb\", kind: LodChain, cooked: true),\n\
         ])",
        m.display()
    );
    std::fs::write(d.join("content.ron"), list).unwrap();
    let cook = |cache: &str, shard: &str, threads: &str| {
        let o = farsight(
            &d,
            &[
                "cook",
                "--manifest",
                "content.ron",
                "--shard",
                shard,
                "--cache",
                cache,
                "--threads",
                threads,
                "--keys",
                &format!("keys-{}.txt", shard.replace('/', "-")),
            ],
        );
        assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
        o.stdout
    };
    let one = cook("one", "0/1", "1");
    assert!(one.contains("5 of 5 items; 5 cooked, 0 already"), "{one}");
    let a = cook("two", "0/2", "2");
    let b = cook("two", "1/2", "2");
    assert!(a.contains("3 of 5 items; 3 cooked"), "{a}");
    assert!(b.contains("2 of 5 items; 2 cooked"), "{b}");
    let (t1, t2) = (tree(&d.join("one")), tree(&d.join("two")));
    assert_eq!(t1.len(), 5, "one entry per item");
    assert!(t1 == t2, "two shards wrote the bytes of one run");
    // Each shard lists the keys it produced; together they are the one run's.
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    let mut shards: Vec<String> = read("keys-0-2.txt")
        .lines()
        .chain(read("keys-1-2.txt").lines())
        .map(String::from)
        .collect();
    let mut whole: Vec<String> = read("keys-0-1.txt").lines().map(String::from).collect();
    shards.sort();
    whole.sort();
    assert_eq!(shards, whole);
    for line in &whole {
        let key = line.split(' ').next().unwrap();
        let entry = d
            .join("one")
            .join(&key[..2])
            .join(format!("{key}.farsight"));
        assert!(entry.is_file(), "{line}");
    }
    // A second run finds everything cached and changes nothing.
    let again = cook("one", "0/1", "2");
    assert!(again.contains("0 cooked, 5 already"), "{again}");
    assert!(tree(&d.join("one")) == t1);
    // Errors found before any cook, each naming its path once.
    for shard in ["3/2", "0/0", "1", "a/2"] {
        let o = farsight(&d, &["cook", "--manifest", "content.ron", "--shard", shard]);
        assert!(
            !o.ok && o.stderr.contains("--shard"),
            "{shard}: {}",
            o.stderr
        );
        assert_eq!(o.stderr.matches(shard).count(), 1, "{}", o.stderr);
    }
    std::fs::write(d.join("afile"), "x").unwrap();
    let o = farsight(
        &d,
        &[
            "cook",
            "--manifest",
            "content.ron",
            "--cache",
            "afile/cache",
        ],
    );
    assert_plain_error(&o, "afile/cache");
    let o = farsight(&d, &["cook", "--manifest", "missing.ron"]);
    assert_plain_error(&o, "missing.ron");
    std::fs::write(
        d.join("gone.ron"),
        "(items: [(input: \"no-such-mesh.glb\")])",
    )
    .unwrap();
    let o = farsight(&d, &["cook", "--manifest", "gone.ron", "--cache", "c2"]);
    assert_plain_error(&o, "no-such-mesh.glb");
    assert!(
        !d.join("c2").exists(),
        "nothing made before the list is good"
    );
    std::fs::write(
        d.join("bad.ron"),
        "(items: [(input: \"a.glb\", colour: 3)])",
    )
    .unwrap();
    let o = farsight(&d, &["cook", "--manifest", "bad.ron"]);
    assert_plain_error(&o, "bad.ron");
}

/// A cache entry is trusted only when it reads back whole. Empty, cut short, one
/// bit flipped, a version word of another kind and an unknown version word: each
/// damage is found on the next run, for a cluster DAG and for a cooked LOD chain;
/// the item is cooked again into the bytes of a clean run, the run says which entry
/// was bad and why, and exits 0. A sound cache then cooks nothing.
#[test]
fn a_damaged_cache_entry_is_cooked_again_and_the_run_says_so() {
    let d = temp("damaged-cache");
    let m = meshes();
    let list = format!(
        "(items: [(input: \"{0}/alien.glb\"), \
         (input: \"{0}/alien.glb\", kind: LodChain, cooked: true)])",
        m.display()
    );
    std::fs::write(d.join("content.ron"), list).unwrap();
    let cook = || {
        let o = farsight(&d, &["cook", "--manifest", "content.ron", "--cache", "c"]);
        assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
        o.stdout
    };
    let first = cook();
    assert!(first.contains("2 cooked, 0 already"), "{first}");
    let clean = tree(&d.join("c"));
    assert_eq!(clean.len(), 2);
    type Damage = fn(&mut Vec<u8>);
    let damages: [(&str, Damage); 5] = [
        ("empty", |b| b.clear()),
        ("truncated", |b| b.truncate(b.len() * 2 / 3)),
        ("bit-flipped", |b| {
            let at = b.len() / 2;
            b[at] ^= 0x10;
        }),
        // A known version, but not the one the entry's kind is written in.
        ("wrong version", |b| b[12] = if b[12] == 1 { 2 } else { 1 }),
        ("unknown version", |b| b[12] = 9),
    ];
    for (what, damage) in damages {
        for (rel, bytes) in &clean {
            let mut bad = bytes.clone();
            damage(&mut bad);
            std::fs::write(d.join("c").join(rel), bad).unwrap();
        }
        let out = cook();
        assert!(
            out.contains("2 cooked (2 replacing a bad cache entry), 0 already"),
            "{what}: {out}"
        );
        for (rel, _) in &clean {
            let line = out
                .lines()
                .find(|l| l.contains(&*rel.to_string_lossy()))
                .unwrap_or_else(|| panic!("{what}: no line names {}: {out}", rel.display()));
            assert!(
                line.contains("was bad") && line.contains("cooked again"),
                "{what}: {line}"
            );
            assert_eq!(line.matches(&*rel.to_string_lossy()).count(), 1, "{line}");
        }
        assert!(
            tree(&d.join("c")) == clean,
            "{what}: the clean bytes are back"
        );
    }
    let again = cook();
    assert!(again.contains("0 cooked, 2 already"), "{again}");
    assert!(!again.contains("was bad"), "{again}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn demo_draws_the_city_and_holds_under_300_bytes_per_object_at_a_million() {
    let d = temp("demo");
    let o = farsight(
        &d,
        &["demo", "--objects", "500", "--frames", "3", "--city-only"],
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let png = d.join("farsight-demo-city.png");
    let mut dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()))
        .read_info()
        .unwrap();
    let mut buf = vec![0; dec.output_buffer_size()];
    let info = dec.next_frame(&mut buf).unwrap();
    let px = &buf[..info.buffer_size()];
    let has = |c: [u8; 3]| px.chunks_exact(3).any(|p| p == c);
    // Every level's colour, culled grey and the fallback outline appear.
    for c in [
        [230, 80, 60],
        [240, 190, 60],
        [90, 190, 90],
        [95, 95, 95],
        [255, 60, 220],
    ] {
        assert!(has(c), "colour {c:?} missing from the city picture");
    }
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(left.len(), 1, "city-only writes the picture alone");

    let o = farsight(
        &d,
        &[
            "demo",
            "--objects",
            "1000000",
            "--frames",
            "1",
            "--city-only",
        ],
    );
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with("memory:"))
        .expect("a memory line");
    let per_object: f64 = line
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(" bytes per object").next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(per_object <= 300.0, "{line}");
}

/// The README's demo on a machine with only the binary: run from a folder with no
/// `../shared/data/meshes` beside it, the whole demo (city, terrain, streaming)
/// succeeds, streams generated meshes, says so, and writes its three pictures; so
/// does `world build` without `--models`.
#[test]
fn demo_and_world_build_run_without_the_shared_meshes() {
    let d = temp("no-shared");
    assert!(
        !d.join("../shared/data/meshes").exists(),
        "the test needs a folder without shared meshes beside it"
    );
    let o = farsight(&d, &["demo", "--objects", "500", "--frames", "3"]);
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let world = o
        .stdout
        .lines()
        .find(|l| l.starts_with("world: "))
        .unwrap_or_else(|| panic!("no world line: {}", o.stdout));
    assert!(
        world.contains("4 cooked models") && world.contains("4 generated meshes"),
        "{world}"
    );
    assert!(
        o.stdout
            .contains("frames in which a visible model had nothing to draw: 0"),
        "{}",
        o.stdout
    );
    for png in [
        "farsight-demo-city.png",
        "farsight-demo-terrain.png",
        "farsight-demo-stream.png",
    ] {
        let bytes = std::fs::read(d.join(png)).unwrap_or_else(|e| panic!("{png}: {e}"));
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
    // The generated meshes went to a temporary folder, not into the user's.
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "farsight-demo-city.png",
            "farsight-demo-stream.png",
            "farsight-demo-terrain.png"
        ]
    );

    let o = farsight(&d, &["world", "build", "-o", "w", "--grid", "1"]);
    assert!(o.ok, "{}\n{}", o.stdout, o.stderr);
    let models = o
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("models"))
        .unwrap_or_else(|| panic!("no models line: {}", o.stdout));
    assert!(
        models.contains("4 cooked") && models.contains("generated meshes"),
        "{models}"
    );
}

/// `inspect --manifest` prints a building file's structure (stored compressed) as
/// indented RON and nothing else: two bakes of one recipe print the same text, so
/// they diff clean. A missing file is named once.
#[test]
fn inspect_manifest_prints_a_buildings_structure_the_same_for_two_bakes() {
    let d = temp("manifest");
    for out in ["a", "b"] {
        let args = [
            "bake",
            "buildings",
            "--kit",
            "dark-city",
            "--grid",
            "1",
            "--threads",
            "1",
            "-o",
            out,
        ];
        let o = farsight(&d, &args);
        assert!(o.ok, "{}", o.stderr);
    }
    let a = farsight(&d, &["inspect", "a/dark-city-0-0.farsight", "--manifest"]);
    let b = farsight(&d, &["inspect", "b/dark-city-0-0.farsight", "--manifest"]);
    assert!(a.ok && b.ok, "{}{}", a.stderr, b.stderr);
    assert_eq!(a.stdout, b.stdout);
    let text = &a.stdout;
    assert!(
        text.contains("\n    kind: \"farsight-building\","),
        "{text}"
    );
    assert!(text.contains("\n    recipe: Some("), "{text}");
    assert!(text.contains("\n    levels: ["), "{text}");
    assert!(
        !text.contains("records:") && !text.contains("identifier"),
        "{text}"
    );
    assert!(text.lines().count() > 1000);
    let o = farsight(&d, &["inspect", "missing.farsight", "--manifest"]);
    assert_plain_error(&o, "missing.farsight");
    let _ = std::fs::remove_dir_all(&d);
}

/// A reader that goes away before the report (`farsight cook mesh ... | head -1`)
/// ends the command quietly: success, no panic message, for every command that
/// prints (here one that prints at the end and one that prints before its work).
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::process::Stdio;
    let d = temp("closed-stdout");
    let bunny = meshes().join("bunny.obj");
    let runs: [&[&str]; 2] = [
        &[
            "cook",
            "mesh",
            bunny.to_str().expect("utf-8 path"),
            "-o",
            "b.farsight",
        ],
        &["terrain", "--size", "1", "--frames", "2", "--frame-ms", "0"],
    ];
    for args in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_farsight"))
            .args(args)
            .current_dir(&d)
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        // Close the read end before the command writes anything.
        drop(child.stdout.take());
        let o = child.wait_with_output().expect("the binary ends");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert!(o.status.success(), "{args:?}: {:?} {stderr}", o.status);
    }
}

#[test]
fn a_closed_stderr_still_ends_with_the_commands_exit_code() {
    use std::process::Stdio;
    let d = temp("closed-stderr");
    // An error (a missing input) is said on stderr, which nobody reads any more.
    let mut child = Command::new(env!("CARGO_BIN_EXE_farsight"))
        .args(["cook", "mesh", "no-such-mesh.obj", "-o", "b.farsight"])
        .current_dir(&d)
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stderr.take());
    let o = child.wait_with_output().expect("the binary ends");
    // A panic would end with 101; the error's own exit code is 1.
    assert_eq!(o.status.code(), Some(1), "{:?}", o.status);
}

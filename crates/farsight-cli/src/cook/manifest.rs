//! `farsight cook --manifest LIST --shard i/n [--cache DIR]`: cooks a deterministic
//! share of a content list into a content-addressed cache, so a distributed build
//! engine (a Kubernetes indexed Job, Bazel or Buck2 remote execution) shards a
//! studio's content with no farsight scheduler: run shard `i` of `n` anywhere,
//! point every shard at the same cache (or merge their caches: entries never
//! collide).
//!
//! A cook is a pure function of (input bytes, options, tool version). Each item's
//! key is the BLAKE3 hash of the tool version, the resolved options (every field of
//! the cook's configuration, defaults included), the input's file name and the
//! bytes of every file the cook reads ([`farsight_mesh::cook_inputs`]); its entry is
//! `DIR/<first two hex digits>/<key>.farsight`. An entry that exists is read whole
//! and checked ([`super::entry`]); a sound one is not cooked again, a damaged one
//! is cooked again and the run says why. Item `j` of the list (from 0) belongs to
//! shard `j mod n`.
//!
//! The content list is RON:
//!
//! ```text
//! (
//!     items: [
//!         (input: "meshes/bunny.obj"),                       // a cluster DAG
//!         (input: "meshes/Fox.glb", max_levels: 6, cluster_triangles: 64),
//!         (input: "meshes/ToyCar/ToyCar.gltf", kind: LodChain, cooked: true),
//!     ],
//! )
//! ```
//!
//! Inputs are relative to the list's folder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Deserialize;

use farsight_mesh::{cook_file, cook_inputs, ClusterConfig, CookKind};

use super::KindConfig;

#[derive(Args)]
pub struct ContentArgs {
    /// Cook a content list (RON: `(items: [(input: "a.glb"), ...])`, inputs relative
    /// to the list's folder; see examples/cook/content.ron) into a content-addressed
    /// cache instead of naming meshes.
    #[arg(long, value_name = "LIST")]
    pub manifest: Option<PathBuf>,
    /// This run's share of the list as `i/n`, 0 <= i < n: items i, i+n, i+2n, ...
    /// (a Kubernetes indexed Job passes `$JOB_COMPLETION_INDEX/n`).
    #[arg(long, value_name = "I/N", value_parser = parse_shard, default_value = "0/1",
          requires = "manifest")]
    pub shard: Shard,
    /// The content-addressed cache: `DIR/<2 hex>/<key>.farsight` per item; an entry
    /// already there is read whole and, when sound, not cooked again (a damaged one
    /// is cooked again). Shards may share it.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "farsight-cache",
        requires = "manifest"
    )]
    pub cache: PathBuf,
    /// Also write the keys this shard produced (cooked or found cached) to this
    /// file, one `KEY INPUT` line per item, in list order.
    #[arg(long, value_name = "FILE", requires = "manifest")]
    pub keys: Option<PathBuf>,
    /// Threads cooking (0: one per core). The cache bytes do not depend on it.
    #[arg(long, default_value_t = 0, requires = "manifest")]
    pub threads: usize,
}

/// Shard `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| "not I/N (for example 0/4)".to_string())?;
    let num = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("{t:?} is not a whole number"))
    };
    let (index, count) = (num(i)?, num(n)?);
    if count == 0 {
        return Err("the shard count must be at least 1".into());
    }
    if index >= count {
        return Err(format!(
            "the shard index must be below the count (0/{count} to {}/{count})",
            count - 1
        ));
    }
    Ok(Shard { index, count })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContentList {
    items: Vec<Item>,
}

#[derive(Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ItemKind {
    /// A cluster LOD DAG (`cook mesh --clusters`).
    #[default]
    Clusters,
    /// A discrete LOD chain (`cook mesh --lod-chain`).
    LodChain,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    input: PathBuf,
    #[serde(default)]
    kind: ItemKind,
    /// With `LodChain`: GPU-cooked records (`--cooked`).
    #[serde(default)]
    cooked: bool,
    #[serde(default)]
    cluster_triangles: Option<u64>,
    #[serde(default)]
    group_size: Option<u64>,
    #[serde(default)]
    max_levels: Option<u64>,
}

/// One item ready to cook: its input (resolved) and cook kind.
struct Job {
    index: usize,
    input: PathBuf,
    kind: CookKind,
}

/// What became of one item.
enum Outcome {
    Cooked(String),
    Cached(String),
    /// Cooked again: the key, and why the entry in the cache was not trusted.
    Recooked(String, String),
}

/// Reads and checks the list: every item's options in range and every input a
/// file (all items, not only this shard's, so every shard refuses a bad list).
fn read_list(list: &Path) -> Result<Vec<Job>, Box<dyn std::error::Error>> {
    let text =
        std::fs::read_to_string(list).map_err(|e| format!("--manifest {}: {e}", list.display()))?;
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let parsed: ContentList = options.from_str(&text).map_err(|e| {
        format!(
            "{}: line {} column {}: {}",
            list.display(),
            e.position.line,
            e.position.col,
            e.code
        )
    })?;
    let base = list.parent().unwrap_or(Path::new("."));
    let defaults = ClusterConfig::default();
    let mut jobs = Vec::with_capacity(parsed.items.len());
    for (index, item) in parsed.items.into_iter().enumerate() {
        let input = base.join(&item.input);
        let bad = |what: String| {
            format!(
                "{} item {index} ({}): {what}",
                list.display(),
                input.display()
            )
        };
        let range = |name: &str, v: Option<u64>, lo: u64, hi: u64| match v {
            Some(v) if !(lo..=hi).contains(&v) => {
                Err(bad(format!("{name} {v} is not in {lo}..={hi}")))
            }
            _ => Ok(()),
        };
        range("cluster_triangles", item.cluster_triangles, 4, 128)?;
        range("group_size", item.group_size, 1, 4096)?;
        range("max_levels", item.max_levels, 1, 64)?;
        let lod_chain = item.kind == ItemKind::LodChain;
        if item.cooked && !lod_chain {
            return Err(bad("cooked: true needs kind: LodChain".into()).into());
        }
        if !input.is_file() {
            return Err(format!(
                "{}: no such file (item {index} of {})",
                input.display(),
                list.display()
            )
            .into());
        }
        let kind = KindConfig {
            lod_chain,
            cooked: item.cooked,
            cluster_triangles: item
                .cluster_triangles
                .unwrap_or(defaults.max_triangles as u64),
            group_size: item.group_size.unwrap_or(defaults.partition_size as u64),
            max_levels: item.max_levels,
        }
        .kind();
        jobs.push(Job { index, input, kind });
    }
    Ok(jobs)
}

/// The cache key of a job: BLAKE3 of the tool version, the resolved options, the
/// input's file name (a cook names its output after it) and every file it reads,
/// each length-prefixed.
fn key(job: &Job) -> Result<String, String> {
    let files = cook_inputs(&job.input).map_err(|e| named(&job.input, &e))?;
    let mut h = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"farsight cook");
    field(env!("CARGO_PKG_VERSION").as_bytes());
    field(format!("{:?}", job.kind).as_bytes());
    let name = job.input.file_name().unwrap_or_default();
    field(name.to_string_lossy().as_bytes());
    for f in &files {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        field(&bytes);
    }
    Ok(h.finalize().to_hex().to_string())
}

/// An error's text naming `input` once (import errors name their file themselves).
fn named(input: &Path, e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    if text.contains(&input.display().to_string()) {
        text
    } else {
        format!("{}: {text}", input.display())
    }
}

fn entry_path(cache: &Path, key: &str) -> PathBuf {
    cache.join(&key[..2]).join(format!("{key}.farsight"))
}

/// Writes `bytes` to `path` through a temporary file unique to this process and
/// item, then a rename: shards racing on one key each write whole identical files.
fn write_entry(path: &Path, bytes: &[u8], item: usize) -> Result<(), String> {
    let dir = path.parent().expect("an entry has a folder");
    let wrap = |e: std::io::Error| format!("{}: {e}", path.display());
    std::fs::create_dir_all(dir).map_err(wrap)?;
    let tmp = dir.join(format!(".tmp-{}-{item}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(wrap)?;
    std::fs::rename(&tmp, path).map_err(wrap)
}

fn cook_job(job: &Job, cache: &Path) -> Result<Outcome, String> {
    let key = key(job)?;
    let path = entry_path(cache, &key);
    // An entry is trusted only after a full read; a damaged one is replaced.
    let bad = match path.is_file() {
        true => match super::entry::check_entry(&path, &job.kind) {
            Ok(()) => return Ok(Outcome::Cached(key)),
            Err(e) => Some(format!(
                "its cache entry {} was bad ({e}): cooked again and replaced",
                path.display()
            )),
        },
        false => None,
    };
    let out = cook_file(&job.input, &job.kind).map_err(|e| named(&job.input, &e))?;
    write_entry(&path, &out.bytes, job.index)?;
    Ok(match bad {
        Some(why) => Outcome::Recooked(key, why),
        None => Outcome::Cooked(key),
    })
}

/// Checks the cache can be written: creates it and a probe file in it.
fn check_cache(cache: &Path) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("--cache {}: cannot write there: {e}", cache.display());
    std::fs::create_dir_all(cache).map_err(fail)?;
    let probe = cache.join(format!(".probe-{}", std::process::id()));
    std::fs::File::create(&probe)
        .and_then(|mut f| f.write_all(b"farsight"))
        .map_err(fail)?;
    std::fs::remove_file(&probe).map_err(fail)
}

pub fn run(args: ContentArgs) -> Result<(), Box<dyn std::error::Error>> {
    let Some(list) = &args.manifest else {
        return Err(
            "cook needs what to cook: `cook mesh IN... -o OUT` or `cook --manifest LIST`".into(),
        );
    };
    // Everything a shard can find wrong is found before the first cook.
    let jobs = read_list(list)?;
    if let Some(k) = &args.keys {
        crate::output::check_output_file(k, "key list")?;
    }
    check_cache(&args.cache)?;
    let Shard { index, count } = args.shard;
    let mine: Vec<&Job> = jobs
        .iter()
        .filter(|j| j.index % count as usize == index as usize)
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()?;
    let bar = ProgressBar::new(mine.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:20}] {pos}/{len} items {msg} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    bar.set_message(format!("shard {index}/{count}"));
    let results: Vec<Result<Outcome, String>> = pool.install(|| {
        mine.par_iter()
            .map(|job| {
                let r = cook_job(job, &args.cache);
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let (mut cooked, mut cached, mut failed, mut recooked) = (0, 0, 0, 0);
    let mut keys = String::new();
    for (job, r) in mine.iter().zip(results) {
        let (key, what, note) = match r {
            Ok(Outcome::Cooked(k)) => {
                cooked += 1;
                (k, "cooked", String::new())
            }
            Ok(Outcome::Recooked(k, why)) => {
                cooked += 1;
                recooked += 1;
                (k, "cooked", format!(": {why}"))
            }
            Ok(Outcome::Cached(k)) => {
                cached += 1;
                (k, "cached", String::new())
            }
            Err(e) => {
                failed += 1;
                crate::output::say(format_args!("{e} (nothing written)"));
                continue;
            }
        };
        println!("{key} {what:<6} {}{note}", job.input.display());
        keys.push_str(&format!("{key} {}\n", job.input.display()));
    }
    println!(
        "shard {index}/{count}: {} of {} items; {cooked} cooked{}, {cached} already in {}{}",
        mine.len(),
        jobs.len(),
        if recooked > 0 {
            format!(" ({recooked} replacing a bad cache entry)")
        } else {
            String::new()
        },
        args.cache.display(),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    );
    if let Some(k) = &args.keys {
        std::fs::write(k, keys).map_err(|e| format!("{}: {e}", k.display()))?;
        println!("keys written to {}", k.display());
    }
    if failed > 0 {
        return Err(format!("{failed} of {} items failed", mine.len()).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_covers_a_gltf_buffer_and_the_options() {
        let d = std::env::temp_dir().join(format!("farsight-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let src = farsight_testkit::mesh("craft_speederD");
        for f in ["craft_speederD.gltf", "craft_speederD_data.bin"] {
            std::fs::copy(src.join(f), d.join(f)).unwrap();
        }
        let job = |max_levels| Job {
            index: 0,
            input: d.join("craft_speederD.gltf"),
            kind: KindConfig {
                lod_chain: false,
                cooked: false,
                cluster_triangles: 128,
                group_size: 8,
                max_levels,
            }
            .kind(),
        };
        let k = key(&job(None)).unwrap();
        assert_eq!(k.len(), 64);
        assert_eq!(key(&job(None)).unwrap(), k, "a pure function");
        assert_ne!(key(&job(Some(3))).unwrap(), k, "options are in the key");
        let bin = d.join("craft_speederD_data.bin");
        let mut bytes = std::fs::read(&bin).unwrap();
        bytes[10] ^= 1;
        std::fs::write(&bin, &bytes).unwrap();
        assert_ne!(
            key(&job(None)).unwrap(),
            k,
            "the external buffer is in the key"
        );
        std::fs::remove_file(&bin).unwrap();
        assert!(key(&job(None))
            .unwrap_err()
            .contains("craft_speederD_data.bin"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn shards_parse_as_index_below_count() {
        assert_eq!(parse_shard("1/4"), Ok(Shard { index: 1, count: 4 }));
        for bad in ["3/2", "0/0", "2", "a/2", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}

//! `farsight bake buildings`: bakes a metropolis of procedural buildings from a kit
//! under the level ladder of docs/design/baked-buildings.md, writes one full (and with `--cooked` one cooked) file per
//! building, and prints triangles drawn per level (every instance counted), placed
//! pieces per level, unique triangles, file sizes and bake time. Also the building
//! summary `farsight inspect` prints for building files.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use farsight_building::bake::{
    bake_cached, Kernel, KernelError, KernelMesh, ManifoldKernel, MeshCache,
};
use farsight_building::{
    metropolis, BakedBuilding, Geometry, Kit, LodCell, LodPolicy, RecordCache,
};
use farsight_format::MeshData;
use glam::DAffine3;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

#[derive(clap::Args)]
pub struct BakeArgs {
    #[command(subcommand)]
    pub what: BakeWhat,
}

#[derive(clap::Subcommand)]
pub enum BakeWhat {
    /// A metropolis of procedural buildings from a kit, baked with LOD ladders.
    Buildings(BuildingsArgs),
}

#[derive(clap::Args)]
pub struct BuildingsArgs {
    /// The kit: `corporate`, `dark-city`, or the path of a kit RON file.
    #[arg(long)]
    pub kit: String,
    /// Blocks per side of the metropolis (N x N buildings).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub grid: u32,
    /// Output folder (made if missing).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: Option<u32>,
    /// Also write one cooked file per building.
    #[arg(long)]
    pub cooked: bool,
    /// Concatenate the far level into square cells of this side in metres.
    #[arg(long)]
    pub cell: Option<f32>,
    /// Seed of the metropolis generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(args: BakeArgs) -> Result<(), Box<dyn std::error::Error>> {
    match args.what {
        BakeWhat::Buildings(a) => buildings(a),
    }
}

fn load_kit(name: &str) -> Result<Kit, Box<dyn std::error::Error>> {
    if let Some(k) = Kit::builtin(name) {
        return Ok(k);
    }
    let path = PathBuf::from(name);
    if !path.exists() {
        return Err(format!(
            "--kit {name}: neither a built-in kit (corporate, dark-city) nor an existing file"
        )
        .into());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Kit::from_ron(&text).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// Tangents by mikktspace (`bevy_mikktspace`, the generator Bevy runs on a mesh that
/// has none), per vertex: the value written for the last face corner of that vertex.
/// A vertex mikktspace leaves without one (a degenerate face with no neighbour)
/// takes farsight_building's UV-gradient tangent.
pub fn mikktspace_tangents(m: &MeshData) -> Vec<[f32; 4]> {
    struct Corners<'a> {
        mesh: &'a MeshData,
        out: Vec<[f32; 4]>,
    }
    impl Corners<'_> {
        fn vertex(&self, face: usize, vert: usize) -> usize {
            self.mesh.indices[face * 3 + vert] as usize
        }
    }
    impl bevy_mikktspace::Geometry for Corners<'_> {
        fn num_faces(&self) -> usize {
            self.mesh.indices.len() / 3
        }
        fn num_vertices_of_face(&self, _face: usize) -> usize {
            3
        }
        fn position(&self, face: usize, vert: usize) -> [f32; 3] {
            self.mesh.positions[self.vertex(face, vert)]
        }
        fn normal(&self, face: usize, vert: usize) -> [f32; 3] {
            self.mesh.normals[self.vertex(face, vert)]
        }
        fn tex_coord(&self, face: usize, vert: usize) -> [f32; 2] {
            self.mesh.uvs[self.vertex(face, vert)]
        }
        fn set_tangent(
            &mut self,
            tangent: Option<bevy_mikktspace::TangentSpace>,
            face: usize,
            vert: usize,
        ) {
            if let Some(t) = tangent {
                let v = self.vertex(face, vert);
                self.out[v] = t.tangent_encoded();
            }
        }
    }
    let mut corners = Corners {
        mesh: m,
        out: farsight_building::uv_gradient_tangents(m),
    };
    // The error type has no values: generation cannot fail.
    let _ = bevy_mikktspace::generate_tangents(&mut corners);
    corners.out
}

/// A kernel that times every call of the one it wraps (the bake's kernel share).
struct Timed<K> {
    kernel: K,
    nanos: AtomicU64,
}

impl<K> Timed<K> {
    fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }

    fn spent(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

impl<K: Kernel> Kernel for Timed<K> {
    type Solid = K::Solid;
    fn solid(
        &self,
        geometry: &Geometry,
        transform: &DAffine3,
        operand: u32,
    ) -> Result<Self::Solid, KernelError> {
        self.time(|| self.kernel.solid(geometry, transform, operand))
    }
    fn union(&self, solids: &[Self::Solid]) -> Result<Self::Solid, KernelError> {
        self.time(|| self.kernel.union(solids))
    }
    fn subtract(
        &self,
        solid: &Self::Solid,
        cutter: &Self::Solid,
    ) -> Result<Self::Solid, KernelError> {
        self.time(|| self.kernel.subtract(solid, cutter))
    }
    fn mesh(&self, solid: &Self::Solid) -> Result<KernelMesh, KernelError> {
        self.time(|| self.kernel.mesh(solid))
    }
}

/// Seconds per phase, summed over the threads.
#[derive(Default)]
struct Phases {
    kernel: f64,
    bake: f64,
    full: f64,
    cooked: f64,
}

struct Baked {
    id: String,
    bake: f64,
    full_secs: f64,
    cooked_secs: f64,
    drawn: Vec<usize>,
    pieces: Vec<usize>,
    unique: usize,
    full: usize,
    cooked: usize,
}

fn buildings(a: BuildingsArgs) -> Result<(), Box<dyn std::error::Error>> {
    // Everything that can be refused is refused before any work.
    let kit = load_kit(&a.kit)?;
    let mut ladder = LodPolicy::ladder();
    if let Some(side) = a.cell {
        ladder[2].cell = Some(LodCell::Side(side));
        LodPolicy::check(&ladder).map_err(|e| format!("--cell {side}: {e}"))?;
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0) as usize)
        .build()?;
    let city = metropolis(&kit, a.grid, a.seed);
    let bar = ProgressBar::new(city.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} baking {bar:30} {pos}/{len} buildings {elapsed}")
            .expect("a valid template"),
    );
    let start = Instant::now();
    // One cache for the city: each distinct element of the kit is meshed once.
    let cache = MeshCache::new();
    let (full_records, cooked_records) = (RecordCache::new(), RecordCache::new());
    let kernel = Timed {
        kernel: ManifoldKernel,
        nanos: AtomicU64::new(0),
    };
    let results: Vec<Result<Baked, String>> = pool.install(|| {
        city.par_iter()
            .map(|b| {
                let t0 = Instant::now();
                let (baked, _) =
                    bake_cached(b, &ladder, &kernel, &cache).map_err(|e| e.to_string())?;
                let t1 = Instant::now();
                let full = baked
                    .write_full_with(&full_records)
                    .map_err(|e| e.to_string())?;
                let t2 = Instant::now();
                let path = a.out.join(format!("{}.farsight", b.id));
                std::fs::write(&path, &full).map_err(|e| format!("{}: {e}", path.display()))?;
                let mut cooked = 0;
                let mut cooked_secs = 0.0;
                if a.cooked {
                    let t3 = Instant::now();
                    let bytes = baked
                        .write_cooked_with(&mikktspace_tangents, &cooked_records)
                        .map_err(|e| e.to_string())?;
                    cooked_secs = t3.elapsed().as_secs_f64();
                    let path = a.out.join(format!("{}.cooked.farsight", b.id));
                    std::fs::write(&path, &bytes)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    cooked = bytes.len();
                }
                bar.inc(1);
                Ok(Baked {
                    id: b.id.clone(),
                    bake: (t1 - t0).as_secs_f64(),
                    full_secs: (t2 - t1).as_secs_f64(),
                    cooked_secs,
                    drawn: baked.levels.iter().map(|l| l.drawn_triangles()).collect(),
                    pieces: baked.levels.iter().map(|l| l.pieces().count()).collect(),
                    unique: baked.triangles(),
                    full: full.len(),
                    cooked,
                })
            })
            .collect()
    });
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let results: Vec<Baked> = results.into_iter().collect::<Result<_, _>>()?;
    let phases = Phases {
        kernel: kernel.spent().as_secs_f64(),
        bake: results.iter().map(|b| b.bake).sum(),
        full: results.iter().map(|b| b.full_secs).sum(),
        cooked: results.iter().map(|b| b.cooked_secs).sum(),
    };
    print!(
        "{}",
        table(
            &kit.id,
            a.grid,
            &ladder,
            &results,
            a.cooked,
            elapsed.as_secs_f64()
        )
    );
    println!(
        "phases           kernel {:.2} s, rest of bake {:.2} s, full files {:.2} s, cooked files {:.2} s (summed over threads); {} elements meshed, {} from the cache",
        phases.kernel,
        (phases.bake - phases.kernel).max(0.0),
        phases.full,
        phases.cooked,
        cache.misses(),
        cache.hits()
    );
    println!("wrote {} buildings to {}", results.len(), a.out.display());
    Ok(())
}

fn table(
    kit: &str,
    grid: u32,
    ladder: &[LodPolicy],
    r: &[Baked],
    cooked: bool,
    secs: f64,
) -> String {
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "{kit} {grid} x {grid} metropolis: {} buildings", r.len());
    let _ = writeln!(
        w,
        "{:<7} {:<48} {:>12} {:>14}",
        "level", "policy", "triangles", "placed pieces"
    );
    let mut from = 0.0;
    for (n, p) in ladder.iter().enumerate() {
        let range = match p.until {
            Some(u) => format!("{from:.0}-{u:.0} m"),
            None => format!("{from:.0} m-"),
        };
        from = p.until.unwrap_or(from);
        let cell = match p.cell {
            Some(LodCell::Side(side)) => format!(", {side} m cells"),
            Some(LodCell::Whole) => ", whole".into(),
            None => String::new(),
        };
        let policy = format!(
            "{range}, min {} m, seg {}{}{}",
            p.min_feature,
            p.segment_scale,
            if p.drop_interior { ", no interior" } else { "" },
            cell
        );
        let drawn: usize = r.iter().map(|b| b.drawn[n]).sum();
        let pieces: usize = r.iter().map(|b| b.pieces[n]).sum();
        let _ = writeln!(w, "{n:<7} {policy:<48} {drawn:>12} {pieces:>14}");
    }
    let unique: usize = r.iter().map(|b| b.unique).sum();
    let full: usize = r.iter().map(|b| b.full).sum();
    let _ = writeln!(w, "unique triangles {unique}");
    let _ = writeln!(w, "full files       {:.2} MB", full as f64 / 1e6);
    if cooked {
        let c: usize = r.iter().map(|b| b.cooked).sum();
        let _ = writeln!(w, "cooked files     {:.2} MB", c as f64 / 1e6);
    }
    let _ = writeln!(w, "bake time        {secs:.2} s");
    if let Some(big) = r.iter().max_by_key(|b| b.full) {
        let _ = writeln!(w, "largest          {} ({} bytes)", big.id, big.full);
    }
    s
}

/// A building file's summary for `farsight inspect` (`None` for other asset kinds).
pub fn describe(bytes: &[u8]) -> Option<String> {
    let raw = farsight_format::RawFile::read(bytes).ok()?;
    if !raw.manifest_text().contains(farsight_building::file::KIND) {
        return None;
    }
    let mut s = String::new();
    let w = &mut s;
    match BakedBuilding::read(bytes) {
        Err(e) => {
            let _ = writeln!(w, "\nbuilding    refused: {e}");
        }
        Ok(b) => {
            let kind = if b.recipe.is_some() {
                "full (recipe, provenance, f32 meshes)"
            } else {
                "cooked (no recipe)"
            };
            let _ = writeln!(w, "\nbuilding    {} — {kind}", b.id());
            if let Some(r) = raw
                .records()
                .find(|r| r.tag == farsight_building::file::STRUCTURE_TAG)
            {
                let _ = writeln!(
                    w,
                    "structure   record #{} ({}): {} bytes, compact RON in zstd (layout {})",
                    r.index.0,
                    r.tag,
                    r.bytes.len(),
                    farsight_building::file::LAYOUT
                );
            }
            if let Some(r) = &b.recipe {
                let _ = writeln!(
                    w,
                    "recipe      {} parts, {} instances, {} merge groups",
                    r.parts.len(),
                    r.instances.len(),
                    r.merge_groups.len()
                );
            }
            for (n, l) in b.levels.iter().enumerate() {
                let p = &b.ladder[n];
                let _ = writeln!(
                    w,
                    "level {n}     until {:<9} cell {:<10} {:>7} pieces {:>9} triangles drawn {:>4} groups",
                    p.until.map_or("-".to_string(), |u| format!("{u} m")),
                    match p.cell {
                        Some(LodCell::Side(side)) => format!("{side} m"),
                        Some(LodCell::Whole) => "whole".into(),
                        None => "-".into(),
                    },
                    l.pieces().count(),
                    l.drawn_triangles(),
                    l.groups.len()
                );
            }
            let first = b.level(0);
            let _ = writeln!(
                w,
                "unique      {} triangles in {} meshes; {} colliders, {} rooms, {} portals",
                b.triangles(),
                b.meshes().len(),
                first.map_or(0, |l| l.colliders().len()),
                first.map_or(0, |l| l.rooms().len()),
                first.map_or(0, |l| l.portals().len())
            );
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bakes_a_small_metropolis_and_inspect_describes_both_files() {
        let dir = std::env::temp_dir().join(format!("farsight-bake-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        buildings(BuildingsArgs {
            kit: "dark-city".into(),
            grid: 1,
            out: dir.clone(),
            threads: Some(1),
            cooked: true,
            cell: Some(35.0),
            seed: 1,
        })
        .unwrap();
        let full = std::fs::read(dir.join("dark-city-0-0.farsight")).unwrap();
        let cooked = std::fs::read(dir.join("dark-city-0-0.cooked.farsight")).unwrap();
        let a = describe(&full).unwrap();
        assert!(
            a.contains("full") && a.contains("level 2") && a.contains("35 m"),
            "{a}"
        );
        assert!(a.contains("structure   record #"), "{a}");
        let b = describe(&cooked).unwrap();
        assert!(b.contains("cooked"), "{b}");
        // The container report names the building's own records, in both files.
        let r = crate::inspect::report(&full, false).unwrap();
        assert!(
            r.contains("BST1") && r.contains("building structure"),
            "{r}"
        );
        let r = crate::inspect::report(&cooked, false).unwrap();
        assert!(
            r.contains("BSR1") && r.contains("building face sources"),
            "{r}"
        );
        assert!(!r.contains("does not describe"), "{r}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_values_are_refused_before_work() {
        let dir = std::env::temp_dir().join("farsight-bake-never-made");
        let err = buildings(BuildingsArgs {
            kit: "nowhere-city".into(),
            grid: 1,
            out: dir.clone(),
            threads: None,
            cooked: false,
            cell: None,
            seed: 1,
        })
        .unwrap_err();
        assert!(err.to_string().contains("--kit nowhere-city"), "{err}");
        let err = buildings(BuildingsArgs {
            kit: "corporate".into(),
            grid: 1,
            out: dir.clone(),
            threads: None,
            cooked: false,
            cell: Some(-3.0),
            seed: 1,
        })
        .unwrap_err();
        assert!(err.to_string().contains("levels[2].cell"), "{err}");
        assert!(!dir.exists());
    }
}

#[cfg(test)]
mod tangent_tests {
    use super::*;
    use farsight_building::bake::{bake, ManifoldKernel};
    use farsight_building::{Building, Element, Instance, Part, Pose, Shape, Side};

    /// One part: a 16-segment column and a box, both on the +Y axis.
    fn column() -> Building {
        let element = |id: &str, geometry: Geometry, y: f32| Element {
            id: id.into(),
            shape: Shape {
                geometry,
                at: Pose::yawed([0.0, y, 0.0], 0.0),
            },
            union: vec![],
            cutters: vec![],
            side: Side::Exterior,
            binding: "stone".into(),
            far: false,
        };
        Building {
            id: "column".into(),
            palette: Default::default(),
            parts: vec![Part {
                id: "column".into(),
                storey: None,
                elements: vec![
                    element(
                        "shaft",
                        Geometry::Cylinder {
                            radius: 0.5,
                            height: 3.0,
                            segments: 16,
                        },
                        1.5,
                    ),
                    element(
                        "plinth",
                        Geometry::Box {
                            size: [1.4, 0.4, 1.4],
                        },
                        -0.2,
                    ),
                ],
            }],
            instances: vec![Instance {
                id: "c".into(),
                part: "column".into(),
                pose: Pose::default(),
                attachment: None,
                overrides: Default::default(),
            }],
            merge_groups: vec![],
            colliders: vec![],
            rooms: vec![],
            portals: vec![],
        }
    }

    #[test]
    fn cooked_tangents_are_mikktspaces() {
        let baked = bake(&column(), &LodPolicy::ladder(), &ManifoldKernel).unwrap();
        let cooked =
            BakedBuilding::read_cooked(&baked.write_cooked(&mikktspace_tangents).unwrap()).unwrap();
        let level = baked.level(0).unwrap();
        let back = cooked.level(0).unwrap();
        let mut compared = 0;
        for (e, c) in level.parts[0].elements.iter().zip(&back.parts[0].elements) {
            let data = farsight_building::to_mesh_data(&e.mesh);
            let want = mikktspace_tangents(&data);
            // The cook reorders vertices: find each cooked vertex's source by its
            // position, normal and UV (quantised, so the nearest).
            for (v, t) in c.mesh.tangents.iter().enumerate() {
                let key = |p: &[f32; 3], n: &[f32; 3], uv: &[f32; 2]| {
                    let d = |a: &[f32], b: &[f32]| {
                        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>()
                    };
                    d(p, &c.mesh.positions[v]) + d(n, &c.mesh.normals[v]) + d(uv, &c.mesh.uvs[v])
                };
                let src = (0..data.positions.len())
                    .min_by(|&a, &b| {
                        let ka = key(&data.positions[a], &data.normals[a], &data.uvs[a]);
                        let kb = key(&data.positions[b], &data.normals[b], &data.uvs[b]);
                        ka.total_cmp(&kb)
                    })
                    .unwrap();
                let w = want[src];
                let dot: f32 = (0..3).map(|k| w[k] * t[k]).sum();
                assert!(dot > 0.999, "{} vertex {v}: {t:?} against {w:?}", e.element);
                assert_eq!(w[3], t[3], "{} vertex {v}: handedness", e.element);
                compared += 1;
            }
        }
        assert!(compared > 60, "{compared}");
        // On the curved side, mikktspace's tangent follows the ring: horizontal.
        let shaft = &back.parts[0].elements[0].mesh;
        for (n, t) in shaft.normals.iter().zip(&shaft.tangents) {
            if n[1].abs() < 0.5 {
                assert!(t[1].abs() < 1e-2, "{t:?}");
            }
        }
    }
}

//! The models of `farsight world build`: what a models folder holds (source meshes
//! to cook, cluster files to take as they are, anything else refused or left
//! alone), the cooking, and where an instance finds free ground.

use std::path::{Path, PathBuf};

use farsight_format::{AlignedBytes, FormatError, RawFile, RecordTag, IDENTIFIER};
use farsight_mesh::{cook_file, ClusterConfig, CookKind, LodChainManifest};
use farsight_stream::cluster::CookedModel;
use farsight_world::ModelEntry;
use rand::Rng;
use rayon::prelude::*;

use super::{bar, mkdir, write, Corners};

/// One file of the models folder.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ModelInput {
    /// A source mesh (.obj, .glb, .gltf), cooked into a cluster file here.
    Source(PathBuf),
    /// A cluster file `farsight cook mesh --clusters` wrote, taken as it is.
    Cooked(PathBuf),
}

impl ModelInput {
    fn path(&self) -> &Path {
        match self {
            ModelInput::Source(p) | ModelInput::Cooked(p) => p,
        }
    }
}

/// The models of `dir`: source meshes by their extension, and farsight files by
/// their first bytes (whatever their name), each read whole. A farsight file that
/// is not a sound cluster file is refused, naming what it is.
pub(super) fn model_inputs(dir: &Path) -> Result<Vec<ModelInput>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| crate::output::io_error(dir, &e))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if starts_like_farsight(&path)? {
            check_cluster_file(&path)?;
            out.push(ModelInput::Cooked(path));
        } else if ext.as_deref() == Some("farsight") {
            return Err(format!(
                "{}: not a farsight file (it does not start with the farsight identifier)",
                path.display()
            ));
        } else if matches!(ext.as_deref(), Some("obj" | "glb" | "gltf")) {
            out.push(ModelInput::Source(path));
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no meshes (.obj, .glb, .gltf) to cook into models, and no cluster files \
             (`farsight cook mesh --clusters`) to take as they are",
            dir.display()
        ));
    }
    Ok(out)
}

/// Whether the file starts with the farsight identifier.
fn starts_like_farsight(path: &Path) -> Result<bool, String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(IDENTIFIER.len());
    std::fs::File::open(path)
        .and_then(|f| f.take(IDENTIFIER.len() as u64).read_to_end(&mut head))
        .map_err(|e| crate::output::io_error(path, &e))?;
    Ok(head == IDENTIFIER)
}

/// Reads a farsight file whole and checks it is a sound cluster file; otherwise
/// says what it is.
fn check_cluster_file(path: &Path) -> Result<(), String> {
    let bytes = AlignedBytes::read_file(path).map_err(|e| match e {
        FormatError::Io { source, .. } => crate::output::io_error(path, &source),
        e => format!("{}: {e}", path.display()),
    })?;
    let raw = RawFile::read(&bytes)
        .map_err(|e| format!("{}: a damaged farsight file: {e}", path.display()))?;
    if raw.records().any(|r| r.tag == RecordTag::CLUSTER_LEVEL) {
        let clusters = CookKind::Clusters(ClusterConfig::default());
        return crate::cook::check_entry_bytes(&bytes, &clusters)
            .map_err(|e| format!("{}: a damaged cluster file: {e}", path.display()));
    }
    Err(format!(
        "{}: {}, not a cluster file; world build takes source meshes (.obj, .glb, .gltf) \
         and the files `farsight cook mesh --clusters` writes",
        path.display(),
        farsight_kind(&raw)
    ))
}

/// What a valid farsight file that holds no cluster levels is, in words.
fn farsight_kind(raw: &RawFile) -> String {
    let tags: std::collections::BTreeSet<RecordTag> = raw.records().map(|r| r.tag).collect();
    let has = |t: RecordTag| tags.contains(&t);
    if has(farsight_building::file::STRUCTURE_TAG) {
        return "a baked building (`farsight bake buildings`)".into();
    }
    if raw.parse::<LodChainManifest>().is_ok() {
        return "a discrete LOD chain (`farsight cook mesh --lod-chain`)".into();
    }
    if has(farsight_terrain::CHUNK_TAG) {
        return "a voxel terrain file".into();
    }
    if has(farsight_stream::region::scene::ENTITY_TABLE) {
        return "a region file of a world scene".into();
    }
    if has(farsight_stream::tile::TILE_PAYLOAD) {
        return "a tile file".into();
    }
    if tags.is_empty() {
        return format!(
            "a farsight file of version {} without records",
            raw.version() as u32
        );
    }
    let names: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    format!(
        "a farsight file of version {} holding {} records",
        raw.version() as u32,
        names.join(", ")
    )
}

/// One model of the world: its manifest entry and the boxes placement needs.
pub(super) struct Cooked {
    /// The world manifest's entry.
    pub entry: ModelEntry,
    /// The sphere around every error sphere (model space): an instance's bounds
    /// in its region.
    pub bounds: [f32; 4],
    /// The lowest and highest corner of the model's box (model space): placement
    /// stands the model on the ground by them.
    pub aabb: Corners,
}

/// The file name under `models/` of each input: its stem made safe, with a number
/// added where two inputs share one (`rock.obj` and `rock.farsight`).
fn model_names(inputs: &[ModelInput]) -> Vec<String> {
    let mut taken = std::collections::BTreeSet::new();
    inputs
        .iter()
        .map(|input| {
            let stem = input
                .path()
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("model")
                .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_");
            let mut name = stem.clone();
            let mut n = 1;
            while !taken.insert(name.to_ascii_lowercase()) {
                n += 1;
                name = format!("{stem}-{n}");
            }
            name
        })
        .collect()
}

pub(super) fn cook_models(inputs: &[ModelInput], out: &Path) -> Result<Vec<Cooked>, String> {
    let dir = out.join("models");
    mkdir(&dir)?;
    let names = model_names(inputs);
    let b = bar(inputs.len() as u64, "cooking models");
    let results: Vec<Result<Vec<Cooked>, String>> = inputs
        .par_iter()
        .zip(&names)
        .map(|(input, stem)| {
            // The cooked file is the streaming format: the world opens it as is.
            let name = format!("models/{stem}.farsight");
            let path = out.join(&name);
            match input {
                ModelInput::Source(source) => {
                    let kind = CookKind::Clusters(ClusterConfig::default());
                    let cooked = cook_file(source, &kind)
                        .map_err(|e| format!("{}: {e}", source.display()))?;
                    write(&path, &cooked.bytes)?;
                    // The images its materials name live beside it, as `cook mesh` writes them.
                    cooked
                        .looks
                        .write_beside(&dir)
                        .map_err(|e| crate::output::io_error(&dir, &e))?;
                }
                ModelInput::Cooked(file) => {
                    std::fs::copy(file, &path).map_err(|e| crate::output::io_error(file, &e))?;
                }
            }
            // A cooked scene of several geometries gives a model each.
            let models = CookedModel::open_all(&path).map_err(|e| e.to_string())?;
            let several = models.len() > 1;
            b.inc(1);
            Ok(models
                .iter()
                .map(|model| Cooked {
                    entry: ModelEntry {
                        name: if several {
                            format!(
                                "{stem}/{} (geometry {})",
                                model.geometry().name,
                                model.geometry_index()
                            )
                        } else {
                            stem.clone()
                        },
                        file: name.clone(),
                        geometry: model.geometry_index() as u32,
                    },
                    bounds: model.error_bounds(),
                    aabb: (model.geometry().bounds_min, model.geometry().bounds_max),
                })
                .collect())
        })
        .collect();
    b.finish_and_clear();
    let mut cooked = Vec::new();
    for r in results {
        match r {
            Ok(c) => cooked.extend(c),
            Err(e) => crate::output::say(format_args!("warning: model skipped: {e}")),
        }
    }
    if cooked.is_empty() {
        return Err("no mesh could be cooked into a model".into());
    }
    Ok(cooked)
}

/// A rectangle on the ground (x, z), lowest corner first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Footprint {
    pub min: [f32; 2],
    pub max: [f32; 2],
}

impl Footprint {
    /// The rectangle from `min` to `max`.
    pub fn new(min: [f32; 2], max: [f32; 2]) -> Self {
        Self { min, max }
    }

    /// Its middle.
    pub fn centre(&self) -> [f32; 2] {
        [
            (self.min[0] + self.max[0]) * 0.5,
            (self.min[1] + self.max[1]) * 0.5,
        ]
    }

    /// Whether the two share more than an edge.
    pub fn overlaps(&self, o: &Footprint) -> bool {
        (0..2).all(|i| self.min[i] < o.max[i] && o.min[i] < self.max[i])
    }
}

/// What became of the instances drawn for one model, besides those placed in a
/// region cell.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ModelFate {
    /// Wider than a region cell: placed in region 0, which spans the world.
    pub in_base: u32,
    /// Wider than the world: left out.
    pub too_wide: u32,
    /// No ground clear of the buildings found: left out.
    pub no_room: u32,
}

/// Draws tried for a free spot before an instance is left out.
const TRIES: u32 = 32;

/// A footprint of `size` (x, z) inside a world of `side` x `side` that overlaps
/// none of `taken`, drawn from `rng` (within the middle nine tenths of the world
/// when it fits there); `None` when the model is wider than the world or no draw
/// of [`TRIES`] was clear.
pub(super) fn free_spot(
    rng: &mut impl Rng,
    size: [f32; 2],
    side: f32,
    taken: &[Footprint],
) -> Option<Footprint> {
    if !(size[0] <= side && size[1] <= side) {
        return None;
    }
    // The range of the footprint's lowest corner on one axis.
    let range = |w: f32| {
        let (lo, hi) = (0.05 * side, 0.95 * side - w);
        if lo <= hi {
            (lo, hi)
        } else {
            (0.0, side - w)
        }
    };
    let (rx, rz) = (range(size[0]), range(size[1]));
    (0..TRIES)
        .map(|_| {
            let min = [rng.random_range(rx.0..=rx.1), rng.random_range(rz.0..=rz.1)];
            Footprint::new(min, [min[0] + size[0], min[1] + size[1]])
        })
        .find(|f| !taken.iter().any(|t| t.overlaps(f)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Every spot found lies inside the world and clear of what is taken; a model
    /// wider than the world, or one with no room left, finds none.
    #[test]
    fn free_spots_stay_in_the_world_and_off_the_buildings() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let side = 300.0;
        let taken: Vec<Footprint> = (0..3)
            .flat_map(|i| (0..3).map(move |j| (i, j)))
            .map(|(i, j)| {
                let (x, z) = (60.0 + 60.0 * i as f32, 60.0 + 60.0 * j as f32);
                Footprint::new([x + 10.0, z + 10.0], [x + 50.0, z + 50.0])
            })
            .collect();
        for size in [[0.3, 0.2], [4.0, 9.0], [80.0, 20.0], [299.0, 10.0]] {
            for _ in 0..200 {
                let f = free_spot(&mut rng, size, side, &taken).expect("room");
                assert!(f.min[0] >= 0.0 && f.min[1] >= 0.0, "{f:?}");
                assert!(f.max[0] <= side && f.max[1] <= side, "{f:?}");
                assert!((f.max[0] - f.min[0] - size[0]).abs() < 1e-3);
                assert!(!taken.iter().any(|t| t.overlaps(&f)), "{f:?}");
            }
        }
        assert_eq!(free_spot(&mut rng, [301.0, 1.0], side, &taken), None);
        let all = [Footprint::new([0.0, 0.0], [side, side])];
        assert_eq!(free_spot(&mut rng, [1.0, 1.0], side, &all), None);
    }

    /// Two inputs of one stem get two files; names are safe in a path.
    #[test]
    fn model_names_are_distinct() {
        let inputs = [
            ModelInput::Source("a/rock.obj".into()),
            ModelInput::Cooked("a/rock.farsight".into()),
            ModelInput::Source("a/Rock.glb".into()),
            ModelInput::Cooked("a/my model".into()),
        ];
        assert_eq!(
            model_names(&inputs),
            ["rock", "rock-2", "Rock-3", "my_model"]
        );
    }
}

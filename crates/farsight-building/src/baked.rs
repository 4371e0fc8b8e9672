//! A baked building: the recipe (absent when read from a cooked file), the ladder it
//! was baked under and one [`MeshedBuilding`] per level.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::mesh::{Mesh, MeshedBuilding};
use crate::policy::LodPolicy;
use crate::recipe::Building;

/// What a mesher made of a recipe, plus coarser levels of the same building.
/// [`BakedBuilding::level`] answers the same [`MeshedBuilding`] a fresh mesh does.
#[derive(Clone, Debug, PartialEq)]
pub struct BakedBuilding {
    /// The validated recipe; `None` when read from a cooked file.
    pub recipe: Option<Building>,
    /// The policy of each level (`until` and `cell` say how it is drawn).
    pub ladder: Vec<LodPolicy>,
    /// The meshed levels, finest first, one per ladder entry.
    pub levels: Vec<MeshedBuilding>,
}

impl BakedBuilding {
    /// Level `n`, if the building has it.
    pub fn level(&self, n: usize) -> Option<&MeshedBuilding> {
        self.levels.get(n)
    }

    /// The number of levels.
    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    /// The building's id.
    pub fn id(&self) -> &str {
        self.levels.first().map_or("", |l| l.id.as_str())
    }

    /// Every distinct mesh of every level, each once, in level order: a mesh levels
    /// share is one, and so are two meshes equal to the bit (two cells' identical
    /// batches), which a file stores as one record. So a building counts the same
    /// fresh from a bake and read back from its file.
    pub fn meshes(&self) -> Vec<&Arc<Mesh>> {
        let mut seen = BTreeSet::new();
        // Content digest -> the distinct meshes with that digest.
        let mut by_digest: BTreeMap<u64, Vec<&Arc<Mesh>>> = BTreeMap::new();
        let mut out = Vec::new();
        for level in &self.levels {
            let part_meshes = level
                .parts
                .iter()
                .flat_map(|p| p.elements.iter().map(|e| &e.mesh));
            let batch_meshes = level
                .groups
                .iter()
                .flat_map(|g| g.batches.iter().map(|b| &b.mesh));
            for m in part_meshes.chain(batch_meshes) {
                if !seen.insert(Arc::as_ptr(m) as usize) {
                    continue;
                }
                let same = by_digest.entry(digest(m)).or_default();
                if same.iter().any(|o| same_bits(o, m)) {
                    continue;
                }
                same.push(m);
                out.push(m);
            }
        }
        out
    }

    /// Unique triangles over every level: a mesh several levels share, or equal
    /// meshes in several places, count once ([`BakedBuilding::meshes`]); in a
    /// concatenated level every placed copy counts.
    pub fn triangles(&self) -> usize {
        self.meshes().iter().map(|m| m.triangle_count()).sum()
    }
}

/// Every number of a mesh as bits, in a fixed order (what a file record stores).
fn words(m: &Mesh) -> impl Iterator<Item = u32> + '_ {
    let lens = [
        m.positions.len(),
        m.normals.len(),
        m.uvs.len(),
        m.tangents.len(),
        m.indices.len(),
        m.sources.len(),
    ]
    .map(|n| n as u32);
    lens.into_iter()
        .chain(m.positions.iter().flatten().map(|v| v.to_bits()))
        .chain(m.normals.iter().flatten().map(|v| v.to_bits()))
        .chain(m.uvs.iter().flatten().map(|v| v.to_bits()))
        .chain(m.tangents.iter().flatten().map(|v| v.to_bits()))
        .chain(m.indices.iter().copied())
        .chain(m.sources.iter().map(|s| s.to_word()))
}

fn digest(m: &Mesh) -> u64 {
    // SipHash with fixed keys: the same digest on every run.
    let mut h = std::hash::DefaultHasher::new();
    for w in words(m) {
        w.hash(&mut h);
    }
    h.finish()
}

fn same_bits(a: &Mesh, b: &Mesh) -> bool {
    words(a).eq(words(b))
}

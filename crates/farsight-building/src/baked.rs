//! A baked building: the recipe (absent when read from a cooked file), the ladder it
//! was baked under and one [`MeshedBuilding`] per level.

use std::collections::BTreeSet;
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

    /// Every distinct mesh of every level, each once (a mesh levels share is one).
    pub fn meshes(&self) -> Vec<&Arc<Mesh>> {
        let mut seen = BTreeSet::new();
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
                if seen.insert(Arc::as_ptr(m) as usize) {
                    out.push(m);
                }
            }
        }
        out
    }

    /// Unique triangles over every level: a mesh several levels share counts once; in
    /// a concatenated level every placed copy counts.
    pub fn triangles(&self) -> usize {
        self.meshes().iter().map(|m| m.triangle_count()).sum()
    }
}

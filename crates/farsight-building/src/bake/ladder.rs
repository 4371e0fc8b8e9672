//! `bake`: level zero meshed as authored, each later level meshed from the simplified
//! recipe, re-meshing a part only when its simplification changed and a merge group
//! only when one of its members did. Concatenated levels are joined at the end, so
//! reuse runs over placed pieces at every level.

use std::collections::BTreeMap;

use super::kernel::{Kernel, KernelError};
use super::meshing::{mesh_group, mesh_part_cached, place_colliders, placements, MeshCache};
use super::simplify::simplified_building;
use crate::baked::BakedBuilding;
use crate::mesh::{MergedGroup, MeshedBuilding, PartMeshes};
use crate::policy::{LodPolicy, PolicyError};
use crate::recipe::{Building, MergeGroup, Part};
use crate::validate::RecipeError;

/// Why a bake failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BakeError {
    #[error(transparent)]
    Recipe(#[from] RecipeError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("building `{building}`, level {level}: {source}")]
    Kernel {
        building: String,
        level: usize,
        source: KernelError,
    },
}

/// What a bake did, level by level (for tests and reports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BakeStats {
    /// Parts meshed through the kernel, per level.
    pub parts_meshed: Vec<usize>,
    /// Parts taken unchanged from the previous level, per level.
    pub parts_reused: Vec<usize>,
    pub groups_meshed: Vec<usize>,
    pub groups_reused: Vec<usize>,
}

fn group_inputs<'a>(b: &'a Building, g: &'a MergeGroup) -> Vec<(&'a str, Option<&'a Part>)> {
    g.instances
        .iter()
        .map(|i| {
            let part = b
                .instances
                .iter()
                .find(|inst| &inst.id == i)
                .and_then(|inst| b.part(&inst.part));
            (i.as_str(), part)
        })
        .collect()
}

/// Bakes `building` under `ladder` with `kernel`. The recipe is validated and the
/// ladder checked before anything is meshed.
pub fn bake<K: Kernel>(
    building: &Building,
    ladder: &[LodPolicy],
    kernel: &K,
) -> Result<BakedBuilding, BakeError> {
    bake_with_stats(building, ladder, kernel).map(|(b, _)| b)
}

/// [`bake`], also saying what was meshed and what reused. Elements are meshed through
/// a [`MeshCache`] of this bake alone: one a simplification left alone, or that two
/// parts share, is meshed once.
pub fn bake_with_stats<K: Kernel>(
    building: &Building,
    ladder: &[LodPolicy],
    kernel: &K,
) -> Result<(BakedBuilding, BakeStats), BakeError> {
    bake_cached(building, ladder, kernel, &MeshCache::new())
}

/// [`bake_with_stats`] through a caller's `cache`, which may outlive the bake: baking
/// a city building by building (on any number of threads) with one cache meshes each
/// distinct element of the kit once. The bytes are those of a bake without it.
pub fn bake_cached<K: Kernel>(
    building: &Building,
    ladder: &[LodPolicy],
    kernel: &K,
    cache: &MeshCache,
) -> Result<(BakedBuilding, BakeStats), BakeError> {
    crate::validate(building)?;
    LodPolicy::check(ladder)?;
    let mut stats = BakeStats::default();
    let mut levels: Vec<MeshedBuilding> = Vec::with_capacity(ladder.len());
    let mut previous: Option<(Building, MeshedBuilding)> = None;
    let colliders = place_colliders(building);
    // Every level's placements are level zero's that survive: a slot wears the same
    // material at every level, so files store one table of placements.
    let all_placements = placements(building);
    let mut pivots: BTreeMap<String, [f32; 3]> = BTreeMap::new();
    for (n, policy) in ladder.iter().enumerate() {
        let kerr = |source| BakeError::Kernel {
            building: building.id.clone(),
            level: n,
            source,
        };
        let recipe = if policy.simplifies() {
            simplified_building(building, policy)
        } else {
            building.clone()
        };
        let (mut meshed, mut reused) = (0, 0);
        let mut parts: Vec<PartMeshes> = Vec::with_capacity(recipe.parts.len());
        for part in &recipe.parts {
            let old = previous.as_ref().and_then(|(r, m)| {
                (r.part(&part.id) == Some(part))
                    .then(|| m.part(&part.id))
                    .flatten()
            });
            match old {
                Some(m) => {
                    parts.push(m.clone());
                    reused += 1;
                }
                None => {
                    parts.push(mesh_part_cached(kernel, part, cache).map_err(kerr)?);
                    meshed += 1;
                }
            }
        }
        let (mut gmeshed, mut greused) = (0, 0);
        let mut groups: Vec<MergedGroup> = Vec::with_capacity(recipe.merge_groups.len());
        for g in &recipe.merge_groups {
            let old = previous.as_ref().and_then(|(r, m)| {
                let og = r.merge_groups.iter().find(|o| o.id == g.id)?;
                (group_inputs(r, og) == group_inputs(&recipe, g))
                    .then(|| m.groups.iter().find(|o| o.id == g.id))
                    .flatten()
            });
            let mut group = match old {
                Some(m) => {
                    greused += 1;
                    m.clone()
                }
                None => {
                    gmeshed += 1;
                    mesh_group(kernel, &recipe, g, &[]).map_err(kerr)?
                }
            };
            // Drawn about the centre of its bounds at the first level it appears in.
            group.pivot = *pivots.entry(g.id.clone()).or_insert(group.pivot);
            groups.push(group);
        }
        stats.parts_meshed.push(meshed);
        stats.parts_reused.push(reused);
        stats.groups_meshed.push(gmeshed);
        stats.groups_reused.push(greused);
        let level = MeshedBuilding {
            id: building.id.clone(),
            placements: all_placements
                .iter()
                .filter(|p| recipe.instances.iter().any(|i| i.id == p.instance))
                .cloned()
                .map(|mut p| {
                    p.group = recipe
                        .merge_groups
                        .iter()
                        .find(|g| g.instances.contains(&p.instance))
                        .map(|g| g.id.clone());
                    p
                })
                .collect(),
            parts,
            groups,
            colliders: colliders.clone(),
            rooms: building.rooms.clone(),
            portals: building.portals.clone(),
        };
        levels.push(level.clone());
        previous = Some((recipe, level));
    }
    let levels = crate::concat::concatenate_levels(building, ladder, levels);
    Ok((
        BakedBuilding {
            recipe: Some(building.clone()),
            ladder: ladder.to_vec(),
            levels,
        },
        stats,
    ))
}

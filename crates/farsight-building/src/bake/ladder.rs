//! `bake`: level zero meshed as authored, each later level meshed from the simplified
//! recipe, re-meshing a part only when its simplification changed and a merge group
//! only when one of its members did. Concatenated levels are joined at the end, so
//! reuse runs over placed pieces at every level.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::kernel::{Kernel, KernelError};
use super::meshing::{mesh_group_cached, mesh_part_cached, place_colliders, placements, MeshCache};
use super::simplify::simplified_building;
use crate::baked::BakedBuilding;
use crate::mesh::{MergedGroup, MeshedBuilding, PartMeshes, Placement};
use crate::policy::{LodPolicy, PolicyError};
use crate::recipe::{Building, MergeGroup, Part};
use crate::validate::RecipeError;

/// Why a bake failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BakeError {
    /// The recipe does not validate.
    #[error(transparent)]
    Recipe(#[from] RecipeError),
    /// The ladder does not check.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The CSG kernel failed on a level.
    #[error("building `{building}`, level {level}: {source}")]
    Kernel {
        /// The building's id.
        building: String,
        /// The level being meshed, 0 the finest.
        level: usize,
        /// What the kernel said.
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
    /// Merge groups meshed through the kernel, per level.
    pub groups_meshed: Vec<usize>,
    /// Merge groups taken unchanged from the previous level, per level.
    pub groups_reused: Vec<usize>,
}

/// Each member of `g` with the part it places (as `b` has it).
fn group_inputs<'a>(
    b: &'a Building,
    parts: &BTreeMap<&str, &'a str>,
    g: &'a MergeGroup,
) -> Vec<(&'a str, Option<&'a Part>)> {
    g.instances
        .iter()
        .map(|i| (i.as_str(), parts.get(i.as_str()).and_then(|p| b.part(p))))
        .collect()
}

/// Instance id -> the id of the part it places.
fn parts_by_instance(b: &Building) -> BTreeMap<&str, &str> {
    b.instances
        .iter()
        .map(|i| (i.id.as_str(), i.part.as_str()))
        .collect()
}

/// Bakes `building` under `ladder` with `kernel`. The recipe is validated and the
/// ladder checked before anything is meshed, its cells against the box the recipe
/// can reach ([`LodPolicy::check_cells`]).
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
    LodPolicy::check_cells(ladder, &building.reach())?;
    let mut stats = BakeStats::default();
    let mut levels: Vec<MeshedBuilding> = Vec::with_capacity(ladder.len());
    // The previous level's recipe; its meshes are `levels.last()`.
    let mut previous: Option<Cow<'_, Building>> = None;
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
        let recipe: Cow<'_, Building> = if policy.simplifies() {
            Cow::Owned(simplified_building(building, policy))
        } else {
            Cow::Borrowed(building)
        };
        let before = previous.as_deref().zip(levels.last());
        let (parts, meshed, reused) = level_parts(kernel, &recipe, before, cache).map_err(kerr)?;
        let (groups, gmeshed, greused) =
            level_groups(kernel, &recipe, before, cache, &mut pivots).map_err(kerr)?;
        stats.parts_meshed.push(meshed);
        stats.parts_reused.push(reused);
        stats.groups_meshed.push(gmeshed);
        stats.groups_reused.push(greused);
        let level = MeshedBuilding {
            id: building.id.clone(),
            placements: level_placements(&all_placements, &recipe),
            parts,
            groups,
            colliders: colliders.clone(),
            rooms: building.rooms.clone(),
            portals: building.portals.clone(),
        };
        levels.push(level);
        previous = Some(recipe);
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

/// The level before the one being baked: its recipe and its meshes.
type Before<'r> = Option<(&'r Building, &'r MeshedBuilding)>;

/// A level's parts: each one `before` has unchanged is reused, the others are meshed
/// through `cache`. Also returns how many were meshed and how many reused.
fn level_parts<K: Kernel>(
    kernel: &K,
    recipe: &Building,
    before: Before,
    cache: &MeshCache,
) -> Result<(Vec<PartMeshes>, usize, usize), KernelError> {
    let (mut meshed, mut reused) = (0, 0);
    let mut parts: Vec<PartMeshes> = Vec::with_capacity(recipe.parts.len());
    for part in &recipe.parts {
        let old = before.and_then(|(r, m)| {
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
                parts.push(mesh_part_cached(kernel, part, cache)?);
                meshed += 1;
            }
        }
    }
    Ok((parts, meshed, reused))
}

/// A level's merge groups: each one whose members and their parts are as `before`
/// has them is reused, the others are meshed through `cache`; every group keeps the
/// pivot of the first level it appears in. Also returns how many were meshed and how
/// many reused.
fn level_groups<K: Kernel>(
    kernel: &K,
    recipe: &Building,
    before: Before,
    cache: &MeshCache,
    pivots: &mut BTreeMap<String, [f32; 3]>,
) -> Result<(Vec<MergedGroup>, usize, usize), KernelError> {
    let (mut gmeshed, mut greused) = (0, 0);
    let by_instance = parts_by_instance(recipe);
    let previous_by_instance = before.map(|(r, _)| parts_by_instance(r));
    let mut groups: Vec<MergedGroup> = Vec::with_capacity(recipe.merge_groups.len());
    for g in &recipe.merge_groups {
        let old = before.and_then(|(r, m)| {
            let og = r.merge_groups.iter().find(|o| o.id == g.id)?;
            let before = previous_by_instance.as_ref()?;
            (group_inputs(r, before, og) == group_inputs(recipe, &by_instance, g))
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
                mesh_group_cached(kernel, recipe, g, cache)?
            }
        };
        // Drawn about the centre of its bounds at the first level it appears in.
        group.pivot = *pivots.entry(g.id.clone()).or_insert(group.pivot);
        groups.push(group);
    }
    Ok((groups, gmeshed, greused))
}

/// The placements of `all` whose instance `recipe` keeps, each drawn by the first
/// group that names it.
fn level_placements(all: &[Placement], recipe: &Building) -> Vec<Placement> {
    let by_instance = parts_by_instance(recipe);
    let mut group_of: BTreeMap<&str, &str> = BTreeMap::new();
    for g in &recipe.merge_groups {
        for i in &g.instances {
            group_of.entry(i.as_str()).or_insert(g.id.as_str());
        }
    }
    all.iter()
        .filter(|p| by_instance.contains_key(p.instance.as_str()))
        .cloned()
        .map(|mut p| {
            p.group = group_of.get(p.instance.as_str()).map(|g| g.to_string());
            p
        })
        .collect()
}

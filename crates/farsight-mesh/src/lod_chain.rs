//! Discrete LOD chains (docs/design/visibility-pass.md#generated-lod-chains): the source,
//! then half its triangles, then a quarter of that per level, each simplified from the
//! source with meshoptimizer's attribute-aware edge collapse, each handing over where the
//! next level's error projects to about one pixel of a 1080-line, 60-degree view.

use farsight_lod::{LodError, LodLevels, REFERENCE_P11};
use meshopt::{SimplifyOptions, SimplifyVertex};

use crate::dag::{attribute_weights, attributes};
use crate::mesh::{Mesh, SubMesh, Vertex};
use crate::prepare::{adapter, optimize_submesh};
use crate::Warning;

/// The reference image height hand-over distances are set for.
pub const REFERENCE_VIEWPORT_HEIGHT: f32 = 1080.0;

/// Settings of [`generate_lod_chain`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodChainConfig {
    /// Most levels including the source.
    pub max_levels: usize,
    /// Target of level 1 as a share of the source's triangles.
    pub first_ratio: f32,
    /// Target of each further level as a share of the previous target.
    pub ratio: f32,
    /// A level keeping more than this share of the previous level's triangles did
    /// not usefully coarsen and is dropped (ending the chain).
    pub min_reduction: f32,
    /// Weight of the normal in the simplifier's attribute error.
    pub normal_weight: f32,
    /// Weight of the UV in the simplifier's attribute error.
    pub uv_weight: f32,
}

impl Default for LodChainConfig {
    fn default() -> Self {
        Self {
            max_levels: 6,
            first_ratio: 0.5,
            ratio: 0.25,
            min_reduction: 0.85,
            normal_weight: 0.5,
            uv_weight: 1.0,
        }
    }
}

/// One level of a chain.
#[derive(Clone, Debug, PartialEq)]
pub struct LodChainLevel {
    /// The asset name, `<mesh>:lod<N>` (level 0 is the mesh itself).
    pub name: String,
    /// The level's mesh.
    pub mesh: Mesh,
    /// How far simplification moved the surface, in mesh units (0 for the source).
    pub error: f32,
    /// Furthest distance this level draws at, for a 60-degree field of view and
    /// bias 1: where the next level's error projects to one pixel of 1080 lines;
    /// for the last level twice the hand-over into it.
    pub max_distance: f32,
}

/// A discrete LOD chain, levels near to far.
#[derive(Clone, Debug, PartialEq)]
pub struct LodChain {
    /// The levels, level 0 (the source) first.
    pub levels: Vec<LodChainLevel>,
    /// Levels dropped and other repairs.
    pub warnings: Vec<Warning>,
}

impl LodChain {
    /// The hand-over distances as the foundation's LOD component wants them.
    pub fn lod_levels(&self) -> Result<LodLevels, LodError> {
        let d: Vec<f32> = self.levels.iter().map(|l| l.max_distance).collect();
        LodLevels::from_distances(&d)
    }
}

/// The distance at which an error of `error` mesh units covers one pixel of a
/// 1080-line image through a 60-degree vertical field of view.
pub fn one_pixel_distance(error: f32) -> f32 {
    error * REFERENCE_P11 * REFERENCE_VIEWPORT_HEIGHT * 0.5
}

/// Builds the chain for a (prepared) mesh.
pub fn generate_lod_chain(source: &Mesh, config: &LodChainConfig) -> LodChain {
    let (vertices, indices) = source.merged();
    let ranges = submesh_ranges(source);
    let total = indices.len() / 3;
    let adapter = adapter(&vertices);
    let scale = meshopt::simplify_scale(&adapter);
    let attributes = attributes(&vertices);
    let weights = attribute_weights(config.normal_weight, config.uv_weight);
    let locks = vec![SimplifyVertex::None; vertices.len()];
    let mut levels = vec![LodChainLevel {
        name: format!("{}:lod0", source.name),
        mesh: source.clone(),
        error: 0.0,
        max_distance: 0.0,
    }];
    let mut warnings = Vec::new();
    let mut target = total as f32 * config.first_ratio;
    let mut previous = total;
    while levels.len() < config.max_levels && target >= 1.0 {
        let target_indices = (target as usize).max(1) * 3;
        let mut rel_error = 0.0f32;
        let lod = meshopt::simplify_with_attributes_and_locks(
            &indices,
            &adapter,
            &attributes,
            &weights,
            5 * 4,
            &locks,
            target_indices,
            f32::MAX,
            SimplifyOptions::None,
            Some(&mut rel_error),
        );
        let got = lod.len() / 3;
        if got == 0 || got as f32 > previous as f32 * config.min_reduction {
            warnings.push(Warning::LodLevelDropped {
                level: levels.len(),
                triangles_before: previous,
                triangles_after: got,
            });
            break;
        }
        let level = levels.len();
        let mesh = split_back(
            source,
            &vertices,
            &ranges,
            &lod,
            format!("{}:lod{level}", source.name),
        );
        levels.push(LodChainLevel {
            name: mesh.name.clone(),
            mesh,
            error: rel_error * scale,
            max_distance: 0.0,
        });
        previous = got;
        target *= config.ratio;
    }
    // Hand-over distances: level i ends where level i+1's error reaches a pixel.
    // Errors are made strictly increasing first (a level simplified with no
    // measurable error hands over at once, just past the previous one).
    let floor = scale.max(f32::MIN_POSITIVE) * 1e-6;
    for i in 1..levels.len() {
        let prev = levels[i - 1].error;
        levels[i].error = levels[i].error.max(floor).max(prev * 1.001 + floor);
    }
    let n = levels.len();
    for i in 0..n.saturating_sub(1) {
        levels[i].max_distance = one_pixel_distance(levels[i + 1].error);
    }
    levels[n - 1].max_distance = if n == 1 {
        // A chain of one: the level draws everywhere; give it a positive range.
        one_pixel_distance(scale.max(f32::MIN_POSITIVE))
    } else {
        2.0 * levels[n - 2].max_distance
    };
    LodChain { levels, warnings }
}

fn submesh_ranges(mesh: &Mesh) -> Vec<(u32, u32)> {
    let mut ranges = Vec::with_capacity(mesh.submeshes.len());
    let mut base = 0u32;
    for s in &mesh.submeshes {
        ranges.push((base, base + s.vertices.len() as u32));
        base += s.vertices.len() as u32;
    }
    ranges
}

/// Splits simplified merged indices back into the source's sub-meshes (a triangle's
/// corners always lie in one sub-mesh's vertex range) and compacts each.
fn split_back(
    source: &Mesh,
    vertices: &[Vertex],
    ranges: &[(u32, u32)],
    lod: &[u32],
    name: String,
) -> Mesh {
    let mut submeshes = Vec::with_capacity(ranges.len());
    for (s, &(lo, hi)) in source.submeshes.iter().zip(ranges) {
        let indices: Vec<u32> = lod
            .chunks_exact(3)
            .filter(|t| t[0] >= lo && t[0] < hi)
            .flat_map(|t| t.iter().map(|&i| i - lo))
            .collect();
        if indices.is_empty() {
            continue;
        }
        let mut sub = SubMesh {
            name: s.name.clone(),
            material: s.material.clone(),
            vertices: vertices[lo as usize..hi as usize].to_vec(),
            indices,
            has_tangents: s.has_tangents,
        };
        optimize_submesh(&mut sub);
        submeshes.push(sub);
    }
    Mesh { name, submeshes }
}

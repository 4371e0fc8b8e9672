//! Cooking a mesh into a version 2 record (feature `encode`): quantise, generate
//! tangents once, weld what quantises alike, reorder for the vertex cache and for
//! fetch, then meshopt-code and zstd-compress every stream.

use bytemuck::{Pod, Zeroable};

use crate::coding::{zigzag, zstd_frame};
use crate::cooked::{max_extent, split_planes};
use crate::cooked::{Codec, CookedHeader, StreamDesc, EXPANSION_SLACK, MAX_EXPANSION};
use crate::full::bounds;
use crate::predict::{predict_normals, uv_residuals_from_positions};
use crate::quant::{oct_encode, quantize_cells, quantize_unorm};
use crate::walk::Recipe;
use crate::walk::{walk, WalkScratch};
use crate::{FormatError, MeshData};

/// How to cook. The defaults (`docs/design/baked-buildings.md#the-full-and-cooked-files`): 16-bit positions and uvs, 16-bit
/// octahedral normals and tangents, tangents generated when the mesh has uvs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CookConfig {
    /// Bits per position component, 1..=16 (on one grid over the mesh's largest extent).
    pub position_bits: u32,
    /// Bits per uv component, 1..=16 (over the uvs' bounds).
    pub uv_bits: u32,
    /// Bits per octahedral normal component, 2..=16.
    pub normal_bits: u32,
    /// Bits per octahedral tangent component, 2..=16.
    pub tangent_bits: u32,
    /// Generate tangents (meshopt's `generate_tangents`) when the mesh has uvs and no
    /// tangents of its own.
    pub generate_tangents: bool,
    /// zstd level of the entropy layer (decode speed hardly depends on it).
    pub zstd_level: i32,
    /// meshopt vertex codec level (0..=3).
    pub meshopt_level: i32,
    /// Apply the zstd entropy layer. Off only to measure the layers apart.
    pub entropy: bool,
    /// Compute smooth normals for a mesh that has none (otherwise it is stored
    /// without normals).
    pub generate_normals: bool,
    /// Store positions as parallelogram residuals
    /// ([`crate::CookedHeader::PREDICTED_POSITIONS`]).
    pub predict_positions: bool,
    /// Store uvs as parallelogram residuals ([`crate::CookedHeader::PREDICTED_UVS`]).
    pub predict_uvs: bool,
    /// Store normals as residuals against the geometric prediction
    /// ([`crate::CookedHeader::PREDICTED_NORMALS`]).
    pub predict_normals: bool,
    /// Weld corners whose stored positions, uvs and tangent signs are equal and whose
    /// normals and tangents agree at this many bits per component (snorm of the unit
    /// vector): the welded vertex keeps one corner's normal and tangent, so a
    /// normal moves by at most one step of this precision (8 bits: under 1/127 per
    /// component). Exporters that split every corner (Blender's custom normals)
    /// write normals that differ only in their last bits; 8 is what gltfpack
    /// welds at. 0 welds only corners stored identically. 0 or 2 to 16.
    pub weld_normal_bits: u32,
    /// [`crate::cook_mesh_set`] also cooks the distinct parts of each vertex layout
    /// together into one record, and keeps that when it is smaller: their positions
    /// then share one grid over all of those parts' bounds (a position moves by at
    /// most half a step of `position_bits` over the largest extent of the parts
    /// together, as a single mesh of that extent would), their uvs one range. Off:
    /// each part keeps its own grid.
    pub merge_parts: bool,
    /// The decode time a record should fit in, in estimated ns per triangle (30 by
    /// default)
    /// ([`crate::CookedMesh::estimated_decode_ns`]; 0: no budget). Each stream is
    /// first coded the smallest way; where the record's estimate is over budget, the
    /// cook moves streams to faster codings (less entropy coding), the most time
    /// saved per byte added first, until it fits or the record has grown by
    /// [`Self::speed_growth`]. A set's body frame is chosen the same way.
    pub decode_budget: f64,
    /// How much larger than its smallest coding a record may grow to fit
    /// [`Self::decode_budget`], as a fraction of its bytes (1/16 by default: a
    /// sixteenth more bytes kept every corpus mesh within 0.90 of gltfpack's size,
    /// an eighth did not).
    pub speed_growth: f64,
}

impl Default for CookConfig {
    fn default() -> Self {
        Self {
            position_bits: 16,
            uv_bits: 16,
            normal_bits: 16,
            tangent_bits: 16,
            generate_tangents: true,
            zstd_level: 19,
            meshopt_level: 3,
            entropy: true,
            generate_normals: true,
            predict_normals: true,
            predict_positions: true,
            predict_uvs: true,
            weld_normal_bits: 8,
            merge_parts: true,
            decode_budget: 30.0,
            speed_growth: 1.0 / 16.0,
        }
    }
}

/// A corner as welding compares it at [`CookConfig::weld_normal_bits`]: its stored
/// position (with the tangent sign) and uvs, its normal and tangent directions at
/// the weld's precision.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
struct WeldKey {
    position: [u16; 4],
    uv: [u16; 2],
    normal: [i16; 3],
    tangent: [i16; 3],
}

/// A direction as `bits`-bit snorm components of its unit vector (zero stays zero).
fn snorm_direction(v: [f32; 3], bits: u32) -> [i16; 3] {
    let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let scale = ((1u32 << (bits - 1)) - 1) as f32;
    let inv = if len > 0.0 && len.is_finite() {
        1.0 / len
    } else {
        0.0
    };
    v.map(|c| ((c * inv).clamp(-1.0, 1.0) * scale).round() as i16)
}

/// One vertex as it will be stored: welding compares these bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
struct QVertex {
    position: [u16; 4],
    normal: [i16; 2],
    tangent: [i16; 2],
    uv: [u16; 2],
}

/// Cooks `mesh` into a cooked record (tag [`crate::RecordTag::MESH_COOKED`]).
/// Normals missing from the input are computed (area-weighted, smooth) when
/// `generate_normals` is set; tangents are generated once when asked and the mesh has
/// uvs and normals. Provenance is dropped: a cooked
/// file carries what a renderer needs.
///
/// Corners are welded at [`CookConfig::weld_normal_bits`]; when that weld merges
/// corners an exact one keeps apart, both are cooked and the smaller record kept
/// (the exact one on a tie: fewer vertices do not always code smaller, their
/// order and the predictions change with them).
pub fn cook_mesh(mesh: &MeshData, opts: &CookConfig) -> Result<Vec<u8>, FormatError> {
    let tris = [(mesh.indices.len() / 3) as u32];
    cook_ranges(mesh, &tris, opts)
}

/// Cooks several parts into one record whose vertices share one quantisation grid
/// (over all the parts' bounds): each part's triangles are one range of the record's,
/// in part order; vertices the parts have alike are stored once. Returns the record
/// and each part's triangle count.
#[cfg(feature = "encode")]
pub(crate) fn cook_mesh_parts(
    parts: &[&MeshData],
    opts: &CookConfig,
) -> Result<(Vec<u8>, Vec<u32>), FormatError> {
    let mut mesh = MeshData::default();
    let mut tris = Vec::with_capacity(parts.len());
    for p in parts {
        p.validate()?;
        let base = mesh.positions.len() as u32;
        mesh.positions.extend_from_slice(&p.positions);
        mesh.normals.extend_from_slice(&p.normals);
        mesh.tangents.extend_from_slice(&p.tangents);
        mesh.uvs.extend_from_slice(&p.uvs);
        mesh.indices.extend(p.indices.iter().map(|&i| i + base));
        tris.push((p.indices.len() / 3) as u32);
    }
    Ok((cook_ranges(&mesh, &tris, opts)?, tris))
}

/// [`cook_mesh`] of a mesh whose triangles are parts of `part_tris` triangles each,
/// in order (each part's triangles kept one range).
fn cook_ranges(
    mesh: &MeshData,
    part_tris: &[u32],
    opts: &CookConfig,
) -> Result<Vec<u8>, FormatError> {
    let (welded, merged) = cook_mesh_welded(mesh, part_tris, opts)?;
    if !merged {
        return Ok(welded);
    }
    let exact_opts = CookConfig {
        weld_normal_bits: 0,
        ..*opts
    };
    let (exact, _) = cook_mesh_welded(mesh, part_tris, &exact_opts)?;
    Ok(if welded.len() < exact.len() {
        welded
    } else {
        exact
    })
}

/// [`cook_ranges`] at one weld: the record, and whether it merged corners an exact
/// weld keeps apart. The phases, in order: options, quantise, weld, order, predict,
/// code streams, budget, header.
fn cook_mesh_welded(
    mesh: &MeshData,
    part_tris: &[u32],
    opts: &CookConfig,
) -> Result<(Vec<u8>, bool), FormatError> {
    check_options(mesh, part_tris, opts)?;
    let attributes = Attributes::of(mesh, opts);
    let quantised = quantise(mesh, &attributes, opts);
    let welded = weld(mesh, &quantised.corners, &attributes, opts);
    let ordered = order(&quantised.corners, &welded, part_tris)?;
    let predicted = predict(&ordered, welded.unique, &attributes, opts);
    let coder = Coder {
        level: opts.meshopt_level,
        zstd_level: opts.entropy.then_some(opts.zstd_level),
    };
    let mut coded = code_streams(&coder, &predicted, &ordered, &quantised, opts)?;
    fit_decode_budget(&mut coded, welded.unique, ordered.indices.len() / 3, opts);
    let record = assemble(
        coded,
        welded.unique,
        ordered.indices.len(),
        &quantised,
        opts,
    );
    Ok((record, welded.merged))
}

/// Phase 1, options: the part sizes add up and every bit count is in range.
fn check_options(mesh: &MeshData, part_tris: &[u32], opts: &CookConfig) -> Result<(), FormatError> {
    mesh.validate()?;
    let corners_in_parts: usize = part_tris.iter().map(|&t| 3 * t as usize).sum();
    if corners_in_parts != mesh.indices.len() {
        return Err(FormatError::BadInput {
            what: "part triangle counts do not add up to the mesh's",
            found: corners_in_parts as u64 / 3,
        });
    }
    let bad_bits = |what, b: u32| FormatError::BadInput {
        what,
        found: b as u64,
    };
    if !(1..=16).contains(&opts.position_bits) {
        return Err(bad_bits("position_bits must be 1..=16", opts.position_bits));
    }
    if !(1..=16).contains(&opts.uv_bits) {
        return Err(bad_bits("uv_bits must be 1..=16", opts.uv_bits));
    }
    if !(2..=16).contains(&opts.normal_bits) {
        return Err(bad_bits("normal_bits must be 2..=16", opts.normal_bits));
    }
    if !(2..=16).contains(&opts.tangent_bits) {
        return Err(bad_bits("tangent_bits must be 2..=16", opts.tangent_bits));
    }
    if opts.weld_normal_bits == 1 || opts.weld_normal_bits > 16 {
        return Err(bad_bits(
            "weld_normal_bits must be 0 or 2..=16",
            opts.weld_normal_bits,
        ));
    }
    Ok(())
}

/// The attributes the record stores, before quantisation: normals (the mesh's, or
/// generated), tangents per corner (the mesh's, or generated once), whether it has
/// uvs.
struct Attributes {
    normals: Option<Vec<[f32; 3]>>,
    corner_tangents: Option<Vec<[f32; 4]>>,
    has_uvs: bool,
}

impl Attributes {
    fn of(mesh: &MeshData, opts: &CookConfig) -> Self {
        let normals: Option<Vec<[f32; 3]>> = if !mesh.normals.is_empty() {
            Some(mesh.normals.clone())
        } else if opts.generate_normals {
            Some(smooth_normals(mesh))
        } else {
            None
        };
        let has_uvs = !mesh.uvs.is_empty();
        let corner_tangents: Option<Vec<[f32; 4]>> = if !mesh.tangents.is_empty() {
            Some(
                mesh.indices
                    .iter()
                    .map(|&i| mesh.tangents[i as usize])
                    .collect(),
            )
        } else if let (Some(normals), true) = (
            &normals,
            has_uvs && opts.generate_tangents && !mesh.indices.is_empty(),
        ) {
            Some(meshopt::generate_tangents(
                Some(&mesh.indices),
                &mesh.positions,
                normals,
                &mesh.uvs,
                meshopt::TangentOptions::None,
            ))
        } else {
            None
        };
        Attributes {
            normals,
            corner_tangents,
            has_uvs,
        }
    }
}

/// Phase 2's result: every corner as it will be stored, and the grids' bounds.
struct Quantised {
    corners: Vec<QVertex>,
    min: [f32; 3],
    max: [f32; 3],
    uv_min: [f32; 2],
    uv_max: [f32; 2],
}

/// Phase 2, quantise: each corner (tangents are per corner) on the position grid
/// (cells over the largest extent), the uv grid and the octahedral codes.
fn quantise(mesh: &MeshData, a: &Attributes, opts: &CookConfig) -> Quantised {
    let (min, max) = bounds(&mesh.positions);
    let (uv_min, uv_max) = uv_bounds(&mesh.uvs);
    let (pb, ub, nb) = (opts.position_bits, opts.uv_bits, opts.normal_bits);
    let extent = max_extent(min, max) as f64;
    let corner_tangents = &a.corner_tangents;
    let corners: Vec<QVertex> = mesh
        .indices
        .iter()
        .enumerate()
        .map(|(c, &i)| {
            let i = i as usize;
            let p = mesh.positions[i];
            let t = corner_tangents.as_ref().map_or([0.0; 4], |t| t[c]);
            let sign = u16::from(corner_tangents.is_some() && t[3] < 0.0);
            QVertex {
                position: [
                    quantize_cells(p[0], min[0], extent, pb),
                    quantize_cells(p[1], min[1], extent, pb),
                    quantize_cells(p[2], min[2], extent, pb),
                    sign,
                ],
                normal: a.normals.as_ref().map_or([0; 2], |n| oct_encode(n[i], nb)),
                tangent: if corner_tangents.is_some() {
                    oct_encode([t[0], t[1], t[2]], opts.tangent_bits)
                } else {
                    [0; 2]
                },
                uv: if a.has_uvs {
                    let uv = mesh.uvs[i];
                    [
                        quantize_unorm(uv[0], uv_min[0], uv_max[0], ub),
                        quantize_unorm(uv[1], uv_min[1], uv_max[1], ub),
                    ]
                } else {
                    [0; 2]
                },
            }
        })
        .collect();
    Quantised {
        corners,
        min,
        max,
        uv_min,
        uv_max,
    }
}

/// Phase 3's result: the vertex count, each corner's vertex, and whether the weld
/// merged corners that differ in their stored bytes.
struct Welded {
    unique: usize,
    remap: Vec<u32>,
    merged: bool,
}

/// Phase 3, weld: corners stored alike become one vertex; at
/// [`CookConfig::weld_normal_bits`] also corners whose normals and tangents agree
/// at that precision.
fn weld(mesh: &MeshData, corners: &[QVertex], a: &Attributes, opts: &CookConfig) -> Welded {
    let (exact_unique, exact_remap) = meshopt::generate_vertex_remap(corners, None);
    let (unique, remap) = if opts.weld_normal_bits == 0 {
        (exact_unique, exact_remap)
    } else {
        let wb = opts.weld_normal_bits;
        let keys: Vec<WeldKey> = mesh
            .indices
            .iter()
            .zip(corners)
            .enumerate()
            .map(|(c, (&i, q))| WeldKey {
                position: q.position,
                uv: q.uv,
                normal: a
                    .normals
                    .as_ref()
                    .map_or([0; 3], |n| snorm_direction(n[i as usize], wb)),
                tangent: a
                    .corner_tangents
                    .as_ref()
                    .map_or([0; 3], |t| snorm_direction([t[c][0], t[c][1], t[c][2]], wb)),
            })
            .collect();
        meshopt::generate_vertex_remap(&keys, None)
    };
    Welded {
        unique,
        remap,
        merged: unique < exact_unique,
    }
}

/// Phase 4's result: the triangles as the decoder will see them, their meshopt
/// coding, and the vertices in fetch order.
struct Ordered {
    indices: Vec<u32>,
    coded_idx: Vec<u8>,
    vertices: Vec<QVertex>,
}

/// Phase 4, order: triangles for the vertex cache (each part's kept one range, in
/// part order), vertices for fetch, and the index buffer round-tripped through its
/// codec.
fn order(corners: &[QVertex], w: &Welded, part_tris: &[u32]) -> Result<Ordered, FormatError> {
    let unique = w.unique;
    let mut indices = meshopt::remap_index_buffer(None, corners.len(), &w.remap);
    let welded = meshopt::remap_vertex_buffer(corners, unique, &w.remap);
    // Each part's triangles stay one range, in part order, ordered for the vertex
    // cache within it (its vertices numbered locally for meshopt, so the work is the
    // part's size); vertices may be shared between parts, as glTF primitives share
    // buffers, and are numbered by first use.
    if part_tris.len() == 1 {
        meshopt::optimize_vertex_cache_strip_in_place(&mut indices, unique);
    } else {
        let mut local = vec![u32::MAX; unique];
        let mut global: Vec<u32> = Vec::new();
        let mut first = 0usize;
        for &t in part_tris {
            let range = &mut indices[first..first + 3 * t as usize];
            first += range.len();
            global.clear();
            for i in range.iter_mut() {
                let l = &mut local[*i as usize];
                if *l == u32::MAX {
                    *l = global.len() as u32;
                    global.push(*i);
                }
                *i = *l;
            }
            meshopt::optimize_vertex_cache_strip_in_place(range, global.len());
            for i in range.iter_mut() {
                *i = global[*i as usize];
            }
            for &g in &global {
                local[g as usize] = u32::MAX;
            }
        }
    }
    let vertices = meshopt::optimize_vertex_fetch(&mut indices, &welded);
    // The index buffer exactly as a decoder will see it (the index codec may rotate
    // triangles), so anything predicted from it agrees on both sides.
    let coded_idx =
        meshopt::encode_index_buffer(&indices, unique).map_err(|_| FormatError::BadInput {
            what: "meshopt index encode failed",
            found: 0,
        })?;
    let indices: Vec<u32> =
        meshopt::decode_index_buffer(&coded_idx, indices.len()).map_err(|_| {
            FormatError::BadInput {
                what: "meshopt index round trip failed",
                found: 0,
            }
        })?;
    Ok(Ordered {
        indices,
        coded_idx,
        vertices,
    })
}

/// Phase 5's result: the vertex streams split out, with what the walk predicts.
struct Predicted {
    /// The header's flags so far (attributes present, predictions asked for).
    flags: u8,
    positions: Vec<[u16; 4]>,
    /// Octahedral normal codes (empty without normals).
    normals: Vec<[i16; 2]>,
    /// Normals minus the geometric prediction (empty unless asked for).
    normal_residuals: Vec<[i16; 2]>,
    tangents: Vec<[i16; 2]>,
    /// The walk's zigzag residuals of the uvs when predicted, else their codes.
    uvs: Vec<[u16; 2]>,
    /// The uv codes when predicted (empty otherwise).
    uv_codes: Vec<[u16; 2]>,
    /// Each walked vertex's recipe, in walk order.
    recipes: Vec<(usize, Recipe)>,
    /// Positions and uvs predicted by the walk.
    pp: bool,
    pu: bool,
}

/// Phase 5, predict: the streams out of the ordered vertices, the geometric normal
/// prediction, one walk giving every vertex its recipe, and the uvs' parallelogram
/// residuals.
fn predict(o: &Ordered, unique: usize, a: &Attributes, opts: &CookConfig) -> Predicted {
    let (vertices, indices) = (&o.vertices, &o.indices);
    let mut flags = 0;
    if a.normals.is_some() {
        flags |= CookedHeader::HAS_NORMALS;
        if opts.predict_normals {
            flags |= CookedHeader::PREDICTED_NORMALS;
        }
    }
    if a.corner_tangents.is_some() {
        flags |= CookedHeader::HAS_TANGENTS;
    }
    if a.has_uvs {
        flags |= CookedHeader::HAS_UVS;
    }
    let positions: Vec<[u16; 4]> = vertices.iter().map(|v| v.position).collect();
    let normals: Vec<[i16; 2]> = if a.normals.is_some() {
        vertices.iter().map(|v| v.normal).collect()
    } else {
        Vec::new()
    };
    // Residuals against the geometric prediction, kept only where they store smaller
    // than the codes themselves (a flat-shaded grid whose normals are all one
    // direction stores the codes in next to nothing, the residuals not).
    let mut normal_residuals = Vec::new();
    if flags & CookedHeader::PREDICTED_NORMALS != 0 {
        let mut predicted = Vec::new();
        let nb = opts.normal_bits;
        predict_normals(&positions, indices, nb, &mut Vec::new(), &mut predicted);
        normal_residuals = normals.clone();
        for (q, p) in normal_residuals.iter_mut().zip(&predicted) {
            *q = [q[0].wrapping_sub(p[0]), q[1].wrapping_sub(p[1])];
        }
    }
    let tangents: Vec<[i16; 2]> = if flags & CookedHeader::HAS_TANGENTS != 0 {
        vertices.iter().map(|v| v.tangent).collect()
    } else {
        Vec::new()
    };
    let mut uvs: Vec<[u16; 2]> = if a.has_uvs {
        vertices.iter().map(|v| v.uv).collect()
    } else {
        Vec::new()
    };
    let (pp, pu) = (opts.predict_positions, opts.predict_uvs && !uvs.is_empty());
    if pp {
        flags |= CookedHeader::PREDICTED_POSITIONS;
    }
    if pu {
        flags |= CookedHeader::PREDICTED_UVS;
    }
    // One walk gives every vertex its recipe; uvs are predicted by the parallelogram,
    // positions by each candidate damping in turn (the smallest stored stream wins).
    let mut recipes = Vec::new();
    if pp || pu || !normals.is_empty() {
        walk(indices, unique, &mut WalkScratch::default(), |v, r| {
            recipes.push((v, r));
        });
    }
    let uv_codes = if pu { uvs.clone() } else { Vec::new() };
    if pu {
        uvs = walk_residuals(&uv_codes, &recipes);
    }
    Predicted {
        flags,
        positions,
        normals,
        normal_residuals,
        tangents,
        uvs,
        uv_codes,
        recipes,
        pp,
        pu,
    }
}

/// Two-component codes as zigzag residuals of the walk's plain parallelogram; the
/// vertices no recipe names keep their codes.
fn walk_residuals(codes: &[[u16; 2]], recipes: &[(usize, Recipe)]) -> Vec<[u16; 2]> {
    let mut residuals = codes.to_vec();
    for &(v, recipe) in recipes {
        let (pred, p) = (recipe.predict(codes, 8), codes[v]);
        residuals[v] = [
            zigzag(p[0].wrapping_sub(pred[0])),
            zigzag(p[1].wrapping_sub(pred[1])),
        ];
    }
    residuals
}

/// The stream coders' settings: meshopt's level and zstd's (none: no entropy layer).
struct Coder {
    level: i32,
    zstd_level: Option<i32>,
}

impl Coder {
    /// Every coding of a vertex stream of `elem`-byte values (see [`choose_codec`]).
    fn vertices<T: Pod>(&self, values: &[T], elem: usize) -> Result<Codings, FormatError> {
        let coded =
            meshopt::encode_vertex_buffer_level(values, self.level, Some(1)).map_err(|_| {
                FormatError::BadInput {
                    what: "meshopt vertex encode failed",
                    found: 0,
                }
            })?;
        Ok(choose_codec(
            bytemuck::cast_slice(values),
            elem,
            &coded,
            self.zstd_level,
            true,
        ))
    }
}

/// Shared positions ([`CookedHeader::SHARED_POSITIONS`]): the distinct positions'
/// count, the remap's codec and its stored bytes.
type SharedPositions = (u32, u8, Vec<u8>);

/// Phase 6's result: each stream's codings, the header fields the coding decided.
struct Coded {
    streams: [Codings; 5],
    flags: u8,
    position_damping: u8,
    shared: Option<SharedPositions>,
    uv_axes: u8,
}

/// Phase 6, code streams: positions (over the dampings, with shared positions where
/// they pay), normals (codes, geometric or walk residuals), tangents, uvs (walk or
/// from-positions residuals) and indices, each the smallest way.
fn code_streams(
    coder: &Coder,
    p: &Predicted,
    o: &Ordered,
    q: &Quantised,
    opts: &CookConfig,
) -> Result<Coded, FormatError> {
    let mut flags = p.flags;
    let (positions, damping, shared) = code_positions(coder, p, &o.indices, &mut flags)?;
    let normals = code_normals(coder, p, opts, &mut flags)?;
    let (uvs, uv_axes) = code_uvs(coder, p, q, opts, &mut flags)?;
    let streams = [
        positions,
        normals,
        coder.vertices(&p.tangents, 4)?,
        uvs,
        choose_codec(
            bytemuck::cast_slice(&o.indices),
            4,
            &o.coded_idx,
            coder.zstd_level,
            false,
        ),
    ];
    Ok(Coded {
        streams,
        flags,
        position_damping: damping,
        shared,
        uv_axes,
    })
}

/// The positions stream: the smallest over the dampings, then, where vertices repeat
/// a position (split faces, uv islands), the distinct positions walked over the
/// triangles of positions with a remap per vertex, where that stores smaller.
fn code_positions(
    coder: &Coder,
    p: &Predicted,
    indices: &[u32],
    flags: &mut u8,
) -> Result<(Codings, u8, Option<SharedPositions>), FormatError> {
    let pp = p.pp;
    // The positions stream stored smallest over the dampings: (stream, damping).
    let best_positions_of = |positions: &[[u16; 4]],
                             recipes: &[(usize, Recipe)]|
     -> Result<(Codings, u8), FormatError> {
        let mut best: Option<(Codings, u8)> = None;
        let dampings: &[u8] = if pp { &[0, 2, 3, 4] } else { &[0] };
        for &damping in dampings {
            let stream = if pp {
                position_residuals(positions, recipes, damping)
            } else {
                positions.to_vec()
            };
            let candidate = coder.vertices(&stream, 8)?;
            if best.as_ref().is_none_or(|b| candidate.len() < b.0.len()) {
                best = Some((candidate, damping));
            }
        }
        Ok(best.expect("at least one damping"))
    };
    let (mut best, mut damping) = best_positions_of(&p.positions, &p.recipes)?;
    let mut shared = None;
    if pp {
        let (distinct, remap, position_indices) = share_positions(&p.positions, indices);
        if distinct.len() < p.positions.len() {
            let mut precipes = Vec::new();
            walk(
                &position_indices,
                distinct.len(),
                &mut WalkScratch::default(),
                |v, r| precipes.push((v, r)),
            );
            let (stream, d) = best_positions_of(&distinct, &precipes)?;
            let (remap_codec, remap_bytes) = remap_stream(&remap, coder.zstd_level);
            // The remap and the second walk cost decode time: shared positions must
            // save an eighth of the positions' bytes (pirate, FlightHelmet and ToyCar,
            // whose vertices mostly have positions of their own, save 3-9 % there and
            // decoded 20-35 % slower; TessTerrain, LowPolyJungle, Fox save 30-60 %).
            let stored = best.len();
            if stream.len() + remap_bytes.len() + 6 < stored - stored / SHARED_MIN_SAVING {
                best = stream;
                damping = d;
                *flags |= CookedHeader::SHARED_POSITIONS;
                shared = Some((distinct.len() as u32, remap_codec, remap_bytes));
            }
        }
    }
    Ok((best, damping, shared))
}

/// The normals stream: the codes, the geometric prediction's residuals or the
/// walk's, whichever stores smallest (flags say which).
fn code_normals(
    coder: &Coder,
    p: &Predicted,
    opts: &CookConfig,
    flags: &mut u8,
) -> Result<Codings, FormatError> {
    let mut best = coder.vertices(&p.normals, 4)?;
    if *flags & CookedHeader::PREDICTED_NORMALS != 0 {
        let predicted = coder.vertices(&p.normal_residuals, 4)?;
        if predicted.len() <= best.len() {
            best = predicted;
        } else {
            *flags &= !CookedHeader::PREDICTED_NORMALS;
        }
    }
    // The same walk over the octahedral codes: smooth normals that are not the
    // quantised surface's own (authored, analytic) predict well from their
    // neighbours.
    if opts.predict_normals && !p.normals.is_empty() {
        let codes: Vec<[u16; 2]> = bytemuck::cast_slice(&p.normals).to_vec();
        let residuals = walk_residuals(&codes, &p.recipes);
        let walked = coder.vertices(&residuals, 4)?;
        if walked.len() < best.len() {
            best = walked;
            *flags &= !CookedHeader::PREDICTED_NORMALS;
            *flags |= CookedHeader::PARALLELOGRAM_NORMALS;
        }
    }
    Ok(best)
}

/// The uvs stream: the walk's residuals (or the codes), or, for uvs that follow the
/// positions (a terrain tile's), residuals against each vertex's position where
/// that stores clearly smaller; the axes byte says which.
fn code_uvs(
    coder: &Coder,
    p: &Predicted,
    q: &Quantised,
    opts: &CookConfig,
    flags: &mut u8,
) -> Result<(Codings, u8), FormatError> {
    let mut best = coder.vertices(&p.uvs, 4)?;
    let mut uv_axes = 0;
    if p.pu {
        if let Some((axes, residuals)) = uv_residuals_from_positions(
            &p.uv_codes,
            &p.positions,
            q.min,
            q.max,
            opts.position_bits,
            opts.uv_bits,
        ) {
            let from_positions = coder.vertices(&residuals, 4)?;
            // It must save an eighth of the stream and 32 bytes: inside a set's
            // zstd frame a small record's residuals can compress worse than the
            // walk's (gen_box12 grew 129 -> 139 bytes), and the pass costs decode
            // time.
            let saved = best.len().saturating_sub(from_positions.len());
            if saved >= 32 && saved * 8 >= best.len() {
                best = from_positions;
                uv_axes = axes;
                *flags &= !CookedHeader::PREDICTED_UVS;
            }
        }
    }
    Ok((best, uv_axes))
}

/// Phase 7, budget: where the record's estimated decode time is over
/// [`CookConfig::decode_budget`], streams move to faster codings (see
/// [`fit_budget`]).
fn fit_decode_budget(c: &mut Coded, unique: usize, triangles: usize, opts: &CookConfig) {
    if opts.decode_budget > 0.0 && triangles > 0 {
        let remap = c.shared.as_ref().map(|s| (s.0 as usize, s.1, s.2.len()));
        let fixed = crate::cost::passes_ns(unique, triangles, c.flags, remap);
        let smallest: usize = c.streams.iter().map(Codings::len).sum();
        let max_bytes = smallest + (smallest as f64 * opts.speed_growth.max(0.0)) as usize;
        fit_budget(
            &mut c.streams,
            fixed,
            opts.decode_budget * triangles as f64,
            max_bytes,
        );
    }
}

/// Phase 8, header: the header, then the chosen streams in order, then the remap.
fn assemble(
    c: Coded,
    unique: usize,
    index_count: usize,
    q: &Quantised,
    opts: &CookConfig,
) -> Vec<u8> {
    let shared = c.shared;
    let mut header = CookedHeader {
        vertex_count: unique as u32,
        index_count: index_count as u32,
        position_bits: opts.position_bits as u8,
        uv_bits: opts.uv_bits as u8,
        normal_bits: opts.normal_bits as u8,
        flags: c.flags,
        tangent_bits: opts.tangent_bits as u8,
        position_damping: c.position_damping,
        remap_codec: shared.as_ref().map_or(0, |s| s.1),
        uv_axes: c.uv_axes,
        bounds_min: q.min,
        bounds_max: q.max,
        uv_min: q.uv_min,
        uv_max: q.uv_max,
        streams: [StreamDesc::zeroed(); 5],
        position_count: shared.as_ref().map_or(0, |s| s.0),
        remap_len: shared.as_ref().map_or(0, |s| s.2.len() as u32),
    };
    let mut body = Vec::new();
    for (i, (desc, bytes)) in c.streams.map(Codings::into_chosen).into_iter().enumerate() {
        header.streams[i] = desc;
        body.extend_from_slice(&bytes);
    }
    if let Some((_, _, remap)) = &shared {
        body.extend_from_slice(remap);
    }
    let mut out = Vec::with_capacity(std::mem::size_of::<CookedHeader>() + body.len());
    out.extend_from_slice(bytemuck::bytes_of(&header));
    out.extend_from_slice(&body);
    out
}

/// Positions as zigzag residuals of the walk's `recipes`, parallelograms damped by
/// `damping` (see [`CookedHeader::position_damping`]); w (the tangent sign) kept.
fn position_residuals(
    positions: &[[u16; 4]],
    recipes: &[(usize, Recipe)],
    damping: u8,
) -> Vec<[u16; 4]> {
    let mut stream = positions.to_vec();
    let w = 8 - damping as i32;
    for &(v, recipe) in recipes {
        let (pred, p) = (recipe.predict(positions, w), positions[v]);
        stream[v] = [
            zigzag(p[0].wrapping_sub(pred[0])),
            zigzag(p[1].wrapping_sub(pred[1])),
            zigzag(p[2].wrapping_sub(pred[2])),
            p[3],
        ];
    }
    stream
}

/// The distinct positions (with their w) of vertices in first-use order, numbered
/// as vertices first use them; each vertex's remap value (0: the next new position,
/// else how many positions back its one was numbered); the triangles over
/// positions. Both stay in first-use order, which the decoder's walk needs.
fn share_positions(positions: &[[u16; 4]], indices: &[u32]) -> (Vec<[u16; 4]>, Vec<u32>, Vec<u32>) {
    use std::collections::HashMap;
    let mut id_of: HashMap<[u16; 4], u32> = HashMap::with_capacity(positions.len());
    let mut distinct = Vec::new();
    let mut ids = Vec::with_capacity(positions.len());
    let mut remap = Vec::with_capacity(positions.len());
    for &p in positions {
        let next = distinct.len() as u32;
        let id = *id_of.entry(p).or_insert(next);
        if id == next {
            distinct.push(p);
            remap.push(0);
        } else {
            remap.push(next - id);
        }
        ids.push(id);
    }
    let position_indices = indices.iter().map(|&i| ids[i as usize]).collect();
    (distinct, remap, position_indices)
}

/// The remap's values (u32) stored raw or as byte planes through zstd, whichever is
/// smaller: the codec and the bytes.
fn remap_stream(remap: &[u32], zstd_level: Option<i32>) -> (u8, Vec<u8>) {
    let raw: &[u8] = bytemuck::cast_slice(remap);
    if let Some(Ok(z)) = zstd_level.map(|l| zstd_frame(&split_planes(raw, 4), l, None).ok_or(())) {
        let limit = MAX_EXPANSION * z.len() as u64 + EXPANSION_SLACK;
        if !z.is_empty() && z.len() < raw.len() && raw.len() as u64 <= limit {
            return (Codec::PlanesZstd as u8, z);
        }
    }
    (Codec::Raw as u8, raw.to_vec())
}

/// How much smaller than the best coding without an entropy layer (raw or meshopt
/// alone) a zstd or bucket coding must be to be chosen by size: 1/16 of its bytes.
/// Below that the entropy layer costs more decode time than its bytes are worth: on
/// pirate's tangents meshopt + zstd saved 4.3 % (534 bytes, 0.1 bytes per triangle)
/// and its zstd pass took about 2 ns of the 28 ns per triangle the whole decode took.
const ENTROPY_MIN_SAVING: usize = 16;

/// How much of the positions stream shared positions must save to be chosen: 1/8
/// (see where it is used).
const SHARED_MIN_SAVING: usize = 8;

/// The codings of one stream the reader accepts, each with its estimated decode time
/// (`cost.rs`), and the one chosen by size.
pub(crate) struct Codings {
    list: Vec<(StreamDesc, Vec<u8>, f64)>,
    pick: usize,
}

impl Codings {
    /// The chosen coding's stored bytes.
    fn len(&self) -> usize {
        self.list[self.pick].1.len()
    }

    fn ns(&self) -> f64 {
        self.list[self.pick].2
    }

    fn into_chosen(mut self) -> (StreamDesc, Vec<u8>) {
        let (desc, bytes, _) = self.list.swap_remove(self.pick);
        (desc, bytes)
    }
}

/// Every coding of a stream whose expansion the reader accepts: raw, meshopt
/// (`coded`) and, with `zstd_level`, meshopt + zstd, byte planes + zstd and
/// (`buckets`: vertex streams) the bucket codecs. The one chosen by size is the
/// smallest, except that one without an entropy layer wins when an entropy-coded
/// one saves less than 1/[`ENTROPY_MIN_SAVING`] of its bytes.
fn choose_codec(
    raw: &[u8],
    elem: usize,
    coded: &[u8],
    zstd_level: Option<i32>,
    buckets: bool,
) -> Codings {
    let decoded = raw.len() as u64;
    let fits = |stored: u64, coded: u64| {
        let limit = MAX_EXPANSION * stored + EXPANSION_SLACK;
        decoded <= limit && coded <= limit && coded <= 2 * decoded + EXPANSION_SLACK
    };
    let index = !buckets;
    let mut list: Vec<(StreamDesc, Vec<u8>, f64)> = Vec::new();
    let offer = |list: &mut Vec<(StreamDesc, Vec<u8>, f64)>,
                 codec: Codec,
                 bytes: Vec<u8>,
                 coded_len: usize| {
        if (bytes.is_empty() && !raw.is_empty()) || !fits(bytes.len() as u64, coded_len as u64) {
            return;
        }
        let desc = StreamDesc {
            codec: codec as u32,
            stored_len: bytes.len() as u32,
            coded_len: coded_len as u32,
            decoded_len: decoded as u32,
        };
        let ns = if raw.is_empty() {
            0.0
        } else {
            crate::cost::stream_ns(codec, index, bytes.len(), raw.len())
        };
        list.push((desc, bytes, ns));
    };
    offer(&mut list, Codec::Raw, raw.to_vec(), raw.len());
    if raw.is_empty() {
        return Codings { list, pick: 0 };
    }
    offer(&mut list, Codec::Meshopt, coded.to_vec(), coded.len());
    let fast_count = list.len();
    if let Some(level) = zstd_level {
        if let Some(z) = zstd_frame(coded, level, None) {
            offer(&mut list, Codec::MeshoptZstd, z, coded.len());
        }
        if let Some(z) = zstd_frame(&split_planes(raw, elem), level, None) {
            offer(&mut list, Codec::PlanesZstd, z, raw.len());
        }
        // The bucket codecs serve vertex streams (u16 components); not the indices.
        if buckets {
            let values: Vec<u16> = raw
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect();
            for (codec, zigzag) in [(Codec::Buckets, false), (Codec::BucketsZigzag, true)] {
                if let Some(z) = crate::buckets::encode(&values, elem / 2, zigzag, level) {
                    offer(&mut list, codec, z, values.len());
                }
            }
            for (codec, zigzag) in [
                (Codec::BucketsRanged, false),
                (Codec::BucketsRangedZigzag, true),
            ] {
                if let Some(z) = crate::buckets::encode_ranged(&values, elem / 2, zigzag) {
                    offer(&mut list, codec, z, values.len());
                }
            }
        }
    }
    // The smallest without an entropy layer (the first on a tie), then any
    // entropy-coded one that beats it by the margin and the best so far.
    let mut pick = 0;
    for (i, c) in list.iter().enumerate().take(fast_count) {
        if c.1.len() < list[pick].1.len() {
            pick = i;
        }
    }
    let fast = list[pick].1.len();
    let mut best_len = fast - fast / ENTROPY_MIN_SAVING;
    for (i, c) in list.iter().enumerate().skip(fast_count) {
        if c.1.len() < best_len {
            best_len = c.1.len();
            pick = i;
        }
    }
    Codings { list, pick }
}

/// Trades bytes for decode time across a record's streams while its estimated
/// decode time (`fixed_ns` for the passes that do not depend on the codings, plus
/// the chosen codings') is over `budget_ns`: each step moves one stream to a faster
/// coding, the one that saves the most time per byte it adds (the first on a tie),
/// as long as the streams together stay within `max_bytes`.
fn fit_budget(streams: &mut [Codings], fixed_ns: f64, budget_ns: f64, max_bytes: usize) {
    loop {
        let total: f64 = fixed_ns + streams.iter().map(Codings::ns).sum::<f64>();
        if total <= budget_ns {
            return;
        }
        let bytes: usize = streams.iter().map(Codings::len).sum();
        let mut best: Option<(usize, usize, f64)> = None;
        for (s, c) in streams.iter().enumerate() {
            let (now_len, now_ns) = (c.len(), c.ns());
            for (i, (_, b, ns)) in c.list.iter().enumerate() {
                if *ns >= now_ns || bytes - now_len + b.len() > max_bytes {
                    continue;
                }
                let rate = (now_ns - ns) / (b.len().saturating_sub(now_len) as f64 + 1.0);
                if best.is_none_or(|(_, _, r)| rate > r) {
                    best = Some((s, i, rate));
                }
            }
        }
        let Some((s, i, _)) = best else {
            return;
        };
        streams[s].pick = i;
    }
}

fn uv_bounds(uvs: &[[f32; 2]]) -> ([f32; 2], [f32; 2]) {
    if uvs.is_empty() {
        return ([0.0; 2], [0.0; 2]);
    }
    let mut min = [f32::INFINITY; 2];
    let mut max = [f32::NEG_INFINITY; 2];
    for uv in uvs {
        for i in 0..2 {
            min[i] = min[i].min(uv[i]);
            max[i] = max[i].max(uv[i]);
        }
    }
    (min, max)
}

/// Area-weighted smooth vertex normals, for meshes that come without any.
fn smooth_normals(mesh: &MeshData) -> Vec<[f32; 3]> {
    let mut n = vec![[0.0f32; 3]; mesh.positions.len()];
    for t in mesh.indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.positions[i as usize]);
        let e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let f = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        for &i in t {
            for k in 0..3 {
                n[i as usize][k] += f[k];
            }
        }
    }
    n
}

/// Cooks several meshes on the rayon pool; output order and bytes do not depend on
/// the thread count.
pub fn cook_meshes(meshes: &[MeshData], opts: &CookConfig) -> Vec<Result<Vec<u8>, FormatError>> {
    use rayon::prelude::*;
    meshes.par_iter().map(|m| cook_mesh(m, opts)).collect()
}

#[cfg(test)]
mod tests {
    use crate::coding::{zstd_frame, RAW_LITERALS_BELOW};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The literals block type of a zstd frame's first block: 0 raw, 1 RLE, 2
    /// Huffman-coded, 3 Huffman with the previous table; `None` for a raw or RLE block.
    fn literals_type(frame: &[u8]) -> Option<u8> {
        assert_eq!(frame[..4], [0x28, 0xB5, 0x2F, 0xFD], "a zstd frame");
        let fhd = frame[4];
        let single = fhd & 0x20 != 0;
        let mut at = 5 + usize::from(!single) + [0, 1, 2, 4][usize::from(fhd & 3)];
        at += [usize::from(single), 2, 4, 8][usize::from(fhd >> 6)];
        let block_type = (frame[at] >> 1) & 3;
        (block_type == 2).then(|| frame[at + 3] & 3)
    }

    #[test]
    fn small_frames_store_literals_raw_only_where_it_costs_few_bytes() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // Bytes Huffman cannot shrink: raw literals cost nothing and are chosen.
        let noise: Vec<u8> = (0..1500).map(|_| rng.random()).collect();
        // Four symbols: Huffman codes them in 2 bits, raw literals would cost 4x.
        let skewed: Vec<u8> = (0..1500).map(|_| rng.random_range(0..4u8)).collect();
        // The same skew, large: always Huffman, the frame plain zstd writes.
        let large: Vec<u8> = (0..2 * RAW_LITERALS_BELOW)
            .map(|_| rng.random_range(0..4u8))
            .collect();
        let frame = |d: &[u8]| zstd_frame(d, 19, None).unwrap();
        let back = |f: &[u8], n: usize| zstd::bulk::decompress(f, n).unwrap();
        for d in [&noise, &skewed, &large] {
            assert_eq!(back(&frame(d), d.len()), *d);
        }
        assert_ne!(
            literals_type(&frame(&noise)),
            Some(2),
            "noise: no Huffman table"
        );
        assert_eq!(
            literals_type(&frame(&skewed)),
            Some(2),
            "skewed: Huffman kept"
        );
        assert_eq!(frame(&large), zstd::bulk::compress(&large, 19).unwrap());
        // A skew Huffman saves little on: raw literals, at most 1/16 larger.
        let mild: Vec<u8> = (0..1500).map(|_| rng.random_range(0..200u8)).collect();
        let (ours, plain) = (frame(&mild), zstd::bulk::compress(&mild, 19).unwrap());
        assert_eq!(
            literals_type(&plain),
            Some(2),
            "plain zstd codes these with Huffman"
        );
        assert_ne!(literals_type(&ours), Some(2), "mild: raw literals chosen");
        assert!(ours.len() <= plain.len() + plain.len() / 16);
        assert_eq!(back(&ours, mild.len()), mild);
    }
}

//! Draw bands (docs/design/baked-buildings.md#draw-bands): for each piece at each level, the camera distances it draws
//! in, with a crossfade margin, measured the way Bevy 0.19's `VisibilityRange`
//! measures: from the camera to the entity's origin (the dither shader always
//! measures to the origin, so `use_aabb` stays off).
//!
//! - A piece a coarser level left unchanged (same identity, mesh, material and origin)
//!   is one entity whose band spans both levels: [`PieceBand::Continues`].
//! - A band that hands over at a level boundary has its end pushed out by the distance
//!   from its origin to the farthest origin of the pieces drawing the same placed
//!   elements at the next level ([`farsight_lod::handover_push`]), so by the triangle
//!   inequality no camera is past the one band and short of the other.
//! - Ends are rounded up to half a metre ([`farsight_lod::round_band_end`]): Bevy keeps
//!   one GPU slot per distinct range for the life of the app.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use farsight_lod::{handover_push, round_band_end};

use crate::baked::BakedBuilding;
use crate::mesh::{MeshedBuilding, Piece, PieceKind};
use crate::recipe::Side;

/// The crossfade margin as a share of the boundary distance when none is given.
pub const DEFAULT_CROSSFADE: f32 = 0.1;

/// A distance band with crossfade margins: the fields of Bevy's `VisibilityRange`.
/// Fades in over `start_margin`, fully drawn between, fades out over `end_margin`.
#[derive(Clone, Debug, PartialEq)]
pub struct DrawBand {
    /// Distances (metres) over which the piece fades in; `0..0` at the first level.
    pub start_margin: Range<f32>,
    /// Distances (metres) over which the piece fades out; `inf..inf` when no
    /// later level takes over.
    pub end_margin: Range<f32>,
}

/// A piece's band at one level.
#[derive(Clone, Debug, PartialEq)]
pub enum PieceBand {
    /// Spawn the piece with this band.
    Draw(DrawBand),
    /// The piece is the previous level's piece at this index, unchanged: the same
    /// entity, whose band already spans this level.
    Continues {
        /// The piece's index in the previous level's pieces.
        previous: usize,
    },
}

/// Bands of every piece of every level, in [`MeshedBuilding::pieces`] order.
pub fn bands(baked: &BakedBuilding, crossfade: f32) -> Vec<Vec<PieceBand>> {
    let untils: Vec<f32> = baked.ladder.iter().filter_map(|p| p.until).collect();
    bands_of(&baked.levels, &untils, crossfade)
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Element(&'a str, &'a str),
    Batch(&'a str, &'a str, Side),
}

fn key<'a>(p: &Piece<'a>) -> Key<'a> {
    match p.kind {
        PieceKind::Element {
            instance, element, ..
        } => Key::Element(instance, element),
        PieceKind::Batch { group, .. } => Key::Batch(group, p.binding, p.side),
    }
}

/// [`bands`] over levels and the boundary distances between them (`untils[k]` ends
/// level `k`; there is one fewer than levels).
pub fn bands_of(levels: &[MeshedBuilding], untils: &[f32], crossfade: f32) -> Vec<Vec<PieceBand>> {
    let pieces: Vec<Vec<Piece<'_>>> = levels.iter().map(|l| l.pieces().collect()).collect();
    let placed: Vec<Vec<Vec<(String, String)>>> = levels
        .iter()
        .zip(&pieces)
        .map(|(l, ps)| ps.iter().map(|p| l.placed_elements(p)).collect())
        .collect();
    // continues[n][i]: the index of the same piece at level n - 1.
    let mut continues: Vec<Vec<Option<usize>>> = Vec::with_capacity(levels.len());
    for n in 0..levels.len() {
        if n == 0 {
            continues.push(vec![None; pieces[0].len()]);
            continue;
        }
        let prev: BTreeMap<Key<'_>, usize> = pieces[n - 1]
            .iter()
            .enumerate()
            .map(|(i, p)| (key(p), i))
            .collect();
        continues.push(
            pieces[n]
                .iter()
                .map(|p| {
                    let &j = prev.get(&key(p))?;
                    let q = &pieces[n - 1][j];
                    let same = (Arc::ptr_eq(p.mesh, q.mesh) || p.mesh == q.mesh)
                        && p.origin == q.origin
                        && p.material == q.material
                        && p.transform == q.transform;
                    same.then_some(j)
                })
                .collect(),
        );
    }
    // Per level: placed element -> origins of the pieces drawing it.
    type Drawers<'a> = BTreeMap<&'a (String, String), Vec<[f32; 3]>>;
    let drawers: Vec<Drawers<'_>> = (0..levels.len())
        .map(|n| {
            let mut m: BTreeMap<&(String, String), Vec<[f32; 3]>> = BTreeMap::new();
            for (i, p) in pieces[n].iter().enumerate() {
                for e in &placed[n][i] {
                    m.entry(e).or_default().push(p.origin);
                }
            }
            m
        })
        .collect();
    let margin = |n: usize| {
        let s = round_band_end(untils[n]);
        (s, round_band_end(untils[n] * crossfade))
    };
    let mut out = Vec::with_capacity(levels.len());
    for n in 0..levels.len() {
        let mut level = Vec::with_capacity(pieces[n].len());
        for (i, p) in pieces[n].iter().enumerate() {
            if let Some(previous) = continues[n][i] {
                level.push(PieceBand::Continues { previous });
                continue;
            }
            // The last level of this piece's run.
            let (mut b, mut j) = (n, i);
            while b + 1 < levels.len() {
                match continues[b + 1].iter().position(|c| *c == Some(j)) {
                    Some(k) => {
                        b += 1;
                        j = k;
                    }
                    None => break,
                }
            }
            let start_margin = if n == 0 {
                0.0..0.0
            } else {
                let (s, w) = margin(n - 1);
                s..s + w
            };
            let end_margin = if b + 1 >= levels.len() || b >= untils.len() {
                f32::INFINITY..f32::INFINITY
            } else {
                let (s, w) = margin(b);
                let next: BTreeSet<[u32; 3]> = placed[b][j]
                    .iter()
                    .filter_map(|e| drawers[b + 1].get(e))
                    .flatten()
                    .map(|o| o.map(f32::to_bits))
                    .collect();
                let push = handover_push(p.origin, next.iter().map(|o| o.map(f32::from_bits)));
                let e = s + round_band_end(push);
                e..e + w
            };
            level.push(PieceBand::Draw(DrawBand {
                start_margin,
                end_margin,
            }));
        }
        out.push(level);
    }
    out
}

/// Bevy 0.19's dither rule for a band at `camera_distance`, as a mask of the sixteen
/// cells of its 4 x 4 dither pattern that draw (bit `t` for threshold `t`): zero when
/// the CPU cull (`is_visible_at_all`) or the shader culls it, all sixteen when fully
/// drawn. The shader's level is `round((d - a) / (b - a) * 16)` clamped to 0..=16 over
/// the start margin (offset -16) or the end margin (offset 0); a fragment is discarded
/// when `level >= 0 && level + t >= 16` or `level < 0 && 1 + level + t <= 0`.
pub fn dither_coverage(band: &DrawBand, camera_distance: f32) -> u16 {
    let d = camera_distance;
    if !(d >= band.start_margin.start && d < band.end_margin.end) {
        return 0;
    }
    let in_end = d >= band.end_margin.start;
    let (offset, lo, hi) = if in_end {
        (0, band.end_margin.start, band.end_margin.end)
    } else {
        (-16, band.start_margin.start, band.start_margin.end)
    };
    // WGSL's round is half to even; its f32 -> i32 conversion saturates (NaN as 0).
    let level = ((d - lo) / (hi - lo) * 16.0).round_ties_even() as i32;
    let dither = offset + level.clamp(0, 16);
    if dither == 0 {
        return u16::MAX;
    }
    if dither <= -16 || dither >= 16 {
        return 0;
    }
    (0..16)
        .filter(|&t| {
            let discard = (dither >= 0 && dither + t >= 16) || (dither < 0 && 1 + dither + t <= 0);
            !discard
        })
        .fold(0u16, |m, t| m | (1 << t))
}

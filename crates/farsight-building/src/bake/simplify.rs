//! Levels of detail as simpler recipes (docs/design/baked-buildings.md#levels-are-simpler-recipes): [`simplified_geometry`],
//! [`simplified_part`], [`simplified_building`].

use farsight_lod::scaled_segments;

use crate::policy::LodPolicy;
use crate::recipe::{Building, Element, Geometry, Part, Shape, Side};

/// The geometry with its segments coarsened by the policy.
pub fn simplified_geometry(g: &Geometry, p: &LodPolicy) -> Geometry {
    match g.segments() {
        Some(n) => g.with_segments(scaled_segments(n, p.segment_scale)),
        None => g.clone(),
    }
}

fn coarsen(s: &Shape, p: &LodPolicy) -> Shape {
    Shape {
        geometry: simplified_geometry(&s.geometry, p),
        at: s.at,
    }
}

/// The element under the policy, or `None` if it goes. A `far` element is kept whole
/// (members and cutters too) with only its segments coarsened. Otherwise an interior
/// element goes under `drop_interior`, an element whose shape's middle extent is under
/// `min_feature` goes, and so does every union member or cutter whose own middle
/// extent is.
pub fn simplified_element(e: &Element, p: &LodPolicy) -> Option<Element> {
    let keep = |s: &&Shape| e.far || s.geometry.middle_extent() >= p.min_feature;
    if !e.far {
        if p.drop_interior && e.side == Side::Interior {
            return None;
        }
        if !keep(&&e.shape) {
            return None;
        }
    }
    Some(Element {
        id: e.id.clone(),
        shape: coarsen(&e.shape, p),
        union: e.union.iter().filter(keep).map(|s| coarsen(s, p)).collect(),
        cutters: e
            .cutters
            .iter()
            .filter(keep)
            .map(|s| coarsen(s, p))
            .collect(),
        side: e.side,
        binding: e.binding.clone(),
        far: e.far,
    })
}

/// The part under the policy, or `None` if nothing of it survives.
pub fn simplified_part(part: &Part, p: &LodPolicy) -> Option<Part> {
    let elements: Vec<Element> = part
        .elements
        .iter()
        .filter_map(|e| simplified_element(e, p))
        .collect();
    (!elements.is_empty()).then(|| Part {
        id: part.id.clone(),
        storey: part.storey,
        elements,
    })
}

/// The building under the policy. Vanished parts go, with the instances placing them
/// (and their colliders); surviving instances keep their poses, their attachments are
/// cleared, and they keep only the overrides of slots their part still uses. Merge
/// groups keep their surviving instances and go when none survives.
pub fn simplified_building(b: &Building, p: &LodPolicy) -> Building {
    let parts: Vec<Part> = b
        .parts
        .iter()
        .filter_map(|part| simplified_part(part, p))
        .collect();
    let instances = b
        .instances
        .iter()
        .filter_map(|inst| {
            let part = parts.iter().find(|q| q.id == inst.part)?;
            let mut inst = inst.clone();
            inst.attachment = None;
            inst.overrides
                .retain(|slot, _| part.elements.iter().any(|e| &e.binding == slot));
            Some(inst)
        })
        .collect::<Vec<_>>();
    let merge_groups = b
        .merge_groups
        .iter()
        .filter_map(|g| {
            let mut g = g.clone();
            g.instances
                .retain(|i| instances.iter().any(|inst| &inst.id == i));
            (!g.instances.is_empty()).then_some(g)
        })
        .collect();
    let colliders = b
        .colliders
        .iter()
        .filter(|c| parts.iter().any(|q| q.id == c.part))
        .cloned()
        .collect();
    Building {
        id: b.id.clone(),
        palette: b.palette.clone(),
        parts,
        instances,
        merge_groups,
        colliders,
        rooms: b.rooms.clone(),
        portals: b.portals.clone(),
    }
}

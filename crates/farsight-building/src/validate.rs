//! Recipe validation: every rule a mesher, a simplifier or a reader relies on, checked
//! once on load and on every read of a baked file. Each error names where (the part,
//! element and shape, or the instance, group, room, portal) and the rule it broke.

use std::collections::BTreeSet;
use std::fmt;

use crate::recipe::{Building, Geometry, Instance, Part, Pose, Shape};

/// The most segments a cylinder or revolve may have (a bound on what a recipe can
/// make the kernel do).
pub const MAX_SEGMENTS: u32 = 1024;
/// The most points of a revolve profile or an extrusion polygon.
pub const MAX_POINTS: usize = 4096;

/// Why a recipe was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RecipeError {
    /// The RON text did not parse as a recipe.
    #[error("recipe is not valid RON: {message}")]
    Syntax {
        /// The RON parser's message, with its position.
        message: String,
    },
    /// A rule was broken at `at` (for example "part `bay`, element `wall`, cutter 2").
    #[error("{at}: {rule}")]
    Invalid {
        /// Where in the recipe, in words.
        at: String,
        /// The rule broken, with what was found.
        rule: Rule,
    },
}

/// The rule a recipe broke, with what was found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Rule {
    /// A number that must be finite is not.
    NonFinite {
        /// Which number.
        what: &'static str,
    },
    /// A length that must be positive is not.
    NotPositive {
        /// Which length.
        what: &'static str,
        /// Its value.
        found: f32,
    },
    /// A segment count outside `3..=MAX_SEGMENTS`.
    Segments {
        /// The count given.
        found: u32,
    },
    /// A chamfer that is negative or eats half a side.
    Chamfer {
        /// The chamfer given, metres.
        found: f32,
        /// Half the shorter horizontal side: the chamfer must stay under it.
        limit: f32,
    },
    /// A profile or polygon with too few or too many points.
    Points {
        /// The number of points given.
        found: usize,
    },
    /// A revolve profile point left of the axis.
    NegativeRadius {
        /// The point's radius.
        found: f32,
    },
    /// A polygon or profile that encloses no area.
    NoArea,
    /// An id that is empty.
    EmptyId,
    /// An id used twice where ids must be unique.
    DuplicateId {
        /// The repeated id.
        id: String,
    },
    /// A reference to a part that does not exist.
    UnknownPart {
        /// The id named.
        id: String,
    },
    /// A reference to an instance that does not exist.
    UnknownInstance {
        /// The id named.
        id: String,
    },
    /// A reference to a room that does not exist.
    UnknownRoom {
        /// The id named.
        id: String,
    },
    /// An instance placed in two merge groups.
    InTwoGroups {
        /// The group that already holds it.
        group: String,
    },
    /// A merge group with no instance.
    EmptyGroup,
    /// An instance attached to itself.
    SelfAttachment,
    /// An override of a slot the instance's part does not use.
    UnusedOverride {
        /// The slot's name.
        slot: String,
    },
    /// An empty binding (slot) name.
    EmptyBinding,
    /// A part with no elements.
    NoElements,
    /// A room whose min is not below its max on every axis.
    InvertedRoom,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::NonFinite { what } => write!(f, "{what} is not a finite number"),
            Rule::NotPositive { what, found } => {
                write!(f, "{what} must be positive, found {found}")
            }
            Rule::Segments { found } => {
                write!(f, "segments must be 3 to {MAX_SEGMENTS}, found {found}")
            }
            Rule::Chamfer { found, limit } => {
                write!(
                    f,
                    "chamfer must be 0 or more and under {limit}, found {found}"
                )
            }
            Rule::Points { found } => write!(f, "needs 3 to {MAX_POINTS} points, found {found}"),
            Rule::NegativeRadius { found } => {
                write!(f, "profile radius must be 0 or more, found {found}")
            }
            Rule::NoArea => write!(f, "encloses no area"),
            Rule::EmptyId => write!(f, "id is empty"),
            Rule::DuplicateId { id } => write!(f, "id `{id}` is used twice"),
            Rule::UnknownPart { id } => write!(f, "names part `{id}`, which does not exist"),
            Rule::UnknownInstance { id } => {
                write!(f, "names instance `{id}`, which does not exist")
            }
            Rule::UnknownRoom { id } => write!(f, "names room `{id}`, which does not exist"),
            Rule::InTwoGroups { group } => {
                write!(f, "instance is already in merge group `{group}`")
            }
            Rule::EmptyGroup => write!(f, "merge group has no instances"),
            Rule::SelfAttachment => write!(f, "instance is attached to itself"),
            Rule::UnusedOverride { slot } => {
                write!(f, "overrides slot `{slot}`, which its part does not use")
            }
            Rule::EmptyBinding => write!(f, "binding is empty"),
            Rule::NoElements => write!(f, "part has no elements"),
            Rule::InvertedRoom => write!(f, "min must be below max on every axis"),
        }
    }
}

fn invalid(at: impl Into<String>, rule: Rule) -> RecipeError {
    RecipeError::Invalid {
        at: at.into(),
        rule,
    }
}

fn finite(at: &str, what: &'static str, v: &[f32]) -> Result<(), RecipeError> {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(invalid(at, Rule::NonFinite { what }))
    }
}

fn positive(at: &str, what: &'static str, v: f32) -> Result<(), RecipeError> {
    finite(at, what, &[v])?;
    if v > 0.0 {
        Ok(())
    } else {
        Err(invalid(at, Rule::NotPositive { what, found: v }))
    }
}

fn pose(at: &str, p: &Pose) -> Result<(), RecipeError> {
    finite(at, "pose translation", &p.translation)?;
    finite(at, "pose yaw", &[p.yaw])?;
    finite(at, "pose pitch", &[p.pitch])?;
    finite(at, "pose roll", &[p.roll])
}

fn signed_area(points: &[[f32; 2]]) -> f64 {
    let n = points.len();
    (0..n)
        .map(|i| {
            let (a, b) = (points[i], points[(i + 1) % n]);
            a[0] as f64 * b[1] as f64 - b[0] as f64 * a[1] as f64
        })
        .sum::<f64>()
        / 2.0
}

fn points(at: &str, pts: &[[f32; 2]]) -> Result<(), RecipeError> {
    if pts.len() < 3 || pts.len() > MAX_POINTS {
        return Err(invalid(at, Rule::Points { found: pts.len() }));
    }
    for p in pts {
        finite(at, "point", p)?;
    }
    if signed_area(pts).abs() < 1e-9 {
        return Err(invalid(at, Rule::NoArea));
    }
    Ok(())
}

fn segments(at: &str, n: u32) -> Result<(), RecipeError> {
    if (3..=MAX_SEGMENTS).contains(&n) {
        Ok(())
    } else {
        Err(invalid(at, Rule::Segments { found: n }))
    }
}

/// Checks one geometry; `at` names it in errors.
pub fn validate_geometry(at: &str, g: &Geometry) -> Result<(), RecipeError> {
    match g {
        Geometry::Box { size } => {
            for s in size {
                positive(at, "box size", *s)?;
            }
        }
        Geometry::ChamferedBox { size, chamfer } => {
            for s in size {
                positive(at, "box size", *s)?;
            }
            finite(at, "chamfer", &[*chamfer])?;
            let limit = size[0].min(size[2]) / 2.0;
            if *chamfer < 0.0 || *chamfer >= limit {
                return Err(invalid(
                    at,
                    Rule::Chamfer {
                        found: *chamfer,
                        limit,
                    },
                ));
            }
        }
        Geometry::Cylinder {
            radius,
            height,
            segments: n,
        } => {
            positive(at, "radius", *radius)?;
            positive(at, "height", *height)?;
            segments(at, *n)?;
        }
        Geometry::Revolve {
            profile,
            segments: n,
        } => {
            points(at, profile)?;
            if let Some(p) = profile.iter().find(|p| p[0] < 0.0) {
                return Err(invalid(at, Rule::NegativeRadius { found: p[0] }));
            }
            segments(at, *n)?;
        }
        Geometry::Extrusion { polygon, height } => {
            points(at, polygon)?;
            positive(at, "height", *height)?;
        }
    }
    Ok(())
}

fn shape(at: &str, s: &Shape) -> Result<(), RecipeError> {
    validate_geometry(at, &s.geometry)?;
    pose(at, &s.at)
}

fn unique<'a>(
    kind: &str,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeSet<&'a str>, RecipeError> {
    let mut seen = BTreeSet::new();
    for id in ids {
        if id.is_empty() {
            return Err(invalid(format!("a {kind}"), Rule::EmptyId));
        }
        if !seen.insert(id) {
            return Err(invalid(
                format!("{kind} `{id}`"),
                Rule::DuplicateId { id: id.to_string() },
            ));
        }
    }
    Ok(seen)
}

/// Checks every rule of a recipe. The first broken rule is returned.
pub fn validate(b: &Building) -> Result<(), RecipeError> {
    if b.id.is_empty() {
        return Err(invalid("the building", Rule::EmptyId));
    }
    let parts = unique("part", b.parts.iter().map(|p| p.id.as_str()))?;
    for part in &b.parts {
        validate_part(part)?;
    }
    let instances = unique("instance", b.instances.iter().map(|i| i.id.as_str()))?;
    for inst in &b.instances {
        validate_instance(b, &parts, &instances, inst)?;
    }
    validate_groups(b, &instances)?;
    for (n, c) in b.colliders.iter().enumerate() {
        let at = format!("collider {n} of part `{}`", c.part);
        if !parts.contains(c.part.as_str()) {
            return Err(invalid(at, Rule::UnknownPart { id: c.part.clone() }));
        }
        finite(&at, "collider center", &c.center)?;
        for s in c.size {
            positive(&at, "collider size", s)?;
        }
    }
    validate_rooms_and_portals(b)
}

/// A part: at least one element, unique element ids, every element bound and every
/// shape (its own, its union members', its cutters') valid.
fn validate_part(part: &Part) -> Result<(), RecipeError> {
    let at = format!("part `{}`", part.id);
    if part.elements.is_empty() {
        return Err(invalid(at, Rule::NoElements));
    }
    unique(
        &format!("{at}, element"),
        part.elements.iter().map(|e| e.id.as_str()),
    )?;
    for e in &part.elements {
        let at = format!("part `{}`, element `{}`", part.id, e.id);
        if e.binding.is_empty() {
            return Err(invalid(at, Rule::EmptyBinding));
        }
        shape(&at, &e.shape)?;
        for (i, s) in e.union.iter().enumerate() {
            shape(&format!("{at}, union member {i}"), s)?;
        }
        for (i, s) in e.cutters.iter().enumerate() {
            shape(&format!("{at}, cutter {i}"), s)?;
        }
    }
    Ok(())
}

/// An instance: a valid pose, a known part, an attachment to another known instance,
/// and overrides only of slots its part binds.
fn validate_instance(
    b: &Building,
    parts: &BTreeSet<&str>,
    instances: &BTreeSet<&str>,
    inst: &Instance,
) -> Result<(), RecipeError> {
    let at = format!("instance `{}`", inst.id);
    pose(&at, &inst.pose)?;
    let Some(part) = b
        .part(&inst.part)
        .filter(|_| parts.contains(inst.part.as_str()))
    else {
        return Err(invalid(
            at,
            Rule::UnknownPart {
                id: inst.part.clone(),
            },
        ));
    };
    if let Some(a) = &inst.attachment {
        if a.to == inst.id {
            return Err(invalid(at, Rule::SelfAttachment));
        }
        if !instances.contains(a.to.as_str()) {
            return Err(invalid(at, Rule::UnknownInstance { id: a.to.clone() }));
        }
    }
    for slot in inst.overrides.keys() {
        if !part.elements.iter().any(|e| &e.binding == slot) {
            return Err(invalid(at, Rule::UnusedOverride { slot: slot.clone() }));
        }
    }
    Ok(())
}

/// The merge groups: unique ids, none empty, every member a known instance in one
/// group only.
fn validate_groups(b: &Building, instances: &BTreeSet<&str>) -> Result<(), RecipeError> {
    unique("merge group", b.merge_groups.iter().map(|g| g.id.as_str()))?;
    let mut grouped: Vec<(&str, &str)> = Vec::new();
    for g in &b.merge_groups {
        let at = format!("merge group `{}`", g.id);
        if g.instances.is_empty() {
            return Err(invalid(at, Rule::EmptyGroup));
        }
        for i in &g.instances {
            if !instances.contains(i.as_str()) {
                return Err(invalid(at, Rule::UnknownInstance { id: i.clone() }));
            }
            if let Some((_, other)) = grouped.iter().find(|(inst, _)| inst == i) {
                return Err(invalid(
                    format!("{at}, instance `{i}`"),
                    Rule::InTwoGroups {
                        group: other.to_string(),
                    },
                ));
            }
            grouped.push((i, &g.id));
        }
    }
    Ok(())
}

/// Rooms (unique ids, finite bounds, min under max on every axis) and portals
/// (unique ids, finite corners, between known rooms).
fn validate_rooms_and_portals(b: &Building) -> Result<(), RecipeError> {
    let rooms = unique("room", b.rooms.iter().map(|r| r.id.as_str()))?;
    for r in &b.rooms {
        let at = format!("room `{}`", r.id);
        finite(&at, "room bounds", &r.min)?;
        finite(&at, "room bounds", &r.max)?;
        if (0..3).any(|k| r.min[k] >= r.max[k]) {
            return Err(invalid(at, Rule::InvertedRoom));
        }
    }
    unique("portal", b.portals.iter().map(|p| p.id.as_str()))?;
    for p in &b.portals {
        let at = format!("portal `{}`", p.id);
        for q in &p.quad {
            finite(&at, "portal corner", q)?;
        }
        for r in std::iter::once(&p.from).chain(p.to.iter()) {
            if !rooms.contains(r.as_str()) {
                return Err(invalid(at, Rule::UnknownRoom { id: r.clone() }));
            }
        }
    }
    Ok(())
}

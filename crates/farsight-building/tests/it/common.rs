//! Test support: a small building exercising every recipe feature, a counting kernel
//! and a closed-solid check.
#![allow(dead_code)]

use std::collections::BTreeMap;
#[cfg(feature = "bake")]
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "bake")]
use farsight_building::bake::{Kernel, KernelError, KernelMesh, ManifoldKernel};
use farsight_building::*;
#[cfg(feature = "bake")]
use glam::DAffine3;

pub fn shape(geometry: Geometry, t: [f32; 3]) -> Shape {
    Shape {
        geometry,
        at: Pose::yawed(t, 0.0),
    }
}

pub fn boxed(size: [f32; 3], t: [f32; 3]) -> Shape {
    shape(Geometry::Box { size }, t)
}

pub fn element(id: &str, s: Shape, binding: &str) -> Element {
    Element {
        id: id.into(),
        shape: s,
        union: vec![],
        cutters: vec![],
        side: Side::Exterior,
        binding: binding.into(),
        far: false,
    }
}

/// A 6 m wall bay with `windows` openings, a 20 cm sill, a 5 cm mullion fin.
pub fn wall_part(id: &str, windows: usize) -> Part {
    let mut wall = element("wall", boxed([6.0, 3.0, 0.3], [0.0, 1.5, 0.0]), "facade");
    let w = 6.0 / windows.max(1) as f32;
    for i in 0..windows {
        let x = -3.0 + w * (i as f32 + 0.5);
        // Exactly as deep as the wall: the coplanar case.
        wall.cutters.push(boxed([w * 0.6, 1.6, 0.3], [x, 1.6, 0.0]));
    }
    wall.union.push(boxed([6.0, 0.1, 0.2], [0.0, 0.55, 0.25]));
    let fin = element("fin", boxed([0.05, 3.0, 0.4], [2.9, 1.5, 0.35]), "metal");
    Part {
        id: id.into(),
        storey: Some(0),
        elements: vec![wall, fin],
    }
}

pub fn sample() -> Building {
    let column = Part {
        id: "column".into(),
        storey: None,
        elements: vec![element(
            "shaft",
            shape(
                Geometry::Cylinder {
                    radius: 0.4,
                    height: 6.0,
                    segments: 32,
                },
                [0.0, 3.0, 0.0],
            ),
            "stone",
        )],
    };
    let mut lamp = element(
        "lamp",
        shape(
            Geometry::Revolve {
                profile: vec![[0.0, 0.0], [0.1, 0.0], [0.12, 0.2], [0.0, 0.25]],
                segments: 16,
            },
            [0.0, 2.5, 0.0],
        ),
        "glow",
    );
    lamp.far = true;
    let mut partition = element(
        "partition",
        boxed([3.0, 2.8, 0.1], [0.0, 1.4, -2.0]),
        "plaster",
    );
    partition.side = Side::Interior;
    let interior = Part {
        id: "interior".into(),
        storey: Some(0),
        elements: vec![partition, lamp],
    };
    let slab = Part {
        id: "slab".into(),
        storey: Some(0),
        elements: vec![element(
            "slab",
            shape(
                Geometry::ChamferedBox {
                    size: [6.0, 0.3, 6.0],
                    chamfer: 0.5,
                },
                [0.0, 0.0, 0.0],
            ),
            "concrete",
        )],
    };
    let crown = Part {
        id: "crown".into(),
        storey: None,
        elements: vec![element(
            "crown",
            shape(
                Geometry::Extrusion {
                    polygon: vec![[-3.0, -3.0], [3.0, -3.0], [0.0, 3.0]],
                    height: 1.0,
                },
                [0.0, 0.0, 0.0],
            ),
            "metal",
        )],
    };
    let inst = |id: &str, part: &str, t: [f32; 3], yaw: f32| Instance {
        id: id.into(),
        part: part.into(),
        pose: Pose::yawed(t, yaw),
        attachment: None,
        overrides: BTreeMap::new(),
    };
    let mut instances = vec![
        inst("w0", "wall", [0.0, 0.0, 3.0], 0.0),
        inst("w1", "wall", [3.0, 0.0, 0.0], 90.0),
        inst("w2", "wall", [0.0, 0.0, -3.0], 180.0),
        inst("c0", "column", [-3.0, 0.0, 3.0], 0.0),
        inst("i0", "interior", [0.0, 0.0, 0.0], 0.0),
        inst("s0", "slab", [0.0, 0.0, 0.0], 0.0),
        inst("s1", "slab", [0.0, 3.0, 0.0], 0.0),
        inst("r0", "crown", [0.0, 6.5, 0.0], 0.0),
    ];
    instances[1]
        .overrides
        .insert("facade".into(), "brick".into());
    instances[7].attachment = Some(Attachment {
        to: "s1".into(),
        socket: "top".into(),
    });
    Building {
        id: "sample".into(),
        palette: [("facade".to_string(), "glass".to_string())]
            .into_iter()
            .collect(),
        parts: vec![wall_part("wall", 3), column, interior, slab, crown],
        instances,
        merge_groups: vec![MergeGroup {
            id: "floors".into(),
            instances: vec!["s0".into(), "s1".into()],
        }],
        colliders: vec![ColliderProxy {
            part: "wall".into(),
            center: [0.0, 1.5, 0.0],
            size: [6.0, 3.0, 0.3],
        }],
        rooms: vec![Room {
            id: "hall".into(),
            min: [-3.0, 0.0, -3.0],
            max: [3.0, 3.0, 3.0],
        }],
        portals: vec![Portal {
            id: "door".into(),
            from: "hall".into(),
            to: None,
            quad: [
                [-0.5, 0.0, 3.0],
                [0.5, 0.0, 3.0],
                [0.5, 2.0, 3.0],
                [-0.5, 2.0, 3.0],
            ],
        }],
    }
}

/// A kernel that counts its calls.
#[cfg(feature = "bake")]
#[derive(Default)]
pub struct Counting {
    pub inner: ManifoldKernel,
    pub solids: AtomicUsize,
    pub meshes: AtomicUsize,
    pub ops: AtomicUsize,
}

#[cfg(feature = "bake")]
impl Counting {
    pub fn calls(&self) -> usize {
        self.solids.load(Ordering::SeqCst)
            + self.meshes.load(Ordering::SeqCst)
            + self.ops.load(Ordering::SeqCst)
    }
}

#[cfg(feature = "bake")]
impl Kernel for Counting {
    type Solid = <ManifoldKernel as Kernel>::Solid;
    fn solid(&self, g: &Geometry, t: &DAffine3, operand: u32) -> Result<Self::Solid, KernelError> {
        self.solids.fetch_add(1, Ordering::SeqCst);
        self.inner.solid(g, t, operand)
    }
    fn union(&self, s: &[Self::Solid]) -> Result<Self::Solid, KernelError> {
        self.ops.fetch_add(1, Ordering::SeqCst);
        self.inner.union(s)
    }
    fn subtract(&self, a: &Self::Solid, b: &Self::Solid) -> Result<Self::Solid, KernelError> {
        self.ops.fetch_add(1, Ordering::SeqCst);
        self.inner.subtract(a, b)
    }
    fn mesh(&self, s: &Self::Solid) -> Result<KernelMesh, KernelError> {
        self.meshes.fetch_add(1, Ordering::SeqCst);
        self.inner.mesh(s)
    }
}

/// Checks that triangles (by position) form a closed, consistently wound surface
/// enclosing positive volume: every directed edge is matched by the reverse edge,
/// allowing an edge to be matched by collinear pieces (where a degenerate sliver was
/// dropped, leaving a T-junction). Returns a description of the first failure.
pub fn closed_solid(positions: &[[f32; 3]], indices: &[u32]) -> Result<f64, String> {
    use std::collections::BTreeMap;
    let key = |p: [f32; 3]| p.map(f32::to_bits);
    let mut edges: BTreeMap<([u32; 3], [u32; 3]), i32> = BTreeMap::new();
    let mut volume = 0.0f64;
    for t in indices.chunks_exact(3) {
        let p = [0, 1, 2].map(|k| positions[t[k] as usize]);
        let d = p.map(|q| glam::DVec3::new(q[0] as f64, q[1] as f64, q[2] as f64));
        volume += d[0].dot(d[1].cross(d[2])) / 6.0;
        for k in 0..3 {
            let (a, b) = (key(p[k]), key(p[(k + 1) % 3]));
            if a == b {
                continue;
            }
            // +1 for a->b, -1 for its reverse; stored under the ordered pair.
            if a < b {
                *edges.entry((a, b)).or_default() += 1;
            } else {
                *edges.entry((b, a)).or_default() -= 1;
            }
        }
    }
    let open: Vec<(glam::DVec3, glam::DVec3, i32)> = edges
        .iter()
        .filter(|(_, &n)| n != 0)
        .map(|((a, b), &n)| {
            let f = |k: [u32; 3]| {
                glam::DVec3::new(
                    f32::from_bits(k[0]) as f64,
                    f32::from_bits(k[1]) as f64,
                    f32::from_bits(k[2]) as f64,
                )
            };
            (f(*a), f(*b), n)
        })
        .collect();
    // Open edges must cancel along their line (a T-junction where a degenerate sliver
    // was dropped): the signed coverage of the collinear open edges is zero everywhere.
    for (a, b, _) in &open {
        let dir = (*b - *a).normalize();
        let on_line = |p: glam::DVec3| {
            let t = (p - *a).dot(dir);
            (p - *a - dir * t).length() < 1e-4
        };
        let mut events: Vec<(f64, i32)> = Vec::new();
        for (c, d, m) in &open {
            if !on_line(*c) || !on_line(*d) {
                continue;
            }
            let (tc, td) = ((*c - *a).dot(dir), (*d - *a).dot(dir));
            let w = if td > tc { *m } else { -*m };
            events.push((tc.min(td), w));
            events.push((tc.max(td), -w));
        }
        events.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut cover = 0;
        let mut i = 0;
        while i < events.len() {
            let t = events[i].0;
            while i < events.len() && events[i].0 - t < 1e-5 {
                cover += events[i].1;
                i += 1;
            }
            if cover != 0 && i < events.len() {
                return Err(format!(
                    "open edge {a} -> {b}: coverage {cover} after t = {t}"
                ));
            }
        }
    }
    if volume <= 0.0 {
        return Err(format!("volume {volume} is not positive (inside out?)"));
    }
    Ok(volume)
}

/// A row of `n` wall bays along +X (6 m apart, at z = 0) with a column between each
/// pair: the seed's band sweep.
pub fn row(n: usize) -> Building {
    let mut b = sample();
    b.id = "row".into();
    b.instances.clear();
    b.merge_groups.clear();
    b.rooms.clear();
    b.portals.clear();
    for i in 0..n {
        b.instances.push(Instance {
            id: format!("w{i}"),
            part: "wall".into(),
            pose: Pose::yawed([i as f32 * 6.0, 0.0, 0.0], 0.0),
            attachment: None,
            overrides: BTreeMap::new(),
        });
        b.instances.push(Instance {
            id: format!("c{i}"),
            part: "column".into(),
            pose: Pose::yawed([i as f32 * 6.0 + 3.0, 0.0, 0.5], 0.0),
            attachment: None,
            overrides: BTreeMap::new(),
        });
    }
    // Two walls joined in a merge group: a group hands over too.
    b.merge_groups.push(MergeGroup {
        id: "pair".into(),
        instances: vec!["w2".into(), "w3".into()],
    });
    b
}

/// The tangent generator the tests pass (what a game passes is mikktspace).
pub fn test_tangents(m: &farsight_format::MeshData) -> Vec<[f32; 4]> {
    farsight_building::uv_gradient_tangents(m)
}

/// Four ladders: placed levels, far cells of 35 m, 20 m cells to 80 m cells, and the
/// whole building as one cell followed by a placed level.
pub fn ladders() -> Vec<(&'static str, Vec<LodPolicy>)> {
    let placed = LodPolicy::ladder();
    let mut far_cells = LodPolicy::ladder();
    far_cells[2].cell = Some(LodCell::Side(35.0));
    let mut cells_to_cells = LodPolicy::ladder();
    cells_to_cells[1].cell = Some(LodCell::Side(20.0));
    cells_to_cells[2].cell = Some(LodCell::Side(80.0));
    let mut cells_then_placed = LodPolicy::ladder();
    cells_then_placed[1].cell = Some(LodCell::Whole);
    vec![
        ("placed", placed),
        ("far cells of 35 m", far_cells),
        ("20 m cells to 80 m cells", cells_to_cells),
        ("whole building, then placed", cells_then_placed),
    ]
}

//! The CSG kernel behind a trait, and its implementation on manifold-rust.
//!
//! Provenance goes through the kernel: every solid is made with an operand number, the
//! Manifold implementation gives each one its own original id (`as_original`) and maps
//! the ids of an exported mesh's runs back to operands. Kernel ids are global counters
//! and never leave this module, so output is the same whatever else ran before.

use glam::{DAffine3, DVec3};
use manifold_rust::linalg::{Mat3x4, Vec2 as MVec2, Vec3 as MVec3};
use manifold_rust::manifold::Manifold;
use manifold_rust::types::OpType;

use crate::recipe::Geometry;

/// A kernel failure (the kernel refused to build or combine a solid).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// An operation failed.
    #[error("the kernel could not {what}: {status}")]
    Failed {
        /// The operation, in words.
        what: &'static str,
        /// The kernel's status.
        status: String,
    },
    /// An exported run carries an id no operand was given.
    #[error("the kernel returned a run of unknown origin (id {id})")]
    UnknownRun {
        /// The run's original id.
        id: u32,
    },
}

/// Triangles as the kernel exports them, in the space the solids were made in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelMesh {
    /// Vertex positions.
    pub positions: Vec<[f64; 3]>,
    /// Triangles, three indices into `positions`, counter-clockwise from outside.
    pub triangles: Vec<[u32; 3]>,
    /// Per triangle: the operand number of the solid it lies on.
    pub operands: Vec<u32>,
    /// Per triangle: the face (coplanar group) of that solid it lies on.
    pub faces: Vec<u32>,
}

/// A CSG kernel. Solids are values; every operation makes a new one.
pub trait Kernel: Sync {
    /// The kernel's solid value; the bake clones solids and shares them between threads.
    type Solid: Clone + Send + Sync;
    /// A primitive, moved by `transform`, whose faces report `operand`.
    fn solid(
        &self,
        geometry: &Geometry,
        transform: &DAffine3,
        operand: u32,
    ) -> Result<Self::Solid, KernelError>;
    /// The union of `solids` in one operation (an empty solid for none).
    fn union(&self, solids: &[Self::Solid]) -> Result<Self::Solid, KernelError>;
    /// `solid` minus `cutter`.
    fn subtract(
        &self,
        solid: &Self::Solid,
        cutter: &Self::Solid,
    ) -> Result<Self::Solid, KernelError>;
    /// The solid's triangles with their provenance.
    fn mesh(&self, solid: &Self::Solid) -> Result<KernelMesh, KernelError>;
}

/// manifold-rust 0.19.2 (a pure-Rust port of Manifold).
#[derive(Clone, Copy, Debug, Default)]
pub struct ManifoldKernel;

/// A Manifold solid with the operand each of its original ids stands for.
#[derive(Clone)]
pub struct ManifoldSolid {
    manifold: Manifold,
    ids: Vec<(u32, u32)>,
}

impl std::fmt::Debug for ManifoldSolid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManifoldSolid")
            .field("triangles", &self.manifold.num_tri())
            .field("operands", &self.ids.len())
            .finish()
    }
}

fn mvec(v: DVec3) -> MVec3 {
    MVec3::new(v.x, v.y, v.z)
}

fn check(m: Manifold, what: &'static str) -> Result<Manifold, KernelError> {
    let status = m.status();
    if status == manifold_rust::types::Error::NoError {
        Ok(m)
    } else {
        Err(KernelError::Failed {
            what,
            status: format!("{status:?}"),
        })
    }
}

/// A plan polygon `[x, z]` as a Manifold cross-section in its XY plane, wound
/// counter-clockwise: after the Z-up to Y-up turn (x, y, z) -> (x, z, -y), plan z is
/// -y there.
fn plan_polygon(points: &[[f32; 2]]) -> Vec<Vec<MVec2>> {
    ccw(points
        .iter()
        .map(|p| MVec2::new(p[0] as f64, -(p[1] as f64)))
        .collect())
}

/// One counter-clockwise polygon (reversed if it was clockwise), as Manifold wants.
fn ccw(mut poly: Vec<MVec2>) -> Vec<Vec<MVec2>> {
    let area: f64 = (0..poly.len())
        .map(|i| {
            let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
            a.x * b.y - b.x * a.y
        })
        .sum();
    if area < 0.0 {
        poly.reverse();
    }
    vec![poly]
}

/// Manifold's Z-up solids turned so their axis is +Y: (x, y, z) -> (x, z, -y).
fn z_to_y() -> DAffine3 {
    DAffine3::from_rotation_x(-std::f64::consts::FRAC_PI_2)
}

fn primitive(g: &Geometry) -> Result<(Manifold, DAffine3), KernelError> {
    let m = match g {
        Geometry::Box { size } => {
            let s = MVec3::new(size[0] as f64, size[1] as f64, size[2] as f64);
            return Ok((Manifold::cube(s, true), DAffine3::IDENTITY));
        }
        Geometry::ChamferedBox { size, chamfer } => {
            let (hx, hz, c) = (size[0] / 2.0, size[2] / 2.0, *chamfer);
            let pts: Vec<[f32; 2]> = if c > 0.0 {
                vec![
                    [-hx + c, -hz],
                    [hx - c, -hz],
                    [hx, -hz + c],
                    [hx, hz - c],
                    [hx - c, hz],
                    [-hx + c, hz],
                    [-hx, hz - c],
                    [-hx, -hz + c],
                ]
            } else {
                vec![[-hx, -hz], [hx, -hz], [hx, hz], [-hx, hz]]
            };
            let h = size[1] as f64;
            let m = Manifold::extrude(&plan_polygon(&pts), h, 0, 0.0, MVec2::new(1.0, 1.0));
            return Ok((
                m,
                DAffine3::from_translation(DVec3::new(0.0, -h / 2.0, 0.0)) * z_to_y(),
            ));
        }
        Geometry::Cylinder {
            radius,
            height,
            segments,
        } => Manifold::cylinder_centered(
            *height as f64,
            *radius as f64,
            *radius as f64,
            *segments as i32,
            true,
        ),
        Geometry::Revolve { profile, segments } => {
            // Manifold revolves its XY cross-section about Y and returns it with that
            // axis as Z; the z_to_y turn below puts it back on +Y.
            let poly = ccw(profile
                .iter()
                .map(|p| MVec2::new(p[0] as f64, p[1] as f64))
                .collect());
            Manifold::revolve(&poly, *segments as i32, 360.0)
        }
        Geometry::Extrusion { polygon, height } => {
            let h = *height as f64;
            let m = Manifold::extrude(&plan_polygon(polygon), h, 0, 0.0, MVec2::new(1.0, 1.0));
            return Ok((
                m,
                DAffine3::from_translation(DVec3::new(0.0, -h / 2.0, 0.0)) * z_to_y(),
            ));
        }
    };
    Ok((m, z_to_y()))
}

fn mat3x4(t: &DAffine3) -> Mat3x4 {
    let m = t.matrix3;
    Mat3x4::from_cols(
        mvec(m.x_axis),
        mvec(m.y_axis),
        mvec(m.z_axis),
        mvec(t.translation),
    )
}

impl Kernel for ManifoldKernel {
    type Solid = ManifoldSolid;

    fn solid(
        &self,
        geometry: &Geometry,
        transform: &DAffine3,
        operand: u32,
    ) -> Result<ManifoldSolid, KernelError> {
        let (m, local) = primitive(geometry)?;
        let m = check(m, "build a primitive")?;
        let placed = check(
            m.transform(&mat3x4(&(*transform * local))),
            "move a primitive",
        )?;
        let m = check(placed.as_original(), "mark a primitive")?;
        let id = u32::try_from(m.original_id()).map_err(|_| KernelError::Failed {
            what: "mark a primitive",
            status: format!("original id {}", m.original_id()),
        })?;
        Ok(ManifoldSolid {
            manifold: m,
            ids: vec![(id, operand)],
        })
    }

    fn union(&self, solids: &[ManifoldSolid]) -> Result<ManifoldSolid, KernelError> {
        if solids.len() == 1 {
            return Ok(solids[0].clone());
        }
        let ms: Vec<Manifold> = solids.iter().map(|s| s.manifold.clone()).collect();
        let m = check(Manifold::batch_boolean(&ms, OpType::Add), "unite solids")?;
        Ok(ManifoldSolid {
            manifold: m,
            ids: solids.iter().flat_map(|s| s.ids.iter().copied()).collect(),
        })
    }

    fn subtract(
        &self,
        solid: &ManifoldSolid,
        cutter: &ManifoldSolid,
    ) -> Result<ManifoldSolid, KernelError> {
        let m = check(solid.manifold.difference(&cutter.manifold), "subtract")?;
        let mut ids = solid.ids.clone();
        ids.extend_from_slice(&cutter.ids);
        Ok(ManifoldSolid { manifold: m, ids })
    }

    fn mesh(&self, solid: &ManifoldSolid) -> Result<KernelMesh, KernelError> {
        let gl = solid.manifold.get_mesh_glp::<f64, u32>(-1);
        let np = gl.num_prop as usize;
        let positions = gl
            .vert_properties
            .chunks_exact(np)
            .map(|v| [v[0], v[1], v[2]])
            .collect();
        let triangles: Vec<[u32; 3]> = gl
            .tri_verts
            .chunks_exact(3)
            .map(|t| [t[0], t[1], t[2]])
            .collect();
        let mut operands = vec![0u32; triangles.len()];
        for (run, &id) in gl.run_original_id.iter().enumerate() {
            let operand = solid
                .ids
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, o)| *o)
                .ok_or(KernelError::UnknownRun { id })?;
            let start = gl.run_index[run] as usize / 3;
            let end = gl
                .run_index
                .get(run + 1)
                .map_or(triangles.len(), |&e| e as usize / 3);
            operands[start.min(triangles.len())..end.min(triangles.len())].fill(operand);
        }
        let faces = if gl.face_id.len() == triangles.len() {
            gl.face_id.clone()
        } else {
            vec![0; triangles.len()]
        };
        Ok(KernelMesh {
            positions,
            triangles,
            operands,
            faces,
        })
    }
}

//! The in-memory source mesh every bake step works on.

use bytemuck::{Pod, Zeroable};
use farsight_geom::Aabb;
use glam::{Mat4, Vec3};

use crate::Warning;

/// One vertex of a source mesh: full precision, 48 bytes, positions first so the
/// array can be handed to meshoptimizer with a 48-byte stride.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Vertex {
    /// Position, mesh units.
    pub position: [f32; 3],
    /// Unit normal.
    pub normal: [f32; 3],
    /// First texture coordinate set.
    pub uv: [f32; 2],
    /// xyz direction, w handedness; zero when the source had none.
    pub tangent: [f32; 4],
}
const _: () = assert!(std::mem::size_of::<Vertex>() == 48);

/// A triangle list with one material.
#[derive(Clone, Debug, PartialEq)]
pub struct SubMesh {
    /// `<mesh>/<primitive or object>`: used in warnings and errors.
    pub name: String,
    /// Material name (or `material<N>` when the file names none; `default` when absent).
    pub material: String,
    /// The vertices `indices` name.
    pub vertices: Vec<Vertex>,
    /// Triangle list into `vertices`.
    pub indices: Vec<u32>,
    /// True when the source provided tangents.
    pub has_tangents: bool,
}

impl SubMesh {
    /// Triangles in the list.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// Bounds of the vertices the triangles use (empty box when there are none).
    /// Each used vertex is taken once (a vertex is about six corners), in vertex
    /// order: for finite positions (the importers refuse others) the box of the
    /// corners taken in any order, up to the sign of a zero bound.
    pub fn bounds(&self) -> Aabb {
        // Which vertices are used: a flag each, on the stack for a small
        // sub-mesh (no allocation).
        const STACK_VERTICES: usize = 1024;
        if self.vertices.len() <= STACK_VERTICES {
            let mut used = [false; STACK_VERTICES];
            for &i in &self.indices {
                used[i as usize] = true;
            }
            return self.used_bounds(used[..self.vertices.len()].iter().copied());
        }
        let mut used = vec![false; self.vertices.len()];
        for &i in &self.indices {
            used[i as usize] = true;
        }
        self.used_bounds(used.iter().copied())
    }

    /// The box of the vertices `used` (a flag per vertex) says are used, in
    /// vertex order.
    #[inline]
    fn used_bounds(&self, used: impl Iterator<Item = bool>) -> Aabb {
        // Four boxes grown side by side: one box grown vertex after vertex waits
        // on its own last min and max every step.
        let mut b = [Aabb::EMPTY; 4];
        for (v, (p, u)) in self.vertices.iter().zip(used).enumerate() {
            if u {
                b[v & 3] = b[v & 3].grow(Vec3::from(p.position));
            }
        }
        b[0].union(b[1]).union(b[2].union(b[3]))
    }
}

/// A mesh: sub-meshes in one coordinate space.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    /// The mesh's name (the file's stem, or the glTF mesh's name).
    pub name: String,
    /// Its sub-meshes, one per material.
    pub submeshes: Vec<SubMesh>,
}

impl Mesh {
    /// Triangles over every sub-mesh.
    pub fn triangle_count(&self) -> usize {
        self.submeshes.iter().map(SubMesh::triangle_count).sum()
    }

    /// Vertices over every sub-mesh.
    pub fn vertex_count(&self) -> usize {
        self.submeshes.iter().map(|s| s.vertices.len()).sum()
    }

    /// The box around every sub-mesh's vertices.
    pub fn bounds(&self) -> Aabb {
        self.submeshes
            .iter()
            .fold(Aabb::EMPTY, |b, s| b.union(s.bounds()))
    }

    /// All sub-meshes concatenated into one vertex and index list (for steps that
    /// treat the mesh as one surface, such as the cluster DAG).
    pub fn merged(&self) -> (Vec<Vertex>, Vec<u32>) {
        let mut vertices = Vec::with_capacity(self.vertex_count());
        let mut indices = Vec::with_capacity(self.triangle_count() * 3);
        for s in &self.submeshes {
            let base = vertices.len() as u32;
            vertices.extend_from_slice(&s.vertices);
            indices.extend(s.indices.iter().map(|&i| i + base));
        }
        (vertices, indices)
    }
}

/// A placed mesh when node transforms are kept as instances.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instance {
    /// Index into [`ImportedScene::meshes`].
    pub mesh: usize,
    /// Node-to-world transform.
    pub transform: Mat4,
}

/// How node transforms of a glTF scene are treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TransformMode {
    /// Bake every node's world transform into its vertices and merge all placed
    /// primitives into one mesh (the default: one asset per file).
    #[default]
    Apply,
    /// Keep each glTF mesh in its own space and return one [`Instance`] per node.
    KeepInstances,
}

/// Import options.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ImportConfig {
    /// What becomes of node transforms.
    pub transforms: TransformMode,
}

/// What an importer returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedScene {
    /// The meshes read: one under [`TransformMode::Apply`], one per glTF mesh otherwise.
    pub meshes: Vec<Mesh>,
    /// Empty under [`TransformMode::Apply`].
    pub instances: Vec<Instance>,
    /// What was repaired on the way in.
    pub warnings: Vec<Warning>,
}

impl ImportedScene {
    /// The first mesh (under [`TransformMode::Apply`], the only one).
    pub fn into_mesh(mut self) -> (Mesh, Vec<Warning>) {
        (self.meshes.swap_remove(0), self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::{SubMesh, Vertex};
    use farsight_geom::Aabb;
    use glam::Vec3;

    /// A sub-mesh's bounds are the box of its triangles' corners grown corner by
    /// corner: unused vertices (far out) left out, repeated corners, zeros of
    /// both signs (compared as values).
    #[test]
    fn bounds_are_the_box_of_the_corners() {
        let mut next = crate::test_numbers(0x5851_F42D_4C95_7F2D);
        for round in 0..300 {
            let n = 1 + next(60) as usize;
            let coordinate = |k: u64| match k {
                0 => -0.0,
                1 => 1e30,
                k => k as f32 * 0.75 - 20.0,
            };
            let vertices: Vec<Vertex> = (0..n)
                .map(|_| Vertex {
                    position: [0; 3].map(|_| coordinate(next(60))),
                    ..Vertex::default()
                })
                .collect();
            let indices: Vec<u32> = (0..3 * next(40)).map(|_| next(n as u64) as u32).collect();
            let mut want = Aabb::EMPTY;
            for &i in &indices {
                want = want.grow(Vec3::from(vertices[i as usize].position));
            }
            let mesh = SubMesh {
                name: String::new(),
                material: String::new(),
                vertices,
                indices,
                has_tangents: false,
            };
            let got = mesh.bounds();
            assert!(
                got.min == want.min && got.max == want.max,
                "round {round}: {got:?} against {want:?}"
            );
        }
    }
}

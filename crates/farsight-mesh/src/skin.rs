//! Skinned glTF meshes kept for posed bounds (docs/design/visibility-pass.md#posed-bounds):
//! bind-pose vertices, joints, weights, inverse bind matrices and the skin radius.

use std::path::Path;

use farsight_geom::Aabb;
use glam::{Mat4, Vec3};
use gltf::accessor::{DataType, Dimensions};

use crate::error::{ImportError, ImportErrorKind};
use crate::gltf_import::{load_gltf, LoadedGltf};

/// One skinned primitive in bind pose (mesh space).
#[derive(Clone, Debug, PartialEq)]
pub struct SkinnedMesh {
    /// `<mesh name>/<primitive>`.
    pub name: String,
    /// Index of the skin in the file.
    pub skin: usize,
    /// glTF node index of each joint of the skin, in joint order.
    pub joint_nodes: Vec<usize>,
    /// Bind-pose positions.
    pub positions: Vec<[f32; 3]>,
    /// Four joint indices per vertex, into `joint_nodes` / `inverse_bind_matrices`.
    pub joints: Vec<[u16; 4]>,
    /// Four weights per vertex (as stored; they should sum to one).
    pub weights: Vec<[f32; 4]>,
    /// Triangle list into the vertices.
    pub indices: Vec<u32>,
    /// Mesh space to each joint's space in bind pose.
    pub inverse_bind_matrices: Vec<Mat4>,
    /// The furthest any vertex sits (mesh units) from a joint that moves it (weight
    /// above zero): a posed vertex lies within this distance of one of its joints'
    /// posed positions, so joints' posed positions grown by it bound the pose.
    pub skin_radius: f32,
    /// The box around the bind-pose positions.
    pub bind_bounds: Aabb,
}

impl SkinnedMesh {
    /// Each joint's bind-pose position in mesh space.
    pub fn joint_bind_positions(&self) -> Vec<Vec3> {
        self.inverse_bind_matrices
            .iter()
            .map(|m| m.inverse().transform_point3(Vec3::ZERO))
            .collect()
    }
}

/// Loads every skinned primitive of a glTF file (nodes that have both a mesh and a
/// skin). A file without skins returns an empty list.
pub fn load_skinned_meshes(path: &Path) -> Result<Vec<SkinnedMesh>, ImportError> {
    let file = load_gltf(path)?;
    let mut out = Vec::new();
    for node in file.document.nodes() {
        let (Some(mesh), Some(skin)) = (node.mesh(), node.skin()) else {
            continue;
        };
        let bind = SkinBind::read(&file, &skin)?;
        for p in mesh.primitives() {
            out.push(bind.primitive(&file, &mesh, &p)?);
        }
    }
    Ok(out)
}

/// A skin's joints and bind pose, as every primitive it deforms shares them.
struct SkinBind {
    /// The skin's index in the file.
    skin: usize,
    joint_nodes: Vec<usize>,
    inverse_bind_matrices: Vec<Mat4>,
    /// Each joint's position in the bind pose.
    joint_pos: Vec<Vec3>,
}

/// A skinned primitive's positions, joints and weights, one of each per vertex.
type SkinAttributes = (Vec<[f32; 3]>, Vec<[u16; 4]>, Vec<[f32; 4]>);

/// A skin error of skin `skin` of `file`.
fn bad_skin(file: &LoadedGltf, skin: usize, message: String) -> ImportError {
    file.err(ImportErrorKind::BadSkin { skin, message })
}

impl SkinBind {
    /// Reads `skin`'s joints and inverse bind matrices (identity when it has none),
    /// refusing a count that differs from the joints' and a singular or
    /// non-finite matrix.
    fn read(file: &LoadedGltf, skin: &gltf::Skin<'_>) -> Result<Self, ImportError> {
        let si = skin.index();
        let joint_nodes: Vec<usize> = skin.joints().map(|j| j.index()).collect();
        let ibms: Vec<Mat4> = match skin.inverse_bind_matrices() {
            Some(acc) => {
                file.check_typed(
                    &acc,
                    "inverseBindMatrices",
                    &[DataType::F32],
                    Dimensions::Mat4,
                )?;
                let reader = skin.reader(|b| file.buffers.get(b.index()).map(Vec::as_slice));
                reader
                    .read_inverse_bind_matrices()
                    .map(|it| it.map(|m| Mat4::from_cols_array_2d(&m)).collect())
                    .unwrap_or_default()
            }
            None => vec![Mat4::IDENTITY; joint_nodes.len()],
        };
        if ibms.len() != joint_nodes.len() {
            let message = format!(
                "{} inverse bind matrices for {} joints",
                ibms.len(),
                joint_nodes.len()
            );
            return Err(bad_skin(file, si, message));
        }
        if ibms
            .iter()
            .any(|m| !m.is_finite() || m.determinant().abs() < 1e-20)
        {
            let message = "an inverse bind matrix is singular or not finite".into();
            return Err(bad_skin(file, si, message));
        }
        let joint_pos: Vec<Vec3> = ibms
            .iter()
            .map(|m| m.inverse().transform_point3(Vec3::ZERO))
            .collect();
        Ok(Self {
            skin: si,
            joint_nodes,
            inverse_bind_matrices: ibms,
            joint_pos,
        })
    }

    /// Primitive `p` of `mesh` as a skinned mesh of this skin: positions, joints,
    /// weights and indices checked, with its bind-pose bounds and skin radius.
    fn primitive(
        &self,
        file: &LoadedGltf,
        mesh: &gltf::Mesh<'_>,
        p: &gltf::Primitive<'_>,
    ) -> Result<SkinnedMesh, ImportError> {
        let name = format!("{}/{}", mesh.name().unwrap_or("mesh"), p.index());
        let (positions, joints, weights) = self.read_attributes(file, mesh, p, &name)?;
        let n = positions.len();
        let indices = file.read_indices(p, n)?;
        if let Some((position, &index)) = indices.iter().enumerate().find(|(_, &i)| i as usize >= n)
        {
            return Err(file.err(ImportErrorKind::IndexOutOfRange {
                submesh: name,
                position,
                index,
                vertex_count: n,
            }));
        }
        let (skin_radius, bounds) = self.bind_extent(file, &name, &positions, &joints, &weights)?;
        Ok(SkinnedMesh {
            name,
            skin: self.skin,
            joint_nodes: self.joint_nodes.clone(),
            positions,
            joints,
            weights,
            indices,
            inverse_bind_matrices: self.inverse_bind_matrices.clone(),
            skin_radius,
            bind_bounds: bounds,
        })
    }

    /// Primitive `p`'s positions, joints and weights (JOINTS_0 and WEIGHTS_0), typed
    /// as glTF allows and one of each per vertex.
    fn read_attributes(
        &self,
        file: &LoadedGltf,
        mesh: &gltf::Mesh<'_>,
        p: &gltf::Primitive<'_>,
        name: &str,
    ) -> Result<SkinAttributes, ImportError> {
        let pos = p.get(&gltf::Semantic::Positions).ok_or_else(|| {
            file.err(ImportErrorKind::MissingPositions {
                mesh: mesh.index(),
                primitive: p.index(),
            })
        })?;
        file.check_typed(&pos, "POSITION", &[DataType::F32], Dimensions::Vec3)?;
        let (Some(ja), Some(wa)) = (
            p.get(&gltf::Semantic::Joints(0)),
            p.get(&gltf::Semantic::Weights(0)),
        ) else {
            let message = format!("{name} has no JOINTS_0/WEIGHTS_0");
            return Err(bad_skin(file, self.skin, message));
        };
        file.check_typed(
            &ja,
            "JOINTS_0",
            &[DataType::U8, DataType::U16],
            Dimensions::Vec4,
        )?;
        file.check_typed(
            &wa,
            "WEIGHTS_0",
            &[DataType::F32, DataType::U8, DataType::U16],
            Dimensions::Vec4,
        )?;
        let reader = p.reader(|b| file.buffers.get(b.index()).map(Vec::as_slice));
        let positions: Vec<[f32; 3]> = reader
            .read_positions()
            .map(Iterator::collect)
            .unwrap_or_default();
        let joints: Vec<[u16; 4]> = reader
            .read_joints(0)
            .map(|r| r.into_u16().collect())
            .unwrap_or_default();
        let weights: Vec<[f32; 4]> = reader
            .read_weights(0)
            .map(|r| r.into_f32().collect())
            .unwrap_or_default();
        let n = positions.len();
        if joints.len() != n || weights.len() != n {
            let message = format!(
                "{name}: {} joints and {} weights for {n} vertices",
                joints.len(),
                weights.len()
            );
            return Err(bad_skin(file, self.skin, message));
        }
        Ok((positions, joints, weights))
    }

    /// The bind pose's bounds and skin radius (the farthest a vertex lies from a
    /// joint that weighs on it), refusing a non-finite position and a joint past
    /// the skin's.
    fn bind_extent(
        &self,
        file: &LoadedGltf,
        name: &str,
        positions: &[[f32; 3]],
        joints: &[[u16; 4]],
        weights: &[[f32; 4]],
    ) -> Result<(f32, Aabb), ImportError> {
        let bad = |message: String| bad_skin(file, self.skin, message);
        let joint_pos = &self.joint_pos;
        let mut skin_radius = 0.0f32;
        let mut bounds = Aabb::EMPTY;
        for (v, (j, w)) in positions.iter().zip(joints.iter().zip(weights)) {
            let v = Vec3::from(*v);
            if !v.is_finite() {
                return Err(bad(format!("{name}: non-finite position {v}")));
            }
            bounds = bounds.grow(v);
            for k in 0..4 {
                if w[k] > 0.0 {
                    let Some(jp) = joint_pos.get(j[k] as usize) else {
                        return Err(bad(format!(
                            "{name}: joint {} past the skin's {} joints",
                            j[k],
                            joint_pos.len()
                        )));
                    };
                    skin_radius = skin_radius.max(v.distance(*jp));
                }
            }
        }
        Ok((skin_radius, bounds))
    }
}

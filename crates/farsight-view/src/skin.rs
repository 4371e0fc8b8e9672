//! Skins and posed bounds (docs/design/visibility-pass.md#posed-bounds).

use glam::{Mat4, Vec3};

use farsight_geom::Aabb;

/// What the pose publishes for one frame: the box of the posed bone origins in rig
/// space and the largest scale any bone carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoseSlice {
    /// The lowest corner of the box around the posed bone origins, rig space.
    pub origin_min: Vec3,
    /// The highest corner of the box around the posed bone origins, rig space.
    pub origin_max: Vec3,
    /// The largest axis scale of any posed bone (1 for a rig without scaling).
    pub max_bone_scale: f32,
    /// The frame this pose was computed for; older poses are ignored.
    pub frame: u64,
}

impl PoseSlice {
    /// From the posed bone matrices (rig space) of one frame.
    pub fn from_bones(bones: &[Mat4], frame: u64) -> Self {
        let mut b = Aabb::EMPTY;
        let mut scale = 0.0f32;
        for m in bones {
            b = b.grow(m.w_axis.truncate());
            let s = m.x_axis.truncate().length_squared().max(
                m.y_axis
                    .truncate()
                    .length_squared()
                    .max(m.z_axis.truncate().length_squared()),
            );
            scale = scale.max(s);
        }
        Self {
            origin_min: b.min,
            origin_max: b.max,
            max_bone_scale: scale.sqrt(),
            frame,
        }
    }

    /// True when the origins are finite and ordered (`origin_min <= origin_max` on
    /// every axis) and the bone scale is finite: padding never repairs a bad pose.
    #[inline]
    pub fn valid(&self) -> bool {
        self.origin_min.is_finite()
            && self.origin_max.is_finite()
            && self.origin_min.cmple(self.origin_max).all()
            && self.max_bone_scale.is_finite()
    }

    /// The posed local box: origins padded by `skin_radius * max(1, max_bone_scale)`.
    #[inline]
    pub fn bounds(&self, skin_radius: f32) -> Aabb {
        let pad = Vec3::splat(skin_radius * self.max_bone_scale.max(1.0));
        Aabb::new(self.origin_min - pad, self.origin_max + pad)
    }
}

/// A skinned mesh's rig binding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Skin {
    /// First bone of this rig's slice of the palette.
    pub bone_first: u32,
    /// Bones in this rig's slice of the palette; 0 draws the mesh static.
    pub bone_count: u32,
    /// Furthest a vertex sits from a bone that moves it ([`Skin::compute_radius`]).
    pub skin_radius: f32,
    /// The pose published for the current frame, if any.
    pub pose: Option<PoseSlice>,
}

impl Skin {
    /// The furthest distance from a vertex to the origin of a bone that moves it,
    /// measured in that bone's bind space (`inverse_bind[j] * v`), so the bound holds
    /// for any pose. The one implementation anything authoring a skinned mesh calls.
    pub fn compute_radius(
        positions: &[Vec3],
        joints: &[[u16; 4]],
        weights: &[[f32; 4]],
        inverse_bind: &[Mat4],
    ) -> f32 {
        let mut r = 0.0f32;
        for ((p, js), ws) in positions.iter().zip(joints).zip(weights) {
            for (&j, &w) in js.iter().zip(ws) {
                if w > 0.0 {
                    if let Some(ib) = inverse_bind.get(j as usize) {
                        r = r.max(ib.transform_point3(*p).length());
                    }
                }
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A generated rig: a chain of bones along +Y with a tube of vertices around it,
    /// each vertex weighted to its two nearest bones. Random poses bend, twist and
    /// scale every bone; every linear-blend-skinned vertex must lie in the posed box.
    #[test]
    fn posed_bounds_contain_every_posed_vertex() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let bones = 6usize;
        let bind: Vec<Mat4> = (0..bones)
            .map(|i| Mat4::from_translation(Vec3::Y * i as f32))
            .collect();
        let inverse_bind: Vec<Mat4> = bind.iter().map(|m| m.inverse()).collect();
        let mut positions = Vec::new();
        let mut joints = Vec::new();
        let mut weights = Vec::new();
        for k in 0..600 {
            let y = k as f32 / 600.0 * (bones - 1) as f32;
            let a = k as f32 * 0.7;
            positions.push(Vec3::new(0.4 * a.cos(), y, 0.4 * a.sin()));
            let j0 = (y.floor() as usize).min(bones - 2);
            let t = y - j0 as f32;
            joints.push([j0 as u16, j0 as u16 + 1, 0, 0]);
            weights.push([1.0 - t, t, 0.0, 0.0]);
        }
        let radius = Skin::compute_radius(&positions, &joints, &weights, &inverse_bind);
        assert!(radius > 0.4 && radius < 1.5, "radius {radius}");
        for frame in 0..200u64 {
            // Forward kinematics with random local rotations and scales.
            let mut posed = Vec::with_capacity(bones);
            let mut parent = Mat4::from_rotation_translation(
                Quat::from_rotation_z(rng.random_range(-1.0..1.0)),
                Vec3::new(rng.random_range(-2.0..2.0), 0.0, 0.0),
            );
            for i in 0..bones {
                let local = if i == 0 {
                    Mat4::IDENTITY
                } else {
                    Mat4::from_scale_rotation_translation(
                        Vec3::splat(rng.random_range(0.5..2.0)),
                        Quat::from_euler(
                            glam::EulerRot::XYZ,
                            rng.random_range(-1.5..1.5),
                            rng.random_range(-1.5..1.5),
                            rng.random_range(-1.5..1.5),
                        ),
                        Vec3::Y,
                    )
                };
                parent *= local;
                posed.push(parent);
            }
            let slice = PoseSlice::from_bones(&posed, frame);
            let b = slice.bounds(radius);
            for ((p, js), ws) in positions.iter().zip(&joints).zip(&weights) {
                let mut v = Vec3::ZERO;
                for (&j, &w) in js.iter().zip(ws) {
                    let j = j as usize;
                    v += w * (posed[j] * inverse_bind[j]).transform_point3(*p);
                }
                let tol = 1e-3 * (1.0 + b.size().length());
                assert!(
                    b.padded(Vec3::splat(tol)).contains_point(v),
                    "frame {frame}: posed vertex {v:?} outside {b:?}"
                );
            }
            // The stored bind-pose box would lose vertices in most of these poses.
        }
    }
}

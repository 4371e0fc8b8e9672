//! Instance tables of a manifest: where a file's geometries are drawn when its
//! source placed them more than once (glTF nodes sharing a mesh,
//! `EXT_mesh_gpu_instancing`). Each geometry is stored once, in its own space; each
//! instance names its geometry and a geometry-to-world transform (column-major 4x4,
//! affine). The manifest holds the table; [`check_instances`] is what a reader
//! refuses in it.

use serde::{Deserialize, Serialize};

use crate::{FormatError, Section};

/// One placement of one of a file's geometries.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The geometry drawn (an index into the file's geometries).
    pub geometry: u32,
    /// Geometry-to-world, column-major 4x4, affine (last row 0, 0, 0, 1).
    pub transform: [f32; 16],
}

fn bad(field: &'static str, found: u64) -> FormatError {
    FormatError::BadField {
        section: Section::Manifest,
        field,
        found,
    }
}

/// Checks one transform: every entry finite and the last row `0 0 0 1` (an affine
/// map; the row is entries 3, 7, 11 and 15 of the column-major array).
pub fn check_transform(t: &[f32; 16]) -> Result<(), FormatError> {
    if !t.iter().all(|v| v.is_finite()) {
        return Err(FormatError::NonFinite {
            what: "instance transform",
        });
    }
    if [t[3], t[7], t[11], t[15]] != [0.0, 0.0, 0.0, 1.0] {
        let row = [t[3], t[7], t[11], t[15]];
        let at = row
            .iter()
            .zip([0.0, 0.0, 0.0, 1.0])
            .position(|(&a, b)| a != b)
            .unwrap_or(0);
        return Err(bad("instance transform last row", at as u64));
    }
    Ok(())
}

/// Checks an instance table against the `geometry_count` geometries it places:
/// an empty table is a file of one geometry drawn where it is (and then
/// `geometry_count` is at most 1); otherwise every instance names a geometry that
/// exists, has a finite affine transform, and every geometry is drawn at least once.
pub fn check_instances(instances: &[Instance], geometry_count: usize) -> Result<(), FormatError> {
    if instances.is_empty() {
        if geometry_count > 1 {
            return Err(bad("instance count", 0));
        }
        return Ok(());
    }
    let mut drawn = vec![false; geometry_count];
    for i in instances {
        let slot = drawn
            .get_mut(i.geometry as usize)
            .ok_or_else(|| bad("instance geometry", i.geometry as u64))?;
        *slot = true;
        check_transform(&i.transform)?;
    }
    if let Some(g) = drawn.iter().position(|d| !d) {
        return Err(bad("geometry no instance draws", g as u64));
    }
    Ok(())
}

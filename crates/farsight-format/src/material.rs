//! Materials and the texture table a mesh file's manifest carries: the
//! metallic-roughness model of glTF (what a renderer's standard PBR material
//! shows), as plain data a run-time reader needs nothing else to use.
//!
//! A file's [`MaterialTable`] sits in its manifest, absent when empty (files
//! written before materials existed read as having none). Its materials are
//! found by name: a cluster's material index names one of its geometry's
//! material names, a chain sub-mesh names its material, and the table holds the
//! definition for that name. Textures are images stored beside the file under a
//! content-hash name ([`TextureData::File`]) or inside it as `TEX1` records
//! ([`TextureData::Embedded`]); [`MaterialTable::check`] refuses a table that
//! names a texture it does not have, a value no writer produces, a file name that
//! could leave the file's folder, or an embedded image whose bytes are not the
//! format it claims.

use serde::{Deserialize, Serialize};

use crate::{FormatError, RawFile, RecordIndex, RecordTag};

/// How a material's alpha is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlphaMode {
    /// Alpha ignored: the surface is opaque.
    #[default]
    Opaque,
    /// Alpha below [`Material::alpha_cutoff`] discards the fragment.
    Mask,
    /// Alpha blends the surface over what is behind it.
    Blend,
}

/// A texture transform (glTF's `KHR_texture_transform`): uv' = T(offset) R(rotation)
/// S(scale) uv, rotation in radians counter-clockwise.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct UvTransform {
    /// Added to the uv after rotation and scale.
    pub offset: [f32; 2],
    /// Radians.
    pub rotation: f32,
    /// Multiplies the uv first.
    pub scale: [f32; 2],
}

impl UvTransform {
    /// The transform that changes nothing.
    pub const IDENTITY: UvTransform = UvTransform {
        offset: [0.0, 0.0],
        rotation: 0.0,
        scale: [1.0, 1.0],
    };

    /// `uv` transformed.
    pub fn apply(&self, uv: [f32; 2]) -> [f32; 2] {
        let (s, c) = self.rotation.sin_cos();
        let (x, y) = (uv[0] * self.scale[0], uv[1] * self.scale[1]);
        [
            c * x + s * y + self.offset[0],
            -s * x + c * y + self.offset[1],
        ]
    }
}

/// One use of a texture by a material.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextureSlot {
    /// Index into [`MaterialTable::textures`].
    pub texture: u32,
    /// The texture coordinate set it samples (0 for the vertices' uv).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub texcoord: u32,
    /// A transform kept for the renderer, where the material's textures did not all
    /// share one (a shared one is applied to the cooked uvs instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<UvTransform>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_one(v: &f32) -> bool {
    *v == 1.0
}

fn is_half(v: &f32) -> bool {
    *v == 0.5
}

/// A material's optional extensions that a standard PBR renderer shows (glTF's
/// `KHR_materials_ior`, `_transmission`, `_volume`, `_specular`, `_clearcoat`,
/// `_anisotropy`), each `None` where the source did not give it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MaterialExtras {
    /// Index of refraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ior: Option<f32>,
    /// Share of light transmitted through the surface (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transmission: Option<f32>,
    /// Volume thickness in mesh units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thickness: Option<f32>,
    /// Distance light travels in the volume before it is attenuated to
    /// `attenuation_color`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuation_distance: Option<f32>,
    /// Colour light becomes after `attenuation_distance` (linear RGB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuation_color: Option<[f32; 3]>,
    /// Strength of the specular reflection (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specular: Option<f32>,
    /// Colour of the specular reflection at normal incidence (linear RGB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specular_color: Option<[f32; 3]>,
    /// Clear coat layer strength (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearcoat: Option<f32>,
    /// Clear coat roughness (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearcoat_roughness: Option<f32>,
    /// Anisotropy strength (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anisotropy: Option<f32>,
    /// Anisotropy direction, radians from the tangent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anisotropy_rotation: Option<f32>,
}

impl MaterialExtras {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// One material: glTF's metallic-roughness model. Colours are linear RGB(A); a
/// texture slot's image is sRGB for base colour and emissive, linear otherwise,
/// as in glTF.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Material {
    /// The name the file's geometry lists use for it (unique in the table).
    pub name: String,
    /// Base colour factor, RGBA.
    pub base_color: [f32; 4],
    /// Base colour texture (sRGB), multiplied by `base_color`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_color_texture: Option<TextureSlot>,
    /// Metalness factor (0..=1).
    pub metallic: f32,
    /// Perceptual roughness factor (0..=1).
    pub roughness: f32,
    /// Roughness in green, metalness in blue, multiplied by the factors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metallic_roughness_texture: Option<TextureSlot>,
    /// Tangent-space normal map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normal_texture: Option<TextureSlot>,
    /// Scale of the normal map's x and y.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub normal_scale: f32,
    /// Ambient occlusion in red.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occlusion_texture: Option<TextureSlot>,
    /// How much of the occlusion applies (0..=1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub occlusion_strength: f32,
    /// Emitted colour factor, linear RGB.
    #[serde(default, skip_serializing_if = "is_black")]
    pub emissive: [f32; 3],
    /// Emissive texture (sRGB), multiplied by `emissive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emissive_texture: Option<TextureSlot>,
    /// Multiplies `emissive` (`KHR_materials_emissive_strength`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub emissive_strength: f32,
    /// How alpha is used.
    #[serde(default, skip_serializing_if = "is_opaque")]
    pub alpha_mode: AlphaMode,
    /// Alpha below which a [`AlphaMode::Mask`] surface is discarded.
    #[serde(default = "half", skip_serializing_if = "is_half")]
    pub alpha_cutoff: f32,
    /// Both faces drawn and lit.
    #[serde(default, skip_serializing_if = "is_false")]
    pub double_sided: bool,
    /// Drawn with its base colour alone, no lighting (`KHR_materials_unlit`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unlit: bool,
    /// The further extensions kept.
    #[serde(default, skip_serializing_if = "MaterialExtras::is_empty")]
    pub extras: MaterialExtras,
}

fn one() -> f32 {
    1.0
}

fn half() -> f32 {
    0.5
}

fn is_black(c: &[f32; 3]) -> bool {
    *c == [0.0; 3]
}

fn is_opaque(m: &AlphaMode) -> bool {
    *m == AlphaMode::Opaque
}

impl Material {
    /// glTF's default material (white, fully metallic and rough, opaque), named.
    pub fn named(name: impl Into<String>) -> Material {
        Material {
            name: name.into(),
            base_color: [1.0; 4],
            base_color_texture: None,
            metallic: 1.0,
            roughness: 1.0,
            metallic_roughness_texture: None,
            normal_texture: None,
            normal_scale: 1.0,
            occlusion_texture: None,
            occlusion_strength: 1.0,
            emissive: [0.0; 3],
            emissive_texture: None,
            emissive_strength: 1.0,
            alpha_mode: AlphaMode::Opaque,
            alpha_cutoff: 0.5,
            double_sided: false,
            unlit: false,
            extras: MaterialExtras::default(),
        }
    }

    /// Every texture slot with its field name, in a fixed order.
    pub fn texture_slots(&self) -> [(&'static str, Option<TextureSlot>); 5] {
        [
            ("base_color_texture", self.base_color_texture),
            (
                "metallic_roughness_texture",
                self.metallic_roughness_texture,
            ),
            ("normal_texture", self.normal_texture),
            ("occlusion_texture", self.occlusion_texture),
            ("emissive_texture", self.emissive_texture),
        ]
    }

    /// Every texture slot, mutable, in [`Self::texture_slots`]' order.
    pub fn texture_slots_mut(&mut self) -> [&mut Option<TextureSlot>; 5] {
        [
            &mut self.base_color_texture,
            &mut self.metallic_roughness_texture,
            &mut self.normal_texture,
            &mut self.occlusion_texture,
            &mut self.emissive_texture,
        ]
    }
}

/// An image's encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImageFormat {
    /// PNG.
    Png,
    /// JPEG.
    Jpeg,
    /// KTX2 (copied as the source gave it).
    Ktx2,
    /// WebP (copied as the source gave it).
    WebP,
}

impl ImageFormat {
    /// The format whose signature `bytes` start with, if any.
    pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageFormat::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageFormat::Jpeg)
        } else if bytes.starts_with(b"\xABKTX 20\xBB\r\n\x1A\n") {
            Some(ImageFormat::Ktx2)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageFormat::WebP)
        } else {
            None
        }
    }

    /// The file name extension (no dot).
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Ktx2 => "ktx2",
            ImageFormat::WebP => "webp",
        }
    }
}

/// Where a texture's image bytes are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TextureData {
    /// A file in the cooked file's folder, named by the hash of its bytes
    /// (`<hex>.<extension>`, no folder part).
    File(String),
    /// A `TEX1` record of this file holding the image's bytes.
    Embedded(RecordIndex),
}

/// How a texture repeats outside 0..1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Wrap {
    /// Tiles.
    #[default]
    Repeat,
    /// Tiles mirrored every other time.
    MirroredRepeat,
    /// The edge texel stretched.
    ClampToEdge,
}

fn is_repeat(w: &Wrap) -> bool {
    *w == Wrap::Repeat
}

/// One texture of the table: an image and how it is sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Texture {
    /// The source's name for the image (its URI, or `image<N>`), for people.
    pub name: String,
    /// The image's encoding.
    pub format: ImageFormat,
    /// Width in pixels (0 where the cook could not read it: a copied KTX2 or WebP).
    pub width: u32,
    /// Height in pixels (0 where unknown, as `width`).
    pub height: u32,
    /// Where the bytes are.
    pub data: TextureData,
    /// Smaller images, each half the one before, stored as `data` is, for a
    /// renderer that loads its own mip levels (empty: none stored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mips: Vec<TextureData>,
    /// Wrap along u.
    #[serde(default, skip_serializing_if = "is_repeat")]
    pub wrap_u: Wrap,
    /// Wrap along v.
    #[serde(default, skip_serializing_if = "is_repeat")]
    pub wrap_v: Wrap,
}

/// The materials and textures of a mesh file (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MaterialTable {
    /// Materials, names unique.
    pub materials: Vec<Material>,
    /// Textures the materials' slots index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub textures: Vec<Texture>,
}

/// Record tag of an embedded texture's image bytes.
pub const TEXTURE_TAG: RecordTag = RecordTag(*b"TEX1");

impl MaterialTable {
    /// True when the table holds nothing (and is left out of the manifest).
    pub fn is_empty(&self) -> bool {
        self.materials.is_empty() && self.textures.is_empty()
    }

    /// The material named `name`.
    pub fn get(&self, name: &str) -> Option<&Material> {
        self.materials.iter().find(|m| m.name == name)
    }

    /// Every embedded record the table names (image and mip levels).
    pub fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for t in &self.textures {
            for d in std::iter::once(&t.data).chain(&t.mips) {
                if let TextureData::Embedded(r) = d {
                    visit(*r, TEXTURE_TAG);
                }
            }
        }
    }

    /// The table's own checks ([`Self::check_values`]) and every embedded image
    /// against its record: the record's bytes start with the format's signature.
    pub fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        self.check_values()?;
        for (ti, t) in self.textures.iter().enumerate() {
            for d in std::iter::once(&t.data).chain(&t.mips) {
                if let TextureData::Embedded(r) = d {
                    let bytes = file.record(*r)?.bytes;
                    if ImageFormat::sniff(bytes) != Some(t.format) {
                        return Err(bad_texture(
                            ti,
                            "embedded bytes",
                            format!("{} bytes that are not {:?}", bytes.len(), t.format),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The checks of the table alone: names unique, every factor finite and in its
    /// range, every slot's texture in the table, every texture file name a plain
    /// hash name of its format.
    pub fn check_values(&self) -> Result<(), FormatError> {
        let textures = self.textures.len();
        for (mi, m) in self.materials.iter().enumerate() {
            if self.materials[..mi].iter().any(|o| o.name == m.name) {
                return Err(bad_material(mi, "name", format!("{:?} repeated", m.name)));
            }
            check_material(m, textures).map_err(|(field, found)| bad_material(mi, field, found))?;
        }
        for (ti, t) in self.textures.iter().enumerate() {
            for d in std::iter::once(&t.data).chain(&t.mips) {
                if let TextureData::File(name) = d {
                    if !is_hash_name(name, t.format) {
                        return Err(bad_texture(ti, "file", format!("{name:?}")));
                    }
                }
            }
        }
        Ok(())
    }
}

fn bad_material(material: usize, field: &'static str, found: String) -> FormatError {
    FormatError::BadMaterial {
        material: material as u32,
        field,
        found,
    }
}

fn bad_texture(texture: usize, field: &'static str, found: String) -> FormatError {
    FormatError::BadTexture {
        texture: texture as u32,
        field,
        found,
    }
}

/// A file name a cook writes: lowercase hex (16 to 64 digits), a dot and the
/// format's extension. Nothing else can name a folder or leave this one.
fn is_hash_name(name: &str, format: ImageFormat) -> bool {
    let Some((stem, ext)) = name.split_once('.') else {
        return false;
    };
    (16..=64).contains(&stem.len())
        && stem
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && ext == format.extension()
}

/// One material's values: the field that is wrong and what it holds.
fn check_material(m: &Material, textures: usize) -> Result<(), (&'static str, String)> {
    let unit = |field: &'static str, v: f32| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err((field, v.to_string()))
        }
    };
    let finite = |field: &'static str, v: &[f32]| {
        if v.iter().all(|x| x.is_finite()) {
            Ok(())
        } else {
            Err((field, format!("{v:?}")))
        }
    };
    for (k, c) in m.base_color.iter().enumerate() {
        unit(
            [
                "base_color.r",
                "base_color.g",
                "base_color.b",
                "base_color.a",
            ][k],
            *c,
        )?;
    }
    unit("metallic", m.metallic)?;
    unit("roughness", m.roughness)?;
    unit("occlusion_strength", m.occlusion_strength)?;
    unit("alpha_cutoff", m.alpha_cutoff)?;
    finite("normal_scale", &[m.normal_scale])?;
    finite("emissive", &m.emissive)?;
    if m.emissive.iter().any(|&c| c < 0.0) {
        return Err(("emissive", format!("{:?}", m.emissive)));
    }
    if !(m.emissive_strength.is_finite() && m.emissive_strength >= 0.0) {
        return Err(("emissive_strength", m.emissive_strength.to_string()));
    }
    for (field, slot) in m.texture_slots() {
        let Some(slot) = slot else { continue };
        if slot.texture as usize >= textures {
            return Err((field, format!("texture {} of {textures}", slot.texture)));
        }
        if slot.texcoord > 7 {
            return Err((field, format!("texcoord {}", slot.texcoord)));
        }
        if let Some(t) = slot.transform {
            finite(
                field,
                &[t.offset[0], t.offset[1], t.rotation, t.scale[0], t.scale[1]],
            )?;
        }
    }
    let x = &m.extras;
    let units = [
        ("transmission", x.transmission),
        ("specular", x.specular),
        ("clearcoat", x.clearcoat),
        ("clearcoat_roughness", x.clearcoat_roughness),
        ("anisotropy", x.anisotropy),
    ];
    for (field, v) in units {
        if let Some(v) = v {
            unit(field, v)?;
        }
    }
    let non_negative = [
        ("ior", x.ior),
        ("thickness", x.thickness),
        ("attenuation_distance", x.attenuation_distance),
    ];
    for (field, v) in non_negative {
        if let Some(v) = v {
            if !(v.is_finite() && v >= 0.0) {
                return Err((field, v.to_string()));
            }
        }
    }
    finite(
        "anisotropy_rotation",
        &[x.anisotropy_rotation.unwrap_or(0.0)],
    )?;
    for (field, c) in [
        ("attenuation_color", x.attenuation_color),
        ("specular_color", x.specular_color),
    ] {
        if let Some(c) = c {
            if !c.iter().all(|v| v.is_finite() && *v >= 0.0) {
                return Err((field, format!("{c:?}")));
            }
        }
    }
    Ok(())
}

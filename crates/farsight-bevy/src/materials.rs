//! A mesh file's materials as Bevy `StandardMaterial`s, and its textures as Bevy
//! images.
//!
//! [`standard_material`] maps one file [`Material`] onto a `StandardMaterial`
//! field by field. [`MaterialAssets::load`] does it for a whole
//! [`MaterialTable`] inside an asset loader: each texture is loaded once per colour
//! space it is used in (sRGB for base colour and emissive, linear for the normal,
//! metallic-roughness and occlusion maps), a texture stored beside the cooked file
//! through the asset server (its path taken relative to the cooked file's asset
//! path, so two files sharing an image share the asset), an embedded one decoded
//! here and added as a labelled `Image`. Each material becomes one labelled
//! `StandardMaterial` that every level and instance of the file shares.
//!
//! A cluster model opened by its path has no asset loader: the plugin makes its
//! file's materials once per file in a system (`MaterialAssets::create`), loading a
//! texture through the asset server where the file lies under the asset folder and
//! reading and decoding it on the async compute pool elsewhere ([`PendingImages`]).
//!
//! Bevy decodes a PNG or JPEG file only with its `png` / `jpeg` features; this
//! crate does not turn them on (an app that wants textures does, as it would for
//! Bevy's own glTF loader). What `StandardMaterial` has no field for is not kept:
//! the normal map's scale and the occlusion strength.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use bevy::asset::{LoadContext, RenderAssetUsages};
use bevy::image::{ImageAddressMode, ImageLoaderSettings, ImageSampler, ImageSamplerDescriptor};
use bevy::math::Affine2;
use bevy::mesh::UvChannel;
use bevy::prelude::*;
use bevy::tasks::futures::check_ready;
use bevy::tasks::{AsyncComputeTaskPool, Task};
use farsight_format::{
    AlphaMode as FileAlphaMode, ImageFormat, Material, MaterialTable, RawFile, RecordIndex,
    Texture, TextureData, TextureSlot, UvTransform, Wrap,
};
use farsight_stream::cluster::read_head;

/// The `StandardMaterial` showing `m`. `image(slot, srgb)` gives the image of a
/// texture slot (sRGB or linear as asked), `None` where it has none: the material
/// then keeps its factors alone.
///
/// Bevy takes one uv transform per material: the first slot's that has one (in
/// [`Material::texture_slots`]' order) is used. A texture coordinate set past the
/// second is drawn from the first (Bevy meshes carry two).
pub fn standard_material(
    m: &Material,
    mut image: impl FnMut(TextureSlot, bool) -> Option<Handle<Image>>,
) -> StandardMaterial {
    let mut texture = |slot: Option<TextureSlot>, srgb: bool| match slot {
        Some(s) => (image(s, srgb), uv_channel(s.texcoord)),
        None => (None, UvChannel::Uv0),
    };
    let (base_color_texture, base_color_channel) = texture(m.base_color_texture, true);
    let (metallic_roughness_texture, metallic_roughness_channel) =
        texture(m.metallic_roughness_texture, false);
    let (normal_map_texture, normal_map_channel) = texture(m.normal_texture, false);
    let (occlusion_texture, occlusion_channel) = texture(m.occlusion_texture, false);
    let (emissive_texture, emissive_channel) = texture(m.emissive_texture, true);
    let [r, g, b, a] = m.base_color;
    let e = m.emissive.map(|c| c * m.emissive_strength);
    let uv_transform = m
        .texture_slots()
        .iter()
        .find_map(|(_, s)| s.and_then(|s| s.transform))
        .map_or(Affine2::IDENTITY, affine);
    let x = &m.extras;
    let defaults = StandardMaterial::default();
    StandardMaterial {
        base_color: Color::LinearRgba(LinearRgba::new(r, g, b, a)),
        base_color_texture,
        base_color_channel,
        metallic: m.metallic,
        perceptual_roughness: m.roughness,
        metallic_roughness_texture,
        metallic_roughness_channel,
        normal_map_texture,
        normal_map_channel,
        occlusion_texture,
        occlusion_channel,
        emissive: LinearRgba::rgb(e[0], e[1], e[2]),
        emissive_texture,
        emissive_channel,
        alpha_mode: match m.alpha_mode {
            FileAlphaMode::Opaque => AlphaMode::Opaque,
            FileAlphaMode::Mask => AlphaMode::Mask(m.alpha_cutoff),
            FileAlphaMode::Blend => AlphaMode::Blend,
        },
        double_sided: m.double_sided,
        cull_mode: if m.double_sided {
            None
        } else {
            defaults.cull_mode
        },
        unlit: m.unlit,
        uv_transform,
        ior: x.ior.unwrap_or(defaults.ior),
        specular_transmission: x.transmission.unwrap_or(defaults.specular_transmission),
        thickness: x.thickness.unwrap_or(defaults.thickness),
        attenuation_distance: x
            .attenuation_distance
            .unwrap_or(defaults.attenuation_distance),
        attenuation_color: x.attenuation_color.map_or(defaults.attenuation_color, |c| {
            Color::LinearRgba(LinearRgba::rgb(c[0], c[1], c[2]))
        }),
        specular_tint: x.specular_color.map_or(defaults.specular_tint, |c| {
            Color::LinearRgba(LinearRgba::rgb(c[0], c[1], c[2]))
        }),
        clearcoat: x.clearcoat.unwrap_or(defaults.clearcoat),
        clearcoat_perceptual_roughness: x
            .clearcoat_roughness
            .unwrap_or(defaults.clearcoat_perceptual_roughness),
        anisotropy_strength: x.anisotropy.unwrap_or(defaults.anisotropy_strength),
        anisotropy_rotation: x
            .anisotropy_rotation
            .unwrap_or(defaults.anisotropy_rotation),
        ..defaults
    }
}

fn uv_channel(texcoord: u32) -> UvChannel {
    if texcoord == 1 {
        UvChannel::Uv1
    } else {
        UvChannel::Uv0
    }
}

/// `t` as Bevy's uv transform: uv' = offset + R(rotation) S(scale) uv, with the
/// file's rotation sense ([`UvTransform::apply`]).
pub fn affine(t: UvTransform) -> Affine2 {
    let (s, c) = t.rotation.sin_cos();
    Affine2::from_cols(
        Vec2::new(c * t.scale[0], -s * t.scale[0]),
        Vec2::new(s * t.scale[1], c * t.scale[1]),
        Vec2::from(t.offset),
    )
}

fn address_mode(w: Wrap) -> ImageAddressMode {
    match w {
        Wrap::Repeat => ImageAddressMode::Repeat,
        Wrap::MirroredRepeat => ImageAddressMode::MirrorRepeat,
        Wrap::ClampToEdge => ImageAddressMode::ClampToEdge,
    }
}

/// How a texture is sampled: linear filtering, the texture's wrap modes.
fn sampler(t: &Texture) -> ImageSampler {
    ImageSampler::Descriptor(ImageSamplerDescriptor {
        address_mode_u: address_mode(t.wrap_u),
        address_mode_v: address_mode(t.wrap_v),
        ..ImageSamplerDescriptor::linear()
    })
}

/// The `StandardMaterial`s of a file's [`MaterialTable`], made by an asset loader
/// (see the module docs), found by the names the file's geometry uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaterialAssets {
    /// One per table material, in the table's order: its name and material.
    pub materials: Vec<(String, Handle<StandardMaterial>)>,
}

impl MaterialAssets {
    /// The material named `name`.
    pub fn get(&self, name: &str) -> Option<&Handle<StandardMaterial>> {
        self.materials
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h)
    }

    /// Every material of `table` as a labelled asset (`material{i}`) of the asset
    /// `load_context` loads, its textures loaded beside it or decoded from `file`'s
    /// records (labelled `texture{i}` and `texture{i}-linear`). An embedded image
    /// that does not decode, or one in a format this crate does not decode (KTX2,
    /// WebP embedded), is reported once and its slots left empty: the material
    /// keeps its factors.
    pub fn load(
        table: &MaterialTable,
        file: &RawFile<'_>,
        load_context: &mut LoadContext<'_>,
    ) -> Self {
        let mut images: HashMap<(u32, bool), Option<Handle<Image>>> = HashMap::new();
        let mut materials = Vec::with_capacity(table.materials.len());
        for (i, m) in table.materials.iter().enumerate() {
            let material = standard_material(m, |slot, srgb| {
                images
                    .entry((slot.texture, srgb))
                    .or_insert_with(|| texture_image(table, slot.texture, srgb, file, load_context))
                    .clone()
            });
            let handle = load_context.add_labeled_asset(format!("material{i}"), material);
            materials.push((m.name.clone(), handle));
        }
        Self { materials }
    }

    /// Every material of `table`, the table of the file `file` opened by its path
    /// (a cluster model spawned with a path, not loaded as an asset), added to
    /// `out.materials`. A texture beside the file is loaded through the asset
    /// server when the file lies under the asset folder (`out.asset_root`: its path
    /// taken relative to it, so it shares the asset with other loads of the same
    /// image); elsewhere, and for a texture embedded in the file, its bytes are read
    /// and decoded on Bevy's async compute pool into an `Image` whose handle the
    /// material holds from the start ([`PendingImages`] fills it). A texture that
    /// fails is reported and its slots draw nothing: the material keeps its factors.
    pub(crate) fn create(table: &MaterialTable, file: &Path, out: &mut MaterialSink<'_>) -> Self {
        let mut images: HashMap<(u32, bool), Option<Handle<Image>>> = HashMap::new();
        let root = out.asset_root.and_then(|r| r.canonicalize().ok());
        let dir = file
            .parent()
            .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_owned()))
            .unwrap_or_default();
        let mut materials = Vec::with_capacity(table.materials.len());
        for m in &table.materials {
            let material = standard_material(m, |slot, srgb| {
                images
                    .entry((slot.texture, srgb))
                    .or_insert_with(|| {
                        let t = table.textures.get(slot.texture as usize)?;
                        Some(out.texture(t, srgb, file, &dir, root.as_deref()))
                    })
                    .clone()
            });
            materials.push((m.name.clone(), out.materials.add(material)));
        }
        Self { materials }
    }
}

/// Where [`MaterialAssets::create`] puts what it makes.
pub(crate) struct MaterialSink<'a> {
    pub asset_server: &'a AssetServer,
    /// The default asset source's folder.
    pub asset_root: Option<&'a Path>,
    pub images: &'a mut Assets<Image>,
    pub materials: &'a mut Assets<StandardMaterial>,
    pub pending: &'a mut PendingImages,
}

impl MaterialSink<'_> {
    /// Texture `t` of the file `file` (in folder `dir`) in the colour space asked for.
    fn texture(
        &mut self,
        t: &Texture,
        srgb: bool,
        file: &Path,
        dir: &Path,
        root: Option<&Path>,
    ) -> Handle<Image> {
        let sampler = sampler(t);
        let source = match &t.data {
            TextureData::File(name) => {
                let path = dir.join(name);
                if let Some(rel) = root.and_then(|r| path.strip_prefix(r).ok()) {
                    return self
                        .asset_server
                        .load_builder()
                        .with_settings(move |s: &mut ImageLoaderSettings| {
                            s.is_srgb = srgb;
                            s.sampler = sampler.clone();
                        })
                        .load(rel.to_owned());
                }
                ImageSource::File(path)
            }
            TextureData::Embedded(record) => ImageSource::Record(file.to_owned(), *record),
        };
        let handle = self.images.reserve_handle();
        let (name, format) = (t.name.clone(), t.format);
        let task = AsyncComputeTaskPool::get().spawn(async move {
            let bytes = source.read()?;
            let img = decode(format, &bytes)?;
            let mut image = Image::from_dynamic(img, srgb, RenderAssetUsages::default());
            image.sampler = sampler;
            Ok::<_, String>(image)
        });
        self.pending.0.push(PendingImage {
            handle: handle.clone(),
            name,
            task,
        });
        handle
    }
}

/// Where a texture decoded off the asset server lies.
enum ImageSource {
    /// An image file.
    File(PathBuf),
    /// A record of a streamed farsight file (found through its head).
    Record(PathBuf, RecordIndex),
}

impl ImageSource {
    /// The image's bytes, checked against the file's checksum for a record.
    fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            Self::File(path) => std::fs::read(path).map_err(|e| format!("{}: {e}", path.display())),
            Self::Record(path, index) => {
                let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
                let head = read_head(path).map_err(|e| at(&e))?;
                let range = head.record(*index).map_err(|e| at(&e))?;
                let mut f = std::fs::File::open(path).map_err(|e| at(&e))?;
                let len = f.metadata().map_err(|e| at(&e))?.len();
                if range
                    .offset
                    .checked_add(range.len)
                    .is_none_or(|end| end > len)
                {
                    return Err(at(&format_args!(
                        "record {} lies past the end of the file ({len} bytes)",
                        index.0
                    )));
                }
                f.seek(SeekFrom::Start(range.offset)).map_err(|e| at(&e))?;
                let mut bytes = vec![0; range.len as usize];
                f.read_exact(&mut bytes).map_err(|e| at(&e))?;
                range.verify(&bytes).map_err(|e| at(&e))?;
                Ok(bytes)
            }
        }
    }
}

/// An image being read and decoded on the async compute pool.
struct PendingImage {
    handle: Handle<Image>,
    /// The texture's name in the file, for the report if it fails.
    name: String,
    task: Task<Result<Image, String>>,
}

/// Images `MaterialAssets::create` decodes off the asset server; each is put in
/// `Assets<Image>` under the handle its materials already hold once decoded
/// (`finish_images`).
#[derive(Resource, Default)]
pub struct PendingImages(Vec<PendingImage>);

impl PendingImages {
    /// Images still being decoded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no image is being decoded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Puts the images decoded since the last frame in `Assets<Image>`; one that
/// failed is reported and left empty (its materials keep their factors).
pub(crate) fn finish_images(
    mut pending: ResMut<PendingImages>,
    images: Option<ResMut<Assets<Image>>>,
) {
    let Some(mut images) = images else {
        return;
    };
    pending.0.retain_mut(|p| {
        let Some(done) = check_ready(&mut p.task) else {
            return true;
        };
        match done {
            Ok(image) => {
                if let Err(e) = images.insert(&p.handle, image) {
                    warn!("texture {:?}: {e}", p.name);
                }
            }
            Err(e) => warn!(
                "texture {:?}: not drawn, the material keeps its factors: {e}",
                p.name
            ),
        }
        false
    });
}

/// Texture `index` of `table` as an image in the colour space asked for.
fn texture_image(
    table: &MaterialTable,
    index: u32,
    srgb: bool,
    file: &RawFile<'_>,
    load_context: &mut LoadContext<'_>,
) -> Option<Handle<Image>> {
    let t = table.textures.get(index as usize)?;
    let sampler = sampler(t);
    match &t.data {
        TextureData::File(name) => {
            let path = match load_context.path().resolve_embed_str(name) {
                Ok(p) => p,
                Err(e) => {
                    warn!("texture {index} ({:?}): file {name:?}: {e}", t.name);
                    return None;
                }
            };
            Some(
                load_context
                    .load_builder()
                    .with_settings(move |s: &mut ImageLoaderSettings| {
                        s.is_srgb = srgb;
                        s.sampler = sampler.clone();
                    })
                    .load(path),
            )
        }
        TextureData::Embedded(record) => {
            let decoded = file
                .record(*record)
                .map_err(|e| e.to_string())
                .and_then(|r| decode(t.format, r.bytes));
            match decoded {
                Ok(img) => {
                    let mut image = Image::from_dynamic(img, srgb, RenderAssetUsages::default());
                    image.sampler = sampler;
                    let label = if srgb {
                        format!("texture{index}")
                    } else {
                        format!("texture{index}-linear")
                    };
                    Some(load_context.add_labeled_asset(label, image))
                }
                Err(e) => {
                    warn!(
                        "texture {index} ({:?}): not drawn, the material keeps its factors: {e}",
                        t.name
                    );
                    None
                }
            }
        }
    }
}

/// An embedded image's pixels.
fn decode(format: ImageFormat, bytes: &[u8]) -> Result<image::DynamicImage, String> {
    let f = match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Jpeg => image::ImageFormat::Jpeg,
        other => return Err(format!("embedded {other:?} images are not decoded here")),
    };
    image::load_from_memory_with_format(bytes, f).map_err(|e| e.to_string())
}

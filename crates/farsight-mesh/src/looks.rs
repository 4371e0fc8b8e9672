//! Materials and textures of a cook: each source material's metallic-roughness
//! model read into farsight-format's [`Material`], and the images its textures use
//! stored with the cooked file ([`Looks`]).
//!
//! Images are read from files, `data:` URIs and GLB buffer views. PNG and JPEG are
//! kept as the source's bytes unless `max_size` or `mips` asks for new pixels
//! (then decoded, resampled with a Catmull-Rom filter and written again in their
//! own format); KTX2 and WebP are copied as they are, with a warning. Each stored
//! image is named by the BLAKE3 hash of its bytes, so an image used by several
//! materials or models is stored once. A texture that cannot be read is a warning
//! naming it; its material keeps its factors.

use std::collections::HashMap;
use std::io::Cursor;
use std::path::Path;

use farsight_format::{
    AlphaMode, FileWriter, ImageFormat, Material, MaterialExtras, MaterialTable, Texture,
    TextureData, TextureSlot, UvTransform, Wrap, TEXTURE_TAG,
};
use gltf::json::Value;
use rayon::prelude::*;

use crate::error::ImportError;
use crate::gltf_import::{load_gltf_buffers, load_uri, LoadedGltf};
use crate::mesh::Mesh;
use crate::Warning;

/// How a cook stores textures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextureConfig {
    /// Inside the cooked file as records, rather than files beside it.
    pub embed: bool,
    /// Images larger than this on either side are scaled down to fit it.
    pub max_size: Option<u32>,
    /// Write each image's mip chain (each level half the one before, to 1x1).
    pub mips: bool,
}

/// One image to store: its content-hash file name and bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredImage {
    /// `<hash>.<extension>`: the name [`TextureData::File`] gives.
    pub name: String,
    /// The encoded image.
    pub bytes: Vec<u8>,
}

/// A cook's materials and the images they use, ready for a file writer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Looks {
    /// The table as written when the images are stored beside the file (every
    /// texture [`TextureData::File`]).
    pub table: MaterialTable,
    /// Every distinct image the table names, in table order.
    pub images: Vec<StoredImage>,
    /// The images go inside the file ([`Looks::attach`]).
    pub embed: bool,
    /// Texture transforms shared by every texture of a material, applied to the
    /// uvs of that material's sub-meshes ([`Looks::apply_uv_transforms`]).
    pub uv_transforms: Vec<(String, UvTransform)>,
}

impl Looks {
    /// The manifest's table: embedded images added to `writer` as `TEX1` records
    /// (their `File` names become record indices), or the table as it is.
    pub fn attach(&self, writer: &mut FileWriter) -> MaterialTable {
        if !self.embed {
            return self.table.clone();
        }
        let mut table = self.table.clone();
        let mut records = HashMap::new();
        for t in &mut table.textures {
            for d in std::iter::once(&mut t.data).chain(&mut t.mips) {
                let TextureData::File(name) = d else { continue };
                let bytes = self
                    .images
                    .iter()
                    .find(|i| &i.name == name)
                    .map_or(&[][..], |i| &i.bytes[..]);
                let record = *records
                    .entry(name.clone())
                    .or_insert_with(|| writer.add_record(TEXTURE_TAG, bytes));
                *d = TextureData::Embedded(record);
            }
        }
        table
    }

    /// Applies each material's shared texture transform to the uvs of the
    /// sub-meshes drawn with it.
    pub fn apply_uv_transforms(&self, mesh: &mut Mesh) {
        for s in &mut mesh.submeshes {
            if let Some((_, t)) = self.uv_transforms.iter().find(|(n, _)| *n == s.material) {
                for v in &mut s.vertices {
                    v.uv = t.apply(v.uv);
                }
            }
        }
    }

    /// Writes the images beside a cooked file into `dir` (not when embedded). An
    /// image whose file already exists with its length is not written again (its
    /// name is the hash of its bytes). Returns how many were written.
    pub fn write_beside(&self, dir: &Path) -> std::io::Result<usize> {
        if self.embed {
            return Ok(0);
        }
        let mut written = 0;
        for image in &self.images {
            let path = dir.join(&image.name);
            if std::fs::metadata(&path).is_ok_and(|m| m.len() == image.bytes.len() as u64) {
                continue;
            }
            // A name of its own per write: cooks running side by side may write
            // the same image at once, and each rename then lands the same bytes.
            static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!("{}.{}-{n}.tmp", image.name, std::process::id()));
            std::fs::write(&tmp, &image.bytes)?;
            std::fs::rename(&tmp, &path)?;
            written += 1;
        }
        Ok(written)
    }
}

/// The looks of the source file `path` for the materials named `used` (the names
/// its cooked geometries' sub-meshes carry): glTF materials, or an OBJ's `.mtl`.
/// Names the source does not define are left out (a renderer draws them with its
/// default). Warnings for textures that could not be read or were copied, and
/// for material features not kept.
pub fn gather_looks(
    path: &Path,
    used: &[&str],
    options: &TextureConfig,
) -> Result<(Looks, Vec<Warning>), ImportError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let mut b = Builder::new(*options);
    match ext.as_str() {
        "gltf" | "glb" => gltf_looks(path, used, &mut b)?,
        "obj" => obj_looks(path, used, &mut b),
        _ => {}
    }
    Ok(b.finish())
}

/// A texture's source before its image is read.
enum Source {
    Bytes(Vec<u8>),
    Missing(String),
}

/// Collects materials, their textures and the images behind them.
struct Builder {
    options: TextureConfig,
    materials: Vec<Material>,
    /// (image key, wrap u, wrap v) of each texture, in table order.
    textures: Vec<(usize, Wrap, Wrap)>,
    /// Each image's display name and source, by key.
    images: Vec<(String, Source)>,
    image_keys: HashMap<String, usize>,
    uv_transforms: Vec<(String, UvTransform)>,
    dropped: Vec<String>,
    warnings: Vec<Warning>,
}

/// An image read and encoded for storing: format, size, stored names (image
/// then mips) and their bytes.
struct Processed {
    format: ImageFormat,
    width: u32,
    height: u32,
    stored: Vec<StoredImage>,
}

impl Builder {
    fn new(options: TextureConfig) -> Self {
        Builder {
            options,
            materials: Vec::new(),
            textures: Vec::new(),
            images: Vec::new(),
            image_keys: HashMap::new(),
            uv_transforms: Vec::new(),
            dropped: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn drop_feature(&mut self, name: impl Into<String>) {
        let name = name.into();
        if !self.dropped.contains(&name) {
            self.dropped.push(name);
        }
    }

    /// The image keyed `key` (read by `load` the first time it is named).
    fn image(&mut self, key: String, load: impl FnOnce() -> (String, Source)) -> usize {
        if let Some(&i) = self.image_keys.get(&key) {
            return i;
        }
        let i = self.images.len();
        self.images.push(load());
        self.image_keys.insert(key, i);
        i
    }

    /// The table index of the texture of image `image` with these wraps.
    fn texture(&mut self, image: usize, wrap_u: Wrap, wrap_v: Wrap) -> u32 {
        let key = (image, wrap_u, wrap_v);
        let i = self
            .textures
            .iter()
            .position(|t| *t == key)
            .unwrap_or_else(|| {
                self.textures.push(key);
                self.textures.len() - 1
            });
        i as u32
    }

    /// Reads every image (in parallel), then builds the table: textures whose image
    /// could not be read are removed and the slots naming them emptied.
    fn finish(mut self) -> (Looks, Vec<Warning>) {
        let options = self.options;
        let processed: Vec<Result<Processed, String>> = self
            .images
            .par_iter()
            .map(|(_, source)| match source {
                Source::Bytes(bytes) => process_image(bytes, &options),
                Source::Missing(reason) => Err(reason.clone()),
            })
            .collect();
        for ((name, _), p) in self.images.iter().zip(&processed) {
            match p {
                Err(reason) => self.warnings.push(Warning::TextureMissing {
                    texture: name.clone(),
                    reason: reason.clone(),
                }),
                Ok(p) if matches!(p.format, ImageFormat::Ktx2 | ImageFormat::WebP) => {
                    self.warnings.push(Warning::TextureCopied {
                        texture: name.clone(),
                        format: format!("{:?}", p.format),
                    })
                }
                Ok(_) => {}
            }
        }
        // Old texture index -> new (None: its image is missing).
        let mut remap = Vec::with_capacity(self.textures.len());
        let mut textures = Vec::new();
        let mut images: Vec<StoredImage> = Vec::new();
        for &(image, wrap_u, wrap_v) in &self.textures {
            let Ok(p) = &processed[image] else {
                remap.push(None);
                continue;
            };
            remap.push(Some(textures.len() as u32));
            for s in &p.stored {
                if !images.iter().any(|i| i.name == s.name) {
                    images.push(s.clone());
                }
            }
            let mut names = p.stored.iter().map(|s| TextureData::File(s.name.clone()));
            textures.push(Texture {
                name: self.images[image].0.clone(),
                format: p.format,
                width: p.width,
                height: p.height,
                data: names.next().expect("an image is stored"),
                mips: names.collect(),
                wrap_u,
                wrap_v,
            });
        }
        for m in &mut self.materials {
            for slot in m.texture_slots_mut() {
                if let Some(s) = *slot {
                    *slot = remap[s.texture as usize].map(|texture| TextureSlot { texture, ..s });
                }
            }
        }
        if !self.dropped.is_empty() {
            self.warnings.push(Warning::MaterialFeaturesDropped {
                names: std::mem::take(&mut self.dropped),
            });
        }
        let looks = Looks {
            table: MaterialTable {
                materials: self.materials,
                textures,
            },
            images,
            embed: self.options.embed,
            uv_transforms: self.uv_transforms,
        };
        (looks, self.warnings)
    }
}

/// The content-hash file name of `bytes` in `format`.
fn hash_name(bytes: &[u8], format: ImageFormat) -> String {
    let hash = blake3::hash(bytes).to_hex();
    format!("{}.{}", &hash.as_str()[..32], format.extension())
}

/// Reads one image: its format and size, and the bytes to store (the source's,
/// or resampled ones where the options ask for them).
fn process_image(bytes: &[u8], options: &TextureConfig) -> Result<Processed, String> {
    let Some(format) = ImageFormat::sniff(bytes) else {
        return Err("not a PNG, JPEG, KTX2 or WebP image".into());
    };
    let copy = |width, height| Processed {
        format,
        width,
        height,
        stored: vec![StoredImage {
            name: hash_name(bytes, format),
            bytes: bytes.to_vec(),
        }],
    };
    let codec = match format {
        ImageFormat::Png => image::ImageFormat::Png,
        ImageFormat::Jpeg => image::ImageFormat::Jpeg,
        ImageFormat::Ktx2 => {
            let word = |at: usize| {
                bytes
                    .get(at..at + 4)
                    .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            };
            return Ok(copy(word(20), word(24)));
        }
        ImageFormat::WebP => return Ok(copy(0, 0)),
    };
    let reader = image::ImageReader::with_format(Cursor::new(bytes), codec);
    let (width, height) = reader.into_dimensions().map_err(|e| e.to_string())?;
    let too_large = options.max_size.is_some_and(|m| width.max(height) > m);
    if !too_large && !options.mips {
        return Ok(copy(width, height));
    }
    let mut img = image::load_from_memory_with_format(bytes, codec).map_err(|e| e.to_string())?;
    if let Some(max) = options.max_size.filter(|_| too_large) {
        let max = max.max(1);
        let scale = f64::from(max) / f64::from(width.max(height));
        let w = ((f64::from(width) * scale).round() as u32).clamp(1, max);
        let h = ((f64::from(height) * scale).round() as u32).clamp(1, max);
        img = img.resize_exact(w, h, image::imageops::FilterType::CatmullRom);
    }
    let mut stored = vec![encode_image(&img, format)?];
    let (w0, h0) = (img.width(), img.height());
    if options.mips {
        while img.width() > 1 || img.height() > 1 {
            let (w, h) = ((img.width() / 2).max(1), (img.height() / 2).max(1));
            img = img.resize_exact(w, h, image::imageops::FilterType::Triangle);
            stored.push(encode_image(&img, format)?);
        }
    }
    Ok(Processed {
        format,
        width: w0,
        height: h0,
        stored,
    })
}

/// `img` encoded in `format` (PNG, or JPEG at quality 90), named by its hash.
fn encode_image(img: &image::DynamicImage, format: ImageFormat) -> Result<StoredImage, String> {
    let mut out = Vec::new();
    let written = match format {
        ImageFormat::Jpeg => {
            // JPEG has no alpha: an image with some is written as RGB.
            let rgb = image::DynamicImage::ImageRgb8(img.to_rgb8());
            let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90);
            rgb.write_with_encoder(encoder)
        }
        _ => img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png),
    };
    written.map_err(|e| e.to_string())?;
    Ok(StoredImage {
        name: hash_name(&out, format),
        bytes: out,
    })
}

/// The material extensions kept (fully or in part); any other is named as dropped.
const KEPT_EXTENSIONS: &[&str] = &[
    "KHR_materials_emissive_strength",
    "KHR_materials_unlit",
    "KHR_materials_ior",
    "KHR_materials_transmission",
    "KHR_materials_volume",
    "KHR_materials_specular",
    "KHR_materials_clearcoat",
    "KHR_materials_anisotropy",
];

fn f32_of(v: Option<&Value>) -> Option<f32> {
    v.and_then(Value::as_f64).map(|x| x as f32)
}

fn vec_of<const N: usize>(v: Option<&Value>) -> Option<[f32; N]> {
    let a = v?.as_array()?;
    if a.len() != N {
        return None;
    }
    let mut out = [0.0; N];
    for (o, x) in out.iter_mut().zip(a) {
        *o = x.as_f64()? as f32;
    }
    Some(out)
}

/// A `KHR_texture_transform` object (defaults filled in) and its texcoord override.
fn texture_transform(ext: Option<&Value>) -> (Option<UvTransform>, Option<u32>) {
    let Some(t) = ext else { return (None, None) };
    let transform = UvTransform {
        offset: vec_of(t.get("offset")).unwrap_or([0.0, 0.0]),
        rotation: f32_of(t.get("rotation")).unwrap_or(0.0),
        scale: vec_of(t.get("scale")).unwrap_or([1.0, 1.0]),
    };
    let texcoord = t.get("texCoord").and_then(Value::as_u64).map(|t| t as u32);
    (Some(transform), texcoord)
}

fn wrap_of(mode: gltf::texture::WrappingMode) -> Wrap {
    match mode {
        gltf::texture::WrappingMode::ClampToEdge => Wrap::ClampToEdge,
        gltf::texture::WrappingMode::MirroredRepeat => Wrap::MirroredRepeat,
        gltf::texture::WrappingMode::Repeat => Wrap::Repeat,
    }
}

/// The glTF side of [`gather_looks`].
fn gltf_looks(path: &Path, used: &[&str], b: &mut Builder) -> Result<(), ImportError> {
    let file = load_gltf_buffers(path, true)?;
    let src = GltfImages {
        file: &file,
        base: path.parent().unwrap_or(Path::new(".")),
    };
    let mut names_seen: Vec<String> = Vec::new();
    let defined = file.document.materials().map(|m| (m.index(), m));
    for (index, m) in defined {
        let name = match (index, m.name()) {
            (_, Some(n)) => n.to_owned(),
            (Some(i), None) => format!("material{i}"),
            (None, None) => "default".to_owned(),
        };
        if !used.contains(&name.as_str()) || names_seen.contains(&name) {
            continue;
        }
        names_seen.push(name.clone());
        let mut out = Material::named(name.clone());
        let raw = raw_material(&file.document, index);
        let pbr = m.pbr_metallic_roughness();
        out.base_color = pbr.base_color_factor();
        out.metallic = pbr.metallic_factor();
        out.roughness = pbr.roughness_factor();
        let slots = src.material_slots(&m, &raw, &mut out, b);
        place_slots(&name, slots, &mut out, b);
        out.emissive = m.emissive_factor();
        out.alpha_mode = match m.alpha_mode() {
            gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
            gltf::material::AlphaMode::Mask => AlphaMode::Mask,
            gltf::material::AlphaMode::Blend => AlphaMode::Blend,
        };
        out.alpha_cutoff = m.alpha_cutoff().unwrap_or(0.5);
        out.double_sided = m.double_sided();
        read_extensions(&raw, &mut out, b);
        sanitize(&mut out, b);
        b.materials.push(out);
    }
    // Primitives without a material get no entry: the renderer's default draws
    // them, and a file whose source defines no material keeps its bytes.
    Ok(())
}

/// A texture slot of a material (its index in [`Material::texture_slots_mut`]) with
/// the transform its texture gave.
type SlotWithTransform = (usize, TextureSlot, Option<UvTransform>);

/// One transform shared by every texture goes into the uvs (recorded for material
/// `name`); otherwise each slot keeps its own.
fn place_slots(name: &str, slots: Vec<SlotWithTransform>, out: &mut Material, b: &mut Builder) {
    let first = slots.first().and_then(|s| s.2);
    let shared = slots.iter().all(|s| s.2 == first);
    if let (true, Some(t)) = (shared, first) {
        if t != UvTransform::IDENTITY {
            b.uv_transforms.push((name.to_owned(), t));
        }
    }
    for (k, mut s, t) in slots {
        if !shared {
            s.transform = t.filter(|t| *t != UvTransform::IDENTITY);
        }
        *out.texture_slots_mut()[k] = Some(s);
    }
}

/// A loaded glTF file and the folder its relative URIs start from.
struct GltfImages<'a> {
    file: &'a LoadedGltf,
    base: &'a Path,
}

impl GltfImages<'_> {
    /// Material `m`'s textures as slots, in slot order (base colour, metallic-
    /// roughness, normal, occlusion, emissive), each with its transform from `raw`
    /// (the material's JSON); the normal scale and occlusion strength go into `out`.
    fn material_slots(
        &self,
        m: &gltf::Material<'_>,
        raw: &Value,
        out: &mut Material,
        b: &mut Builder,
    ) -> Vec<SlotWithTransform> {
        let pbr = m.pbr_metallic_roughness();
        let mut slots: Vec<SlotWithTransform> = Vec::new();
        let tt = "KHR_texture_transform";
        let mut add = |b: &mut Builder, k: usize, texture, texcoord, pointer: &str| {
            let (s, t) = self.slot(b, texture, texcoord, ext_at(raw, pointer, tt));
            slots.push((k, s, t));
        };
        if let Some(i) = pbr.base_color_texture() {
            let at = "/pbrMetallicRoughness/baseColorTexture";
            add(b, 0, i.texture(), i.tex_coord(), at);
        }
        if let Some(i) = pbr.metallic_roughness_texture() {
            let at = "/pbrMetallicRoughness/metallicRoughnessTexture";
            add(b, 1, i.texture(), i.tex_coord(), at);
        }
        if let Some(n) = m.normal_texture() {
            out.normal_scale = n.scale();
            add(b, 2, n.texture(), n.tex_coord(), "/normalTexture");
        }
        if let Some(o) = m.occlusion_texture() {
            out.occlusion_strength = o.strength();
            add(b, 3, o.texture(), o.tex_coord(), "/occlusionTexture");
        }
        if let Some(i) = m.emissive_texture() {
            add(b, 4, i.texture(), i.tex_coord(), "/emissiveTexture");
        }
        slots
    }

    /// A glTF texture as a slot: its image read once (by image index), its
    /// sampler's wraps, its transform as given.
    fn slot(
        &self,
        b: &mut Builder,
        texture: gltf::Texture<'_>,
        texcoord: u32,
        ext: Option<&Value>,
    ) -> (TextureSlot, Option<UvTransform>) {
        let image = texture.source();
        let key = format!("image{}", image.index());
        let index = b.image(key, || self.image_source(&image));
        let sampler = texture.sampler();
        let t = b.texture(index, wrap_of(sampler.wrap_s()), wrap_of(sampler.wrap_t()));
        let (transform, over) = texture_transform(ext);
        let slot = TextureSlot {
            texture: t,
            texcoord: over.unwrap_or(texcoord),
            transform: None,
        };
        (slot, transform)
    }

    /// An image's name and bytes: from its buffer view, or from its URI (a file
    /// beside the glTF or a data URI); missing, with the reason, when neither reads.
    fn image_source(&self, image: &gltf::Image<'_>) -> (String, Source) {
        let doc = &self.file.document;
        let json = doc.as_json().images.get(image.index());
        let view = json
            .and_then(|j| j.buffer_view)
            .and_then(|v| doc.views().nth(v.value()));
        let uri = json.and_then(|j| j.uri.as_deref());
        let named = || {
            image
                .name()
                .map_or_else(|| format!("image{}", image.index()), str::to_owned)
        };
        match (view, uri) {
            (Some(view), _) => {
                let data = self.file.buffers.get(view.buffer().index());
                let range = view.offset()..view.offset() + view.length();
                match data.and_then(|d| d.get(range)) {
                    Some(bytes) => (named(), Source::Bytes(bytes.to_vec())),
                    None => (
                        named(),
                        Source::Missing("its buffer view is out of bounds".into()),
                    ),
                }
            }
            (None, Some(uri)) => {
                let name = if uri.starts_with("data:") {
                    format!("image{} (data URI)", image.index())
                } else {
                    uri.to_owned()
                };
                match load_uri(self.base, uri) {
                    Ok(bytes) => (name, Source::Bytes(bytes)),
                    Err(reason) => (name, Source::Missing(reason)),
                }
            }
            (None, None) => (named(), Source::Missing("it names no data".into())),
        }
    }
}

/// A value in 0..=1 (NaN as 0).
fn unit(v: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, 1.0)
    }
}

/// A finite value of at least 0 (NaN and below 0 as 0, infinity as the largest).
fn non_negative(v: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(0.0, f32::MAX)
    }
}

/// Brings a source's values into the ranges the format's check accepts (glTF
/// allows a few it gives no meaning, such as an alpha cutoff past 1, and a number
/// too large for an f32 reads as infinity), so a cook never writes a file its
/// reader refuses. A texture slot on a uv set past 7 is dropped and said.
fn sanitize(m: &mut Material, b: &mut Builder) {
    m.base_color = m.base_color.map(unit);
    m.metallic = unit(m.metallic);
    m.roughness = unit(m.roughness);
    m.occlusion_strength = unit(m.occlusion_strength);
    m.alpha_cutoff = unit(m.alpha_cutoff);
    m.emissive = m.emissive.map(non_negative);
    m.emissive_strength = non_negative(m.emissive_strength);
    if !m.normal_scale.is_finite() {
        m.normal_scale = 1.0;
    }
    for slot in m.texture_slots_mut() {
        if slot.is_some_and(|s| s.texcoord > 7) {
            *slot = None;
            b.drop_feature("texCoord past 7");
        }
        if let Some(t) = slot.as_mut().and_then(|s| s.transform.as_mut()) {
            let parts = [t.offset[0], t.offset[1], t.rotation, t.scale[0], t.scale[1]];
            if !parts.iter().all(|v| v.is_finite()) {
                *t = UvTransform::IDENTITY;
            }
        }
    }
    let x = &mut m.extras;
    for v in [
        &mut x.transmission,
        &mut x.specular,
        &mut x.clearcoat,
        &mut x.clearcoat_roughness,
        &mut x.anisotropy,
    ] {
        *v = v.map(unit);
    }
    for v in [&mut x.ior, &mut x.thickness, &mut x.attenuation_distance] {
        *v = v.map(non_negative);
    }
    for c in [&mut x.attenuation_color, &mut x.specular_color] {
        *c = c.map(|c| c.map(non_negative));
    }
    if x.anisotropy_rotation.is_some_and(|r| !r.is_finite()) {
        x.anisotropy_rotation = Some(0.0);
    }
}

/// A material's glTF JSON as written in the file, extensions included. The gltf
/// crate moves an extension it knows (a feature of that crate, which any other crate
/// of the build may turn on: Bevy's glTF loader does) out of `extension_value` into a
/// typed field; serialising the material puts every extension back under its name,
/// so what the cook reads does not depend on the features of the build.
fn raw_material(doc: &gltf::Document, index: Option<usize>) -> Value {
    index
        .and_then(|i| doc.as_json().materials.get(i))
        .and_then(|m| gltf::json::serialize::to_value(m).ok())
        .unwrap_or(Value::Null)
}

/// The extension `name` of the texture reference at `pointer` in a material's JSON.
fn ext_at<'v>(raw: &'v Value, pointer: &str, name: &str) -> Option<&'v Value> {
    raw.pointer(pointer)?.get("extensions")?.get(name)
}

/// The material extensions Bevy's standard material can show, from the raw JSON;
/// the rest named as dropped.
fn read_extensions(raw: &Value, out: &mut Material, b: &mut Builder) {
    let Some(exts) = raw.get("extensions").and_then(Value::as_object) else {
        return;
    };
    for name in exts.keys() {
        if !KEPT_EXTENSIONS.contains(&name.as_str()) {
            b.drop_feature(name.clone());
        }
    }
    let ext = |name: &str| exts.get(name);
    let textures_dropped = |b: &mut Builder, name: &str, keys: &[&str]| {
        if let Some(e) = ext(name) {
            for k in keys {
                if e.get(*k).is_some() {
                    b.drop_feature(format!("{name}.{k}"));
                }
            }
        }
    };
    if let Some(e) = ext("KHR_materials_emissive_strength") {
        out.emissive_strength = f32_of(e.get("emissiveStrength")).unwrap_or(1.0);
    }
    out.unlit = ext("KHR_materials_unlit").is_some();
    let x: &mut MaterialExtras = &mut out.extras;
    if let Some(e) = ext("KHR_materials_ior") {
        x.ior = Some(f32_of(e.get("ior")).unwrap_or(1.5));
    }
    if let Some(e) = ext("KHR_materials_transmission") {
        x.transmission = Some(f32_of(e.get("transmissionFactor")).unwrap_or(0.0));
    }
    if let Some(e) = ext("KHR_materials_volume") {
        x.thickness = Some(f32_of(e.get("thicknessFactor")).unwrap_or(0.0));
        x.attenuation_distance = f32_of(e.get("attenuationDistance"));
        x.attenuation_color = vec_of(e.get("attenuationColor"));
    }
    if let Some(e) = ext("KHR_materials_specular") {
        x.specular = Some(f32_of(e.get("specularFactor")).unwrap_or(1.0));
        x.specular_color = vec_of(e.get("specularColorFactor"));
    }
    if let Some(e) = ext("KHR_materials_clearcoat") {
        x.clearcoat = Some(f32_of(e.get("clearcoatFactor")).unwrap_or(0.0));
        x.clearcoat_roughness = Some(f32_of(e.get("clearcoatRoughnessFactor")).unwrap_or(0.0));
    }
    if let Some(e) = ext("KHR_materials_anisotropy") {
        x.anisotropy = Some(f32_of(e.get("anisotropyStrength")).unwrap_or(0.0));
        x.anisotropy_rotation = Some(f32_of(e.get("anisotropyRotation")).unwrap_or(0.0));
    }
    textures_dropped(b, "KHR_materials_transmission", &["transmissionTexture"]);
    textures_dropped(b, "KHR_materials_volume", &["thicknessTexture"]);
    textures_dropped(
        b,
        "KHR_materials_specular",
        &["specularTexture", "specularColorTexture"],
    );
    textures_dropped(
        b,
        "KHR_materials_clearcoat",
        &[
            "clearcoatTexture",
            "clearcoatRoughnessTexture",
            "clearcoatNormalTexture",
        ],
    );
    textures_dropped(b, "KHR_materials_anisotropy", &["anisotropyTexture"]);
}

/// The OBJ side of [`gather_looks`]: each material library the file names (those
/// that read), `Kd`, `map_Kd`, `map_Bump` / `bump` and `d`. (A library that does
/// not read is already the importer's warning.)
fn obj_looks(path: &Path, used: &[&str], b: &mut Builder) {
    let Ok(text) = std::fs::read(path) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    let base = path.parent().unwrap_or(Path::new("."));
    for line in text.lines() {
        let Some(lib) = line.trim_start().strip_prefix("mtllib ") else {
            continue;
        };
        let lib = base.join(lib.trim());
        let Ok((materials, _)) = tobj::load_mtl(&lib) else {
            continue;
        };
        let folder = lib.parent().unwrap_or(base).to_owned();
        for m in materials {
            if !used.contains(&m.name.as_str()) || b.materials.iter().any(|o| o.name == m.name) {
                continue;
            }
            let mut out = Material::named(m.name.clone());
            // MTL has no metalness; a diffuse surface is a rough dielectric.
            out.metallic = 0.0;
            out.roughness = 1.0;
            let kd = m.diffuse.unwrap_or([1.0; 3]);
            let alpha = m.dissolve.unwrap_or(1.0).clamp(0.0, 1.0);
            out.base_color = [kd[0], kd[1], kd[2], alpha];
            if alpha < 1.0 {
                out.alpha_mode = AlphaMode::Blend;
            }
            let texture = |b: &mut Builder, spec: &Option<String>| {
                // Options (`-bm 1.0 file.png`) come first: the file is the last word.
                let file = spec.as_deref()?.split_whitespace().last()?.to_owned();
                let full = folder.join(&file);
                let key = full.to_string_lossy().into_owned();
                let image = b.image(key, || match std::fs::read(&full) {
                    Ok(bytes) => (file.clone(), Source::Bytes(bytes)),
                    Err(e) => (
                        file.clone(),
                        Source::Missing(format!("{}: {e}", full.display())),
                    ),
                });
                let texture = b.texture(image, Wrap::Repeat, Wrap::Repeat);
                Some(TextureSlot {
                    texture,
                    texcoord: 0,
                    transform: None,
                })
            };
            out.base_color_texture = texture(b, &m.diffuse_texture);
            out.normal_texture = texture(b, &m.normal_texture);
            sanitize(&mut out, b);
            b.materials.push(out);
        }
    }
}

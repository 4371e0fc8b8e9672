//! Setup the asset tests share.

use std::path::Path;

use bevy::asset::AssetPlugin;
use bevy::camera::CameraPlugin;
use bevy::mesh::MeshPlugin;
use bevy::prelude::*;
use bevy::transform::TransformPlugin;
use farsight_bevy::prelude::*;

/// A windowless app with the farsight plugin whose asset folder is `root`.
pub fn asset_app(root: &Path) -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin {
            file_path: root.to_string_lossy().into_owned(),
            ..default()
        },
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
        FarsightPlugin,
    ));
    app
}

/// A PNG of `size` x `size` pixels, a gradient coloured by `seed`.
pub fn png(size: u32, seed: u8) -> Vec<u8> {
    let img = image::RgbaImage::from_fn(size, size, |x, y| {
        image::Rgba([x as u8 * 16, y as u8 * 16, seed, 255])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

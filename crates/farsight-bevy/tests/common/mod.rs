//! Setup the asset tests share (a module of each test program that uses it).

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

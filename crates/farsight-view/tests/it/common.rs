//! Helpers the view tests share.

use farsight_view::{CameraStore, FrameContext, RenderConfig};

/// A frame's context with the scene cameras only: no host view, world epoch 0, one
/// eye (what most tests pass to `VisibilitySystem::update`).
pub fn frame_context<'a>(
    frame: u64,
    cameras: &'a CameraStore,
    settings: &'a RenderConfig,
) -> FrameContext<'a> {
    FrameContext {
        frame,
        host_view: None,
        cameras,
        world_epoch: 0,
        settings,
        stereo_eyes: None,
    }
}

//! What every example shares: its command line, the app with or without a window,
//! the headless screenshot (render to an image, Bevy's `Readback`, PNG, exit) and a
//! flying camera.
//!
//! A screenshot's `--frames` count only frames drawn with every pipeline compiled:
//! Bevy compiles pipelines in the background (seconds under a software adapter) and
//! skips what they draw until then, so frames counted from the start could save a
//! picture of nothing. A picture whose pixels are all the same (nothing drawn) is
//! written, then reported as an error.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::app::ScheduleRunnerPlugin;
use bevy::asset::{AssetLoadFailedEvent, AssetPlugin};
use bevy::camera::RenderTarget;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::input::mouse::AccumulatedMouseMotion;
use bevy::prelude::*;
use bevy::render::gpu_readback::{Readback, ReadbackComplete};
use bevy::render::render_resource::{
    CachedPipelineState, PipelineCache, PipelineDescriptor, TextureFormat, TextureUsages,
};
use bevy::render::{Render, RenderApp, RenderSystems};
use bevy::window::{ExitCondition, WindowResolution};
use bevy::winit::WinitPlugin;
pub use farsight_bevy::LEVEL_TINTS;
use farsight_bevy::{BuildingAsset, BuildingLevelTint};

/// The command line every example takes.
#[derive(Clone, Debug)]
pub struct Args {
    /// Render `frames` frames without a window, save this PNG and exit.
    pub screenshot: Option<PathBuf>,
    pub frames: u32,
    pub width: u32,
    pub height: u32,
    /// Flags only one example knows, left for it.
    pub rest: Vec<String>,
}

const USAGE: &str = "options: [--screenshot PATH] [--frames N] [--size WxH]";

impl Args {
    /// Parses `std::env::args`; a bad value ends the program with a message.
    pub fn parse(known: &[&str]) -> Args {
        match Self::try_parse(std::env::args().skip(1), known) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("error: {e}\n{USAGE} {}", known.join(" "));
                std::process::exit(2);
            }
        }
    }

    fn try_parse(mut it: impl Iterator<Item = String>, known: &[&str]) -> Result<Args, String> {
        let mut a = Args {
            screenshot: None,
            frames: 8,
            width: 1280,
            height: 720,
            rest: Vec::new(),
        };
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--screenshot" => a.screenshot = Some(PathBuf::from(value()?)),
                "--frames" => {
                    let v = value()?;
                    a.frames =
                        v.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                            format!("--frames wants a count above 0, found {v:?}")
                        })?;
                }
                "--size" => {
                    let v = value()?;
                    let (w, h) = v
                        .split_once('x')
                        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                        .filter(|&(w, h): &(u32, u32)| {
                            (16..=8192).contains(&w) && (16..=8192).contains(&h)
                        })
                        .ok_or_else(|| format!("--size wants WxH from 16 to 8192, found {v:?}"))?;
                    a.width = w;
                    a.height = h;
                }
                f if known.contains(&f) => a.rest.push(f.to_string()),
                // A known flag spelt `--flag=` in `known` takes a value.
                f if known.contains(&format!("{f}=").as_str()) => {
                    let v = value()?;
                    a.rest.push(f.to_string());
                    a.rest.push(v);
                }
                f => return Err(format!("unknown option {f:?}")),
            }
        }
        if let Some(p) = &a.screenshot {
            // Found before any rendering starts, not after N frames.
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            if dir.is_some_and(|d| !d.is_dir()) {
                return Err(format!(
                    "cannot write {}: its folder does not exist",
                    p.display()
                ));
            }
        }
        Ok(a)
    }

    pub fn has(&self, flag: &str) -> bool {
        self.rest.iter().any(|f| f == flag)
    }

    /// The value given to a flag declared as `--flag=`.
    pub fn value(&self, flag: &str) -> Option<&str> {
        let i = self.rest.iter().position(|f| f == flag)?;
        self.rest.get(i + 1).map(String::as_str)
    }
}

/// The app: a window, or none with `--screenshot`.
pub fn app(args: &Args, title: &str) -> App {
    app_with_assets(args, title, None)
}

/// [`app`] with the asset folder at `assets` (Bevy's default, `assets/`, when `None`).
pub fn app_with_assets(args: &Args, title: &str, assets: Option<&std::path::Path>) -> App {
    let mut app = App::new();
    let asset_plugin = AssetPlugin {
        file_path: assets.map_or_else(
            || AssetPlugin::default().file_path,
            |p| p.to_string_lossy().into_owned(),
        ),
        ..default()
    };
    match &args.screenshot {
        None => {
            app.add_plugins(
                DefaultPlugins
                    .set(WindowPlugin {
                        primary_window: Some(Window {
                            title: title.into(),
                            resolution: WindowResolution::new(args.width, args.height),
                            ..default()
                        }),
                        ..default()
                    })
                    .set(asset_plugin),
            );
        }
        Some(path) => {
            app.add_plugins((
                DefaultPlugins
                    .set(WindowPlugin {
                        primary_window: None,
                        exit_condition: ExitCondition::DontExit,
                        ..default()
                    })
                    .set(asset_plugin)
                    .disable::<WinitPlugin>(),
                ScheduleRunnerPlugin::run_loop(Duration::ZERO),
            ));
            let image = {
                let mut images = app.world_mut().resource_mut::<Assets<Image>>();
                let mut img = Image::new_target_texture(
                    args.width,
                    args.height,
                    TextureFormat::Rgba8UnormSrgb,
                    None,
                );
                img.texture_descriptor.usage |= TextureUsages::COPY_SRC;
                images.add(img)
            };
            let ready = PipelinesReady::default();
            let Some(render_app) = app.get_sub_app_mut(RenderApp) else {
                eprintln!("error: no renderer: a screenshot needs Bevy's render app");
                std::process::exit(1);
            };
            render_app
                .insert_resource(ready.clone())
                .add_systems(Render, watch_pipelines.in_set(RenderSystems::Cleanup));
            app.insert_resource(ready)
                .insert_resource(Screenshot {
                    image,
                    path: path.clone(),
                    frames: args.frames,
                    width: args.width,
                    height: args.height,
                    frame: 0,
                    updates: 0,
                    launched: Instant::now(),
                    started: None,
                    requested: false,
                })
                .add_systems(Last, count_frames);
        }
    }
    app
}

/// The headless capture: the image the camera renders into and where it goes.
#[derive(Resource)]
pub struct Screenshot {
    pub image: Handle<Image>,
    path: PathBuf,
    frames: u32,
    width: u32,
    height: u32,
    /// Frames drawn with every pipeline ready, in a row.
    frame: u32,
    /// App updates since the start.
    updates: u32,
    launched: Instant,
    started: Option<Instant>,
    requested: bool,
}

/// Whether the render world's pipeline cache has every pipeline queued so far
/// compiled, and at least one render pipeline (the scene's have been asked for);
/// written in the render world, read in the main one.
#[derive(Resource, Clone, Default)]
struct PipelinesReady(Arc<AtomicBool>);

/// How long the pipelines may take to compile before the screenshot gives up.
const PIPELINE_TIMEOUT: Duration = Duration::from_secs(300);

fn watch_pipelines(cache: Res<PipelineCache>, ready: Res<PipelinesReady>) {
    let waiting = cache.waiting_pipelines().next().is_some();
    let drawn = cache.pipelines().any(|p| {
        matches!(
            p.descriptor,
            PipelineDescriptor::RenderPipelineDescriptor(_)
        ) && matches!(p.state, CachedPipelineState::Ok(_))
    });
    ready.0.store(drawn && !waiting, Ordering::Relaxed);
}

/// The examples' camera at `t`, flown by `fly`: a tonemapper without lookup tables
/// (the examples build without `tonemapping_luts`), no MSAA, rendering into the
/// screenshot's image or the window.
pub fn camera(fly: FlyCamera, t: Transform, shot: Option<&Screenshot>) -> impl Bundle {
    (
        Camera3d::default(),
        Tonemapping::AcesFitted,
        Msaa::Off,
        t,
        fly,
        render_target(shot),
    )
}

/// What a camera renders into: the screenshot's image, else the window.
pub fn render_target(shot: Option<&Screenshot>) -> RenderTarget {
    match shot {
        Some(s) => RenderTarget::Image(s.image.clone().into()),
        None => RenderTarget::default(),
    }
}

/// An example that loads what it draws in the background (textures) holds the
/// screenshot's frame count at zero while this says `true`.
#[derive(Resource, Default)]
pub struct ScreenshotHold(pub bool);

fn count_frames(
    mut commands: Commands,
    mut shot: ResMut<Screenshot>,
    ready: Res<PipelinesReady>,
    hold: Option<Res<ScreenshotHold>>,
) {
    shot.updates += 1;
    if !shot.requested {
        if !ready.0.load(Ordering::Relaxed) || hold.is_some_and(|h| h.0) {
            // A pipeline the scene asked for is still compiling: count again once
            // it is ready, so the last `frames` frames draw everything.
            shot.frame = 0;
            shot.started = None;
            if shot.launched.elapsed() > PIPELINE_TIMEOUT {
                eprintln!(
                    "error: the render pipelines were still compiling after {} s ({} frames); no picture written",
                    PIPELINE_TIMEOUT.as_secs(),
                    shot.updates
                );
                std::process::exit(1);
            }
            return;
        }
        shot.frame += 1;
        if shot.frame == 2 {
            // The first frame with every pipeline may still upload: time from the second.
            shot.started = Some(Instant::now());
        }
    } else {
        shot.frame += 1;
    }
    if shot.frame >= shot.frames && !shot.requested {
        shot.requested = true;
        commands
            .spawn(Readback::texture(shot.image.clone()))
            .observe(save_png);
    }
    if shot.frame > shot.frames + 600 {
        eprintln!("error: the image was never read back from the GPU");
        std::process::exit(1);
    }
}

fn save_png(
    ev: On<ReadbackComplete>,
    mut commands: Commands,
    shot: Res<Screenshot>,
    mut exit: MessageWriter<AppExit>,
) {
    commands.entity(ev.entity).despawn();
    let (w, h) = (shot.width as usize, shot.height as usize);
    // Rows come padded to the copy alignment of 256 bytes.
    let stride = (w * 4).div_ceil(256) * 256;
    if ev.data.len() < stride * (h - 1) + w * 4 {
        eprintln!(
            "error: read back {} bytes for a {w}x{h} image",
            ev.data.len()
        );
        std::process::exit(1);
    }
    let mut rgba = Vec::with_capacity(w * h * 4);
    for row in 0..h {
        rgba.extend_from_slice(&ev.data[row * stride..row * stride + w * 4]);
    }
    if let Err(e) = write_png(&shot.path, shot.width, shot.height, &rgba) {
        eprintln!("error: cannot write {}: {e}", shot.path.display());
        std::process::exit(1);
    }
    if let Some(pixel) = blank(&rgba) {
        eprintln!(
            "error: {} is blank: every pixel is {pixel:?} (RGBA), nothing was drawn",
            shot.path.display()
        );
        std::process::exit(1);
    }
    let timed = shot.frame.saturating_sub(2).max(1);
    let ms = shot
        .started
        .map_or(0.0, |t| t.elapsed().as_secs_f64() * 1000.0 / timed as f64);
    println!(
        "wrote {} ({}x{}, {} frames, {ms:.1} ms a frame after the first)",
        shot.path.display(),
        w,
        h,
        shot.frame
    );
    exit.write(AppExit::Success);
}

/// The one colour of a picture whose pixels are all the same (fully transparent when
/// nothing rendered into it at all), `None` for a picture with anything drawn.
fn blank(rgba: &[u8]) -> Option<[u8; 4]> {
    let mut px = rgba.chunks_exact(4);
    let first: [u8; 4] = px.next()?.try_into().ok()?;
    px.all(|p| p == first).then_some(first)
}

fn write_png(path: &std::path::Path, w: u32, h: u32, rgba: &[u8]) -> std::io::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, w, h);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(std::io::Error::other)?;
    writer
        .write_image_data(rgba)
        .map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// A flying camera: WASD to move, Q/E down and up, Shift faster, the mouse (with
/// the right button held) to look.
#[derive(Component)]
pub struct FlyCamera {
    pub speed: f32,
    pub yaw: f32,
    pub pitch: f32,
}

impl FlyCamera {
    pub fn looking(from: Vec3, to: Vec3, speed: f32) -> (Self, Transform) {
        let t = Transform::from_translation(from).looking_at(to, Vec3::Y);
        let (yaw, pitch, _) = t.rotation.to_euler(EulerRot::YXZ);
        (Self { speed, yaw, pitch }, t)
    }
}

pub fn fly_camera(
    time: Res<Time>,
    keys: Res<ButtonInput<KeyCode>>,
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    mut q: Query<(&mut FlyCamera, &mut Transform)>,
) {
    for (mut fly, mut t) in &mut q {
        if buttons.pressed(MouseButton::Right) {
            fly.yaw -= motion.delta.x * 0.003;
            fly.pitch = (fly.pitch - motion.delta.y * 0.003).clamp(-1.5, 1.5);
            t.rotation = Quat::from_euler(EulerRot::YXZ, fly.yaw, fly.pitch, 0.0);
        }
        let mut dir = Vec3::ZERO;
        let (f, r) = (t.forward().as_vec3(), t.right().as_vec3());
        for (k, d) in [
            (KeyCode::KeyW, f),
            (KeyCode::KeyS, -f),
            (KeyCode::KeyD, r),
            (KeyCode::KeyA, -r),
            (KeyCode::KeyE, Vec3::Y),
            (KeyCode::KeyQ, -Vec3::Y),
        ] {
            if keys.pressed(k) {
                dir += d;
            }
        }
        let boost = if keys.pressed(KeyCode::ShiftLeft) {
            4.0
        } else {
            1.0
        };
        t.translation += dir.normalize_or_zero() * fly.speed * boost * time.delta_secs();
    }
}

/// One rough material per [`LEVEL_TINTS`] colour (green, yellow, red: the pixel
/// checks of `.ci/screenshots` look for them), for what is not a building piece.
pub fn level_tints(materials: &mut Assets<StandardMaterial>) -> [Handle<StandardMaterial>; 3] {
    LEVEL_TINTS.map(|c| {
        materials.add(StandardMaterial {
            base_color: c,
            perceptual_roughness: 0.9,
            ..default()
        })
    })
}

/// T turns the building pieces' level tint on and off.
pub fn toggle_building_tint(keys: Res<ButtonInput<KeyCode>>, mut tint: ResMut<BuildingLevelTint>) {
    if keys.just_pressed(KeyCode::KeyT) {
        tint.on = !tint.on;
    }
}

/// A building file that fails to load is said once, with its error, and the app
/// exits with an error.
pub fn report_building_failures(
    mut events: MessageReader<AssetLoadFailedEvent<BuildingAsset>>,
    mut exit: MessageWriter<AppExit>,
) {
    for e in events.read() {
        eprintln!("error: {}: {}", e.path, e.error);
        exit.write(AppExit::error());
    }
}

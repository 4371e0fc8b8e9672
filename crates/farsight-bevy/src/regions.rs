//! Region streaming (docs/design/region-streaming-and-cluster-lod.md) in Bevy: farsight-stream's `RegionWorld` reads region
//! files on its own loader threads; what it decides arrives through an
//! [`EntitySink`] and becomes spawned, shown, hidden and despawned entities.
//! Streaming sources are entities with a [`FarsightStreamingSource`].

use std::path::Path;
use std::sync::{Arc, Mutex};

use bevy::asset::Handle;
use bevy::ecs::entity::EntityHashSet;
use bevy::pbr::{MeshMaterial3d, StandardMaterial};
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use farsight_stream::region::{
    EntityRecord, EntitySink, RegionState, RegionWorld, SceneError, StreamingSource,
};

use crate::FarsightSet;

/// A point that pulls regions in (the player, a camera): its `GlobalTransform` is the
/// centre.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
#[require(Transform)]
pub struct FarsightStreamingSource {
    /// How far around it regions are pulled in.
    pub radius: f32,
    /// What it raises the regions it reaches to (usually `Active`).
    pub target: RegionState,
}

impl FarsightStreamingSource {
    /// A source raising the regions within `radius` to `Active`.
    pub fn active(radius: f32) -> Self {
        Self {
            radius,
            target: RegionState::Active,
        }
    }
}

/// An entity a region created: which region, and its record.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct RegionEntity {
    /// The region that created it.
    pub region: u32,
    /// Its record in the region file.
    pub record: EntityRecord,
}

/// What a record's `model` index is drawn with; records whose model has no entry
/// get only a transform and [`RegionEntity`] (add what they need by querying
/// `Added<RegionEntity>`).
#[derive(Resource, Clone, Debug, Default)]
pub struct RegionModels(pub Vec<(Handle<Mesh>, Handle<StandardMaterial>)>);

/// The sink: the loader's calls, queued for the system that spawns and despawns.
#[derive(Debug, Default)]
pub struct QueueSink {
    ops: Arc<Mutex<Vec<SinkOp>>>,
}

impl QueueSink {
    fn push(&mut self, op: SinkOp) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
    }
}

#[derive(Debug)]
enum SinkOp {
    Create(u32, Vec<EntityRecord>),
    Active(u32, bool),
    Drop(u32),
}

impl EntitySink for QueueSink {
    fn create(&mut self, region: u32, entities: &[EntityRecord]) {
        self.push(SinkOp::Create(region, entities.to_vec()));
    }

    fn set_active(&mut self, region: u32, active: bool) {
        self.push(SinkOp::Active(region, active));
    }

    fn drop_region(&mut self, region: u32) {
        self.push(SinkOp::Drop(region));
    }
}

/// A streamed scene of regions. Insert it (from [`FarsightRegions::open`]) to start
/// streaming; remove it to stop (its entities stay).
#[derive(Resource)]
pub struct FarsightRegions {
    // The loader's channels are `Send`, not `Sync`: the lock is uncontended, only the
    // streaming system takes it.
    world: Mutex<RegionWorld<QueueSink>>,
    ops: Arc<Mutex<Vec<SinkOp>>>,
    ops_taken: Vec<SinkOp>,
    members: HashMap<u32, Vec<Entity>>,
    sources: Vec<StreamingSource>,
}

impl FarsightRegions {
    /// Opens the scene index at `index` and starts `threads` loader threads.
    pub fn open(index: &Path, threads: usize) -> Result<Self, SceneError> {
        let sink = QueueSink::default();
        let ops = sink.ops.clone();
        Ok(Self {
            world: Mutex::new(RegionWorld::open(index, sink, threads)?),
            ops,
            ops_taken: Vec::new(),
            members: HashMap::default(),
            sources: Vec::new(),
        })
    }

    /// Runs `f` on the region world (the streamer's states, errors, in-flight loads).
    pub fn with_world<R>(&self, f: impl FnOnce(&RegionWorld<QueueSink>) -> R) -> R {
        f(&self.world.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Waits up to `timeout` for a region read: for tests and loading screens.
    pub fn wait_for_io(&self, timeout: std::time::Duration) {
        self.world
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .wait_for_io(timeout);
    }

    /// Entities the region created, while it is loaded.
    pub fn entities(&self, region: u32) -> &[Entity] {
        self.members.get(&region).map_or(&[], Vec::as_slice)
    }
}

fn stream_regions(
    mut commands: Commands,
    regions: Option<ResMut<FarsightRegions>>,
    models: Option<Res<RegionModels>>,
    sources: Query<(&GlobalTransform, &FarsightStreamingSource)>,
    mut gone: Local<EntityHashSet>,
) {
    let Some(mut regions) = regions else { return };
    let regions = &mut *regions;
    regions.sources.clear();
    regions
        .sources
        .extend(sources.iter().map(|(t, s)| StreamingSource {
            position: t.translation(),
            radius: s.radius,
            target: s.target,
        }));
    regions
        .world
        .get_mut()
        .unwrap_or_else(|e| e.into_inner())
        .frame(&regions.sources);
    gone.clear();
    let mut ops = std::mem::take(&mut regions.ops_taken);
    ops.append(&mut regions.ops.lock().unwrap_or_else(|e| e.into_inner()));
    for op in ops.drain(..) {
        match op {
            SinkOp::Create(region, records) => {
                let list = regions.members.entry(region).or_default();
                for r in records {
                    let t =
                        Transform::from_translation(r.position).with_scale(Vec3::splat(r.scale));
                    let mut e = commands.spawn((
                        RegionEntity { region, record: r },
                        t,
                        // Posed now: transform propagation already ran this frame.
                        GlobalTransform::from(t),
                        // Created inactive: shown when the region activates.
                        Visibility::Hidden,
                    ));
                    if let Some((mesh, mat)) =
                        models.as_ref().and_then(|m| m.0.get(r.model as usize))
                    {
                        e.insert((Mesh3d(mesh.clone()), MeshMaterial3d(mat.clone())));
                    }
                    list.push(e.id());
                }
            }
            SinkOp::Active(region, active) => {
                let v = if active {
                    Visibility::Inherited
                } else {
                    Visibility::Hidden
                };
                for &e in regions.entities(region) {
                    commands.entity(e).try_insert(v);
                }
            }
            SinkOp::Drop(region) => {
                for e in regions.members.remove(&region).unwrap_or_default() {
                    if gone.insert(e) {
                        commands.entity(e).try_despawn();
                    }
                }
            }
        }
    }
    regions.ops_taken = ops;
}

/// Region streaming. Added by [`crate::FarsightPlugin`]; it does nothing until a
/// [`FarsightRegions`] resource is inserted.
#[derive(Default)]
pub struct FarsightRegionsPlugin;

impl Plugin for FarsightRegionsPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(PostUpdate, stream_regions.in_set(FarsightSet::Regions))
            .configure_sets(
                PostUpdate,
                FarsightSet::Regions
                    .after(bevy::transform::TransformSystems::Propagate)
                    .before(FarsightSet::Mirror),
            );
    }
}

//! The region loader: the streamer's decisions carried out with worker threads
//! reading region files, and an engine's entity store behind [`EntitySink`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::scene::{read_region_file, EntityRecord, Scene, SceneError};
use super::state::StreamingSource;
use super::streamer::{LoadCompletion, RegionFrame, RegionStreamer};
use crate::io::IoPool;

/// What the engine implements to own entities. Calls arrive on the thread that runs
/// [`RegionWorld::frame`], never on a worker.
pub trait EntitySink {
    /// The region's file was read: create its entities (inactive).
    fn create(&mut self, region: u32, entities: &[EntityRecord]);
    /// The region became active (`true`) or resident only (`false`).
    fn set_active(&mut self, region: u32, active: bool);
    /// Drop every entity the region created.
    fn drop_region(&mut self, region: u32);
}

/// An [`EntitySink`] that only counts: the CLI and the tests.
#[derive(Debug, Default)]
pub struct CountingSink {
    /// Entities per created region (a region is absent once dropped).
    pub entities: HashMap<u32, usize>,
    /// Whether each created region is active now.
    pub active: HashMap<u32, bool>,
    /// Entities created over the whole run.
    pub created_total: u64,
    /// Entities dropped over the whole run.
    pub dropped_total: u64,
}

impl CountingSink {
    /// Entities that exist now, over every region.
    pub fn live_entities(&self) -> usize {
        self.entities.values().sum()
    }
}

impl EntitySink for CountingSink {
    fn create(&mut self, region: u32, entities: &[EntityRecord]) {
        let old = self.entities.insert(region, entities.len());
        assert!(old.is_none(), "region {region} created twice");
        self.created_total += entities.len() as u64;
    }

    fn set_active(&mut self, region: u32, active: bool) {
        assert!(
            self.entities.contains_key(&region),
            "region {region} not created"
        );
        self.active.insert(region, active);
    }

    fn drop_region(&mut self, region: u32) {
        let n = self
            .entities
            .remove(&region)
            .expect("drop of a region never created");
        self.active.remove(&region);
        self.dropped_total += n as u64;
    }
}

type LoadResult = Result<Vec<EntityRecord>, SceneError>;

/// Regions of one scene, streamed: the streamer, a worker pool reading region files,
/// and the engine's sink.
pub struct RegionWorld<S: EntitySink> {
    scene: Scene,
    streamer: RegionStreamer,
    pool: IoPool<LoadResult>,
    arrived: HashMap<u32, Vec<EntityRecord>>,
    errors: Vec<(u32, SceneError)>,
    completions: Vec<LoadCompletion>,
    drained: Vec<(u64, LoadResult)>,
    frame: RegionFrame,
    sink: S,
}

impl<S: EntitySink> std::fmt::Debug for RegionWorld<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionWorld")
            .field("regions", &self.streamer.len())
            .field("pool", &self.pool)
            .finish()
    }
}

impl<S: EntitySink> RegionWorld<S> {
    /// Opens the scene index at `index` (read on this thread) and starts `threads`
    /// loader threads.
    pub fn open(index: &Path, sink: S, threads: usize) -> Result<Self, SceneError> {
        let scene = Scene::open(index)?;
        let streamer = RegionStreamer::new(scene.bounds(), scene.authored())
            .expect("Scene::open checked every box");
        Ok(Self {
            scene,
            streamer,
            pool: IoPool::new(threads, "farsight-region-io"),
            arrived: HashMap::new(),
            errors: Vec::new(),
            completions: Vec::new(),
            drained: Vec::new(),
            frame: RegionFrame::default(),
            sink,
        })
    }

    /// The state machine, to ask about regions.
    pub fn streamer(&self) -> &RegionStreamer {
        &self.streamer
    }

    /// The state machine, for overrides, edit mode and authored states.
    pub fn streamer_mut(&mut self) -> &mut RegionStreamer {
        &mut self.streamer
    }

    /// The engine's entity sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The scene index this world streams.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// Every region that failed to load, with what was wrong.
    pub fn errors(&self) -> &[(u32, SceneError)] {
        &self.errors
    }

    /// Region loads submitted and not yet collected.
    pub fn loads_in_flight(&self) -> usize {
        self.pool.in_flight()
    }

    /// Waits up to `timeout` for a region read to finish.
    pub fn wait_for_io(&mut self, timeout: Duration) {
        self.pool.wait_some(timeout, &mut self.drained);
    }

    /// Runs one frame and returns what it decided.
    pub fn frame(&mut self, sources: &[StreamingSource]) -> &RegionFrame {
        self.pool.drain(&mut self.drained);
        self.drained.sort_by_key(|d| d.0);
        self.completions.clear();
        for (id, result) in self.drained.drain(..) {
            let region = id as u32;
            let ok = match result {
                Ok(entities) => {
                    self.arrived.insert(region, entities);
                    true
                }
                Err(e) => {
                    log::error!("region {region} failed to load: {e}");
                    self.errors.push((region, e));
                    false
                }
            };
            self.completions.push(LoadCompletion { region, ok });
        }
        self.streamer
            .update(sources, &self.completions, &mut self.frame);
        for &r in &self.frame.creates {
            let entities = self.arrived.remove(&r).unwrap_or_default();
            self.sink.create(r, &entities);
        }
        for &r in &self.frame.activates {
            self.sink.set_active(r, true);
        }
        for &r in &self.frame.deactivates {
            self.sink.set_active(r, false);
        }
        for &r in &self.frame.drops {
            self.sink.drop_region(r);
        }
        for &r in &self.frame.loads {
            let path: Arc<Path> = Arc::from(self.scene.region_path(r));
            self.pool.submit(r as u64, move || read_region_file(&path));
        }
        &self.frame
    }
}

//! Background meshing: real worker threads that mesh snapshots, never the live
//! grid, and send results back through a bounded channel.

use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use glam::IVec3;

use crate::cell::Cell;
use crate::collider::ChunkShape;
use crate::grid::GridSnapshot;
use crate::mesh::{ChunkMesh, ChunkMesher};
use crate::water::{mesh_water, WaterMesh};

/// One chunk to mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeshRequest {
    /// The chunk to mesh.
    pub chunk: IVec3,
    /// The render level to mesh it at.
    pub level: u8,
    /// The request's serial: a result whose serial is no longer the chunk's
    /// latest is dropped.
    pub serial: u64,
    /// Rebuild the water mesh too (voxel edits); LOD-only requests keep it.
    pub water: bool,
    /// Also build the editor's picking copy (surface without skirts).
    pub picking: bool,
}

/// A finished request.
#[derive(Debug)]
pub struct MeshResult {
    /// The request this answers.
    pub request: MeshRequest,
    /// The render mesh (possibly empty).
    pub mesh: ChunkMesh,
    /// The water mesh when `request.water` was set.
    pub water: Option<WaterMesh>,
    /// The picking copy when `request.picking` was set and the mesh is not empty.
    pub pick: Option<ChunkShape>,
    /// Time the worker spent on the request.
    pub mesh_time: Duration,
}

struct Batch {
    snapshot: Arc<GridSnapshot>,
    requests: Vec<MeshRequest>,
}

/// A fixed pool of meshing threads. Dropping it stops and joins them.
pub struct MeshWorkers {
    jobs: Option<SyncSender<Batch>>,
    results: Receiver<MeshResult>,
    threads: Vec<JoinHandle<()>>,
    in_flight: usize,
}

impl std::fmt::Debug for MeshWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshWorkers")
            .field("threads", &self.threads.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl MeshWorkers {
    /// Start `threads` workers (at least one).
    pub fn new(threads: usize) -> Self {
        let (job_tx, job_rx) = mpsc::sync_channel::<Batch>(4);
        let (res_tx, res_rx) = mpsc::sync_channel::<MeshResult>(1024);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let threads = (0..threads.max(1))
            .map(|i| {
                let rx = job_rx.clone();
                let tx = res_tx.clone();
                std::thread::Builder::new()
                    .name(format!("terrain-mesh-{i}"))
                    .spawn(move || worker(rx, tx))
                    .expect("spawning a meshing thread")
            })
            .collect();
        Self {
            jobs: Some(job_tx),
            results: res_rx,
            threads,
            in_flight: 0,
        }
    }

    /// Worker threads in the pool.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Requests sent and not yet received back.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queue one batch meshed from `snapshot`.
    pub fn submit(&mut self, snapshot: Arc<GridSnapshot>, requests: Vec<MeshRequest>) {
        if requests.is_empty() {
            return;
        }
        self.in_flight += requests.len();
        if let Some(tx) = &self.jobs {
            // The workers only stop when `jobs` is dropped, so sending cannot fail.
            let _ = tx.send(Batch { snapshot, requests });
        }
    }

    /// A finished result, if one is waiting.
    pub fn try_recv(&mut self) -> Option<MeshResult> {
        match self.results.try_recv() {
            Ok(r) => {
                self.in_flight -= 1;
                Some(r)
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => None,
        }
    }

    /// Wait up to `timeout` for a result.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<MeshResult> {
        let r = self.results.recv_timeout(timeout).ok();
        if r.is_some() {
            self.in_flight -= 1;
        }
        r
    }
}

impl Drop for MeshWorkers {
    fn drop(&mut self) {
        self.jobs = None;
        // Unblock workers waiting to send into a full result channel.
        while self.results.try_recv().is_ok() {}
        for t in self.threads.drain(..) {
            while !t.is_finished() {
                while self.results.try_recv().is_ok() {}
                std::thread::yield_now();
            }
            let _ = t.join();
        }
    }
}

fn worker(jobs: Arc<Mutex<Receiver<Batch>>>, results: SyncSender<MeshResult>) {
    let mut mesher = ChunkMesher::new();
    let mut cells: Vec<Cell> = Vec::new();
    loop {
        let batch = {
            let Ok(rx) = jobs.lock() else { return };
            match rx.recv() {
                Ok(b) => b,
                Err(_) => return,
            }
        };
        for req in batch.requests {
            let t = Instant::now();
            let mesh = mesher.mesh(&*batch.snapshot, req.chunk, req.level);
            let water = req.water.then(|| {
                let mut w = WaterMesh::default();
                mesh_water(&*batch.snapshot, req.chunk, &mut cells, &mut w);
                w
            });
            let pick = (req.picking && !mesh.is_empty()).then(|| pick_copy(&mesh));
            let r = MeshResult {
                request: req,
                mesh,
                water,
                pick,
                mesh_time: t.elapsed(),
            };
            if results.send(r).is_err() {
                return;
            }
        }
    }
}

/// The picking copy of a render mesh: its surface triangles (skirts omitted) over
/// the positions they use, indexed for ray queries.
fn pick_copy(mesh: &ChunkMesh) -> ChunkShape {
    let surface = mesh.surface_indices();
    let used = surface.iter().map(|&i| i as usize + 1).max().unwrap_or(0);
    let vertices = mesh.vertices[..used].iter().map(|v| v.position).collect();
    let triangles = surface
        .chunks_exact(3)
        .map(|t| [t[0], t[1], t[2]])
        .collect();
    ChunkShape::new(vertices, triangles)
}

//! Carrying the decisions out: worker threads reading real files, the staging ring,
//! the uploader.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::cooked::LevelCheck;
use super::scheduler::ClusterScheduler;
use super::types::{
    ChunkCompletion, Decision, FrameStats, ModelDesc, ModelRequest, SchedulerConfig,
};
use super::upload::Uploader;
use crate::io::{read_range, FaultInjector, IoPool, ReadError};

/// A level's chunks as they arrive, for the [`LevelCheck`]. Its buffers are allocated
/// on the worker that reads the first chunk, once the file is known to hold the whole
/// level, so a wrong level size in an index cannot allocate more than the file has.
#[derive(Debug)]
struct Assembly {
    /// Where the level lies in its file.
    start: u64,
    len: u64,
    chunks: usize,
    bytes: Vec<u8>,
    arrived: Vec<bool>,
    missing: usize,
    /// Checked and passed; the buffer is freed.
    passed: bool,
    /// The load was given up (failed or evicted): reads still queued for it end
    /// without touching the disk.
    cancelled: bool,
    /// The file turned out shorter than the level's range (its length): every
    /// other chunk fails the same way without a read.
    too_short: Option<u64>,
}

impl Assembly {
    fn new(start: u64, len: u64, chunk: u64) -> Self {
        Self {
            start,
            len,
            chunks: len.div_ceil(chunk).max(1) as usize,
            bytes: Vec::new(),
            arrived: Vec::new(),
            missing: 0,
            passed: false,
            cancelled: false,
            too_short: None,
        }
    }

    /// Allocates the buffers if this is the first chunk, after checking the file's
    /// length against the level's range.
    fn open(&mut self, path: &std::path::Path) -> Result<(), ReadError> {
        if !self.arrived.is_empty() {
            return Ok(());
        }
        if let Some(file_len) = self.too_short {
            return Err(self.out_of_range(path, file_len));
        }
        let file_len = std::fs::metadata(path)
            .map_err(|source| ReadError::Io {
                path: path.to_owned(),
                source,
            })?
            .len();
        if self
            .start
            .checked_add(self.len)
            .is_none_or(|end| end > file_len)
        {
            self.too_short = Some(file_len);
            return Err(self.out_of_range(path, file_len));
        }
        self.bytes = vec![0; self.len as usize];
        self.arrived = vec![false; self.chunks];
        self.missing = self.chunks;
        Ok(())
    }

    fn out_of_range(&self, path: &std::path::Path, file_len: u64) -> ReadError {
        ReadError::OutOfRange {
            path: path.to_owned(),
            offset: self.start,
            len: self.len,
            file_len,
        }
    }

    /// Whether a read for this level should end before touching the disk.
    fn refuse(&self, path: &std::path::Path) -> Result<(), ReadError> {
        if self.cancelled {
            return Err(ReadError::Cancelled {
                path: path.to_owned(),
            });
        }
        match self.too_short {
            Some(file_len) => Err(self.out_of_range(path, file_len)),
            None => Ok(()),
        }
    }

    /// Puts chunk `k` at `at`; returns whether the level is complete.
    fn put(&mut self, k: usize, at: usize, bytes: &[u8]) -> bool {
        if let (Some(dst), Some(flag)) = (
            self.bytes.get_mut(at..at + bytes.len()),
            self.arrived.get_mut(k),
        ) {
            dst.copy_from_slice(bytes);
            if !*flag {
                *flag = true;
                self.missing -= 1;
            }
        }
        self.missing == 0
    }
}

/// A file holding level bytes; [`LevelDesc::file`](super::LevelDesc) indexes a list of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelFile {
    /// Where the file is; opened by the worker threads on every read.
    pub path: PathBuf,
}

/// One frame as it happened: what went in and what was decided. A run recorded
/// frame by frame replays through a fresh [`ClusterScheduler`] to the same decisions.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedFrame {
    /// The frame's requests, one per model.
    pub requests: Vec<ModelRequest>,
    /// The reads that finished before the frame, in request order.
    pub completions: Vec<ChunkCompletion>,
    /// What the scheduler decided, in the order the driver carried it out.
    pub decisions: Vec<Decision>,
}

/// The scheduler wired to real I/O: reads run on worker threads, finished reads are
/// copied into a staging ring and handed to `U`.
pub struct ClusterStreamer<U: Uploader> {
    scheduler: ClusterScheduler,
    files: Vec<Arc<std::path::Path>>,
    pool: IoPool<Result<Vec<u8>, ReadError>>,
    faults: Option<Arc<dyn FaultInjector>>,
    arrived: HashMap<u64, Vec<u8>>,
    staging: Vec<u8>,
    uploader: U,
    drained: Vec<(u64, Result<Vec<u8>, ReadError>)>,
    completions: Vec<ChunkCompletion>,
    decisions: Vec<Decision>,
    recording: Option<Vec<RecordedFrame>>,
    read_errors: u64,
    check: Option<Arc<dyn LevelCheck>>,
    assemblies: HashMap<(u32, u8), Arc<Mutex<Assembly>>>,
    /// Levels with copies queued that are not yet ready: if their load fails, the
    /// renderer is told to free what they hold.
    partial: HashSet<(u32, u8)>,
}

impl<U: Uploader> std::fmt::Debug for ClusterStreamer<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterStreamer")
            .field("scheduler", &self.scheduler.frame())
            .field("pool", &self.pool)
            .finish()
    }
}

impl<U: Uploader> ClusterStreamer<U> {
    /// A streamer over `models`, reading the files `files` (indexed by
    /// [`LevelDesc::file`](super::LevelDesc)) on `io_threads` worker threads (at
    /// least one) and uploading through `uploader`. Allocates the staging ring
    /// (`config.staging_size`, rounded down to whole slices) at once.
    pub fn new(
        config: SchedulerConfig,
        models: &[ModelDesc],
        files: Vec<LevelFile>,
        io_threads: usize,
        uploader: U,
    ) -> Self {
        Self {
            scheduler: ClusterScheduler::new(config, models),
            files: files.into_iter().map(|f| Arc::from(f.path)).collect(),
            pool: IoPool::new(io_threads, "farsight-cluster-io"),
            faults: None,
            arrived: HashMap::new(),
            staging: vec![
                0;
                config.slice_size() as usize * config.frames_in_flight.max(1) as usize
            ],
            uploader,
            drained: Vec::new(),
            completions: Vec::new(),
            decisions: Vec::new(),
            recording: None,
            read_errors: 0,
            check: None,
            assemblies: HashMap::new(),
            partial: HashSet::new(),
        }
    }

    /// Checks every level once all its chunks have arrived, on the worker thread
    /// that read its last chunk (for cooked cluster files, a `Vec<CookedModel>` in
    /// the streamer's model order). A level that fails counts as a failed read of
    /// that chunk, so it is retried and then marked failed like any other bad read;
    /// the other levels stream on.
    pub fn with_level_check(mut self, check: Arc<dyn LevelCheck>) -> Self {
        self.check = Some(check);
        self
    }

    /// Levels whose chunks are being gathered for the check.
    pub fn levels_assembling(&self) -> usize {
        self.assemblies.len()
    }

    /// Makes reads fail where `faults` says so (tests).
    pub fn with_faults(mut self, faults: Arc<dyn FaultInjector>) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Starts recording every frame's inputs and decisions.
    pub fn record(&mut self) {
        self.recording = Some(Vec::new());
    }

    /// The frames recorded since [`record`](Self::record), ending the recording;
    /// empty when none was started.
    pub fn take_recording(&mut self) -> Vec<RecordedFrame> {
        self.recording.take().unwrap_or_default()
    }

    /// The decision maker, to ask what is resident, loading or failed.
    pub fn scheduler(&self) -> &ClusterScheduler {
        &self.scheduler
    }

    /// The renderer's side of the uploads.
    pub fn uploader(&self) -> &U {
        &self.uploader
    }

    /// The renderer's side of the uploads, to change.
    pub fn uploader_mut(&mut self) -> &mut U {
        &mut self.uploader
    }

    /// Decisions of the last frame.
    pub fn last_decisions(&self) -> &[Decision] {
        &self.decisions
    }

    /// The read completions the last frame's scheduler step saw, in its order: with
    /// the requests, all a replay needs, without the per-frame copies of
    /// [`record`](Self::record).
    pub fn last_completions(&self) -> &[ChunkCompletion] {
        &self.completions
    }

    /// Hands the scheduler this frame's share of a shared pool
    /// ([`ClusterScheduler::set_budgets`]).
    pub fn set_budgets(&mut self, upload_budget: u64, memory_capacity: u64) {
        self.scheduler.set_budgets(upload_budget, memory_capacity);
    }

    /// Reads that failed (each retry counts).
    pub fn read_errors(&self) -> u64 {
        self.read_errors
    }

    /// Reads submitted and not yet collected.
    pub fn reads_in_flight(&self) -> usize {
        self.pool.in_flight()
    }

    /// Waits up to `timeout` for at least one read to finish (for tools and tests
    /// that step faster than the disk).
    pub fn wait_for_io(&mut self, timeout: Duration) {
        self.pool.wait_some(timeout, &mut self.drained);
    }

    /// Forgets a level's assembly and makes the reads still queued for it end
    /// without touching the disk.
    fn cancel_assembly(
        assemblies: &mut HashMap<(u32, u8), Arc<Mutex<Assembly>>>,
        model: u32,
        level: u8,
    ) {
        if let Some(a) = assemblies.remove(&(model, level)) {
            a.lock().unwrap_or_else(PoisonError::into_inner).cancelled = true;
        }
    }

    /// Runs one frame.
    pub fn frame(&mut self, requests: &[ModelRequest]) -> FrameStats {
        self.take_completions();
        self.decisions.clear();
        let stats = self
            .scheduler
            .step(requests, &self.completions, &mut self.decisions);
        let chunk = self.scheduler.config().effective_chunk();
        for i in 0..self.decisions.len() {
            let d = self.decisions[i];
            self.apply(d, chunk);
        }
        self.uploader.end_frame();
        if let Some(rec) = &mut self.recording {
            rec.push(RecordedFrame {
                requests: requests.to_vec(),
                completions: self.completions.clone(),
                decisions: self.decisions.clone(),
            });
        }
        stats
    }

    /// The reads finished since the last frame, as the scheduler's completions (in
    /// request order); the bytes of each one that succeeded are kept for its copy.
    fn take_completions(&mut self) {
        self.pool.drain(&mut self.drained);
        // Completion order is whatever the threads produced; sorting makes a run
        // easier to read, and the recording keeps the order the scheduler saw.
        self.drained.sort_unstable_by_key(|d| d.0);
        self.completions.clear();
        for (id, result) in self.drained.drain(..) {
            let ok = match result {
                Ok(bytes) => {
                    self.arrived.insert(id, bytes);
                    true
                }
                Err(e) => {
                    log::debug!("read {id:#x} failed: {e}");
                    self.read_errors += 1;
                    false
                }
            };
            self.completions.push(ChunkCompletion { request: id, ok });
        }
    }

    /// Carries out one of the scheduler's decisions (`chunk`: the read size).
    fn apply(&mut self, d: Decision, chunk: u64) {
        match d {
            Decision::Read {
                request,
                model,
                level,
                chunk: k,
                file,
                offset,
                len,
            } => {
                let path = Arc::clone(&self.files[file as usize]);
                let faults = self.faults.clone();
                let check = self
                    .check
                    .clone()
                    .map(|check| (check, self.assembly(model, level, chunk)));
                let job = ReadJob {
                    path,
                    faults,
                    check,
                    model,
                    level,
                    k: k as usize,
                    chunk,
                    offset,
                    len,
                };
                self.pool.submit(request, move || job.run());
            }
            Decision::Copy {
                request,
                model,
                level,
                chunk: k,
                staging_offset,
                len,
            } => {
                let Some(bytes) = self.arrived.remove(&request) else {
                    debug_assert!(false, "copy of read {request:#x} that never arrived");
                    return;
                };
                let range = staging_offset as usize..(staging_offset + len) as usize;
                self.staging[range.clone()].copy_from_slice(&bytes[..len as usize]);
                self.uploader
                    .queue_copy(model, level, k as u64 * chunk, &self.staging[range]);
                self.partial.insert((model, level));
            }
            Decision::Ready { model, level } => {
                self.assemblies.remove(&(model, level));
                self.partial.remove(&(model, level));
                self.uploader.level_ready(model, level);
            }
            Decision::Evict { model, level } => {
                Self::cancel_assembly(&mut self.assemblies, model, level);
                self.partial.remove(&(model, level));
                self.uploader.evict(model, level);
            }
            Decision::Failed { model, level } => {
                // The failed level's load and every finer one are cancelled, and
                // the chunks they already copied are freed.
                for l in 0..=level {
                    Self::cancel_assembly(&mut self.assemblies, model, l);
                    if self.partial.remove(&(model, l)) {
                        self.uploader.evict(model, l);
                    }
                }
            }
        }
    }

    /// The assembly of a level being checked, made at its first read.
    fn assembly(&mut self, model: u32, level: u8, chunk: u64) -> Arc<Mutex<Assembly>> {
        let desc = self.scheduler.level_desc(model, level);
        let assembly = self
            .assemblies
            .entry((model, level))
            .or_insert_with(|| Arc::new(Mutex::new(Assembly::new(desc.offset, desc.bytes, chunk))));
        Arc::clone(assembly)
    }
}

/// A level's check and the assembly its chunks are gathered in for it.
type CheckedLevel = (Arc<dyn LevelCheck>, Arc<Mutex<Assembly>>);

/// One chunk read, as a worker runs it: `len` bytes at `offset` of `path`, through
/// the fault injector if any; with a check, the chunk joins its level's assembly
/// and the level is checked once every chunk is in.
struct ReadJob {
    path: Arc<std::path::Path>,
    faults: Option<Arc<dyn FaultInjector>>,
    check: Option<CheckedLevel>,
    model: u32,
    level: u8,
    /// The chunk's index in its level.
    k: usize,
    /// The read size.
    chunk: u64,
    offset: u64,
    len: u64,
}

impl ReadJob {
    /// Reads the chunk; a failed check is an error, and its chunk is read again on
    /// retry.
    fn run(self) -> Result<Vec<u8>, ReadError> {
        let path = &self.path;
        if let Some((_, assembly)) = &self.check {
            assembly
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .refuse(path)?;
        }
        let bytes = read_range(path, self.offset, self.len, self.faults.as_deref())?;
        if let Some((check, assembly)) = &self.check {
            let mut a = assembly.lock().unwrap_or_else(PoisonError::into_inner);
            if a.passed {
                return Ok(bytes);
            }
            a.open(path)?;
            let k = self.k;
            if a.put(k, (k as u64 * self.chunk) as usize, &bytes) {
                if let Err(source) = check.check(self.model, self.level, &a.bytes) {
                    // Read again on retry, and checked again.
                    a.arrived[k] = false;
                    a.missing += 1;
                    return Err(ReadError::Invalid {
                        path: path.to_path_buf(),
                        source,
                    });
                }
                a.bytes = Vec::new();
                a.passed = true;
            }
        }
        Ok(bytes)
    }
}

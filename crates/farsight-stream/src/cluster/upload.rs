//! The boundary to the renderer: copies out of the staging ring into mesh memory.

use std::collections::HashMap;

/// What the renderer implements. Calls come in the order the scheduler decided them,
/// all within one frame, then [`end_frame`](Uploader::end_frame) (the submit).
pub trait Uploader {
    /// Queue a GPU copy of `bytes` (a slice of the staging ring) to byte
    /// `offset_in_level` of the level's memory.
    fn queue_copy(&mut self, model: u32, level: u8, offset_in_level: u64, bytes: &[u8]);
    /// The level's every copy was submitted on an earlier frame: it may be drawn.
    fn level_ready(&mut self, model: u32, level: u8);
    /// Free the level's memory: a level nobody asked for, or one whose load failed
    /// after some of its copies were queued (it never became ready).
    fn evict(&mut self, model: u32, level: u8);
    /// The frame's copies are submitted.
    fn end_frame(&mut self) {}
}

/// A CPU stand-in for GPU mesh memory: keeps every level's bytes in a map, so tests
/// can check what arrived byte for byte.
#[derive(Debug, Default)]
pub struct CpuUploader {
    levels: HashMap<(u32, u8), Vec<u8>>,
    ready: HashMap<(u32, u8), bool>,
    /// Bytes queued since the last `end_frame`.
    pub frame_bytes: u64,
    /// Most bytes queued in any one frame.
    pub max_frame_bytes: u64,
    /// Bytes queued over the whole run.
    pub total_bytes: u64,
}

impl CpuUploader {
    /// The bytes of a level that was made ready and not evicted.
    pub fn level(&self, model: u32, level: u8) -> Option<&[u8]> {
        if self.ready.get(&(model, level)).copied().unwrap_or(false) {
            self.levels.get(&(model, level)).map(Vec::as_slice)
        } else {
            None
        }
    }

    /// Levels currently held (ready or still being copied).
    pub fn held_levels(&self) -> usize {
        self.levels.len()
    }
}

impl Uploader for CpuUploader {
    fn queue_copy(&mut self, model: u32, level: u8, offset_in_level: u64, bytes: &[u8]) {
        let mem = self.levels.entry((model, level)).or_default();
        let end = offset_in_level as usize + bytes.len();
        if mem.len() < end {
            mem.resize(end, 0);
        }
        mem[offset_in_level as usize..end].copy_from_slice(bytes);
        self.frame_bytes += bytes.len() as u64;
        self.total_bytes += bytes.len() as u64;
    }

    fn level_ready(&mut self, model: u32, level: u8) {
        self.ready.insert((model, level), true);
    }

    fn evict(&mut self, model: u32, level: u8) {
        self.levels.remove(&(model, level));
        self.ready.remove(&(model, level));
    }

    fn end_frame(&mut self) {
        self.max_frame_bytes = self.max_frame_bytes.max(self.frame_bytes);
        self.frame_bytes = 0;
    }
}

//! The staging ring on the GPU: `slices` mappable buffers (three by default, one a
//! frame in flight), `bytes` in all (33 MB by default, the streamer's
//! `SchedulerConfig::staging_size`). A frame's copies are written into one mapped
//! slice and copied from there into the pools by the frame's command buffer; the
//! slice is mapped again once the GPU has run that command buffer, and used again
//! `slices` frames later (waiting for the map if the GPU is that far behind).
//!
//! [`RingAccount`] is the bookkeeping alone (which slice, how full), plain code;
//! [`StagingRing`] adds the buffers.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// wgpu copies buffer ranges in whole words.
const ALIGN: u64 = wgpu::COPY_BUFFER_ALIGNMENT;
/// A mapped range starts on a multiple of this.
const MAP_ALIGN: u64 = wgpu::MAP_ALIGNMENT;

/// The ring's bookkeeping: a slice per frame in turn, filled from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingAccount {
    slices: u32,
    slice_bytes: u64,
    /// The slice of the frame being filled, if a frame has begun.
    current: Option<u32>,
    /// The slice the next frame takes.
    next: u32,
    used: u64,
}

impl RingAccount {
    /// `bytes` split into `slices` slices (at least one), each rounded down to
    /// whole words.
    pub fn new(bytes: u64, slices: u32) -> Self {
        let slices = slices.max(1);
        Self {
            slices,
            slice_bytes: bytes / u64::from(slices) / ALIGN * ALIGN,
            current: None,
            next: 0,
            used: 0,
        }
    }

    /// Bytes of one slice.
    pub fn slice_bytes(&self) -> u64 {
        self.slice_bytes
    }

    /// Slices in the ring.
    pub fn slices(&self) -> u32 {
        self.slices
    }

    /// The slice of the frame being filled, if any.
    pub fn current(&self) -> Option<u32> {
        self.current
    }

    /// Bytes taken from the current slice.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Starts filling the next slice (when no frame is being filled); returns it.
    pub fn begin(&mut self) -> u32 {
        if let Some(s) = self.current {
            return s;
        }
        let s = self.next;
        self.next = (s + 1) % self.slices;
        self.current = Some(s);
        self.used = 0;
        s
    }

    /// The offset in the current slice (a multiple of 8, where a mapped range
    /// may start) for `len` bytes (a multiple of 4), or `None` when the slice has
    /// no room or no frame has begun.
    pub fn reserve(&mut self, len: u64) -> Option<u64> {
        self.current?;
        let at = self.used.next_multiple_of(MAP_ALIGN);
        if len % ALIGN != 0 || at + len > self.slice_bytes {
            return None;
        }
        self.used = at + len;
        Some(at)
    }

    /// Ends the frame: returns the slice filled, if one was begun.
    pub fn end(&mut self) -> Option<u32> {
        self.current.take()
    }
}

const MAPPED: u8 = 0;
const PENDING: u8 = 1;
const FAILED: u8 = 2;

#[derive(Debug)]
struct Slice {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
}

fn slice_buffer(device: &wgpu::Device, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("farsight staging slice"),
        size: bytes.max(ALIGN),
        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    })
}

/// The ring's buffers and the frame's copies out of them.
#[derive(Debug)]
pub struct StagingRing {
    device: wgpu::Device,
    account: RingAccount,
    slices: Vec<Slice>,
    encoder: Option<wgpu::CommandEncoder>,
}

impl StagingRing {
    /// A ring of `bytes` in `slices` slices, every slice mapped.
    pub fn new(device: &wgpu::Device, bytes: u64, slices: u32) -> Self {
        let account = RingAccount::new(bytes, slices);
        let slices = (0..account.slices())
            .map(|_| Slice {
                buffer: slice_buffer(device, account.slice_bytes()),
                state: Arc::new(AtomicU8::new(MAPPED)),
            })
            .collect();
        Self {
            device: device.clone(),
            account,
            slices,
            encoder: None,
        }
    }

    /// The bookkeeping.
    pub fn account(&self) -> &RingAccount {
        &self.account
    }

    /// Stages `bytes` (a multiple of 4 long) and records their copy to byte `at` of
    /// `dst`; false, doing nothing, when the frame's slice has no room.
    pub fn copy(&mut self, bytes: &[u8], dst: &wgpu::Buffer, at: u64) -> bool {
        if self.account.current().is_none() {
            let s = self.account.begin() as usize;
            self.wait_mapped(s);
        }
        let Some(off) = self.account.reserve(bytes.len() as u64) else {
            return false;
        };
        let Some(s) = self.account.current() else {
            return false;
        };
        let slice = &self.slices[s as usize];
        slice
            .buffer
            .slice(off..off + bytes.len() as u64)
            .get_mapped_range_mut()
            .copy_from_slice(bytes);
        let encoder = self.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("farsight staging copies"),
                })
        });
        encoder.copy_buffer_to_buffer(&slice.buffer, off, dst, at, bytes.len() as u64);
        true
    }

    /// Waits until slice `s` is mapped again (the GPU ran the copies out of it),
    /// making a new one if mapping failed.
    fn wait_mapped(&mut self, s: usize) {
        while self.slices[s].state.load(Ordering::Acquire) == PENDING {
            if self
                .device
                .poll(wgpu::PollType::wait_indefinitely())
                .is_err()
            {
                break;
            }
        }
        if self.slices[s].state.load(Ordering::Acquire) != MAPPED {
            self.slices[s] = Slice {
                buffer: slice_buffer(&self.device, self.account.slice_bytes()),
                state: Arc::new(AtomicU8::new(MAPPED)),
            };
        }
    }

    /// Submits the frame's copies (before anything the frame draws, which is
    /// submitted later) and asks for the slice to be mapped again.
    pub fn submit(&mut self, queue: &wgpu::Queue) {
        let Some(s) = self.account.end() else {
            return;
        };
        let slice = &self.slices[s as usize];
        slice.buffer.unmap();
        if let Some(encoder) = self.encoder.take() {
            queue.submit([encoder.finish()]);
        }
        slice.state.store(PENDING, Ordering::Release);
        let state = Arc::clone(&slice.state);
        slice
            .buffer
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |r| {
                state.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_take_the_slices_in_turn_and_never_overfill_one() {
        let mut r = RingAccount::new(33 << 20, 3);
        assert_eq!(r.slice_bytes(), 11 << 20);
        assert_eq!(r.reserve(4), None, "no frame begun");
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(r.begin());
            assert_eq!(r.reserve(8 << 20), Some(0));
            assert_eq!(r.reserve(3 << 20), Some(8 << 20));
            assert_eq!(r.reserve(4), None, "the slice is full");
            assert_eq!(r.end(), seen.last().copied());
        }
        assert_eq!(seen, [0, 1, 2, 0, 1, 2]);
        r.begin();
        assert_eq!(r.reserve(6), None, "copies are whole words");
        assert_eq!(r.reserve(12), Some(0));
        assert_eq!(r.reserve(4), Some(16), "a mapped range starts on 8 bytes");
    }
}

//! Worker threads that read real files, and the failure injection the tests use.
//!
//! [`IoPool`] runs jobs (closures returning a value) on a fixed number of threads
//! and hands results back, tagged with the caller's request id, through a channel
//! drained once per frame. [`read_range`] is the one way a job reads bytes: it checks
//! the range against the file's length before allocating, so a bad offset in an
//! index never allocates more than the file holds.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The operating system refused to open, measure, seek or read the file.
    #[error("{path}: {source}")]
    Io {
        /// The file read.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The requested byte range does not lie inside the file (nothing was allocated).
    #[error("{path}: range {offset}+{len} runs past the end of the file ({file_len} bytes)")]
    OutOfRange {
        /// The file read.
        path: PathBuf,
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The file's length in bytes.
        file_len: u64,
    },
    /// The load the read belonged to was given up before the read began.
    #[error("{path}: read cancelled, its level's load was given up")]
    Cancelled {
        /// The file that would have been read.
        path: PathBuf,
    },
    /// A [`FaultInjector`] failed the read on purpose (tests only).
    #[error("{path}: injected failure at offset {offset}")]
    Injected {
        /// The file that would have been read.
        path: PathBuf,
        /// The offset of the failed read.
        offset: u64,
    },
    /// Every chunk arrived and the level's bytes failed their check.
    #[error("{path}: {source}")]
    Invalid {
        /// The file the level was read from.
        path: PathBuf,
        /// What the level's check found.
        #[source]
        source: crate::cluster::LevelFileError,
    },
}

/// Decides, before a read touches the disk, whether it fails. Tests use it to make a
/// chosen chunk fail a chosen number of times; production passes none.
pub trait FaultInjector: Send + Sync {
    /// True to fail the read of `path` at `offset` without touching the disk; called
    /// once per read attempt, from a worker thread.
    fn should_fail(&self, path: &Path, offset: u64) -> bool;
}

/// Reads `len` bytes at `offset` of `path`. The range is checked against the file's
/// length first, so a corrupt index cannot make this allocate more than the file has.
pub fn read_range(
    path: &Path,
    offset: u64,
    len: u64,
    faults: Option<&dyn FaultInjector>,
) -> Result<Vec<u8>, ReadError> {
    if faults.is_some_and(|f| f.should_fail(path, offset)) {
        return Err(ReadError::Injected {
            path: path.to_owned(),
            offset,
        });
    }
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    if offset.checked_add(len).is_none_or(|end| end > file_len) {
        return Err(ReadError::OutOfRange {
            path: path.to_owned(),
            offset,
            len,
            file_len,
        });
    }
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact(&mut buf).map_err(io)?;
    Ok(buf)
}

type Job<T> = (u64, Box<dyn FnOnce() -> T + Send>);

/// A fixed pool of worker threads running I/O jobs. Results come back in completion
/// order; callers that need determinism sort or record them (the schedulers take
/// completions as explicit input).
pub struct IoPool<T: Send + 'static> {
    jobs: Option<Sender<Job<T>>>,
    done: Receiver<(u64, T)>,
    workers: Vec<JoinHandle<()>>,
    in_flight: usize,
}

impl<T: Send + 'static> std::fmt::Debug for IoPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoPool")
            .field("workers", &self.workers.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl<T: Send + 'static> IoPool<T> {
    /// Starts `threads` workers (at least one).
    pub fn new(threads: usize, name: &str) -> Self {
        let (jobs_tx, jobs_rx) = mpsc::channel::<Job<T>>();
        let (done_tx, done) = mpsc::channel();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let workers = (0..threads.max(1))
            .map(|i| {
                let rx = Arc::clone(&jobs_rx);
                let tx = done_tx.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || loop {
                        // The lock is held only to take one job.
                        let job = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        let Ok((id, f)) = job else { return };
                        if tx.send((id, f())).is_err() {
                            return;
                        }
                    })
                    .expect("spawning an I/O worker thread")
            })
            .collect();
        Self {
            jobs: Some(jobs_tx),
            done,
            workers,
            in_flight: 0,
        }
    }

    /// Queues `job`; its result comes back tagged with `id`.
    pub fn submit(&mut self, id: u64, job: impl FnOnce() -> T + Send + 'static) {
        if let Some(tx) = &self.jobs {
            if tx.send((id, Box::new(job))).is_ok() {
                self.in_flight += 1;
            }
        }
    }

    /// Moves every finished result into `out` without waiting.
    pub fn drain(&mut self, out: &mut Vec<(u64, T)>) {
        while let Ok(r) = self.done.try_recv() {
            self.in_flight -= 1;
            out.push(r);
        }
    }

    /// Waits up to `timeout` for one result, then drains the rest.
    pub fn wait_some(&mut self, timeout: Duration, out: &mut Vec<(u64, T)>) {
        if self.in_flight == 0 {
            return;
        }
        if let Ok(r) = self.done.recv_timeout(timeout) {
            self.in_flight -= 1;
            out.push(r);
        }
        self.drain(out);
    }

    /// Jobs submitted whose results were not drained yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

impl<T: Send + 'static> Drop for IoPool<T> {
    fn drop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_range_checks_the_file_length() {
        let dir = std::env::temp_dir().join(format!("farsight-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ten.bin");
        std::fs::write(&p, (0u8..10).collect::<Vec<_>>()).unwrap();
        assert_eq!(read_range(&p, 2, 3, None).unwrap(), vec![2, 3, 4]);
        assert!(matches!(
            read_range(&p, 8, 1 << 40, None),
            Err(ReadError::OutOfRange { file_len: 10, .. })
        ));
        assert!(matches!(
            read_range(&dir.join("missing"), 0, 1, None),
            Err(ReadError::Io { .. })
        ));
        let mut pool = IoPool::new(2, "test-io");
        for i in 0..20u64 {
            let p = p.clone();
            pool.submit(i, move || read_range(&p, i % 10, 1, None).map(|v| v[0]));
        }
        let mut out = Vec::new();
        while out.len() < 20 {
            pool.wait_some(Duration::from_secs(5), &mut out);
        }
        out.sort_by_key(|r| r.0);
        for (i, r) in out {
            assert_eq!(r.unwrap(), (i % 10) as u8);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

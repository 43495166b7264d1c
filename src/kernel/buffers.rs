//! An object's ring buffers and perf buffers, read as its tool reads them:
//! by a thread of their own, on another CPU than the trigger's, so the
//! programs never find them full and take the path of a dropped record.
//! The records are counted (records per event), their contents dropped.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys as sys;

/// Pages of each CPU's perf buffer (libbpf-tools use 16 to 64).
const PERF_PAGES: u64 = 64;
/// How long a poll waits before it looks at the stop flag again.
const POLL_MS: i32 = 20;

/// A buffer map to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferKind {
    Ring,
    Perf,
}

#[derive(Default)]
struct Counts {
    records: AtomicU64,
    lost: AtomicU64,
}

/// The reading thread, while this lives.
pub struct BufferReader {
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<()>>>,
}

unsafe extern "C" fn ring_sample(ctx: *mut std::ffi::c_void, _data: *mut std::ffi::c_void, _size: u64) -> i32 {
    // SAFETY: ctx is the Counts the reader keeps alive while it polls.
    unsafe { &*(ctx as *const Counts) }.records.fetch_add(1, Ordering::Relaxed);
    0
}

unsafe extern "C" fn perf_sample(ctx: *mut std::ffi::c_void, _cpu: i32, _data: *mut std::ffi::c_void, _size: u32) {
    // SAFETY: as above.
    unsafe { &*(ctx as *const Counts) }.records.fetch_add(1, Ordering::Relaxed);
}

unsafe extern "C" fn perf_lost(ctx: *mut std::ffi::c_void, _cpu: i32, n: u64) {
    // SAFETY: as above.
    unsafe { &*(ctx as *const Counts) }.lost.fetch_add(n, Ordering::Relaxed);
}

impl BufferReader {
    /// Starts reading `maps` (their fds must outlive the reader) in a thread
    /// that first runs `on_start` (the caller pins it to a CPU).
    pub fn start(
        maps: &[(BorrowedFd<'_>, BufferKind)],
        on_start: impl FnOnce() + Send + 'static,
    ) -> Result<BufferReader> {
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let fds: Vec<(i32, BufferKind)> = maps.iter().map(|(fd, k)| (fd.as_raw_fd(), *k)).collect();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let thread = {
            let (counts, stop) = (counts.clone(), stop.clone());
            std::thread::spawn(move || -> Result<()> {
                on_start();
                let ctx = Arc::as_ptr(&counts) as *mut std::ffi::c_void;
                let mut ring: *mut sys::ring_buffer = std::ptr::null_mut();
                let mut perf: Vec<*mut sys::perf_buffer> = Vec::new();
                let fail = |why: String| {
                    let _ = ready_tx.send(Err(why));
                };
                for (fd, kind) in &fds {
                    // SAFETY: map fds the caller keeps open; ctx outlives the buffers (freed below).
                    unsafe {
                        match kind {
                            BufferKind::Ring if ring.is_null() => {
                                ring = sys::ring_buffer__new(*fd, Some(ring_sample), ctx, std::ptr::null());
                                if ring.is_null() {
                                    fail(format!("reading a ring buffer: {}", std::io::Error::last_os_error()));
                                    return Ok(());
                                }
                            }
                            BufferKind::Ring => {
                                if sys::ring_buffer__add(ring, *fd, Some(ring_sample), ctx) != 0 {
                                    fail(format!("reading a ring buffer: {}", std::io::Error::last_os_error()));
                                    return Ok(());
                                }
                            }
                            BufferKind::Perf => {
                                let pb = sys::perf_buffer__new(
                                    *fd,
                                    PERF_PAGES,
                                    Some(perf_sample),
                                    Some(perf_lost),
                                    ctx,
                                    std::ptr::null(),
                                );
                                if pb.is_null() {
                                    fail(format!("reading a perf buffer: {}", std::io::Error::last_os_error()));
                                    return Ok(());
                                }
                                perf.push(pb);
                            }
                        }
                    }
                }
                let _ = ready_tx.send(Ok(()));
                let wait = if perf.is_empty() { POLL_MS } else { POLL_MS / 2 };
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: buffers made above, freed after the loop.
                    unsafe {
                        if !ring.is_null() {
                            sys::ring_buffer__poll(ring, wait);
                        }
                        for pb in &perf {
                            sys::perf_buffer__poll(*pb, wait);
                        }
                    }
                }
                // SAFETY: the last reads, then the buffers freed once.
                unsafe {
                    if !ring.is_null() {
                        sys::ring_buffer__consume(ring);
                        sys::ring_buffer__free(ring);
                    }
                    for pb in perf {
                        sys::perf_buffer__consume(pb);
                        sys::perf_buffer__free(pb);
                    }
                }
                Ok(())
            })
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(BufferReader { counts, stop, thread: Some(thread) }),
            Ok(Err(why)) => bail!(why),
            Err(_) => bail!("the buffer reader stopped before it started"),
        }
    }

    /// Records read and records the kernel reported lost, so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.counts.records.load(Ordering::Relaxed), self.counts.lost.load(Ordering::Relaxed))
    }

    /// Waits until the thread has read what is there (a poll's time).
    pub fn settle(&self) {
        std::thread::sleep(std::time::Duration::from_millis(2 * POLL_MS as u64));
    }
}

impl Drop for BufferReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

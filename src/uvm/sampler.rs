//! A sampling profiler for the JIT's code: where `--profile` finds the time.
//!
//! A per-thread timer (`timer_create` on CLOCK_MONOTONIC, delivered to this
//! thread as SIGPROF) interrupts the timed batches every [`PERIOD_NS`]; the
//! handler records the interrupted address and, when that lies outside the
//! compiled code (in a helper or a map's code), the nearest return address
//! into the compiled code on the stack: the call that led there. The
//! runtime maps both back to BPF instructions, source lines and helpers.
//! No PMU is needed (this machine has none); the cost is one signal
//! delivery per period, which the sampled batches' ns/packet includes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use anyhow::{Result, bail};

/// Time between samples: ~10,000 a second; odd, so it does not beat with a loop.
pub const PERIOD_NS: i64 = 97_000;
/// Samples kept per profile.
const CAPACITY: usize = 1 << 17;
/// Code ranges the stack scan recognises.
const MAX_RANGES: usize = 16;
/// Words of stack the handler looks through for a return into compiled code.
const STACK_WORDS: usize = 512;

static SAMPLES: [AtomicU64; 2 * CAPACITY] = [const { AtomicU64::new(0) }; 2 * CAPACITY];
static TAKEN: AtomicUsize = AtomicUsize::new(0);
static RANGES: [AtomicU64; 2 * MAX_RANGES] = [const { AtomicU64::new(0) }; 2 * MAX_RANGES];
static RANGE_COUNT: AtomicUsize = AtomicUsize::new(0);
/// The stack address the scan stops at: a local of `Sampler::start`'s
/// frame. Every sample of interest is taken in calls below the function
/// that started the profile, so the stack from a sample's pointer up to
/// here is live.
static STACK_LIMIT: AtomicU64 = AtomicU64::new(0);
/// One profile at a time in the process.
static BUSY: AtomicBool = AtomicBool::new(false);

/// One sample: the interrupted address, and the return address into
/// compiled code that called out to it (0 when it was in compiled code or
/// none was found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub ip: u64,
    pub caller: u64,
}

fn in_code(addr: u64) -> bool {
    let n = RANGE_COUNT.load(Ordering::Relaxed);
    (0..n).any(|i| {
        let (start, end) = (RANGES[2 * i].load(Ordering::Relaxed), RANGES[2 * i + 1].load(Ordering::Relaxed));
        addr >= start && addr < end
    })
}

extern "C" fn on_sample(_sig: libc::c_int, _info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // Async-signal-safe: reads of the interrupted context and stack, atomic stores.
    // SAFETY: the kernel passes a ucontext_t to an SA_SIGINFO handler.
    let uc = unsafe { &*(context as *const libc::ucontext_t) };
    let ip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as u64;
    let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as u64;
    let mut caller = 0;
    let limit = STACK_LIMIT.load(Ordering::Relaxed);
    if !in_code(ip) && RANGE_COUNT.load(Ordering::Relaxed) > 0 {
        for k in 0..STACK_WORDS as u64 {
            let at = sp + 8 * k;
            if at >= limit {
                break;
            }
            // SAFETY: a word of this thread's live stack, between the
            // interrupted stack pointer and the frame that started sampling.
            let word = unsafe { std::ptr::read_volatile(at as *const u64) };
            if in_code(word) {
                caller = word;
                break;
            }
        }
    }
    let i = TAKEN.fetch_add(1, Ordering::Relaxed);
    if i < CAPACITY {
        SAMPLES[2 * i].store(ip, Ordering::Relaxed);
        SAMPLES[2 * i + 1].store(caller, Ordering::Relaxed);
    }
}

/// A running profile of this thread; stopped (timer deleted, handler
/// restored) by [`Sampler::finish`] or on drop.
pub struct Sampler {
    timer: libc::timer_t,
    old_action: libc::sigaction,
    stopped: bool,
}

impl Sampler {
    /// Starts sampling this thread, recognising `code` (compiled programs'
    /// [start, end) ranges) as the places samples are attributed to.
    pub fn start(code: &[(u64, u64)]) -> Result<Sampler> {
        if code.len() > MAX_RANGES {
            bail!("a profile covers at most {MAX_RANGES} compiled programs, not {}", code.len());
        }
        if BUSY.swap(true, Ordering::Acquire) {
            bail!("another profile is running in this process");
        }
        for (i, &(start, end)) in code.iter().enumerate() {
            RANGES[2 * i].store(start, Ordering::Relaxed);
            RANGES[2 * i + 1].store(end, Ordering::Relaxed);
        }
        RANGE_COUNT.store(code.len(), Ordering::Relaxed);
        let here = 0u64;
        STACK_LIMIT.store(std::hint::black_box(&here) as *const u64 as u64, Ordering::Relaxed);
        TAKEN.store(0, Ordering::Relaxed);
        match Self::arm() {
            Ok(s) => Ok(s),
            Err(e) => {
                BUSY.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    fn arm() -> Result<Sampler> {
        // SAFETY: plain libc calls on zeroed structs; the handler is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sample as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old_action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGPROF, &action, &mut old_action) != 0 {
                bail!("cannot install the profiler's SIGPROF handler: {}", std::io::Error::last_os_error());
            }
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = libc::SIGPROF;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::mem::zeroed();
            if libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) != 0 {
                let e = std::io::Error::last_os_error();
                libc::sigaction(libc::SIGPROF, &old_action, std::ptr::null_mut());
                bail!("cannot create the profiler's timer: {e}");
            }
            let period = libc::timespec { tv_sec: 0, tv_nsec: PERIOD_NS };
            let spec = libc::itimerspec { it_interval: period, it_value: period };
            if libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) != 0 {
                let e = std::io::Error::last_os_error();
                libc::timer_delete(timer);
                libc::sigaction(libc::SIGPROF, &old_action, std::ptr::null_mut());
                bail!("cannot start the profiler's timer: {e}");
            }
            Ok(Sampler { timer, old_action, stopped: false })
        }
    }

    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        // SAFETY: the timer and the action saved in `arm`. Deleting the timer
        // first: no SIGPROF of ours arrives once the old action is back.
        unsafe {
            libc::timer_delete(self.timer);
            libc::sigaction(libc::SIGPROF, &self.old_action, std::ptr::null_mut());
        }
        RANGE_COUNT.store(0, Ordering::Relaxed);
        BUSY.store(false, Ordering::Release);
    }

    /// Stops sampling; the samples taken (at most the capacity).
    pub fn finish(mut self) -> Vec<Sample> {
        self.stop();
        let n = TAKEN.load(Ordering::Relaxed).min(CAPACITY);
        (0..n)
            .map(|i| Sample {
                ip: SAMPLES[2 * i].load(Ordering::Relaxed),
                caller: SAMPLES[2 * i + 1].load(Ordering::Relaxed),
            })
            .collect()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_is_sampled_about_once_a_period() {
        let s = Sampler::start(&[]).unwrap();
        assert!(Sampler::start(&[]).is_err(), "one profile at a time");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let samples = s.finish();
        // 50 ms / 97 µs is ~515 samples; generous for a loaded machine.
        assert!((100..=2000).contains(&samples.len()), "{} samples", samples.len());
        assert!(samples.iter().all(|s| s.ip != 0 && s.caller == 0), "no compiled code was named");
        // Stopped: nothing more arrives.
        let before = TAKEN.load(Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(TAKEN.load(Ordering::Relaxed), before);
    }
}

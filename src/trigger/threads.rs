//! Threads that take turns firing a trigger. What the attach path costs
//! an event moves with the thread that fires it (its kernel stack and
//! task are placed anew for each): on the getppid tracepoint here, the
//! slowdown of one thread's pairs was ~145 ns or ~167 ns, and a run firing
//! from its main thread alone paid 170 instead of 146 one run in five.
//! Fired from several threads in turn, the median is one over placements:
//! among eight threads one to four paid the higher cost (the third made
//! in almost every run), and a run with four gave 156.5 ns against three
//! runs' 145-148; among sixteen, five runs in a row had that one thread
//! alone and gave 144.6-145.7. (A second load of the object moved
//! nothing: 40 loads over five runs, 141-149 ns; nor did the program's
//! own ns per run differ by thread.)

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};

use super::Trigger;

/// Threads to take turns among.
pub const FIRING_THREADS: usize = 16;

/// Threads alive as long as this is, each firing the trigger handed to it
/// and handing it back. They are made on the calling thread's CPUs (a
/// thread inherits its maker's affinity), so make them after pinning.
pub struct FiringThreads {
    to: Vec<Sender<(Trigger, u64)>>,
    back: Receiver<(Trigger, Result<u64>)>,
    handles: Vec<JoinHandle<()>>,
}

impl FiringThreads {
    pub fn start(count: usize) -> Result<FiringThreads> {
        let (done, back) = channel();
        let (mut to, mut handles) = (Vec::new(), Vec::new());
        for i in 0..count.max(1) {
            let (tx, rx) = channel::<(Trigger, u64)>();
            let done: Sender<(Trigger, Result<u64>)> = done.clone();
            let handle = std::thread::Builder::new()
                .name(format!("bpfbench-fire{i}"))
                .spawn(move || {
                    for (mut trigger, events) in rx {
                        let timed = trigger.timed(events);
                        if done.send((trigger, timed)).is_err() {
                            break;
                        }
                    }
                })
                .context("starting a thread to fire the trigger")?;
            to.push(tx);
            handles.push(handle);
        }
        Ok(FiringThreads { to, back, handles })
    }

    pub fn count(&self) -> usize {
        self.to.len()
    }

    /// `events` of `trigger` fired on thread `thread` (modulo their
    /// number), and the wall-clock ns they took. The trigger comes back
    /// whatever happened, unless the thread died with it.
    pub fn timed(&self, thread: usize, trigger: Trigger, events: u64) -> (Option<Trigger>, Result<u64>) {
        let lost = || anyhow!("a thread firing the trigger ended");
        if self.to[thread % self.to.len()].send((trigger, events)).is_err() {
            return (None, Err(lost()));
        }
        match self.back.recv() {
            Ok((trigger, timed)) => (Some(trigger), timed),
            Err(_) => (None, Err(lost())),
        }
    }
}

impl Drop for FiringThreads {
    fn drop(&mut self) {
        // Closing their channels ends them.
        self.to.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger::{SimpleSyscall, TriggerKind};

    fn firing_threads_alive() -> usize {
        let names = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok());
        names.filter(|n| n.starts_with("bpfbench-fire")).count()
    }

    #[test]
    fn each_firing_thread_fires_the_trigger_and_hands_it_back() {
        let before = firing_threads_alive();
        let threads = FiringThreads::start(3).unwrap();
        let mut trigger = Trigger::prepare(TriggerKind::Syscall(SimpleSyscall::Getppid)).unwrap();
        for thread in 0..5 {
            let (back, timed) = threads.timed(thread, trigger, 100);
            assert!(timed.unwrap() > 0);
            trigger = back.expect("the trigger comes back");
        }
        // Each has fired (and so named itself): three alive at once.
        assert!(firing_threads_alive() >= before + 3);
        drop(threads);
        assert_eq!(trigger.kind(), &TriggerKind::Syscall(SimpleSyscall::Getppid));
    }
}

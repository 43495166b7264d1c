//! Times map freeing with fentry/fexit on bpf_map_free_deferred
//! (free_probe.bpf.c), where the kernel allows tracing programs.

use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore};

crate::bpf_skeleton!("free_probe");
use skel::{FreeProbeSkel, FreeProbeSkelBuilder};

/// A map name no other map of this process has (at most 15 bytes): the
/// probe knows its target by name.
pub fn unique_name() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("bbfree{:05x}{:04x}", std::process::id() & 0xfffff, n & 0xffff)
}

/// The kernel frees maps from a workqueue; give it this long.
const FREE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct FreeProbe {
    skel: FreeProbeSkel<'static>,
    _links: Vec<Link>,
}

impl FreeProbe {
    /// Loads and attaches the probe, or says in one line why this kernel
    /// cannot (e.g. tracing programs refused with EPERM).
    pub fn attach() -> std::result::Result<FreeProbe, String> {
        let refused =
            |what: &str, e: &dyn std::fmt::Display| format!("fentry/fexit on bpf_map_free_deferred {what}: {e}");
        // The skeleton borrows its storage for as long as it lives; the probe
        // is created at most once per run, so the few bytes are leaked.
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = FreeProbeSkelBuilder::default().open(storage).map_err(|e| refused("cannot be opened", &e))?;
        let skel = open.load().map_err(|e| refused("refused by the kernel", &e))?;
        let links = [&skel.progs.on_free_enter, &skel.progs.on_free_exit]
            .iter()
            .map(|p| p.attach())
            .collect::<libbpf_rs::Result<Vec<_>>>()
            .map_err(|e| refused("cannot be attached", &e))?;
        Ok(FreeProbe { skel, _links: links })
    }

    /// Drops `map` (its last reference) and returns when the kernel started
    /// freeing it (bpf_ktime_get_ns) and how long that took, as fentry/fexit
    /// saw it. The map's name must be unique to this probe ([`unique_name`]).
    pub fn time_free(&mut self, map: libbpf_rs::MapHandle) -> Result<(u64, Duration)> {
        let info = map.info().context("reading the map's name")?;
        let id = info.info.id;
        let mut name = [0u8; 16];
        for (to, from) in name.iter_mut().zip(info.info.name.iter()) {
            *to = *from as u8;
        }
        let bss = self.skel.maps.bss_data.as_deref_mut().context("free_probe has no .bss")?;
        bss.freed = 0;
        bss.started_ns = 0;
        bss.free_ns = 0;
        bss.target_work = 0;
        bss.target_name = [u64::from_ne_bytes(name[..8].try_into()?), u64::from_ne_bytes(name[8..].try_into()?)];
        drop(map);
        let start = Instant::now();
        loop {
            let bss = self.skel.maps.bss_data.as_deref_mut().context("free_probe has no .bss")?;
            // SAFETY: the field lives in the BPF-shared mmap; BPF writes it, so read it volatile.
            if unsafe { std::ptr::read_volatile(&bss.freed) } != 0 {
                let (started, took) =
                    unsafe { (std::ptr::read_volatile(&bss.started_ns), std::ptr::read_volatile(&bss.free_ns)) };
                bss.target_name = [0; 2];
                return Ok((started, Duration::from_nanos(took)));
            }
            if start.elapsed() > FREE_TIMEOUT {
                bss.target_name = [0; 2];
                bail!("map {id} was not freed within {FREE_TIMEOUT:?} of dropping its last reference");
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

//! Hash maps with the kernel's zero hash seed (`BPF_F_ZERO_SEED`), where
//! instructions are counted: a hash map's seed is random per map, so a
//! lookup's bucket chain, and the instructions it walks, would differ from
//! boot to boot (seen: 4 instructions a packet in xdp-lb's pass-v6-no-vip).
//! With every hash map seeded alike, a kernel counts the same on every
//! boot, and two kernels count the same buckets.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use libbpf_rs::MapType;
use libbpf_rs::libbpf_sys as sys;

static ZERO_SEED: AtomicBool = AtomicBool::new(false);

/// From now on, hash maps this process loads get the zero seed.
pub fn use_zero_seed() {
    ZERO_SEED.store(true, Ordering::Relaxed);
}

fn hashed(t: MapType) -> bool {
    matches!(t, MapType::Hash | MapType::PercpuHash | MapType::LruHash | MapType::LruPercpuHash | MapType::HashOfMaps)
}

/// Sets the zero seed on `open`'s hash maps, if asked to ([`use_zero_seed`]).
pub fn apply(open: &mut libbpf_rs::OpenObject) -> Result<()> {
    if !ZERO_SEED.load(Ordering::Relaxed) {
        return Ok(());
    }
    for m in open.maps_mut() {
        apply_raw(libbpf_rs::AsRawLibbpf::as_libbpf_object(&m).as_ptr())
            .with_context(|| format!("map {:?}", m.name()))?;
    }
    Ok(())
}

/// [`apply`] on a raw libbpf object's map, before load.
pub(crate) fn apply_raw(map: *mut sys::bpf_map) -> Result<()> {
    if !ZERO_SEED.load(Ordering::Relaxed) {
        return Ok(());
    }
    // SAFETY: a map of an opened, not yet loaded object.
    unsafe {
        if hashed(MapType::from(sys::bpf_map__type(map))) {
            let rc = sys::bpf_map__set_map_flags(map, sys::bpf_map__map_flags(map) | sys::BPF_F_ZERO_SEED);
            // -EBUSY: a reused map, created (and seeded) by another object.
            anyhow::ensure!(rc == 0 || rc == -libc::EBUSY, "setting a map's zero hash seed: error {rc}");
        }
    }
    Ok(())
}

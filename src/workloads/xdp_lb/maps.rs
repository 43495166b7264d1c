//! Host mirrors of lb_common.h and the loaded load balancer: its programs,
//! its maps and the operations the scenarios need on them (configure, reset,
//! read counters). Addresses are kept as network-order bytes throughout.

use std::mem::MaybeUninit;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd};

use anyhow::{Context, Result};
use bytemuck::{Pod, Zeroable};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use super::maglev::{RingMember, build_ring};
use super::topology::{NEXT_HOP_MAC, Pool, UDP_LRU_TIMEOUT_NS, VIPS, reals};
use crate::harness::system::{self, libbpf_log_tail};
use crate::harness::skel_fds::{map_handle, prog_fd};
use crate::harness::timing::TimedXdpProgram;

mod skel {
    #![allow(clippy::all, dead_code, unused_imports, non_camel_case_types, non_snake_case)]
    include!(concat!(env!("OUT_DIR"), "/xdp_lb.skel.rs"));
}
use skel::{XdpLbSkelBuilder, types};

/// Sizes from lb_common.h.
pub const RING_SIZE: u32 = 65537;
pub const LRU_SIZE: u32 = 16384;
pub const MAX_VIPS: u32 = 16;
pub const MAX_REALS: u32 = 128;
pub const MAX_CPUS: usize = 128;
pub const VIP_LRU_BYPASS: u32 = 1 << 1;
pub const REAL_IPV6: u8 = 1;

/// `enum lb_counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Counter {
    LruHit = 0,
    LruMissTcpSyn,
    LruMissTcpNonSyn,
    LruMissUdp,
    LruUdpExpired,
    LruInsert,
    ChLookup,
    XdpAborted,
    XdpDrop,
    XdpPass,
    XdpTx,
}
pub const COUNTER_COUNT: u32 = 11;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct VipKey {
    pub addr: [u8; 16],
    pub port_be: [u8; 2],
    pub proto: u8,
    pub _pad: u8,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct VipMeta {
    pub flags: u32,
    pub vip_num: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct RealDef {
    pub addr: [u8; 16],
    pub flags: u8,
    pub _pad: [u8; 3],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct Ctl {
    pub default_mac: [u8; 6],
    pub _pad: [u8; 2],
    pub udp_lru_timeout_ns: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct Stat {
    pub packets: u64,
    pub bytes: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct FlowGen {
    pub enabled: u32,
    pub mask: u32,
    pub repeat: u32,
    pub addr_off: u16,
    pub l3_csum_off: u16,
    pub l4_csum_off: u16,
    pub l4_is_udp: u16,
    /// Raw memory words, exactly as in the packet.
    pub base_addr: [u8; 4],
    pub base_l3_csum: [u8; 2],
    pub base_l4_csum: [u8; 2],
    pub _pad: u32,
    pub seq: u64,
}

// The mirrors must match the BPF object's BTF, as the skeleton generated it.
const _: () = {
    assert!(size_of::<VipKey>() == size_of::<types::lb_vip_key>());
    assert!(size_of::<VipMeta>() == size_of::<types::lb_vip_meta>());
    assert!(size_of::<RealDef>() == size_of::<types::lb_real>());
    assert!(size_of::<Ctl>() == size_of::<types::lb_ctl>());
    assert!(size_of::<Stat>() == size_of::<types::lb_stat>());
    assert!(size_of::<FlowGen>() == size_of::<types::lb_flowgen>());
    assert!(size_of::<crate::harness::timing::BenchCtl>() == size_of::<types::bench_ctl>());
    assert!(size_of::<crate::harness::timing::BenchResult>() == size_of::<types::bench_result>());
};

pub fn addr_bytes(addr: IpAddr) -> [u8; 16] {
    let mut out = [0u8; 16];
    match addr {
        IpAddr::V4(a) => out[..4].copy_from_slice(&a.octets()),
        IpAddr::V6(a) => out = a.octets(),
    }
    out
}

fn key(k: u32) -> [u8; 4] {
    k.to_ne_bytes()
}

/// The load balancer, loaded: two timed programs and the maps they share.
pub struct LoadedLb {
    pub body: TimedXdpProgram,
    pub baseline: TimedXdpProgram,
    vip_map: MapHandle,
    reals: MapHandle,
    ch_rings: MapHandle,
    lru_mapping: MapHandle,
    fallback_lru: MapHandle,
    ctl_array: MapHandle,
    vip_stats: MapHandle,
    real_stats: MapHandle,
    counters: MapHandle,
    flowgen: MapHandle,
    /// The host's copy of each VIP's ring, indexed by VIP number.
    rings: Vec<Vec<u32>>,
}

impl LoadedLb {
    /// Loads the object, fills VIPs, reals, rings and per-CPU LRUs.
    pub fn load() -> Result<LoadedLb> {
        system::take_libbpf_log();
        let mut storage = MaybeUninit::uninit();
        let open = XdpLbSkelBuilder::default()
            .open(&mut storage)
            .context("opening the xdp-lb BPF object")?;
        let skel = open.load().map_err(|e| {
            anyhow::anyhow!(
                "the kernel refused the xdp-lb programs ({e}); verifier log tail:\n{}",
                libbpf_log_tail(25)
            )
        })?;
        let m = &skel.maps;
        let p = &skel.progs;
        let lb = LoadedLb {
            body: TimedXdpProgram::new(prog_fd(&p.xdp_lb)?, map_handle(&m.bench_ctl)?, map_handle(&m.bench_result)?)?,
            baseline: TimedXdpProgram::new(prog_fd(&p.xdp_lb_overhead)?, map_handle(&m.bench_ctl)?, map_handle(&m.bench_result)?)?,
            vip_map: map_handle(&m.vip_map)?,
            reals: map_handle(&m.reals)?,
            ch_rings: map_handle(&m.ch_rings)?,
            lru_mapping: map_handle(&m.lru_mapping)?,
            fallback_lru: map_handle(&m.fallback_lru)?,
            ctl_array: map_handle(&m.ctl_array)?,
            vip_stats: map_handle(&m.vip_stats)?,
            real_stats: map_handle(&m.real_stats)?,
            counters: map_handle(&m.lb_counters)?,
            flowgen: map_handle(&m.flowgen)?,
            rings: Vec::new(),
        };
        drop(skel);
        let mut lb = lb;
        lb.configure()?;
        Ok(lb)
    }

    fn configure(&mut self) -> Result<()> {
        self.set_udp_timeout(UDP_LRU_TIMEOUT_NS)?;
        for pool in [Pool::V4, Pool::V6] {
            for r in reals(pool) {
                let def = RealDef {
                    addr: addr_bytes(r.addr),
                    flags: if r.addr.is_ipv6() { REAL_IPV6 } else { 0 },
                    _pad: [0; 3],
                };
                self.reals.update(&key(r.pos), bytemuck::bytes_of(&def), MapFlags::ANY)?;
            }
        }
        for vip in VIPS {
            let k = VipKey { addr: addr_bytes(vip.addr), port_be: vip.port.to_be_bytes(), proto: vip.proto, _pad: 0 };
            let meta = VipMeta { flags: if vip.lru_bypass { VIP_LRU_BYPASS } else { 0 }, vip_num: vip.num };
            self.vip_map.update(bytemuck::bytes_of(&k), bytemuck::bytes_of(&meta), MapFlags::ANY)?;
            let members: Vec<RingMember> = reals(vip.pool).iter().map(|r| RingMember { pos: r.pos, weight: 1 }).collect();
            let ring = build_ring(&members, RING_SIZE);
            let keys: Vec<u8> = (0..RING_SIZE).flat_map(|i| (vip.num * RING_SIZE + i).to_ne_bytes()).collect();
            let values: Vec<u8> = ring.iter().flat_map(|p| p.to_ne_bytes()).collect();
            self.ch_rings
                .update_batch(&keys, &values, RING_SIZE, MapFlags::ANY, MapFlags::ANY)
                .with_context(|| format!("filling the ring of VIP {}", vip.num))?;
            if self.rings.len() <= vip.num as usize {
                self.rings.resize(vip.num as usize + 1, Vec::new());
            }
            self.rings[vip.num as usize] = ring;
        }
        self.reset_lru()
    }

    /// Writes the control map: the next-hop MAC and the UDP LRU timeout.
    pub fn set_udp_timeout(&self, udp_lru_timeout_ns: u64) -> Result<()> {
        let ctl = Ctl { default_mac: NEXT_HOP_MAC, udp_lru_timeout_ns, ..Default::default() };
        self.ctl_array.update(&key(0), bytemuck::bytes_of(&ctl), MapFlags::ANY).context("writing ctl_array")
    }

    /// The real position the VIP's ring holds for `hash`.
    pub fn ring_slot(&self, vip_num: u32, hash: u32) -> u32 {
        self.rings[vip_num as usize][(hash % RING_SIZE) as usize]
    }

    /// Gives every CPU a fresh, empty connection table.
    pub fn reset_lru(&self) -> Result<()> {
        let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
            sz: size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        };
        for cpu in 0..system::possible_cpus()?.min(MAX_CPUS) {
            let lru = MapHandle::create(
                MapType::LruHash,
                Some("lb_lru"),
                size_of::<types::lb_flow_key>() as u32,
                size_of::<types::lb_real_pos_lru>() as u32,
                LRU_SIZE,
                &opts,
            )
            .context("creating a per-CPU LRU")?;
            let fd = lru.as_fd().as_raw_fd() as u32;
            self.lru_mapping.update(&key(cpu as u32), &fd.to_ne_bytes(), MapFlags::ANY)?;
        }
        let keys: Vec<Vec<u8>> = self.fallback_lru.keys().collect();
        for k in keys {
            let _ = self.fallback_lru.delete(&k);
        }
        Ok(())
    }

    /// Zeroes every per-CPU counter.
    pub fn reset_counters(&self) -> Result<()> {
        let cpus = system::possible_cpus()?;
        for (map, entries, size) in [
            (&self.counters, COUNTER_COUNT, 8usize),
            (&self.vip_stats, MAX_VIPS, size_of::<Stat>()),
            (&self.real_stats, MAX_REALS, size_of::<Stat>()),
        ] {
            let zeros = vec![vec![0u8; size]; cpus];
            for k in 0..entries {
                map.update_percpu(&key(k), &zeros, MapFlags::ANY)?;
            }
        }
        Ok(())
    }

    pub fn counter(&self, c: Counter) -> Result<u64> {
        let per_cpu = self.counters.lookup_percpu(&key(c as u32), MapFlags::ANY)?.context("counter slot missing")?;
        Ok(per_cpu.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().expect("8-byte counter"))).sum())
    }

    fn stat(map: &MapHandle, idx: u32) -> Result<Stat> {
        let per_cpu = map.lookup_percpu(&key(idx), MapFlags::ANY)?.context("stat slot missing")?;
        Ok(per_cpu.iter().map(|v| bytemuck::pod_read_unaligned::<Stat>(v)).fold(Stat::default(), |a, s| Stat {
            packets: a.packets + s.packets,
            bytes: a.bytes + s.bytes,
        }))
    }

    pub fn vip_stat(&self, vip_num: u32) -> Result<Stat> {
        Self::stat(&self.vip_stats, vip_num)
    }

    pub fn real_stat(&self, pos: u32) -> Result<Stat> {
        Self::stat(&self.real_stats, pos)
    }

    pub fn set_flowgen(&self, g: FlowGen) -> Result<()> {
        self.flowgen.update(&key(0), bytemuck::bytes_of(&g), MapFlags::ANY).context("writing flowgen")
    }
}

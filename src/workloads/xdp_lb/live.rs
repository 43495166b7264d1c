//! The load balancer on an interface (`bpfbench live xdp-lb`): its
//! datapath program alone, configured as in the in-BPF suite, with
//! connection tables of the size asked.

use std::os::fd::{AsFd, BorrowedFd};

use anyhow::{Context, Result, ensure};

use super::addressing::{CLIENT_V4, LB_MAC, ROUTER_MAC, VIP_UDP_V4};
use super::cross_check;
use super::datapath::{Counter, LoadedLb};
use crate::live::{LiveProgram, LruCounts};
use crate::record::live::{CrossCheck, LiveStep};

pub struct LiveLb {
    lb: LoadedLb,
    lru_entries: u32,
}

impl LiveLb {
    /// Loads bpfbench's build of the load balancer with per-CPU connection
    /// tables of `lru_entries` each.
    pub fn load(lru_entries: u32) -> Result<LiveLb> {
        ensure!(lru_entries >= 1, "--lru-size must be at least 1");
        let lb = LoadedLb::load(&LoadedLb::builtin())?;
        ensure!(lb.live.is_some(), "this build of xdp_lb.bpf.c has no xdp_lb_live program");
        let mut live = LiveLb { lb, lru_entries };
        live.reset()?;
        Ok(live)
    }
}

impl LiveProgram for LiveLb {
    fn label(&self) -> String {
        "xdp-lb".into()
    }

    fn prog(&self) -> BorrowedFd<'_> {
        self.lb.live.as_ref().expect("checked at load").as_fd()
    }

    /// IPv4 UDP from the suite's client to its UDP VIP, as a router would
    /// hand it to the balancer.
    fn default_packet(&self) -> String {
        let mac = |m: [u8; 6]| m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        format!(
            "eth(src={},dst={})/ipv4(src={CLIENT_V4},dst={})/udp(sport=31337,dport={})/payload(18)",
            mac(ROUTER_MAC),
            mac(LB_MAC),
            VIP_UDP_V4.addr,
            VIP_UDP_V4.port
        )
    }

    fn reset(&mut self) -> Result<()> {
        self.lb
            .reset_lru_sized(self.lru_entries)
            .with_context(|| format!("creating connection tables of {} entries", self.lru_entries))
    }

    fn lru_capacity(&self) -> Option<u64> {
        Some(u64::from(self.lru_entries))
    }

    fn lru_counts(&self) -> Result<Option<LruCounts>> {
        let misses =
            [Counter::LB_CNT_LRU_MISS_TCP_SYN, Counter::LB_CNT_LRU_MISS_TCP_NONSYN, Counter::LB_CNT_LRU_MISS_UDP]
                .into_iter()
                .map(|c| self.lb.counter(c))
                .sum::<Result<u64>>()?;
        Ok(Some(LruCounts { hits: self.lb.counter(Counter::LB_CNT_LRU_HIT)?, misses }))
    }

    fn cross_checks(&self, steps: &[LiveStep]) -> bool {
        steps.iter().any(|s| s.lru.is_some())
    }

    /// A live ns/packet beside the in-BPF hit and miss scenarios' figures
    /// weighted by the step's measured hit rate (steps that saw the LRU).
    fn cross_check(&mut self, steps: &[LiveStep], cpu: usize) -> Result<CrossCheck> {
        Ok(cross_check::cross_check(cross_check::measure_in_bpf(cpu)?, steps))
    }
}

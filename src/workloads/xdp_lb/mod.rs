//! The Katran-model XDP load balancer workload (`xdp-lb`).
//!
//! The BPF datapath is xdp_lb.bpf.c; this module configures it per scenario,
//! validates each scenario (verdict, byte-exact output packet, counters that
//! prove the code path) and runs timed batches for the harness.

mod jhash;
mod maglev;
mod maps;
mod packets;
mod scenarios;
mod topology;

use std::net::IpAddr;
use std::sync::LazyLock;

use anyhow::{Context, Result, bail, ensure};

use crate::harness::packet_diff::diff_packets;
use crate::harness::test_run::xdp_action_name;
use crate::harness::timing::RestoreMode;
use crate::harness::{BatchTiming, ScenarioInfo, Validation, Variant, Workload};
use maps::{Counter, FlowGen, LoadedLb};
use packets::{ClientPacket, L4, build_client_packet, build_encapsulated};
use scenarios::{Flows, LbScenario, Path, SCENARIOS, flow_source};
use topology::{Pool, Vip, real_at, reals};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

/// Timed iterations of the validation batch: 8191 + 1 untimed = 8192 packets,
/// two full passes over the 4096 diverse flows.
pub const VALIDATION_ITERS: u32 = 8191;

static INFOS: LazyLock<Vec<ScenarioInfo>> = LazyLock::new(|| SCENARIOS.iter().map(|s| s.info.clone()).collect());

/// The scenario currently configured in the maps.
struct Prepared {
    scenario: &'static LbScenario,
    packet: Vec<u8>,
    verdict: u32,
}

#[derive(Default)]
pub struct XdpLb {
    lb: Option<LoadedLb>,
    cpu: usize,
    prepared: Option<Prepared>,
    /// Test hook: flip one byte of the expected packet to prove validation bites.
    pub corrupt_expected_byte: Option<usize>,
    /// Test hook: override the UDP LRU timeout (ns).
    pub udp_timeout_ns: Option<u64>,
}

/// Byte offsets the flow generator needs in a client packet.
fn flowgen_for(p: &ClientPacket, bytes: &[u8], flows: Flows) -> Result<FlowGen> {
    let Some((mask, repeat)) = flows.generator() else {
        return Ok(FlowGen::default());
    };
    let is_udp = p.l4 == L4::Udp;
    let l4_csum = if is_udp { 6 } else { 16 };
    let (addr_off, l3_csum_off, l4_off) = match p.src {
        IpAddr::V4(_) => (14 + 12, 14 + 10, 14 + 20),
        IpAddr::V6(_) => (14 + 8 + 12, 0, 14 + 40),
    };
    let l4_csum_off = l4_off + l4_csum;
    ensure!(bytes.len() > l4_csum_off + 2, "packet too short for the flow generator");
    let word2 = |o: usize| [bytes[o], bytes[o + 1]];
    Ok(FlowGen {
        enabled: 1,
        mask,
        repeat,
        addr_off: addr_off as u16,
        l3_csum_off: l3_csum_off as u16,
        l4_csum_off: l4_csum_off as u16,
        l4_is_udp: is_udp as u16,
        base_addr: bytes[addr_off..addr_off + 4].try_into().expect("4 bytes"),
        base_l3_csum: if l3_csum_off != 0 { word2(l3_csum_off) } else { [0; 2] },
        base_l4_csum: word2(l4_csum_off),
        _pad: 0,
        seq: 0,
    })
}

/// Flow index of the `k`-th packet (0-based) after the generator was reset.
fn flow_index(flows: Flows, k: u32) -> u32 {
    flows.generator().map_or(0, |(mask, repeat)| (k / repeat) & mask)
}

/// Distinct flows among the first `n` packets.
fn distinct_flows(flows: Flows, n: u32) -> u32 {
    match flows.generator() {
        None => 1,
        Some((mask, repeat)) => n.div_ceil(repeat).min(mask + 1),
    }
}

/// Katran's flow hash, as the BPF side computes it (see lb_flow_hash).
fn flow_hash(p: &ClientPacket) -> u32 {
    let ports = jhash::word([p.sport.to_be_bytes()[0], p.sport.to_be_bytes()[1], p.dport.to_be_bytes()[0], p.dport.to_be_bytes()[1]]);
    match p.src {
        IpAddr::V4(a) => jhash::jhash_2words(jhash::word(a.octets()), ports, maps::RING_SIZE),
        IpAddr::V6(a) => {
            let o = a.octets();
            let w = |i: usize| jhash::word([o[i], o[i + 1], o[i + 2], o[i + 3]]);
            let h = jhash::jhash_16bytes([w(0), w(4), w(8), w(12)], 16);
            jhash::jhash_2words(h, ports, maps::RING_SIZE)
        }
    }
}

fn l3_len(packet: &[u8]) -> u64 {
    (packet.len() - 14) as u64
}

/// Counter expectations for `n` packets along `path`.
fn expected_counters(s: &LbScenario, n: u32) -> Vec<(Counter, u64, &'static str)> {
    let n = n as u64;
    let miss = if s.packet.l4 == L4::Udp { Counter::LruMissUdp } else { Counter::LruMissTcpNonSyn };
    let distinct = distinct_flows(s.flows, n as u32) as u64;
    let lru = |hit: u64, syn: u64, miss_n: u64, ch: u64, ins: u64| {
        vec![
            (Counter::LruHit, hit, "LRU hits"),
            (Counter::LruMissTcpSyn, syn, "LRU misses, TCP SYN"),
            (miss, miss_n, if miss == Counter::LruMissUdp { "LRU misses, UDP" } else { "LRU misses, TCP non-SYN" }),
            (Counter::ChLookup, ch, "consistent-hash lookups"),
            (Counter::LruInsert, ins, "LRU inserts"),
        ]
    };
    let mut out = match s.path {
        Path::LruHit => lru(n, 0, 0, 0, 0),
        Path::ConsistentHash => lru(0, 0, 0, n, 0),
        Path::Syn => lru(0, n, 0, n, n),
        Path::RstMiss => lru(0, 0, n, n, 0),
        Path::LruMiss => lru(0, 0, n, n, n),
        Path::LruFirstMiss => lru(n - distinct, 0, distinct, distinct, distinct),
        Path::Pass => vec![(Counter::XdpPass, n, "XDP_PASS verdicts"), (Counter::ChLookup, 0, "consistent-hash lookups")],
        Path::Drop => vec![(Counter::XdpDrop, n, "XDP_DROP verdicts"), (Counter::ChLookup, 0, "consistent-hash lookups")],
    };
    if !matches!(s.path, Path::Pass | Path::Drop) {
        out.push((Counter::XdpTx, n, "XDP_TX verdicts"));
    }
    out.push((Counter::XdpAborted, 0, "XDP_ABORTED verdicts"));
    if s.packet.l4 == L4::Udp {
        out.push((Counter::LruUdpExpired, 0, "expired UDP entries"));
    }
    out
}

impl XdpLb {
    fn lb(&self) -> Result<&LoadedLb> {
        self.lb.as_ref().context("xdp-lb used before setup")
    }

    /// The real a client packet must be sent to, from the host's copy of the ring.
    fn expected_real(&self, vip: &Vip, p: &ClientPacket) -> Result<IpAddr> {
        let pos = self.lb()?.ring_slot(vip.num, flow_hash(p));
        Ok(real_at(pos).with_context(|| format!("ring slot holds unknown real {pos}"))?.addr)
    }

    fn check_stats(&self, s: &LbScenario, n: u32, final_packet: &ClientPacket, checks: &mut Vec<String>) -> Result<()> {
        let lb = self.lb()?;
        let n = n as u64;
        let Some(vip) = s.vip.filter(|_| !matches!(s.path, Path::Pass | Path::Drop)) else {
            for vip in topology::VIPS {
                let st = lb.vip_stat(vip.num)?;
                ensure!(st.packets == 0, "VIP {} counted {} packets on an early-exit path", vip.num, st.packets);
            }
            checks.push("per-VIP packets: 0 (no VIP touched)".into());
            return Ok(());
        };
        let bytes = l3_len(&build_client_packet(final_packet)?);
        let st = lb.vip_stat(vip.num)?;
        ensure!(st.packets == n, "per-VIP packets: expected {n} (iterations + 1), got {}", st.packets);
        ensure!(st.bytes == n * bytes, "per-VIP bytes: expected {}, got {}", n * bytes, st.bytes);
        checks.push(format!("per-VIP packets: {n} = iterations + 1; bytes: {}", st.bytes));

        let pool = reals(vip.pool);
        let mut served = 0;
        let mut total = 0;
        for r in &pool {
            let st = lb.real_stat(r.pos)?;
            total += st.packets;
            served += (st.packets > 0) as usize;
        }
        ensure!(total == n, "per-real packets sum to {total}, expected {n}");
        if s.flows == Flows::Single {
            let real = self.expected_real(&vip, final_packet)?;
            let pos = pool.iter().find(|r| r.addr == real).map(|r| r.pos).context("real not in pool")?;
            let st = lb.real_stat(pos)?;
            ensure!(st.packets == n, "real {real} got {} packets, expected all {n}", st.packets);
            checks.push(format!("per-real packets: all {n} to {real}"));
        } else {
            ensure!(served == pool.len(), "only {served} of {} reals received traffic from thousands of flows", pool.len());
            checks.push(format!("per-real packets: {n} spread over all {} reals", pool.len()));
        }
        Ok(())
    }
}

impl Workload for XdpLb {
    fn name(&self) -> &'static str {
        "xdp-lb"
    }

    fn scenarios(&self) -> &[ScenarioInfo] {
        &INFOS
    }

    fn setup(&mut self, cpu: usize) -> Result<()> {
        self.cpu = cpu;
        if self.lb.is_none() {
            self.lb = Some(LoadedLb::load()?);
        }
        Ok(())
    }

    fn validate(&mut self, info: &ScenarioInfo) -> Result<Validation> {
        let s = scenarios::find(&info.name).with_context(|| format!("unknown xdp-lb scenario {}", info.name))?;
        self.prepared = None;
        let packet = build_client_packet(&s.packet)?;
        let verdict = match s.path {
            Path::Pass => XDP_PASS,
            Path::Drop => XDP_DROP,
            _ => XDP_TX,
        };
        let cpu = self.cpu;
        let lb = self.lb.as_mut().context("xdp-lb used before setup")?;
        lb.set_udp_timeout(self.udp_timeout_ns.unwrap_or(topology::UDP_LRU_TIMEOUT_NS))?;
        lb.reset_lru()?;
        lb.set_flowgen(flowgen_for(&s.packet, &packet, s.flows)?)?;
        if s.path == Path::LruHit {
            // Open the connection once so every timed packet finds it.
            let primed = lb.body.run_once(&packet)?;
            ensure!(primed.retval == XDP_TX, "priming the LRU returned {}", xdp_action_name(primed.retval));
        }
        lb.reset_counters()?;

        let (timing, out) = lb.body.run_batch(&packet, VALIDATION_ITERS, RestoreMode::OnResize, cpu)?;
        ensure!(
            timing.iters == VALIDATION_ITERS as u64,
            "the timing loop ran {} of {VALIDATION_ITERS} iterations",
            timing.iters
        );
        let n = VALIDATION_ITERS + 1;
        if out.retval != verdict {
            bail!("verdict: expected {}, got {}", xdp_action_name(verdict), xdp_action_name(out.retval));
        }
        let mut checks = vec![format!("verdict {} on all {n} packets", xdp_action_name(verdict))];

        let index = flow_index(s.flows, n - 1);
        let final_client = s.packet.with_src(flow_source(s.packet.src, index));
        let mut expected = match (verdict, s.vip) {
            (XDP_TX, Some(vip)) => build_encapsulated(&final_client, self.expected_real(&vip, &final_client)?)?,
            _ => build_client_packet(&final_client)?,
        };
        if let Some(i) = self.corrupt_expected_byte {
            let i = i.min(expected.len() - 1);
            expected[i] ^= 0xff;
        }
        if let Some(diff) = diff_packets(&expected, &out.packet) {
            bail!("output packet differs from the expected one:\n{diff}");
        }
        checks.push(format!("output packet: {} bytes, byte-exact", out.packet.len()));

        let lb = self.lb()?;
        for (counter, want, what) in expected_counters(s, n) {
            let got = lb.counter(counter)?;
            ensure!(got == want, "{what}: expected {want}, got {got}");
            checks.push(format!("{what}: {got}"));
        }
        self.check_stats(s, n, &final_client, &mut checks)?;

        let mut notes = Vec::new();
        if let Some((mask, repeat)) = s.flows.generator() {
            notes.push(format!("Flow diversity: {} unique src addrs (mask {mask:#x})", mask as u64 + 1));
            if s.flows != Flows::Diverse {
                notes.push("Cold LRU: enabled (the flow counter persists across batches; a flow returns after 16M packets)".into());
            }
            if repeat > 1 {
                notes.push(format!("{repeat} packets per flow: the first misses and inserts, the rest hit"));
            }
        }
        if s.vip.is_some_and(|v| v.pool == Pool::V6) && s.packet.src.is_ipv4() {
            notes.push("Cross-family: IPv4 client to IPv6 reals".into());
        }
        self.prepared = Some(Prepared { scenario: s, packet, verdict });
        Ok(Validation { verdict: xdp_action_name(verdict), checks, notes })
    }

    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        let cpu = self.cpu;
        let p = self.prepared.as_ref().context("run_batch before a successful validate")?;
        let lb = self.lb.as_mut().context("xdp-lb used before setup")?;
        let prog = match variant {
            Variant::Body => &mut lb.body,
            Variant::Baseline => &mut lb.baseline,
        };
        let (timing, out) = prog.run_batch(&p.packet, iters, RestoreMode::OnResize, cpu)?;
        let want = if variant == Variant::Body { p.verdict } else { XDP_PASS };
        ensure!(
            out.retval == want,
            "{} returned {} during timing, expected {}",
            p.scenario.info.name,
            xdp_action_name(out.retval),
            xdp_action_name(want)
        );
        Ok(timing)
    }

    fn body_program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.lb.as_ref().map(|lb| lb.body.fd())
    }

    fn baseline_key(&self, info: &ScenarioInfo) -> String {
        let Some(s) = scenarios::find(&info.name) else {
            return info.name.to_string();
        };
        match s.flows {
            Flows::Single => "single flow".into(),
            flows => {
                let fam = if s.packet.src.is_ipv4() { "v4" } else { "v6" };
                let proto = if s.packet.l4 == L4::Udp { "udp" } else { "tcp" };
                format!("{flows:?} flows, {proto}/{fam}").to_lowercase()
            }
        }
    }
}

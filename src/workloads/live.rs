//! Which program a `bpfbench live` target names, loaded: the built-in load
//! balancer, or a user's object or spec file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;

use super::object::live::LiveObject;
use super::object::{LoadArgs, ObjectArgs, ObjectSetup};
use super::xdp_lb::live::LiveLb;
use crate::history::StoreOptions;
use crate::live::sweep::StepTraffic;
use crate::live::{LivePlan, LiveProgram, LiveSettings, Sweep};
use crate::packet::PacketSpec;
use crate::record::traffic::FlowOrder;
use crate::traffic::SendOptions;
use crate::traffic::topology::XdpMode;

/// The Katran-on-userspace study's connection table size.
pub const DEFAULT_LRU_SIZE: u32 = 2000;

/// The program `target` names (default: xdp-lb), loaded, with notes on its
/// set-up. `load` and `lru_size` are the options only one kind takes.
pub fn live_program(
    target: Option<&str>,
    load: &LoadArgs,
    lru_size: Option<u32>,
) -> Result<(Box<dyn LiveProgram>, Vec<String>)> {
    let target = target.unwrap_or("xdp-lb");
    if target == "xdp-lb" {
        if load.program.is_some() || !load.maps.is_empty() || !load.pins.is_empty() {
            bail!("--program, --map and --map-pin apply to your own object, not to xdp-lb");
        }
        let entries = lru_size.unwrap_or(DEFAULT_LRU_SIZE);
        let lb = LiveLb::load(entries)?;
        return Ok((Box::new(lb), vec![format!("connection tables of {entries} entries per CPU")]));
    }
    if lru_size.is_some() {
        bail!("--lru-size sizes xdp-lb's connection tables; {target} has none bpfbench knows of");
    }
    let path = Path::new(target);
    if !path.exists() {
        bail!("no such target '{target}': give xdp-lb, an object file (FILE.bpf.o) or a spec file (FILE.toml)");
    }
    let object_args = ObjectArgs { load: load.clone(), ..Default::default() };
    let mut object = LiveObject::load(&ObjectSetup::from_target(path, &object_args)?)?;
    let notes = std::mem::take(&mut object.notes);
    Ok((Box::new(object), notes))
}

/// `bpfbench live`'s command-line options (clap).
#[derive(Debug, Args, Clone)]
pub struct LiveArgs {
    /// The program under test: xdp-lb (the built-in load balancer, default),
    /// an object file (FILE.bpf.o) or a spec file (FILE.toml) as for 'run'.
    pub target: Option<String>,
    /// The packet to send, in the packet language (default: the target's:
    /// for xdp-lb, UDP to its VIP; for an object, its spec file's first packet).
    #[arg(long, value_name = "SPEC")]
    pub packet: Option<String>,
    #[command(flatten)]
    pub send: SendOptions,
    /// Vary one quantity step by step: src-ports=0,1000,2000 | size=64,512,1500 | flows=1,1000 | threads=1,2.
    #[arg(long, value_name = "VAR=V1,V2,...")]
    pub sweep: Option<String>,
    /// Seconds each step is measured for.
    #[arg(long, value_name = "S", default_value_t = 2.0, value_parser = crate::record::positive)]
    pub duration: f64,
    /// Seconds each step sends before it is measured (tables warm up).
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    pub warmup: f64,
    /// sequential: flows in turn; random (default): each frame's flow drawn at random, so an LRU of C entries over N flows hits C/N of the time.
    #[arg(long = "flow-order", value_enum, default_value_t = FlowOrder::Random)]
    pub flow_order: FlowOrder,
    /// xdp-lb: entries of each CPU's connection table (LRU).
    #[arg(long, value_name = "N")]
    pub lru_size: Option<u32>,
    /// xdp-lb: skip timing the matching in-BPF scenarios for the cross-check.
    #[arg(long)]
    pub no_cross_check: bool,
    /// Your object: the program, and its maps, as for 'run'.
    #[command(flatten)]
    pub load: LoadArgs,
    /// table: a row per step; json: every step and window; csv: a row per step.
    #[command(flatten)]
    pub out: crate::session::output::OutputArgs,
    /// Draw the sweep to FILE.svg or FILE.png.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreOptions,
    /// Remove what killed bpfbench runs left (namespaces, veths) and exit.
    #[arg(long)]
    pub cleanup: bool,
}

impl LiveArgs {
    /// The target loaded and the run planned: its steps, settings and notes.
    /// Refuses bad options before anything is loaded.
    pub fn load_and_plan(&self) -> Result<(Box<dyn LiveProgram>, LivePlan)> {
        if let Some(caps) = crate::kernel::features::probe() {
            caps.require_live_frames()?;
        }
        let sweep: Option<Sweep> = self.sweep.as_deref().map(str::parse).transpose()?;
        if self.plot.is_some() && sweep.is_none() {
            bail!("--plot draws a sweep; give --sweep VAR=V1,V2,...");
        }
        if !(0.0..=60.0).contains(&self.warmup) {
            bail!("--warmup must be 0 to 60 seconds");
        }
        let (program, notes) = live_program(self.target.as_deref(), &self.load, self.lru_size)?;
        let packet_text = self.packet.clone().unwrap_or_else(|| program.default_packet());
        let packet = PacketSpec::parse_flows(&packet_text)?;
        let steps = StepTraffic::steps(sweep.as_ref(), &packet, self.send.size, self.send.threads)?;
        let settings = LiveSettings {
            warmup: Duration::from_secs_f64(self.warmup),
            step: Duration::from_secs_f64(self.duration),
            cpus: self.send.cpus(),
            rate_pps: self.send.rate,
            batch_size: self.send.batch_size,
            flow_order: self.flow_order,
            // Native only: a veth takes redirected frames into its peer only
            // when the peer runs native XDP (or has NAPI on through GRO).
            mode: XdpMode::Native,
        };
        let plan = LivePlan {
            packet: packet.to_string(),
            sweep,
            steps,
            settings,
            cross_check: !self.no_cross_check,
            tag: self.store.tag.clone(),
            notes,
        };
        Ok((program, plan))
    }
}

//! A case timed in BPF: the user's program spliced into the driver's batch
//! loop (see splice.rs), the case's packets cycled per iteration. After
//! every batch the last iteration's verdict and packet must equal what the
//! program itself returned for that packet, so a restore that missed a byte
//! stops the measurement instead of skewing it.

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use libbpf_rs::libbpf_sys as sys;

use anyhow::{Context, Result, bail};

use super::splice::{self, driver_object};
use super::{DriverState, Rodata, outputs_differ};
use crate::harness::skeleton::map_handle_from_fd;
use crate::harness::test_run::RunOutput;
use crate::harness::timing::{RestoreMode, TimedProgram};
use crate::harness::BatchTiming;
use crate::object_file::{ObjectFile, ProgKind};

/// Iteration counts of the batches that check a spliced program: each
/// packet in turn, and more than one pass over them.
fn check_sizes(variants: usize) -> Vec<u32> {
    let k = variants as u32;
    let mut v = vec![1, 2, 3, k + 1, 2 * k + 3, 64];
    v.sort_unstable();
    v.dedup();
    v
}

pub struct Spliced {
    body: TimedProgram,
    /// The driver's loop around an empty call, loaded on first use: a
    /// paired comparison never asks for it, and loading it took as long
    /// as loading the body (~15 ms here).
    overhead: Option<TimedProgram>,
    driver: ObjectFile,
    load_attrs: (sys::bpf_attach_type, u32),
    state: MapHandle,
    /// The first packet: it gives the length and the bytes no packet changes.
    packet: Vec<u8>,
    /// The program's own output for each packet.
    references: Vec<RunOutput>,
    kind: ProgKind,
    cpu: usize,
}

/// What the user's program was prepared as.
pub struct UserProgram<'a> {
    pub object: &'a ObjectFile,
    pub name: &'a str,
    pub kind: ProgKind,
    pub insns: &'a [sys::bpf_insn],
    pub funcs: &'a [sys::bpf_func_info],
}

impl Spliced {
    /// Builds the driver for `variants` (writing back `restore` bytes per
    /// iteration) around the user's program and checks it. An error is the
    /// reason to time the case per call instead.
    pub fn build(user: &UserProgram<'_>, variants: &[Vec<u8>], restore: u32, references: Vec<RunOutput>, cpu: usize) -> Result<Spliced> {
        let mut driver = driver_object(user.kind)?;
        driver.set_rodata(&Rodata { cfg_variants: variants.len() as u32, cfg_restore_bytes: restore })?;
        driver.set_max_entries("bench_variants", variants.len() as u32)?;
        // Only the bytes written back: thousands of packets then stay in cache.
        driver.set_value_size("bench_variants", restore.max(8))?;
        driver.prepare()?;
        let variants_map = map_handle_from_fd(driver.map_fd("bench_variants")?)?;
        for (i, v) in variants.iter().enumerate() {
            let mut value = vec![0u8; variants_map.value_size() as usize];
            value[..restore as usize].copy_from_slice(&v[..restore as usize]);
            variants_map.update(&(i as u32).to_ne_bytes(), &value, MapFlags::ANY).context("writing the case's packets")?;
        }
        let body = splice::splice(&driver, user.object, user.name, user.insns, user.funcs, user.kind)
            .context("the kernel refused the program spliced into the batch loop")?;
        let handle = |name| map_handle_from_fd(driver.map_fd(name)?);
        let mut s = Spliced {
            body: TimedProgram::new(body, handle("bench_ctl")?, handle("bench_result")?)?,
            overhead: None,
            state: handle("bench_driver_state")?,
            load_attrs: user.object.load_attrs(user.name)?,
            packet: variants[0].clone(),
            references,
            kind: user.kind,
            cpu,
            driver,
        };
        for n in check_sizes(variants.len()) {
            s.run(n).with_context(|| format!("the spliced program, after {n} iterations,"))?;
        }
        Ok(s)
    }

    /// This CPU's driver state.
    fn state(&self) -> Result<DriverState> {
        let all = self.state.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?.context("the driver has no state slot")?;
        let raw = all.get(self.cpu).context("no driver state for this CPU")?;
        Ok(bytemuck::pod_read_unaligned(raw))
    }

    /// One batch of the body, its last iteration checked.
    fn run(&mut self, iters: u32) -> Result<BatchTiming> {
        let (timing, out) = self.body.run_batch(&self.packet, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?;
        let i = self.state()?.idx as usize;
        if let Some(diff) = outputs_differ(self.kind, &self.references[i], &out) {
            bail!("gave another output than the program itself for packet {i}: {diff}");
        }
        Ok(timing)
    }

    /// How many iterations had their packet length put back.
    pub fn resized(&self) -> Result<u64> {
        Ok(self.state()?.resized)
    }

    pub fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        if body {
            return self.run(iters);
        }
        let overhead = match &mut self.overhead {
            Some(o) => o,
            None => {
                let (attach, flags) = self.load_attrs;
                let prog = splice::overhead(&self.driver, self.kind, attach, flags)?;
                let handle = |name| map_handle_from_fd(self.driver.map_fd(name)?);
                self.overhead.insert(TimedProgram::new(prog, handle("bench_ctl")?, handle("bench_result")?)?)
            }
        };
        Ok(overhead.run_batch(&self.packet, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?.0)
    }
}

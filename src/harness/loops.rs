//! `bpfbench loops`: measures the candidate loop constructs for the timing
//! loop on the running kernel, so the choice in bench_timing.bpf.h stays a
//! measured one.

use std::mem::MaybeUninit;

use anyhow::{Context, Result};
use libbpf_rs::skel::SkelBuilder;

use super::timing::{RestoreMode, TimedProgram, skel};
use crate::kernel::skeleton::{self, map_handle, prog_fd};
use crate::record::probes::LoopCost;
use crate::stats::Summary;

/// Times each construct over `samples` batches of `iters` iterations.
pub fn measure_loop_constructs(cpu: usize, iters: u32, samples: usize) -> Result<Vec<LoopCost>> {
    let mut storage = MaybeUninit::uninit();
    let open = skel::LoopProbeSkelBuilder::default().open(&mut storage).context("opening the loop probe")?;
    let skel = skeleton::load(open, "the loop probe")?;
    let packet = [0u8; 64];
    let p = &skel.progs;
    let candidates = [
        ("may_goto (can_loop)", &p.loop_may_goto),
        ("bpf_for (open-coded iterator)", &p.loop_bpf_for),
        ("bpf_loop (callback)", &p.loop_bpf_loop),
        ("may_goto, unrolled x4", &p.loop_unroll4),
        ("may_goto, body behind a call", &p.loop_may_goto_call),
    ];
    let mut out = Vec::new();
    for (name, prog) in candidates {
        let mut timed =
            TimedProgram::new(prog_fd(prog)?, map_handle(&skel.maps.bench_ctl)?, map_handle(&skel.maps.bench_result)?)?;
        let mut ns = Vec::with_capacity(samples);
        timed.run_batch(&packet, iters, RestoreMode::BENCH_RESTORE_NONE, cpu)?; // warm-up
        for _ in 0..samples {
            let (t, _) = timed.run_batch(&packet, iters, RestoreMode::BENCH_RESTORE_NONE, cpu)?;
            ns.push(t.ns_per_op());
        }
        out.push(LoopCost { construct: name, iters, summary: Summary::of(&ns).context("no samples")? });
    }
    Ok(out)
}

//! `bpfbench loops`: what each candidate loop construct costs around an
//! empty body, per iteration.

use std::fmt::Write;

use crate::record::probes::LoopCost;

pub fn render(costs: &[LoopCost], iters: u32, cpu: usize) -> String {
    let mut out = format!("Loop constructs around an empty body, {iters} iterations/batch, CPU {cpu}:\n");
    for c in costs {
        let _ = writeln!(
            out,
            "  {:<32} median {:>6.3} ns/iter  (p90 {:.3}, CV {:.2}%, n={})",
            c.construct,
            c.summary.median,
            c.summary.p90,
            c.summary.cv * 100.0,
            c.summary.n
        );
    }
    out
}

//! How often `bpfbench changes` finds a shift that is there, and reports
//! one that is not, on series made of this machine's measured run-to-run
//! noise (issue 27's targets; measurements/changes-targets.sh runs it).
//!
//! Reads the per-run medians of identical code stored in a history
//! (measurements/changes-noise.sh writes one). For each benchmark and each
//! series length (runs a side), many trials:
//! - identical code: 2·m medians drawn from the measured ones (with
//!   replacement), no shift: does any change get reported?
//! - a shift: m medians drawn, then m more drawn and made `shift` slower:
//!   is a change reported within 2 runs of where it is?
//!
//! Drawing independently loses any drift of the machine from run to run,
//! so the measured series are also read as they are, in their order: with
//! no shift, and with the shift added from their middle on.
//!
//! Usage: cargo run --release --example change_point_power -- DB [TRIALS [SHIFT]]

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use bpfbench::history::{History, Location, RunFilter};
use bpfbench::stats::change_points::{Options, e_divisive};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let db = args.get(1).context("usage: change_point_power DB [TRIALS [SHIFT]]")?;
    let trials: usize = args.get(2).map_or(Ok(1000), |t| t.parse())?;
    let shift: f64 = args.get(3).map_or(Ok(0.05), |s| s.parse())?;
    let history = History::open(Location::parse(db))?;
    let mut series: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for (key, point) in history.series_points(&RunFilter::default())? {
        series.entry(key.benchmark).or_default().push(point.median_ns);
    }
    let options = Options::default();
    println!(
        "options: alpha {}, {} permutations, min {} runs a side; shift {:+.1} %; {trials} trials per cell",
        options.alpha,
        options.permutations,
        options.min_segment,
        shift * 100.0
    );
    let mut rng = SmallRng::seed_from_u64(27);
    for (benchmark, measured) in &series {
        let (mean, sd) = mean_sd(measured);
        println!("\n{benchmark}: {} measured runs, CV {:.2} %", measured.len(), sd / mean * 100.0);
        println!("{:>12}  {:>22}  {:>22}", "runs a side", "identical: reported", "shifted: found there");
        for m in [5usize, 8, 10, 15, 20, 30, 40] {
            let mut false_alarms = 0;
            let mut found = 0;
            for _ in 0..trials {
                let same: Vec<f64> = (0..2 * m).map(|_| measured[rng.random_range(0..measured.len())]).collect();
                if !e_divisive(&same, &options).is_empty() {
                    false_alarms += 1;
                }
                let shifted: Vec<f64> = (0..2 * m)
                    .map(|i| measured[rng.random_range(0..measured.len())] * if i >= m { 1.0 + shift } else { 1.0 })
                    .collect();
                if e_divisive(&shifted, &options).iter().any(|c| c.index.abs_diff(m) <= 2) {
                    found += 1;
                }
            }
            println!(
                "{m:>12}  {:>21.1}%  {:>21.1}%",
                false_alarms as f64 * 100.0 / trials as f64,
                found as f64 * 100.0 / trials as f64
            );
        }
        let half = measured.len() / 2;
        let as_measured = e_divisive(measured, &options);
        let with_step: Vec<f64> =
            measured.iter().enumerate().map(|(i, v)| if i >= half { v * (1.0 + shift) } else { *v }).collect();
        let stepped = e_divisive(&with_step, &options);
        println!(
            "as measured, in order: {} change(s) reported {:?}; with the shift from run {half} on: found at {:?}",
            as_measured.len(),
            as_measured.iter().map(|c| c.index).collect::<Vec<_>>(),
            stepped.iter().map(|c| c.index).collect::<Vec<_>>()
        );
    }
    Ok(())
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

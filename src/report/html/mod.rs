//! `bpfbench report`: the stored history as one self-contained HTML file —
//! the latest run with its intervals, kernel against userspace, a kernel
//! matrix, paired comparisons, live sweeps, and every benchmark's trend
//! with its change points. Plots are inline SVG; the page loads nothing
//! (its content security policy forbids it), reads on a phone and prints.

mod plots;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;

use crate::record::live::LiveRecord;
use crate::record::page::PageContents;
use crate::record::{RunRecord, Runtime};
use crate::stats::Summary;
use plots::{Interval, TrendPoint};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const STYLE: &str = "
body { font-family: sans-serif; margin: 0 auto; max-width: 1000px; padding: 0 12px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { font-size: 1.05em; }
nav a { margin-right: 1em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
figure { margin: 0.5em 0; overflow-x: auto; } svg { width: 100%; height: auto; }
@media (max-width: 640px) { figure svg { min-width: 640px; } }
.note { color: #555; font-size: 0.9em; }
.emulated { color: #a00; font-weight: bold; }
@media print { nav { display: none; } section, figure { break-inside: avoid; } body { max-width: none; } }
";

/// The report as one HTML document.
pub fn render(c: &PageContents, generated_at: u64) -> Result<String> {
    let mut body = String::new();
    latest(c, &mut body)?;
    runtimes(c, &mut body);
    kernels(c, &mut body);
    paired(c, &mut body)?;
    live(c, &mut body)?;
    trends(c, &mut body)?;
    let sections = [
        ("latest", "Latest run"),
        ("runtimes", "Kernel and userspace"),
        ("kernels", "Kernels"),
        ("paired", "Paired comparisons"),
        ("live", "Live runs"),
        ("trends", "Trends"),
    ];
    let nav: String = sections.iter().map(|(id, name)| format!("<a href=\"#{id}\">{name}</a>")).collect();
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>bpfbench report</title><style>{STYLE}</style></head><body>\
         <h1>bpfbench report</h1><p class=\"note\">{} in {}, made {} UTC by bpfbench {}.</p><nav>{nav}</nav>\n{body}</body></html>\n",
        esc(&c.selection),
        esc(&c.source),
        crate::report::history_table::utc(generated_at),
        env!("CARGO_PKG_VERSION"),
    ))
}

fn section(out: &mut String, id: &str, title: &str) {
    let _ = write!(out, "<section id=\"{id}\"><h2>{title}</h2>");
}

fn run_line(id: i64, r: &RunRecord) -> String {
    let e = &r.environment;
    let emulated = if e.emulated() {
        " <span class=\"emulated\">EMULATED (QEMU TCG): times are the emulator's, not the hardware's</span>"
    } else {
        ""
    };
    format!(
        "Run {id}{}: commit {}, kernel {}, {}, testbed {}, {} UTC.{emulated}",
        r.tag.as_ref().map(|t| format!(" (tag {})", esc(t))).unwrap_or_default(),
        esc(&e.git_commit),
        esc(&e.kernel),
        esc(&e.cpu_model),
        esc(e.testbed.as_ref().map_or("-", |t| t.name.as_str())),
        crate::report::history_table::utc(e.started_at),
    )
}

fn latest(c: &PageContents, out: &mut String) -> Result<()> {
    section(out, "latest", "Latest run");
    let Some((id, run)) = &c.latest else {
        out.push_str("<p>No run is stored in this selection.</p></section>\n");
        return Ok(());
    };
    let _ = write!(out, "<p>{}</p>", run_line(*id, run));
    out.push_str("<div class=\"scroll\"><table><tr><th>benchmark</th><th>p50 ns/op</th><th>95 % CI</th><th>loop p50</th><th>samples</th><th>CV</th></tr>");
    let mut rows = Vec::new();
    for r in &run.results {
        let Some(m) = r.measurement() else { continue };
        let s = &m.summary;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:.2}</td><td>[{:.2}, {:.2}]</td><td>{:.2}</td><td>{}</td><td>{:.1} %</td></tr>",
            esc(&r.benchmark_name()),
            s.median,
            s.median_ci95.0,
            s.median_ci95.1,
            m.overhead.summary.median,
            s.n,
            s.cv * 100.0
        );
        rows.push(Interval { name: r.benchmark_name(), value: s.median, ci: Some(s.median_ci95) });
    }
    out.push_str("</table></div>");
    // Attached programs: the legend, and each trigger's slowdown and where it went.
    for line in crate::report::attached_table::render(&run.results).lines() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(line));
    }
    if !rows.is_empty() {
        let _ = write!(out, "<figure>{}</figure>", plots::intervals(&rows, "ns/op: median and its 95 % CI", None)?);
    }
    out.push_str("</section>\n");
    Ok(())
}

fn runtimes(c: &PageContents, out: &mut String) {
    section(out, "runtimes", "Kernel and userspace");
    let pairs: Vec<(String, &Summary, &Summary)> = c
        .latest
        .iter()
        .flat_map(|(_, run)| {
            run.results.iter().filter(|r| r.runtime == Runtime::User).filter_map(|u| {
                let measured = u.id().measured();
                let k = run.results.iter().find(|k| {
                    k.runtime == Runtime::Kernel && k.id().measured() == measured && k.measurement().is_some()
                })?;
                Some((measured, &k.measurement()?.summary, &u.measurement()?.summary))
            })
        })
        .collect();
    if pairs.is_empty() {
        out.push_str("<p>The latest run timed no scenario in both runtimes (<code>--runtime both</code> does).</p>");
    } else {
        out.push_str("<div class=\"scroll\"><table><tr><th>scenario</th><th>kernel p50 ns/op [95 % CI] n</th><th>userspace p50 ns/op [95 % CI] n</th><th>user/kernel</th><th>bounds from the CIs</th></tr>");
        for (name, k, u) in pairs {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>[{:.3}, {:.3}]</td></tr>",
                esc(&name),
                median_cell(k),
                median_cell(u),
                u.median / k.median,
                u.median_ci95.0 / k.median_ci95.1,
                u.median_ci95.1 / k.median_ci95.0
            );
        }
        out.push_str("</table></div>");
    }
    out.push_str("</section>\n");
}

fn kernels(c: &PageContents, out: &mut String) {
    section(out, "kernels", "Kernels");
    if c.kernels.len() < 2 {
        out.push_str("<p>The selection's runs are all on one kernel (<code>bpfbench vm --kernel</code> runs others).</p></section>\n");
        return;
    }
    let mut medians: BTreeMap<String, BTreeMap<usize, &Summary>> = BTreeMap::new();
    for (col, (_, run)) in c.kernels.iter().enumerate() {
        for r in &run.results {
            if let Some(m) = r.measurement() {
                // Not by benchmark name: that carries the timing mode, which differs by kernel.
                let key = format!("{}{}", r.id().measured(), r.runtime.suffix());
                medians.entry(key).or_default().insert(col, &m.summary);
            }
        }
    }
    out.push_str("<p>The newest run on each kernel: p50 ns/op [95 % CI] and samples (its timing mode may differ by kernel).</p><div class=\"scroll\"><table><tr><th>scenario</th>");
    for (id, run) in &c.kernels {
        let mark = if run.environment.emulated() { " (TCG)" } else { "" };
        let _ = write!(out, "<th>{}{mark}<br>run {id}</th>", esc(&run.environment.kernel));
    }
    out.push_str("</tr>");
    for (name, cols) in &medians {
        let _ = write!(out, "<tr><td>{}</td>", esc(name));
        for col in 0..c.kernels.len() {
            let _ = write!(out, "<td>{}</td>", cols.get(&col).map_or("-".into(), |m| median_cell(m)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    if c.kernels.iter().any(|(_, r)| r.environment.emulated()) {
        out.push_str("<p class=\"emulated\">Columns marked TCG ran in an emulated guest: their times are the emulator's, not the hardware's.</p>");
    }
    out.push_str("</section>\n");
}

fn paired(c: &PageContents, out: &mut String) -> Result<()> {
    section(out, "paired", "Paired comparisons");
    if c.paired.is_empty() {
        out.push_str("<p>No paired comparison is stored in this selection (<code>bpfbench ab</code> makes them).</p>");
    }
    for (id, rec) in &c.paired {
        let _ = write!(out, "<h3>ab {id}: A {} against B {}</h3>", esc(&rec.a), esc(&rec.b));
        if rec.emulated() {
            out.push_str("<p class=\"emulated\">EMULATED: the guests ran under QEMU's TCG.</p>");
        }
        out.push_str("<div class=\"scroll\"><table><tr><th>benchmark</th><th>A ns/op</th><th>B ns/op</th><th>B/A</th><th>95 % CI</th><th>verdict</th></tr>");
        let mut rows = Vec::new();
        for case in &rec.cases {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.4}</td><td>[{:.4}, {:.4}]</td><td><b>{}</b></td></tr>",
                esc(&case.benchmark_name()),
                case.median_a,
                case.median_b,
                case.ratio,
                case.ratio_ci95.0,
                case.ratio_ci95.1,
                case.verdict.as_str()
            );
            rows.push(Interval { name: case.benchmark_name(), value: case.ratio, ci: Some(case.ratio_ci95) });
        }
        out.push_str("</table></div>");
        if !rows.is_empty() {
            let _ = write!(out, "<figure>{}</figure>", plots::intervals(&rows, "B/A and its 95 % CI", Some(1.0))?);
        }
    }
    out.push_str("</section>\n");
    Ok(())
}

fn live(c: &PageContents, out: &mut String) -> Result<()> {
    section(out, "live", "Live runs");
    if c.live.is_empty() {
        out.push_str(
            "<p>No live sweep is stored in this selection (<code>bpfbench live --sweep</code> makes them).</p>",
        );
    }
    for (id, rec) in &c.live {
        let _ = write!(
            out,
            "<h3>live {id}: {} ({} XDP), {}</h3><figure>{}</figure>",
            esc(&rec.program),
            esc(&rec.xdp_mode),
            esc(&rec.environment.kernel),
            plots_of_live(rec)?
        );
    }
    out.push_str("</section>\n");
    Ok(())
}

fn plots_of_live(rec: &LiveRecord) -> Result<String> {
    Ok(plots::responsive(crate::report::live_plot::svg(rec)?))
}

fn trends(c: &PageContents, out: &mut String) -> Result<()> {
    section(out, "trends", "Trends");
    let _ = write!(
        out,
        "<p class=\"note\">Per-run medians with their 95 % intervals, oldest run first; red dashes: change points, green: each segment's median ({}).</p>",
        esc(&c.changes.method)
    );
    let mut series: Vec<_> = c.changes.series.iter().filter(|s| s.points.len() >= 2).collect();
    // Series that changed first, the host's before guests' (each group in name order).
    series.sort_by_key(|s| (s.changes.is_empty(), s.guest.is_some()));
    let mut shown = 0;
    for s in series {
        shown += 1;
        let _ = write!(out, "<h3>{} on {}: {} runs", esc(&s.benchmark), esc(&s.place()), s.points.len());
        for ch in &s.changes {
            let _ = write!(
                out,
                "; change at run {} ({:+.1} %, p = {:.3}, {} | {} runs, {} &rarr; {})",
                ch.after.stamp.run,
                (ch.ratio - 1.0) * 100.0,
                ch.p_value,
                ch.runs_before,
                ch.runs_after,
                esc(&ch.before.stamp.git_commit),
                esc(&ch.after.stamp.git_commit)
            );
        }
        out.push_str("</h3>");
        let points: Vec<TrendPoint> =
            s.points.iter().map(|p| TrendPoint { median: p.median_ns, ci: p.ci95_ns }).collect();
        let cuts: Vec<usize> = s.changes.iter().map(|c| c.index).collect();
        let mut segment_medians: Vec<f64> = s.changes.iter().map(|c| c.median_before).collect();
        segment_medians.push(s.changes.last().map_or_else(|| median(&points), |c| c.median_after));
        let _ = write!(out, "<figure>{}</figure>", plots::trend(&points, &cuts, &segment_medians)?);
    }
    if shown == 0 {
        out.push_str("<p>No benchmark has two or more stored runs in this selection.</p>");
    }
    out.push_str("</section>\n");
    Ok(())
}

/// A median with its interval and sample count: "21.26 [21.10, 21.40] n=200".
fn median_cell(s: &Summary) -> String {
    format!("{:.2} [{:.2}, {:.2}] n={}", s.median, s.median_ci95.0, s.median_ci95.1, s.n)
}

fn median(points: &[TrendPoint]) -> f64 {
    let mut v: Vec<f64> = points.iter().map(|p| p.median).collect();
    v.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&v, 50.0)
}

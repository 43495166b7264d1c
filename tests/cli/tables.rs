//! Every table lines up: rows of records with long names, wide figures,
//! rows in another timing mode and rows that failed, rendered in each
//! text form, with every cell where its column is (no kernel needed; the
//! tables of real runs are checked where those runs are made).

use crate::common;

use bpfbench::compare::compare_runs;
use bpfbench::record::{Body, LoopConstruct, RunRecord, Runtime, Timing};
use bpfbench::record::{RunStamp, RunSummary};
use bpfbench::report::{Format, compare_table, history_table, paired_table, render};
use common::{assert_boxed_aligned, assert_plain_aligned, paired_record, record, run_of, samples};

/// A run whose rows differ in everything that widens a column.
fn awkward_run() -> RunRecord {
    let mut run = run_of(&[("tcp-v4", 50.0), ("a-scenario-name-far-longer-than-thirty-four-characters", 123_456.0)]);
    let mut other = record("timed-per-call", samples(80.0, 3));
    other.timing = Timing::PerCall { reason: "its packets differ in length".into(), host_timed: false };
    run.results.push(other);
    let mut bpf_loop = record("in-a-bpf-loop", samples(9.5, 4));
    bpf_loop.timing = Timing::InBpf { construct: LoopConstruct::BpfLoop, body: Body::Call, why_called: None };
    run.results.push(bpf_loop);
    let mut failed = record("failed-validation", samples(1.0, 5));
    failed.figure = None;
    failed.validated = false;
    failed.error = Some("validation failed: verdict".into());
    run.results.push(failed);
    let mut user = record("tcp-v4", samples(500.0, 6));
    user.runtime = Runtime::User;
    run.results.push(user);
    run
}

#[test]
fn the_run_table_lines_up_whatever_its_rows() {
    let run = awkward_run();
    let text = render(&run, Format::Table, false).unwrap();
    assert_boxed_aligned(&text);
    assert!(text.contains("| timing "), "rows of other modes get a timing column:\n{text}");
    assert!(!text.contains("(per call)"), "the mode is a column, not part of the name:\n{text}");
    // The side-by-side table of both runtimes, too.
    let both = text.split("Kernel vs userspace runtime").nth(1).expect("a runtime table");
    assert_plain_aligned(both.split_once('\n').unwrap().1.split("\n\n").next().unwrap());
}

#[test]
fn a_run_in_one_mode_names_it_in_the_heading_and_has_no_timing_column() {
    let run = run_of(&[("tcp-v4", 50.0), ("tcp-v6", 60.0)]);
    let text = render(&run, Format::Table, false).unwrap();
    assert!(text.contains("timed inside BPF (may_goto loop, body called)"), "{text}");
    assert!(!text.contains("| timing"), "{text}");
    assert_boxed_aligned(&text);
}

#[test]
fn comparison_tables_line_up() {
    let a = run_of(&[("tcp-v4", 50.0), ("a-scenario-name-far-longer-than-thirty-four-characters", 99_999.0)]);
    let b = run_of(&[("tcp-v4", 55.0), ("a-scenario-name-far-longer-than-thirty-four-characters", 123_456.0)]);
    let cmp = compare_runs(&[a], "a", &[b], "b", 0.01, &Default::default());
    let text = compare_table::render(&cmp);
    let table: String =
        text.lines().skip(2).take_while(|l| !l.contains(" slower, ")).map(|l| format!("{l}\n")).collect();
    assert_plain_aligned(&table);

    let mut paired = paired_record();
    let mut long = paired.cases[0].clone();
    long.name = "a-scenario-name-far-longer-than-thirty-four-characters".into();
    long.median_b = 1_234_567.0;
    paired.cases.push(long);
    let text = paired_table::table(&paired);
    let table: String =
        text.lines().skip(2).take_while(|l| !l.contains(" slower, ")).map(|l| format!("{l}\n")).collect();
    assert_plain_aligned(&table);
    // Markdown: one cell per column in every row.
    let rows = common::markdown_rows(&paired_table::markdown(&paired));
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{rows:?}");
}

/// A comparison's CSV has the columns its table shows, in the same order,
/// a row per benchmark with the table's figures at full precision.
#[test]
fn comparison_csv_has_the_table_columns_a_row_each() {
    let a = run_of(&[("tcp-v4", 50.0), ("tcp-v6", 60.0)]);
    let b = run_of(&[("tcp-v4", 55.0), ("tcp-v6", 60.0)]);
    let cmp = compare_runs(&[a], "a", &[b], "b", 0.01, &Default::default());
    let csv = bpfbench::report::render_as(&cmp, Format::Csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(
        head,
        [
            "benchmark",
            "median_a_ns",
            "median_b_ns",
            "ratio",
            "ci95_low",
            "ci95_high",
            "p_holm",
            "n_a",
            "n_b",
            "rests_on",
            "run_noise_cv",
            "verdict"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), cmp.times().count());
    for (row, b) in rows.iter().zip(cmp.times()) {
        assert_eq!(&row[0], b.benchmark);
        let ratio: f64 = row[3].parse().unwrap();
        assert!((ratio - b.result.ratio).abs() < 1e-4, "{ratio} against {}", b.result.ratio);
        assert_eq!(&row[11], b.result.verdict.as_str());
    }
    // The paired table's CSV keeps its columns too.
    let paired = bpfbench::report::render_as(&paired_record(), Format::Csv).unwrap();
    assert!(
        paired.starts_with(
            "benchmark,median_a_ns,median_b_ns,ratio,ci95_low,ci95_high,verdict,loads,pairs,batch_iters,elapsed_s,stop\n"
        ),
        "{paired}"
    );
}

#[test]
fn history_listings_line_up() {
    let summary = |id: i64, tag: &str, kernel: &str| RunSummary {
        stamp: RunStamp {
            run: id,
            tag: Some(tag.into()),
            started_at: 1_795_464_000,
            git_commit: "0123456789abcdef0123".into(),
            kernel: kernel.into(),
        },
        testbed: Some("a-testbed-with-a-long-name".into()),
        benchmarks: 24,
        benchmark: Some("xdp-lb/tcp-v4-lru-hit@inline".into()),
        median_ns: Some(50.0),
        ci95_ns: Some((49.0, 51.0)),
        samples: Some(200),
    };
    let rows = [summary(12345, "a-long-branch-name/with-a-slash", "6.18.44-fc-v669"), summary(1, "main", "6.1")];
    assert_plain_aligned(&history_table::runs(&rows, &[]));
    assert_plain_aligned(&history_table::runs(&rows, &["xdp-lb/tcp-v4-lru-hit".into()]));
    let modes = ["xdp-lb/tcp-v4-lru-hit".to_string(), "xdp-lb/tcp-v4-lru-hit@inline".to_string()];
    assert_plain_aligned(&history_table::runs(&rows, &modes));
}

#[test]
#[ignore = "prints the tables for a look"]
fn show() {
    println!("{}", render(&awkward_run(), Format::Table, false).unwrap());
}

//! The docs' commands, as rustdoc treats doc tests: every `bpfbench` command
//! in a shell block of README.md, ARCHITECTURE.md and docs/src must parse
//! against the real CLI, and every block not marked otherwise runs here,
//! against the real kernel, in the order a reader meets it, with one
//! history for all of them.
//!
//! A block that cannot run on this machine says why on the line before it:
//! `<!-- doc-test: not run: needs a NIC -->` (an HTML comment, so readers
//! do not see it). Runs are shortened (two samples of 1 ms batches, one
//! sweep; `ab` 0.3 s a case, `live` 0.5 s a step); nothing else of a command changes.
//! A command shown twice alike runs once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{stderr, temp_dir};

/// The files, in the order a reader meets them (the book's table of contents).
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let summary = std::fs::read_to_string(root.join("docs/src/SUMMARY.md")).unwrap();
    for line in summary.lines() {
        if let Some(path) = line.split("](").nth(1).and_then(|r| r.split(')').next()) {
            files.push(root.join("docs/src").join(path));
        }
    }
    // Pages the table of contents does not list are read too, last.
    let mut pending = vec![root.join("docs/src")];
    while let Some(dir) = pending.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else if p.extension().is_some_and(|x| x == "md") && !files.contains(&p) {
                files.push(p);
            }
        }
    }
    files
}

struct DocCommand {
    /// "docs/src/guide/run.md:5".
    at: String,
    /// The arguments after `bpfbench`.
    args: Vec<String>,
    /// Why its block does not run here; `None`: it runs.
    not_run: Option<String>,
}

const MARKER: &str = "<!-- doc-test: not run: ";

/// Every `bpfbench` command in the shell blocks of `file`.
fn commands_in(file: &Path) -> Vec<DocCommand> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string();
    let mut out = Vec::new();
    let (mut shell, mut in_block, mut not_run, mut last) = (false, false, None, String::new());
    let mut joined = String::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            in_block = !in_block;
            shell = in_block && matches!(lang.trim(), "" | "sh" | "bash" | "console" | "shell");
            not_run = last.strip_prefix(MARKER).and_then(|r| r.strip_suffix(" -->")).map(str::to_string);
            joined.clear();
            continue;
        }
        if !trimmed.is_empty() {
            last = trimmed.to_string();
        }
        if !shell {
            continue;
        }
        joined.push_str(trimmed.trim_end().trim_end_matches('\\'));
        joined.push(' ');
        if trimmed.trim_end().ends_with('\\') {
            continue;
        }
        // Other languages' lines in a bare block (a tree, a listing) are no commands.
        if !joined.contains("bpfbench") {
            joined.clear();
            continue;
        }
        let words = words(&joined).unwrap_or_else(|e| panic!("{name}:{}: {e}: {joined}", i + 1));
        joined.clear();
        for args in bpfbench_commands(&words) {
            out.push(DocCommand { at: format!("{name}:{}", i + 1), args, not_run: not_run.clone() });
        }
    }
    out
}

/// A shell line's words, as sh splits them: quotes kept together, the
/// operators `;`, `|`, `>`, `&&` words of their own, a comment left out.
fn words(line: &str) -> Result<Vec<String>, shell_words::ParseError> {
    let mut spaced = String::new();
    let (mut single, mut double, mut prev) = (false, false, ' ');
    for ch in line.chars() {
        match ch {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => break,
            ';' | '|' | '>' if !single && !double => {
                spaced.push(' ');
                spaced.push(ch);
                spaced.push(' ');
                prev = ' ';
                continue;
            }
            _ => {}
        }
        spaced.push(ch);
        prev = ch;
    }
    shell_words::split(&spaced)
}

/// The `bpfbench` commands of one shell line's words: split at `;` and
/// `&&`, cut at a pipe, comment or redirection.
fn bpfbench_commands(words: &[String]) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut cut = false;
    let mut finish = |current: &mut Vec<String>| {
        let mut c = std::mem::take(current);
        if c.first().is_some_and(|w| w == "sudo" || w == "-E") {
            c.retain(|w| w != "sudo" && w != "-E");
        }
        if c.first().is_some_and(|w| w == "bpfbench" || w.ends_with("/bpfbench")) {
            c.remove(0);
            commands.push(c);
        }
    };
    for w in words {
        match w.as_str() {
            ";" | "&&" => {
                finish(&mut current);
                cut = false;
            }
            w if w.starts_with('#') => break,
            "|" | ">" => cut = true,
            _ if cut => {}
            w => current.push(w.to_string()),
        }
    }
    finish(&mut current);
    commands
}

fn all_commands() -> Vec<DocCommand> {
    doc_files().iter().flat_map(|f| commands_in(f)).collect()
}

#[test]
fn the_docs_say_what_a_shell_would_run() {
    let w = words("bpfbench run --tag main; bpfbench show main > x.json   # a comment; 'quoted'").unwrap();
    assert_eq!(bpfbench_commands(&w), [vec!["run", "--tag", "main"], vec!["show", "main"]]);
    let w = words("sudo -E bpfbench ab a.o b.o --packet 'eth/ipv4(dst=10.0.0.10)' -g \"LRU stress\"").unwrap();
    assert_eq!(
        bpfbench_commands(&w),
        [vec!["ab", "a.o", "b.o", "--packet", "eth/ipv4(dst=10.0.0.10)", "-g", "LRU stress"]]
    );
    let w = words("bpfbench changes --format markdown >> comment.md").unwrap();
    assert_eq!(bpfbench_commands(&w), [vec!["changes", "--format", "markdown"]]);
    assert!(bpfbench_commands(&words("clang-19 -O2 x.c").unwrap()).is_empty());
}

#[test]
fn every_documented_command_parses() {
    let commands = all_commands();
    assert!(commands.len() > 80, "found only {} commands", commands.len());
    // Where the objects are: which workload takes a file, and so which
    // options it has, is read from the file.
    let dir = temp_dir("docs-parse");
    copy_test_objects(&dir);
    let mut refused = Vec::new();
    for c in &commands {
        // Help after the arguments: clap reads (and checks) every argument
        // before it, then prints help instead of running.
        let mut args = c.args.clone();
        let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
        args.insert(at, "--help".into());
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(&args)
            .current_dir(&*dir)
            .output()
            .expect("running bpfbench");
        if !o.status.success() {
            refused.push(format!("{}: bpfbench {}: {}", c.at, c.args.join(" "), stderr(&o).trim()));
        }
    }
    assert!(refused.is_empty(), "the CLI refuses commands the docs show:\n{}", refused.join("\n"));
}

/// Sets option `flag` to `value`: its value replaced where the command
/// gives it, else added (before a `--` that passes run arguments on).
fn set(args: &mut Vec<String>, flag: &str, value: &str) {
    if let Some(i) = args.iter().position(|a| a == flag) {
        args[i + 1] = value.into();
        return;
    }
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, [flag.to_string(), value.to_string()]);
}

/// The command with its measurement shortened.
fn shortened(args: &[String]) -> Vec<String> {
    let mut args = args.to_vec();
    match args.first().map(String::as_str) {
        Some("run" | "overhead") => {
            for (flag, value) in [("--samples", "2"), ("--batch-ms", "1"), ("--sweeps", "1"), ("--warmup", "0")] {
                set(&mut args, flag, value);
            }
            if args.iter().any(|a| a == "--repeat") {
                set(&mut args, "--repeat", "2");
            }
        }
        Some("ab") => {
            set(&mut args, "--max-time", "0.3");
            set(&mut args, "--min-rounds", "2");
            // Each of xdp-lb's 24 scenarios sets both sides up twice (0.6 s
            // a case): one scenario runs the same path (15 s -> 1 s).
            let selects = args.iter().any(|a| ["-s", "-g", "--scenario", "--group"].contains(&a.as_str()));
            let lb = args.windows(2).any(|w| w[0] == "--workload" && w[1] == "xdp-lb");
            if lb && !selects && !args.iter().any(|a| a == "--") {
                set(&mut args, "-s", "tcp-v4-lru-hit");
            }
        }
        Some("loops") => set(&mut args, "--samples", "3"),
        Some("fuzz-uvm") => set(&mut args, "--programs", "2000"),
        Some("live") if !args.iter().any(|a| a == "--cleanup") => {
            set(&mut args, "--duration", "0.5");
            // A sweep's first two steps (each ~1.8 s) run every step's code.
            if let Some(i) = args.iter().position(|a| a == "--sweep") {
                let (var, values) = args[i + 1].split_once('=').expect("--sweep VAR=V1,V2,...");
                let first_two: Vec<&str> = values.split(',').take(2).collect();
                args[i + 1] = format!("{var}={}", first_two.join(","));
            }
        }
        _ => {}
    }
    args
}

/// A folder with the example's files as the docs name them
/// (`examples/encap/...`), its object compiled as the README says; the
/// names the docs give a reader's own program and its builds
/// (`before.bpf.o`, `mine.bpf.o`, `before.toml`, ...) are copies of it;
/// the test objects the docs name by file (`xdp_config.bpf.o`) are there
/// as compiled from tests/objects/.
/// The test objects the guides name, into `dir`.
fn copy_test_objects(dir: &Path) {
    for object in [
        "xdp_config.bpf.o",
        "xdp_stamp.bpf.o",
        "xdp_flow_count.bpf.o",
        "flow_ipv4.bpf.o",
        "tc_framework_tests.bpf.o",
        // The attached programs' guide.
        "tp_getppid.bpf.o",
        "tp_getppid_slow.bpf.o",
        "perf_event_faults.bpf.o",
        "kprobe_multi_openat.bpf.o",
        "tp_openat.bpf.o",
        "raw_tp_sys_enter.bpf.o",
        "uprobe_usdt.bpf.o",
        "cgroup_connect4.bpf.o",
        "kprobe_openat.bpf.o",
        "fentry_openat.bpf.o",
        "lsm_file_open.bpf.o",
        "sockmap_msg.bpf.o",
        // The own-program guide's legacy map definitions.
        "xdp_legacy_maps.bpf.o",
    ] {
        std::fs::copy(common::test_object(object), dir.join(object)).unwrap();
    }
}

fn sandbox() -> common::TempDir {
    let dir = temp_dir("docs");
    let to = dir.join("examples/encap");
    std::fs::create_dir_all(&to).unwrap();
    common::compile_example(&to);
    for f in ["xdp_encap.bpf.o", "services.json", "bench.toml"] {
        std::fs::copy(to.join(f), dir.join(f)).unwrap();
    }
    for build in ["before", "after", "A", "B", "mine", "prog", "base", "pr"] {
        std::fs::copy(to.join("xdp_encap.bpf.o"), dir.join(format!("{build}.bpf.o"))).unwrap();
    }
    for spec in ["before.toml", "after.toml"] {
        std::fs::copy(to.join("bench.toml"), dir.join(spec)).unwrap();
    }
    copy_test_objects(&dir);
    // The corpus guide's `bpfbench run corpus`: the corpus's specs, the
    // kernel selftests' programs built as it says; the tools' specs too.
    let corpus = common::corpus_with_selftests(&dir);
    common::copy_tool_specs(&corpus);
    // The counts own-program.md's --expect-map example names.
    let totals = r#"[{"key": 0, "value": {"frames": 2, "bad_ip_csum": 0, "bad_l4_csum": 0}}]"#;
    std::fs::write(dir.join("totals.json"), totals).unwrap();
    // The Aya object and the entry own-program.md expects of it.
    let aya = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects/aya/fun-xdp-map.o");
    std::fs::copy(aya, dir.join("fun-xdp-map.o")).unwrap();
    std::fs::write(dir.join("buzz.json"), r#"[{"key": "0f00000a", "value": "02000000"}]"#).unwrap();
    // The Aya guide's builds and the entry it expects of them.
    for build in ["fun-xdp-fib.o", "fun-xdp-fib-loop.o", "fun-xdp-log.o"] {
        let aya = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects/aya").join(build);
        std::fs::copy(aya, dir.join(build)).unwrap();
    }
    std::fs::write(dir.join("fibonacci.json"), r#"[{"key": "e901000a", "value": "04000000"}]"#).unwrap();
    // The tests guide's two builds of a suite: the test object, and its
    // build with a slower entry, under one file name in two folders.
    for (folder, build) in
        [("tests-before", "tc_framework_tests.bpf.o"), ("tests-after", "tc_framework_tests_slow.bpf.o")]
    {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::copy(common::test_object(build), dir.join(folder).join("tc_framework_tests.bpf.o")).unwrap();
    }
    // The A/B guide's one source by two compilers, and its files.
    for (compiler, out) in [("clang-19", "lpm-clang.o"), ("bpf-gcc", "lpm-gcc.o")] {
        common::built_with(compiler, "xdp_lpm", &dir, out);
    }
    for f in ["prefixes.json", "last.json"] {
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compilers").join(f), dir.join(f)).unwrap();
    }
    // The verdict own-program.md's legacy-maps example fills in.
    std::fs::write(dir.join("drop.json"), r#"[{"key": "00000000", "value": "01000000"}]"#).unwrap();
    dir
}

#[test]
fn documented_commands_run() {
    let _machine = common::machine();
    let dir = sandbox();
    let db = dir.join("history.sqlite");
    let (mut ran, mut failed, mut selected_elsewhere) = (0, Vec::new(), Vec::new());
    // Where the test's time goes (shown with --nocapture).
    let mut took: Vec<(f64, String, String)> = Vec::new();
    // A command two pages show alike runs once (`ab --workload xdp-lb
    // kernel user`, 16 s, is in the A/B and the userspace guides).
    let mut seen = std::collections::HashSet::new();
    for c in all_commands().iter().filter(|c| c.not_run.is_none()) {
        let args = shortened(&c.args);
        if !seen.insert(args.clone()) {
            continue;
        }
        let started = std::time::Instant::now();
        let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(&args)
            .current_dir(&*dir)
            .env("BPFBENCH_DB", &db)
            // The testbed the CI guide's examples name.
            .env("BPFBENCH_TESTBED", "ci-large")
            .output()
            .expect("running bpfbench");
        ran += 1;
        took.push((started.elapsed().as_secs_f64(), c.at.clone(), args.join(" ")));
        // A gate's exit 1 is its answer (a regression it found), not a failure.
        let gate = c.args.iter().any(|a| a == "--fail-on-regression") && o.status.code() == Some(1);
        // A selection of another machine's runs (`--kernel 6.12` here, on
        // 6.18) finds none, and says so in one line: the documented answer.
        let err = stderr(&o);
        let elsewhere = o.status.code() == Some(1)
            && err.trim_end().lines().count() == 1
            && err.contains(" is selected (")
            && c.args.iter().any(|a| a == "--kernel" || a == "--testbed");
        if elsewhere {
            selected_elsewhere.push(c.at.clone());
        }
        if !o.status.success() && !gate && !elsewhere {
            failed.push(format!("{}: bpfbench {}\n    {}", c.at, args.join(" "), stderr(&o).trim()));
        }
    }
    took.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (secs, at, args) in took.iter().take(12) {
        eprintln!("{secs:6.1} s  {at}: bpfbench {args}");
    }
    assert!(failed.is_empty(), "{} of {ran} documented commands failed:\n{}", failed.len(), failed.join("\n"));
    assert!(ran > 60, "only {ran} documented commands ran");
    // Most examples' selections are this machine's: only those naming a kernel this is not.
    assert!(selected_elsewhere.len() <= 2, "selected nothing: {selected_elsewhere:?}");
}

#[test]
fn every_block_that_does_not_run_says_why() {
    for c in all_commands() {
        if let Some(why) = &c.not_run {
            assert!(why.len() > 8, "{}: say why it does not run: {why:?}", c.at);
        }
    }
}

//! Compiles every BPF program under `src/` with Debian's clang-19 and generates a
//! libbpf-rs skeleton for each, next to the other build outputs.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

/// (BPF source, skeleton module name). Each workload keeps its BPF C beside its Rust driver.
const PROGRAMS: &[(&str, &str)] = &[
    ("src/workloads/xdp_lb/xdp_lb.bpf.c", "xdp_lb"),
    ("src/harness/loop_probe.bpf.c", "loop_probe"),
    ("src/workloads/maps/map_ops.bpf.c", "map_ops"),
    ("src/workloads/maps/free_probe.bpf.c", "free_probe"),
];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let clang = env::var("BPF_CLANG").unwrap_or_else(|_| "clang-19".to_string());
    let extra_cflags = env::var("BPF_EXTRA_CFLAGS").unwrap_or_default();

    for (src, name) in PROGRAMS {
        let mut args = vec![
            "-I/usr/include/x86_64-linux-gnu".to_string(),
            "-Isrc/bpf".to_string(),
            "-Wall".to_string(),
            "-Werror".to_string(),
            "-mcpu=v3".to_string(),
        ];
        args.extend(extra_cflags.split_whitespace().map(str::to_string));
        SkeletonBuilder::new()
            .source(src)
            .clang(&clang)
            .clang_args(args)
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {src} with {clang} failed: {e:#}"));
        println!("cargo:rerun-if-changed={src}");
    }
    println!("cargo:rerun-if-changed=src/bpf");
    println!("cargo:rerun-if-changed=src/workloads/xdp_lb/lb_common.h");
    println!("cargo:rerun-if-changed=src/workloads/maps/map_ops.h");
    record_build_facts(&clang, &extra_cflags);
    println!("cargo:rerun-if-env-changed=BPF_EXTRA_CFLAGS");
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
}

/// Facts a result records about its build: git commit, clang, BPF flags.
fn record_build_facts(clang: &str, extra_cflags: &str) {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let commit = run("git", &["describe", "--always", "--dirty", "--abbrev=12"]).unwrap_or_else(|| "unknown".into());
    let clang_version = run(clang, &["--version"]).and_then(|v| v.lines().next().map(str::to_string)).unwrap_or_default();
    println!("cargo:rustc-env=BPFBENCH_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=BPFBENCH_CLANG_VERSION={clang_version}");
    println!("cargo:rustc-env=BPFBENCH_BPF_CFLAGS={extra_cflags}");
    // A new commit or a change of the working tree changes the recorded commit.
    if std::path::Path::new(".git/HEAD").exists() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        println!("cargo:rerun-if-changed=.git/index");
    }
}

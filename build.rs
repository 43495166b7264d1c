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
    println!("cargo:rerun-if-env-changed=BPF_EXTRA_CFLAGS");
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
}

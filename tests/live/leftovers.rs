//! Nothing is left behind on either kind of machine: with the BPF filesystem
//! mounted at /sys/fs/bpf (systemd mounts it at boot on Debian, Ubuntu and
//! Fedora, and the kernel's `bpf_preload` puts `maps.debug` and `progs.debug`
//! into it) and without it. Each state is made in a mount namespace of the
//! test's own, so the machine's mounts stay as they are.

use crate::common;

use common::leftovers::{Snapshot, pins};
use common::{SysBpffs, bpfbench, stderr, test_object, with_sys_bpffs};

/// Commands that load, attach and pin the most: the built-in balancer, a map
/// suite, a user's object whose map asks libbpf to pin it by name, a live run
/// on veths in a namespace, and a run that fails its validation.
fn runs() -> Vec<(Vec<String>, bool)> {
    let commands = [
        ("run -s tcp-v4-lru-hit -s pass-non-ip --samples 3 --batch-ms 1 --no-store", true),
        ("run maps --map hash --op lookup --entries 1000 --samples 3 --batch-ms 1 --no-store", true),
        ("run xdp_pin_by_name.bpf.o --packet eth/ipv4/udp --samples 3 --no-store", true),
        ("run xdp_pin_by_name.bpf.o --packet eth/ipv4/udp --expect XDP_DROP --no-store", false),
        ("live xdp_drop.bpf.o --duration 0.2 --warmup 0 --no-store", true),
    ];
    // Words naming a test object become its path (which may hold spaces).
    let word = |w: &str| {
        if w.ends_with(".bpf.o") { test_object(w).to_str().unwrap().to_string() } else { w.to_string() }
    };
    commands.iter().map(|(c, ok)| (c.split_whitespace().map(word).collect(), *ok)).collect()
}

#[test]
fn runs_leave_nothing_with_bpffs_mounted_and_unmounted() {
    let _machine = common::machine();
    for state in [SysBpffs::Unmounted, SysBpffs::Mounted] {
        with_sys_bpffs(state, || {
            let before = Snapshot::take();
            if state == SysBpffs::Mounted {
                // What the kernel itself pins there must not count as ours.
                eprintln!("bpffs mounted at /sys/fs/bpf, holding {:?}", pins());
            }
            for (args, succeeds) in runs() {
                let o = bpfbench(&args);
                assert_eq!(o.status.success(), succeeds, "{state:?}: bpfbench {args:?}: {}", stderr(&o));
                before.assert_nothing_left(&format!("{state:?}: bpfbench {}", args.join(" ")));
            }
            // The pcap the failed validation wrote for the user (a file, not a kernel object).
            let _ = std::fs::remove_file(
                std::env::temp_dir().join("bpfbench-xdp_pin_by_name-xdp_pin_by_name-mismatch.pcap"),
            );
        });
    }
}

/// The check above can fail: a map pinned by libbpf (as the object asks)
/// and a program pinned by hand are seen as left, and so are the program
/// and map they keep loaded; once unpinned, nothing is.
#[test]
fn a_pin_and_what_it_keeps_loaded_are_seen_as_left() {
    let _machine = common::machine();
    with_sys_bpffs(SysBpffs::Mounted, || {
        let before = Snapshot::take();
        let obj = libbpf_rs::ObjectBuilder::default()
            .open_file(test_object("xdp_pin_by_name.bpf.o"))
            .unwrap()
            .load()
            .unwrap();
        let mut prog = obj.progs_mut().find(|p| p.name() == "xdp_pin_by_name").unwrap();
        let prog_pin = std::path::Path::new("/sys/fs/bpf/bpfbench_test_prog");
        prog.pin(prog_pin).unwrap();
        let map_pin = std::path::Path::new("/sys/fs/bpf/bpfbench_test_pinned");
        assert!(map_pin.exists(), "libbpf pinned the map by name");
        drop(obj);
        let left = before.left();
        for want in [
            "pinned /sys/fs/bpf/bpfbench_test_prog",
            "pinned /sys/fs/bpf/bpfbench_test_pinned",
            "program xdp_pin_by_name",
            "map bpfbench_test_",
        ] {
            assert!(left.iter().any(|l| l.starts_with(want)), "{want} not seen in {left:#?}");
        }
        std::fs::remove_file(prog_pin).unwrap();
        std::fs::remove_file(map_pin).unwrap();
        before.assert_nothing_left("unpinning");
    });
}

/// An interface named bpfbench that appears counts too; one that was there
/// before does not.
#[test]
fn a_bpfbench_interface_that_appears_is_seen_as_left() {
    let _machine = common::machine();
    let (name, peer) = (format!("bpfbench{:x}t", std::process::id()), format!("bpfbench{:x}u", std::process::id()));
    let ip = |args: &[&str]| std::process::Command::new("ip").args(args).status().unwrap().success();
    let before = Snapshot::take();
    assert!(ip(&["link", "add", &name, "type", "veth", "peer", "name", &peer]));
    // Removed again also if an assertion fails.
    struct Remove<'a>(&'a str);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip").args(["link", "del", self.0]).status();
        }
    }
    let _remove = Remove(&name);
    assert_eq!(before.left_now(), vec![format!("interface {name}"), format!("interface {peer}")]);
    assert!(Snapshot::take().left_now().is_empty());
}

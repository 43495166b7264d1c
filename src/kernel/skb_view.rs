//! The `__sk_buff` a tc program sees in a test run, as this kernel fills it:
//! a probe program (`skb_view.bpf.c`) run on the same packet and context
//! copies every field a tc program may read. What the userspace runtime
//! gives its tc programs, so that they read what the kernel's would.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::{Context, Result};
use libbpf_rs::skel::SkelBuilder;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use super::skeleton::{self, map_handle, prog_fd};
use super::test_run::run_in;

crate::bpf_skeleton!("skb_view");

/// The probe, loaded (held by descriptors: the skeleton is gone).
pub struct SkbViewer {
    prog: OwnedFd,
    view: MapHandle,
}

impl SkbViewer {
    pub fn load() -> Result<SkbViewer> {
        let mut storage = std::mem::MaybeUninit::uninit();
        let open = skel::SkbViewSkelBuilder::default().open(&mut storage).context("opening the __sk_buff probe")?;
        let skel = skeleton::load(open, "the probe that reads a tc program's __sk_buff for the userspace runtime")?;
        Ok(SkbViewer { prog: prog_fd(&skel.progs.bench_skb_view_tc)?, view: map_handle(&skel.maps.bench_skb_view)? })
    }

    /// The `__sk_buff` (its bytes, pointer fields zero) of a tc test run on
    /// `packet` with the context `ctx`.
    pub fn view(&self, packet: &[u8], ctx: Option<&[u8]>) -> Result<Vec<u8>> {
        run_in(self.prog.as_fd(), packet, ctx)?;
        self.view
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .context("reading the __sk_buff probe's output")?
            .context("the __sk_buff probe left no output")
    }
}

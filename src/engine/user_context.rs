//! The context a user's program gets in the userspace runtime: XDP's is
//! the runtime's own; a tc program's `__sk_buff` is the kernel's, read for
//! each packet of the case with the case's context by a probe program
//! ([`crate::kernel::skb_view`]), so that both read the same fields.

use std::collections::HashMap;

use anyhow::{Context, Result};

use crate::kernel::prog_type::ProgKind;
use crate::kernel::skb_view::SkbViewer;
use crate::uvm::UserRuntime;

/// Gives `rt` the `__sk_buff` of each of `packets` (with the test runs'
/// context `ctx`) when the program takes one; nothing to do for XDP.
pub fn give_contexts(rt: &mut UserRuntime, kind: ProgKind, packets: &[Vec<u8>], ctx: Option<&[u8]>) -> Result<()> {
    if !kind.has_skb() {
        return Ok(());
    }
    let viewer = SkbViewer::load().context("reading the __sk_buff the kernel gives a tc program")?;
    let mut views = HashMap::new();
    for p in packets {
        views.insert(p.clone(), viewer.view(p, ctx)?);
    }
    rt.set_skb_views(views);
    Ok(())
}

//! The return path's sink: what the program under test sends back
//! (XDP_TX) arrives at the generator's end of the veth, where a
//! two-instruction XDP_DROP program frees it at once. Without a program
//! there, the veth would refuse the frames (a veth takes XDP frames only
//! into a peer running XDP) and the host's stack would see the rest.

use std::os::fd::OwnedFd;

use crate::kernel::load::constant_program;
use crate::kernel::prog_type::ProgKind;
use anyhow::Result;

const XDP_DROP: i32 = 1;

/// Loads `r0 = XDP_DROP; exit`.
pub fn load_drop_program() -> Result<OwnedFd> {
    constant_program(ProgKind::Xdp, "bpfbench_sink", XDP_DROP, 0, 0)
}

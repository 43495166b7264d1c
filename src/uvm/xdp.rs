//! XDP as a userspace program sees it: the packet in a buffer with the
//! kernel's headroom, and `struct xdp_md`, whose 32-bit `data`,
//! `data_meta` and `data_end` read as real pointers (what the kernel's
//! verifier rewrites the loads into, and what userspace runtimes do).

use super::interp::{Counts, Env, Interpreter, VmError};
use super::memory::{Memory, RegionKind};

/// Bytes before the packet, as the kernel's test run gives (XDP_PACKET_HEADROOM).
pub const HEADROOM: usize = 256;

/// Offsets in `struct xdp_md`.
const DATA: u64 = 0;
const DATA_END: u64 = 4;
const DATA_META: u64 = 8;
const XDP_MD_BYTES: usize = 6 * 4;

/// What a run returned and left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpOutcome {
    pub verdict: u32,
    pub packet: Vec<u8>,
}

/// The environment of an XDP program without maps or helpers (those come next).
struct PacketEnv {
    data: u64,
    data_end: u64,
}

impl Env for PacketEnv {
    fn helper(&mut self, id: i32, _args: [u64; 5], _mem: &mut Memory) -> Result<u64, String> {
        Err(format!("helper {id} is not available in bpfbench's userspace runtime yet"))
    }

    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        Err(format!("map fd {fd}: maps are not available in bpfbench's userspace runtime yet"))
    }

    fn map_value(&mut self, fd: i32, _off: u32, _mem: &mut Memory) -> Result<u64, String> {
        Err(format!("map fd {fd}: global data is not available in bpfbench's userspace runtime yet"))
    }

    fn context_load(&self, off: u64, size: usize) -> Option<u64> {
        match (off, size) {
            (DATA, 4) | (DATA_META, 4) => Some(self.data),
            (DATA_END, 4) => Some(self.data_end),
            _ => None,
        }
    }
}

/// Runs an XDP program once on `packet`.
pub fn run(interp: &Interpreter<'_>, packet: &[u8], counts: &mut Counts) -> Result<XdpOutcome, VmError> {
    let mut buf = vec![0u8; HEADROOM + packet.len()];
    buf[HEADROOM..].copy_from_slice(packet);
    let data = buf.as_ptr() as u64 + HEADROOM as u64;
    let mut env = PacketEnv { data, data_end: data + packet.len() as u64 };
    // ingress_ifindex, rx_queue_index, egress_ifindex: 0, as a test run with no device gives.
    let ctx = [0u8; XDP_MD_BYTES];
    let mut mem = Memory::default();
    mem.add(&ctx, false, RegionKind::Context);
    mem.add(&buf[HEADROOM..], true, RegionKind::Packet);
    let verdict = interp.run(ctx.as_ptr() as u64, &mut env, &mut mem, counts)?;
    let start = (env.data - buf.as_ptr() as u64) as usize;
    let end = (env.data_end - buf.as_ptr() as u64) as usize;
    Ok(XdpOutcome { verdict: verdict as u32, packet: buf[start..end].to_vec() })
}

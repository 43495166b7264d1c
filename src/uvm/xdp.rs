//! XDP as a userspace program sees it: the packet in a page-sized buffer
//! laid out as the kernel's test run lays it out (headroom, data,
//! tailroom), and `struct xdp_md`, whose 32-bit `data`, `data_meta` and
//! `data_end` read as real pointers (what the kernel's verifier rewrites
//! the loads into, and what userspace runtimes do). Helpers and maps come
//! from [`XdpEnv`].

use super::PacketOutcome;
use super::helpers::Helpers;
use super::interp::{Counts, Env, Interpreter, VmError};
use super::maps::UserMaps;
use super::memory::{Memory, RegionKind};
use super::uapi::{EINVAL, XDP_ADJUST_HEAD, XDP_ADJUST_TAIL};

/// Bytes before the packet (XDP_PACKET_HEADROOM).
pub const HEADROOM: usize = 256;
/// The frame: one page, as the kernel's test run allocates.
pub(super) const FRAME: usize = 4096;
/// The end of the frame kept for skb_shared_info: the tail grows up to it.
pub(super) const TAILROOM: usize = 320;
/// adjust_head may not reach into the xdp_frame kept at the buffer's start.
const XDP_FRAME_BYTES: usize = 40;
const ETH_HLEN: u64 = 14;

/// Offsets in `struct xdp_md`.
const DATA: u64 = 0;
const DATA_END: u64 = 4;
const DATA_META: u64 = 8;
pub(super) const XDP_MD_BYTES: usize = 6 * 4;

/// The packet's bounds, and everything else a helper may reach.
struct XdpEnv<'a> {
    buf_start: u64,
    data: u64,
    data_end: u64,
    helpers: &'a mut Helpers,
    maps: Option<&'a mut UserMaps>,
}

impl XdpEnv<'_> {
    fn adjust(&mut self, id: i32, delta: i64, mem: &mut Memory) -> u64 {
        match adjusted(self.buf_start, self.data, self.data_end, id, delta) {
            Some((data, end)) => {
                (self.data, self.data_end) = (data, end);
                mem.reset(RegionKind::Packet, data, end - data);
                0
            }
            None => (-EINVAL) as u64,
        }
    }
}

/// bpf_xdp_adjust_head (`id` XDP_ADJUST_HEAD) or _tail by `delta` on the
/// packet [data, data_end) of the frame at `buf_start`: the new bounds, or
/// None where the kernel refuses (-EINVAL). Bytes the tail grows into are
/// cleared, as the kernel clears them.
pub(super) fn adjusted(buf_start: u64, data: u64, data_end: u64, id: i32, delta: i64) -> Option<(u64, u64)> {
    let (new_data, end) = match id {
        XDP_ADJUST_HEAD => (data.wrapping_add(delta as u64), data_end),
        _ => (data, data_end.wrapping_add(delta as u64)),
    };
    let lowest = buf_start + XDP_FRAME_BYTES as u64;
    let highest = buf_start + (FRAME - TAILROOM) as u64;
    if new_data < lowest || end > highest || end < new_data + ETH_HLEN {
        return None;
    }
    if id == XDP_ADJUST_TAIL && end > data_end {
        // SAFETY: [data_end, end) lies inside the frame buffer.
        unsafe { std::ptr::write_bytes(data_end as *mut u8, 0, (end - data_end) as usize) };
    }
    Some((new_data, end))
}

impl Env for XdpEnv<'_> {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, String> {
        match id {
            XDP_ADJUST_HEAD | XDP_ADJUST_TAIL => Ok(self.adjust(id, args[1] as i32 as i64, mem)),
            _ => self.helpers.call(id, args, self.maps.as_deref_mut(), mem),
        }
    }

    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        self.helpers.map_handle(self.maps.as_deref(), fd)
    }

    fn map_value(&mut self, fd: i32, off: u32, mem: &mut Memory) -> Result<u64, String> {
        self.helpers.map_value(self.maps.as_deref_mut(), fd, off, mem)
    }

    fn tail_slot(&mut self, map: u64, index: u64) -> Option<Option<u32>> {
        self.helpers.tail_slot(self.maps.as_deref_mut(), map, index)
    }

    fn context_load(&self, off: u64, size: usize) -> Option<u64> {
        match (off, size) {
            (DATA, 4) | (DATA_META, 4) => Some(self.data),
            (DATA_END, 4) => Some(self.data_end),
            _ => None,
        }
    }
}

/// Runs an XDP program once on `packet`, with `maps` if it has any.
pub fn run(
    interp: &Interpreter<'_>,
    packet: &[u8],
    helpers: &mut Helpers,
    mut maps: Option<&mut UserMaps>,
    counts: &mut Counts,
) -> Result<PacketOutcome, VmError> {
    if HEADROOM + packet.len() > FRAME - TAILROOM {
        return Err(VmError {
            pc: 0,
            insn: Default::default(),
            what: format!("a {}-byte packet does not fit the page the kernel's test run uses", packet.len()),
        });
    }
    let mut buf = vec![0u8; FRAME];
    buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
    let buf_start = buf.as_mut_ptr() as u64;
    let data = buf_start + HEADROOM as u64;
    // ingress_ifindex, rx_queue_index, egress_ifindex: 0, as a test run with no device gives.
    let ctx = [0u8; XDP_MD_BYTES];
    let mut mem = Memory::default();
    mem.add(ctx.as_ptr(), ctx.len(), false, RegionKind::Context);
    mem.add((buf_start + HEADROOM as u64) as *const u8, packet.len(), true, RegionKind::Packet);
    let mut env = XdpEnv { buf_start, data, data_end: data + packet.len() as u64, helpers, maps: maps.as_deref_mut() };
    let verdict = interp.run(ctx.as_ptr() as u64, &mut env, &mut mem, counts);
    let (start, end) = ((env.data - buf_start) as usize, (env.data_end - buf_start) as usize);
    if let Some(m) = maps {
        m.end_run();
    }
    Ok(PacketOutcome { verdict: verdict? as u32, packet: buf[start..end].to_vec() })
}

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
use super::uapi::{EINVAL, XDP_ADJUST_HEAD, XDP_ADJUST_META, XDP_ADJUST_TAIL};

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

/// An XDP packet's bounds in its frame: [data_meta, data) is the metadata
/// the program put in front (`bpf_xdp_adjust_meta`), [data, data_end) the
/// packet. Both engines keep them through this, as the kernel does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XdpBounds {
    pub buf_start: u64,
    pub data_meta: u64,
    pub data: u64,
    pub data_end: u64,
}

/// Metadata bytes at most, in 4-byte steps (the kernel's xdp_metalen_invalid).
const META_MAX: u64 = 32;
const EACCES: i64 = 13;

impl XdpBounds {
    /// The packet [data, data + len) with no metadata.
    pub fn new(buf_start: u64, data: u64, len: usize) -> XdpBounds {
        XdpBounds { buf_start, data_meta: data, data, data_end: data + len as u64 }
    }

    /// bpf_xdp_adjust_head, _tail or _meta (`id`) by `delta`: the helper's
    /// return value, the bounds changed where it succeeds. The head moves
    /// the metadata with it; bytes the tail grows into are cleared; as in
    /// the kernel.
    pub fn adjust(&mut self, id: i32, delta: i64) -> u64 {
        let lowest = self.buf_start + XDP_FRAME_BYTES as u64;
        let highest = self.buf_start + (FRAME - TAILROOM) as u64;
        let metalen = self.data - self.data_meta;
        match id {
            XDP_ADJUST_HEAD => {
                let data = self.data.wrapping_add(delta as u64);
                if data < lowest + metalen || data > self.data_end.wrapping_sub(ETH_HLEN) {
                    return (-EINVAL) as u64;
                }
                let meta = self.data_meta.wrapping_add(delta as u64);
                if metalen > 0 {
                    // SAFETY: both ranges lie inside the frame (checked above).
                    unsafe { std::ptr::copy(self.data_meta as *const u8, meta as *mut u8, metalen as usize) };
                }
                (self.data_meta, self.data) = (meta, data);
            }
            XDP_ADJUST_META => {
                let meta = self.data_meta.wrapping_add(delta as u64);
                if meta < lowest || meta > self.data {
                    return (-EINVAL) as u64;
                }
                let len = self.data - meta;
                if !len.is_multiple_of(4) || len > META_MAX {
                    return (-EACCES) as u64;
                }
                self.data_meta = meta;
            }
            _ => {
                let end = self.data_end.wrapping_add(delta as u64);
                if end > highest || end < self.data + ETH_HLEN {
                    return (-EINVAL) as u64;
                }
                if end > self.data_end {
                    // SAFETY: [data_end, end) lies inside the frame.
                    unsafe { std::ptr::write_bytes(self.data_end as *mut u8, 0, (end - self.data_end) as usize) };
                }
                self.data_end = end;
            }
        }
        0
    }

    /// What the kernel's test run hands back: the metadata and the packet.
    pub fn output(&self) -> std::ops::Range<usize> {
        (self.data_meta - self.buf_start) as usize..(self.data_end - self.buf_start) as usize
    }
}

/// The packet's bounds, and everything else a helper may reach.
struct XdpEnv<'a> {
    bounds: XdpBounds,
    helpers: &'a mut Helpers,
    maps: Option<&'a mut UserMaps>,
}

impl Env for XdpEnv<'_> {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, String> {
        match id {
            XDP_ADJUST_HEAD | XDP_ADJUST_TAIL | XDP_ADJUST_META => {
                let rc = self.bounds.adjust(id, args[1] as i32 as i64);
                let b = self.bounds;
                // The metadata is the program's to read and write too.
                mem.reset(RegionKind::Packet, b.data_meta, b.data_end - b.data_meta);
                Ok(rc)
            }
            _ => self.helpers.call(id, args, self.maps.as_deref_mut(), mem),
        }
    }

    fn reach(&mut self) -> Option<(&mut Helpers, Option<&mut UserMaps>)> {
        Some((&mut *self.helpers, self.maps.as_deref_mut()))
    }

    fn context_load(&self, off: u64, size: usize) -> Option<u64> {
        match (off, size) {
            (DATA, 4) => Some(self.bounds.data),
            (DATA_META, 4) => Some(self.bounds.data_meta),
            (DATA_END, 4) => Some(self.bounds.data_end),
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
    let mut env = XdpEnv { bounds: XdpBounds::new(buf_start, data, packet.len()), helpers, maps: maps.as_deref_mut() };
    let verdict = interp.run(ctx.as_ptr() as u64, &mut env, &mut mem, counts);
    let out = env.bounds.output();
    if let Some(m) = maps {
        m.end_run();
    }
    Ok(PacketOutcome { verdict: verdict? as u32, packet: buf[out].to_vec() })
}

//! XDP and tc for JIT code: the frame and the context (`struct xdp_md`,
//! `struct __sk_buff`) in memory below 4 GiB, so the context's 32-bit
//! `data`/`data_end` are the packet's real addresses and the program's
//! loads of them need no rewriting.

use super::super::PacketOutcome;
use super::super::helpers::Helpers;
use super::super::maps::UserMaps;
use super::super::tc;
use super::super::xdp::{FRAME, HEADROOM, TAILROOM, XDP_MD_BYTES};
use super::JitProgram;
use super::calls::{HelperEnv, HelperEnvGuard, TailEntry, XdpMd};

/// One page for the frame, one for the context.
const MAPPING: usize = 2 * FRAME;

/// The frame and context of XDP runs, mapped once and reused.
pub struct Frame32 {
    base: *mut u8,
}

impl Frame32 {
    pub fn new() -> std::io::Result<Frame32> {
        // SAFETY: a fresh private anonymous mapping; unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAPPING,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        if p as u64 + MAPPING as u64 > u64::from(u32::MAX) {
            // SAFETY: the mapping just made.
            unsafe { libc::munmap(p, MAPPING) };
            return Err(std::io::Error::other("MAP_32BIT gave memory above 4 GiB"));
        }
        Ok(Frame32 { base: p.cast() })
    }

    /// Runs `prog` on `packet` with the helpers reaching `helpers` and
    /// `maps`, and tail calls `targets`: as XDP, or as tc when `skb` is the
    /// `__sk_buff` the kernel's test run gives for the packet.
    ///
    /// # Safety
    /// `prog` must be a program the kernel's verifier accepted, as XDP
    /// (`skb` None) or tc.
    pub unsafe fn run(
        &mut self,
        prog: &mut JitProgram,
        packet: &[u8],
        skb: Option<&[u8]>,
        helpers: &mut Helpers,
        maps: &mut UserMaps,
        targets: &Vec<(u32, TailEntry)>,
    ) -> Result<PacketOutcome, String> {
        if HEADROOM + packet.len() > FRAME - TAILROOM {
            return Err(format!("a {}-byte packet does not fit the page the kernel's test run uses", packet.len()));
        }
        let frame = self.base as u64;
        // SAFETY: the frame is FRAME bytes of this mapping; the context sits in the next page.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.base, FRAME) };
        buf.fill(0);
        buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
        let ctx = frame + FRAME as u64;
        let data = (frame + HEADROOM as u64) as u32;
        let data_end = data + packet.len() as u32;
        // Where the context keeps the output's start and end (32-bit
        // addresses: the frame is below 4 GiB). XDP's output starts at its
        // metadata, as the kernel's test run's does.
        let (start_at, end_at) = match skb {
            None => {
                let md =
                    XdpMd { data, data_end, data_meta: data, ingress_ifindex: 0, rx_queue_index: 0, egress_ifindex: 0 };
                const _: () = assert!(std::mem::size_of::<XdpMd>() == XDP_MD_BYTES);
                // SAFETY: the context page is ours and large enough.
                unsafe { (ctx as *mut XdpMd).write(md) };
                (std::mem::offset_of!(XdpMd, data_meta), std::mem::offset_of!(XdpMd, data_end))
            }
            Some(view) => {
                if view.len() < tc::SKB_BYTES {
                    return Err(format!("a __sk_buff of {} bytes, not {}", view.len(), tc::SKB_BYTES));
                }
                // SAFETY: the context page is ours (FRAME bytes); the fields lie inside the view.
                unsafe {
                    std::ptr::copy_nonoverlapping(view.as_ptr(), ctx as *mut u8, tc::SKB_BYTES);
                    for (at, v) in [(tc::SKB_DATA, data), (tc::SKB_DATA_END, data_end), (tc::SKB_DATA_META, data)] {
                        ((ctx as usize + at) as *mut u32).write_unaligned(v);
                    }
                }
                (tc::SKB_DATA, tc::SKB_DATA_END)
            }
        };
        let mut env = HelperEnv::new(helpers, maps, frame, targets);
        let verdict = {
            // SAFETY: env outlives the guard; the runtime is borrowed mutably throughout.
            let _guard = unsafe { HelperEnvGuard::set(&mut env) };
            // SAFETY: the caller's contract; the context is what the program's type expects.
            unsafe { prog.call(ctx) }
        };
        // SAFETY: as above; the helpers kept data..data_end inside the frame.
        let field = |at: usize| u64::from(unsafe { ((ctx as usize + at) as *const u32).read_unaligned() });
        let (start, end) = ((field(start_at) - frame) as usize, (field(end_at) - frame) as usize);
        maps.end_run();
        if let Some(why) = env.error {
            return Err(why);
        }
        Ok(PacketOutcome { verdict: verdict as u32, packet: buf[start..end].to_vec() })
    }
}

impl Drop for Frame32 {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), MAPPING) };
    }
}

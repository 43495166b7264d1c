//! XDP for JIT code: the frame and `struct xdp_md` in memory below 4 GiB,
//! so the context's 32-bit `data`/`data_end` are the packet's real
//! addresses and the program's loads of them need no rewriting.

use super::super::helpers::Helpers;
use super::super::maps::UserMaps;
use super::super::xdp::{FRAME, HEADROOM, TAILROOM, XDP_MD_BYTES, XdpOutcome};
use super::JitProgram;
use super::calls::{Env, EnvGuard, TailEntry, XdpMd};

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

    /// Runs `prog` on `packet` as XDP, with the helpers reaching `helpers`
    /// and `maps`, and tail calls `targets`.
    ///
    /// # Safety
    /// `prog` must be a program the kernel's verifier accepted as XDP.
    pub unsafe fn run(
        &mut self,
        prog: &mut JitProgram,
        packet: &[u8],
        helpers: &mut Helpers,
        maps: &mut UserMaps,
        targets: &Vec<(u32, TailEntry)>,
    ) -> Result<XdpOutcome, String> {
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
        let md = XdpMd {
            data,
            data_end: data + packet.len() as u32,
            data_meta: data,
            ingress_ifindex: 0,
            rx_queue_index: 0,
            egress_ifindex: 0,
        };
        const _: () = assert!(std::mem::size_of::<XdpMd>() == XDP_MD_BYTES);
        // SAFETY: the context page is ours and large enough.
        unsafe { (ctx as *mut XdpMd).write(md) };
        let mut env = Env::new(helpers, maps, frame, targets);
        let verdict = {
            // SAFETY: env outlives the guard; the runtime is borrowed mutably throughout.
            let _guard = unsafe { EnvGuard::set(&mut env) };
            // SAFETY: the caller's contract; the context is what XDP expects.
            unsafe { prog.call(ctx) }
        };
        // SAFETY: as above; the helpers kept data..data_end inside the frame.
        let md = unsafe { &*(ctx as *const XdpMd) };
        let (start, end) = ((u64::from(md.data) - frame) as usize, (u64::from(md.data_end) - frame) as usize);
        maps.end_run();
        if let Some(id) = env.missing {
            return Err(format!(
                "a tail call reached the program with kernel id {id}, which is not in the userspace runtime"
            ));
        }
        Ok(XdpOutcome { verdict: verdict as u32, packet: buf[start..end].to_vec() })
    }
}

impl Drop for Frame32 {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), MAPPING) };
    }
}

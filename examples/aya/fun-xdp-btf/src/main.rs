#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::xdp_action,
    macros::{btf_map, xdp},
    btf_maps::HashMap,
    programs::XdpContext,
};

/// Each IPv4 source's class: 1 Fizz, 2 Buzz, 3 FizzBuzz, 0 none.
#[btf_map]
static SOURCES: HashMap<u32, u32, 1024> = HashMap::new();

#[xdp]
pub fn fun_xdp(ctx: XdpContext) -> u32 {
    let (start, end) = (ctx.data(), ctx.data_end());
    if start + 34 > end {
        return xdp_action::XDP_PASS;
    }
    // SAFETY: within the packet, checked above.
    let ethertype = unsafe { core::ptr::read_unaligned((start + 12) as *const u16) };
    if ethertype != 0x0008 {
        return xdp_action::XDP_PASS;
    }
    let src = u32::from_be(unsafe { core::ptr::read_unaligned((start + 26) as *const u32) });
    let class: u32 = match (src % 3, src % 5) {
        (0, 0) => 3,
        (_, 0) => 2,
        (0, _) => 1,
        _ => 0,
    };
    let _ = SOURCES.insert(&src, &class, 0);
    xdp_action::XDP_PASS
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::xdp_action,
    macros::{map, xdp},
    maps::HashMap,
    programs::XdpContext,
};

/// Each IPv4 source's class: 1 Fizz, 2 Buzz, 3 FizzBuzz, 4 Fibonacci (with
/// the `fibonacci` feature: its last octet a Fibonacci number), 0 none.
#[map]
static SOURCES: HashMap<u32, u32> = HashMap::with_max_entries(1024, 0);

/// Whether `n` is a Fibonacci number: one of the 13 below 256.
#[cfg(all(feature = "fibonacci", not(feature = "fib-loop")))]
fn is_fibonacci(n: u8) -> bool {
    matches!(n, 0 | 1 | 2 | 3 | 5 | 8 | 13 | 21 | 34 | 55 | 89 | 144 | 233)
}

/// Whether `n` is a Fibonacci number: the sequence walked up to `n`, for
/// every packet (the regression).
#[cfg(feature = "fib-loop")]
fn is_fibonacci(n: u8) -> bool {
    let (mut a, mut b) = (0u16, 1u16);
    while b < u16::from(n) {
        let next = a + b;
        a = b;
        b = next;
    }
    n == 0 || b == u16::from(n)
}

#[cfg(not(feature = "fibonacci"))]
fn is_fibonacci(_: u8) -> bool {
    false
}

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
        _ if is_fibonacci(src as u8) => 4,
        _ => 0,
    };
    let _ = SOURCES.insert(&src, &class, 0);
    #[cfg(feature = "log")]
    aya_log_ebpf::info!(&ctx, "source {:i} is class {}", src, class);
    xdp_action::XDP_PASS
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

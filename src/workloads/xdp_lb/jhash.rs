//! Host copy of src/bpf/jhash.bpf.h, used to predict which real a flow's
//! consistent hash lands on. Inputs are 32-bit words as the BPF program loads
//! them from memory (native byte order of network bytes). The kernel
//! integration tests check it against the BPF side on thousands of flows.

const JHASH_INITVAL: u32 = 0xdead_beef;

fn final_mix(mut a: u32, mut b: u32, mut c: u32) -> u32 {
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// jhash of a 16-byte key given as four native words.
pub fn jhash_16bytes(k: [u32; 4], initval: u32) -> u32 {
    let init = JHASH_INITVAL.wrapping_add(16).wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    a = a.wrapping_add(k[0]);
    b = b.wrapping_add(k[1]);
    c = c.wrapping_add(k[2]);
    mix(&mut a, &mut b, &mut c);
    a = a.wrapping_add(k[3]);
    final_mix(a, b, c)
}

pub fn jhash_2words(a: u32, b: u32, initval: u32) -> u32 {
    let init = initval.wrapping_add(JHASH_INITVAL).wrapping_add(2 << 2);
    final_mix(a.wrapping_add(init), b.wrapping_add(init), init)
}

/// A 4-byte network-order field as the BPF program sees it in a register.
pub fn word(bytes: [u8; 4]) -> u32 {
    u32::from_ne_bytes(bytes)
}

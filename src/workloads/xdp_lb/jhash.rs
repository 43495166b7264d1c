//! Host copy of src/bpf/jhash.bpf.h, used to predict which real a flow's
//! consistent hash lands on. Inputs are 32-bit words as the BPF program loads
//! them from memory (native byte order of network bytes). The kernel
//! integration tests check it against the BPF side on thousands of flows.

const JHASH_INITVAL: u32 = 0xdead_beef;

/// `__jhash_final`: seven steps of `x ^= y; x -= rol(y, k)`, (x, y) going
/// round (c, b), (a, c), (b, a).
fn final_mix(a: u32, b: u32, c: u32) -> u32 {
    let mut v = [a, b, c];
    for (i, k) in [14, 11, 25, 16, 4, 14, 24].into_iter().enumerate() {
        let (x, y) = [(2, 1), (0, 2), (1, 0)][i % 3];
        v[x] = (v[x] ^ v[y]).wrapping_sub(v[y].rotate_left(k));
    }
    v[2]
}

/// `__jhash_mix`: six steps of `x -= z; x ^= rol(z, k); z += y`, (x, y, z)
/// going round (a, b, c), (b, c, a), (c, a, b).
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    let mut v = [*a, *b, *c];
    for (i, k) in [4, 6, 8, 16, 19, 4].into_iter().enumerate() {
        let (x, y, z) = [(0, 1, 2), (1, 2, 0), (2, 0, 1)][i % 3];
        v[x] = v[x].wrapping_sub(v[z]) ^ v[z].rotate_left(k);
        v[z] = v[z].wrapping_add(v[y]);
    }
    [*a, *b, *c] = v;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of the unrolled version the kernel tests checked against the
    /// BPF side (before the steps became loops), on a 100,000-input sweep
    /// equal too.
    #[test]
    fn hashes_stay_what_the_bpf_side_computes() {
        assert_eq!(jhash_16bytes([1, 2, 3, 4], 16), 0x4494_e72c);
        assert_eq!(jhash_16bytes([0x0a00_0001, 0x0a00_0002, 0x50, 0x1f90], 0), 0xd83d_49ac);
        assert_eq!(jhash_2words(1, 2, 65537), 0xf97d_fb96);
        assert_eq!(jhash_2words(0x0100_000a, 0x5000, 65537), 0x5327_638c);
    }
}

//! How much of the packet the driver writes back after each iteration,
//! decided from what the program did to each input in validation: the bytes
//! it changed (seen through a moved head when the length changed), and the
//! bytes in which the case's packets differ from one another.
//!
//! The driver puts the packet's length back itself; bytes beyond the
//! restored prefix must never change, which the check after every batch
//! (the last iteration's output against the program's own) confirms.

use crate::kernel::prog_type::ProgKind;
use crate::kernel::test_run::RunOutput;

use super::MAX_RESTORE as BENCH_MAX_RESTORE;

/// What the driver writes back per iteration, or why it cannot time the case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// Bytes from the start of the packet (0: nothing; else at least 8, and
    /// a multiple of 8 unless it is the whole packet).
    Bytes(u32),
    /// The reason the case must be timed per call instead.
    PerCall(String),
}

/// Index past the last byte where `a` and `b` differ (0 when equal).
fn last_difference(a: &[u8], b: &[u8]) -> usize {
    (0..a.len().max(b.len())).rev().find(|&i| a.get(i) != b.get(i)).map_or(0, |i| i + 1)
}

/// Index past the last input byte the program changed, given its output.
fn changed_extent(kind: ProgKind, input: &[u8], output: &[u8]) -> usize {
    let (n, m) = (input.len(), output.len());
    if n == m {
        return last_difference(input, output);
    }
    if kind.has_skb() {
        // adjust_room inserts or removes in the middle: write everything back.
        return n;
    }
    // XDP: the head moved (adjust_head) when the inputs' tail is still the
    // outputs' tail; otherwise the tail moved (adjust_tail).
    let k = n.min(m).min(16);
    let shift = m as isize - n as isize;
    let head_moved = k > 0 && input[n - k..] == output[m - k..];
    (0..n)
        .rev()
        .find(|&i| {
            let j = if head_moved { i as isize + shift } else { i as isize };
            j < 0 || j as usize >= m || input[i] != output[j as usize]
        })
        .map_or(0, |i| i + 1)
}

/// Whether a program that takes an skb changed the length of any of its
/// `inputs` (its outputs in `references`): the loop then puts the length
/// back with a helper, at the tail or at the MAC header.
pub fn resizes_skb(kind: ProgKind, inputs: &[Vec<u8>], references: &[RunOutput]) -> bool {
    kind.has_skb() && references.iter().zip(inputs).any(|(r, p)| r.packet.len() != p.len())
}

/// The restore plan for a case whose `inputs` the program turned into `outputs`.
pub fn plan(kind: ProgKind, inputs: &[Vec<u8>], outputs: &[Vec<u8>]) -> Restore {
    let len = inputs[0].len();
    if let Some(other) = inputs.iter().find(|p| p.len() != len) {
        return Restore::PerCall(format!(
            "the case's packets differ in length ({len} and {} bytes); in the batch loop they must share one (or time them as separate cases)",
            other.len()
        ));
    }
    let varies = inputs.iter().map(|p| last_difference(p, &inputs[0])).max().unwrap_or(0);
    let changed = inputs.iter().zip(outputs).map(|(i, o)| changed_extent(kind, i, o)).max().unwrap_or(0);
    let need = varies.max(changed);
    // Whole words, or the whole packet where whole words would run past
    // its end (the driver writes a last word that ends with the packet).
    let bytes = (need.div_ceil(8) * 8).min(len);
    let max = BENCH_MAX_RESTORE as usize;
    if bytes > max {
        return Restore::PerCall(format!(
            "the loop would have to write back {bytes} bytes per iteration (the program changes or the packets differ up to byte {need}); it writes at most {max}"
        ));
    }
    if bytes > 0 && bytes < 8 {
        return Restore::PerCall(format!(
            "the loop writes back at least one 8-byte word, more than the {len}-byte packet"
        ));
    }
    Restore::Bytes(bytes as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_packets_need_nothing_and_a_rewrite_needs_its_extent() {
        let p = vec![7u8; 64];
        assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&p), std::slice::from_ref(&p)), Restore::Bytes(0));
        let mut swapped = p.clone();
        swapped[0] = 1;
        swapped[11] = 2;
        assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&p), &[swapped]), Restore::Bytes(16));
    }

    #[test]
    fn a_moved_head_is_seen_through() {
        // Encapsulation: 20 bytes pushed in front, the first 14 bytes overwritten.
        let input: Vec<u8> = (0..64).collect();
        let mut output = vec![0xee; 34];
        output.extend_from_slice(&input[14..]);
        assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&input), &[output]), Restore::Bytes(16));
        // A shorter tail was cut: everything from the cut on must come back.
        assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&input), &[input[..40].to_vec()]), Restore::Bytes(64));
        // tc cannot tell where bytes were inserted: all of it.
        let mut longer = input.clone();
        longer.insert(30, 9);
        assert_eq!(plan(ProgKind::Tc, std::slice::from_ref(&input), &[longer]), Restore::Bytes(64));
    }

    #[test]
    fn variants_need_the_bytes_in_which_they_differ() {
        let a = vec![0u8; 80];
        let mut b = a.clone();
        b[70] = 1; // an IPv6 TCP checksum
        assert_eq!(plan(ProgKind::Xdp, &[a.clone(), b.clone()], &[a.clone(), b.clone()]), Restore::Bytes(72));
        assert!(
            matches!(plan(ProgKind::Xdp, &[a.clone(), vec![0; 60]], &[a.clone(), a]), Restore::PerCall(r) if r.contains("differ in length"))
        );
    }

    #[test]
    fn a_frame_of_any_length_is_written_back_whole_and_no_further() {
        // A TCP ACK (54 bytes), a SYN (60), and odd lengths, changed in their last byte.
        for len in [54usize, 60, 61, 90, 14] {
            let input = vec![0u8; len];
            let mut changed = input.clone();
            changed[len - 1] = 1;
            assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&input), &[changed]), Restore::Bytes(len as u32));
        }
        // Changed early: whole words still, short of the end.
        let input = vec![0u8; 61];
        let mut changed = input.clone();
        changed[3] = 1;
        assert_eq!(plan(ProgKind::Xdp, std::slice::from_ref(&input), &[changed]), Restore::Bytes(8));
        // Shorter than a word: nothing the loop can write.
        let tiny = vec![0u8; 6];
        let mut changed = tiny.clone();
        changed[5] = 1;
        assert!(matches!(plan(ProgKind::Xdp, &[tiny], &[changed]), Restore::PerCall(r) if r.contains("8-byte word")));
    }
}

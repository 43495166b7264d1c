//! The kernel's numbers a program sees from maps and helpers: helper ids,
//! errnos (returned negated) and update flags.

pub const ENOENT: i64 = 2;
pub const E2BIG: i64 = 7;
pub const EFAULT: i64 = 14;
pub const ENOMEM: i64 = 12;
pub const EEXIST: i64 = 17;
pub const EINVAL: i64 = 22;
pub const ENOSPC: i64 = 28;
pub const ENOTSUPP: i64 = 524;

/// bpf_map_update_elem's flags.
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;

/// Helper ids.
pub use crate::insn::helper::*;

/// Tail calls one run may make (MAX_TAIL_CALL_CNT since 5.17; 6.10+ count
/// them across the run's subprograms too, as this runtime does).
pub const MAX_TAIL_CALLS: u32 = 33;

//! The kernel's numbers a program sees from maps and helpers: errnos
//! (returned negated) and update flags.

pub const ENOENT: i64 = 2;
pub const E2BIG: i64 = 7;
pub const ENOMEM: i64 = 12;
pub const EEXIST: i64 = 17;
pub const EINVAL: i64 = 22;
pub const ENOSPC: i64 = 28;

/// bpf_map_update_elem's flags.
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;

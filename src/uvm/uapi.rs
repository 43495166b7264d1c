//! The kernel's numbers a program sees from maps and helpers: helper ids,
//! errnos (returned negated) and update flags.

pub const ENOENT: i64 = 2;
pub const E2BIG: i64 = 7;
pub const EFAULT: i64 = 14;
pub const ENOMEM: i64 = 12;
pub const EEXIST: i64 = 17;
pub const EINVAL: i64 = 22;
pub const ENOSPC: i64 = 28;

/// bpf_map_update_elem's flags.
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;

/// Helper ids (uapi/linux/bpf.h).
pub const MAP_LOOKUP_ELEM: i32 = 1;
pub const MAP_UPDATE_ELEM: i32 = 2;
pub const MAP_DELETE_ELEM: i32 = 3;
pub const KTIME_GET_NS: i32 = 5;
pub const GET_PRANDOM_U32: i32 = 7;
pub const GET_SMP_PROCESSOR_ID: i32 = 8;
pub const SKB_STORE_BYTES: i32 = 9;
pub const L3_CSUM_REPLACE: i32 = 10;
pub const L4_CSUM_REPLACE: i32 = 11;
pub const TAIL_CALL: i32 = 12;
pub const REDIRECT: i32 = 23;
pub const SKB_LOAD_BYTES: i32 = 26;
pub const SKB_CHANGE_TAIL: i32 = 38;
pub const SKB_PULL_DATA: i32 = 39;
pub const CSUM_DIFF: i32 = 28;
pub const XDP_ADJUST_HEAD: i32 = 44;
pub const XDP_ADJUST_META: i32 = 54;
pub const XDP_ADJUST_TAIL: i32 = 65;

/// Tail calls one run may make (MAX_TAIL_CALL_CNT since 5.17; 6.10+ count
/// them across the run's subprograms too, as this runtime does).
pub const MAX_TAIL_CALLS: u32 = 33;

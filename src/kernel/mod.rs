//! The one place bpfbench talks to the kernel: libbpf (and its raw calls
//! through `libbpf_sys`) and the BPF syscalls. Everything else reaches the
//! kernel through these modules and the types they name; no other module
//! uses `libbpf_sys` (a test in `tests/cli/layers.rs` holds the tree to that).
//!
//! - [`prog_type`]: the program types bpfbench runs, one descriptor each;
//!   [`attach_point`]: where a program attaches, read from its section;
//! - [`object`]: a BPF object file opened with libbpf, one program loaded
//!   with its verifier log; [`prepared`]: the instructions and maps libbpf
//!   prepared, for the userspace runtime; [`lines`]: their source lines;
//! - [`skeleton`]: loading bpfbench's own skeletons;
//! - [`load`]: programs made from instructions in hand (spliced drivers,
//!   constant programs, spacers), [`maps`]: maps made and filled by hand;
//! - [`test_run`]: `BPF_PROG_TEST_RUN`; [`prog_info`]: what the kernel says
//!   of a loaded program; [`bpf_stats`]: its run-time statistics;
//! - [`netdev`]: attaching XDP to interfaces; [`bpffs`]: pinned objects;
//! - [`slot_traps`]: programs that watch prog arrays' empty slots;
//! - [`features`]: probes of what the kernel accepts; [`libbpf_log`]:
//!   libbpf's messages, kept for errors; [`btf_value`]: values laid out
//!   by BTF (map entries, globals, kernel structs a test run takes).

/// libbpf's options struct `libbpf_rs::libbpf_sys::$t` as C's LIBBPF_OPTS makes it:
/// its size in `sz` (how libbpf tells its versions' structs apart), the
/// fields given, the rest zero.
macro_rules! libbpf_opts {
    ($t:ident { $($field:ident: $value:expr),* $(,)? }) => {
        libbpf_rs::libbpf_sys::$t { sz: std::mem::size_of::<libbpf_rs::libbpf_sys::$t>() as _, $($field: $value,)* ..Default::default() }
    };
}

pub mod attach_point;
pub mod bpf_stats;
pub mod bpffs;
pub mod btf_names;
pub mod btf_value;
pub mod buffers;
pub mod features;
pub mod hash_seed;
pub mod libbpf_log;
pub mod lines;
pub mod load;
pub mod map_snapshot;
pub mod maps;
pub mod netdev;
pub mod object;
pub mod prepared;
pub mod prog_info;
pub mod prog_type;
pub mod running;
pub mod skb_view;
pub mod skeleton;
pub mod slot_traps;
pub mod sockmap;
pub mod test_run;

/// The attach type a program is loaded with (`enum bpf_attach_type`).
pub use libbpf_rs::libbpf_sys::bpf_attach_type as AttachType;
/// A function record of a program's BTF (`struct bpf_func_info`).
pub use libbpf_rs::libbpf_sys::bpf_func_info as FuncInfo;
/// One BPF instruction as the kernel takes it (`struct bpf_insn`); the
/// rest of the tree holds [`crate::insn::Insn`], converted here.
use libbpf_rs::libbpf_sys::bpf_insn as BpfInsn;

use crate::insn::Insn;

/// Instructions in the kernel's form.
fn to_kernel(insns: &[Insn]) -> Vec<BpfInsn> {
    insns
        .iter()
        .map(|i| {
            let mut k = BpfInsn { code: i.code, off: i.off, imm: i.imm, ..Default::default() };
            k.set_dst_reg(i.dst);
            k.set_src_reg(i.src);
            k
        })
        .collect()
}

/// Instructions libbpf holds, as the tree reads them.
fn from_kernel(insns: &[BpfInsn]) -> Vec<Insn> {
    insns.iter().map(|k| Insn::new(k.code, k.dst_reg(), k.src_reg(), k.off, k.imm)).collect()
}

//! Names the running kernel's BTF gives what a program calls: a helper by
//! its number (`enum bpf_func_id`: 21 is `bpf_skb_set_tunnel_key`), a kfunc
//! by its BTF id. For messages: read when asked, not kept.

use libbpf_rs::btf::types::{Enum, Func};
use libbpf_rs::btf::{Btf, TypeId};

/// Helper `id`'s name (`bpf_skb_change_proto`), if the kernel's BTF has it.
pub fn helper_name(id: i32) -> Option<String> {
    let btf = Btf::from_vmlinux().ok()?;
    let ids: Enum<'_> = btf.type_by_name("bpf_func_id")?;
    let member = ids.iter().find(|m| m.value == i64::from(id))?;
    let name = member.name?.to_string_lossy().into_owned();
    // BPF_FUNC_skb_change_proto -> bpf_skb_change_proto
    Some(format!("bpf_{}", name.strip_prefix("BPF_FUNC_")?))
}

/// The name of the kfunc whose BTF id (in the kernel's own BTF) is `id`.
pub fn kfunc_name(id: i32) -> Option<String> {
    let btf = Btf::from_vmlinux().ok()?;
    let f: Func<'_> = btf.type_by_id(TypeId::from(u32::try_from(id).ok()?))?;
    Some(f.name()?.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_and_kfuncs_are_named_by_the_kernels_btf() {
        // Against the UAPI header's numbers, as libbpf-sys has them.
        assert_eq!(
            helper_name(libbpf_rs::libbpf_sys::BPF_FUNC_map_lookup_elem as i32).as_deref(),
            Some("bpf_map_lookup_elem")
        );
        assert_eq!(
            helper_name(libbpf_rs::libbpf_sys::BPF_FUNC_skb_change_proto as i32).as_deref(),
            Some("bpf_skb_change_proto")
        );
        assert_eq!(helper_name(100_000), None);
        let btf = Btf::from_vmlinux().unwrap();
        let f: Func<'_> = btf.type_by_name("bpf_dynptr_from_skb").expect("a kfunc of 6.18");
        assert_eq!(kfunc_name(u32::from(f.type_id()) as i32).as_deref(), Some("bpf_dynptr_from_skb"));
    }
}

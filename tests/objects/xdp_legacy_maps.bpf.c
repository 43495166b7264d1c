// SPDX-License-Identifier: GPL-2.0
/* Maps defined the legacy way, as bpf_map_def values in a 'maps' section:
 * aya-ebpf's #[map] and old samples declare them so. libbpf 1.x refuses
 * such an object; bpfbench reads the definitions as BTF-defined maps, in
 * memory. One definition as libbpf 0.x's (five fields), one as Aya's
 * (seven: its id and pinning too). The program returns the verdict the
 * first map holds (XDP_PASS while it holds none) and counts packets by
 * length in the second. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct legacy_map_def {
	unsigned int type, key_size, value_size, max_entries, map_flags;
};

struct aya_map_def {
	unsigned int type, key_size, value_size, max_entries, map_flags, id, pinning;
};

struct legacy_map_def verdicts SEC("maps") = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = 4,
	.value_size = 4,
	.max_entries = 1,
};

struct aya_map_def lengths SEC("maps") = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = 4,
	.value_size = 8,
	.max_entries = 64,
};

SEC("xdp")
int legacy_verdict(struct xdp_md *ctx)
{
	__u32 zero = 0, len = ctx->data_end - ctx->data;
	__u64 one = 1, *count = bpf_map_lookup_elem(&lengths, &len);
	__u32 *verdict = bpf_map_lookup_elem(&verdicts, &zero);

	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&lengths, &len, &one, BPF_ANY);
	return verdict && *verdict ? *verdict : XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";

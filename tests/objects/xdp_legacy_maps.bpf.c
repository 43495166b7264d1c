// SPDX-License-Identifier: GPL-2.0
/* A map defined the legacy way, in a 'maps' section (struct bpf_map_def),
 * as aya-ebpf's #[map] and old samples do: libbpf 1.x refuses to open it,
 * and bpfbench must say libbpf's reason. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct legacy_map_def {
	unsigned int type, key_size, value_size, max_entries, map_flags;
};

struct legacy_map_def counts SEC("maps") = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = 4,
	.value_size = 8,
	.max_entries = 1,
};

SEC("xdp")
int legacy_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a 500-byte value built on the stack leaves no room for a
 * caller's frame, so it loads alone but not spliced into bpfbench's driver. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct big {
	unsigned char bytes[500];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct big);
} last SEC(".maps");

SEC("xdp")
int xdp_bigstack(struct xdp_md *ctx)
{
	struct big b;
	__u32 zero = 0;

	__builtin_memset(&b, 0, sizeof(b));
	b.bytes[0] = ctx->ingress_ifindex;
	bpf_map_update_elem(&last, &zero, &b, BPF_ANY);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

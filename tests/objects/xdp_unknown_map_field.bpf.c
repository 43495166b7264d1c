// SPDX-License-Identifier: GPL-2.0
/* A BTF-defined map with a field libbpf does not know: libbpf refuses to
 * open the object, and bpfbench must say libbpf's reason. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(no_such_field, 1);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("xdp")
int unknown_field_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";

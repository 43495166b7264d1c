// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: an XDP program in a section named for its own loader (as
 * Cilium's xdp/entry), which libbpf cannot type: --program-type xdp. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp/entry")
int own_section(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

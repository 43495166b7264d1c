// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A cgroup connect4 hook counting IPv4 connects to loopback, and a
 * sockops program counting the callbacks of the connections (both
 * allow everything). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

__u64 loopback_connects;
__u64 sockops_calls[16];

SEC("cgroup/connect4")
int count_connect4(struct bpf_sock_addr *ctx)
{
	if ((bpf_ntohl(ctx->user_ip4) >> 24) == 127)
		__sync_fetch_and_add(&loopback_connects, 1);
	return 1;
}

SEC("sockops")
int count_sockops(struct bpf_sock_ops *ctx)
{
	__u32 op = ctx->op;

	if (op < 16)
		__sync_fetch_and_add(&sockops_calls[op], 1);
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

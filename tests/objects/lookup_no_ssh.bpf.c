// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a socket lookup program that refuses TCP connections to
 * local port 22 (IPv4 and IPv6) and lets the kernel's lookup go on for the
 * rest. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

SEC("sk_lookup")
int lookup_no_ssh(struct bpf_sk_lookup *ctx)
{
	if (ctx->protocol == IPPROTO_TCP && ctx->local_port == 22)
		return SK_DROP;
	return SK_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

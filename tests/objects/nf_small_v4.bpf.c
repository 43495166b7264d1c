// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a netfilter hook program that accepts IPv4 packets of up to
 * 100 bytes and drops the rest (longer ones, IPv6). The kernel's structs
 * are declared as far as used and relocated (CO-RE) against its BTF. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NF_DROP 0
#define NF_ACCEPT 1
#define NFPROTO_IPV4 2

struct nf_hook_state {
	__u8 hook;
	__u8 pf;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
} __attribute__((preserve_access_index));

struct bpf_nf_ctx {
	const struct nf_hook_state *state;
	struct sk_buff *skb;
} __attribute__((preserve_access_index));

SEC("netfilter")
int nf_small_v4(struct bpf_nf_ctx *ctx)
{
	if (ctx->state->pf != NFPROTO_IPV4)
		return NF_DROP;
	return ctx->skb->len > 100 ? NF_DROP : NF_ACCEPT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a chain of tc programs, as tc datapaths are built (Cilium's
 * are chains of tail calls):
 * - tc_chain_entry -> tc_chain_mark: only the chain marks the packet
 *   (skb->mark = 1) and drops it, or answers TC_ACT_PIPE for a packet that
 *   came marked 9 (so each pass must get the mark back); tc_chain_entry
 *   alone, its tail call failing, passes;
 * - tc_chain_count -> tc_chain_mark: the first adds 1 to the first payload
 *   byte of an IPv4/UDP packet first. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "payload_count.h"


int tc_chain_mark(struct __sk_buff *skb);

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__uint(key_size, sizeof(__u32));
	__array(values, int (void *));
} tc_chain_slots SEC(".maps") = {
	.values = { [1] = (void *)&tc_chain_mark },
};

SEC("tc")
int tc_chain_mark(struct __sk_buff *skb)
{
	int verdict = skb->mark == 9 ? TC_ACT_PIPE : TC_ACT_SHOT;

	skb->mark = 1;
	return verdict;
}

SEC("tc")
int tc_chain_entry(struct __sk_buff *skb)
{
	bpf_tail_call(skb, &tc_chain_slots, 1);
	return TC_ACT_OK;
}

SEC("tc")
int tc_chain_count(struct __sk_buff *skb)
{
	if (!count_in_payload((void *)(long)skb->data, (void *)(long)skb->data_end))
		return TC_ACT_OK;
	bpf_tail_call(skb, &tc_chain_slots, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

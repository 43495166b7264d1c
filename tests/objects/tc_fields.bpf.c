// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Writes every __sk_buff field the timing driver puts back (mark, priority,
 * tc_index, tc_classid), each from its own value: a run that does not start
 * from the case's fields (all 0) returns TC_ACT_SHOT instead of TC_ACT_OK. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_fields(struct __sk_buff *skb)
{
	int fresh = !skb->mark && !skb->priority && !skb->tc_index && !skb->tc_classid;

	skb->mark += 1;
	skb->priority += 1;
	skb->tc_index += 1;
	skb->tc_classid += 1;
	return fresh ? TC_ACT_OK : TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

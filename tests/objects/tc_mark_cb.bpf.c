// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a tc program whose verdict depends on the context a test
 * sets: it drops packets marked 7 whose cb[0] is 42, passes the rest. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_mark_cb(struct __sk_buff *skb)
{
	if (skb->mark == 7 && skb->cb[0] == 42)
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object (tc): writes the __sk_buff fields a tc program may read into
 * the packet after its Ethernet header, so that a run's output packet
 * shows the context it saw (the kernel's and the userspace runtime's must
 * agree byte for byte). Needs 14 + 4 * ECHO_FIELDS bytes. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define ECHO_FIELDS 25

SEC("tc")
int tc_skb_echo(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 *out = data + ETH_HLEN;

	if ((void *)(out + ECHO_FIELDS) > data_end)
		return TC_ACT_SHOT;
	out[0] = skb->len;
	out[1] = skb->pkt_type;
	out[2] = skb->mark;
	out[3] = skb->queue_mapping;
	out[4] = skb->protocol;
	out[5] = skb->vlan_present;
	out[6] = skb->vlan_tci;
	out[7] = skb->vlan_proto;
	out[8] = skb->priority;
	out[9] = skb->ingress_ifindex;
	out[10] = skb->ifindex;
	out[11] = skb->tc_index;
	out[12] = skb->cb[0];
	out[13] = skb->cb[1];
	out[14] = skb->cb[4];
	out[15] = skb->hash;
	out[16] = skb->tc_classid;
	out[17] = skb->napi_id;
	out[18] = skb->wire_len;
	out[19] = skb->gso_segs;
	out[20] = skb->gso_size;
	out[21] = skb->tstamp;
	out[22] = skb->tstamp >> 32;
	out[23] = skb->tstamp_type;
	out[24] = skb->hwtstamp;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

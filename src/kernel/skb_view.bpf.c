// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a tc program sees in its __sk_buff for one test run: every field a
 * tc program may read, copied into a map value laid out as __sk_buff. The
 * kernel derives them from the packet and the test run's context (the
 * protocol from the Ethernet header, the packet type from the destination
 * address, the fields the context sets), and differently across versions;
 * the userspace runtime takes them from here instead of guessing. The
 * pointer fields (data, data_end, data_meta, flow_keys, sk) are the
 * runtime's own and stay zero; the socket fields (family .. local_port)
 * are not readable from tc.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct __sk_buff);
} bench_skb_view SEC(".maps");

SEC("tc")
int bench_skb_view_tc(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct __sk_buff *out = bpf_map_lookup_elem(&bench_skb_view, &zero);

	if (!out)
		return 0;
	out->len = skb->len;
	out->pkt_type = skb->pkt_type;
	out->mark = skb->mark;
	out->queue_mapping = skb->queue_mapping;
	out->protocol = skb->protocol;
	out->vlan_present = skb->vlan_present;
	out->vlan_tci = skb->vlan_tci;
	out->vlan_proto = skb->vlan_proto;
	out->priority = skb->priority;
	out->ingress_ifindex = skb->ingress_ifindex;
	out->ifindex = skb->ifindex;
	out->tc_index = skb->tc_index;
	out->cb[0] = skb->cb[0];
	out->cb[1] = skb->cb[1];
	out->cb[2] = skb->cb[2];
	out->cb[3] = skb->cb[3];
	out->cb[4] = skb->cb[4];
	out->hash = skb->hash;
	out->tc_classid = skb->tc_classid;
	out->napi_id = skb->napi_id;
	out->tstamp = skb->tstamp;
	out->wire_len = skb->wire_len;
	out->gso_segs = skb->gso_segs;
	out->gso_size = skb->gso_size;
	out->tstamp_type = skb->tstamp_type;
	out->hwtstamp = skb->hwtstamp;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a flow dissector for IPv4 TCP and UDP: fills the flow keys
 * (addresses, protocol, ports, offsets) and returns BPF_OK; anything else
 * is BPF_DROP. A fragment is marked so (is_frag, is_first_frag); its ports
 * are read only from a first fragment and only when the caller's flags
 * ask for it (BPF_FLOW_DISSECTOR_F_PARSE_1ST_FRAG), as the kernel's own
 * dissector and the selftests' bpf_flow.c do. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* The header of `size` bytes at `off`, or NULL. Direct access only: a test
 * run has no skb for bpf_skb_load_bytes() to read (the selftests' bpf_flow.c
 * falls back to it for packets in pages). */
static __always_inline void *header_at(struct __sk_buff *skb, __u16 off, __u16 size)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	void *hdr;

	/* Bounds the variable offset for the verifier. */
	if (off > 0xffff - size)
		return 0;
	hdr = data + off;
	return hdr + size <= data_end ? hdr : 0;
}

SEC("flow_dissector")
int flow_ipv4(struct __sk_buff *skb)
{
	struct bpf_flow_keys *keys = skb->flow_keys;
	struct iphdr *ip;
	__u16 *ports;

	if (keys->n_proto != bpf_htons(ETH_P_IP))
		return BPF_DROP;
	ip = header_at(skb, keys->nhoff, sizeof(*ip));
	if (!ip)
		return BPF_DROP;
	keys->addr_proto = ETH_P_IP;
	keys->ipv4_src = ip->saddr;
	keys->ipv4_dst = ip->daddr;
	keys->ip_proto = ip->protocol;
	keys->thoff = keys->nhoff + ip->ihl * 4;
	if (ip->frag_off & bpf_htons(0x3fff)) {
		keys->is_frag = 1;
		if (ip->frag_off & bpf_htons(0x1fff))
			return BPF_OK;
		keys->is_first_frag = 1;
		if (!(keys->flags & BPF_FLOW_DISSECTOR_F_PARSE_1ST_FRAG))
			return BPF_OK;
	}
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return BPF_OK;
	/* TCP and UDP both start with the two ports. */
	ports = header_at(skb, keys->thoff, 4);
	if (!ports)
		return BPF_DROP;
	keys->sport = ports[0];
	keys->dport = ports[1];
	return BPF_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

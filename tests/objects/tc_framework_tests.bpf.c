// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A test object in Cilium's shape (test_framework.h) for `bpfbench run
 * --tests cilium`: a datapath entry reached through entry_call_map, and
 * four tests, declared out of order (the runner replays them by name):
 *
 * - a_request: a new flow's first packet passes and creates its entry;
 *   the flow's later packets are dropped (a limit of one), so its steady
 *   state takes another path: state-dependent.
 * - b_reply: the reply of a_request's flow passes with its TTL lowered;
 *   it needs the entry a_request created.
 * - c_wrong_verdict: its check expects a redirect the entry never gives,
 *   and fails with a message.
 * - d_unit: a check alone, no datapath: checked, not timed.
 * - e_reply_again: b_reply again, its pktgen calling b_reply's (a function
 *   of another program's section, as two of Cilium's files do), which
 *   libbpf refuses until bpfbench copies it into .text in memory.
 *
 * Each setup hands the entry a mark and cb[0], which the entry checks and
 * clears, as Cilium's programs pass state to their tail calls.
 *
 * FW_EXTRA_ALU=N adds N multiplications of work to the entry, the same
 * outputs (tc_framework_tests_slow.bpf.c: a second build of the suite);
 * FW_REPLY_TTL_STEP=2 lowers a reply's TTL by two, which b_reply's and
 * e_reply_again's CHECK refuse (tc_framework_tests_broken.bpf.c: a build
 * that breaks two tests).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "extra_alu.h"
#include "test_framework.h"

#ifndef FW_EXTRA_ALU
#define FW_EXTRA_ALU 0
#endif
#ifndef FW_REPLY_TTL_STEP
#define FW_REPLY_TTL_STEP 1
#endif

#define SETUP_MARK 0x77
#define SETUP_CB 0x42

struct flow {
	__u32 packets;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct flow);
} flows SEC(".maps");

SEC("tc/entry")
int fw_entry(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct flow *f, first = { .packets = 1 };

	if ((void *)(ip + 1) > end)
		return TC_ACT_SHOT;
	if (FW_EXTRA_ALU)
		EXTRA_ALU(FW_EXTRA_ALU, skb->len);
	if (skb->mark != SETUP_MARK || skb->cb[0] != SETUP_CB)
		return TC_ACT_SHOT;
	skb->mark = 0;
	skb->cb[0] = 0;
	/* The reply of a known flow. */
	if (bpf_map_lookup_elem(&flows, &ip->daddr)) {
		ip->ttl -= FW_REPLY_TTL_STEP;
		return TC_ACT_OK;
	}
	f = bpf_map_lookup_elem(&flows, &ip->saddr);
	if (f) {
		f->packets++;
		return TC_ACT_SHOT;
	}
	bpf_map_update_elem(&flows, &ip->saddr, &first, BPF_NOEXIST);
	return TC_ACT_OK;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__array(values, int(struct __sk_buff *));
} entry_call_map SEC(".maps") = {
	.values = { [0] = (void *)&fw_entry },
};

/* An IPv4/UDP packet from `src` to `dst` (the last bytes of addresses 10.0.0.x). */
static __always_inline int build(struct __sk_buff *skb, __u8 src, __u8 dst)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	int len = sizeof(*eth) + sizeof(*ip) + sizeof(*udp) + 18;

	if ((void *)(udp + 1) > end)
		return TEST_ERROR;
	__builtin_memset(eth, 0, sizeof(*eth));
	eth->h_proto = bpf_htons(ETH_P_IP);
	__builtin_memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = bpf_htons(len - sizeof(*eth));
	ip->saddr = bpf_htonl(0x0a000000 | src);
	ip->daddr = bpf_htonl(0x0a000000 | dst);
	udp->source = bpf_htons(1000);
	udp->dest = bpf_htons(53);
	udp->len = bpf_htons(len - sizeof(*eth) - sizeof(*ip));
	udp->check = 0;
	if (bpf_skb_change_tail(skb, len, 0))
		return TEST_ERROR;
	return TEST_PASS;
}

/* The setup of every test: the mark and cb[0] the entry expects, then the jump. */
static __always_inline int enter(struct __sk_buff *skb)
{
	skb->mark = SETUP_MARK;
	skb->cb[0] = SETUP_CB;
	bpf_tail_call(skb, &entry_call_map, 0);
	return TEST_ERROR;
}

/* The entry's verdict (in front of the packet) and its IPv4 header. */
static __always_inline struct iphdr *verdict_and_ip(struct __sk_buff *skb, __u32 *verdict)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data + 4 + sizeof(struct ethhdr);

	if ((void *)(ip + 1) > end)
		return 0;
	*verdict = *(__u32 *)data;
	return ip;
}

CHECK("tc", "d_unit")
int d_unit_check(struct __sk_buff *skb)
{
	TEST_REPORT("d_unit", TEST_PASS, "one plus one is %u", 2, 0);
	return TEST_PASS;
}

PKTGEN("tc", "c_wrong_verdict")
int c_wrong_verdict_pktgen(struct __sk_buff *skb)
{
	return build(skb, 3, 2);
}

SETUP("tc", "c_wrong_verdict")
int c_wrong_verdict_setup(struct __sk_buff *skb)
{
	return enter(skb);
}

CHECK("tc", "c_wrong_verdict")
int c_wrong_verdict_check(struct __sk_buff *skb)
{
	__u32 verdict = 0;

	if (!verdict_and_ip(skb, &verdict))
		return TEST_ERROR;
	if (verdict != TC_ACT_REDIRECT) {
		TEST_REPORT("verdict", TEST_FAIL, "expected verdict %u, got %u", TC_ACT_REDIRECT, verdict);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

/* noinline: called from e_reply_again's, as clang leaves Cilium's larger ones. */
PKTGEN("tc", "b_reply")
__attribute__((noinline)) int b_reply_pktgen(struct __sk_buff *skb)
{
	return build(skb, 2, 1);
}

SETUP("tc", "b_reply")
int b_reply_setup(struct __sk_buff *skb)
{
	return enter(skb);
}

CHECK("tc", "b_reply")
__attribute__((noinline)) int b_reply_check(struct __sk_buff *skb)
{
	__u32 verdict = 0;
	struct iphdr *ip = verdict_and_ip(skb, &verdict);

	if (!ip)
		return TEST_ERROR;
	if (verdict != TC_ACT_OK || ip->ttl != 63) {
		TEST_REPORT("reply", TEST_FAIL, "expected verdict 0 and TTL 63, got %u and %u", verdict, ip->ttl);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

PKTGEN("tc", "a_request")
int a_request_pktgen(struct __sk_buff *skb)
{
	return build(skb, 1, 2);
}

SETUP("tc", "a_request")
int a_request_setup(struct __sk_buff *skb)
{
	return enter(skb);
}

CHECK("tc", "a_request")
int a_request_check(struct __sk_buff *skb)
{
	__u32 verdict = 0, src = bpf_htonl(0x0a000001);
	struct flow *f = bpf_map_lookup_elem(&flows, &src);

	if (!verdict_and_ip(skb, &verdict))
		return TEST_ERROR;
	if (verdict != TC_ACT_OK || !f || f->packets != 1) {
		TEST_REPORT("request", TEST_FAIL, "expected verdict 0 and one packet, got %u and %u", verdict,
			    f ? f->packets : 0);
		return TEST_FAIL;
	}
	return TEST_PASS;
}

PKTGEN("tc", "e_reply_again")
int e_reply_again_pktgen(struct __sk_buff *skb)
{
	return b_reply_pktgen(skb);
}

SETUP("tc", "e_reply_again")
int e_reply_again_setup(struct __sk_buff *skb)
{
	return enter(skb);
}

CHECK("tc", "e_reply_again")
int e_reply_again_check(struct __sk_buff *skb)
{
	return b_reply_check(skb);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

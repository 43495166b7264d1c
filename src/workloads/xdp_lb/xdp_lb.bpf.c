// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An XDP L4 load balancer modelled on Katran's datapath:
 *   L3/L4 parse -> VIP lookup (addr, port, proto; then port 0)
 *   -> per-CPU LRU connection table, consistent-hash (Maglev) fallback
 *   -> real selection -> per-VIP / per-real counters
 *   -> IPIP, IP6IP6 or IPv4-in-IPv6 encapsulation -> XDP_TX
 *
 * Two programs: xdp_lb runs the datapath under BENCH_TIMED_LOOP; xdp_lb_overhead
 * runs the same loop and reset block around an empty body, the harness's own cost.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "bench_timing.bpf.h"
#include "jhash.bpf.h"
#include "lb_common.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define IP_MF		0x2000
#define IP_OFFSET	0x1FFF
#define NEXTHDR_FRAGMENT 44
#define LB_HASH_SEED	LB_RING_SIZE
#define LB_HASH_SEED_V6	LB_MAX_VIPS

/* The arrays indexed by a __u32, as libbpf reads a BTF-defined map. */
#define LB_ARRAY(TYPE, ENTRIES, VALUE)							\
	struct {									\
		__uint(type, TYPE);							\
		__uint(max_entries, ENTRIES);						\
		__type(key, __u32);							\
		__type(value, VALUE);							\
	}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LB_MAX_VIPS);
	__type(key, struct lb_vip_key);
	__type(value, struct lb_vip_meta);
} vip_map SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_ARRAY, LB_MAX_REALS, struct lb_real) reals SEC(".maps");

/* One Maglev ring of LB_RING_SIZE real positions per VIP, built on the host.
 * Mmapable so that the host writes the rings with one copy: element by
 * element they took 150 ms per set-up, and a paired A/B sets the load
 * balancer up afresh every round. Lookups compile to the same code. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LB_MAX_VIPS * LB_RING_SIZE);
	__type(key, __u32);
	__type(value, __u32);
} ch_rings SEC(".maps");

struct lb_lru_inner {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LB_LRU_SIZE);
	__type(key, struct lb_flow_key);
	__type(value, struct lb_real_pos_lru);
};

/* Per-CPU connection tables, as in Katran: the host creates one LRU per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, LB_MAX_CPUS);
	__type(key, __u32);
	__array(values, struct lb_lru_inner);
} lru_mapping SEC(".maps");

/* Used when a CPU has no table of its own. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, LB_LRU_SIZE);
	__type(key, struct lb_flow_key);
	__type(value, struct lb_real_pos_lru);
} fallback_lru SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_ARRAY, 1, struct lb_ctl) ctl_array SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, LB_MAX_VIPS, struct lb_stat) vip_stats SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, LB_MAX_REALS, struct lb_stat) real_stats SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_PERCPU_ARRAY, LB_CNT_MAX, __u64) lb_counters SEC(".maps");

LB_ARRAY(BPF_MAP_TYPE_ARRAY, 1, struct lb_flowgen) flowgen SEC(".maps");

/* The flow generator's precomputed words (flow spaces of up to LB_FLOW_TABLE_SIZE). */
LB_ARRAY(BPF_MAP_TYPE_ARRAY, 1, struct lb_flow_table) flow_words SEC(".maps");

/* Never read: puts the shared enums into BTF (see lb_common.h). */
const volatile struct lb_host_enums lb_host_enums;

struct lb_packet {
	struct lb_flow_key flow;
	__u16 pkt_bytes;	/* L3 length: what the per-VIP/real byte counters count */
	__u8 tos;
	__u8 is_ipv6;
	__u8 tcp_flags;
};

#define LB_TCP_SYN 0x02
#define LB_TCP_RST 0x04

static __always_inline void lb_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&lb_counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline int lb_verdict(int action)
{
	switch (action) {
	case XDP_TX:
		lb_count(LB_CNT_XDP_TX);
		break;
	case XDP_PASS:
		lb_count(LB_CNT_XDP_PASS);
		break;
	case XDP_DROP:
		lb_count(LB_CNT_XDP_DROP);
		break;
	default:
		lb_count(LB_CNT_XDP_ABORTED);
		action = XDP_ABORTED;
	}
	return action;
}

static __always_inline void lb_stat_add(void *map, __u32 idx, __u16 bytes)
{
	struct lb_stat *s = bpf_map_lookup_elem(map, &idx);

	if (s) {
		s->packets += 1;
		s->bytes += bytes;
	}
}

/* TCP's and UDP's ports stand first in their headers: HDR's ports into the
 * flow, or drop (-1) where the header is cut short. A macro, not a function,
 * so that each protocol's code stays as it compiles on its own. */
#define LB_READ_PORTS(HDR, l4, data_end, p)			\
	({							\
		struct HDR *h_ = (l4);				\
								\
		if ((void *)(h_ + 1) > (data_end))		\
			return -1;				\
		(p)->flow.port16[0] = h_->source;		\
		(p)->flow.port16[1] = h_->dest;			\
	})

/* Returns < 0 for "drop", 0 for "parsed", 1 for "not ours: pass". */
static __always_inline int lb_parse_l4(void *l4, void *data_end, struct lb_packet *p)
{
	if (p->flow.proto == IPPROTO_TCP) {
		LB_READ_PORTS(tcphdr, l4, data_end, p);
		p->tcp_flags = ((__u8 *)l4)[13];
		return 0;
	}
	if (p->flow.proto == IPPROTO_UDP) {
		LB_READ_PORTS(udphdr, l4, data_end, p);
		return 0;
	}
	return 1;
}

/* lb_parse_l4's answer as lb_parse gives it: -1 to continue, else a verdict. */
static __always_inline int lb_l4_verdict(int parsed)
{
	switch (parsed) {
	case 0:
		return -1;
	case 1:
		return XDP_PASS;
	default:
		return XDP_DROP;
	}
}

/* Parses Ethernet, IP and L4. Returns an XDP verdict, or -1 to continue. */
static __always_inline int lb_parse(void *data, void *data_end, struct lb_packet *p)
{
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return XDP_DROP;
		if (ip->ihl != 5)	/* IPv4 options: Katran drops them */
			return XDP_DROP;
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return XDP_DROP;
		if (ip->protocol == IPPROTO_ICMP)
			return XDP_PASS;
		p->flow.proto = ip->protocol;
		p->flow.src = ip->saddr;
		p->flow.dst = ip->daddr;
		p->pkt_bytes = bpf_ntohs(ip->tot_len);
		p->tos = ip->tos;
		p->is_ipv6 = 0;
		return lb_l4_verdict(lb_parse_l4(ip + 1, data_end, p));
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end)
			return XDP_DROP;
		if (ip6->nexthdr == NEXTHDR_FRAGMENT)
			return XDP_DROP;
		if (ip6->nexthdr == IPPROTO_ICMPV6)
			return XDP_PASS;
		p->flow.proto = ip6->nexthdr;
		__builtin_memcpy(p->flow.srcv6, &ip6->saddr, 16);
		__builtin_memcpy(p->flow.dstv6, &ip6->daddr, 16);
		p->pkt_bytes = bpf_ntohs(ip6->payload_len) + sizeof(struct ipv6hdr);
		p->tos = (ip6->priority << 4) | (ip6->flow_lbl[0] >> 4);
		p->is_ipv6 = 1;
		return lb_l4_verdict(lb_parse_l4(ip6 + 1, data_end, p));
	}
#ifdef LB_EXTRA_EXIT_INSN
	{
		/* One more ALU instruction on the non-IP exit, on a value the
		 * packet gives (ab tests: can a one-instruction change be seen?). */
		__u32 x = eth->h_proto;

		asm volatile("%[x] += 1" : [x] "+r"(x));
		asm volatile("" : : "r"(x));
	}
#endif
	return XDP_PASS;	/* not IP: the kernel stack's business */
}

static __always_inline struct lb_vip_meta *lb_find_vip(struct lb_packet *p)
{
	struct lb_vip_key key = {};
	struct lb_vip_meta *vip;

	if (p->is_ipv6)
		__builtin_memcpy(key.addr, p->flow.dstv6, 16);
	else
		key.addr[0] = p->flow.dst;
	key.port = p->flow.port16[1];
	key.proto = p->flow.proto;
	vip = bpf_map_lookup_elem(&vip_map, &key);
	if (vip)
		return vip;
	key.port = 0;
	return bpf_map_lookup_elem(&vip_map, &key);
}

static __always_inline __u32 lb_flow_hash(struct lb_packet *p)
{
	if (p->is_ipv6)
		return jhash_2words(jhash(p->flow.srcv6, 16, LB_HASH_SEED_V6), p->flow.ports,
				    LB_HASH_SEED);
	return jhash_2words(p->flow.src, p->flow.ports, LB_HASH_SEED);
}

static __always_inline void *lb_lru_for_cpu(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *lru = bpf_map_lookup_elem(&lru_mapping, &cpu);

	return lru ? lru : (void *)&fallback_lru;
}

/* Connection-table lookup. Returns the real position, or -1 on a miss. */
static __always_inline int lb_lru_lookup(void *lru, struct lb_packet *p, struct lb_ctl *ctl)
{
	struct lb_real_pos_lru *e = bpf_map_lookup_elem(lru, &p->flow);

	if (!e)
		return -1;
	if (p->flow.proto == IPPROTO_UDP) {
		__u64 now = bpf_ktime_get_ns();

		if (now - e->atime > ctl->udp_lru_timeout_ns) {
			lb_count(LB_CNT_LRU_UDP_EXPIRED);
			return -1;
		}
		e->atime = now;
	}
	lb_count(LB_CNT_LRU_HIT);
	return e->pos;
}

/* Consistent-hash pick; remembers the choice in the LRU unless told not to. */
static __always_inline int lb_ch_pick(void *lru, struct lb_packet *p, struct lb_vip_meta *vip)
{
	__u32 key = vip->vip_num * LB_RING_SIZE + lb_flow_hash(p) % LB_RING_SIZE;
	__u32 *pos = bpf_map_lookup_elem(&ch_rings, &key);

	lb_count(LB_CNT_CH_LOOKUP);
	if (!pos)
		return -1;
	/* RST closes the connection: caching it would only evict live flows. */
	if (lru && !(p->tcp_flags & LB_TCP_RST)) {
		struct lb_real_pos_lru e = { .pos = *pos };

		if (p->flow.proto == IPPROTO_UDP)
			e.atime = bpf_ktime_get_ns();
		bpf_map_update_elem(lru, &p->flow, &e, BPF_ANY);
		lb_count(LB_CNT_LRU_INSERT);
	}
	return *pos;
}

static __always_inline __u16 lb_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __always_inline void lb_ipv4_csum(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < (int)(sizeof(*ip) / 2); i++)
		sum += w[i];
	ip->check = lb_csum_fold(sum);
}

/* Rewrites Ethernet: to the next hop, from the MAC the packet was sent to. */
static __always_inline void lb_write_eth(struct ethhdr *new_eth, struct ethhdr *old_eth,
					 struct lb_ctl *ctl, __u16 proto)
{
	__builtin_memcpy(new_eth->h_source, old_eth->h_dest, ETH_ALEN);
	__builtin_memcpy(new_eth->h_dest, ctl->default_mac, ETH_ALEN);
	new_eth->h_proto = bpf_htons(proto);
}

/* Makes room for an outer header of hdr_len bytes between Ethernet and the
 * packet's own header, and writes the new Ethernet header; returns the outer
 * header, or NULL where the head cannot move or the packet is too short. */
static __always_inline void *lb_push_outer(struct xdp_md *ctx, struct lb_ctl *ctl, __u32 hdr_len, __u16 proto)
{
	void *data, *data_end, *outer;
	struct ethhdr *new_eth, *old_eth;

	if (bpf_xdp_adjust_head(ctx, 0 - (int)hdr_len))
		return NULL;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	new_eth = data;
	old_eth = data + hdr_len;
	outer = data + sizeof(struct ethhdr);
	if ((void *)(old_eth + 1) > data_end || outer + hdr_len > data_end)
		return NULL;
	lb_write_eth(new_eth, old_eth, ctl, proto);
	return outer;
}

/* The outer IPv4 header of IP-in-IP to an IPv4 real. */
static __always_inline void lb_fill_ipip(struct iphdr *outer, struct lb_packet *p, struct lb_real *real)
{
	__u32 suffix;

	/* 172.16.X.Y, X.Y = the client address's last two bytes ^ its source port. */
	suffix = ((__u32)p->flow.port16[0] << 16) ^ p->flow.src;
	outer->version = 4;
	outer->ihl = 5;
	outer->tos = p->tos;
	outer->tot_len = bpf_htons(p->pkt_bytes + sizeof(struct iphdr));
	outer->id = 0;
	outer->frag_off = 0;
	outer->ttl = LB_ENCAP_TTL;
	outer->protocol = IPPROTO_IPIP;
	outer->saddr = (suffix & 0xffff0000) | LB_IPIP_V4_PREFIX_BE;
	outer->daddr = real->addr[0];
	lb_ipv4_csum(outer);
}

/* The outer IPv6 header of IPv6-in-IPv6 or IPv4-in-IPv6 to an IPv6 real. */
static __always_inline void lb_fill_ipv6(struct ipv6hdr *outer, struct lb_packet *p, struct lb_real *real)
{
	__be32 client_low;

	outer->version = 6;
	outer->priority = p->tos >> 4;
	outer->flow_lbl[0] = (p->tos & 0x0f) << 4;
	outer->flow_lbl[1] = 0;
	outer->flow_lbl[2] = 0;
	outer->payload_len = bpf_htons(p->pkt_bytes);
	outer->nexthdr = p->is_ipv6 ? IPPROTO_IPV6 : IPPROTO_IPIP;
	outer->hop_limit = LB_ENCAP_TTL;
	/* 0100::/64; low word = the client's last address word with the port xored in. */
	client_low = p->is_ipv6 ? p->flow.srcv6[3] : p->flow.src;
	outer->saddr.in6_u.u6_addr32[0] = bpf_htonl(0x01000000);
	outer->saddr.in6_u.u6_addr32[1] = 0;
	outer->saddr.in6_u.u6_addr32[2] = 0;
	outer->saddr.in6_u.u6_addr32[3] = client_low ^ (__u32)p->flow.port16[0];
	__builtin_memcpy(&outer->daddr, real->addr, 16);
}

#ifdef LB_EXTRA_WORK
/* A deliberate slowdown for testing regression detection: LB_EXTRA_WORK rounds of hashing. */
static __always_inline __u32 lb_extra_work(struct lb_packet *p)
{
	__u32 h = 0;
	int i;

	/* Not unrolled: large N would otherwise spill past the stack limit. */
#pragma clang loop unroll(disable)
	for (i = 0; i < LB_EXTRA_WORK; i++)
		h = jhash_2words(h, p->flow.ports, i);
	return h;
}
#endif

static __always_inline int lb_process(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct lb_packet p = {};
	struct lb_vip_meta *vip;
	struct lb_real *real;
	struct iphdr *outer4;
	struct lb_ctl *ctl;
	void *lru = NULL;
	__u32 zero = 0, pos;
	int verdict, got = -1;

	verdict = lb_parse(data, data_end, &p);
	if (verdict >= 0)
		return verdict;

	vip = lb_find_vip(&p);
	if (!vip)
		return XDP_PASS;
	ctl = bpf_map_lookup_elem(&ctl_array, &zero);
	if (!ctl)
		return XDP_ABORTED;
#ifdef LB_EXTRA_INSN
	/* Exactly one more instruction on every path past the control map
	 * (tests: an instruction count must move by exactly 1). */
	asm volatile("r0 = r0");
#endif
#ifdef LB_EXTRA_WORK
	{
		/* An empty asm that consumes the hash keeps clang from deleting the
		 * work (a result compared and then unused is dead code). */
		__u32 extra = lb_extra_work(&p);

		asm volatile("" : : "r"(extra));
	}
#endif

	if (!(vip->flags & LB_VIP_LRU_BYPASS)) {
		lru = lb_lru_for_cpu();
		if (p.tcp_flags & LB_TCP_SYN && p.flow.proto == IPPROTO_TCP) {
			lb_count(LB_CNT_LRU_MISS_TCP_SYN);
		} else {
			got = lb_lru_lookup(lru, &p, ctl);
			if (got < 0)
				lb_count(p.flow.proto == IPPROTO_UDP ? LB_CNT_LRU_MISS_UDP
								     : LB_CNT_LRU_MISS_TCP_NONSYN);
		}
	}
	if (got < 0)
		got = lb_ch_pick(lru, &p, vip);
	if (got < 0)
		return XDP_DROP;
	pos = got;
	real = bpf_map_lookup_elem(&reals, &pos);
	if (!real)
		return XDP_DROP;

	lb_stat_add(&vip_stats, vip->vip_num, p.pkt_bytes);
	lb_stat_add(&real_stats, pos, p.pkt_bytes);

	if (real->flags & LB_REAL_IPV6) {
		struct ipv6hdr *outer6 = lb_push_outer(ctx, ctl, sizeof(*outer6), ETH_P_IPV6);

		if (!outer6)
			return XDP_DROP;
		lb_fill_ipv6(outer6, &p, real);
		return XDP_TX;
	}
	if (p.is_ipv6)
		return XDP_DROP;	/* IPv6 client cannot go to an IPv4 real */
	outer4 = lb_push_outer(ctx, ctl, sizeof(*outer4), ETH_P_IP);
	if (!outer4)
		return XDP_DROP;
	lb_fill_ipip(outer4, &p, real);
	return XDP_TX;
}

/*
 * The timed body, as a global function the verifier checks once on its own.
 * Inlined into the may_goto loop, the datapath's many paths leave states that
 * never converge at the loop head and the program is rejected. The price is a
 * BPF-to-BPF call per iteration, which the overhead program below pays too; on kernels
 * with return thunks (AMD Safe-RET) that call is the bulk of the loop's cost
 * (`bpfbench loops` measures it).
 */
__noinline int lb_body(struct xdp_md *ctx)
{
	if (!ctx)
		return XDP_ABORTED;
	return lb_verdict(lb_process(ctx));
}

/* The overhead program's body: the same call, no work. */
__noinline int lb_empty_body(struct xdp_md *ctx)
{
	asm volatile("" ::: "memory");
	return ctx ? XDP_PASS : XDP_ABORTED;
}

/*
 * The datapath alone, for an interface's XDP hook ('bpfbench live'): what
 * the timed programs run per iteration, without the loop and its call.
 */
SEC("xdp")
int xdp_lb_live(struct xdp_md *ctx)
{
	return lb_verdict(lb_process(ctx));
}

/* Incremental checksum update for a 32-bit field (RFC 1624), on raw memory
 * words: `partial` is the part that does not change from packet to packet,
 * ~check + ~from (as 16-bit halves), which the host sums once per scenario. */
static __always_inline __u16 lb_csum_with(__u32 partial, __be32 to)
{
	return lb_csum_fold(partial + (to & 0xffff) + (to >> 16));
}

/* The L4 checksum for the new address, at the UDP or the TCP offset (UDP's
 * zero, "no checksum", written as its ones' complement twin). */
static __always_inline void lb_flowgen_l4_csum(void *data, struct lb_flowgen *g, __be32 new, const int udp_off,
					       const int tcp_off)
{
	__u16 l4 = lb_csum_with(g->l4_partial, new);

	if (g->l4_is_udp)
		*(__u16 *)(data + udp_off) = l4 ? l4 : 0xffff;
	else
		*(__u16 *)(data + tcp_off) = l4;
}

/*
 * Reset-block half owned by the workload: give the packet the flow of the
 * current sequence number. Address and checksums are written as absolute
 * values derived from flow 0, so the result does not depend on what the
 * previous iteration (or the header restore) left in the packet.
 * Returns non-zero if the packet cannot be written.
 */
static __always_inline int lb_flowgen_write(struct xdp_md *ctx, struct lb_flowgen *g,
					    struct lb_flow_table *t)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 idx = (g->seq >> (g->repeat_shift & 31)) & g->mask;
	__be32 new;

	if (g->mask < LB_FLOW_TABLE_SIZE) {
		/* The words precomputed: copied, not computed (two checksum folds less). */
		struct lb_flow_words *w;

		/* clang knows idx fits (mask < the size) and would drop the mask
		 * the verifier needs to see the bound. */
		asm volatile("" : "+r"(idx));
		w = &t->w[idx & (LB_FLOW_TABLE_SIZE - 1)];

		if (g->l3_csum_off) {
			if (data + LB_FLOWGEN_V4_END > data_end)
				return -1;
			*(__be32 *)(data + LB_FLOWGEN_V4_ADDR) = w->addr;
			*(__u16 *)(data + LB_FLOWGEN_V4_L3_CSUM) = w->l3_csum;
			*(__u16 *)(data + (g->l4_is_udp ? LB_FLOWGEN_V4_UDP_CSUM : LB_FLOWGEN_V4_TCP_CSUM)) = w->l4_csum;
			return 0;
		}
		if (data + LB_FLOWGEN_V6_END > data_end)
			return -1;
		*(__be32 *)(data + LB_FLOWGEN_V6_ADDR) = w->addr;
		*(__u16 *)(data + (g->l4_is_udp ? LB_FLOWGEN_V6_UDP_CSUM : LB_FLOWGEN_V6_TCP_CSUM)) = w->l4_csum;
		return 0;
	}
	new = g->base_addr ^ bpf_htonl(idx);

	/*
	 * The offsets are lb_flowgen_offset's (the scenarios' untagged Ethernet,
	 * option-less headers), as constants: one bounds check per layout
	 * instead of one per field, and no offsets loaded and masked per packet.
	 * The stores are written out again rather than shared with the table's
	 * path: shared, the 16M-flow loop cost 0.3-0.7 ns more (measured).
	 */
	if (g->l3_csum_off) {
		if (data + LB_FLOWGEN_V4_END > data_end)
			return -1;
		*(__be32 *)(data + LB_FLOWGEN_V4_ADDR) = new;
		*(__u16 *)(data + LB_FLOWGEN_V4_L3_CSUM) = lb_csum_with(g->l3_partial, new);
		lb_flowgen_l4_csum(data, g, new, LB_FLOWGEN_V4_UDP_CSUM, LB_FLOWGEN_V4_TCP_CSUM);
		return 0;
	}
	if (data + LB_FLOWGEN_V6_END > data_end)
		return -1;
	*(__be32 *)(data + LB_FLOWGEN_V6_ADDR) = new;
	lb_flowgen_l4_csum(data, g, new, LB_FLOWGEN_V6_UDP_CSUM, LB_FLOWGEN_V6_TCP_CSUM);
	return 0;
}

/* The one entry of a single-entry array map. */
static __always_inline void *lb_only_entry(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/* Writes the current flow into the packet, when the generator is on. */
static __always_inline int lb_flowgen_apply(struct xdp_md *ctx)
{
	struct lb_flowgen *g = lb_only_entry(&flowgen);
	struct lb_flow_table *t = lb_only_entry(&flow_words);

	if (!g || !t)
		return -1;
	return g->enabled ? lb_flowgen_write(ctx, g, t) : 0;
}

/* Advances generator `g` to the next packet's flow. The may_goto loop looks
 * `g` and `t` up once per batch; the other loops' resets run apart, where
 * they cannot be passed, and use lb_flowgen_next. */
static __always_inline int lb_flowgen_next_of(struct xdp_md *ctx, struct lb_flowgen *g,
					      struct lb_flow_table *t)
{
	if (!g->enabled)
		return 0;
	g->seq++;
	return lb_flowgen_write(ctx, g, t);
}

static __always_inline int lb_flowgen_next(struct xdp_md *ctx)
{
	struct lb_flowgen *g = lb_only_entry(&flowgen);
	struct lb_flow_table *t = lb_only_entry(&flow_words);

	return g && t ? lb_flowgen_next_of(ctx, g, t) : -1;
}

/*
 * A timed program and its overhead twin differ only in the body: the same
 * flow generator resets the packet around lb_body or lb_empty_body.
 */
#define LB_TIMED_MAY_GOTO(name, body)                                          \
	SEC("xdp")                                                             \
	int name(struct xdp_md *ctx)                                           \
	{                                                                      \
		struct lb_flowgen *g = lb_only_entry(&flowgen);                       \
		struct lb_flow_table *t = lb_only_entry(&flow_words);                 \
		int ret = XDP_ABORTED;                                         \
                                                                               \
		if (!g || !t || (g->enabled && lb_flowgen_write(ctx, g, t)))   \
			return XDP_ABORTED;                                    \
		BENCH_TIMED_LOOP(ctx, ret, body(ctx), lb_flowgen_next_of(ctx, g, t)); \
		return ret;                                                    \
	}

LB_TIMED_MAY_GOTO(xdp_lb, lb_body)
LB_TIMED_MAY_GOTO(xdp_lb_overhead, lb_empty_body)

/*
 * The two timed programs again with the loop constructs of kernels before
 * may_goto (6.9): bpf_loop (5.17) and a bounded loop (5.3). The host loads
 * one pair, the best the kernel accepts (see bench_timing.bpf.h).
 */
BENCH_LOOP_CALLBACK(lb_loop_body, struct xdp_md, lb_body(ctx), lb_flowgen_next(ctx))
BENCH_LOOP_CALLBACK(lb_loop_empty, struct xdp_md, lb_empty_body(ctx), lb_flowgen_next(ctx))
BENCH_BOUNDED_STEP(lb_bounded_step, lb_flowgen_next(ctx))

/* The same program around either batch (BATCH, a statement): the flow
 * generator's state applied, the timed batch, then the untimed run whose
 * verdict the host checks. */
#define LB_TIMED_BY(name, body, BATCH)                                         \
	SEC("xdp")                                                             \
	int name(struct xdp_md *ctx)                                           \
	{                                                                      \
		int ret = XDP_ABORTED;                                         \
                                                                               \
		if (lb_flowgen_apply(ctx))                                     \
			return XDP_ABORTED;                                    \
		BATCH;                                                         \
		ret = body(ctx);                                               \
		return ret;                                                    \
	}

LB_TIMED_BY(xdp_lb_bpf_loop, lb_body, BENCH_TIMED_BATCH_BPF_LOOP(ctx, 0, ret, lb_loop_body))
LB_TIMED_BY(xdp_lb_overhead_bpf_loop, lb_empty_body, BENCH_TIMED_BATCH_BPF_LOOP(ctx, 0, ret, lb_loop_empty))
LB_TIMED_BY(xdp_lb_bounded, lb_body, BENCH_TIMED_BATCH_BOUNDED(ctx, ret, lb_body(ctx), lb_bounded_step))
LB_TIMED_BY(xdp_lb_overhead_bounded, lb_empty_body,
	    BENCH_TIMED_BATCH_BOUNDED(ctx, ret, lb_empty_body(ctx), lb_bounded_step))

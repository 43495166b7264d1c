/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Definitions of the Katran-model load balancer's maps. The host's views of
 * these structs and enums are generated from the object's BTF (maps.rs), so
 * constants the host needs are enums, not #defines.
 */
#ifndef LB_COMMON_H
#define LB_COMMON_H

#include <linux/types.h>

enum lb_limit {
	LB_MAX_VIPS = 16,
	LB_MAX_REALS = 128,
	LB_MAX_CPUS = 128,
	/* Katran's default Maglev ring size: a prime, so every skip value is a generator. */
	LB_RING_SIZE = 65537,
	LB_LRU_SIZE = 16384,
	/* Flow spaces up to this size have their words precomputed (lb_flow_table). */
	LB_FLOW_TABLE_SIZE = 4096,
};

/* lb_vip_meta.flags */
enum lb_vip_flag {
	LB_VIP_LRU_BYPASS = 1u << 1,	/* consistent hashing only, as Katran's F_LRU_BYPASS */
};

/* lb_real.flags */
enum lb_real_flag {
	LB_REAL_IPV6 = 1u << 0,
};

/* Outer source addresses (Katran's rules): IPv4 172.16.0.0/16, IPv6 0100::/64. */
#define LB_IPIP_V4_PREFIX_BE	0x000010acu	/* 172.16.0.0 as a little-endian load of network bytes */
#define LB_ENCAP_TTL		64

enum lb_counter {
	LB_CNT_LRU_HIT = 0,
	LB_CNT_LRU_MISS_TCP_SYN,	/* SYN: LRU skipped, consistent hash used */
	LB_CNT_LRU_MISS_TCP_NONSYN,	/* non-SYN TCP not in the LRU */
	LB_CNT_LRU_MISS_UDP,		/* UDP not in the LRU, or its entry expired */
	LB_CNT_LRU_UDP_EXPIRED,		/* subset of the UDP misses: entry too old */
	LB_CNT_LRU_INSERT,		/* LRU updates after a consistent-hash pick */
	LB_CNT_CH_LOOKUP,		/* consistent-hash ring lookups */
	LB_CNT_XDP_ABORTED,
	LB_CNT_XDP_DROP,
	LB_CNT_XDP_PASS,
	LB_CNT_XDP_TX,
	LB_CNT_MAX,
};

struct lb_flow_key {
	union {
		__be32 src;
		__be32 srcv6[4];
	};
	union {
		__be32 dst;
		__be32 dstv6[4];
	};
	union {
		__u32 ports;
		__u16 port16[2];
	};
	__u8 proto;
	__u8 _pad[3];
};

struct lb_vip_key {
	__be32 addr[4];	/* IPv4 in addr[0], the rest zero */
	__u16 port;	/* network order; 0 matches any port */
	__u8 proto;
	__u8 _pad;
};

struct lb_vip_meta {
	__u32 flags;
	__u32 vip_num;
};

struct lb_real {
	__be32 addr[4];	/* IPv4 in addr[0] */
	__u8 flags;
	__u8 _pad[3];
};

struct lb_real_pos_lru {
	__u32 pos;
	__u32 _pad;
	__u64 atime;	/* last use, UDP only (ns, bpf_ktime_get_ns) */
};

struct lb_ctl {
	__u8 default_mac[6];	/* next hop: the Ethernet destination of every encapsulated packet */
	__u8 _pad[2];
	__u64 udp_lru_timeout_ns;
};

struct lb_stat {
	__u64 packets;
	__u64 bytes;
};

/*
 * Flow generator, driven by the reset block between iterations: packet k of a
 * batch carries flow index (seq >> repeat_shift) & mask, written into the 32-bit
 * source address word at addr_off as base ^ htonl(index), with checksums fixed
 * up. A shift, not a division: a 64-bit division per iteration was most of
 * what cycling flows added to the loop.
 */
struct lb_flowgen {
	__u32 enabled;
	__u32 mask;		/* flow space - 1: 4095 (diverse) or 0xffffff (16M) */
	__u32 repeat_shift;	/* packets per flow = 1 << repeat_shift: 1, or 2 for the warm-up pairs */
	/* Offsets, from lb_flowgen_offset: the datapath writes at those
	 * constants and reads only whether l3_csum_off is 0 (IPv6). */
	__u16 addr_off;		/* offset of the varied source address word */
	__u16 l3_csum_off;	/* IPv4 header checksum offset, 0 for IPv6 */
	__u16 l4_csum_off;	/* TCP/UDP checksum offset */
	__u16 l4_is_udp;	/* UDP: a zero checksum is sent as 0xffff */
	__be32 base_addr;	/* the address word of flow 0 */
	/* Flow 0's checksums less its address (RFC 1624's ~HC + ~m, as 16-bit
	 * halves of raw memory words, summed by the host): each packet's
	 * checksums are these plus its address, whatever the packet holds now,
	 * and the per-packet chain is an add and a fold. */
	__u32 l3_partial;
	__u32 l4_partial;
	__u64 seq;		/* running packet counter; persists across batches (cold LRU) */
};

/*
 * Where the flow generator writes, in the scenarios' frames (untagged
 * Ethernet, headers without options): the datapath writes at these
 * constants and the host takes its offsets from here; a unit test checks
 * them against each scenario's built packets (checks.rs).
 */
enum lb_flowgen_offset {
	LB_FLOWGEN_V4_L3_CSUM = 14 + 10,
	LB_FLOWGEN_V4_ADDR = 14 + 12,
	LB_FLOWGEN_V4_UDP_CSUM = 14 + 20 + 6,
	LB_FLOWGEN_V4_TCP_CSUM = 14 + 20 + 16,
	LB_FLOWGEN_V4_END = 14 + 20 + 18,	/* past the TCP checksum (past UDP's too) */
	LB_FLOWGEN_V6_ADDR = 14 + 8 + 12,
	LB_FLOWGEN_V6_UDP_CSUM = 14 + 40 + 6,
	LB_FLOWGEN_V6_TCP_CSUM = 14 + 40 + 16,
	LB_FLOWGEN_V6_END = 14 + 40 + 18,
};

/*
 * A flow space of up to LB_FLOW_TABLE_SIZE has its words precomputed by the
 * host: per flow index, the address word and both checksums as the frame
 * holds them (a UDP zero already 0xffff), so the reset block only copies them.
 */
struct lb_flow_words {
	__be32 addr;
	__u16 l3_csum;
	__u16 l4_csum;
};

/* The table as one map value: the reset block indexes it from a pointer
 * looked up once per batch, instead of a lookup (key through the stack,
 * bounds check, null check) per packet. */
struct lb_flow_table {
	struct lb_flow_words w[LB_FLOW_TABLE_SIZE];
};

/* Brings the enums above into the object's BTF (and so into the generated
 * Rust types): BTF describes a type only when a variable or map uses it. */
struct lb_host_enums {
	enum lb_limit limit;
	enum lb_vip_flag vip_flag;
	enum lb_real_flag real_flag;
	enum lb_counter counter;
	enum lb_flowgen_offset flowgen_offset;
};

#endif /* LB_COMMON_H */

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Bob Jenkins' lookup3 hash ("jhash"), as Linux and Katran use it for flow
 * hashing. src/workloads/xdp_lb/jhash.rs is the host's copy, used to predict
 * which real a flow maps to; the validation step checks that both agree.
 */
#ifndef BPFBENCH_JHASH_BPF_H
#define BPFBENCH_JHASH_BPF_H

#include <linux/types.h>

#define JHASH_INITVAL 0xdeadbeef

static __always_inline __u32 jh_rol32(__u32 word, unsigned int shift)
{
	return (word << shift) | (word >> ((-shift) & 31));
}

#define __jhash_mix(a, b, c)				\
	do {						\
		a -= c; a ^= jh_rol32(c, 4);  c += b;	\
		b -= a; b ^= jh_rol32(a, 6);  a += c;	\
		c -= b; c ^= jh_rol32(b, 8);  b += a;	\
		a -= c; a ^= jh_rol32(c, 16); c += b;	\
		b -= a; b ^= jh_rol32(a, 19); a += c;	\
		c -= b; c ^= jh_rol32(b, 4);  b += a;	\
	} while (0)

#define __jhash_final(a, b, c)				\
	do {						\
		c ^= b; c -= jh_rol32(b, 14);		\
		a ^= c; a -= jh_rol32(c, 11);		\
		b ^= a; b -= jh_rol32(a, 25);		\
		c ^= b; c -= jh_rol32(b, 16);		\
		a ^= c; a -= jh_rol32(c, 4);		\
		b ^= a; b -= jh_rol32(a, 14);		\
		c ^= b; c -= jh_rol32(b, 24);		\
	} while (0)

/* jhash of a 16-byte key (an IPv6 address), loaded as native 32-bit words. */
static __always_inline __u32 jhash(const void *key, __u32 length, __u32 initval)
{
	const __u32 *k = key;
	__u32 a, b, c;

	/* Only the 16-byte case is used; spelled out so the verifier sees no loop. */
	a = b = c = JHASH_INITVAL + length + initval;
	a += k[0];
	b += k[1];
	c += k[2];
	__jhash_mix(a, b, c);
	a += k[3];
	__jhash_final(a, b, c);
	return c;
}

static __always_inline __u32 __jhash_nwords(__u32 a, __u32 b, __u32 c, __u32 initval)
{
	a += initval;
	b += initval;
	c += initval;
	__jhash_final(a, b, c);
	return c;
}

static __always_inline __u32 jhash_2words(__u32 a, __u32 b, __u32 initval)
{
	return __jhash_nwords(a, b, 0, initval + JHASH_INITVAL + (2 << 2));
}

#endif /* BPFBENCH_JHASH_BPF_H */

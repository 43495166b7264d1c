/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Added work for A/B tests: a chain of N dependent multiplications the
 * compiler must keep (inline asm) and that changes no output. Each step
 * waits for the one before, so the cost grows linearly with N. */
#ifndef EXTRA_ALU_H
#define EXTRA_ALU_H

#define EXTRA_ALU(n, seed)                                              \
	do {                                                            \
		__u64 __x = (seed);                                     \
		_Pragma("unroll") for (int __i = 0; __i < (n); __i++)   \
			asm volatile("%[x] *= 3" : [x] "+r"(__x));      \
	} while (0)

#endif

/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * can_loop: a may_goto (Linux 6.9) as a loop condition, as libbpf's
 * bpf_experimental.h defines it; the verifier may end such a loop early,
 * so a loop counts the iterations it really ran.
 */
#ifndef CAN_LOOP_BPF_H
#define CAN_LOOP_BPF_H

#include <stdbool.h>

#ifndef can_loop
#define can_loop					\
	({ __label__ l_break, l_continue;		\
	bool ret = true;				\
	asm volatile goto("may_goto %l[l_break]"	\
		      :::: l_break);			\
	goto l_continue;				\
	l_break: ret = false;				\
	l_continue:;					\
	ret;						\
	})
#endif

#endif /* CAN_LOOP_BPF_H */

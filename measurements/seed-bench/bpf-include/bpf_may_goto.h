/* Stand-in for the selftests' can_loop where the tree has no bpf_may_goto.h
 * (clang >= 19 assembles may_goto). */
#pragma once
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

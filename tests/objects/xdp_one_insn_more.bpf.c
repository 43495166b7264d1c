/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* xdp_one_insn.bpf.c with one more BPF instruction (a multiplication). */
#define ONE_INSN_MORE 1
#include "xdp_one_insn.bpf.c"

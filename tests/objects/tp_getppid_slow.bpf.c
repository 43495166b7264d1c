// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tp_getppid.bpf.c's program with more work a run: the same count, then a
 * 200-round mix of it. The paired tests compare the two as two builds of a
 * tracing object (`bpfbench ab`), which must call this one slower. */
#define EXTRA_ROUNDS 200
#include "tp_getppid.bpf.c"

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kprobe_openat.bpf.c's two counters through multi-kprobe links (fprobe):
 * the same function by name, entered and returned. Kernels with kprobes
 * have them (a guest of Debian's 6.12); this one has neither. */
#define KPROBE_SECTION "kprobe.multi"
#define KRETPROBE_SECTION "kretprobe.multi"
#include "kprobe_openat.bpf.c"

/* For the BPF target: the one errno the LPM bench program uses (glibc's errno.h
 * does not build for -target bpf). */
#pragma once
#define ENOENT 2

// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for the selftests' bench.c, reduced to what the xdp-lb, bpf-nop
 * and lpm-trie benchmarks use: argp (-a -q -w -d -p --prod-affinity), env,
 * setup_libbpf, producer threads pinned to CPUs, one measure() per second,
 * bench_force_done(), report_progress/report_final over the post-warm-up
 * results, and ops_report_*. Written for bpfbench's side-by-side
 * measurement; the benchmarks and their BPF programs are the selftests'.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

struct env env = {
	.warmup_sec = 1,
	.duration_sec = 5,
	.producer_cnt = 1,
	.prod_cpu = -1,
};
const struct bench *bench;

static int libbpf_print_fn(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	return vfprintf(stderr, format, args);
}

void setup_libbpf(void)
{
	libbpf_set_print(libbpf_print_fn);
}

static pthread_mutex_t done_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static bool done;

void bench_force_done(void)
{
	pthread_mutex_lock(&done_mtx);
	done = true;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&done_mtx);
}

void ops_report_progress(int iter, struct bench_res *res, long delta_ns)
{
	double hits_per_sec, hits_per_prod;

	hits_per_sec = res->hits / 1000000.0 / (delta_ns / 1000000000.0);
	hits_per_prod = hits_per_sec / env.producer_cnt;

	printf("Iter %3d (%7.3lfus): ", iter, (delta_ns - 1000000000) / 1000.0);

	printf("hits %8.3lfM/s (%7.3lfM/prod)\n", hits_per_sec, hits_per_prod);
}

void ops_report_final(struct bench_res res[], int res_cnt)
{
	double hits_mean = 0.0, hits_stddev = 0.0;
	int i;

	for (i = 0; i < res_cnt; i++)
		hits_mean += res[i].hits / 1000000.0 / (0.0 + res_cnt);

	if (res_cnt > 1)  {
		for (i = 0; i < res_cnt; i++)
			hits_stddev += (hits_mean - res[i].hits / 1000000.0) *
				       (hits_mean - res[i].hits / 1000000.0) /
				       (res_cnt - 1.0);

		hits_stddev = sqrt(hits_stddev);
	}
	printf("Summary: throughput %8.3lf \u00B1 %5.3lf M ops/s (%7.3lfM ops/prod), ",
	       hits_mean, hits_stddev, hits_mean / env.producer_cnt);
	printf("latency %8.3lf ns/op\n", 1000.0 / hits_mean * env.producer_cnt);
}

extern const struct bench bench_xdp_lb, bench_bpf_nop;
extern const struct bench bench_lpm_trie_noop, bench_lpm_trie_baseline, bench_lpm_trie_lookup,
	bench_lpm_trie_insert, bench_lpm_trie_update, bench_lpm_trie_delete;
extern const struct argp bench_xdp_lb_argp, bench_lpm_trie_map_argp;

static const struct bench *benchs[] = {
	&bench_xdp_lb, &bench_bpf_nop,
	&bench_lpm_trie_noop, &bench_lpm_trie_baseline, &bench_lpm_trie_lookup,
	&bench_lpm_trie_insert, &bench_lpm_trie_update, &bench_lpm_trie_delete,
};

enum { ARG_PROD_AFFINITY = 2000 };

static const struct argp_option opts[] = {
	{ "duration", 'd', "SEC", 0, "Benchmark duration" },
	{ "warmup", 'w', "SEC", 0, "Warm-up period" },
	{ "producers", 'p', "NUM", 0, "Number of producer threads" },
	{ "affinity", 'a', NULL, 0, "Pin producers to CPUs (from 0, or --prod-affinity)" },
	{ "prod-affinity", ARG_PROD_AFFINITY, "CPU", 0, "First CPU for producers" },
	{ "quiet", 'q', NULL, 0, "Only the final result" },
	{ "verbose", 'v', NULL, 0, "libbpf debug output" },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'd': env.duration_sec = atoi(arg); break;
	case 'w': env.warmup_sec = atoi(arg); break;
	case 'p': env.producer_cnt = atoi(arg); break;
	case 'a': env.affinity = true; break;
	case ARG_PROD_AFFINITY: env.affinity = true; env.prod_cpu = atoi(arg); break;
	case 'q': env.quiet = true; break;
	case 'v': env.verbose = true; break;
	case ARGP_KEY_ARG:
		if (env.bench_name)
			argp_usage(state);
		env.bench_name = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {
	{ &bench_xdp_lb_argp, 0, "xdp-lb", 0 },
	{ &bench_lpm_trie_map_argp, 0, "lpm-trie", 0 },
	{},
};

static const struct argp argp = {
	.options = opts,
	.parser = parse_arg,
	.args_doc = "BENCH",
	.children = children,
};

int main(int argc, char **argv)
{
	struct bench_res *res;
	pthread_t *producers;
	struct timespec ts;
	int i, iter = 0;
	__u64 prev;

	argp_parse(&argp, argc, argv, 0, NULL, NULL);
	for (i = 0; i < (int)(sizeof(benchs) / sizeof(benchs[0])); i++)
		if (env.bench_name && !strcmp(benchs[i]->name, env.bench_name))
			bench = benchs[i];
	if (!bench) {
		fprintf(stderr, "unknown benchmark '%s'\n", env.bench_name ? env.bench_name : "");
		return 1;
	}
	env.nr_cpus = libbpf_num_possible_cpus();
	if (bench->validate)
		bench->validate();
	bench->setup();

	producers = calloc(env.producer_cnt, sizeof(*producers));
	for (i = 0; i < env.producer_cnt; i++) {
		pthread_create(&producers[i], NULL, bench->producer_thread, (void *)(long)i);
		if (env.affinity) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET((env.prod_cpu < 0 ? 0 : env.prod_cpu) + i, &set);
			pthread_setaffinity_np(producers[i], sizeof(set), &set);
		}
	}
	if (!env.quiet)
		printf("Benchmark '%s' started.\n", bench->name);

	res = calloc(env.warmup_sec + env.duration_sec + 1, sizeof(*res));
	prev = get_time_ns();
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&done_mtx);
	/* One measurement a second until the bench says done or the time is up;
	 * env.duration_sec may change in setup(), so it is read each time. */
	while (!done && iter < env.warmup_sec + env.duration_sec) {
		__u64 now;

		ts.tv_sec += 1;
		while (!done && pthread_cond_timedwait(&done_cond, &done_mtx, &ts) == 0)
			;
		if (done)
			break;
		now = get_time_ns();
		if (iter >= env.warmup_sec + env.duration_sec)
			break;
		res = realloc(res, (iter + 1) * sizeof(*res));
		memset(&res[iter], 0, sizeof(*res));
		/* measure() may call bench_force_done(), which takes the lock. */
		pthread_mutex_unlock(&done_mtx);
		bench->measure(&res[iter]);
		pthread_mutex_lock(&done_mtx);
		if (bench->report_progress && !env.quiet)
			bench->report_progress(iter, &res[iter], now - prev);
		prev = now;
		iter++;
	}
	pthread_mutex_unlock(&done_mtx);
	if (bench->report_final)
		bench->report_final(res + env.warmup_sec,
				    iter > env.warmup_sec ? iter - env.warmup_sec : 0);
	fflush(stdout);
	/* The producers loop for ever; exit() ends them. */
	exit(0);
}

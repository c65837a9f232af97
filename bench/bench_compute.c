/* bench_compute.c: the compute model (sim/compute.h) in figures.
 *
 * Prints GEMM efficiency and time for the transformer shapes of the vTrain
 * set and Qwen3-VL on each GPU preset (A100, H100, H200), with and without
 * a calibration file, and measures the cost of one sim_compute_time_s call
 * (the executor calls it for every compute op of every representative).
 *
 *   bench_compute [--calibration FILE] [--calls N] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/compute.h"
#include "topo/topo.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct shape {
	const char *what;
	int64_t m, n, k, batch;
};

/* Per-rank GEMMs of one micro-batch (m = micro x seq tokens). */
static const struct shape shapes[] = {
	{ "gpt-3.6b qkv  mb8 tp1", 8 * 2048, 3 * 3072, 3072, 1 },
	{ "gpt-3.6b fc1  mb8 tp1", 8 * 2048, 4 * 3072, 3072, 1 },
	{ "gpt-3.6b fc1  mb2 tp8", 2 * 2048, 4 * 3072 / 8, 3072, 1 },
	{ "gpt-39b  fc1  mb2 tp8", 2 * 2048, 4 * 8192 / 8, 8192, 1 },
	{ "gpt-39b  fc2  mb2 tp8", 2 * 2048, 8192, 4 * 8192 / 8, 1 },
	{ "gpt-175b fc1  mb2 tp4", 2 * 2048, 4 * 12288 / 4, 12288, 1 },
	{ "gpt-175b qk^T mb2 tp4", 2048, 2048, 128, 2 * 96 / 4 },
	{ "lm head 50257 mb4 tp8", 4 * 2048, 50257 / 8, 6144, 1 },
	{ "qwen3 expert 128x768", 512, 768, 2048, 128 },
	{ "square 1024", 1024, 1024, 1024, 1 },
	{ "square 4096", 4096, 4096, 4096, 1 },
	{ "square 16384", 16384, 16384, 16384, 1 },
};

static void gpu_of(const char *preset, struct topo_gpu_spec *g)
{
	struct topo_cluster c;
	struct ts_error err = TS_ERROR_INIT;
	memset(&c, 0, sizeof(c));
	if (topo_cluster_load(&c, preset, 1, &err)) {
		fprintf(stderr, "bench_compute: %s\n", err.msg);
		exit(2);
	}
	*g = c.gpu;
	topo_cluster_release(&c);
}

static void table(const struct sim_compute *c)
{
	printf("## %s (%d SMs, %.0f TFLOP/s, %.0f GB/s) -- %s\n", c->gpu, c->sm_count,
	       c->peak_flops / 1e12, c->hbm_Bps / 1e9, c->source);
	printf("%-24s %7s %7s %7s %5s %8s %10s %9s\n", "shape", "m", "n", "k", "batch", "eff",
	       "time_us", "TFLOP/s");
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = s->m, .n = s->n, .k = s->k,
					  .batch = s->batch, .dtype_bytes = 2 };
		double t = sim_compute_time_s(c, &op);
		double f = 2.0 * (double)s->m * (double)s->n * (double)s->k * (double)s->batch;
		printf("%-24s %7lld %7lld %7lld %5lld %8.3f %10.1f %9.1f\n", s->what,
		       (long long)s->m, (long long)s->n, (long long)s->k, (long long)s->batch,
		       sim_compute_gemm_eff_batched(c, s->m, s->n, s->k, s->batch), t * 1e6,
		       f / t / 1e12);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "calibration", required_argument, NULL, 'c' },
		{ "calls", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *calib = NULL;
	long calls = 10000000;
	int ch;
	struct ts_error err = TS_ERROR_INIT;
	static const char *const presets[] = { "dgx-a100-hdr", "dgx-h100-ndr", NULL };

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': calib = optarg; break;
		case 'n': calls = atol(optarg); break;
		case 'h':
			printf("usage: bench_compute [--calibration FILE] [--calls N]\n");
			return 0;
		default:
			fprintf(stderr, "usage: bench_compute [--calibration FILE] [--calls N]\n");
			return 2;
		}
	}
	if (calls < 1)
		calls = 1;
	for (int p = 0; presets[p]; p++) {
		struct topo_gpu_spec g;
		struct sim_compute c;
		gpu_of(presets[p], &g);
		sim_compute_init(&c, &g);
		table(&c);
		if (calib && p == 0) {
			if (sim_compute_load(&c, calib, &err)) {
				fprintf(stderr, "bench_compute: %s\n", err.msg);
				return 2;
			}
			table(&c);
		}
	}

	/* cost of one call, over a mix of shapes and classes */
	struct topo_gpu_spec g;
	struct sim_compute c;
	gpu_of("dgx-a100-hdr", &g);
	sim_compute_init(&c, &g);
	double sink = 0, t0 = now_s();
	for (long i = 0; i < calls; i++) {
		const struct shape *s = &shapes[(size_t)i % (sizeof(shapes) / sizeof(shapes[0]))];
		struct sim_op_desc op = { .cls = (enum sim_op_class)(i & 3), .m = s->m, .n = s->n,
					  .k = s->k + (i & 7), .batch = s->batch, .dtype_bytes = 2,
					  .flops = 1e9, .bytes = 1e6 };
		sink += sim_compute_time_s(&c, &op);
	}
	double dt = now_s() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("## cost: %ld calls of sim_compute_time_s in %.3f s = %.1f ns per call "
	       "(checksum %.6g); peak RSS %.1f MiB\n",
	       calls, dt, 1e9 * dt / (double)calls, sink, ru.ru_maxrss / 1024.0);
	return 0;
}

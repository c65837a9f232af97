/* bench_models.c: cost of one memory + FLOPs evaluation of a plan, the
 * inner loop of a plan search (target: under 10 us per evaluation).
 * Prints wall time per evaluation (clock_gettime) and peak RSS (getrusage). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "models/models.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct bench_case {
	const char *model;
	int ngpus;
	int tp, pp, ep, zero, v;
	enum plan_schedule sched;
	enum plan_recompute rc;
};

int main(int argc, char **argv)
{
	static const struct bench_case cases[] = {
		{ "qwen3-vl-235b-a22b", 8, 1, 1, 1, 3, 1, PLAN_SCHED_1F1B, PLAN_RC_FULL },
		{ "qwen3-vl-235b-a22b", 1024, 4, 2, 8, 1, 1, PLAN_SCHED_1F1B, PLAN_RC_SELECTIVE },
		{ "gpt3-175b", 1024, 8, 8, 1, 0, 2, PLAN_SCHED_INTERLEAVED, PLAN_RC_FULL },
		{ "llama3-405b", 16384, 8, 16, 1, 1, 1, PLAN_SCHED_1F1B, PLAN_RC_NONE },
	};
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	struct memory_report *r = malloc(sizeof(*r));
	struct rusage ru;
	if (!r || iters < 1)
		return 2;
	printf("%-20s %6s %-32s %12s %10s %8s\n", "model", "gpus", "plan", "evals", "us/eval",
	       "peak GiB");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bench_case *c = &cases[i];
		struct model m;
		struct plan p;
		struct memory_env env = { .gpu_mem_bytes = 80.0 * 1024 * 1024 * 1024, .ngpus = c->ngpus };
		struct ts_error err = TS_ERROR_INIT;
		double t0, t1, sink = 0;
		char desc[64];
		if (model_load(&m, c->model, &err)) {
			fprintf(stderr, "bench_models: %s\n", err.msg);
			return 2;
		}
		plan_init(&p);
		p.tp = c->tp;
		p.pp = c->pp;
		p.ep = c->ep;
		p.zero = c->zero;
		p.schedule = c->sched;
		p.virtual_stages = c->v;
		p.recompute = c->rc;
		p.flash_attention = true;
		p.sp = c->tp > 1;
		p.seq_len = m.max_pos ? m.max_pos : 4096;
		p.global_batch = 0;
		if (m.layers % c->pp) { /* uneven split, as Llama 3 405B training did */
			p.nlps = c->pp;
			for (int s = 0; s < c->pp; s++)
				p.layers_per_stage[s] = m.layers / c->pp + (s < m.layers % c->pp);
		}
		if (c->sched == PLAN_SCHED_INTERLEAVED)
			p.global_batch = 128 * c->ngpus / (c->tp * c->pp);
		if (plan_resolve(&p, &m, c->ngpus, &err)) {
			fprintf(stderr, "bench_models: %s\n", err.msg);
			return 2;
		}
		t0 = now_s();
		for (long k = 0; k < iters; k++) {
			/* What a search does per candidate: vary the micro-batch. */
			p.micro_batch = 1 + (int)(k & 1);
			memory_eval(&m, &p, &env, r);
			sink += r->peak_bytes + model_flops_iteration(&m, &p);
		}
		t1 = now_s();
		snprintf(desc, sizeof(desc), "tp%d pp%d ep%d zero%d %s", p.tp, p.pp, p.ep, p.zero,
			 plan_schedule_name(p.schedule));
		printf("%-20s %6d %-32s %12ld %10.3f %8.2f\n", c->model, c->ngpus, desc, iters,
		       (t1 - t0) / (double)iters * 1e6, r->peak_bytes / (1024.0 * 1024 * 1024));
		if (sink < 0)
			printf("impossible\n");
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %ld KiB\n", ru.ru_maxrss);
	free(r);
	return 0;
}

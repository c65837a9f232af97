/* bench_predict_16k.c: one training iteration of Qwen3-VL-235B-A22B on
 * 16,384 H100s (preset dgx-h100-ndr-fat-tree: rail-optimised k=64 3-tier
 * fat-tree, 2048 nodes) at flow fidelity, every collective of every
 * concurrent group on the network. Plan (a realistic one, not dominated by
 * the pipeline bubble): TP 1, PP 16 (94 layers as 4,6x15), EP 8, DP 1024,
 * interleaved 1F1B with 2 virtual stages, micro-batch 1 x 16 per replica
 * (global batch 16,384), seq 4096, distributed optimizer, full recompute;
 * the same as
 *   trainsim predict --cluster dgx-h100-ndr-fat-tree --model qwen3-vl-235b-a22b
 *     --tp 1 --pp 16 --ep 8 --micro-batch 1 --global-batch 16384 --seq-len 4096
 *     --recompute full --distributed-optimizer
 *     --layers-per-stage 4,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6
 *     --schedule interleaved --virtual-stages 2
 * Prints the topology's build time, then per mode (all collectives live,
 * then memoised) the iteration time, wall and CPU time, events, flows,
 * collectives, peak RSS and the breakdown; target < 10 s and < 2 GiB. Each
 * mode runs in its own forked process, so its CPU time and peak RSS are its
 * own, the topology and model it inherits included (found by review: the
 * memoised row showed the whole process's peak so far).
 * Argument "small" runs the same plan on 1,024 GPUs (DP 64) for CI. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "models/models.h"
#include "sim/exec.h"
#include "topo/topo.h"

/* CPU time (user + system) of a rusage, s. */
static double cpu_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec * 1e-6 +
	       (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec * 1e-6;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One mode in this (forked) process: prints its rows, exit status 0 or 2. */
static int run_mode(const struct topo *t, const struct model *m, const struct plan *p, int memo)
{
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	sim_predict_opts_init(&o);
	o.fidelity = SIM_FLOW;
	o.memo = memo;
	if (sim_predict(t, m, p, &o, &r, &err)) {
		ts_error_print(&err);
		return 2;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru); /* a forked child's: its own times and peak */
	printf("%-26s %10.4f %8.3f %8.3f %10llu %10llu %12llu %8.1f\n",
	       memo ? "flow, memoised collectives" : "flow, all live", r.iteration_time_s, r.wall_s,
	       cpu_s(&ru), (unsigned long long)r.events, (unsigned long long)r.flows,
	       (unsigned long long)r.collectives, ru.ru_maxrss / 1024.0 /* Linux: KiB */);
	printf("  breakdown: compute %.3f bubble %.3f optimizer %.3f host %.3f exposed tp %.3f "
	       "pp %.3f dp %.3f ep %.3f cp %.3f s; mfu %.3f; memory %.1f GiB\n",
	       r.bd.compute_s, r.bd.bubble_s, r.bd.optimizer_s, r.bd.host_s, r.bd.exposed_comm_s[0],
	       r.bd.exposed_comm_s[1], r.bd.exposed_comm_s[2], r.bd.exposed_comm_s[3],
	       r.bd.exposed_comm_s[4], r.mfu, r.memory_gib_per_gpu);
	sim_prediction_release(&r);
	return 0;
}

int main(int argc, char **argv)
{
	static struct model m;
	static struct plan p;
	struct topo_cluster cl;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int small = argc > 1 && !strcmp(argv[1], "small");
	static const int lps[16] = { 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6 };

	double t0 = now_s();
	memset(&cl, 0, sizeof(cl));
	if (topo_cluster_load(&cl, "dgx-h100-ndr-fat-tree", small ? 128 : 0, &err) ||
	    topo_build(&t, &cl, &err) || model_load(&m, "qwen3-vl-235b-a22b", &err)) {
		ts_error_print(&err);
		return 2;
	}
	double build_s = now_s() - t0;
	plan_init(&p);
	p.tp = 1;
	p.pp = 16;
	p.ep = 8;
	p.nlps = 16;
	memcpy(p.layers_per_stage, lps, sizeof(lps));
	p.seq_len = 4096;
	p.micro_batch = 1;
	p.global_batch = 16 * (t.ngpus / 16); /* 16 micro-batches per replica */
	p.schedule = PLAN_SCHED_INTERLEAVED;
	p.virtual_stages = 2;
	p.distributed_optimizer = true;
	p.recompute = PLAN_RC_FULL;
	p.sp = false;
	if (plan_resolve(&p, &m, t.ngpus, &err)) {
		ts_error_print(&err);
		return 2;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("qwen3-vl-235b-a22b on %d H100 (%s): tp %d pp %d ep %d dp %d, %s schedule, %d virtual "
	       "stages, %d micro-batches\n", t.ngpus, cl.name, p.tp, p.pp, p.ep, p.dp,
	       plan_schedule_name(p.schedule), p.virtual_stages, plan_microbatches(&p));
	printf("topology and model: %.3f s wall, %.1f MiB; each mode runs in a process of its "
	       "own: wall_s and cpu_s are its prediction's, rss_MiB its peak with these\n",
	       build_s, ru.ru_maxrss / 1024.0);
	printf("%-26s %10s %8s %8s %10s %10s %12s %8s\n", "mode", "iter_s", "wall_s", "cpu_s",
	       "events", "flows", "collectives", "rss_MiB");
	fflush(stdout);
	int rc = 0;
	for (int memo = 0; memo <= 1 && !rc; memo++) {
		pid_t pid = fork();
		int st = 0;
		if (pid < 0) {
			perror("bench_predict_16k: fork");
			rc = 2;
			break;
		}
		if (pid == 0) {
			int r = run_mode(&t, &m, &p, memo);
			fflush(stdout);
			_exit(r);
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			if (WIFSIGNALED(st))
				fprintf(stderr, "bench_predict_16k: the %s run was killed by signal %d\n",
					memo ? "memoised" : "live", WTERMSIG(st));
			rc = 2;
		}
	}
	topo_release(&t);
	topo_cluster_release(&cl);
	return rc;
}

/* bench_sim_flow.c: flow-level speed and memory on a large fabric: all
 * data-parallel rings of a 16,384-GPU H100 fat-tree (2,048 concurrent rings
 * of 8 ranks, group g = ranks g, g+2048, ...) allreducing 1 GiB. Prints wall
 * time, peak RSS, events, max-min solves and the simulated busbw.
 *   bench_sim_flow [cluster] [groups] [ranks] [size_bytes] [routing ecmp|spray]
 *                  [coupled_above] [seed]
 * coupled_above: rings of more ranks run coupled (sim.h; default 64, a
 * huge value forces step by step, for comparison).
 * Targets (issue 3): under 2 s wall and under 1 GiB memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/rng.h"
#include "sim/sim.h"
#include "topo/topo.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_done(void *ctx, struct sim_coll *c)
{
	(*(int *)ctx)++;
	(void)c;
}

int main(int argc, char **argv)
{
	const char *cluster = argc > 1 ? argv[1] : "dgx-h100-ndr-fat-tree";
	int G = argc > 2 ? atoi(argv[2]) : 2048, n = argc > 3 ? atoi(argv[3]) : 8;
	double size = argc > 4 ? atof(argv[4]) : 1073741824.0;
	bool spray = argc > 5 && !strcmp(argv[5], "spray");
	long coupled_above = argc > 6 ? atol(argv[6]) : -1;
	uint64_t seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 1; /* the rings' hashes */
	struct topo_cluster cl;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_engine e;
	struct sim_net net;
	struct sim_coll_spec *sp;
	struct sim_coll **cs;
	int32_t *ranks;
	struct rusage ru;
	double t0, t1, t2, t3;
	simtime_ps end = 0;
	int g, j, ndone = 0;
	t0 = now_s();
	if (topo_cluster_load(&cl, cluster, 0, &err) || topo_build(&t, &cl, &err)) {
		fprintf(stderr, "bench_sim_flow: %s\n", err.msg);
		return 2;
	}
	if ((long long)G * n > t.ngpus) {
		fprintf(stderr, "bench_sim_flow: %d x %d ranks > %d GPUs\n", G, n, (int)t.ngpus);
		return 2;
	}
	t1 = now_s();
	sp = calloc((size_t)G, sizeof(*sp));
	cs = calloc((size_t)G, sizeof(*cs));
	ranks = malloc((size_t)G * (size_t)n * sizeof(int32_t));
	if (!sp || !cs || !ranks)
		return 2;
	sim_engine_init(&e);
	if (sim_net_init_topo(&net, &e, SIM_FLOW, &t, &err)) {
		fprintf(stderr, "bench_sim_flow: %s\n", err.msg);
		return 2;
	}
	net.par.spray = spray;
	if (coupled_above >= 0)
		net.par.ring_coupled_above = coupled_above > INT32_MAX ? INT32_MAX : (int32_t)coupled_above;
	for (g = 0; g < G; g++) {
		for (j = 0; j < n; j++)
			ranks[(size_t)g * n + j] = g + j * G;
		sim_coll_spec_init(&sp[g]);
		sp[g].algo = SIM_ALGO_RING;
		sp[g].proto = SIM_PROTO_SIMPLE;
		sp[g].size_bytes = size;
		sp[g].nranks = n;
		sp[g].ranks = ranks + (size_t)g * n;
		sp[g].hash = rng_hash2(seed, (uint64_t)g);
		if (sim_coll_start(&net, &t, &sp[g], on_done, &ndone, &cs[g], &err)) {
			fprintf(stderr, "bench_sim_flow: %s\n", err.msg);
			return 2;
		}
	}
	t2 = now_s();
	sim_run(&e, TS_SIMTIME_MAX);
	t3 = now_s();
	for (g = 0; g < G; g++) {
		if (sim_coll_end_time(cs[g]) > end)
			end = sim_coll_end_time(cs[g]);
		sim_coll_free(cs[g]);
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("bench_sim_flow: %s, %d GPUs, %d concurrent ring allreduces of %d ranks, %.0f bytes, "
	       "routing %s, rings of > %d ranks coupled\n", cluster, (int)t.ngpus, G, n, size,
	       spray ? "spray" : "ecmp", (int)net.par.ring_coupled_above);
	printf("  done               %d of %d\n", ndone, G);
	printf("  simulated time     %.3f ms (busbw %.1f GB/s per group)\n", time_to_s(end) * 1e3,
	       size / time_to_s(end) / 1e9 * 2.0 * (n - 1) / n);
	printf("  wall: topology     %.3f s\n", t1 - t0);
	printf("  wall: start        %.3f s\n", t2 - t1);
	printf("  wall: simulate     %.3f s\n", t3 - t2);
	printf("  wall: total        %.3f s   (target < 2 s)\n", t3 - t0);
	printf("  peak RSS           %.1f MiB (target < 1024 MiB)\n", ru.ru_maxrss / 1024.0);
	printf("  events             %llu\n", (unsigned long long)e.fired);
	printf("  transfers          %llu\n", (unsigned long long)net.st.xfers_done);
	printf("  max-min solves     %llu (per solve: %.1f flows re-rated, %.1f links, %.2f passes; "
	       "largest %llu flows)\n",
	       (unsigned long long)net.st.recomputes,
	       net.st.recomputes ? (double)net.st.solve_flows / net.st.recomputes : 0.0,
	       net.st.recomputes ? (double)net.st.solve_links / net.st.recomputes : 0.0,
	       net.st.recomputes ? (double)net.st.solve_passes / net.st.recomputes : 0.0,
	       (unsigned long long)net.st.solve_max_flows);
	printf("  bytes sent/deliv.  %.6g / %.6g\n", net.st.bytes_sent, net.st.bytes_delivered);
	sim_net_release(&net);
	sim_engine_release(&e);
	free(sp);
	free(cs);
	free(ranks);
	topo_release(&t);
	topo_cluster_release(&cl);
	return ndone == G ? 0 : 1;
}

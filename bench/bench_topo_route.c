/* bench_topo_route.c: build a k-ary three-tier fat-tree (default k=64:
 * 65,536 hosts of one GPU and one NIC) and route random host pairs (default
 * 1,000,000, seeded); print wall time and peak memory.
 * Target (issue 2): under 2 s and under 1 GiB for k=64 and 1M pairs.
 * usage: bench_topo_route [k] [pairs] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "common/rng.h"
#include "topo/topo.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 64;
	long pairs = argc > 2 ? atol(argv[2]) : 1000000;
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	struct rng g = RNG_INIT;
	struct rusage ru;
	int32_t path[TOPO_MAX_HOPS];
	long long hops = 0, checksum = 0;
	double t0, t1, t2;

	if (k < 2 || k % 2 || k > 128 || pairs < 1) {
		fprintf(stderr, "usage: bench_topo_route [even k <= 128] [pairs >= 1]\n");
		return 2;
	}
	t0 = now_s();
	if (topo_cluster_load(&c, "dgx-h100-ndr", 0, &err)) {
		ts_error_print(&err);
		return 2;
	}
	c.node.gpus = 1;
	c.node.nics = 1;
	c.fabric.kind = TOPO_FABRIC_FAT_TREE;
	c.fabric.rails = false;
	c.fabric.k = k;
	c.fabric.tiers = 3;
	c.fabric.switch_ports = k;
	c.nodes = k * k * k / 4;
	if (topo_build(&t, &c, &err)) {
		ts_error_print(&err);
		return 2;
	}
	topo_cluster_release(&c);
	t1 = now_s();
	if (rng_init(&g, 12345))
		return 2;
	for (long i = 0; i < pairs; i++) {
		int32_t a = (int32_t)rng_below(&g, (uint64_t)t.ngpus);
		int32_t b = (int32_t)rng_below(&g, (uint64_t)t.ngpus);
		int n = topo_route(&t, a, b, (uint64_t)i, path);
		if (n < 0) {
			fprintf(stderr, "route %d -> %d failed (%d)\n", a, b, n);
			return 1;
		}
		hops += n;
		if (n)
			checksum += path[n / 2];
	}
	t2 = now_s();
	getrusage(RUSAGE_SELF, &ru);
	printf("fat-tree k=%d: %d hosts, %d switches, %d graph nodes, %d directed links\n", k,
	       t.nhosts, t.nswitch_by_tier[1] + t.nswitch_by_tier[2] + t.nswitch_by_tier[3],
	       (int)t.nnodes, (int)t.nlinks);
	printf("build: %.3f s\n", t1 - t0);
	printf("route %ld random pairs: %.3f s (%.0f ns per route, mean %.2f hops, checksum %lld)\n",
	       pairs, t2 - t1, (t2 - t1) / (double)pairs * 1e9, (double)hops / (double)pairs,
	       checksum);
	printf("total wall time: %.3f s\n", t2 - t0);
	printf("peak memory (ru_maxrss): %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
	rng_release(&g);
	topo_release(&t);
	return 0;
}

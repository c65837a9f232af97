/* bench_sim_packet.c: packet-level speed: a ring allreduce on N hosts (one
 * GPU and one NIC each) of a fat-tree, timed on one core (the simulator is
 * single-threaded); prints packet-hop events per second (target >= 10
 * million), engine events per second, wall and CPU time of sim_run, peak
 * RSS, and the same allreduce at flow level for comparison. Each level
 * runs in a forked process of its own, so its peak RSS is its own (found by
 * review: the packet run's included the flow run before it).
 *
 * A packet-hop event is one packet crossing one link: the packet model's
 * counter sim_net_stats.pkt_hops, incremented once per packet per link when
 * its transmission on that link ends (every link of the path counts, the
 * intra-host PCIe ones included; a packet dropped by TCP counts the links it
 * crossed; a retransmission counts again). The count is fixed by the
 * workload, not by how the model schedules its work: 441,122,816 for the
 * default run, before and after the engine and model changes of issue 3.
 * Rates divide it by the wall time of sim_run (and, in brackets, by its
 * CPU time: wall time is noisy on a shared machine).
 *   bench_sim_packet [cluster] [size_bytes] [ranks]
 * Default: examples/clusters/fat-tree-k8.json (128 hosts; run from the
 * source root), 1 GiB. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/rng.h"
#include "sim/sim.h"
#include "topo/topo.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this process (user + system), s. */
static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* count / seconds in millions per second (0 when no time was measured). */
static double mps(double count, double s)
{
	return s > 0 ? count / s / 1e6 : 0;
}

static void on_done(void *ctx, struct sim_coll *c)
{
	(*(int *)ctx)++;
	(void)c;
}

static int one(const struct topo *t, enum sim_fidelity fid, double size, int n)
{
	struct ts_error err = TS_ERROR_INIT;
	struct sim_engine e;
	struct sim_net net;
	struct sim_coll_spec sp;
	struct sim_coll *c;
	int32_t *ranks = malloc((size_t)n * sizeof(int32_t));
	double t0, t1, c0, c1;
	int i, ndone = 0;
	struct rusage ru;
	if (!ranks)
		return 2;
	for (i = 0; i < n; i++)
		ranks[i] = i;
	sim_engine_init(&e);
	if (sim_net_init_topo(&net, &e, fid, t, &err))
		goto fail;
	sim_coll_spec_init(&sp);
	sp.algo = SIM_ALGO_RING;
	sp.proto = SIM_PROTO_SIMPLE;
	sp.size_bytes = size;
	sp.nranks = n;
	sp.ranks = ranks;
	sp.hash = 1;
	if (sim_coll_start(&net, t, &sp, on_done, &ndone, &c, &err))
		goto fail;
	c0 = cpu_s();
	t0 = now_s();
	sim_run(&e, TS_SIMTIME_MAX);
	t1 = now_s();
	c1 = cpu_s();
	getrusage(RUSAGE_SELF, &ru);
	printf("%s level: ring allreduce of %.0f bytes on %d ranks\n",
	       fid == SIM_PACKET ? "packet" : "flow", size, n);
	printf("  simulated time       %.3f ms (busbw %.2f GB/s)\n",
	       time_to_s(sim_coll_end_time(c)) * 1e3,
	       size / time_to_s(sim_coll_end_time(c)) / 1e9 * 2.0 * (n - 1) / n);
	printf("  wall                 %.2f s (CPU %.2f s)\n", t1 - t0, c1 - c0);
	printf("  engine events        %llu (%.2f M/s [%.2f M/s CPU])\n", (unsigned long long)e.fired,
	       mps((double)e.fired, t1 - t0), mps((double)e.fired, c1 - c0));
	if (fid == SIM_PACKET)
		printf("  packet-hop events    %llu (%.2f M/s [%.2f M/s CPU]; target >= 10 M/s)\n",
		       (unsigned long long)net.st.pkt_hops, mps((double)net.st.pkt_hops, t1 - t0),
		       mps((double)net.st.pkt_hops, c1 - c0));
	printf("  peak RSS             %.1f MiB\n", ru.ru_maxrss / 1024.0);
	sim_coll_free(c);
	sim_net_release(&net);
	sim_engine_release(&e);
	free(ranks);
	return ndone == 1 ? 0 : 1;
fail:
	fprintf(stderr, "bench_sim_packet: %s\n", err.msg);
	free(ranks);
	return 2;
}

/* one() in a forked process: its exit status, 2 when it could not run. */
static int one_apart(const struct topo *t, enum sim_fidelity fid, double size, int n)
{
	int st = 0;
	pid_t pid;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("bench_sim_packet: fork");
		return 2;
	}
	if (pid == 0) {
		int rc = one(t, fid, size, n);
		fflush(stdout);
		_exit(rc);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st)) {
		if (WIFSIGNALED(st))
			fprintf(stderr, "bench_sim_packet: the %s run was killed by signal %d\n",
				fid == SIM_PACKET ? "packet" : "flow", WTERMSIG(st));
		return 2;
	}
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	const char *cluster = argc > 1 ? argv[1] : "examples/clusters/fat-tree-k8.json";
	double size = argc > 2 ? atof(argv[2]) : 1073741824.0;
	struct topo_cluster cl;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int n, rc;
	if (topo_cluster_load(&cl, cluster, 0, &err) || topo_build(&t, &cl, &err)) {
		fprintf(stderr, "bench_sim_packet: %s\n", err.msg);
		return 2;
	}
	n = argc > 3 ? atoi(argv[3]) : (int)t.ngpus;
	printf("bench_sim_packet: %s (%d GPUs)\n", cluster, (int)t.ngpus);
	rc = one_apart(&t, SIM_FLOW, size, n);
	if (!rc)
		rc = one_apart(&t, SIM_PACKET, size, n);
	topo_release(&t);
	topo_cluster_release(&cl);
	return rc;
}

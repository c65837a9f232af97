/* test_sim_coll.c: collectives on real topologies: the ring closed form on
 * a non-blocking switch, the maintainers' busbw figures for the presets,
 * oversubscription and rail alignment, conservation, determinism, packet
 * vs flow, and the "cannot run" errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "sim/sim.h"
#include "topo/topo.h"
#include "testutil.h"

struct world {
	struct topo_cluster cl;
	struct topo t;
};

static void world_open(struct world *w, const char *cluster, int nodes, const char *placement,
		       uint64_t seed)
{
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_msg(topo_cluster_load(&w->cl, cluster, nodes, &err) == 0, "%s", err.msg);
	w->cl.seed = seed;
	if (placement)
		ck_assert_msg(topo_placement_parse(&w->cl, placement, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&w->t, &w->cl, &err) == 0, "%s", err.msg);
}

static void world_close(struct world *w)
{
	topo_release(&w->t);
	topo_cluster_release(&w->cl);
}

struct runres {
	double time_s;          /* first start to last end */
	double bytes_sent;      /* network payload handed in (wire bytes) */
	double bytes_delivered; /* network bytes arrived */
	double coll_bytes;      /* collective payload moved (sum over groups) */
	uint64_t solves;        /* flow: max-min re-solves */
	uint64_t xfers;         /* transfers started */
};

/* flow: sim_net_params.coalesce for run_ex (0: exact, the library's default) */
static double g_coalesce;
/* chunks of a chain or tree (sim_coll_spec.chunks; 0: NCCL's) */
static int32_t g_chunks;

static void on_done(void *ctx, struct sim_coll *c)
{
	int *n = ctx;
	(*n)++;
	(void)c;
}

/* Run G groups (group g = ranks g, g+G, ...) of n ranks at once; rings of
 * more than coupled_above ranks run coupled (-1: the default). */
static struct runres run_ex(const struct topo *t, enum sim_fidelity fid, enum sim_op op,
			    enum sim_algo algo, enum sim_proto proto, double size, int G, int n,
			    bool spray, uint64_t seed, int32_t coupled_above)
{
	struct sim_engine e;
	struct sim_net net;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec *sp = calloc((size_t)G, sizeof(*sp));
	struct sim_coll **cs = calloc((size_t)G, sizeof(*cs));
	int32_t *ranks = malloc((size_t)G * (size_t)n * sizeof(int32_t));
	struct runres r;
	int g, j, ndone = 0;
	simtime_ps end = 0;
	memset(&r, 0, sizeof(r));
	ck_assert(sp && cs && ranks);
	sim_engine_init(&e);
	ck_assert_msg(sim_net_init_topo(&net, &e, fid, t, &err) == 0, "%s", err.msg);
	net.par.spray = spray;
	net.par.coalesce = g_coalesce;
	if (coupled_above >= 0)
		net.par.ring_coupled_above = coupled_above;
	for (g = 0; g < G; g++) {
		for (j = 0; j < n; j++)
			ranks[g * n + j] = g + j * G;
		sim_coll_spec_init(&sp[g]);
		sp[g].op = op;
		sp[g].algo = algo;
		sp[g].proto = proto;
		sp[g].size_bytes = size;
		sp[g].nranks = n;
		sp[g].ranks = ranks + g * n;
		sp[g].hash = rng_hash2(seed, (uint64_t)g);
		sp[g].chunks = g_chunks;
		/* AUTO is resolved by sim_coll_start (NCCL's cost model) */
		ck_assert_msg(sim_coll_start(&net, t, &sp[g], on_done, &ndone, &cs[g], &err) == 0, "%s",
			      err.msg);
		ck_assert(sim_coll_algo(cs[g]) != SIM_ALGO_AUTO && sim_coll_proto(cs[g]) != SIM_PROTO_AUTO);
	}
	sim_run(&e, TS_SIMTIME_MAX);
	ck_assert_int_eq(ndone, G);
	for (g = 0; g < G; g++) {
		if (sim_coll_end_time(cs[g]) > end)
			end = sim_coll_end_time(cs[g]);
		r.coll_bytes += sim_coll_bytes(cs[g]);
		sim_coll_free(cs[g]);
	}
	r.time_s = time_to_s(end);
	r.bytes_sent = net.st.bytes_sent;
	r.bytes_delivered = net.st.bytes_delivered;
	r.solves = net.st.recomputes;
	r.xfers = net.st.xfers_started;
	sim_net_release(&net);
	sim_engine_release(&e);
	free(sp);
	free(cs);
	free(ranks);
	return r;
}

static struct runres run(const struct topo *t, enum sim_fidelity fid, enum sim_op op,
			 enum sim_algo algo, enum sim_proto proto, double size, int G, int n,
			 bool spray, uint64_t seed)
{
	return run_ex(t, fid, op, algo, proto, size, G, n, spray, seed, -1);
}

static double busbw_GBps(enum sim_op op, int n, double size, double t_s)
{
	return size / t_s / 1e9 * sim_busbw_factor(op, n);
}

/* One GPU per node, every NIC on one non-blocking switch (InfiniBand NDR). */
static const char *switch_cluster(void)
{
	return tu_tmpfile(0, ".json",
			  "{\"name\": \"switch64\", \"preset\": \"dgx-h100-ndr\",\n"
			  " \"node\": {\"gpus\": 1, \"nics\": 1},\n"
			  " \"fabric\": {\"type\": \"switch\", \"rails\": false}, \"nodes\": 64}\n");
}

/* ---- the closed form ---------------------------------------------------------- */

/* The bottleneck rate B of the route between ranks 0 and 1 (its NIC, times
 * its payload fraction mtu/(mtu + overhead): hardware.md "Packets and
 * MTU") and its propagation, s. */
static void route_rate(const struct topo *t, double *B, double *prop)
{
	int32_t path[TOPO_MAX_HOPS];
	int h = topo_route(t, t->rank_gpu[0], t->rank_gpu[1], 0, path);
	*B = INFINITY;
	*prop = 0;
	ck_assert_int_gt(h, 0);
	for (int q = 0; q < h; q++) {
		const struct topo_link *l = &t->links[path[q]];
		double eff = l->mtu_bytes > 0 && l->kind == TOPO_L_NET
				     ? (double)l->mtu_bytes / (l->mtu_bytes + l->overhead_bytes)
				     : 1.0;
		if (l->bw_Bps * eff < *B)
			*B = l->bw_Bps * eff;
		*prop += time_to_s(l->lat_ps);
	}
}

START_TEST(ring_closed_form_switch)
{
	static const int ns[3] = { 2, 8, 64 };
	struct world w;
	int k;
	world_open(&w, switch_cluster(), 64, NULL, 1);
	for (k = 0; k < 3; k++) {
		int n = ns[k];
		double S, B, prop;
		/* B: the bottleneck link of the route (NIC) at its payload rate;
		 * alpha: NCCL's Ring/Simple NET latency 14 µs (nccl.md §1.3) plus
		 * the route's propagation; NCCL's base latency 8.4 µs once. */
		route_rate(&w.t, &B, &prop);
		for (S = TS_MiB; S <= 4 * TS_GiB; S *= 4) {
			double alpha = 14e-6 + prop;
			double want = 8.4e-6 + 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
			struct runres r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING,
					      SIM_PROTO_SIMPLE, S, 1, n, false, 1);
			ck_assert_msg(fabs(r.time_s / want - 1) < 0.01,
				      "n=%d S=%.0f: simulated %.6g s, closed form %.6g s", n, S, r.time_s,
				      want);
			/* each rank moves 2(n-1) chunks of S/n */
			ck_assert_double_eq_tol(r.coll_bytes, 2.0 * (n - 1) * S, S * 1e-9);
			ck_assert_double_eq_tol(r.bytes_sent, r.bytes_delivered, 1e-3);
		}
	}
	world_close(&w);
}
END_TEST

/* Recursive halving-doubling against its closed form on the same switch
 * (found by an audit: only the ring had one, and an all-gather phase at
 * twice its bytes passed): log2 n halving steps of S/2, S/4, ... S/n and
 * as many doubling steps back, 2(n-1)/n S a rank, each step paying the
 * ring's per-step alpha. */
START_TEST(rhd_closed_form_switch)
{
	static const int ns[3] = { 2, 8, 64 };
	struct world w;
	world_open(&w, switch_cluster(), 64, NULL, 1);
	for (int k = 0; k < 3; k++) {
		int n = ns[k], steps = 0;
		double B, prop;
		for (int m = n; m > 1; m /= 2)
			steps++;
		route_rate(&w.t, &B, &prop);
		for (double S = 16 * TS_MiB; S <= 4 * TS_GiB; S *= 16) {
			double want = 8.4e-6 + 2.0 * (n - 1) / n * S / B + 2.0 * steps * (14e-6 + prop);
			struct runres r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RHD,
					      SIM_PROTO_SIMPLE, S, 1, n, false, 1);
			ck_assert_msg(fabs(r.time_s / want - 1) < 0.01,
				      "n=%d S=%.0f: rhd %.6g s, closed form %.6g s", n, S, r.time_s, want);
			ck_assert_msg(fabs(r.coll_bytes / (2.0 * (n - 1) * S) - 1) < 1e-9,
				      "n=%d: rhd moved %.6g bytes, want 2(n-1) S = %.6g", n, r.coll_bytes,
				      2.0 * (n - 1) * S);
		}
	}
	world_close(&w);
}
END_TEST

/* A ring op over ranks 0..n-1 of cluster (nodes nodes): its analytic time
 * and its flow-level time, s. */
static void ring_analytic_flow(const char *cluster, int nodes, int n, enum sim_op op,
			       enum sim_proto proto, double size, double *ta, double *tf)
{
	struct world w;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec s;
	int32_t *ranks = malloc((size_t)n * sizeof(int32_t));
	ck_assert(ranks);
	world_open(&w, cluster, nodes, NULL, 1);
	for (int i = 0; i < n; i++)
		ranks[i] = i;
	sim_coll_spec_init(&s);
	s.op = op;
	s.algo = SIM_ALGO_RING;
	s.proto = proto;
	s.size_bytes = size;
	s.nranks = n;
	s.ranks = ranks;
	ck_assert_msg(sim_coll_analytic(&w.t, &s, ta, &err) == 0, "%s", err.msg);
	*tf = run(&w.t, SIM_FLOW, op, SIM_ALGO_RING, proto, size, 1, n, false, 1).time_s;
	world_close(&w);
	free(ranks);
}

START_TEST(analytic_matches_flow_on_switch)
{
	double ta, tf;
	ring_analytic_flow(switch_cluster(), 64, 16, SIM_OP_ALLREDUCE, SIM_PROTO_SIMPLE, 256 * TS_MiB,
			   &ta, &tf);
	ck_assert_msg(fabs(ta / tf - 1) < 0.01, "analytic %g flow %g", ta, tf);
}
END_TEST

/* PCIe links inside a node: the analytic model prices them as the flow model
 * does, TLP framing off the rate (found by review: analytic gave the raw 32
 * GB/s, 9 % fast, 31.98 against the flow level's 29.24 GB/s busbw). */
START_TEST(analytic_matches_flow_on_pcie)
{
	double ta, tf;
	/* one node of the preset: 2 GPUs on PCIe */
	ring_analytic_flow("pcie-2x2-tcp", 1, 2, SIM_OP_ALLREDUCE, SIM_PROTO_SIMPLE, 256 * TS_MiB, &ta,
			   &tf);
	ck_assert_msg(fabs(ta / tf - 1) < 0.005, "analytic %g flow %g", ta, tf);
}
END_TEST

/* A connection's next chunk goes once the last byte of its previous one
 * has left, not once it has arrived (NCCL keeps up to 8 steps of a
 * connection in flight): a latency-bound ring pays the latencies along a
 * chunk's journey, as NCCL's model (the analytic level) counts them, not
 * its slowest edge's at every step. With 10 us links, a 4 KiB ring
 * all-reduce over 4 nodes of the 2:1 leaf-spine (32 ranks, 62 steps) took
 * 1330.6 us at flow and packet level when each send waited for the last
 * one's arrival, against 481.2 us analytic (found by review). */
START_TEST(ring_sends_do_not_wait_for_arrival)
{
	const char *cl = tu_tmpfile(0, ".json",
				    "{\"name\": \"long-links\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
				    " \"fabric\": {\"link_latency\": \"10us\"}, \"nodes\": 4}\n");
	struct world w;
	double ta, tf, tp;
	ring_analytic_flow(cl, 4, 32, SIM_OP_ALLREDUCE, SIM_PROTO_SIMPLE, 4096, &ta, &tf);
	world_open(&w, cl, 4, NULL, 1);
	tp = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 4096, 1, 32,
		 false, 1).time_s;
	world_close(&w);
	ck_assert_msg(ta > 300e-6, "analytic %g s: the links' latency should dominate", ta);
	ck_assert_msg(fabs(tf / ta - 1) < 0.03, "flow %g s, analytic %g s", tf, ta);
	ck_assert_msg(fabs(tp / ta - 1) < 0.03, "packet %g s, analytic %g s", tp, ta);
}
END_TEST

/* A 64 MiB Simple broadcast chain over ranks 0-15, one channel. */
static void chain_spec(struct sim_coll_spec *sp, int32_t ranks[16])
{
	for (int i = 0; i < 16; i++)
		ranks[i] = i;
	sim_coll_spec_init(sp);
	sp->op = SIM_OP_BROADCAST;
	sp->algo = SIM_ALGO_RING;
	sp->proto = SIM_PROTO_SIMPLE;
	sp->size_bytes = 64 * TS_MiB;
	sp->nranks = 16;
	sp->ranks = ranks;
	sp->channels = 1;
}

/* A chain's or tree's data is cut as NCCL's loops cut it: whole chunks and
 * the rest, so on one channel 4 more bytes are not faster (found by review:
 * equal chunks made 512 KiB + 4 a channel two pipelined chunks, a broadcast
 * over 8 H100s 32.70 -> 24.51 us at flow level, a 2-node LL tree 50.43 ->
 * 41.52 us); a connection's next chunk goes once the last has left, so its
 * path latency is paid once, not per chunk (the analytic chain of 64
 * chunks of a 64 MiB Simple broadcast over two 2:1 leaf-spine nodes with
 * 10 us links took their 64 path latencies); and a connection has
 * RING_SLOTS slots (found by review: with 100 us links a 64 MiB chain had
 * some 16 chunks in flight, 1660 us at flow level, where 8 a round trip of
 * over 400 us take over 2.8 ms). */
/* A long chain is cut into NCCL's chunks, not at most 64 (found by review
 * and left, then by an audit: at 64 chunks a 1 GiB broadcast over 8 DGX
 * H100 nodes paid its 63 hops' fill in 2 MiB chunks, 4290 us at flow
 * level against 3306 us in NCCL's 256 chunks of 512 KiB a channel, and
 * 3032 us analytic). */
START_TEST(long_chains_in_nccl_chunks)
{
	struct world w;
	double t_nccl, t_def, t64;
	world_open(&w, "dgx-h100-ndr", 8, NULL, 1);
	t_def = run(&w.t, SIM_FLOW, SIM_OP_BROADCAST, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 1, 64,
		    false, 1).time_s;
	g_chunks = 256; /* 1 GiB / 8 channels / 512 KiB */
	t_nccl = run(&w.t, SIM_FLOW, SIM_OP_BROADCAST, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 1, 64,
		     false, 1).time_s;
	g_chunks = 64;
	t64 = run(&w.t, SIM_FLOW, SIM_OP_BROADCAST, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 1, 64,
		  false, 1).time_s;
	g_chunks = 0;
	world_close(&w);
	ck_assert_msg(fabs(t_def / t_nccl - 1) < 1e-9, "default %.2f us, NCCL's 256 chunks %.2f us",
		      t_def * 1e6, t_nccl * 1e6);
	ck_assert_msg(t64 > 1.2 * t_nccl, "64 chunks %.2f us, 256 %.2f us: the fill should show",
		      t64 * 1e6, t_nccl * 1e6);
}
END_TEST

/* A tree's chunks: NCCL's (512 KiB) while the operation's trees add up to
 * at most 2^20 transfers, at least 64: a 1 GiB all-reduce over 8 DGX H100
 * nodes is 16 trees (2 a channel) of 64 MiB, 128 chunks each, up and down
 * 63 edges; over 64 single-GPU nodes (one channel, 2 trees) 8 GiB would be
 * 8,192 chunks a tree, and the budget keeps 2^20 / (2 x 2 x 63) = 4,161. */
START_TEST(trees_in_nccl_chunks)
{
	struct world w;
	struct runres d, n, c;
	double t64;
	world_open(&w, "dgx-h100-ndr", 8, NULL, 1);
	d = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL128, TS_GiB, 1, 64, false,
		1);
	g_chunks = 128;
	n = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL128, TS_GiB, 1, 64, false,
		1);
	g_chunks = 64;
	t64 = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL128, TS_GiB, 1, 64,
		  false, 1).time_s;
	g_chunks = 0;
	world_close(&w);
	ck_assert_msg(d.xfers == 2 * 16 * 63 * 128ull, "%llu transfers, NCCL's chunks %llu",
		      (unsigned long long)d.xfers, 2 * 16 * 63 * 128ull);
	ck_assert_msg(fabs(d.time_s / n.time_s - 1) < 1e-9, "default %.2f us, NCCL's 128 chunks %.2f us",
		      d.time_s * 1e6, n.time_s * 1e6);
	ck_assert_msg(t64 > 1.02 * n.time_s, "64 chunks %.2f us, 128 %.2f us: the fill should show",
		      t64 * 1e6, n.time_s * 1e6);
	world_open(&w, switch_cluster(), 64, NULL, 1);
	c = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_SIMPLE, 8 * TS_GiB, 1, 64,
		false, 1);
	world_close(&w);
	ck_assert_msg(c.xfers == 2 * 2 * 63 * 4161ull, "%llu transfers, the budget's %llu",
		      (unsigned long long)c.xfers, 2 * 2 * 63 * 4161ull);
}
END_TEST

START_TEST(chunks_cut_as_nccl_loops)
{
	const char *cl = tu_tmpfile(0, ".json",
				    "{\"name\": \"long-links\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
				    " \"fabric\": {\"link_latency\": \"10us\"}, \"nodes\": 2}\n");
	struct world w;
	static const enum sim_proto protos[] = { SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE };
	world_open(&w, "dgx-h100-ndr", 2, NULL, 1);
	for (int i = 0; i < 3; i++)
		for (int tree = 0; tree < 2; tree++) {
			enum sim_op op = tree ? SIM_OP_ALLREDUCE : SIM_OP_BROADCAST;
			enum sim_algo al = tree ? SIM_ALGO_TREE : SIM_ALGO_RING;
			int n = tree ? 16 : 8; /* the tree over 2 nodes, the chain in one */
			double a = run(&w.t, SIM_FLOW, op, al, protos[i], 524288, 1, n, false, 1).time_s;
			double b = run(&w.t, SIM_FLOW, op, al, protos[i], 524292, 1, n, false, 1).time_s;
			ck_assert_msg(b >= a * (1 - 1e-9), "%s %s: %.3f us at 512 KiB, %.3f us at 4 B more",
				      sim_op_name(op), sim_proto_name(protos[i]), a * 1e6, b * 1e6);
		}
	world_close(&w);
	world_open(&w, cl, 2, NULL, 1);
	{
		int32_t ranks[16];
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		double t8, t64;
		chain_spec(&sp, ranks); /* 1 MiB chunks: 7 on the wire outlast a round trip */
		sp.chunks = 8;
		ck_assert_msg(sim_coll_analytic(&w.t, &sp, &t8, &err) == 0, "%s", err.msg);
		sp.chunks = 64;
		ck_assert_msg(sim_coll_analytic(&w.t, &sp, &t64, &err) == 0, "%s", err.msg);
		/* the same bytes on the same links; a chunk's journey the same */
		ck_assert_msg(fabs(t64 / t8 - 1) < 1e-9, "analytic chain: %.3f us in 8 chunks, %.3f in 64",
			      t8 * 1e6, t64 * 1e6);
	}
	world_close(&w);
	{
		const char *cl100 = tu_tmpfile(1, ".json",
					       "{\"name\": \"longer-links\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
					       " \"fabric\": {\"link_latency\": \"100us\"}, \"nodes\": 2}\n");
		int32_t ranks[16], p[TOPO_MAX_HOPS];
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		double ta, rtt = 0;
		struct sim_engine e;
		struct sim_net net;
		struct sim_coll *c;
		int done = 0, h;
		world_open(&w, cl100, 2, NULL, 1);
		h = topo_route(&w.t, 7, 8, 1, p); /* the chain's hop across the nodes */
		ck_assert_int_gt(h, 0);
		for (int j = 0; j < h; j++)
			rtt += 2 * time_to_s(w.t.links[p[j]].lat_ps);
		ck_assert_double_ge(rtt, 400e-6);
		chain_spec(&sp, ranks); /* 64 chunks of 1 MiB */
		ck_assert_msg(sim_coll_analytic(&w.t, &sp, &ta, &err) == 0, "%s", err.msg);
		sim_engine_init(&e);
		ck_assert_msg(sim_net_init_topo(&net, &e, SIM_FLOW, &w.t, &err) == 0, "%s", err.msg);
		ck_assert_msg(sim_coll_start(&net, &w.t, &sp, on_done, &done, &c, &err) == 0, "%s",
			      err.msg);
		sim_run(&e, TS_SIMTIME_MAX);
		ck_assert_int_eq(done, 1);
		{
			double tf = time_to_s(sim_coll_end_time(c));
			ck_assert_msg(tf >= 7 * rtt, "flow %.1f us, under 7 round trips of %.1f us",
				      tf * 1e6, rtt * 1e6);
			ck_assert_msg(fabs(ta / tf - 1) < 0.03, "analytic %.1f us, flow %.1f us", ta * 1e6,
				      tf * 1e6);
		}
		sim_coll_free(c);
		sim_net_release(&net);
		sim_engine_release(&e);
		world_close(&w);
	}
}
END_TEST

/* A connection has RING_SLOTS (8) buffer slots at its receiver; a freed
 * slot's credit takes a path latency back, so a connection moves at most 8
 * chunks a round trip. Two 16-GPU nodes on one leaf with 100 us links (a
 * path through the leaf, over 200 us each way): 62 steps of a 32-rank all-reduce
 * cross the network edge, 8 per round trip, so the ring takes at least
 * 7 round trips (over 2.8 ms) whatever its size. Found by review: with no
 * window, 1.083 ms (16 chunks in flight on the network edge). */
START_TEST(ring_connection_has_eight_slots)
{
	const char *cl = tu_tmpfile(0, ".json",
				    "{\"name\": \"long-links-16\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
				    " \"fabric\": {\"link_latency\": \"100us\"},\n"
				    " \"node\": {\"gpus\": 16, \"nics\": 16}, \"nodes\": 2}\n");
	struct world w;
	double tf, tp, rtt = 0;
	int32_t p[TOPO_MAX_HOPS];
	world_open(&w, cl, 2, NULL, 1);
	{
		int h = topo_route(&w.t, 15, 16, 1, p);
		ck_assert_int_gt(h, 0);
		for (int j = 0; j < h; j++)
			rtt += 2 * time_to_s(w.t.links[p[j]].lat_ps);
	}
	ck_assert_double_ge(rtt, 400e-6);
	tf = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 4, 1, 32, false, 1)
		     .time_s;
	tp = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 4, 1, 32, false, 1)
		     .time_s;
	world_close(&w);
	ck_assert_msg(tf >= 7 * rtt, "flow %g s, under 7 round trips of %g s", tf, rtt);
	ck_assert_msg(fabs(tp / tf - 1) < 0.01, "packet %g s, flow %g s", tp, tf);
}
END_TEST

/* NCCL's ring latency per step (nccl.md §1.4): Tree's network row with one
 * rank per node, and at least the network's post overhead (1 us, x 3 for
 * Simple) inside a node once the ring crosses nodes (found by review: Ring's
 * NET row, 2.7 us for LL, and the bare 0.6 us NVLink step were used). */
START_TEST(ring_latency_as_nccl)
{
	double ta, tf, want = 6.6 + 15 * 5.0;
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NET, SIM_PROTO_LL, 16, 1, TOPO_CPU_INTEL), 5.0);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NET, SIM_PROTO_LL128, 16, 1, TOPO_CPU_INTEL), 8.5);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NET, SIM_PROTO_LL, 2, 8, TOPO_CPU_INTEL), 2.7);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_LL, 2, 8, TOPO_CPU_INTEL), 1.0);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_LL, 1, 8, TOPO_CPU_INTEL), 0.6);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_SIMPLE, 2, 8, TOPO_CPU_INTEL), 3.4);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_PCI, SIM_PROTO_SIMPLE, 2, 2, TOPO_CPU_INTEL), 5.7);
	/* on AMD hosts the overhead is 2 us (node.cpu; found by review: Intel's
	 * 1 us was taken for every host, though DGX A100 has AMD CPUs) */
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_LL, 2, 8, TOPO_CPU_AMD), 2.0);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_SIMPLE, 2, 8, TOPO_CPU_AMD),
			    6.0);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_LL, 1, 8, TOPO_CPU_AMD), 0.6);
	ck_assert_double_eq(sim_nccl_ring_hop_lat_us(SIM_HW_NVLINK, SIM_PROTO_LL, 2, 8, TOPO_CPU_ARM), 1.0);
	/* a 64-byte all-gather over 16 one-GPU nodes: NCCL's 6.6 + 15 x 5.0 us
	 * plus the links' own latency (under 1.5 us a hop here) */
	ring_analytic_flow(switch_cluster(), 64, 16, SIM_OP_ALLGATHER, SIM_PROTO_LL, 64, &ta, &tf);
	ck_assert_msg(ta * 1e6 >= want && ta * 1e6 < want + 15 * 1.5, "analytic %.2f us, NCCL %.1f us",
		      ta * 1e6, want);
	ck_assert_msg(fabs(ta / tf - 1) < 0.01, "analytic %g flow %g", ta, tf);
}
END_TEST

/* One collective alone on a flow-level network: its time and payload. */
static void flow_one(const struct topo *t, const struct sim_coll_spec *s, double *time_s,
		     double *bytes)
{
	struct ts_error err = TS_ERROR_INIT;
	struct sim_engine e;
	struct sim_net net;
	struct sim_coll *c;
	int done = 0;
	sim_engine_init(&e);
	ck_assert_msg(sim_net_init_topo(&net, &e, SIM_FLOW, t, &err) == 0, "%s", err.msg);
	net.par.coalesce = g_coalesce;
	ck_assert_msg(sim_coll_start(&net, t, s, on_done, &done, &c, &err) == 0, "%s", err.msg);
	sim_run(&e, TS_SIMTIME_MAX);
	ck_assert_int_eq(done, 1);
	*time_s = time_to_s(sim_coll_end_time(c));
	*bytes = sim_coll_bytes(c);
	sim_coll_free(c);
	sim_net_release(&net);
	sim_engine_release(&e);
}

/* alltoallv (a MoE dispatch with uneven expert loads): with per-member
 * weights, i sends j size/n x w[j] (by receiver) or x w[i] (by sender). On
 * a non-blocking switch with one NIC per GPU the busiest member's port sets
 * the bandwidth term: member 0 at weight 3 and seven at 1 receives (or
 * sends) 7 x 3 size/8 against 7 x size/8 uniform, three times the bytes, in
 * the analytic model and in the flow model alike; the payload is the sum of
 * the weighted pairs. */
/* The compiled all-to-all (sim_a2a) gives sim_coll_analytic_groups' time
 * for any weights: 16 concurrent EP groups of 16 ranks across the nodes
 * of a 3-tier fat tree (ECMP paths, shared spines), by sender and by
 * receiver, hashed and sprayed, random loads with some members at zero,
 * and the uniform case. */
START_TEST(a2a_compiled_matches_analytic)
{
	struct world w;
	struct ts_error err = TS_ERROR_INIT;
	enum { G = 16, N = 16 };
	struct sim_coll_spec sp[G];
	int32_t ranks[G * N];
	double wt[G * N], *scratch;
	struct sim_a2a a;
	uint64_t rs = 12345;
	world_open(&w, "dgx-a100-hdr", 32, NULL, 1);
	for (int by = 0; by < 4; by++) { /* by sender (odd), sprayed (>= 2) */
		bool spray = by >= 2;
		for (int g = 0; g < G; g++) {
			sim_coll_spec_init(&sp[g]);
			sp[g].op = SIM_OP_ALLTOALL;
			sp[g].algo = SIM_ALGO_DIRECT;
			sp[g].proto = SIM_PROTO_SIMPLE;
			sp[g].size_bytes = 64e6;
			sp[g].nranks = N;
			sp[g].ranks = ranks + g * N;
			sp[g].weight_by_sender = by % 2;
			sp[g].hash = rng_hash2(7, (uint64_t)g);
			for (int i = 0; i < N; i++) /* group g: ranks g, g + G, ...: 16 nodes each */
				ranks[g * N + i] = g + G * i;
		}
		ck_assert_msg(sim_a2a_compile(&w.t, sp, G, spray, &a, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(a.nmem, G * N);
		scratch = malloc((size_t)a.nlinks * sizeof(double));
		ck_assert_ptr_nonnull(scratch);
		for (int trial = 0; trial < 6; trial++) {
			double want, got;
			for (int m = 0; m < G * N; m++) {
				rs = rng_hash64(rs + (uint64_t)m);
				wt[m] = trial == 0 ? 1 : (rs % 7 == 0 ? 0 : (double)(rs % 1000) / 250.0);
			}
			for (int g = 0; g < G; g++)
				sp[g].weights = wt + g * N;
			ck_assert_msg(sim_coll_analytic_groups(&w.t, sp, G, spray, &want, &err) == 0, "%s",
				      err.msg);
			got = sim_a2a_time(&a, wt, 64e6, scratch);
			ck_assert_msg(fabs(got / want - 1) < 1e-12, "by %s%s trial %d: compiled %.12g s, "
				      "analytic %.12g s", by % 2 ? "sender" : "receiver",
				      spray ? ", sprayed" : "", trial, got, want);
			for (int g = 0; g < G; g++)
				sp[g].weights = NULL;
		}
		free(scratch);
		sim_a2a_release(&a);
	}
	/* not a direct all-to-all: not compiled */
	sp[0].op = SIM_OP_ALLREDUCE;
	sp[0].algo = SIM_ALGO_RING;
	ck_assert_int_eq(sim_a2a_compile(&w.t, sp, 1, false, &a, &err), 1);
	world_close(&w);
}
END_TEST

/* NCCL's PXN: a point-to-point transfer to another node's GPU on another
 * rail crosses NVLink to the sender's GPU on that rail and stays on the
 * rail (NVIDIA's NCCL 2.12 all2all article, recalled). EP all-to-alls of
 * 8 ranks, 4 on each of 2 nodes at stride 2 (tp 2 x EP 8), 64 groups on
 * 64 nodes of the rail-optimised leaf-spine: with PXN every NIC carries
 * S/2 and the exchange runs at that bound; without it 3 of 4 transfers
 * cross the spine, where ECMP collides (2.2x the bound). */
START_TEST(pxn_keeps_alltoall_on_rails)
{
	struct world w;
	char list[512 * 5 + 1];
	size_t used = 0;
	int32_t path[TOPO_MAX_HOPS];
	double S = 256.0 * 1024 * 1024, bound;
	int h;
	for (int r = 0; r < 512; r++) { /* group g = ranks g + 64 i: GPU 16 u + 2 i + t */
		int g = r % 64, i = r / 64;
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d", r ? "," : "",
					 16 * (g / 2) + 2 * i + g % 2);
	}
	world_open(&w, "dgx-h100-ndr", 64, list, 1);
	/* GPU 0 (node 0, rail 0) to GPU 11 (node 1, rail 3): through GPU 3 */
	ck_assert_int_eq(sim_pxn_via(&w.t, 0, 11), 3);
	ck_assert_int_eq(sim_pxn_via(&w.t, 0, 8), -1);  /* same rail */
	ck_assert_int_eq(sim_pxn_via(&w.t, 0, 5), -1);  /* same node */
	h = sim_p2p_route(&w.t, 0, 11, 99, 1, 0, path);
	ck_assert_int_gt(h, 2);
	ck_assert_int_eq(w.t.links[path[0]].kind, TOPO_L_NVLINK);
	ck_assert_int_eq(w.t.links[path[1]].kind, TOPO_L_NVLINK);
	for (int k = 2; k < h; k++) /* then GPU 3's NIC, its rail's leaf, no spine */
		ck_assert_int_le(w.t.links[path[k]].tier, 1);
	bound = S / 2 / w.t.cl.node.nic_Bps;
	for (int pxn = 1; pxn >= 0; pxn--) {
		struct runres a;
		w.t.cl.fabric.no_pxn = !pxn;
		a = run(&w.t, SIM_FLOW, SIM_OP_ALLTOALL, SIM_ALGO_DIRECT, SIM_PROTO_SIMPLE, S, 64, 8,
			false, 1);
		if (pxn)
			ck_assert_msg(a.time_s > bound && a.time_s < 1.03 * bound,
				      "PXN: %.6g s, NIC bound %.6g s", a.time_s, bound);
		else
			ck_assert_msg(a.time_s > 1.5 * bound, "no PXN: %.6g s, NIC bound %.6g s",
				      a.time_s, bound);
	}
	/* a cluster file turns it off, as NCCL_PXN_DISABLE=1 */
	world_close(&w);
	{
		struct topo_cluster cl;
		struct ts_error err = TS_ERROR_INIT;
		const char *f = tu_tmpfile(0, ".json",
					   "{\"name\": \"nopxn\", \"preset\": \"dgx-h100-ndr\", "
					   "\"fabric\": {\"pxn\": false}}");
		ck_assert_msg(topo_cluster_load(&cl, f, 2, &err) == 0, "%s", err.msg);
		ck_assert(cl.fabric.no_pxn);
		topo_cluster_release(&cl);
		f = tu_tmpfile(1, ".json", "{\"name\": \"nopxn\", \"preset\": \"dgx-h100-ndr\", "
					   "\"fabric\": {\"pxn\": 1}}");
		ck_assert_int_eq(topo_cluster_load(&cl, f, 2, &err), TS_EINPUT);
		ck_assert_ptr_nonnull(strstr(err.msg, "pxn"));
	}
	/* a route of 12 hops in the fabric leaves no room for PXN's 2 NVLink
	 * hops: the sender's own NIC (found by review: "no route" before) */
	{
		char spec[2048];
		size_t at = (size_t)snprintf(spec, sizeof(spec),
			"{\"name\": \"chain\", \"preset\": \"dgx-h100-ndr\", \"nodes\": 2, "
			"\"node\": {\"gpus\": 8, \"nics\": 2}, \"fabric\": {\"type\": \"explicit\", "
			"\"switches\": [");
		int32_t p2[TOPO_MAX_HOPS];
		for (int i = 0; i < 10; i++)
			at += (size_t)snprintf(spec + at, sizeof(spec) - at,
						 "%s{\"name\": \"s%d\", \"tier\": 1}", i ? ", " : "", i);
		at += (size_t)snprintf(spec + at, sizeof(spec) - at,
					 "], \"links\": [{\"from\": \"host0/nic0\", \"to\": \"s0\"}, "
					 "{\"from\": \"host0/nic1\", \"to\": \"s0\"}, "
					 "{\"from\": \"host1/nic0\", \"to\": \"s9\"}, "
					 "{\"from\": \"host1/nic1\", \"to\": \"s9\"}");
		for (int i = 0; i < 9; i++)
			at += (size_t)snprintf(spec + at, sizeof(spec) - at,
						 ", {\"from\": \"s%d\", \"to\": \"s%d\"}", i, i + 1);
		snprintf(spec + at, sizeof(spec) - at, "]}}");
		world_open(&w, tu_tmpfile(2, ".json", spec), 2, NULL, 1);
		ck_assert_int_ge(sim_pxn_via(&w.t, 0, 12), 0);
		h = sim_p2p_route(&w.t, 0, 12, 5, 1, 0, p2);
		ck_assert_int_eq(h, topo_route(&w.t, 0, 12, 5, path));
		ck_assert_int_le(h, TOPO_MAX_HOPS);
		world_close(&w);
	}
}
END_TEST

START_TEST(alltoallv_follows_weights)
{
	struct world w;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec s;
	int32_t ranks[8];
	double wt[8], S = 64 * TS_MiB, t1, t2, tu, lat;
	world_open(&w, switch_cluster(), 64, NULL, 1);
	for (int i = 0; i < 8; i++) {
		ranks[i] = i;
		wt[i] = i ? 1 : 3;
	}
	sim_coll_spec_init(&s);
	s.op = SIM_OP_ALLTOALL;
	s.algo = SIM_ALGO_DIRECT;
	s.proto = SIM_PROTO_SIMPLE;
	s.nranks = 8;
	s.ranks = ranks;
	s.size_bytes = S;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &t1, &err), 0);
	s.size_bytes = 2 * S;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &t2, &err), 0);
	lat = 2 * t1 - t2; /* the size-independent part */
	tu = t1;
	s.size_bytes = S;
	s.weights = wt;
	for (int by_sender = 0; by_sender < 2; by_sender++) {
		double ta, tf, bytes;
		s.weight_by_sender = by_sender;
		ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &ta, &err), 0);
		ck_assert_msg(fabs((ta - lat) / (tu - lat) - 3) < 0.01, "by %s: %g s vs uniform %g s",
			      by_sender ? "sender" : "receiver", ta, tu);
		flow_one(&w.t, &s, &tf, &bytes);
		ck_assert_msg(fabs(tf / ta - 1) < 0.02, "flow %g s vs analytic %g s", tf, ta);
		ck_assert_double_eq_tol(bytes, S / 8 * 7 * 10, 1e-6 * S);
	}
	/* a member that receives nothing (a weight of 0) sends no empty
	 * transfers: the rest is delivered, in the flow model too */
	wt[0] = 0;
	s.weight_by_sender = false;
	{
		double tf, bytes;
		flow_one(&w.t, &s, &tf, &bytes);
		ck_assert_double_eq_tol(bytes, S / 8 * 7 * 7, 1e-6 * S);
	}
	/* weights are for alltoall only, and finite and non-negative */
	s.op = SIM_OP_ALLGATHER;
	ck_assert_int_eq(sim_coll_check(&w.t, &s, &err), TS_EINPUT);
	s.op = SIM_OP_ALLTOALL;
	wt[3] = -1;
	ck_assert_int_eq(sim_coll_check(&w.t, &s, &err), TS_EINPUT);
	world_close(&w);
}
END_TEST

/* ---- presets vs the maintainers' numbers (nccl.md §2.3) ------------------------- */

START_TEST(h100_nvswitch_ring_and_nvls)
{
	struct world w;
	struct runres r;
	double bb;
	world_open(&w, "dgx-h100-ndr", 1, NULL, 1);
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 1, 8,
		false, 1);
	bb = busbw_GBps(SIM_OP_ALLREDUCE, 8, TS_GiB, r.time_s);
	ck_assert_msg(fabs(bb / 370 - 1) < 0.10, "ring busbw %.1f GB/s, quoted ~370", bb);
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_SIMPLE, 4 * TS_GiB, 1, 8,
		false, 1);
	bb = busbw_GBps(SIM_OP_ALLREDUCE, 8, 4 * TS_GiB, r.time_s);
	ck_assert_msg(fabs(bb / 480 - 1) < 0.10, "nvls busbw %.1f GB/s, quoted ~480", bb);
	/* auto picks NVLS at large sizes, as NCCL does on H100 */
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_AUTO, SIM_PROTO_AUTO, TS_GiB, 1, 8, false,
		1);
	bb = busbw_GBps(SIM_OP_ALLREDUCE, 8, TS_GiB, r.time_s);
	ck_assert_msg(bb > 440, "auto busbw %.1f GB/s: NVLS expected", bb);
	{
		/* and the choice itself: NVLS at 1 GiB, a low-latency protocol at 8 KiB */
		struct ts_error err = TS_ERROR_INIT;
		struct sim_coll_spec sp;
		int32_t ranks[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
		enum sim_algo a;
		enum sim_proto p;
		sim_coll_spec_init(&sp);
		sp.nranks = 8;
		sp.ranks = ranks;
		sp.size_bytes = TS_GiB;
		ck_assert_int_eq(sim_coll_choose(&w.t, &sp, &a, &p, &err), 0);
		ck_assert_int_eq(a, SIM_ALGO_NVLS);
		sp.size_bytes = 8192;
		ck_assert_int_eq(sim_coll_choose(&w.t, &sp, &a, &p, &err), 0);
		ck_assert_int_ne(p, SIM_PROTO_SIMPLE);
	}
	world_close(&w);
}
END_TEST

/* NVLSTree (NCCL's NVLS_TREE): the switch reduces each node's GPUs,
 * each local GPU's shard crosses the nodes on its own NIC's trees, and the
 * switch multicasts it back, pipelined. Each GPU's NVLink carries what
 * NVLS's does on one node, S (1 + 1/8) / 0.85 each way, and at two nodes
 * each NIC only S/8 each way, so the NVLink sets the time: one node's NVLS
 * time plus NVLSTree's network latency of two tree hops (2 x 20.9 us) and
 * the links' own. NCCL picks it across H100 nodes at large sizes; it is
 * not there on one node, without NVLink SHARP, or with one GPU a node. */
static double an_time(const struct topo *t, enum sim_op op, enum sim_algo algo,
		      enum sim_proto proto, double size, int n);

START_TEST(nvls_tree_across_nodes)
{
	struct world w, one, a100;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec sp;
	int32_t ranks[32], pair[2] = { 0, 8 }, odd[3] = { 0, 1, 8 };
	enum sim_algo a;
	enum sim_proto p;
	double S = 512 * TS_MiB, tn, tt, tr;
	struct runres rf;
	world_open(&w, "dgx-h100-ndr", 2, NULL, 1);
	world_open(&one, "dgx-h100-ndr", 1, NULL, 1);
	tn = an_time(&one.t, SIM_OP_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_SIMPLE, S, 8);
	tt = an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE, S, 16);
	tr = an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, S, 16);
	ck_assert_msg(tt > tn + 41.8e-6 && tt < tn + 41.8e-6 + 10e-6,
		      "nvlstree %.2f us, one node's nvls %.2f us", tt * 1e6, tn * 1e6);
	ck_assert_msg(tt < 0.8 * tr, "nvlstree %.2f us, ring %.2f us", tt * 1e6, tr * 1e6);
	/* the flow level runs the chunks' pipeline to about that, and moves
	 * the NVLink bytes and the trees' 2 (nodes - 1) S */
	rf = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE, S, 1, 16,
		 false, 1);
	ck_assert_msg(fabs(rf.time_s / tt - 1) < 0.03, "flow %.2f us, analytic %.2f us",
		      rf.time_s * 1e6, tt * 1e6);
	ck_assert_msg(fabs(rf.bytes_sent / (2 * 8 * 2 * S * (1 + 1.0 / 8) / 0.85 + 2 * S) - 1) < 1e-9,
		      "%.6g bytes on the wire", rf.bytes_sent);
	/* over three nodes (a tree with a leaf of one and an inner node of the
	 * other), and at 64 MiB, where the pipeline's fill (which the analytic
	 * level leaves out) weighs more, flow and analytic within a few per
	 * cent (found by review: in the tree's 512 KiB chunks the flow level
	 * was 14-16 % over at 64 MiB; NVLS's 128 KiB now) */
	{
		struct world w3;
		struct runres r3;
		world_open(&w3, "dgx-h100-ndr", 3, NULL, 1);
		for (int k = 0; k < 4; k++) {
			struct world *ww = k < 2 ? &w3 : &w;
			int n = k < 2 ? 24 : 16;
			double sz = k % 2 ? 64 * TS_MiB : S;
			tt = an_time(&ww->t, SIM_OP_ALLREDUCE, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE, sz, n);
			r3 = run(&ww->t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE,
				 sz, 1, n, false, 1);
			ck_assert_msg(fabs(r3.time_s / tt - 1) < 0.05,
				      "%d ranks, %.0f MiB: flow %.2f us, analytic %.2f us", n,
				      sz / TS_MiB, r3.time_s * 1e6, tt * 1e6);
		}
		world_close(&w3);
	}
	/* NCCL's choice: NVLSTree at 512 MiB over two nodes, not at 64 KiB */
	for (int j = 0; j < 16; j++)
		ranks[j] = j;
	sim_coll_spec_init(&sp);
	sp.nranks = 16;
	sp.ranks = ranks;
	sp.size_bytes = S;
	ck_assert_int_eq(sim_coll_choose(&w.t, &sp, &a, &p, &err), 0);
	ck_assert_int_eq(a, SIM_ALGO_NVLSTREE);
	ck_assert_int_eq(p, SIM_PROTO_SIMPLE);
	sp.size_bytes = 65536;
	ck_assert_int_eq(sim_coll_choose(&w.t, &sp, &a, &p, &err), 0);
	ck_assert_int_ne(a, SIM_ALGO_NVLSTREE);
	/* refused: one node, one GPU a node, uneven nodes, no NVLS, LL */
	sp.algo = SIM_ALGO_NVLSTREE;
	sp.size_bytes = S;
	sp.nranks = 8;
	ck_assert_int_eq(sim_coll_check(&one.t, &sp, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "across nodes"), "%s", err.msg);
	sp.nranks = 2;
	sp.ranks = pair;
	ck_assert_int_eq(sim_coll_check(&w.t, &sp, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "at least 2 ranks on each node"), "%s", err.msg);
	sp.nranks = 3;
	sp.ranks = odd;
	ck_assert_int_eq(sim_coll_check(&w.t, &sp, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "same number"), "%s", err.msg);
	world_open(&a100, "dgx-a100-hdr", 2, NULL, 1);
	sp.nranks = 16;
	sp.ranks = ranks;
	ck_assert_int_eq(sim_coll_check(&a100.t, &sp, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "NVLink SHARP"), "%s", err.msg);
	sp.algo = SIM_ALGO_AUTO;
	ck_assert_int_eq(sim_coll_choose(&a100.t, &sp, &a, &p, &err), 0);
	ck_assert_int_ne(a, SIM_ALGO_NVLSTREE);
	sp.algo = SIM_ALGO_NVLSTREE;
	sp.proto = SIM_PROTO_LL;
	ck_assert_int_ne(sim_coll_choose(&w.t, &sp, &a, &p, &err), 0);
	/* (and the check itself: a caller's LL is not priced) */
	ck_assert_int_eq(sim_coll_check(&w.t, &sp, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "'Simple' only"), "%s", err.msg);
	world_close(&a100);
	world_close(&one);
	world_close(&w);
}
END_TEST

/* NVLSTree's model for groups too large to plan in predict
 * (sim_nvls_tree_model, from the ring's bandwidth time) against its own
 * plan priced at the analytic level: within 3 % where the ring is bound by
 * the NICs (DGX H100, 9 and 16 nodes) and where it is bound by its NVLink
 * hops (24 GPUs and NICs a node; found by review: the ring's NVLink time
 * was taken, 2632 us against the plan's 1843). */
START_TEST(nvls_tree_model_follows_its_plan)
{
	static const struct {
		const char *cluster;
		int nodes, n;
	} c[] = {
		{ "dgx-h100-ndr", 9, 72 },
		{ "dgx-h100-ndr", 16, 128 },
		{ NULL, 3, 72 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct world w;
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		int32_t ranks[128];
		double S = 512 * TS_MiB, t0, tr, tm, tp;
		world_open(&w, c[i].cluster ? c[i].cluster :
			   tu_tmpfile(0, ".json", "{\"preset\": \"dgx-h100-ndr\", \"node\": "
						 "{\"gpus\": 24, \"nics\": 24}}"),
			   c[i].nodes, NULL, 1);
		for (int j = 0; j < c[i].n; j++)
			ranks[j] = j;
		sim_coll_spec_init(&sp);
		sp.op = SIM_OP_ALLREDUCE;
		sp.algo = SIM_ALGO_RING;
		sp.proto = SIM_PROTO_SIMPLE;
		sp.nranks = c[i].n;
		sp.ranks = ranks;
		sp.size_bytes = 1;
		ck_assert_int_eq(sim_coll_analytic(&w.t, &sp, &t0, &err), 0);
		sp.size_bytes = S;
		ck_assert_int_eq(sim_coll_analytic(&w.t, &sp, &tr, &err), 0);
		ck_assert_int_eq(sim_nvls_tree_model(&w.t, &sp, tr - t0, &tm, &err), 0);
		sp.algo = SIM_ALGO_NVLSTREE;
		ck_assert_int_eq(sim_coll_analytic(&w.t, &sp, &tp, &err), 0);
		ck_assert_msg(fabs(tm / tp - 1) < 0.03, "%d ranks on %d nodes: model %.2f us, plan %.2f us",
			      c[i].n, c[i].nodes, tm * 1e6, tp * 1e6);
		world_close(&w);
	}
}
END_TEST

/* NCCL's point-to-point protocol goes by the size of a send, not by its
 * tuner's cost table: LL up to 16 KiB a send, Simple above, never LL128
 * (sim_coll_choose). On four DGX H100 nodes a 1 MiB all-to-all (32 KiB a
 * peer) priced cheapest with LL128 before; a 256 KiB one (8 KiB a peer)
 * takes LL, and a sendrecv of 16 KiB LL, of 16 KiB + 1 Simple. */
START_TEST(p2p_protocol_by_send_size)
{
	static const struct {
		enum sim_op op;
		double size;
		enum sim_proto want;
	} cases[] = {
		{ SIM_OP_ALLTOALL, 32 * 16384.0, SIM_PROTO_LL },
		{ SIM_OP_ALLTOALL, 32 * 16384.0 + 32, SIM_PROTO_SIMPLE },
		{ SIM_OP_ALLTOALL, TS_MiB, SIM_PROTO_SIMPLE },
		{ SIM_OP_ALLTOALL, TS_GiB, SIM_PROTO_SIMPLE },
		{ SIM_OP_SENDRECV, 16384, SIM_PROTO_LL },
		{ SIM_OP_SENDRECV, 16385, SIM_PROTO_SIMPLE },
	};
	struct world w;
	struct ts_error err = TS_ERROR_INIT;
	int32_t ranks[32];
	world_open(&w, "dgx-h100-ndr", 4, NULL, 1);
	for (int i = 0; i < 32; i++)
		ranks[i] = i;
	for (size_t k = 0; k < TS_ARRAY_LEN(cases); k++) {
		struct sim_coll_spec s;
		enum sim_algo a;
		enum sim_proto p;
		sim_coll_spec_init(&s);
		s.op = cases[k].op;
		s.size_bytes = cases[k].size;
		s.nranks = cases[k].op == SIM_OP_SENDRECV ? 2 : 32;
		s.ranks = cases[k].op == SIM_OP_SENDRECV ? (int32_t[]){ 0, 8 } : ranks;
		ck_assert_msg(sim_coll_choose(&w.t, &s, &a, &p, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(a, SIM_ALGO_DIRECT);
		ck_assert_msg(p == cases[k].want, "case %zu: %s, want %s", k, sim_proto_name(p),
			      sim_proto_name(cases[k].want));
		/* a fixed direct algorithm takes the same rule */
		s.algo = SIM_ALGO_DIRECT;
		ck_assert_int_eq(sim_coll_choose(&w.t, &s, &a, &p, &err), 0);
		ck_assert_int_eq(p, cases[k].want);
		/* and a protocol given is kept */
		s.proto = SIM_PROTO_LL128;
		ck_assert_int_eq(sim_coll_choose(&w.t, &s, &a, &p, &err), 0);
		ck_assert_int_eq(p, SIM_PROTO_LL128);
	}
	world_close(&w);
}
END_TEST

START_TEST(a100_hdr_multinode)
{
	/* DGX SuperPODs are rail-optimised: the dgx-a100-hdr preset with rails. */
	static const int nodes[4] = { 2, 4, 8, 16 };
	const char *path = tu_tmpfile(1, ".json",
				      "{\"preset\": \"dgx-a100-hdr\", \"fabric\": {\"rails\": true}}\n");
	int k;
	for (k = 0; k < 4; k++) {
		struct world w;
		struct runres r;
		double bb;
		int n = nodes[k] * 8;
		world_open(&w, path, nodes[k], NULL, 1);
		r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 1, n,
			false, 1);
		bb = busbw_GBps(SIM_OP_ALLREDUCE, n, TS_GiB, r.time_s);
		ck_assert_msg(fabs(bb / 192 - 1) < 0.10, "%d nodes: busbw %.1f GB/s, quoted 192",
			      nodes[k], bb);
		world_close(&w);
	}
}
END_TEST

/* The analytic time of op on ranks 0..n-1 (what run() runs with G = 1). */
static double an_time(const struct topo *t, enum sim_op op, enum sim_algo algo,
		      enum sim_proto proto, double size, int n)
{
	struct sim_coll_spec sp;
	struct ts_error err = TS_ERROR_INIT;
	int32_t *ranks = malloc((size_t)n * sizeof(int32_t));
	double tm = 0;
	ck_assert_ptr_nonnull(ranks);
	for (int j = 0; j < n; j++)
		ranks[j] = j;
	sim_coll_spec_init(&sp);
	sp.op = op;
	sp.algo = algo;
	sp.proto = proto;
	sp.size_bytes = size;
	sp.nranks = n;
	sp.ranks = ranks;
	sp.hash = rng_hash2(1, 0);
	ck_assert_msg(sim_coll_analytic(t, &sp, &tm, &err) == 0, "%s", err.msg);
	free(ranks);
	return tm;
}

/* NCCL's tree runs one double binary tree per channel, each through a
 * different local GPU and NIC: across 2 nodes its bus bandwidth is the
 * ring's order (nccl.md §1.5: busBw x 0.92), not one NIC's (found by
 * review: 46 GB/s on 2 DGX A100, one HDR NIC). */
START_TEST(tree_uses_every_nic)
{
	struct world w;
	world_open(&w, "dgx-a100-hdr", 2, NULL, 1);
	for (int f = 0; f < 2; f++) {
		double tt = f ? run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_SIMPLE,
				    TS_GiB, 1, 16, false, 1).time_s :
				an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_SIMPLE, TS_GiB, 16);
		double tr = f ? run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE,
				    TS_GiB, 1, 16, false, 1).time_s :
				an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_GiB, 16);
		double bt = busbw_GBps(SIM_OP_ALLREDUCE, 16, TS_GiB, tt);
		double br = busbw_GBps(SIM_OP_ALLREDUCE, 16, TS_GiB, tr);
		ck_assert_msg(bt > 0.85 * br, "fidelity %d: tree %.1f GB/s, ring %.1f", f, bt, br);
	}
	world_close(&w);
}
END_TEST

/* LL's bus bandwidth is capped by NCCL's llMaxBw (Hopper: 141, 45, 35 GB/s
 * on 1, 2, >= 3 nodes; nccl.md §1.5), not only halved: 1 GiB over 2 DGX
 * H100 nodes (was 198 GB/s, which made LL the pick up to 128 MiB across
 * nodes). */
START_TEST(ll_bus_bandwidth_capped)
{
	static const struct {
		int nodes;
		double cap;
	} c[] = { { 1, 141 }, { 2, 45 }, { 4, 35 } };
	for (size_t k = 0; k < TS_ARRAY_LEN(c); k++) {
		struct world w;
		int n = 8 * c[k].nodes;
		world_open(&w, "dgx-h100-ndr", c[k].nodes, NULL, 1);
		for (int f = 0; f < 2; f++) {
			double tm = f ? run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_LL,
					    TS_GiB, 1, n, false, 1).time_s :
					an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_LL, TS_GiB, n);
			double bb = busbw_GBps(SIM_OP_ALLREDUCE, n, TS_GiB, tm);
			ck_assert_msg(bb <= c[k].cap * 1.0001 && bb > 0.95 * c[k].cap,
				      "%d nodes, fidelity %d: LL busbw %.1f GB/s, cap %.1f", c[k].nodes, f,
				      bb, c[k].cap);
		}
		world_close(&w);
	}
}
END_TEST

/* TCP between hosts: the assumed host copy rate (10 GB/s) and per-message
 * cost apply when the transport is tcp and no costs are given (found by
 * review: they were never applied, so TCP changed nothing); not inside a
 * node; the analytic model charges the same. */
START_TEST(tcp_host_costs_between_hosts)
{
	struct world w;
	const char *tcp = tu_tmpfile(2, ".json",
				     "{\"preset\": \"dgx-h100-ndr\", \"node\": {\"gpus\": 2, "
				     "\"nics\": 1}, \"fabric\": {\"transport\": \"tcp\"}}\n");
	const char *rdma = tu_tmpfile(3, ".json",
				      "{\"preset\": \"dgx-h100-ndr\", \"node\": {\"gpus\": 2, "
				      "\"nics\": 1}}\n");
	double S = 256 * TS_MiB, t_tcp, t_rdma, t_an;
	/* ranks g + j G with G = 2: 0 and 2, on two hosts */
	world_open(&w, tcp, 2, NULL, 1);
	ck_assert_double_gt(w.t.cl.fabric.tcp_byte_s, 0);
	t_tcp = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, S, 2, 2, false,
		    1).time_s;
	{
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		int32_t r[2] = { 0, 2 };
		sim_coll_spec_init(&sp);
		sp.op = SIM_OP_ALLREDUCE;
		sp.algo = SIM_ALGO_RING;
		sp.proto = SIM_PROTO_SIMPLE;
		sp.size_bytes = S;
		sp.nranks = 2;
		sp.ranks = r;
		ck_assert_msg(sim_coll_analytic(&w.t, &sp, &t_an, &err) == 0, "%s", err.msg);
	}
	/* a 2-rank ring all-reduce sends S over the host link: S / 10 GB/s */
	ck_assert_msg(t_tcp > S / 10e9 && t_tcp < 1.01 * S / 10e9, "tcp %.6f s", t_tcp);
	ck_assert_msg(fabs(t_an / t_tcp - 1) < 0.02, "analytic %.6f vs flow %.6f s", t_an, t_tcp);
	/* the packet model paces the sender at the copy rate too (found by
	 * review: it charged the per-message cost only) */
	{
		double tp = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE,
				S / 16, 2, 2, false, 1).time_s;
		double tf = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE,
				S / 16, 2, 2, false, 1).time_s;
		ck_assert_msg(fabs(tp / tf - 1) < 0.02, "packet %.6f vs flow %.6f s", tp, tf);
	}
	/* a direct all-to-all too: the larger of copy and wire time, not their
	 * sum (found by review: the analytic model added them) */
	{
		double fa = run(&w.t, SIM_FLOW, SIM_OP_ALLTOALL, SIM_ALGO_DIRECT, SIM_PROTO_SIMPLE, S, 2,
				2, false, 1).time_s;
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		int32_t r[2] = { 0, 2 };
		double aa;
		sim_coll_spec_init(&sp);
		sp.op = SIM_OP_ALLTOALL;
		sp.algo = SIM_ALGO_DIRECT;
		sp.proto = SIM_PROTO_SIMPLE;
		sp.size_bytes = S;
		sp.nranks = 2;
		sp.ranks = r;
		ck_assert_msg(sim_coll_analytic(&w.t, &sp, &aa, &err) == 0, "%s", err.msg);
		ck_assert_msg(fabs(aa / fa - 1) < 0.02, "alltoall analytic %.6f vs flow %.6f s", aa, fa);
	}
	/* inside a node (ranks 0 and 1): NVLink, no host costs */
	{
		double in_tcp = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, S,
				    1, 2, false, 1).time_s;
		world_close(&w);
		world_open(&w, rdma, 2, NULL, 1);
		ck_assert_double_eq(in_tcp, run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING,
						SIM_PROTO_SIMPLE, S, 1, 2, false, 1).time_s);
	}
	t_rdma = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, S, 2, 2, false,
		     1).time_s;
	ck_assert_msg(t_tcp > 2 * t_rdma, "tcp %.6f vs rdma %.6f s", t_tcp, t_rdma);
	world_close(&w);
}
END_TEST

/* A TCP connection's chunks go one after another, each after its
 * per-message host cost (5 us by default), so a ring pays nsteps of them
 * on its TCP edges at least, at both levels (found by review: analytic
 * counted them only along a chunk's journey, 109.81 us against the flow
 * level's 240.45 us for 4 B over 3 nodes of the 2:1 leaf-spine on TCP,
 * 24 ranks, LL: 46 steps). */
START_TEST(tcp_ring_pays_each_message)
{
	const char *cl = tu_tmpfile(0, ".json",
				    "{\"name\": \"ls-tcp\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
				    " \"fabric\": {\"transport\": \"tcp\"}}\n");
	struct world w;
	double ta, tf, msg;
	world_open(&w, cl, 3, NULL, 1);
	msg = w.t.cl.fabric.tcp_msg_s;
	world_close(&w);
	ck_assert_double_gt(msg, 0);
	ring_analytic_flow(cl, 3, 24, SIM_OP_ALLREDUCE, SIM_PROTO_LL, 4, &ta, &tf);
	ck_assert_msg(ta >= 46 * msg && tf >= 46 * msg, "analytic %g s, flow %g s, 46 messages %g s",
		      ta, tf, 46 * msg);
	ck_assert_msg(fabs(ta / tf - 1) < 0.05, "analytic %g s, flow %g s", ta, tf);
}
END_TEST

/* Under RDMA a packet carries at most the IB MTU (4096 B) whatever the
 * fabric's mtu_bytes (found by review: a 9000-byte RoCE MTU was credited
 * with 0.6 % more bandwidth); flow and analytic alike. */
START_TEST(rdma_payload_mtu_capped)
{
	double t[2][2];
	for (int k = 0; k < 2; k++) {
		struct world w;
		const char *f = tu_tmpfile(4 + k, ".json",
					   k ? "{\"preset\": \"h100-roce-leafspine\", \"fabric\": "
					       "{\"mtu_bytes\": 9000}}\n" :
					       "{\"preset\": \"h100-roce-leafspine\", \"fabric\": "
					       "{\"mtu_bytes\": 4096}}\n");
		world_open(&w, f, 2, NULL, 1);
		t[k][0] = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE,
			      256 * TS_MiB, 1, 16, false, 1).time_s;
		t[k][1] = an_time(&w.t, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 256 * TS_MiB,
				  16);
		world_close(&w);
	}
	ck_assert_double_eq(t[0][0], t[1][0]);
	ck_assert_double_eq(t[0][1], t[1][1]);
}
END_TEST

/* ---- oversubscription and rail alignment ------------------------------------------ */

/* Node order that alternates leaves (4 nodes per leaf): every ring hop of
 * the 8 data-parallel rings crosses the spine. */
static const char *cross_leaf_list(char *buf, size_t n)
{
	static const int order[16] = { 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15 };
	size_t used = 0;
	int r;
	for (r = 0; r < 128; r++)
		used += (size_t)snprintf(buf + used, n - used, "%s%d", r ? "," : "",
					 order[r / 8] * 8 + r % 8);
	return buf;
}

START_TEST(oversubscription_halves_cross_leaf_rings)
{
	char list[1024];
	struct world w;
	double b21, b11, brail;
	struct runres r;
	const char *rails = tu_tmpfile(2, ".json",
				       "{\"preset\": \"h100-roce-leafspine-2to1\", \"fabric\": {\"rails\": true}}\n");
	cross_leaf_list(list, sizeof(list));
	/* spray routing: the fabric's capacity, without ECMP hash luck */
	world_open(&w, "h100-roce-leafspine-2to1", 16, list, 1);
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 256 * TS_MiB, 8, 16,
		true, 1);
	b21 = busbw_GBps(SIM_OP_ALLREDUCE, 16, 256 * TS_MiB, r.time_s);
	world_close(&w);
	world_open(&w, "h100-roce-leafspine", 16, list, 1);
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 256 * TS_MiB, 8, 16,
		true, 1);
	b11 = busbw_GBps(SIM_OP_ALLREDUCE, 16, 256 * TS_MiB, r.time_s);
	world_close(&w);
	/* (half, and a little over as the latencies stay: 0.512; found by an
	 * audit at 0.42-0.58) */
	ck_assert_msg(b21 / b11 > 0.48 && b21 / b11 < 0.53, "2:1 %.1f vs 1:1 %.1f GB/s", b21, b11);
	/* the same rings on a rail-optimised 2:1 fabric: each data-parallel
	 * group is one local GPU index, i.e. one rail, so no spine crossing */
	world_open(&w, rails, 16, list, 1);
	r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 256 * TS_MiB, 8, 16,
		false, 1);
	brail = busbw_GBps(SIM_OP_ALLREDUCE, 16, 256 * TS_MiB, r.time_s);
	world_close(&w);
	ck_assert_msg(fabs(brail / b11 - 1) < 0.05, "rail-aligned 2:1 %.1f vs 1:1 %.1f GB/s", brail,
		      b11);
}
END_TEST

/* Sprayed, a collective's time and NCCL's pick do not follow the ECMP
 * draw: found by review, the double binary tree's floor (NCCL's tree
 * bandwidth from the ring's) was priced on the ECMP ring, so a sprayed
 * 1 GiB tree over 8 nodes of the 2:1 leaf-spine took 18.0 / 12.1 / 24.0 ms
 * at seeds 1-3 (the sprayed ring 5.4 ms at any seed), and the pick was
 * priced on the ECMP network too (an 8 MiB all-gather: ring LL at one seed,
 * LL128, 23 % faster, at another). Now both are priced on the nominal
 * network, as NCCL's model knows no routing. */
START_TEST(spray_does_not_follow_the_ecmp_draw)
{
	struct world w;
	double t[3];
	enum sim_algo a0 = SIM_ALGO_AUTO;
	enum sim_proto p0 = SIM_PROTO_AUTO;
	world_open(&w, "h100-roce-leafspine-2to1", 8, NULL, 1);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		struct runres r = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_SIMPLE,
				      TS_GiB, 1, 64, true, seed);
		t[seed - 1] = r.time_s;
	}
	ck_assert_msg(t[0] == t[1] && t[1] == t[2], "sprayed tree by seed: %.6f %.6f %.6f ms",
		      t[0] * 1e3, t[1] * 1e3, t[2] * 1e3);
	/* near the fabric's capacity (the ring's 5.4 ms sprayed, the tree's
	 * own bandwidth factor), not an ECMP ring's collisions */
	ck_assert_msg(t[0] < 8e-3, "sprayed tree %.6f ms", t[0] * 1e3);
	for (uint64_t seed = 1; seed <= 8; seed++) {
		int32_t ranks[64];
		struct sim_coll_spec sp;
		struct ts_error err = TS_ERROR_INIT;
		enum sim_algo a;
		enum sim_proto p;
		for (int i = 0; i < 64; i++)
			ranks[i] = i;
		sim_coll_spec_init(&sp);
		sp.op = SIM_OP_ALLGATHER;
		sp.size_bytes = 8 * TS_MiB;
		sp.nranks = 64;
		sp.ranks = ranks;
		sp.hash = rng_hash2(seed, 0);
		ck_assert_msg(sim_coll_choose(&w.t, &sp, &a, &p, &err) == 0, "%s", err.msg);
		if (seed == 1) {
			a0 = a;
			p0 = p;
		}
		ck_assert_msg(a == a0 && p == p0, "seed %d picks %s %s, seed 1 %s %s", (int)seed,
			      sim_algo_name(a), sim_proto_name(p), sim_algo_name(a0), sim_proto_name(p0));
	}
	world_close(&w);
}
END_TEST

/* ---- invariants ---------------------------------------------------------------------- */

static const struct {
	enum sim_op op;
	enum sim_algo algo;
} combos[] = {
	{ SIM_OP_ALLREDUCE, SIM_ALGO_RING },      { SIM_OP_ALLREDUCE, SIM_ALGO_TREE },
	{ SIM_OP_ALLREDUCE, SIM_ALGO_RHD },       { SIM_OP_ALLREDUCE, SIM_ALGO_DIRECT },
	{ SIM_OP_ALLREDUCE, SIM_ALGO_HIER },      { SIM_OP_ALLREDUCE, SIM_ALGO_PS },
	{ SIM_OP_REDUCESCATTER, SIM_ALGO_RING },  { SIM_OP_REDUCESCATTER, SIM_ALGO_RHD },
	{ SIM_OP_ALLGATHER, SIM_ALGO_RING },      { SIM_OP_ALLGATHER, SIM_ALGO_DIRECT },
	{ SIM_OP_ALLTOALL, SIM_ALGO_DIRECT },     { SIM_OP_BROADCAST, SIM_ALGO_RING },
	{ SIM_OP_BROADCAST, SIM_ALGO_TREE },      { SIM_OP_REDUCE, SIM_ALGO_RING },
	{ SIM_OP_REDUCE, SIM_ALGO_TREE },         { SIM_OP_SENDRECV, SIM_ALGO_DIRECT },
};

START_TEST(every_algorithm_conserves_bytes)
{
	struct world w;
	int f;
	world_open(&w, "dgx-h100-ndr", 2, NULL, 1);
	for (f = 0; f < 2; f++) {
		enum sim_fidelity fid = f ? SIM_PACKET : SIM_FLOW;
		double S = f ? 2 * TS_MiB : 64 * TS_MiB;
		struct runres r = run(&w.t, fid, combos[_i].op, combos[_i].algo, SIM_PROTO_SIMPLE, S, 1,
				      16, false, 1);
		ck_assert_double_gt(r.time_s, 0);
		ck_assert_double_gt(r.bytes_sent, 0);
		ck_assert_msg(fabs(r.bytes_sent - r.bytes_delivered) <= 1e-6 * r.bytes_sent,
			      "%s/%s: sent %.0f delivered %.0f", sim_op_name(combos[_i].op),
			      sim_algo_name(combos[_i].algo), r.bytes_sent, r.bytes_delivered);
		/* Simple has no wire inflation: the collective's payload is what
		 * the network carried */
		ck_assert_double_eq_tol(r.coll_bytes, r.bytes_sent, 1e-6 * r.bytes_sent);
	}
	world_close(&w);
}
END_TEST

/* Coalesced ends (the tools' SIM_FLOW_COALESCE): the thousands of flows of
 * all-to-alls across a 2:1 leaf-spine end at nearly the same times, each
 * end re-solving the whole saturated fabric; re-rating within a small
 * fraction of an ended flow's time (0.2 %) shares the solves. The times agree with exact max-min
 * within 0.1 % at fewer solves (one all-to-all of 128 ranks, four
 * concurrent ones of 32 as EP groups); ring all-reduces, whose steps wait
 * on each other's ends, are not coalesced: the same to the bit. */
START_TEST(coalesced_ends_agree_with_exact)
{
	static const struct {
		enum sim_op op;
		enum sim_algo algo;
		int G, n;
	} cases[] = {
		{ SIM_OP_ALLTOALL, SIM_ALGO_DIRECT, 1, 128 },
		{ SIM_OP_ALLTOALL, SIM_ALGO_DIRECT, 4, 32 },
		{ SIM_OP_ALLREDUCE, SIM_ALGO_RING, 8, 16 },
	};
	struct world w;
	world_open(&w, "h100-roce-leafspine-2to1", 16, "random", 3);
	for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
		struct runres x, c;
		g_coalesce = 0;
		x = run(&w.t, SIM_FLOW, cases[i].op, cases[i].algo, SIM_PROTO_SIMPLE, 64 * TS_MiB,
			cases[i].G, cases[i].n, false, 5);
		g_coalesce = SIM_FLOW_COALESCE;
		c = run(&w.t, SIM_FLOW, cases[i].op, cases[i].algo, SIM_PROTO_SIMPLE, 64 * TS_MiB,
			cases[i].G, cases[i].n, false, 5);
		g_coalesce = 0;
		ck_assert_msg(fabs(c.time_s / x.time_s - 1) < 1e-3 &&
				      (cases[i].op == SIM_OP_ALLTOALL || c.time_s == x.time_s),
			      "case %zu: coalesced %.9g s, exact %.9g s", i, c.time_s, x.time_s);
		ck_assert(c.bytes_delivered == x.bytes_delivered);
		if (cases[i].op == SIM_OP_ALLTOALL)
			ck_assert_msg(c.solves * 10 < x.solves * 9, "case %zu: %llu solves, exact %llu", i,
				      (unsigned long long)c.solves, (unsigned long long)x.solves);
	}
	/* an uneven all-to-all (alltoallv: an EP dispatch with skewed expert
	 * loads), whose flows end apart and re-rate the rest: the error grows
	 * with the window (+0.10, 0.19, 0.29, 0.91 % at 0.001, 0.002, 0.003,
	 * 0.01); within 0.3 % at the default */
	{
		struct sim_coll_spec sp;
		int32_t ranks[64];
		double wt[64], tx, tc, bx, bc;
		for (int i = 0; i < 64; i++) {
			ranks[i] = i;
			wt[i] = 1 + (i * 7 % 5);
		}
		sim_coll_spec_init(&sp);
		sp.op = SIM_OP_ALLTOALL;
		sp.algo = SIM_ALGO_DIRECT;
		sp.proto = SIM_PROTO_SIMPLE;
		sp.size_bytes = 64 * TS_MiB;
		sp.nranks = 64;
		sp.ranks = ranks;
		sp.weights = wt;
		sp.hash = 9;
		g_coalesce = 0;
		flow_one(&w.t, &sp, &tx, &bx);
		g_coalesce = SIM_FLOW_COALESCE;
		flow_one(&w.t, &sp, &tc, &bc);
		g_coalesce = 0;
		ck_assert_msg(fabs(tc / tx - 1) < 3e-3 && bc == bx, "alltoallv: coalesced %.9g s, exact %.9g s",
			      tc, tx);
	}
	world_close(&w);
}
END_TEST

START_TEST(same_seed_same_result)
{
	struct world w;
	struct runres a, b, c;
	world_open(&w, "h100-roce-leafspine-2to1", 16, "random", 7);
	a = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 8, 16,
		false, 7);
	b = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 8, 16,
		false, 7);
	ck_assert(a.time_s == b.time_s);
	ck_assert(a.bytes_delivered == b.bytes_delivered);
	c = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_MiB, 8, 16,
		false, 7);
	b = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, TS_MiB, 8, 16,
		false, 7);
	ck_assert(c.time_s == b.time_s);
	world_close(&w);
}
END_TEST

/* A tree's chunks follow NCCL's halving (pick_tree_chunks): an 8 MiB tree
 * all-reduce over 16 H100 nodes pipelines, and the flow model lands near
 * the analytic one (found by review: one 512 KiB chunk per tree left it a
 * store-and-forward at twice the analytic time, 324 vs 155 us). */
START_TEST(tree_chunks_pipeline)
{
	struct world w;
	struct runres f;
	struct sim_coll_spec s;
	struct ts_error err = TS_ERROR_INIT;
	int32_t ranks[128];
	double ta;
	world_open(&w, "dgx-h100-ndr", 16, NULL, 1);
	f = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL128, 8 * TS_MiB, 1, 128,
		false, 1);
	for (int i = 0; i < 128; i++)
		ranks[i] = i;
	sim_coll_spec_init(&s);
	s.op = SIM_OP_ALLREDUCE;
	s.algo = SIM_ALGO_TREE;
	s.proto = SIM_PROTO_LL128;
	s.size_bytes = 8 * TS_MiB;
	s.nranks = 128;
	s.ranks = ranks;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &ta, &err), 0);
	ck_assert_msg(fabs(f.time_s / ta - 1) < 0.15, "flow %g s, analytic %g s", f.time_s, ta);
	world_close(&w);
}
END_TEST

/* Over more than 64 ranks a tree is priced by NCCL's model, not planned
 * (found by review: choosing for 16k ranks built the tree's plan for every
 * candidate and did not finish in a minute): on 1,024 H100 ranks a 1 MiB
 * all-reduce takes the tree, well under the ring's 2(nodes - 1) network
 * steps of latency alone (3.6 ms), and the time equals sim_tree_model's. */
START_TEST(big_tree_by_model)
{
	struct world w;
	struct sim_coll_spec s;
	struct ts_error err = TS_ERROR_INIT;
	int32_t *ranks = malloc(1024 * sizeof(int32_t));
	enum sim_algo a;
	enum sim_proto p, mp;
	double tt, tr, t0, tm;
	ck_assert_ptr_nonnull(ranks);
	world_open(&w, "dgx-h100-ndr", 128, NULL, 1);
	for (int i = 0; i < 1024; i++)
		ranks[i] = i;
	sim_coll_spec_init(&s);
	s.op = SIM_OP_ALLREDUCE;
	s.size_bytes = TS_MiB;
	s.nranks = 1024;
	s.ranks = ranks;
	ck_assert_msg(sim_coll_choose(&w.t, &s, &a, &p, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(a, SIM_ALGO_TREE);
	s.algo = a;
	s.proto = p;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &tt, &err), 0);
	ck_assert_msg(tt < 1e-3, "tree %g s", tt);
	s.algo = SIM_ALGO_RING;
	s.proto = SIM_PROTO_SIMPLE;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &tr, &err), 0);
	ck_assert_msg(tr > 3.6e-3, "ring %g s", tr);
	s.size_bytes = 1;
	ck_assert_int_eq(sim_coll_analytic(&w.t, &s, &t0, &err), 0);
	s.size_bytes = TS_MiB;
	ck_assert_int_eq(sim_tree_model(&w.t, &s, tr - t0, &mp, &tm, &err), 0);
	ck_assert_int_eq(mp, p);
	ck_assert_msg(fabs(tt / tm - 1) < 1e-12, "analytic %g s, model %g s", tt, tm);
	free(ranks);
	world_close(&w);
}
END_TEST

/* Store-and-forward plans (a parameter server's push then pull, recursive
 * halving's steps, direct reduce-scatter then all-gather): the analytic
 * model adds up their stages' bottlenecks as the flow level runs them
 * (found by review: the server's pushes and pulls, on opposite link
 * directions, were priced as overlapping, half the flow time; RHD's step
 * across nodes and its steps inside them as one, 10 % fast). */
START_TEST(staged_plans_analytic_matches_flow)
{
	static const struct {
		int nodes, n;
		enum sim_algo a;
	} cs[] = { { 1, 4, SIM_ALGO_PS },  { 2, 16, SIM_ALGO_PS },	  { 2, 16, SIM_ALGO_RHD },
		   { 1, 8, SIM_ALGO_RHD }, { 2, 16, SIM_ALGO_DIRECT } };
	for (size_t k = 0; k < TS_ARRAY_LEN(cs); k++) {
		struct world w;
		double S = 64 * TS_MiB, ta, tf;
		world_open(&w, "dgx-h100-ndr", cs[k].nodes, NULL, 1);
		ta = an_time(&w.t, SIM_OP_ALLREDUCE, cs[k].a, SIM_PROTO_SIMPLE, S, cs[k].n);
		tf = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, cs[k].a, SIM_PROTO_SIMPLE, S, 1, cs[k].n,
			 false, 1)
			     .time_s;
		ck_assert_msg(fabs(ta / tf - 1) < 0.01, "%s, %d ranks on %d nodes: analytic %g s, flow %g s",
			      sim_algo_name(cs[k].a), cs[k].n, cs[k].nodes, ta, tf);
		world_close(&w);
	}
	/* over TCP whose host copy (10 ns a byte) is the bottleneck: each
	 * stage pays it (found by review: the copy was taken once, half the
	 * flow time) */
	for (int k = 0; k < 2; k++) {
		struct world w;
		enum sim_algo a = k ? SIM_ALGO_RHD : SIM_ALGO_PS;
		int n = k ? 4 : 6;
		double S = 64 * TS_MiB, ta, tf;
		world_open(&w,
			   tu_tmpfile(0, ".json",
				      "{\"preset\": \"pcie-2x2-tcp\", \"nodes\": 3,\n"
				      " \"fabric\": {\"tcp_byte_cost\": \"10ns\"}}\n"),
			   3, NULL, 1);
		ta = an_time(&w.t, SIM_OP_ALLREDUCE, a, SIM_PROTO_SIMPLE, S, n);
		tf = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, a, SIM_PROTO_SIMPLE, S, 1, n, false, 1).time_s;
		ck_assert_msg(fabs(ta / tf - 1) < 0.01, "%s over TCP: analytic %g s, flow %g s",
			      sim_algo_name(a), ta, tf);
		world_close(&w);
	}
}
END_TEST

/* A group of one rank moves nothing over the network: NCCL copies the
 * send buffer into the receive buffer on the GPU, at any protocol (found by
 * review: 6.6 us at every size with LL, 8.4 us with Simple, a broadcast
 * with LL at llMaxBw). */
START_TEST(one_rank_is_a_copy)
{
	struct world w;
	static const enum sim_op ops[] = { SIM_OP_ALLREDUCE, SIM_OP_BROADCAST, SIM_OP_SENDRECV };
	world_open(&w, "dgx-h100-ndr", 1, NULL, 1);
	for (size_t k = 0; k < TS_ARRAY_LEN(ops); k++) {
		enum sim_algo a = ops[k] == SIM_OP_SENDRECV ? SIM_ALGO_DIRECT : SIM_ALGO_RING;
		double big = an_time(&w.t, ops[k], a, SIM_PROTO_LL, TS_GiB, 1);
		double big_s = an_time(&w.t, ops[k], a, SIM_PROTO_SIMPLE, TS_GiB, 1);
		double tiny = an_time(&w.t, ops[k], a, SIM_PROTO_SIMPLE, 8, 1);
		double fl = run(&w.t, SIM_FLOW, ops[k], a, SIM_PROTO_LL, TS_GiB, 1, 1, false, 1).time_s;
		/* reads and writes the buffer through HBM, no faster */
		ck_assert_msg(big >= 2 * TS_GiB / w.t.cl.gpu.hbm_Bps, "%s: %g s for 1 GiB",
			      sim_op_name(ops[k]), big);
		ck_assert_msg(big < 4 * TS_GiB / w.t.cl.gpu.hbm_Bps, "%s: %g s", sim_op_name(ops[k]), big);
		ck_assert_double_eq(big, big_s);
		ck_assert_double_eq_tol(fl, big, 1e-9);
		ck_assert_msg(tiny > 0 && tiny < 1e-5, "%s: %g s for 8 B", sim_op_name(ops[k]), tiny);
	}
	world_close(&w);
}
END_TEST

/* A tree over more than 64 ranks, priced by NCCL's model, keeps the links'
 * latency a planned tree has (found by review: 8 B took 54.2 us planned at
 * 8 nodes, 46.9 at 9 by the model, 55.2 at 16 against the flow level's
 * 65.8). */
START_TEST(big_tree_latency_continuous)
{
	struct world w8, w9, w16;
	double t8, t9, t16, f16;
	world_open(&w8, "dgx-h100-ndr", 8, NULL, 1);
	world_open(&w9, "dgx-h100-ndr", 9, NULL, 1);
	world_open(&w16, "dgx-h100-ndr", 16, NULL, 1);
	t8 = an_time(&w8.t, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL, 8, 64);
	t9 = an_time(&w9.t, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL, 8, 72);
	t16 = an_time(&w16.t, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL, 8, 128);
	f16 = run(&w16.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_TREE, SIM_PROTO_LL, 8, 1, 128, false, 1)
		      .time_s;
	ck_assert_msg(t9 >= t8 && t16 > t9, "8 nodes %g, 9 nodes %g, 16 nodes %g s", t8, t9, t16);
	ck_assert_msg(fabs(t16 / f16 - 1) < 0.01, "16 nodes: model %g s, flow %g s", t16, f16);
	world_close(&w8);
	world_close(&w9);
	world_close(&w16);
}
END_TEST

START_TEST(packet_agrees_with_flow)
{
	/* ring allreduce of 64 MiB on 8 hosts of the non-blocking switch and on
	 * 64 hosts of a fat-tree */
	struct world w;
	struct runres f, p;
	world_open(&w, switch_cluster(), 8, NULL, 1);
	f = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 1, 8,
		false, 1);
	p = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 1, 8,
		false, 1);
	ck_assert_msg(fabs(p.time_s / f.time_s - 1) < 0.05, "packet %g flow %g", p.time_s, f.time_s);
	world_close(&w);
	/* 64 hosts of a 3-tier k=8 fat-tree (ECMP), 64 MiB */
	world_open(&w, tu_src(3, "examples/clusters/fat-tree-k8.json"), 0, NULL, 1);
	f = run(&w.t, SIM_FLOW, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 1, 64,
		false, 1);
	p = run(&w.t, SIM_PACKET, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 64 * TS_MiB, 1, 64,
		false, 1);
	ck_assert_msg(fabs(p.time_s / f.time_s - 1) < 0.05, "64 hosts: packet %g flow %g", p.time_s,
		      f.time_s);
	world_close(&w);
}
END_TEST

/* Coupled rings (sim.h) against step by step: rings of 16-512 ranks, one
 * group and several concurrent ones, 1:1 and 2:1 fabrics, one GPU per host
 * (uniform rings) and eight (NVLink + NET edges), ECMP and spray. The last
 * three are rings over 8-GPU DGX H100 nodes whose chunk journey binds (each
 * GPU's NVLink port carries seven channels): with those channels taken as
 * always on they were 10.3 %, 22.0 % and 22.0 % slow (sprayed -11.8 %, the
 * capacity ratios), now within 1 %. The very last: sprayed edges between
 * nodes left at the capacity ratios made each a slowest one, +10.7 % (found
 * by review); probed, +0.3 %. */
static const struct {
	const char *cluster;
	int nodes;
	const char *placement;
	enum sim_op op;
	int G, n;
	bool spray;
	double size;
} cpl[] = {
	{ "h100-roce-leafspine", 16, NULL, SIM_OP_ALLREDUCE, 1, 128, false, 256 * TS_MiB },
	{ "h100-roce-leafspine", 16, NULL, SIM_OP_ALLREDUCE, 4, 32, false, 256 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 16, NULL, SIM_OP_ALLREDUCE, 1, 128, false, 256 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 16, NULL, SIM_OP_ALLREDUCE, 8, 16, false, 256 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 16, "random", SIM_OP_ALLREDUCE, 4, 32, true, 64 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 32, NULL, SIM_OP_ALLREDUCE, 1, 256, false, 64 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 16, NULL, SIM_OP_REDUCESCATTER, 2, 64, false, 256 * TS_MiB },
	{ "h100-roce-leafspine-2to1", 16, NULL, SIM_OP_ALLGATHER, 4, 32, true, 256 * TS_MiB },
	{ "fat-tree-k8", 0, NULL, SIM_OP_ALLREDUCE, 1, 128, false, 256 * TS_MiB },
	{ "fat-tree-k8", 0, NULL, SIM_OP_ALLREDUCE, 8, 16, false, 256 * TS_MiB },
	{ "fat-tree-k8", 0, NULL, SIM_OP_ALLREDUCE, 2, 64, true, 256 * TS_MiB },
	{ "dgx-h100-ndr-fat-tree", 16, NULL, SIM_OP_ALLREDUCE, 1, 128, false, 64 * TS_MiB },
	{ "dgx-h100-ndr-fat-tree", 64, NULL, SIM_OP_ALLREDUCE, 1, 512, false, 1024 * TS_MiB },
	{ "dgx-h100-ndr-fat-tree", 64, NULL, SIM_OP_ALLREDUCE, 1, 512, true, 1024 * TS_MiB },
	{ "dgx-a100-hdr", 32, "random", SIM_OP_ALLREDUCE, 2, 128, true, 16 * TS_MiB },
	/* 10 us links, 4 KiB: each connection's 8 slots bind (a slot's credit
	 * comes back a path latency after the chunk arrived); without the
	 * window term the coupled ring was 32 % fast (2.121 against 3.127 ms) */
	{ "long-links", 16, NULL, SIM_OP_ALLREDUCE, 1, 128, false, 4096 },
};

START_TEST(coupled_ring_agrees_with_steps)
{
	struct world w;
	struct runres st, cp;
	const char *cl = cpl[_i].cluster;
	if (!strcmp(cl, "fat-tree-k8"))
		cl = tu_src(3, "examples/clusters/fat-tree-k8.json");
	if (!strcmp(cl, "long-links"))
		cl = tu_tmpfile(0, ".json",
				"{\"name\": \"long-links\", \"preset\": \"h100-roce-leafspine-2to1\",\n"
				" \"fabric\": {\"link_latency\": \"10us\"}}\n");
	world_open(&w, cl, cpl[_i].nodes, cpl[_i].placement, 1);
	st = run_ex(&w.t, SIM_FLOW, cpl[_i].op, SIM_ALGO_RING, SIM_PROTO_SIMPLE, cpl[_i].size,
		    cpl[_i].G, cpl[_i].n, cpl[_i].spray, 3, INT32_MAX);
	cp = run_ex(&w.t, SIM_FLOW, cpl[_i].op, SIM_ALGO_RING, SIM_PROTO_SIMPLE, cpl[_i].size,
		    cpl[_i].G, cpl[_i].n, cpl[_i].spray, 3, 0);
	ck_assert_msg(fabs(cp.time_s / st.time_s - 1) < 0.02, "%s %d x %d: coupled %.6g s, steps %.6g s",
		      cpl[_i].cluster, cpl[_i].G, cpl[_i].n, cp.time_s, st.time_s);
	/* the same bytes, delivered */
	ck_assert_double_eq_tol(cp.bytes_sent, st.bytes_sent, 1e-6 * st.bytes_sent);
	ck_assert_double_eq_tol(cp.bytes_delivered, cp.bytes_sent, 1e-6 * cp.bytes_sent);
	ck_assert_double_eq_tol(cp.coll_bytes, st.coll_bytes, 1e-6 * st.coll_bytes);
	world_close(&w);
}
END_TEST

/* The default threshold: groups of up to 64 ranks run step by step (their
 * results unchanged), larger ones coupled. */
START_TEST(coupled_threshold_default)
{
	struct sim_net_params p;
	sim_net_params_default(&p);
	ck_assert_int_eq(p.ring_coupled_above, 64);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------ */

static const struct {
	const char *cluster;
	int nodes;
	enum sim_op op;
	enum sim_algo algo;
	enum sim_proto proto;
	int n;
	const char *why; /* a word the message must contain */
} bad[] = {
	{ "dgx-h100-ndr", 1, SIM_OP_ALLREDUCE, SIM_ALGO_RHD, SIM_PROTO_SIMPLE, 6, "power-of-two" },
	{ "dgx-h100-ndr", 2, SIM_OP_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_SIMPLE, 16, "one node" },
	{ "dgx-a100-hdr", 1, SIM_OP_ALLREDUCE, SIM_ALGO_NVLS, SIM_PROTO_SIMPLE, 8, "NVLink SHARP" },
	{ "dgx-h100-ndr", 1, SIM_OP_ALLREDUCE, SIM_ALGO_HIER, SIM_PROTO_SIMPLE, 8, "2 nodes" },
	{ "dgx-h100-ndr", 1, SIM_OP_ALLTOALL, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 8, "direct" },
	{ "dgx-h100-ndr", 1, SIM_OP_ALLGATHER, SIM_ALGO_TREE, SIM_PROTO_SIMPLE, 8, "cannot run" },
	{ "dgx-h100-ndr", 1, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_SIMPLE, 9, "GPUs" },
	{ "pcie-2x2-tcp", 2, SIM_OP_ALLREDUCE, SIM_ALGO_RING, SIM_PROTO_LL128, 4, "NVLink" },
};

START_TEST(cannot_run_says_why)
{
	struct world w;
	struct ts_error err = TS_ERROR_INIT;
	struct sim_coll_spec s;
	int32_t ranks[16];
	int i;
	world_open(&w, bad[_i].cluster, bad[_i].nodes, NULL, 1);
	for (i = 0; i < 16; i++)
		ranks[i] = i;
	sim_coll_spec_init(&s);
	s.op = bad[_i].op;
	s.algo = bad[_i].algo;
	s.proto = bad[_i].proto;
	s.size_bytes = TS_MiB;
	s.nranks = bad[_i].n;
	s.ranks = ranks;
	ck_assert_int_eq(sim_coll_check(&w.t, &s, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, bad[_i].why) != NULL, "message '%s' lacks '%s'", err.msg,
		      bad[_i].why);
	ck_assert(strchr(err.msg, '\n') == NULL);
	world_close(&w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_coll");
	TCase *tc = tcase_create("closed_form");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ring_closed_form_switch);
	tcase_add_test(tc, rhd_closed_form_switch);
	tcase_add_test(tc, analytic_matches_flow_on_switch);
	tcase_add_test(tc, analytic_matches_flow_on_pcie);
	tcase_add_test(tc, ring_latency_as_nccl);
	tcase_add_test(tc, ring_sends_do_not_wait_for_arrival);
	tcase_add_test(tc, ring_connection_has_eight_slots);
	tcase_add_test(tc, alltoallv_follows_weights);
	tcase_add_test(tc, a2a_compiled_matches_analytic);
	tcase_add_test(tc, pxn_keeps_alltoall_on_rails);
	tcase_add_test(tc, coalesced_ends_agree_with_exact);
	suite_add_tcase(s, tc);
	tc = tcase_create("presets");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, h100_nvswitch_ring_and_nvls);
	tcase_add_test(tc, nvls_tree_across_nodes);
	tcase_add_test(tc, nvls_tree_model_follows_its_plan);
	tcase_add_test(tc, a100_hdr_multinode);
	tcase_add_test(tc, tree_uses_every_nic);
	tcase_add_test(tc, ll_bus_bandwidth_capped);
	tcase_add_test(tc, tcp_host_costs_between_hosts);
	tcase_add_test(tc, tcp_ring_pays_each_message);
	tcase_add_test(tc, rdma_payload_mtu_capped);
	tcase_add_test(tc, oversubscription_halves_cross_leaf_rings);
	tcase_add_test(tc, spray_does_not_follow_the_ecmp_draw);
	tcase_add_test(tc, chunks_cut_as_nccl_loops);
	tcase_add_test(tc, long_chains_in_nccl_chunks);
	tcase_add_test(tc, trees_in_nccl_chunks);
	suite_add_tcase(s, tc);
	tc = tcase_create("invariants");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_algorithm_conserves_bytes, 0, (int)TS_ARRAY_LEN(combos));
	tcase_add_test(tc, same_seed_same_result);
	tcase_add_test(tc, packet_agrees_with_flow);
	tcase_add_test(tc, tree_chunks_pipeline);
	tcase_add_test(tc, big_tree_by_model);
	tcase_add_test(tc, staged_plans_analytic_matches_flow);
	tcase_add_test(tc, one_rank_is_a_copy);
	tcase_add_test(tc, big_tree_latency_continuous);
	suite_add_tcase(s, tc);
	tc = tcase_create("coupled");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, coupled_ring_agrees_with_steps, 0, (int)TS_ARRAY_LEN(cpl));
	tcase_add_test(tc, coupled_threshold_default);
	tcase_add_test(tc, p2p_protocol_by_send_size);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_loop_test(tc, cannot_run_says_why, 0, (int)TS_ARRAY_LEN(bad));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}

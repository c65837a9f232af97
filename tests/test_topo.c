/* test_topo.c: topology library: fabric arithmetic, equal-cost paths, path
 * connectivity, oversubscription and bisection, placement, bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "testutil.h"
#include "topo/topo.h"

/* A cluster of nodes with 1 GPU and 1 NIC each: hosts = NIC ports, so the
 * fabric arithmetic of hardware.md applies directly. */
static void one_gpu_nodes(struct topo_cluster *c, int nodes)
{
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_int_eq(topo_cluster_load(c, "dgx-h100-ndr", 0, &err), 0);
	c->node.gpus = 1;
	c->node.nics = 1;
	c->fabric.rails = false;
	c->nodes = nodes;
}

static void fat_tree_cluster(struct topo_cluster *c, int k, int tiers)
{
	int hosts = tiers == 3 ? k * k * k / 4 : k * k / 2;
	one_gpu_nodes(c, hosts);
	c->fabric.kind = TOPO_FABRIC_FAT_TREE;
	c->fabric.k = k;
	c->fabric.tiers = tiers;
	c->fabric.switch_ports = k;
}

/* Check that a path is connected: first from = src GPU, each link starts
 * where the previous ended, last to = dst GPU. */
static void assert_connected(const struct topo *t, int32_t a, int32_t b, const int32_t *p, int n)
{
	ck_assert_int_ge(n, 0);
	ck_assert_int_le(n, TOPO_MAX_HOPS);
	if (a == b) {
		ck_assert_int_eq(n, 0);
		return;
	}
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(t->links[p[0]].from, a);
	for (int i = 1; i < n; i++)
		ck_assert_int_eq(t->links[p[i]].from, t->links[p[i - 1]].to);
	ck_assert_int_eq(t->links[p[n - 1]].to, b);
	for (int i = 0; i < n; i++) {
		ck_assert_int_ge(p[i], 0);
		ck_assert_int_lt(p[i], t->nlinks);
		if (i > 0 && i < n - 1) /* GPUs never forward */
			ck_assert_int_ne(t->nodes[t->links[p[i]].from].kind, TOPO_N_GPU);
	}
}

/* ---- fat-tree arithmetic (hardware.md "Fabric arithmetic") ---------------------- */

static const int ks[] = { 4, 8, 16, 64 };

START_TEST(fat_tree_counts)
{
	int k = ks[_i];
	struct topo_cluster c;
	struct topo t;
	struct topo_summary s;
	struct ts_error err = TS_ERROR_INIT;
	fat_tree_cluster(&c, k, 3);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(t.nhosts, k * k * k / 4);
	ck_assert_int_eq(t.nswitch_by_tier[1] + t.nswitch_by_tier[2] + t.nswitch_by_tier[3],
			 5 * k * k / 4);
	ck_assert_int_eq(t.nswitch_by_tier[3], k * k / 4);
	if (k <= 16) { /* the full summary (max-flow, BFS) on the smaller ones */
		ck_assert_msg(topo_summarize(&t, &s, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(s.hosts, k * k * k / 4);
		ck_assert_int_eq(s.switches_total, 5 * k * k / 4);
		for (int tier = 1; tier <= 3; tier++) {
			/* k^3/4 links at each level; every switch uses all k ports */
			ck_assert_int_eq(s.links_by_tier[tier], k * k * k / 4);
			ck_assert_int_eq(s.ports_max[tier], k);
			ck_assert_int_eq(s.ports_min[tier], k);
		}
		ck_assert_double_eq_tol(s.oversubscription[1], 1.0, 1e-12);
		ck_assert_double_eq_tol(s.oversubscription[2], 1.0, 1e-12);
		/* full bisection: half the hosts at line rate */
		ck_assert_double_eq_tol(s.bisection_Bps, (k * k * k / 8) * c.node.nic_Bps,
					c.node.nic_Bps * 1e-6);
		/* GPU-PCIe-NIC-edge-agg-core-agg-edge-NIC-PCIe-GPU */
		ck_assert_int_eq(s.diameter_hops, 10);
		ck_assert_int_eq(s.ecmp_paths_max, (k / 2) * (k / 2));
	}
	/* hosts in different pods: (k/2)^2 paths; same pod other edge: k/2 */
	ck_assert_int_eq(topo_route_count(&t, 0, t.nhosts - 1), (k / 2) * (k / 2));
	ck_assert_int_eq(topo_route_count(&t, 0, k / 2), k / 2);
	ck_assert_int_eq(topo_route_count(&t, 0, 1), 1);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

START_TEST(fat_tree_two_tier_counts)
{
	int k = ks[_i];
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	fat_tree_cluster(&c, k, 2);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	/* hardware.md: k leaves with k/2 hosts and k/2 uplinks, k/2 spines */
	ck_assert_int_eq(t.nhosts, k * k / 2);
	ck_assert_int_eq(t.nswitch_by_tier[1], k);
	ck_assert_int_eq(t.nswitch_by_tier[2], k / 2);
	ck_assert_int_eq(t.nswitch_by_tier[3], 0);
	ck_assert_int_eq(topo_route_count(&t, 0, t.nhosts - 1), k / 2);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* Every path (all of them for small pairs, sampled for big counts) is
 * connected, differs from path 0, and is as short as an independent BFS
 * says (fat_tree_paths_distinct compares every pair on k = 8). */
static void check_all_paths(const struct topo *t, int32_t a, int32_t b)
{
	int64_t cnt = topo_route_count(t, a, b);
	int32_t p[TOPO_MAX_HOPS], first[TOPO_MAX_HOPS];
	int bfs = topo_bfs_hops(t, a, b), n0 = -1;
	ck_assert_int_ge(cnt, 1);
	ck_assert_int_ge(bfs, 0);
	for (int64_t i = 0; i < cnt && i < 300; i++) {
		int n = topo_route_nth(t, a, b, i, p);
		assert_connected(t, a, b, p, n);
		ck_assert_int_eq(n, bfs);
		if (i == 0) {
			memcpy(first, p, sizeof(p));
			n0 = n;
		} else {
			ck_assert_msg(memcmp(first, p, (size_t)n * sizeof(int32_t)) != 0 || n != n0,
				      "path %lld repeats path 0", (long long)i);
		}
	}
}

START_TEST(fat_tree_paths_distinct)
{
	/* k=8: all 16 inter-pod paths are pairwise distinct */
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int32_t paths[16][TOPO_MAX_HOPS];
	fat_tree_cluster(&c, 8, 3);
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	ck_assert_int_eq(topo_route_count(&t, 0, 127), 16);
	for (int i = 0; i < 16; i++) {
		int n = topo_route_nth(&t, 0, 127, i, paths[i]);
		ck_assert_int_eq(n, 10);
		assert_connected(&t, 0, 127, paths[i], n);
		for (int j = 0; j < i; j++)
			ck_assert(memcmp(paths[i], paths[j], sizeof(paths[i])) != 0);
	}
	ck_assert_int_lt(topo_route_nth(&t, 0, 127, 16, paths[0]), 0);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* ---- every topology: random pairs connected, shortest, deterministic ---------------- */

static const char *const all_presets[] = { "dgx-a100-hdr", "dgx-h100-ndr", "h100-roce-leafspine-2to1",
					    "h100-roce-leafspine", "h200-ndr", "pcie-2x2-tcp" };

static void random_pairs(const struct topo *t, int pairs, uint64_t seed)
{
	struct rng g = RNG_INIT;
	ck_assert_int_eq(rng_init(&g, seed), 0);
	for (int i = 0; i < pairs; i++) {
		int32_t a = (int32_t)rng_below(&g, (uint64_t)t->ngpus);
		int32_t b = (int32_t)rng_below(&g, (uint64_t)t->ngpus);
		int32_t p[TOPO_MAX_HOPS], q[TOPO_MAX_HOPS];
		uint64_t h = rng_below(&g, 1u << 30);
		int n = topo_route(t, a, b, h, p);
		assert_connected(t, a, b, p, n);
		ck_assert_int_eq(topo_route(t, a, b, h, q), n); /* same hash, same path */
		ck_assert(memcmp(p, q, (size_t)n * sizeof(int32_t)) == 0);
		if (i < 25)
			check_all_paths(t, a, b);
	}
	rng_release(&g);
}

START_TEST(presets_paths_connected)
{
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_msg(topo_cluster_load(&c, all_presets[_i], 0, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	random_pairs(&t, 2000, 42 + (uint64_t)_i);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

START_TEST(presets_more_nodes_paths_connected)
{
	/* enough nodes to use every tier */
	static const int nodes[] = { 160, 200, 64, 64, 200, 2 }; /* a100: 50 per pod */
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_msg(topo_cluster_load(&c, all_presets[_i], nodes[_i], &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	random_pairs(&t, 1500, 7 + (uint64_t)_i);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

START_TEST(clos3_paths_connected)
{
	/* a three-tier Clos with parallel cables at both levels and 2:1 at the top */
	struct topo_cluster c;
	struct topo t;
	struct topo_summary s;
	struct ts_error err = TS_ERROR_INIT;
	one_gpu_nodes(&c, 96);
	c.node.gpus = 2;
	c.node.nics = 2;
	c.fabric.kind = TOPO_FABRIC_CLOS3;
	c.fabric.tiers = 3;
	c.fabric.switch_ports = 16;
	c.fabric.pods = 4;
	c.fabric.leaves = 4;
	c.fabric.spines = 2;
	c.fabric.hosts_per_leaf = 12;
	c.fabric.uplinks_per_leaf = 4;   /* 2 cables to each spine: 3:1 */
	c.fabric.super_spines = 4;       /* 2 per plane */
	c.fabric.spine_uplinks = 4;      /* 2 cables to each super-spine: 2:1 */
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(t.nswitch_by_tier[1], 16);
	ck_assert_int_eq(t.nswitch_by_tier[2], 8);
	ck_assert_int_eq(t.nswitch_by_tier[3], 4);
	/* S*u*C*v*v*u = 2*2*2*2*2*2 */
	ck_assert_int_eq(topo_route_count(&t, 0, t.ngpus - 1), 64);
	random_pairs(&t, 3000, 99);
	ck_assert_int_eq(topo_summarize(&t, &s, &err), 0);
	ck_assert_double_eq_tol(s.oversubscription[1], 3.0, 1e-12);
	ck_assert_double_eq_tol(s.oversubscription[2], 2.0, 1e-12);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* ---- leaf-spine oversubscription and bisection ----------------------------------- */

START_TEST(leafspine_2to1_vs_1to1)
{
	struct topo_cluster c1, c2;
	struct topo t1, t2;
	struct topo_summary s1, s2;
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_int_eq(topo_cluster_load(&c1, "h100-roce-leafspine", 16, &err), 0);
	ck_assert_int_eq(topo_cluster_load(&c2, "h100-roce-leafspine-2to1", 16, &err), 0);
	ck_assert_int_eq(topo_build(&t1, &c1, &err), 0);
	ck_assert_int_eq(topo_build(&t2, &c2, &err), 0);
	ck_assert_int_eq(topo_summarize(&t1, &s1, &err), 0);
	ck_assert_int_eq(topo_summarize(&t2, &s2, &err), 0);
	ck_assert_double_eq_tol(s1.oversubscription[1], 1.0, 1e-12);
	ck_assert_double_eq_tol(s2.oversubscription[1], 2.0, 1e-12);
	ck_assert_double_gt(s1.bisection_Bps, 0);
	ck_assert_double_eq_tol(s2.bisection_Bps, s1.bisection_Bps / 2, s1.bisection_Bps * 1e-9);
	/* 16 nodes x 8 NICs x 50 GB/s / 2 = 3.2 TB/s at 1:1 */
	ck_assert_double_eq_tol(s1.bisection_Bps, 64 * 50e9, 1e3);
	topo_release(&t1);
	topo_release(&t2);
	topo_cluster_release(&c1);
	topo_cluster_release(&c2);
}
END_TEST

/* ---- placement -------------------------------------------------------------------------- */

START_TEST(placement_orders)
{
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int nodes = 4, gpn = 8, n = 32;
	int seen[32] = { 0 };
	ck_assert_int_eq(topo_cluster_load(&c, "dgx-h100-ndr", nodes, &err), 0);
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	for (int r = 0; r < n; r++)
		ck_assert_int_eq(t.rank_gpu[r], r);
	topo_release(&t);
	c.placement = TOPO_PLACE_ROUND_ROBIN;
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	for (int r = 0; r < n; r++) {
		ck_assert_int_eq(topo_gpu_host(&t, t.rank_gpu[r]), r % nodes);
		ck_assert_int_eq(topo_gpu_local(&t, t.rank_gpu[r]), r / nodes);
		ck_assert_int_eq(t.gpu_rank[t.rank_gpu[r]], r);
	}
	topo_release(&t);
	c.placement = TOPO_PLACE_RANDOM;
	c.seed = 5;
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	{
		struct topo t2;
		int moved = 0;
		ck_assert_int_eq(topo_build(&t2, &c, &err), 0);
		for (int r = 0; r < n; r++) {
			ck_assert_int_eq(t.rank_gpu[r], t2.rank_gpu[r]); /* seeded */
			seen[t.rank_gpu[r]]++;
			moved += t.rank_gpu[r] != r;
		}
		ck_assert_int_gt(moved, 0);
		topo_release(&t2);
	}
	for (int g = 0; g < n; g++)
		ck_assert_int_eq(seen[g], 1);
	topo_release(&t);
	ck_assert_int_eq(topo_placement_parse(&c, "3,2,1,0,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
					      "18,19,20,21,22,23,24,25,26,27,28,29,31,30", &err), 0);
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	ck_assert_int_eq(t.rank_gpu[0], 3);
	ck_assert_int_eq(t.rank_gpu[3], 0);
	ck_assert_int_eq(t.rank_gpu[30], 31);
	ck_assert_int_eq(t.gpu_rank[31], 30);
	topo_release(&t);
	(void)gpn;
	/* a repeated GPU is refused */
	ck_assert_int_eq(topo_placement_parse(&c, "0,0,1,2,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
					      "18,19,20,21,22,23,24,25,26,27,28,29,31,30", &err), 0);
	ck_assert_int_eq(topo_build(&t, &c, &err), TS_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "placement"));
	topo_cluster_release(&c);
}
END_TEST

/* ---- links carry what the spec says ----------------------------------------------------- */

START_TEST(link_attributes)
{
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int32_t p[TOPO_MAX_HOPS];
	int n;
	ck_assert_int_eq(topo_cluster_load(&c, "dgx-h100-ndr", 2, &err), 0);
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	for (int32_t l = 0; l < t.nlinks; l++) {
		const struct topo_link *k = &t.links[l];
		ck_assert_int_eq(t.links[k->rev].rev, l);
		ck_assert_int_eq(t.links[k->rev].from, k->to);
		ck_assert_double_gt(k->bw_Bps, 0);
		ck_assert_int_ge(k->lat_ps, 0);
		if (k->kind == TOPO_L_NET) {
			ck_assert_int_eq(k->mtu_bytes, 4096);
			ck_assert_int_eq(k->overhead_bytes, 26);
			ck_assert_double_eq(k->bw_Bps, 50e9);
		}
		if (k->kind == TOPO_L_NVLINK)
			ck_assert_double_eq(k->bw_Bps, 450e9);
	}
	/* GPU 0 -> GPU 1: over the NVSwitch */
	n = topo_route(&t, 0, 1, 0, p);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(t.links[p[0]].kind, TOPO_L_NVLINK);
	/* rail-optimised: GPU 3 of node 0 -> GPU 3 of node 1 is one leaf apart */
	n = topo_route(&t, 3, 8 + 3, 0, p);
	ck_assert_int_eq(n, 6);
	ck_assert_int_eq(topo_route_count(&t, 3, 11), 1);
	/* GPU 3 -> GPU 12 (other rail): over the 32 spines */
	ck_assert_int_eq(topo_route_count(&t, 3, 12), 32);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* ---- explicit fabric (examples/clusters/explicit-two-switches.json) --------------- */

START_TEST(explicit_fabric_routes)
{
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int32_t p[TOPO_MAX_HOPS];
	ck_assert_msg(topo_cluster_load(&c, tu_src(0, "examples/clusters/explicit-two-switches.json"),
					0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(c.fabric.nxswitches, 2);
	ck_assert_int_eq(c.fabric.nxlinks, 5);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	/* hosts 0 and 1 share tor-a; host 2 is behind the two tor-a/tor-b cables */
	ck_assert_int_eq(topo_route_count(&t, 0, 2), 1);
	ck_assert_int_eq(topo_route_count(&t, 0, 4), 2);
	ck_assert_int_eq(topo_route_nth(&t, 0, 4, 0, p), 7);
	ck_assert_double_eq(t.links[p[3]].bw_Bps, 100e9 / 8);
	ck_assert_int_eq(topo_route_nth(&t, 0, 4, 1, p), 7);
	ck_assert_int_lt(topo_route_nth(&t, 0, 4, 2, p), 0);
	random_pairs(&t, 500, 3);
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* ---- single nodes: diameter inside the host, no network ------------------------------ */

START_TEST(single_node_cases)
{
	struct topo_cluster c;
	struct topo t;
	struct topo_summary s;
	struct ts_error err = TS_ERROR_INIT;
	int32_t p[TOPO_MAX_HOPS];
	/* NVSwitch node: every GPU pair 2 hops apart */
	ck_assert_int_eq(topo_cluster_load(&c, "dgx-h100-ndr", 1, &err), 0);
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	ck_assert_int_eq(topo_summarize(&t, &s, &err), 0);
	ck_assert_int_eq(s.diameter_hops, 2);
	ck_assert_double_eq(s.bisection_Bps, 0);
	ck_assert_int_eq(s.ecmp_paths_max, 1);
	topo_release(&t);
	/* PCIe tree: 8 GPUs behind 2 PCIe switches joined at the host root:
	 * GPU-switch-root-switch-GPU */
	c.node.intra = TOPO_INTRA_PCIE;
	c.node.nvls = false;
	c.node.nics = 2;
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	ck_assert_int_eq(topo_summarize(&t, &s, &err), 0);
	ck_assert_int_eq(s.diameter_hops, 4);
	ck_assert_int_eq(topo_route(&t, 0, 1, 0, p), 2);
	ck_assert_int_eq(topo_route(&t, 0, 7, 0, p), 4);
	assert_connected(&t, 0, 7, p, 4);
	ck_assert_int_eq(topo_bfs_hops(&t, 0, 7), 4);
	topo_release(&t);
	/* fabric "none": one node, no switches */
	c.fabric.kind = TOPO_FABRIC_NONE;
	ck_assert_int_eq(topo_build(&t, &c, &err), 0);
	ck_assert_int_eq(t.nswitch_by_tier[1], 0);
	ck_assert_int_eq(topo_summarize(&t, &s, &err), 0);
	ck_assert_int_eq(s.switches_total, 0);
	ck_assert_int_eq(s.links_by_tier[1], 0);
	ck_assert_int_eq(s.diameter_hops, 4);
	topo_release(&t);
	c.nodes = 2; /* "none" holds one node */
	ck_assert_int_eq(topo_build(&t, &c, &err), TS_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "nodes"));
	topo_cluster_release(&c);
}
END_TEST

/* ---- D-mod-K: shift permutations without contention ----------------------------- */

/* Non-blocking fabrics: a k=8 fat-tree of 3 tiers and of 2, a 1:1
 * leaf-spine and a 1:1 three-tier Clos with 2 cables per leaf-spine and
 * spine-core pair, 1 GPU a node; and 64 DGX H100 nodes of the
 * rail-optimised NDR fat-tree. */
static void dmodk_fabric(struct topo_cluster *c, int i)
{
	struct ts_error err = TS_ERROR_INIT;
	switch (i) {
	case 0:
		fat_tree_cluster(c, 8, 3);
		break;
	case 1:
		fat_tree_cluster(c, 8, 2);
		break;
	case 2:
		one_gpu_nodes(c, 32);
		c->fabric.kind = TOPO_FABRIC_LEAF_SPINE;
		c->fabric.switch_ports = 16;
		c->fabric.leaves = 4;
		c->fabric.spines = 4;
		c->fabric.hosts_per_leaf = 8;
		c->fabric.uplinks_per_leaf = 8; /* 2 cables to each spine */
		break;
	case 3:
		one_gpu_nodes(c, 16);
		c->fabric.kind = TOPO_FABRIC_CLOS3;
		c->fabric.tiers = 3;
		c->fabric.switch_ports = 8;
		c->fabric.pods = 2;
		c->fabric.leaves = 2;
		c->fabric.spines = 2;
		c->fabric.hosts_per_leaf = 4;
		c->fabric.uplinks_per_leaf = 4; /* 2 cables to each spine */
		c->fabric.super_spines = 4;     /* 2 a plane */
		c->fabric.spine_uplinks = 4;    /* 2 cables to each */
		break;
	default:
		ck_assert_int_eq(topo_cluster_load(c, "dgx-h100-ndr-fat-tree", 64, &err), 0);
		break;
	}
}

/* The most routes on one link when GPU g of every host h sends to GPU g of
 * host h + s, for the worst shift s; every route checked to be connected,
 * two hosts' to be shortest paths. */
static int worst_shift_load(const struct topo *t)
{
	int gpn = t->cl.node.gpus, nh = t->nhosts, worst = 0, bad = 0;
	int *use = malloc((size_t)t->nlinks * sizeof(int));
	int32_t p[TOPO_MAX_HOPS];
	ck_assert_ptr_nonnull(use);
	for (int s = 1; s < nh; s++) {
		memset(use, 0, (size_t)t->nlinks * sizeof(int));
		for (int h = 0; h < nh; h++)
			for (int g = 0; g < gpn; g++) {
				int32_t a = h * gpn + g, b = ((h + s) % nh) * gpn + g;
				int n = topo_route(t, a, b, rng_hash2((uint64_t)s, (uint64_t)a), p);
				if (h < 2) { /* (a search of the whole graph each) */
					assert_connected(t, a, b, p, n);
					ck_assert_int_eq(n, topo_bfs_hops(t, a, b));
				}
				/* (connected, without a check per hop: Check's
				 * asserts cost a pipe write each) */
				bad += n < 1 || n > TOPO_MAX_HOPS || t->links[p[0]].from != a ||
				       t->links[p[n - 1]].to != b;
				for (int k = 0; k < n; k++) {
					bad += k > 0 && t->links[p[k]].from != t->links[p[k - 1]].to;
					if (++use[p[k]] > worst)
						worst = use[p[k]];
				}
			}
	}
	free(use);
	ck_assert_int_eq(bad, 0);
	return worst;
}

/* D-mod-K (InfiniBand's fat-tree routing): on a non-blocking fabric every
 * shift permutation (a ring's step, nccl-tests' sendrecv) runs with one
 * route per link, where ECMP's hashes put two or more on some link. */
START_TEST(dmodk_shifts_contention_free)
{
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	int e, d;
	dmodk_fabric(&c, _i);
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	e = worst_shift_load(&t);
	topo_release(&t);
	c.fabric.routing = TOPO_ROUTING_DMODK;
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	d = worst_shift_load(&t);
	ck_assert_msg(d == 1, "fabric %d: %d routes on a link under dmodk", _i, d);
	ck_assert_msg(e > 1, "fabric %d: ECMP put at most %d on a link", _i, e);
	/* static: one route per pair, whatever the hash */
	{
		int32_t p[TOPO_MAX_HOPS], q[TOPO_MAX_HOPS];
		int32_t b = t.ngpus - 1;
		int n = topo_route(&t, 0, b, 1, p);
		ck_assert_int_eq(topo_route(&t, 0, b, 12345, q), n);
		ck_assert(memcmp(p, q, (size_t)n * sizeof(int32_t)) == 0);
	}
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

/* D-mod-K's routes are paths of the fabric on every preset (with enough
 * nodes for every tier) and on an oversubscribed CLOS3 whose 3 cables per
 * leaf-spine pair do not divide the spine's 4 uplinks (the fallback):
 * connected, shortest, one per pair whatever the hash. */
START_TEST(dmodk_routes_valid)
{
	static const int nodes[] = { 160, 200, 64, 64, 200, 2 };
	struct topo_cluster c;
	struct topo t;
	struct ts_error err = TS_ERROR_INIT;
	if (_i < (int)TS_ARRAY_LEN(all_presets)) {
		ck_assert_int_eq(topo_cluster_load(&c, all_presets[_i], nodes[_i], &err), 0);
	} else {
		one_gpu_nodes(&c, 24);
		c.fabric.kind = TOPO_FABRIC_CLOS3;
		c.fabric.tiers = 3;
		c.fabric.switch_ports = 12;
		c.fabric.pods = 2;
		c.fabric.leaves = 2;
		c.fabric.spines = 2;
		c.fabric.hosts_per_leaf = 6;
		c.fabric.uplinks_per_leaf = 6; /* 3 cables to each spine */
		c.fabric.super_spines = 4;     /* 2 a plane */
		c.fabric.spine_uplinks = 4;    /* 2 cables to each */
	}
	c.fabric.routing = TOPO_ROUTING_DMODK;
	ck_assert_msg(topo_build(&t, &c, &err) == 0, "%s", err.msg);
	random_pairs(&t, 1500, 11 + (uint64_t)_i);
	for (int32_t b = 0; b < t.ngpus; b += 1 + t.ngpus / 97) {
		int32_t p[TOPO_MAX_HOPS], q[TOPO_MAX_HOPS];
		int n = topo_route(&t, 0, b, 3, p);
		ck_assert_int_eq(n, topo_bfs_hops(&t, 0, b));
		ck_assert_int_eq(topo_route(&t, 0, b, 77, q), n);
		ck_assert(memcmp(p, q, (size_t)n * sizeof(int32_t)) == 0);
	}
	topo_release(&t);
	topo_cluster_release(&c);
}
END_TEST

Suite *topo_suite(void);
Suite *topo_suite(void)
{
	Suite *s = suite_create("topo");
	TCase *tc = tcase_create("fabrics");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, fat_tree_counts, 0, (int)TS_ARRAY_LEN(ks));
	tcase_add_loop_test(tc, fat_tree_two_tier_counts, 0, (int)TS_ARRAY_LEN(ks));
	tcase_add_test(tc, fat_tree_paths_distinct);
	tcase_add_loop_test(tc, presets_paths_connected, 0, (int)TS_ARRAY_LEN(all_presets));
	tcase_add_loop_test(tc, presets_more_nodes_paths_connected, 0, (int)TS_ARRAY_LEN(all_presets));
	tcase_add_test(tc, clos3_paths_connected);
	tcase_add_test(tc, leafspine_2to1_vs_1to1);
	tcase_add_test(tc, placement_orders);
	tcase_add_test(tc, link_attributes);
	tcase_add_test(tc, explicit_fabric_routes);
	tcase_add_test(tc, single_node_cases);
	tcase_add_loop_test(tc, dmodk_shifts_contention_free, 0, 5);
	tcase_add_loop_test(tc, dmodk_routes_valid, 0, (int)TS_ARRAY_LEN(all_presets) + 1);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(topo_suite());
}

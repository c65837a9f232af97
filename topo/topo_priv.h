/* topo_priv.h: what build.c, route.c and summary.c share about the built
 * graph; not part of topo/'s face (topo.h).
 *
 * Structured fabrics (switch, fat-tree, leaf-spine, CLOS3) are described as
 * one layered Clos: leaves grouped into pods; every leaf joins every spine
 * of its pod with `u` parallel cables; spine s of every pod joins the `C`
 * cores of plane s with `v` parallel cables. Routes are computed from these
 * tables (no all-pairs state). Explicit fabrics are routed by breadth-first
 * search per query. */
#ifndef TS_TOPO_PRIV_H
#define TS_TOPO_PRIV_H

#include "topo/topo.h"

struct topo_rs {
	int tiers;            /* 0 no network, 1 one switch, 2 leaf-spine, 3 with cores */
	int explicit_fabric;  /* 1: route by BFS */
	int hpl;              /* host (NIC) ports per leaf */
	int lpp;              /* leaves per pod */
	int S, u;             /* spines per pod, cables per leaf-spine pair */
	int C, v;             /* cores per plane, cables per spine-core pair */
	int rails;            /* NIC i of every node on rail i */
	int nleaves, npods;   /* built */
	int ppsw;             /* PCIe switches per host */
	int32_t first_psw, first_root, first_nvs, first_sw; /* graph ids (-1 if none) */
	int32_t first_leaf, first_spine, first_core;        /* graph ids (-1 if none) */
	int32_t *leaf_up;     /* [nleaves][S*u]: leaf -> spine link ids */
	int32_t *spine_up;    /* [npods*S][C*v]: spine -> core link ids */
	int32_t *nic_up;      /* [nnics]: NIC -> switch link id (first one for explicit) */
	int32_t *gpu_psw;     /* [ngpus]: GPU -> PCIe switch link id */
	int32_t *gpu_nvs;     /* [ngpus]: GPU -> NVSwitch link id, -1 without NVSwitch */
	int32_t *psw_nic;     /* [nhosts*ppsw]: PCIe switch -> NIC link id, -1 if none */
	int32_t *psw_root;    /* [nhosts*ppsw]: PCIe switch -> host root link id, -1 if none */
};

static inline struct topo_rs *topo_rs(const struct topo *t)
{
	return (struct topo_rs *)t->route_state;
}

/* The PCIe switch (index among all hosts' PCIe switches) of a GPU. */
static inline int32_t topo_gpu_psw(const struct topo *t, int32_t gpu)
{
	const struct topo_rs *rs = topo_rs(t);
	int g = t->cl.node.gpus;
	return (gpu / g) * rs->ppsw + (gpu % g) * rs->ppsw / g;
}

/* The NIC index (0..nhosts*nics-1) a GPU uses, or -1. */
static inline int32_t topo_gpu_nic_index(const struct topo *t, int32_t gpu)
{
	return t->gpu_nic[gpu] < 0 ? -1 : t->gpu_nic[gpu] - t->first_nic;
}

/* Breadth-first search from GPU src under the routing policy (route.c):
 * dist[2*v + s] is the hop count to node v in state s (0 before, 1 after
 * coming down from the network into a host), -1 if unreached. dist and q
 * hold 2 * t->nnodes entries. */
void topo_bfs_all(const struct topo *t, int32_t src, int32_t *dist, int32_t *q);

#endif

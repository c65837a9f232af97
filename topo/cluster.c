/* cluster.c: cluster descriptions: built-in presets, cluster JSON files,
 * validation, placement words.
 *
 * A description is plain data (struct topo_cluster); topo_build turns it
 * into a graph. Every number of a preset cites hardware.md
 * (/work/shared/reference/hardware.md) or is labelled an assumption. Files
 * may start from a preset ("preset": "dgx-h100-ndr") and override any field;
 * unknown keys are refused so that typos do not pass silently. */
#include "topo/topo.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/rng.h"

/* ---- defaults that are assumptions (not datasheet values) ------------------ */

/* Cable propagation: hardware.md "about 5 ns per metre"; 5 m of cable per hop
 * inside a row is an assumption. */
#define CABLE_LAT_S (5.0 * 5e-9)
/* InfiniBand port-to-port: hardware.md "around 100-200 ns"; the midpoint. */
#define IB_SWITCH_LAT_S 150e-9
/* Ethernet port-to-port: hardware.md "a few hundred ns to about 1 us"; 500 ns
 * is an assumption inside that range. */
#define ETH_SWITCH_LAT_S 500e-9
/* GPU -> NVSwitch -> GPU one way: assumption (no datasheet figure); NCCL's own
 * per-step latencies are modelled in sim/, not here. */
#define NVLINK_LAT_S 300e-9
/* One PCIe switch hop: assumption. */
#define PCIE_LAT_S 150e-9
/* TCP host costs before calibration: a host copy at about 10 GB/s and about
 * 5 us of kernel path per message; both assumptions, fitted by `calibrate`. */
#define TCP_BYTE_S (1.0 / 10e9)
#define TCP_MSG_S 5e-6

/* Packets (hardware.md "Packets and MTU"). */
#define IB_MTU 4096
#define IB_OVERHEAD 26      /* LRH 8 + BTH 12 + ICRC 4 + VCRC 2 */
#define ROCE_MTU 4096
#define ROCE_OVERHEAD 82    /* Ethernet 38 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 */
#define TCP_MTU 1448        /* 1500 minus IPv4/TCP headers with timestamps */
#define TCP_OVERHEAD 90     /* Ethernet 38 + IPv4 20 + TCP 20 + timestamps 12 */

#define MAX_NODES TOPO_MAX_NODES
#define MAX_GPUS_PER_NODE 64
#define MAX_NICS_PER_NODE 64
#define MAX_K 256

/* ---- names ---------------------------------------------------------------------- */

static const char *const fabric_names[] = { "none", "switch", "fat-tree", "leaf-spine",
					     "clos3", "explicit", NULL };
static const char *const placement_names[] = { "linear", "round-robin", "random", "list", NULL };
static const char *const intra_names[] = { "nvswitch", "pcie", NULL };
static const char *const cpu_names[] = { "intel", "amd", "arm", NULL };

const char *topo_cpu_name(enum topo_cpu c)
{
	return (unsigned)c < TS_ARRAY_LEN(cpu_names) - 1 ? cpu_names[c] : "?";
}
static const char *const transport_names[] = { "rdma", "tcp", NULL };
const char *const topo_routing_names[] = { "ecmp", "spray", "dmodk", NULL };
/* (said where a file sets it and where the description is checked) */
static const char dmodk_needs[] =
	"routing 'dmodk' needs a structured fabric (switch, fat-tree, leaf-spine or clos3)";

const char *topo_fabric_name(enum topo_fabric_kind k)
{
	if ((unsigned)k < TS_ARRAY_LEN(fabric_names) - 1)
		return fabric_names[k];
	return "?";
}

const char *topo_placement_name(enum topo_placement p)
{
	if ((unsigned)p < TS_ARRAY_LEN(placement_names) - 1)
		return placement_names[p];
	return "?";
}

/* ---- presets ----------------------------------------------------------------------- */

static void gpu_a100_80(struct topo_gpu_spec *g)
{
	/* hardware.md GPUs: A100 SXM4 80GB: 312 TFLOP/s BF16, 80 GB, 2039 GB/s,
	 * NVLink 600 GB/s both directions -> 300 per direction. */
	snprintf(g->name, sizeof(g->name), "A100-SXM4-80GB");
	g->bf16_flops = 312e12;
	g->fp8_flops = 0;
	g->hbm_Bps = 2039e9;
	g->nvlink_Bps = 300e9;
	g->sm_arch = 80;
	/* "80 GB" of HBM2e is 80 GiB (five 16 GiB stacks; nvidia-smi shows
	 * 81920 MiB), so the binary unit is the faithful reading. */
	g->mem_bytes = 80.0 * TS_GiB;
}

static void gpu_h100(struct topo_gpu_spec *g)
{
	/* hardware.md GPUs: H100 SXM5 80GB: 989 BF16, 1979 FP8, 80 GB, 3.35 TB/s,
	 * NVLink 900 GB/s both directions -> 450 per direction. */
	snprintf(g->name, sizeof(g->name), "H100-SXM5-80GB");
	g->bf16_flops = 989e12;
	g->fp8_flops = 1979e12;
	g->hbm_Bps = 3.35e12;
	g->nvlink_Bps = 450e9;
	g->sm_arch = 90;
	/* "80 GB" of HBM3: nvidia-smi shows 81559 MiB (79.6 GiB) on an H100
	 * SXM5, what a process can have, as the H200's figure below (found by
	 * review: 80 GiB of stacks was taken, 361 MiB more) */
	g->mem_bytes = 81559.0 * TS_MiB;
}

static void gpu_h200(struct topo_gpu_spec *g)
{
	/* hardware.md GPUs: H200 SXM 141GB: 989 BF16, 1979 FP8, 141 GB, 4.8 TB/s,
	 * NVLink 900 GB/s both directions. */
	snprintf(g->name, sizeof(g->name), "H200-SXM-141GB");
	g->bf16_flops = 989e12;
	g->fp8_flops = 1979e12;
	g->hbm_Bps = 4.8e12;
	g->nvlink_Bps = 450e9;
	g->sm_arch = 90;
	/* 141 GB of HBM3e: nvidia-smi shows 143771 MiB (140.4 GiB) on an H200 SXM. */
	g->mem_bytes = 143771.0 * TS_MiB;
}

static void node_dgx(struct topo_node_spec *n, double nic_gbps, double pcie_GBps)
{
	/* hardware.md Nodes: DGX A100/H100: 8 GPUs on NVSwitch, 8 compute NICs,
	 * one per GPU behind a PCIe switch shared with it. */
	n->gpus = 8;
	n->nics = 8;
	n->intra = TOPO_INTRA_NVSWITCH;
	n->nvls = false;
	n->cpu = TOPO_CPU_INTEL; /* the presets set theirs */
	n->nic_Bps = bw_from_gbps(nic_gbps);
	n->pcie_Bps = bw_from_GBps(pcie_GBps);
	n->nvlink_lat_s = NVLINK_LAT_S;
	n->pcie_lat_s = PCIE_LAT_S;
}

static void fabric_ib(struct topo_fabric_spec *f, double gbps)
{
	f->link_Bps = bw_from_gbps(gbps);
	f->link_lat_s = CABLE_LAT_S;
	f->switch_lat_s = IB_SWITCH_LAT_S;
	f->mtu_bytes = IB_MTU;
	f->overhead_bytes = IB_OVERHEAD;
	f->transport = TOPO_TRANSPORT_RDMA;
}

static void fabric_roce(struct topo_fabric_spec *f, double gbps)
{
	f->link_Bps = bw_from_gbps(gbps);
	f->link_lat_s = CABLE_LAT_S;
	f->switch_lat_s = ETH_SWITCH_LAT_S;
	f->mtu_bytes = ROCE_MTU;
	f->overhead_bytes = ROCE_OVERHEAD;
	f->transport = TOPO_TRANSPORT_RDMA;
}

static void leaf_spine(struct topo_fabric_spec *f, int ports, int leaves, int spines, int down,
		       int up)
{
	f->kind = TOPO_FABRIC_LEAF_SPINE;
	f->tiers = 2;
	f->switch_ports = ports;
	f->leaves = leaves;
	f->spines = spines;
	f->hosts_per_leaf = down;
	f->uplinks_per_leaf = up;
}

static void fat_tree(struct topo_fabric_spec *f, int k, int tiers)
{
	f->kind = TOPO_FABRIC_FAT_TREE;
	f->k = k;
	f->tiers = tiers;
	f->switch_ports = k;
}

struct preset {
	const char *name;
	const char *summary;
	void (*fill)(struct topo_cluster *c);
};

static void p_dgx_a100_hdr(struct topo_cluster *c)
{
	gpu_a100_80(&c->gpu);
	node_dgx(&c->node, 200, 32); /* ConnectX-6 HDR 200 Gb/s; PCIe Gen4 x16 ~32 GB/s */
	c->node.cpu = TOPO_CPU_AMD;  /* NVIDIA DGX A100 datasheet: dual AMD Rome 7742 */
	fat_tree(&c->fabric, 40, 3); /* QM8700: 40 x 200 Gb/s; 3 tiers as in a SuperPOD */
	/* Rail-optimised like the DGX SuperPOD (hardware.md "Rail-optimised"):
	 * HCA i of the DGXs under one leaf group all sit on leaf i, so NCCL's
	 * per-rail rings stay one switch hop apart instead of colliding in ECMP. */
	c->fabric.rails = true;
	fabric_ib(&c->fabric, 200);
	c->nodes = 4;
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: A100 SXM4 80GB, DGX A100 (8x HDR 200G), QM8700 40x200G, rail-optimised");
}

static void p_dgx_h100_ndr(struct topo_cluster *c)
{
	gpu_h100(&c->gpu);
	node_dgx(&c->node, 400, 64); /* ConnectX-7 NDR 400 Gb/s; PCIe Gen5 x16 ~64 GB/s */
	c->node.nvls = true;         /* NVSwitch gen 3 (H100) supports NVLS (nccl.md) */
	c->node.cpu = TOPO_CPU_INTEL; /* NVIDIA DGX H100 datasheet: dual Xeon Platinum 8480C */
	/* QM9700 64 x 400G: 64 leaves of 32 down + 32 up, 32 spines: 2048 NIC
	 * ports = 256 DGX; rail-optimised (hardware.md). */
	leaf_spine(&c->fabric, 64, 64, 32, 32, 32);
	c->fabric.rails = true;
	fabric_ib(&c->fabric, 400);
	c->nodes = 4;
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: H100 SXM5, DGX H100 (8x NDR 400G), QM9700 64x400G, rail-optimised");
}

static void p_dgx_h100_ndr_fat_tree(struct topo_cluster *c)
{
	p_dgx_h100_ndr(c);
	fat_tree(&c->fabric, 64, 3); /* k=64: 65,536 NIC ports, 8,192 DGX at most */
	c->fabric.rails = true;
	c->nodes = 2048;             /* 16,384 GPUs */
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: H100 SXM5, DGX H100 (8x NDR 400G), 3-tier k=64 fat-tree of QM9700");
}

static void p_h200_ndr(struct topo_cluster *c)
{
	p_dgx_h100_ndr(c);
	gpu_h200(&c->gpu);
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: H200 SXM 141GB, 8x NDR 400G, QM9700 64x400G, rail-optimised");
}

static void roce_leafspine(struct topo_cluster *c, int up)
{
	gpu_h100(&c->gpu);
	node_dgx(&c->node, 400, 64);
	c->node.nvls = true;
	/* Tomahawk 4: 64 x 400G (hardware.md). 32 ports down per leaf; up = 32
	 * (1:1) or 16 (2:1); one uplink per spine. */
	leaf_spine(&c->fabric, 64, 64, up, 32, up);
	fabric_roce(&c->fabric, 400);
	/* (node.cpu: node_dgx's Intel, an assumption: hardware.md names none) */
	c->nodes = 16;
}

static void p_roce_2to1(struct topo_cluster *c)
{
	roce_leafspine(c, 16);
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: H100 SXM5, 8x 400G RoCEv2, Tomahawk 4 64x400G, leaf-spine 2:1");
}

static void p_roce_1to1(struct topo_cluster *c)
{
	roce_leafspine(c, 32);
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: H100 SXM5, 8x 400G RoCEv2, Tomahawk 4 64x400G, leaf-spine 1:1");
}

static void p_pcie_2x2_tcp(struct topo_cluster *c)
{
	/* The lab set-up: 2 machines x 2 PCIe GPUs, one 25G Ethernet NIC each,
	 * one switch, TCP. The GPU is an A100 40GB-class part (hardware.md
	 * A100 SXM4 40GB row: 312 TFLOP/s, 40 GB, 1555 GB/s) without NVLink;
	 * that the lab GPU is such a part is an assumption. */
	snprintf(c->gpu.name, sizeof(c->gpu.name), "A100-PCIe-40GB");
	c->gpu.bf16_flops = 312e12;
	c->gpu.mem_bytes = 40.0 * TS_GiB; /* "40 GB" HBM2: 40 GiB of stacks */
	c->gpu.hbm_Bps = 1555e9;
	c->gpu.nvlink_Bps = 0;
	c->gpu.sm_arch = 80;
	c->node.gpus = 2;
	c->node.nics = 1;
	c->node.intra = TOPO_INTRA_PCIE;
	c->node.nic_Bps = bw_from_gbps(25);
	c->node.pcie_Bps = bw_from_GBps(32); /* PCIe Gen4 x16 ~32 GB/s */
	c->node.nvlink_lat_s = 0;
	c->node.pcie_lat_s = PCIE_LAT_S;
	c->node.cpu = TOPO_CPU_INTEL; /* assumption: the lab's CPUs are not stated */
	c->fabric.kind = TOPO_FABRIC_SWITCH;
	c->fabric.tiers = 1;
	c->fabric.switch_ports = 0; /* as many as needed */
	c->fabric.link_Bps = bw_from_gbps(25);
	c->fabric.link_lat_s = CABLE_LAT_S;
	c->fabric.switch_lat_s = ETH_SWITCH_LAT_S;
	c->fabric.mtu_bytes = TCP_MTU;
	c->fabric.overhead_bytes = TCP_OVERHEAD;
	c->fabric.transport = TOPO_TRANSPORT_TCP;
	c->fabric.tcp_byte_s = TCP_BYTE_S;
	c->fabric.tcp_msg_s = TCP_MSG_S;
	c->nodes = 2;
	snprintf(c->source, sizeof(c->source),
		 "hardware.md: A100 40GB numbers, PCIe Gen4, 25G Ethernet + TCP (MTU 1500)");
}

static const struct preset presets[] = {
	{ "dgx-a100-hdr", "8x A100-80GB per node, 8x HDR 200G, 3-tier fat-tree of 40-port QM8700",
	  p_dgx_a100_hdr },
	{ "dgx-h100-ndr", "8x H100 per node, 8x NDR 400G, rail-optimised leaf-spine of 64-port QM9700",
	  p_dgx_h100_ndr },
	{ "dgx-h100-ndr-fat-tree", "8x H100 per node, 8x NDR 400G, rail-optimised k=64 3-tier fat-tree (2048 nodes)",
	  p_dgx_h100_ndr_fat_tree },
	/* the name DESIGN.md gives as its example of a built-in cluster */
	{ "dgx-h100-ib-fat-tree", "the same as dgx-h100-ndr-fat-tree", p_dgx_h100_ndr_fat_tree },
	{ "h100-roce-leafspine-2to1", "8x H100 per node, 8x 400G RoCE, leaf-spine at 2:1",
	  p_roce_2to1 },
	{ "h100-roce-leafspine", "8x H100 per node, 8x 400G RoCE, leaf-spine at 1:1 (twin of -2to1)",
	  p_roce_1to1 },
	{ "h200-ndr", "8x H200 per node, 8x NDR 400G, rail-optimised leaf-spine of 64-port QM9700",
	  p_h200_ndr },
	{ "pcie-2x2-tcp", "2 nodes x 2 PCIe GPUs, one 25G Ethernet NIC each, one switch, TCP",
	  p_pcie_2x2_tcp },
};

const char *const *topo_preset_names(void)
{
	static const char *names[TS_ARRAY_LEN(presets) + 1];
	for (size_t i = 0; i < TS_ARRAY_LEN(presets); i++)
		names[i] = presets[i].name;
	names[TS_ARRAY_LEN(presets)] = NULL;
	return names;
}

const char *topo_preset_summary(const char *name)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(presets); i++)
		if (!strcmp(presets[i].name, name))
			return presets[i].summary;
	return NULL;
}

static const struct preset *preset_find(const char *name)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(presets); i++)
		if (!strcmp(presets[i].name, name))
			return &presets[i];
	return NULL;
}

static void cluster_zero(struct topo_cluster *c)
{
	memset(c, 0, sizeof(*c));
	c->seed = 1;
	c->placement = TOPO_PLACE_LINEAR;
}

static int preset_apply(struct topo_cluster *c, const char *name, struct ts_error *err)
{
	const struct preset *p = preset_find(name);
	if (!p) {
		char list[400] = "";
		size_t used = 0;
		for (size_t i = 0; i < TS_ARRAY_LEN(presets); i++) {
			int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 presets[i].name);
			if (n < 0 || (size_t)n >= sizeof(list) - used)
				break;
			used += (size_t)n;
		}
		return ts_error_set(err, TS_EINPUT, "unknown cluster preset '%s' (presets: %s)", name,
				    list);
	}
	p->fill(c);
	snprintf(c->name, sizeof(c->name), "%s", p->name);
	return 0;
}

/* ---- validation -------------------------------------------------------------------- */

/* Fabric capacity in NIC ports, leaves needed, etc. are derived in build.c
 * too; the checks here are the ones a user can get wrong. On failure *field
 * is the JSON path of the culprit and msg the reason. */
/* An explicit fabric's routes, breadth-first over its switches (every NIC
 * port has one cable, so a NIC-to-NIC route is its switches' distance + 2):
 * *far the first port with no path to port 0, else -1; then *hops the
 * first route longer than a path holds (TOPO_MAX_HOPS, 4 of them inside
 * the hosts), from port *wa to port *wb, else -1. TS_ENOMEM or 0. */
static int explicit_routes(const struct topo_fabric_spec *f, long long ports, long long *far,
			   long long *hops, long long *wa, long long *wb)
{
	int32_t ns = f->nxswitches;
	int32_t *sw_of = malloc((size_t)ports * sizeof(int32_t));
	int32_t *off = calloc((size_t)ns + 1, sizeof(int32_t));
	int32_t *adj = malloc((size_t)(2 * f->nxlinks + 1) * sizeof(int32_t));
	int32_t *dist = malloc((size_t)ns * sizeof(int32_t));
	int32_t *queue = malloc((size_t)ns * sizeof(int32_t));
	bool *from = calloc((size_t)ns, sizeof(bool));
	int rc = 0;
	*far = *hops = -1;
	if (!sw_of || !off || !adj || !dist || !queue || !from) {
		rc = TS_ENOMEM;
		goto out;
	}
	for (int i = 0; i < f->nxlinks; i++) { /* switch degrees, each NIC's switch */
		const struct topo_xlink *l = &f->xlinks[i];
		if (l->a >= 0 && l->b >= 0) {
			off[l->a + 1]++;
			off[l->b + 1]++;
		} else if (l->a >= 0 || l->b >= 0) {
			sw_of[l->a < 0 ? -l->a - 1 : -l->b - 1] = l->a >= 0 ? l->a : l->b;
		}
	}
	for (int32_t v = 0; v < ns; v++)
		off[v + 1] += off[v];
	for (int i = 0; i < f->nxlinks; i++) {
		const struct topo_xlink *l = &f->xlinks[i];
		if (l->a >= 0 && l->b >= 0) {
			adj[off[l->a]++] = l->b;
			adj[off[l->b]++] = l->a;
		}
	}
	for (int32_t v = ns; v > 0; v--) /* (the fill moved each start up) */
		off[v] = off[v - 1];
	off[0] = 0;
	for (long long p = 0; p < ports; p++)
		from[sw_of[p]] = true;
	/* port 0's switch first: what it does not reach has no path */
	for (int32_t k = -1; k < ns && *far < 0 && *hops < 0; k++) {
		int32_t src = k < 0 ? sw_of[0] : k, head = 0, tail = 0;
		if (k >= 0 && (!from[k] || k == sw_of[0]))
			continue;
		for (int32_t v = 0; v < ns; v++)
			dist[v] = -1;
		dist[src] = 0;
		queue[tail++] = src;
		while (head < tail) {
			int32_t w = queue[head++];
			for (int32_t e = off[w]; e < off[w + 1]; e++)
				if (dist[adj[e]] < 0) {
					dist[adj[e]] = dist[w] + 1;
					queue[tail++] = adj[e];
				}
		}
		for (long long p = 0; p < ports && *far < 0 && *hops < 0; p++) {
			if (dist[sw_of[p]] < 0)
				*far = p;
			else if (dist[sw_of[p]] + 2 > TOPO_MAX_HOPS - 4) {
				*hops = dist[sw_of[p]] + 2;
				*wb = p;
				for (*wa = 0; *wa < ports && sw_of[*wa] != src; (*wa)++)
					;
			}
		}
	}
out:
	free(sw_of);
	free(off);
	free(adj);
	free(dist);
	free(queue);
	free(from);
	return rc;
}

static int check_fields(const struct topo_cluster *c, char *field, size_t fn, char *msg, size_t n)
{
	const struct topo_node_spec *nd = &c->node;
	const struct topo_fabric_spec *f = &c->fabric;
	long long ports, need;

#define BAD(fld, ...)                               \
	do {                                        \
		snprintf(field, fn, "%s", (fld));   \
		snprintf(msg, n, __VA_ARGS__);      \
		return TS_EINPUT;                   \
	} while (0)
/* an element of an array, or a field of one ("fabric.links[3].to") */
#define BAD_AT(arr, idx, sub, ...)                                    \
	do {                                                          \
		snprintf(field, fn, "%s[%d]%s", (arr), (int)(idx), (sub)); \
		snprintf(msg, n, __VA_ARGS__);                        \
		return TS_EINPUT;                                     \
	} while (0)

	if (c->nodes < 1 || c->nodes > MAX_NODES)
		BAD("nodes", "must be between 1 and %d (got %d)", MAX_NODES, c->nodes);
	if (nd->gpus < 1 || nd->gpus > MAX_GPUS_PER_NODE)
		BAD("node.gpus", "must be between 1 and %d (got %d)", MAX_GPUS_PER_NODE, nd->gpus);
	if (nd->nics < 0 || nd->nics > MAX_NICS_PER_NODE)
		BAD("node.nics", "must be between 0 and %d (got %d)", MAX_NICS_PER_NODE, nd->nics);
	if (nd->nics > nd->gpus || (nd->nics && nd->gpus % nd->nics))
		BAD("node.nics", "must divide the GPUs per node (%d GPUs, got %d NICs)", nd->gpus,
		    nd->nics);
	if (!(c->gpu.mem_bytes > 0))
		BAD("gpu.memory", "must be positive");
	if (!(c->gpu.bf16_flops > 0))
		BAD("gpu.bf16_tflops", "must be positive");
	if (!(c->gpu.hbm_Bps > 0))
		BAD("gpu.hbm_bandwidth", "must be positive");
	if (nd->intra == TOPO_INTRA_NVSWITCH && !(c->gpu.nvlink_Bps > 0))
		BAD("gpu.nvlink_bandwidth", "must be positive with node.intra \"nvswitch\"");
	if (nd->nvls && nd->intra != TOPO_INTRA_NVSWITCH)
		BAD("node.nvls|node.intra", "NVLS (node.nvls) needs node.intra \"nvswitch\" (set "
		    "node.nvls false)");
	/* (blamed on the one the file gives: found by an audit, 2026-12-06, an
	 * H100 preset's sm_arch set to 89 was blamed at 1:1 on the preset's
	 * nvls) */
	if (nd->nvls && c->gpu.sm_arch < 90)
		BAD("node.nvls|gpu.sm_arch", "NVLS (node.nvls) needs a GPU of sm_arch 90 or above: "
		    "NCCL has no NVLS before Hopper's NVSwitch (got sm_arch %d; set node.nvls false)",
		    c->gpu.sm_arch);
	if ((nd->nics || nd->intra == TOPO_INTRA_PCIE) && !(nd->pcie_Bps > 0))
		BAD("node.pcie_bandwidth", "must be positive");
	if (nd->nvlink_lat_s < 0 || nd->pcie_lat_s < 0)
		BAD("node", "latencies must not be negative");
	if (f->kind == TOPO_FABRIC_NONE) {
		if (c->nodes != 1)
			BAD("nodes", "fabric \"none\" holds one node (got %d)", c->nodes);
		return 0;
	}
	if (nd->nics < 1)
		BAD("node.nics", "must be at least 1 to join fabric \"%s\"", topo_fabric_name(f->kind));
	if (!(nd->nic_Bps > 0))
		BAD("node.nic_bandwidth", "must be positive");
	/* (unused by a single switch; an explicit fabric's links give their
	 * own where it is not) */
	if (!(f->link_Bps > 0) && f->kind != TOPO_FABRIC_SWITCH && f->kind != TOPO_FABRIC_EXPLICIT)
		BAD("fabric.link_bandwidth", "must be positive");
	if (f->link_lat_s < 0)
		BAD("fabric.link_latency", "must not be negative");
	if (f->switch_lat_s < 0)
		BAD("fabric.switch_latency", "must not be negative");
	if (f->mtu_bytes < 64 || f->mtu_bytes > 1 << 20)
		BAD("fabric.mtu_bytes", "must be between 64 and 1048576 (got %d)", f->mtu_bytes);
	if (f->overhead_bytes < 0 || f->overhead_bytes > 4096)
		BAD("fabric.packet_overhead_bytes", "must be between 0 and 4096 (got %d)",
		    f->overhead_bytes);
	if (f->tcp_byte_s < 0 || f->tcp_msg_s < 0)
		BAD("fabric", "TCP host costs must not be negative");
	if ((unsigned)f->routing > TOPO_ROUTING_DMODK)
		BAD("fabric.routing", "unknown routing (%d)", (int)f->routing);
	if (f->routing == TOPO_ROUTING_DMODK && f->kind == TOPO_FABRIC_EXPLICIT)
		BAD("fabric.routing", "%s", dmodk_needs);
	ports = (long long)c->nodes * nd->nics;

	switch (f->kind) {
	case TOPO_FABRIC_NONE:
		break;
	case TOPO_FABRIC_SWITCH:
		if (f->switch_ports < 0)
			BAD("fabric.switch_ports", "must not be negative (got %d)", f->switch_ports);
		if (f->switch_ports && ports > f->switch_ports)
			BAD("nodes", "more nodes than the fabric holds: %d nodes x %d NICs need %lld "
			    "ports, the switch has %d", c->nodes, nd->nics, ports, f->switch_ports);
		break;
	case TOPO_FABRIC_FAT_TREE: {
		int k = f->k;
		long long hold;
		if (k < 2 || k > MAX_K)
			BAD("fabric.k", "must be between 2 and %d (got %d)", MAX_K, k);
		if (k % 2)
			BAD("fabric.k", "must be even (got %d)", k);
		if (f->tiers != 2 && f->tiers != 3)
			BAD("fabric.tiers", "must be 2 or 3 (got %d)", f->tiers);
		if (f->switch_ports < 1)
			BAD("fabric.switch_ports", "must be at least 1 (got %d)", f->switch_ports);
		if (f->switch_ports < k)
			BAD("fabric.k|fabric.switch_ports",
			    "a k=%d fat-tree needs %d ports per switch, the switch has %d",
			    k, k, f->switch_ports);
		hold = f->tiers == 2 ? (long long)k * k / 2 : (long long)k * k * k / 4;
		if (f->rails) {
			/* a leaf serves k/2 nodes on one rail: whole groups of nics leaves */
			long long groups = (c->nodes + k / 2 - 1) / (k / 2);
			need = groups * nd->nics * (k / 2);
		} else {
			need = ports;
		}
		if (need > hold)
			BAD("nodes", "more nodes than the fabric holds: %d nodes x %d NICs need %lld "
			    "host ports, a %d-tier k=%d fat-tree has %lld", c->nodes, nd->nics, need,
			    f->tiers, k, hold);
		break;
	}
	case TOPO_FABRIC_LEAF_SPINE:
	case TOPO_FABRIC_CLOS3: {
		long long leaves_need, hold;
		if (f->hosts_per_leaf < 1)
			BAD("fabric.hosts_per_leaf", "must be at least 1 (got %d)", f->hosts_per_leaf);
		if (f->leaves < 1)
			BAD("fabric.leaves", "must be at least 1 (got %d)", f->leaves);
		if (f->spines < 1)
			BAD("fabric.spines", "must be at least 1 (got %d)", f->spines);
		if (f->uplinks_per_leaf < f->spines || f->uplinks_per_leaf % f->spines)
			BAD("fabric.uplinks_per_leaf",
			    "must be a multiple of fabric.spines (%d) so every leaf reaches every "
			    "spine equally (got %d)", f->spines, f->uplinks_per_leaf);
		if (f->switch_ports < 1)
			BAD("fabric.switch_ports", "must be at least 1 (got %d)", f->switch_ports);
		if (f->hosts_per_leaf + f->uplinks_per_leaf > f->switch_ports)
			BAD("fabric.hosts_per_leaf|fabric.uplinks_per_leaf|fabric.switch_ports",
			    "more ports than a switch has: %d down + %d up > %d ports per switch",
			    f->hosts_per_leaf, f->uplinks_per_leaf, f->switch_ports);
		if ((long long)f->leaves * (f->uplinks_per_leaf / f->spines) +
			    (f->kind == TOPO_FABRIC_CLOS3 ? f->spine_uplinks : 0) > f->switch_ports)
			BAD("fabric.leaves|fabric.uplinks_per_leaf|fabric.spines|fabric.spine_uplinks|"
			    "fabric.switch_ports",
			    "more ports than a switch has: each spine needs %lld ports, a switch has %d",
			    (long long)f->leaves * (f->uplinks_per_leaf / f->spines) +
				    (f->kind == TOPO_FABRIC_CLOS3 ? f->spine_uplinks : 0),
			    f->switch_ports);
		if (f->kind == TOPO_FABRIC_CLOS3) {
			int per_plane;
			if (f->pods < 1)
				BAD("fabric.pods", "must be at least 1 (got %d)", f->pods);
			if (f->super_spines < f->spines || f->super_spines % f->spines)
				BAD("fabric.super_spines",
				    "must be a multiple of fabric.spines (%d) (one plane per spine; got %d)",
				    f->spines, f->super_spines);
			per_plane = f->super_spines / f->spines;
			if (f->spine_uplinks < per_plane || f->spine_uplinks % per_plane)
				BAD("fabric.spine_uplinks",
				    "must be a multiple of the super-spines per plane (%d) (got %d)",
				    per_plane, f->spine_uplinks);
			if ((long long)f->pods * (f->spine_uplinks / per_plane) > f->switch_ports)
				BAD("fabric.pods",
				    "more ports than a switch has: each super-spine needs %lld ports, a "
				    "switch has %d", (long long)f->pods * (f->spine_uplinks / per_plane),
				    f->switch_ports);
		}
		if (f->rails) {
			long long groups = (c->nodes + f->hosts_per_leaf - 1) / f->hosts_per_leaf;
			leaves_need = groups * nd->nics;
		} else {
			leaves_need = (ports + f->hosts_per_leaf - 1) / f->hosts_per_leaf;
		}
		hold = (long long)f->leaves * (f->kind == TOPO_FABRIC_CLOS3 ? f->pods : 1);
		if (leaves_need > hold)
			BAD("nodes", "more nodes than the fabric holds: %d nodes x %d NICs need %lld "
			    "leaves of %d host ports, the fabric has %lld", c->nodes, nd->nics,
			    leaves_need, f->hosts_per_leaf, hold);
		break;
	}
	case TOPO_FABRIC_EXPLICIT:
		if (f->nxswitches < 1)
			BAD("fabric.switches", "an explicit fabric needs at least one switch");
		{
			/* per NIC port: 1 + the cable that holds it, or 0 */
			int *cabled = calloc((size_t)ports + 1, sizeof(*cabled));
			long long missing = -1;
			if (!cabled)
				BAD("fabric.links", "out of memory");
			for (int i = 0; i < f->nxlinks; i++) {
				const struct topo_xlink *l = &f->xlinks[i];
				bool far_a = l->a < 0 && -l->a - 1 >= ports;
				if (far_a || (l->b < 0 && -l->b - 1 >= ports)) {
					free(cabled);
					long long nic = far_a ? -l->a - 1 : -l->b - 1;
					BAD_AT("fabric.links", i, far_a ? ".from" : ".to",
					       "host%lld/nic%lld names a host beyond the cluster's %d "
					       "node%s", nic / nd->nics, nic % nd->nics, c->nodes,
					       c->nodes == 1 ? "" : "s");
				}
				long long nic = l->a < 0 ? -l->a - 1 : l->b < 0 ? -l->b - 1 : -1;
				if (nic < 0)
					continue; /* switch to switch: parallel cables are trunks */
				if (cabled[nic]) {
					/* one port per NIC: a second cable would double its
					 * bandwidth (found by review) */
					int first = cabled[nic] - 1;
					free(cabled);
					BAD_AT("fabric.links", i, l->a < 0 ? ".from" : ".to",
					       "host%lld/nic%lld is already cabled by fabric.links[%d] (a NIC "
					       "has one port; list a dual-port card as two NICs)",
					       nic / nd->nics, nic % nd->nics, first);
				}
				cabled[nic] = i + 1;
			}
			for (long long p = 0; p < ports && missing < 0; p++)
				if (!cabled[p])
					missing = p;
			free(cabled);
			if (missing >= 0)
				BAD("fabric.links", "host%lld/nic%lld is not cabled to any switch",
				    missing / nd->nics, missing % nd->nics);
		}
		{
			/* every NIC reaches NIC 0 through the switches, and every
			 * NIC-to-NIC route within the hops a path holds (here, so
			 * the errors have the file's position: found by review;
			 * the hops by an audit: a chain of 12 switches loaded, and
			 * then its collectives failed with "no route or out of
			 * memory") */
			long long far = -1, hops = -1, wa = 0, wb = 0;
			if (explicit_routes(f, ports, &far, &hops, &wa, &wb))
				BAD("fabric.links", "out of memory");
			if (far >= 0)
				BAD("fabric.links", "host%lld/nic%lld has no path to host0/nic0 through "
				    "the switches", far / nd->nics, far % nd->nics);
			if (hops >= 0)
				BAD("fabric.links", "the route from host%lld/nic%lld to host%lld/nic%lld "
				    "takes %lld hops through the switches, more than the %d a route "
				    "may take here", wb / nd->nics, wb % nd->nics, wa / nd->nics,
				    wa % nd->nics, hops, TOPO_MAX_HOPS - 4);
		}
		break;
	}
	if (c->placement == TOPO_PLACE_LIST) {
		long long ngpus = (long long)c->nodes * nd->gpus;
		if (c->place_len != ngpus)
			BAD("placement", "the list has %d entries, the cluster has %lld GPUs",
			    c->place_len, ngpus);
		for (int i = 0; i < c->place_len; i++)
			if (c->place_list[i] < 0 || c->place_list[i] >= ngpus)
				BAD_AT("placement", i, "", "GPU %d is outside 0..%lld",
				       (int)c->place_list[i], ngpus - 1);
		/* a permutation: every GPU once */
		{
			/* per GPU: 1 + the entry that holds it, or 0 */
			int *seen = calloc((size_t)ngpus, sizeof(*seen));
			int dup = -1, first = -1;
			if (!seen)
				BAD("placement", "out of memory");
			for (int i = 0; i < c->place_len && dup < 0; i++) {
				if (seen[c->place_list[i]]) {
					dup = i;
					first = seen[c->place_list[i]] - 1;
				}
				seen[c->place_list[i]] = i + 1;
			}
			free(seen);
			if (dup >= 0)
				BAD_AT("placement", dup, "",
				       "repeats GPU %d of placement[%d] (each GPU takes one rank)",
				       (int)c->place_list[dup], first);
		}
	}
#undef BAD_AT
#undef BAD
	return 0;
}

int topo_cluster_check(const struct topo_cluster *c, struct ts_error *err)
{
	char field[160], msg[300];
	if (check_fields(c, field, sizeof(field), msg, sizeof(msg)))
		return ts_error_set(err, TS_EINPUT, "cluster '%s': %.*s: %s", c->name,
				    (int)strcspn(field, "|"), field, msg);
	return 0;
}

/* ---- JSON ----------------------------------------------------------------------------- */

/* The value at the path path[0..len) ("a.b", "a.b[3].c") and whether the
 * file has it. */
static struct jval jval_path(const struct jdoc *d, const char *path, size_t len, bool *found)
{
	struct jval v = jdoc_root(d), c;
	char part[64];
	const char *p = path, *end = path + len;
	*found = true;
	while (p < end) {
		size_t n = strcspn(p, ".|[");
		if ((size_t)(end - p) < n)
			n = (size_t)(end - p);
		memcpy(part, p, n < sizeof(part) ? n : sizeof(part) - 1);
		part[n < sizeof(part) ? n : sizeof(part) - 1] = '\0';
		/* absent parts keep the path; jval_where finds the nearest ancestor */
		*found = jval_child(&v, part, &c) && *found;
		v = c;
		p += n;
		while (p < end && *p == '[') { /* an element: [index] */
			char *q;
			long i = strtol(p + 1, &q, 10);
			const cJSON *it = v.j && cJSON_IsArray(v.j) && i >= 0 && i < INT_MAX ?
						  cJSON_GetArrayItem(v.j, (int)i) : NULL;
			TS_ASSERT(q < end && *q == ']');
			*found = it && *found;
			jval_elem(&v, it, (int)i, &c);
			v = c;
			p = q + 1;
		}
		if (p < end && *p == '.')
			p++;
	}
	return v;
}

/* The value at a dotted path (for positioned messages about derived checks).
 * A check on several fields lists them, "a|b|c": the first the file has is
 * blamed, else the first (found by review: a file's hosts_per_leaf was
 * blamed on the preset's uplinks_per_leaf). */
static struct jval jval_at(const struct jdoc *d, const char *paths)
{
	const char *p = paths;
	struct jval first = { 0 };
	bool have_first = false;
	for (;;) {
		size_t len = strcspn(p, "|");
		bool found;
		struct jval v = jval_path(d, p, len, &found);
		if (found)
			return v;
		if (!have_first) {
			first = v;
			have_first = true;
		}
		if (!p[len])
			return first;
		p += len + 1;
	}
}

static int get_int(const struct jval *o, const char *key, int min, int max, int *out,
		   struct ts_error *err)
{
	long long v;
	if (!jval_child(o, key, &(struct jval){ 0 }))
		return 0;
	if (jval_get_int(o, key, true, min, max, &v, err))
		return TS_EINPUT;
	*out = (int)v;
	return 0;
}

/* An integer whose meaningful range check_fields reports with the field's
 * meaning (negative, too many ports...); here only magnitudes above max
 * are refused, with that bound (int arithmetic on the fields stays far
 * from overflow). */
static int get_count(const struct jval *o, const char *key, int max, int *out,
		     struct ts_error *err)
{
	struct jval x;
	double d;
	if (!jval_child(o, key, &x))
		return 0;
	if (jval_expect_whole(&x, err))
		return TS_EINPUT;
	d = x.j->valuedouble;
	/* (the bound itself, however large the value: found by review, 1e308
	 * was said to be outside an internal +-9e15) */
	/* (printed as jval_get_int prints: found by review) */
	if (d > max)
		return jval_error(&x, err, "must be at most %d (got %.*g)", max, jval_whole_prec(d), d);
	if (d < -(double)max)
		return jval_error(&x, err, "must not be negative (got %.*g)", jval_whole_prec(d), d);
	*out = (int)d;
	return 0;
}

/* Quantities outside these bounds are no hardware: they would only push
 * simulated times past the engine's range (bandwidths TS_MIN_BPS..
 * TS_MAX_BPS, latencies and per-op costs under 1 s, memories up to 1 PB,
 * as the calibration file's bounds in sim/compute.c). */
#define CL_MAX_TIME_S 1.0
#define CL_MAX_BYTES 1e15
#define CL_MIN_BYTES 1048576.0

static int qty_in(const struct jval *o, const char *key, enum ts_qty kind, bool required,
		  bool allow_zero, double *out, struct ts_error *err)
{
	double v = *out;
	struct jval x;
	if (jval_get_quantity(o, key, kind, required, allow_zero, &v, err))
		return TS_EINPUT;
	if (jval_quantity_node(o, key, kind, &x)) { /* given: its bounds */
		if (kind == TS_QTY_BANDWIDTH && v != 0 && (v < TS_MIN_BPS || v > TS_MAX_BPS))
			return jval_error(&x, err, "must be between 1 MB/s and 1 PB/s (got %g B/s)",
					  v);
		if (kind == TS_QTY_TIME && v >= CL_MAX_TIME_S)
			return jval_error(&x, err, "must be under 1 s (got %g s)", v);
		if (kind == TS_QTY_SIZE && v > CL_MAX_BYTES)
			return jval_error(&x, err, "must be at most 1 PB (got %g bytes)", v);
		/* (as memory's --gpu-mem-gib 0.001; found by review: 1e-320 GB
		 * was a GPU of 0.0 GiB) */
		if (kind == TS_QTY_SIZE && v != 0 && v < CL_MIN_BYTES)
			return jval_error(&x, err, "must be at least 1 MiB (got %g bytes)", v);
	}
	*out = v;
	return 0;
}

static int get_bw(const struct jval *o, const char *key, double *out, struct ts_error *err)
{
	return qty_in(o, key, TS_QTY_BANDWIDTH, false, false, out, err);
}

static int get_time(const struct jval *o, const char *key, double *out, struct ts_error *err)
{
	return qty_in(o, key, TS_QTY_TIME, false, true, out, err);
}

static int load_gpu(const struct jval *g, struct topo_cluster *c, bool base, struct ts_error *err)
{
	static const char *const keys[] = { "name", "bf16_tflops", "fp8_tflops", "memory*S",
					    "hbm_bandwidth*B", "nvlink_bandwidth*B", "sm_arch", NULL };
	const char *name = NULL;
	double v;
	if (jval_check_keys(g, keys, err))
		return TS_EINPUT;
	if (jval_get_string(g, "name", false, &name, err))
		return TS_EINPUT;
	if (name)
		json_copy_text(c->gpu.name, sizeof(c->gpu.name), name); /* (whole characters) */
	{
		struct jval x;
		if (jval_get_number(g, "bf16_tflops", !base, &v, err))
			return TS_EINPUT;
		if (jval_child(g, "bf16_tflops", &x)) {
			/* 1 GFLOP/s to 1 EFLOP/s, as sim_compute_check's bounds */
			if (!(v >= 1e-3 && v <= 1e6))
				return jval_error(&x, err, "must be between 0.001 and 1e6 (got %g)", v);
			c->gpu.bf16_flops = v * 1e12;
		}
		if (jval_get_number(g, "fp8_tflops", false, &v, err))
			return TS_EINPUT;
		if (jval_child(g, "fp8_tflops", &x)) { /* 0: no FP8 */
			if (!(v == 0 || (v >= 1e-3 && v <= 1e6)))
				return jval_error(&x, err,
						  "must be 0 (no FP8) or between 0.001 and 1e6 (got %g)",
						  v);
			c->gpu.fp8_flops = v * 1e12;
		}
	}
	if (qty_in(g, "memory", TS_QTY_SIZE, !base, false, &c->gpu.mem_bytes, err))
		return TS_EINPUT;
	if (qty_in(g, "hbm_bandwidth", TS_QTY_BANDWIDTH, !base, false, &c->gpu.hbm_Bps, err))
		return TS_EINPUT;
	if (qty_in(g, "nvlink_bandwidth", TS_QTY_BANDWIDTH, false, true, &c->gpu.nvlink_Bps, err))
		return TS_EINPUT;
	/* (the SM count and NCCL's algorithms follow the nearest of 70, 80,
	 * 90, 100 at or below it: 89, an L40S, is taken as an A100) */
	if (get_int(g, "sm_arch", 30, 200, &c->gpu.sm_arch, err))
		return TS_EINPUT;
	return 0;
}

static int load_node(const struct jval *o, struct topo_cluster *c, bool base, struct ts_error *err)
{
	static const char *const keys[] = { "gpus", "nics", "intra", "nvls", "cpu",
					    "nic_bandwidth*B", "pcie_bandwidth*B", "nvlink_latency*T",
					    "pcie_latency*T", NULL };
	int e;
	if (jval_check_keys(o, keys, err))
		return TS_EINPUT;
	if (!base) {
		long long v;
		if (jval_get_int(o, "gpus", true, 1, MAX_GPUS_PER_NODE, &v, err))
			return TS_EINPUT;
		c->node.gpus = (int)v;
	} else if (get_int(o, "gpus", 1, MAX_GPUS_PER_NODE, &c->node.gpus, err)) {
		return TS_EINPUT;
	}
	if (get_int(o, "nics", 0, MAX_NICS_PER_NODE, &c->node.nics, err))
		return TS_EINPUT;
	e = (int)c->node.intra;
	if (jval_get_enum(o, "intra", !base, intra_names, &e, err))
		return TS_EINPUT;
	c->node.intra = (enum topo_intra)e;
	if (jval_get_bool(o, "nvls", false, &c->node.nvls, err))
		return TS_EINPUT;
	e = (int)c->node.cpu;
	if (jval_get_enum(o, "cpu", false, cpu_names, &e, err))
		return TS_EINPUT;
	c->node.cpu = (enum topo_cpu)e;
	if (get_bw(o, "nic_bandwidth", &c->node.nic_Bps, err) ||
	    get_bw(o, "pcie_bandwidth", &c->node.pcie_Bps, err) ||
	    get_time(o, "nvlink_latency", &c->node.nvlink_lat_s, err) ||
	    get_time(o, "pcie_latency", &c->node.pcie_lat_s, err))
		return TS_EINPUT;
	return 0;
}

/* A cable end: a switch name from fabric.switches or "host<H>/nic<I>". */
static int xend(const struct jval *v, const struct topo_cluster *c, int32_t *out,
		struct ts_error *err)
{
	const char *s;
	char *e1, *e2;
	long h, i;
	if (!cJSON_IsString(v->j))
		return jval_error(v, err, "expected a switch name or \"host<H>/nic<I>\"");
	s = v->j->valuestring;
	/* (strtol, not sscanf's %d, which wraps past INT_MAX: found by review,
	 * host4294967296 was host 0) */
	if (!strncmp(s, "host", 4) && isdigit((unsigned char)s[4])) {
		errno = 0;
		h = strtol(s + 4, &e1, 10);
		if (errno)
			h = LONG_MAX;
		if (!strncmp(e1, "/nic", 4) && isdigit((unsigned char)e1[4])) {
			errno = 0;
			i = strtol(e1 + 4, &e2, 10);
			if (errno)
				i = LONG_MAX;
			if (*e2 == '\0') {
				if (h >= MAX_NODES)
					return jval_error(v, err, "'%s': host number too large", s);
				if (i == LONG_MAX)
					return jval_error(v, err, "'%s': NIC number too large", s);
				if (i >= c->node.nics)
					return jval_error(v, err, "'%s': NIC %ld does not exist (node.nics is %d)",
							  s, i, c->node.nics);
				*out = -(int32_t)(1 + h * c->node.nics + i);
				return 0;
			}
		}
	}
	for (int k = 0; k < c->fabric.nxswitches; k++)
		if (!strcmp(c->fabric.xswitches[k].name, s)) {
			*out = k;
			return 0;
		}
	return jval_error(v, err, "unknown switch '%s' (not in fabric.switches)", s);
}

/* lat_default: the file or its preset gives fabric.link_latency, the
 * latency of a link that does not give its own */
static int load_explicit(const struct jval *f, struct topo_cluster *c, bool lat_default,
			 struct ts_error *err)
{
	struct jval sw, ln, it;
	const cJSON *x;
	int i;
	if (!jval_child(f, "switches", &sw) || !jval_child(f, "links", &ln)) {
		struct jval m;
		jval_child(f, jval_child(f, "switches", &m) ? "links" : "switches", &m);
		return jval_error(&m, err, "missing field (an explicit fabric lists switches and links)");
	}
	if (jval_expect_array(&sw, err) || jval_expect_array(&ln, err))
		return TS_EINPUT;
	free(c->fabric.xswitches);
	free(c->fabric.xlinks);
	c->fabric.xswitches = NULL;
	c->fabric.xlinks = NULL;
	c->fabric.nxswitches = c->fabric.nxlinks = 0;
	if (cJSON_GetArraySize(sw.j) > 100000 || cJSON_GetArraySize(ln.j) > 1000000)
		return jval_error(&sw, err, "too many switches or links for an explicit fabric");
	c->fabric.xswitches = calloc((size_t)cJSON_GetArraySize(sw.j) + 1, sizeof(struct topo_xswitch));
	c->fabric.xlinks = calloc((size_t)cJSON_GetArraySize(ln.j) + 1, sizeof(struct topo_xlink));
	if (!c->fabric.xswitches || !c->fabric.xlinks)
		return ts_error_set(err, TS_ENOMEM, "out of memory reading fabric.links");
	i = 0;
	cJSON_ArrayForEach(x, sw.j)
	{
		static const char *const keys[] = { "name", "tier", NULL };
		struct topo_xswitch *s = &c->fabric.xswitches[i];
		const char *name = NULL;
		long long tier = 1;
		jval_elem(&sw, x, i, &it);
		if (jval_check_keys(&it, keys, err) ||
		    jval_get_string(&it, "name", true, &name, err) ||
		    jval_get_int(&it, "tier", false, 1, 3, &tier, err))
			return TS_EINPUT;
		if (!name[0] || strlen(name) >= sizeof(s->name) || !strncmp(name, "host", 4)) {
			struct jval nv;
			jval_child(&it, "name", &nv);
			return jval_error(&nv, err, "a switch name has 1 to %d characters and does "
					  "not start with 'host'", (int)sizeof(s->name) - 1);
		}
		for (int k = 0; k < i; k++)
			if (!strcmp(c->fabric.xswitches[k].name, name)) {
				struct jval nv;
				jval_child(&it, "name", &nv);
				return jval_error(&nv, err, "switch '%s' is listed twice", name);
			}
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->tier = (int)tier;
		c->fabric.nxswitches = ++i;
	}
	i = 0;
	cJSON_ArrayForEach(x, ln.j)
	{
		static const char *const keys[] = { "from", "to", "bandwidth*B", "latency*T", NULL };
		struct topo_xlink *l = &c->fabric.xlinks[i];
		struct jval a, b;
		jval_elem(&ln, x, i, &it);
		if (jval_check_keys(&it, keys, err))
			return TS_EINPUT;
		if (!jval_child(&it, "from", &a))
			return jval_error(&a, err, "missing field");
		if (!jval_child(&it, "to", &b))
			return jval_error(&b, err, "missing field");
		if (xend(&a, c, &l->a, err) || xend(&b, c, &l->b, err))
			return TS_EINPUT;
		if (l->a < 0 && l->b < 0)
			return jval_error(&b, err, "a cable joins a NIC to a switch, not two NICs");
		if (l->a == l->b)
			return jval_error(&b, err, "a cable cannot join a switch to itself");
		l->bw_Bps = c->fabric.link_Bps;
		l->lat_s = c->fabric.link_lat_s;
		if (l->bw_Bps <= 0 && !jval_quantity_node(&it, "bandwidth", TS_QTY_BANDWIDTH, &a)) {
			jval_child(&it, "bandwidth", &a);
			return jval_error(&a, err, "missing field (no fabric.link_bandwidth or "
					  "\"preset\" to take it from)");
		}
		if (qty_in(&it, "bandwidth", TS_QTY_BANDWIDTH, false, false, &l->bw_Bps, err) ||
		    get_time(&it, "latency", &l->lat_s, err))
			return TS_EINPUT;
		if (!lat_default && !jval_quantity_node(&it, "latency", TS_QTY_TIME, &a)) {
			jval_child(&it, "latency", &a);
			return jval_error(&a, err, "missing field (no fabric.link_latency or "
					  "\"preset\" to take it from)");
		}
		c->fabric.nxlinks = ++i;
	}
	return 0;
}

static int load_fabric(const struct jval *o, struct topo_cluster *c, bool base, const char *file,
		       struct ts_error *err)
{
	static const char *const keys[] = {
		"type", "k", "tiers", "switch_ports", "leaves", "spines", "hosts_per_leaf",
		"uplinks_per_leaf", "pods", "super_spines", "spine_uplinks", "rails", "pxn", "routing",
		"link_bandwidth*B", "link_latency*T", "switch_latency*T", "mtu_bytes",
		"packet_overhead_bytes", "transport", "tcp_byte_cost*T", "tcp_msg_cost*T", "switches",
		"links", NULL
	};
	struct topo_fabric_spec *f = &c->fabric;
	int e = (int)f->kind;
	if (jval_check_keys(o, keys, err))
		return TS_EINPUT;
	if (jval_get_enum(o, "type", !base, fabric_names, &e, err))
		return TS_EINPUT;
	f->kind = (enum topo_fabric_kind)e;
	/* integer fields; signed range so "negative" is reported by check_fields
	 * with its meaning rather than a bare range error */
	if (get_count(o, "k", 1000000, &f->k, err) ||
	    get_count(o, "tiers", 1000, &f->tiers, err) ||
	    get_count(o, "switch_ports", 1000000, &f->switch_ports, err) ||
	    get_count(o, "leaves", 1000000, &f->leaves, err) ||
	    get_count(o, "spines", 1000000, &f->spines, err) ||
	    get_count(o, "hosts_per_leaf", 1000000, &f->hosts_per_leaf, err) ||
	    get_count(o, "uplinks_per_leaf", 1000000, &f->uplinks_per_leaf, err) ||
	    get_count(o, "pods", 1000000, &f->pods, err) ||
	    get_count(o, "super_spines", 1000000, &f->super_spines, err) ||
	    get_count(o, "spine_uplinks", 1000000, &f->spine_uplinks, err) ||
	    get_count(o, "mtu_bytes", 1 << 20, &f->mtu_bytes, err) ||
	    get_count(o, "packet_overhead_bytes", 4096, &f->overhead_bytes, err))
		return TS_EINPUT;
	if (jval_get_bool(o, "rails", false, &f->rails, err))
		return TS_EINPUT;
	{
		bool pxn = !f->no_pxn;
		if (jval_get_bool(o, "pxn", false, &pxn, err))
			return TS_EINPUT;
		f->no_pxn = !pxn;
	}
	if (get_bw(o, "link_bandwidth", &f->link_Bps, err) ||
	    get_time(o, "link_latency", &f->link_lat_s, err) ||
	    get_time(o, "switch_latency", &f->switch_lat_s, err) ||
	    get_time(o, "tcp_byte_cost", &f->tcp_byte_s, err) ||
	    get_time(o, "tcp_msg_cost", &f->tcp_msg_s, err))
		return TS_EINPUT;
	e = (int)f->transport;
	if (jval_get_enum(o, "transport", false, transport_names, &e, err))
		return TS_EINPUT;
	f->transport = (enum topo_transport)e;
	e = (int)f->routing;
	if (jval_get_enum(o, "routing", false, topo_routing_names, &e, err))
		return TS_EINPUT;
	f->routing = (enum topo_routing)e;
	/* TCP without costs given: the assumed host costs (TCP_BYTE_S,
	 * TCP_MSG_S; found by review: TCP cost nothing by default, so it
	 * changed no prediction) */
	if (f->transport == TOPO_TRANSPORT_TCP) {
		struct jval g;
		if (!jval_child(o, "tcp_byte_cost", &g) && f->tcp_byte_s == 0)
			f->tcp_byte_s = TCP_BYTE_S;
		if (!jval_child(o, "tcp_msg_cost", &g) && f->tcp_msg_s == 0)
			f->tcp_msg_s = TCP_MSG_S;
	}
	{
		/* a dimension of another type of fabric would be ignored:
		 * refused (found by review: "k" on an explicit fabric,
		 * "spines" on a fat-tree) */
		static const struct {
			const char *key;
			unsigned kinds; /* bit per enum topo_fabric_kind that uses it */
		} dims[] = {
			{ "k", 1u << TOPO_FABRIC_FAT_TREE },
			{ "tiers", 1u << TOPO_FABRIC_FAT_TREE },
			{ "switch_ports", 1u << TOPO_FABRIC_SWITCH | 1u << TOPO_FABRIC_FAT_TREE |
						  1u << TOPO_FABRIC_LEAF_SPINE | 1u << TOPO_FABRIC_CLOS3 },
			{ "leaves", 1u << TOPO_FABRIC_LEAF_SPINE | 1u << TOPO_FABRIC_CLOS3 },
			{ "spines", 1u << TOPO_FABRIC_LEAF_SPINE | 1u << TOPO_FABRIC_CLOS3 },
			{ "hosts_per_leaf", 1u << TOPO_FABRIC_LEAF_SPINE | 1u << TOPO_FABRIC_CLOS3 },
			{ "uplinks_per_leaf", 1u << TOPO_FABRIC_LEAF_SPINE | 1u << TOPO_FABRIC_CLOS3 },
			{ "pods", 1u << TOPO_FABRIC_CLOS3 },
			{ "super_spines", 1u << TOPO_FABRIC_CLOS3 },
			{ "spine_uplinks", 1u << TOPO_FABRIC_CLOS3 },
		};
		for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
			struct jval x;
			if (!(dims[i].kinds >> f->kind & 1u) && jval_child(o, dims[i].key, &x))
				return jval_error(&x, err, "not a dimension of a fabric of type '%s'",
						  fabric_names[f->kind]);
		}
		if (f->routing == TOPO_ROUTING_DMODK && f->kind == TOPO_FABRIC_EXPLICIT) {
			struct jval x;
			if (jval_child(o, "routing", &x))
				return jval_error(&x, err, "%s", dmodk_needs);
			f->routing = TOPO_ROUTING_ECMP; /* a preset's, as rails below */
		}
		if (f->rails && !(f->kind == TOPO_FABRIC_FAT_TREE || f->kind == TOPO_FABRIC_LEAF_SPINE ||
				  f->kind == TOPO_FABRIC_CLOS3)) {
			struct jval x;
			if (jval_child(o, "rails", &x))
				return jval_error(&x, err, "a fabric of type '%s' has no rails (fat-tree, "
						  "leaf-spine and clos3 have)", fabric_names[f->kind]);
			/* a preset's rails do not carry over to a type without
			 * them (found by review: an explicit fabric on a railed
			 * preset showed "(rail-optimised)") */
			f->rails = false;
		}
	}
	if (f->kind == TOPO_FABRIC_FAT_TREE) {
		/* defaults for what the file does not give; a 0 it gives is
		 * refused by check_fields (found by review: tiers 0 became 2,
		 * switch_ports 0 became k) */
		if (!jval_child(o, "switch_ports", &(struct jval){ 0 }))
			f->switch_ports = f->k;
		if (!jval_child(o, "tiers", &(struct jval){ 0 }) && f->tiers != 3)
			f->tiers = 2;
	}
	if (f->kind == TOPO_FABRIC_SWITCH)
		f->tiers = 1;
	if (f->kind == TOPO_FABRIC_LEAF_SPINE)
		f->tiers = 2;
	if (f->kind == TOPO_FABRIC_CLOS3) {
		f->tiers = 3;
		if (f->spines > 0 && f->super_spines % f->spines == 0)
			f->spines_per_plane = f->super_spines / f->spines;
	}
	if (f->kind == TOPO_FABRIC_EXPLICIT) {
		free(f->explicit_path);
		f->explicit_path = strdup(file);
		if (!f->explicit_path)
			return ts_error_set(err, TS_ENOMEM, "out of memory");
		if (load_explicit(o, c,
				  base || jval_quantity_node(o, "link_latency", TS_QTY_TIME,
							     &(struct jval){ 0 }),
				  err))
			return TS_EINPUT;
	} else if (jval_child(o, "switches", &(struct jval){ 0 }) ||
		   jval_child(o, "links", &(struct jval){ 0 })) {
		struct jval x;
		if (!jval_child(o, "switches", &x))
			jval_child(o, "links", &x);
		return jval_error(&x, err, "only an explicit fabric (\"type\": \"explicit\") lists switches and links");
	}
	return 0;
}

static int load_placement(const struct jval *root, struct topo_cluster *c, struct ts_error *err)
{
	struct jval p, it;
	const cJSON *x;
	int i = 0, n;
	if (!jval_child(root, "placement", &p))
		return 0;
	if (cJSON_IsString(p.j)) {
		int e;
		if (jval_get_enum(root, "placement", true, placement_names, &e, err))
			return TS_EINPUT;
		if (e == TOPO_PLACE_LIST)
			return jval_error(&p, err, "a list placement is written as an array of GPU ids");
		c->placement = (enum topo_placement)e;
		return 0;
	}
	if (!cJSON_IsArray(p.j))
		return jval_error(&p, err, "expected \"linear\", \"round-robin\", \"random\" or an "
				  "array of GPU ids");
	n = cJSON_GetArraySize(p.j);
	if (n < 1 || n > MAX_NODES * 8)
		return jval_error(&p, err, "a placement list needs 1 to %d entries", MAX_NODES * 8);
	free(c->place_list);
	c->place_list = calloc((size_t)n, sizeof(int32_t));
	if (!c->place_list)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	cJSON_ArrayForEach(x, p.j)
	{
		jval_elem(&p, x, i, &it);
		if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
		    x->valuedouble < 0 || x->valuedouble > 1e9)
			return jval_error(&it, err, "expected a GPU id (an integer >= 0)");
		c->place_list[i++] = (int32_t)x->valuedouble;
	}
	c->place_len = n;
	c->placement = TOPO_PLACE_LIST;
	return 0;
}

/* Without a preset, every value the simulation uses comes from the file:
 * a latency, MTU or packet overhead left out was 0 and an sm_arch 0,
 * silently, and a missing bandwidth was told "must be positive" (found by
 * review). Which are needed depends on what was read: the fabric's type
 * (a single switch has no switch-to-switch cable, an explicit fabric's
 * links may each give theirs), the node's interconnect and NICs. */
static int need_fields(const struct jval *root, const struct topo_cluster *c, bool base,
		       bool preset_nvs, enum topo_fabric_kind preset_kind, struct ts_error *err)
{
	/* (FT, LS, C3: a fabric type's dimensions, needed without a preset or
	 * where the file's type is not the preset's, whose are then 0; found
	 * by review: told "must be at least 1 (got 0)") */
	enum { ALWAYS, NET, NVS, PCIE, TRUNK, CABLE, FT, LS, C3 };
	static const struct {
		const char *part, *key;
		int qty; /* enum ts_qty, or -1 for a plain number */
		int when;
	} need[] = {
		{ "gpu", "sm_arch", -1, ALWAYS },
		{ "gpu", "nvlink_bandwidth", TS_QTY_BANDWIDTH, NVS },
		{ "node", "nvlink_latency", TS_QTY_TIME, NVS },
		{ "node", "nics", -1, NET },
		{ "node", "nic_bandwidth", TS_QTY_BANDWIDTH, NET },
		/* (also the host link of offloaded optimizer states and
		 * parameters on a node without NICs: found by review) */
		{ "node", "pcie_bandwidth", TS_QTY_BANDWIDTH, ALWAYS },
		{ "node", "pcie_latency", TS_QTY_TIME, PCIE },
		{ "fabric", "link_bandwidth", TS_QTY_BANDWIDTH, TRUNK },
		{ "fabric", "link_latency", TS_QTY_TIME, CABLE },
		{ "fabric", "switch_latency", TS_QTY_TIME, NET },
		{ "fabric", "mtu_bytes", -1, NET },
		{ "fabric", "packet_overhead_bytes", -1, NET },
		{ "fabric", "k", -1, FT }, /* (tiers: 2 when left out) */
		{ "fabric", "switch_ports", -1, LS },
		{ "fabric", "leaves", -1, LS },
		{ "fabric", "spines", -1, LS },
		{ "fabric", "hosts_per_leaf", -1, LS },
		{ "fabric", "uplinks_per_leaf", -1, LS },
		{ "fabric", "pods", -1, C3 },
		{ "fabric", "super_spines", -1, C3 },
		{ "fabric", "spine_uplinks", -1, C3 },
	};
	enum topo_fabric_kind k = c->fabric.kind;
	bool net = k != TOPO_FABRIC_NONE;
	bool on[] = {
		[ALWAYS] = true,
		[NET] = net,
		[NVS] = c->node.intra == TOPO_INTRA_NVSWITCH,
		[PCIE] = c->node.nics > 0 || c->node.intra == TOPO_INTRA_PCIE,
		[TRUNK] = net && k != TOPO_FABRIC_SWITCH && k != TOPO_FABRIC_EXPLICIT,
		[CABLE] = net && k != TOPO_FABRIC_EXPLICIT,
		[FT] = k == TOPO_FABRIC_FAT_TREE,
		[LS] = k == TOPO_FABRIC_LEAF_SPINE || k == TOPO_FABRIC_CLOS3,
		[C3] = k == TOPO_FABRIC_CLOS3,
	};
	bool pls = preset_kind == TOPO_FABRIC_LEAF_SPINE || preset_kind == TOPO_FABRIC_CLOS3;
	/* on a preset of another type, whose dimensions are then 0 */
	bool retyped[] = { [FT] = preset_kind != TOPO_FABRIC_FAT_TREE, [LS] = !pls,
			   [C3] = preset_kind != TOPO_FABRIC_CLOS3 };
	for (size_t i = 0; i < TS_ARRAY_LEN(need); i++) {
		struct jval o, x;
		bool have;
		/* on a preset, what the file turns on that the preset lacks: an
		 * NVSwitch on a PCIe preset (found by review: its NVLink
		 * latency stayed the preset's 0) */
		bool dims = need[i].when >= FT;
		if (base && !(need[i].when == NVS && !preset_nvs) && !(dims && retyped[need[i].when]))
			continue;
		if (!on[need[i].when])
			continue;
		/* (a part the file leaves out, on a preset: the field is still
		 * missing, told at the root; found by review) */
		if (!jval_child(root, need[i].part, &o) && !base)
			continue;
		have = need[i].qty < 0 ? jval_child(&o, need[i].key, &x)
				       : jval_quantity_node(&o, need[i].key,
							    (enum ts_qty)need[i].qty, &x);
		if (!have) {
			jval_child(&o, need[i].key, &x);
			return jval_error(&x, err,
					  !base ? "missing field (no \"preset\" to take it from)"
					  : dims ? "missing field (the preset's fabric is of another type)"
						 : "missing field (the preset has no NVSwitch to take it from)");
		}
	}
	return 0;
}

static int load_file(struct topo_cluster *c, const char *path, int nodes, struct ts_error *err)
{
	static const char *const keys[] = { "name", "preset", "source", "gpu", "node", "fabric",
					    "nodes", "placement", "seed", NULL };
	struct jdoc d = JDOC_INIT;
	struct jval root, o;
	const char *s = NULL;
	char field[160], msg[300];
	bool base = false, preset_nvs = false;
	enum topo_fabric_kind preset_kind = TOPO_FABRIC_NONE;
	int rc = TS_EINPUT, own;

	if (jdoc_load(&d, path, err))
		goto fail;
	root = jdoc_root(&d);
	if (jval_expect_object(&root, err) || jval_check_keys(&root, keys, err))
		goto fail;
	if (jval_get_string(&root, "preset", false, &s, err))
		goto fail;
	if (s) {
		if (preset_apply(c, s, err)) {
			jval_child(&root, "preset", &o);
			rc = jval_error(&o, err, "unknown cluster preset '%s'", s);
			goto fail;
		}
		base = true;
		preset_nvs = c->node.intra == TOPO_INTRA_NVSWITCH;
		preset_kind = c->fabric.kind;
	}
	s = NULL;
	if (jval_get_string(&root, "name", false, &s, err))
		goto fail;
	{
		const char *b = strrchr(path, '/');
		json_copy_text(c->name, sizeof(c->name), s ? s : (b ? b + 1 : path));
	}
	s = NULL;
	if (jval_get_string(&root, "source", false, &s, err))
		goto fail;
	if (s)
		json_copy_text(c->source, sizeof(c->source), s);
	else if (!base)
		json_copy_text(c->source, sizeof(c->source), path);

	{
		static const char *const part[] = { "gpu", "node", "fabric" };
		for (int i = 0; i < 3; i++) {
			if (!jval_child(&root, part[i], &o)) {
				if (base)
					continue;
				rc = jval_error(&o, err, "missing field (no \"preset\" to take it from)");
				goto fail;
			}
			if (jval_expect_object(&o, err))
				goto fail;
			if (i == 2 && !base) {
				/* an explicit fabric's cables name NICs: without a
				 * preset the count comes first, once node's keys are
				 * checked (found by review: its absence was told as
				 * "NIC 0 does not exist (node.nics is 0)" at the first
				 * cable) */
				struct jval no, ty, x;
				if (jval_child(&o, "type", &ty) && cJSON_IsString(ty.j) &&
				    !strcmp(ty.j->valuestring, "explicit") &&
				    jval_child(&root, "node", &no) && !jval_child(&no, "nics", &x)) {
					rc = jval_error(&x, err,
							"missing field (no \"preset\" to take it from)");
					goto fail;
				}
			}
			if ((i == 0 && load_gpu(&o, c, base, err)) ||
			    (i == 1 && load_node(&o, c, base, err)) ||
			    (i == 2 && load_fabric(&o, c, base, path, err)))
				goto fail;
		}
	}
	if (need_fields(&root, c, base, preset_nvs, preset_kind, err))
		goto fail;
	if (!base)
		c->nodes = 1;
	if (get_int(&root, "nodes", 1, MAX_NODES, &c->nodes, err))
		goto fail;
	{
		long long seed = -1;
		if (jval_get_int(&root, "seed", false, 0, RNG_SEED_MAX, &seed, err))
			goto fail;
		if (seed >= 0)
			c->seed = (uint64_t)seed;
	}
	if (load_placement(&root, c, err))
		goto fail;
	own = c->nodes;
	if (nodes > 0)
		c->nodes = nodes;
	if (check_fields(c, field, sizeof(field), msg, sizeof(msg))) {
		struct jval v = jval_at(&d, field);
		bool flag = false;
		if (nodes > 0 && nodes != own) {
			/* a file that holds as written but not with --nodes (an
			 * explicit fabric's cable to a host past the new count):
			 * the flag is the cause, and the error says so */
			char f0[160], m0[8];
			c->nodes = own;
			flag = !strcmp(field, "nodes") ||
			       !check_fields(c, f0, sizeof(f0), m0, sizeof(m0));
			c->nodes = nodes;
		}
		if (flag)
			rc = jval_error(&v, err, "%s (--nodes %d; the file has %d)", msg, nodes, own);
		else if (base && nodes <= 0 && !strcmp(field, "nodes") &&
			 !jval_child(&root, "nodes", &(struct jval){ 0 }))
			/* (found by review: the preset's count, which the file
			 * does not show) */
			rc = jval_error(&v, err, "%s: the preset's node count (give \"nodes\")", msg);
		else
			rc = jval_error(&v, err, "%s", msg);
		goto fail;
	}
	rc = 0;
fail:
	jdoc_release(&d);
	return rc;
}

bool topo_cluster_names_file(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".json"));
}

int topo_cluster_load(struct topo_cluster *c, const char *name_or_path, int nodes,
		      struct ts_error *err)
{
	int rc;
	cluster_zero(c);
	if (topo_cluster_names_file(name_or_path)) {
		rc = load_file(c, name_or_path, nodes, err);
	} else {
		rc = preset_apply(c, name_or_path, err);
		if (!rc && nodes > 0)
			c->nodes = nodes;
		if (!rc)
			rc = topo_cluster_check(c, err);
	}
	if (rc) {
		topo_cluster_release(c);
		return rc;
	}
	/* the strings the reports print as they are: one line each, no
	 * terminal controls (found by review: a name's newline broke
	 * collective's '#' header, its ESC reached the terminal) */
	ts_one_line(c->name);
	ts_one_line(c->source);
	ts_one_line(c->gpu.name);
	return 0;
}

void topo_cluster_release(struct topo_cluster *c)
{
	free(c->fabric.explicit_path);
	free(c->fabric.xswitches);
	free(c->fabric.xlinks);
	free(c->place_list);
	c->fabric.explicit_path = NULL;
	c->fabric.xswitches = NULL;
	c->fabric.xlinks = NULL;
	c->fabric.nxswitches = c->fabric.nxlinks = 0;
	c->place_list = NULL;
	c->place_len = 0;
}

static void *dup_mem(const void *p, size_t n)
{
	void *q;
	if (!p || !n)
		return NULL;
	q = malloc(n);
	if (q)
		memcpy(q, p, n);
	return q;
}

int topo_cluster_copy(struct topo_cluster *dst, const struct topo_cluster *src,
		      struct ts_error *err)
{
	const struct topo_fabric_spec *f = &src->fabric;
	*dst = *src;
	dst->fabric.explicit_path = f->explicit_path ? strdup(f->explicit_path) : NULL;
	dst->fabric.xswitches = dup_mem(f->xswitches, (size_t)f->nxswitches * sizeof(*f->xswitches));
	dst->fabric.xlinks = dup_mem(f->xlinks, (size_t)f->nxlinks * sizeof(*f->xlinks));
	dst->place_list = dup_mem(src->place_list, (size_t)src->place_len * sizeof(int32_t));
	if ((f->explicit_path && !dst->fabric.explicit_path) ||
	    (f->nxswitches && !dst->fabric.xswitches) || (f->nxlinks && !dst->fabric.xlinks) ||
	    (src->place_len && !dst->place_list)) {
		topo_cluster_release(dst);
		return ts_error_set(err, TS_ENOMEM, "out of memory copying cluster '%s'", src->name);
	}
	return 0;
}

int topo_placement_parse(struct topo_cluster *c, const char *s, struct ts_error *err)
{
	const char *p = s;
	int n = 1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, placement_names[i])) {
			c->placement = (enum topo_placement)i;
			return 0;
		}
	for (const char *q = s; *q; q++) {
		if (*q == ',')
			n++;
		else if (*q < '0' || *q > '9')
			return ts_error_set(err, TS_EUSAGE,
					    "placement '%s': expected linear, round-robin, random "
					    "or a comma-separated list of GPU ids", s);
	}
	free(c->place_list);
	c->place_list = calloc((size_t)n, sizeof(int32_t));
	if (!c->place_list)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v > 100000000) {
			free(c->place_list);
			c->place_list = NULL;
			c->place_len = 0;
			return ts_error_set(err, TS_EUSAGE, "placement '%s': entry %d is not a GPU id",
					    s, i);
		}
		c->place_list[i] = (int32_t)v;
		p = *end ? end + 1 : end;
	}
	c->place_len = n;
	c->placement = TOPO_PLACE_LIST;
	return 0;
}

/* topo.h: cluster descriptions, the topology graph, routing and placement.
 * The face of topo/; knows nothing of models/ or sim/.
 *
 * Data flow: a cluster description (struct topo_cluster: GPU, node, fabric,
 * node count, placement) comes from a built-in preset or a JSON file; it is
 * built into a directed graph (struct topo) of GPUs, NICs, PCIe switches,
 * NVSwitches and network switches joined by links that carry bandwidth,
 * latency, MTU and per-packet overhead. Routes between GPUs are all
 * equal-cost shortest paths; one is picked per flow by a seeded hash (ECMP).
 * For fat-tree and Clos fabrics routes are computed from the structure, so
 * 100k hosts need no all-pairs table.
 *
 * Invariants:
 * - every physical cable is two directed links, links[l].rev is the other;
 * - graph node ids: GPUs first (0..ngpus-1, gpu g of host h is h*gpn+g),
 *   then everything else;
 * - a path is a list of directed link ids, connected from source to
 *   destination.
 *
 * Routing policy (what "equal-cost shortest path" means here): GPUs are
 * endpoints and never forward traffic; inside a node GPUs talk over the
 * NVSwitch when there is one, else over the PCIe tree; a GPU reaches the
 * network only through its own NIC (NCCL without PXN); NICs never forward
 * between switches. Within these rules every shortest path is returned. */
#ifndef TS_TOPO_H
#define TS_TOPO_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/units.h"

/* ---- cluster description ------------------------------------------------ */

enum topo_intra { TOPO_INTRA_NVSWITCH, TOPO_INTRA_PCIE };
/* The host CPU, for NCCL's network post overhead (getNetOverhead: 1 us on
 * Intel and on anything not x86, 2 us on AMD; nccl.md §1.3) */
enum topo_cpu { TOPO_CPU_INTEL, TOPO_CPU_AMD, TOPO_CPU_ARM };
enum topo_fabric_kind {
	TOPO_FABRIC_NONE,          /* a single node, no network */
	TOPO_FABRIC_SWITCH,        /* every NIC on one non-blocking switch */
	TOPO_FABRIC_FAT_TREE,      /* k-ary fat-tree, 2 or 3 tiers */
	TOPO_FABRIC_LEAF_SPINE,    /* two-tier Clos, any oversubscription */
	TOPO_FABRIC_CLOS3,         /* three-tier Clos with pods */
	TOPO_FABRIC_EXPLICIT       /* nodes and links listed in the file */
};
enum topo_transport { TOPO_TRANSPORT_RDMA, TOPO_TRANSPORT_TCP };
/* How a switch picks among equal-cost paths (cluster key "routing",
 * overridden by --routing). */
enum topo_routing {
	TOPO_ROUTING_ECMP,         /* per-connection hash (Ethernet/RoCE ECMP; the default) */
	TOPO_ROUTING_SPRAY,        /* each transfer spread evenly over its paths (adaptive
	                            * routing, packet spraying): sim/ spreads it over
	                            * topo_route_nth's paths; topo_route hashes as ECMP */
	TOPO_ROUTING_DMODK         /* destination-based static routing (InfiniBand's fat-tree
	                            * engine, D-mod-K): the up port is the destination's
	                            * index mod the ports; structured fabrics only */
};
/* Its names, in enum order ("ecmp", "spray", "dmodk"), NULL-terminated. */
extern const char *const topo_routing_names[];
enum topo_placement {
	TOPO_PLACE_LINEAR,         /* rank r on GPU r */
	TOPO_PLACE_ROUND_ROBIN,    /* rank r on node r % nodes, GPU r / nodes */
	TOPO_PLACE_RANDOM,         /* seeded shuffle */
	TOPO_PLACE_LIST            /* explicit rank -> GPU list */
};

struct topo_gpu_spec {
	char name[48];             /* "H100-SXM5-80GB" */
	double bf16_flops;         /* dense BF16 peak, FLOP/s */
	double fp8_flops;          /* dense FP8 peak, FLOP/s (0 if none) */
	double mem_bytes;          /* HBM capacity, bytes */
	double hbm_Bps;            /* HBM bandwidth, bytes/s */
	double nvlink_Bps;         /* NVLink per GPU per direction, bytes/s (0 if none) */
	int sm_arch;               /* 70, 80, 90, 100: selects NCCL tables */
};

struct topo_node_spec {
	int gpus;                  /* GPUs per node */
	int nics;                  /* compute NICs per node (rails) */
	enum topo_intra intra;     /* NVSwitch or PCIe tree */
	bool nvls;                 /* NVSwitch supports in-switch reduction (NVLS) */
	enum topo_cpu cpu;         /* host CPU vendor (NCCL's net overhead) */
	double nic_Bps;            /* per NIC per direction, bytes/s */
	double pcie_Bps;           /* per GPU or NIC PCIe link per direction, bytes/s */
	double nvlink_lat_s;       /* GPU->NVSwitch->GPU one-way latency, seconds */
	double pcie_lat_s;         /* one PCIe hop, seconds */
};

struct topo_fabric_spec {
	enum topo_fabric_kind kind;
	int tiers;                 /* fat-tree: 2 or 3 */
	int k;                     /* fat-tree radix (even) */
	int switch_ports;          /* ports per switch (checked against use) */
	int leaves, spines;        /* leaf-spine / per pod for CLOS3 */
	int hosts_per_leaf;        /* NIC ports down per leaf */
	int uplinks_per_leaf;      /* ports up per leaf (oversubscription) */
	int pods, spines_per_plane;/* CLOS3: pods; super-spines per plane (derived: super_spines / spines) */
	int super_spines;          /* CLOS3: switches in the top tier */
	int spine_uplinks;         /* CLOS3: ports up per spine (super_spines*n; oversubscription) */
	bool rails;                /* rail-optimised: NIC i of every node on rail i */
	enum topo_routing routing; /* equal-cost path choice */
	bool no_pxn;               /* NCCL_PXN_DISABLE=1: point-to-point sends leave through the
	                            * sender's own NIC (cluster key "pxn": false) */
	double link_Bps;           /* switch-to-switch and NIC-to-switch, bytes/s */
	double link_lat_s;         /* cable propagation per hop, seconds */
	double switch_lat_s;       /* port-to-port latency, seconds */
	int mtu_bytes;             /* payload bytes per packet */
	int overhead_bytes;        /* header bytes per packet on the wire */
	enum topo_transport transport;
	double tcp_byte_s;         /* TCP host cost per byte, seconds (calibrated) */
	double tcp_msg_s;          /* TCP host cost per message, seconds (calibrated) */
	char *explicit_path;       /* EXPLICIT: the file (owned) */
	int nxswitches;            /* EXPLICIT: switches listed */
	struct topo_xswitch *xswitches; /* EXPLICIT: nxswitches entries (owned) */
	int nxlinks;               /* EXPLICIT: cables listed */
	struct topo_xlink *xlinks; /* EXPLICIT: nxlinks entries (owned) */
};

/* An explicit fabric: switches and cables given one by one. A cable end is a
 * switch index (>= 0) or a NIC, written as -(1 + host*nics + nic). */
struct topo_xswitch {
	char name[32];             /* as in the file */
	int tier;                  /* 1..3, for summaries */
};
struct topo_xlink {
	int32_t a, b;              /* ends: switch index, or -(1 + NIC index) */
	double bw_Bps;             /* capacity per direction, bytes/s */
	double lat_s;              /* propagation, seconds (switch latency is added) */
};

struct topo_cluster {
	char name[64];             /* preset name or file name */
	char source[160];          /* where the numbers come from (datasheets) */
	struct topo_gpu_spec gpu;
	struct topo_node_spec node;
	struct topo_fabric_spec fabric;
	int nodes;                 /* number of nodes (hosts) */
	enum topo_placement placement;
	uint64_t seed;             /* for TOPO_PLACE_RANDOM and ECMP hashing */
	int32_t *place_list;       /* TOPO_PLACE_LIST: rank -> gpu (owned) */
	int place_len;             /* entries in place_list */
};

/* Whether topo_cluster_load reads name as a file (a '/' in it or ending in
 * .json) rather than a preset. */
bool topo_cluster_names_file(const char *name);
/* Load a preset by name or a cluster JSON file (anything with a '/' or
 * ending in .json is a file). nodes > 0 overrides the node count. */
int topo_cluster_load(struct topo_cluster *c, const char *name_or_path, int nodes,
		      struct ts_error *err);
void topo_cluster_release(struct topo_cluster *c);
/* Deep copy (dst is overwritten; release it afterwards). */
int topo_cluster_copy(struct topo_cluster *dst, const struct topo_cluster *src,
		      struct ts_error *err);
/* Check a description for impossible values (also done by load and build);
 * the message names the field, e.g. "fabric.k: must be even (got 7)". */
int topo_cluster_check(const struct topo_cluster *c, struct ts_error *err);
/* Set the placement from a command-line word: linear, round-robin, random
 * or a comma-separated rank -> GPU list ("0,2,1,3"). */
int topo_placement_parse(struct topo_cluster *c, const char *s, struct ts_error *err);
const char *topo_placement_name(enum topo_placement p);
/* "intel", "amd" or "arm" (the cluster file's node.cpu) */
const char *topo_cpu_name(enum topo_cpu c);
const char *topo_fabric_name(enum topo_fabric_kind k);
/* NULL-terminated list of preset names, and a one-line description. */
const char *const *topo_preset_names(void);
const char *topo_preset_summary(const char *name);

/* ---- the graph -------------------------------------------------------------- */

enum topo_node_kind { TOPO_N_GPU, TOPO_N_NIC, TOPO_N_PCIE, TOPO_N_NVSWITCH, TOPO_N_SWITCH };
enum topo_link_kind { TOPO_L_NVLINK, TOPO_L_PCIE, TOPO_L_NET };

struct topo_node {
	uint8_t kind;              /* enum topo_node_kind */
	uint8_t tier;              /* switches: 1 leaf/edge, 2 spine/agg, 3 core; else 0 */
	int32_t host;              /* node (server) index, -1 for network switches */
	int32_t ports;             /* ports in use (switches) */
};

struct topo_link {
	int32_t from, to;          /* graph node ids */
	int32_t rev;               /* the link in the other direction */
	uint8_t kind;              /* enum topo_link_kind */
	uint8_t tier;              /* NET: 1 host-leaf, 2 leaf-spine, 3 spine-core */
	double bw_Bps;             /* capacity, bytes/s (raw line rate) */
	simtime_ps lat_ps;         /* propagation + the far end's switch latency */
	int32_t mtu_bytes;         /* payload per packet */
	int32_t overhead_bytes;    /* header bytes per packet */
};

struct topo {
	struct topo_cluster cl;    /* copy of the description (owns its pointers) */
	int32_t ngpus, nhosts;     /* GPUs, nodes */
	int32_t nnodes, nlinks;    /* graph sizes */
	struct topo_node *nodes;   /* nnodes */
	struct topo_link *links;   /* nlinks */
	int32_t *out_off;          /* CSR: out links of node v are out[out_off[v]..out_off[v+1]) */
	int32_t *out;              /* link ids */
	int32_t *gpu_nic;          /* gpu -> its NIC graph node (-1 if none) */
	int32_t *nic_leaf;         /* per NIC graph node - first NIC id: its leaf switch */
	int32_t first_nic;         /* graph id of the first NIC */
	int32_t *rank_gpu;         /* placement: rank -> gpu (ngpus entries) */
	int32_t *gpu_rank;         /* inverse */
	int32_t nswitch_by_tier[4];/* network switches per tier (index 1..3) */
	void *route_state;         /* routing helper owned by topo_route.c */
};

/* Build the graph of c (c is copied; the caller keeps its own). */
int topo_build(struct topo *t, const struct topo_cluster *c, struct ts_error *err);
void topo_release(struct topo *t);

static inline int topo_gpu_host(const struct topo *t, int32_t gpu) { return gpu / t->cl.node.gpus; }
static inline int topo_gpu_local(const struct topo *t, int32_t gpu) { return gpu % t->cl.node.gpus; }

/* ---- routing ----------------------------------------------------------------- */

#define TOPO_MAX_HOPS 16

/* One equal-cost shortest path from GPU src to GPU dst, chosen by hash
 * (deterministic: same hash, same path), or under TOPO_ROUTING_DMODK the
 * destination's static route whatever the hash. Writes the directed link ids into
 * links (capacity TOPO_MAX_HOPS) and returns the hop count, or a negative
 * error. src == dst gives 0 hops. */
int topo_route(const struct topo *t, int32_t src_gpu, int32_t dst_gpu, uint64_t hash,
	       int32_t *links);
/* Number of distinct equal-cost shortest paths between two GPUs. */
int64_t topo_route_count(const struct topo *t, int32_t src_gpu, int32_t dst_gpu);
/* The i-th path (0 <= i < topo_route_count) in a fixed order; for tests. */
int topo_route_nth(const struct topo *t, int32_t src_gpu, int32_t dst_gpu, int64_t i,
		   int32_t *links);

/* ---- summaries (trainsim topo) -------------------------------------------------- */

struct topo_summary {
	int32_t hosts, gpus;
	int32_t switches_total, switches_by_tier[4];
	int64_t links_total, links_by_tier[4];       /* cables (not directions) */
	double bisection_Bps;                        /* min cut between two host halves, one direction */
	double oversubscription[4];                  /* per tier: down capacity / up capacity (worst switch; 0 at the top) */
	int32_t ports_max[4], ports_min[4];          /* ports in use per switch, per tier */
	int diameter_hops;                           /* GPU to GPU, worst pair */
	int64_t ecmp_paths_max;                      /* between two far-apart hosts */
};

int topo_summarize(const struct topo *t, struct topo_summary *s, struct ts_error *err);

/* Max-flow (Dinic) between the NICs of hosts [0, nhosts/2) and the rest, on
 * the built links; bytes/s in one direction. */
double topo_bisection_Bps(const struct topo *t, struct ts_error *err);
/* Hops of a shortest path from src_gpu to dst_gpu by breadth-first search on
 * the graph under the routing policy above (independent of topo_route; for
 * tests and the diameter). Negative when unreachable. */
int topo_bfs_hops(const struct topo *t, int32_t src_gpu, int32_t dst_gpu);
/* Nodes a cluster may have: absurd counts are refused (100k GPUs is the
 * design target). */
#define TOPO_MAX_NODES 200000

/* Graphviz of the graph, written atomically; refuses graphs over
 * TOPO_DOT_MAX_NODES nodes. keep: NULL to commit the file, else the
 * written file, finished but not in place, for the caller to commit or
 * abort (afile_finish). */
#define TOPO_DOT_MAX_NODES 2000
struct afile;
int topo_write_dot(const struct topo *t, const char *path, struct afile *keep,
		   struct ts_error *err);

#endif

/* nccl_model.c: names, nccl-tests' busbw factors and NCCL's cost-model
 * tables (latencies per step, protocol bandwidth factors).
 * Source of every number: /work/shared/reference/nccl.md (NCCL 2.30.7
 * src/graph/tuning.cc; nccl-tests doc/PERFORMANCE.md). */
#include <string.h>

#include "sim/sim_int.h"

static const char *const op_names[SIM_OP_COUNT] = {
	"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "reduce", "sendrecv"
};
static const char *const algo_names[SIM_ALGO_COUNT] = {
	"auto", "ring", "tree", "rhd", "direct", "hier", "ps", "nvls", "nvlstree"
};
static const char *const proto_names[SIM_PROTO_COUNT] = { "auto", "LL", "LL128", "Simple" };

const char *sim_op_name(enum sim_op op) { return op < SIM_OP_COUNT ? op_names[op] : "?"; }
const char *sim_algo_name(enum sim_algo a) { return a < SIM_ALGO_COUNT ? algo_names[a] : "?"; }
const char *sim_proto_name(enum sim_proto p) { return p < SIM_PROTO_COUNT ? proto_names[p] : "?"; }

static int parse_in(const char *s, const char *const *names, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (strcasecmp(s, names[i]) == 0)
			return i;
	return -1;
}

int sim_op_parse(const char *s)
{
	int i = parse_in(s, op_names, SIM_OP_COUNT);
	if (i < 0) { /* nccl-tests binary names: all_reduce, reduce_scatter, ... */
		static const char *const alt[SIM_OP_COUNT] = { "all_reduce", "reduce_scatter",
			"all_gather", "alltoall", "broadcast", "reduce", "sendrecv" };
		i = parse_in(s, alt, SIM_OP_COUNT);
	}
	return i;
}
int sim_algo_parse(const char *s) { return parse_in(s, algo_names, SIM_ALGO_COUNT); }
int sim_proto_parse(const char *s) { return parse_in(s, proto_names, SIM_PROTO_COUNT); }

double sim_busbw_factor(enum sim_op op, int n)
{
	/* nccl-tests busbw factors (nccl.md §2.1) */
	switch (op) {
	case SIM_OP_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case SIM_OP_REDUCESCATTER:
	case SIM_OP_ALLGATHER:
	case SIM_OP_ALLTOALL:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

/* NCCL's table columns; algorithms NCCL does not have use Ring's row
 * (assumption: their steps are point-to-point sends like Ring's). */
static int nccl_algo_row(enum sim_algo a)
{
	switch (a) {
	case SIM_ALGO_TREE:
		return 0;
	case SIM_ALGO_NVLS:
		return 2;
	case SIM_ALGO_NVLSTREE:
		return 3;
	default:
		return 1; /* ring, rhd, direct, hier, ps */
	}
}

static int proto_col(enum sim_proto p)
{
	return p == SIM_PROTO_LL ? 0 : p == SIM_PROTO_LL128 ? 1 : 2;
}

double sim_nccl_hw_lat_us(enum sim_hw hw, enum sim_algo a, enum sim_proto p)
{
	/* hwLatencies[hw][algo] = {LL, LL128, Simple} µs (nccl.md §1.3) for
	 * rows Tree, Ring, NVLS, NVLSTree */
	static const double lat[3][4][3] = {
		/* NVLINK */ { { 0.6, 1.25, 4.0 }, { 0.6, 1.9, 3.4 }, { 0, 0, 25 }, { 0, 0, 25 } },
		/* PCI    */ { { 1.0, 1.9, 4.0 }, { 1.0, 2.5, 5.7 }, { 0, 0, 0 }, { 0, 0, 0 } },
		/* NET    */ { { 5.0, 8.5, 14 }, { 2.7, 4.0, 14.0 }, { 0, 0, 18 }, { 0, 0, 20.9 } },
	};
	return lat[hw][nccl_algo_row(a)][proto_col(p)];
}

double sim_nccl_net_overhead_us(enum topo_cpu cpu)
{
	return cpu == TOPO_CPU_AMD ? 2.0 : 1.0;
}

double sim_nccl_ring_hop_lat_us(enum sim_hw hw, enum sim_proto p, int32_t nnodes, int32_t ppn,
				enum topo_cpu cpu)
{
	/* ncclTopoTuneModel (nccl.md §1.4): with one rank per node the
	 * network latencies are fully exposed, so Tree's NET row; a ring
	 * across nodes still launches every step at the network's post
	 * overhead (getNetOverhead: 1.0 us on Intel hosts, 2.0 on AMD, the
	 * cluster's node.cpu) x 3 for Simple (found by review: Ring's NET row
	 * and the bare intra-node latency were used) */
	if (hw == SIM_HW_NET)
		return sim_nccl_hw_lat_us(SIM_HW_NET, ppn == 1 ? SIM_ALGO_TREE : SIM_ALGO_RING, p);
	double lat = sim_nccl_hw_lat_us(hw, SIM_ALGO_RING, p);
	double over = nnodes > 1 ? sim_nccl_net_overhead_us(cpu) * (p == SIM_PROTO_SIMPLE ? 3.0 : 1.0) :
				   0;
	return lat > over ? lat : over;
}

double sim_nccl_base_lat_us(enum sim_algo a, enum sim_proto p)
{
	/* baseLatencies (nccl.md §1.3): Tree {6.8, 14, 8.4}, Ring {6.6, 14,
	 * 8.4}, NVLS and NVLSTree 0 */
	static const double base[4][3] = { { 6.8, 14.0, 8.4 }, { 6.6, 14.0, 8.4 }, { 0, 0, 0 },
					   { 0, 0, 0 } };
	return base[nccl_algo_row(a)][proto_col(p)];
}

double sim_proto_eff(enum sim_proto p)
{
	/* nccl.md §1.5 ring refinements: LL busBw·0.5 (8 B flag per 8 B of
	 * data), LL128 busBw·0.92 (120 of 128 B lines carry data, NCCL uses
	 * 0.92), Simple unchanged. */
	return p == SIM_PROTO_LL ? 0.5 : p == SIM_PROTO_LL128 ? 0.92 : 1.0;
}

double sim_proto_eff_for(enum sim_algo a, enum sim_proto p, int nnodes)
{
	/* nccl.md §1.5 tree refinements of the LL protocols, run as wire
	 * overhead like the ring's (sim_proto_eff): LL busBw/3.8, LL128 busBw
	 * x 7/9 on one node and 120/128 across nodes. Tree Simple's x 0.92 is
	 * not applied: Simple sends no flags, and the bytes on the wire are
	 * the payload (assumption: the 0.92 is NCCL's fit of the tree's
	 * pipeline fill, which the simulation runs itself). */
	if (a == SIM_ALGO_TREE && p != SIM_PROTO_SIMPLE)
		return p == SIM_PROTO_LL ? 1 / 3.8 : nnodes > 1 ? 120.0 / 128 : 7.0 / 9;
	return sim_proto_eff(p);
}

double sim_ll_max_busbw_Bps(int sm_arch, int nnodes)
{
	/* llMaxBws (nccl.md §1.5), GB/s, by [1 node, 2 nodes, >= 3 nodes]:
	 * Ampere {87.7, 22.5, 19.0}, Hopper {141, 45, 35}; other GPUs are not
	 * in the reference: no cap. Across nodes NCCL picks the row by CPU
	 * vendor instead, which a cluster description does not give and whose
	 * rows the reference does not list apart: assumption, the GPU's row
	 * (found by review; DGX A100 has AMD CPUs, whose row these numbers
	 * may be) */
	static const double amp[3] = { 87.7, 22.5, 19.0 }, hop[3] = { 141, 45, 35 };
	int i = nnodes <= 1 ? 0 : nnodes == 2 ? 1 : 2;
	if (sm_arch >= 80 && sm_arch < 90)
		return amp[i] * 1e9;
	if (sm_arch >= 90 && sm_arch < 100)
		return hop[i] * 1e9;
	return 0;
}

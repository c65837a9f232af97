/* collective.c: collective operations as transfers on the network.
 *
 * An algorithm compiles an operation on a group into phases run one after
 * the other; a phase is a set of rings and/or a DAG of transfers, all
 * running at once. The same plan is executed on the flow/packet network
 * (sim_coll_start) or evaluated in closed form (sim_coll_analytic).
 *
 * Rings are executed lazily (O(ranks) state, not O(ranks x steps)): rank i
 * sends its step-k chunk once it can use step k-1 from rank i-1 and the
 * last byte of its step k-1 send has left (one send at a time per
 * connection, FIFO like one QP; sim_net.on_left), so the path latency of
 * one chunk overlaps the next one's transfer. A chunk becomes usable alpha
 * after it arrived; the link is free meanwhile, so latency overlaps other
 * chunks' transfers as in NCCL's slotted pipeline. On a symmetric ring this gives exactly
 * 2(n-1)·(alpha + S/(n·B)) for allreduce (nccl-tests PERFORMANCE.md, the
 * closed form of DESIGN.md); on mixed rings the latency paid is the sum of
 * hop latencies along a chunk's journey, as NCCL's model counts it
 * (nccl.md §1.4 Ring: intra steps x intraLat + inter steps x interLat).
 *
 * Per transfer: a software latency alpha = NCCL's hwLatency of the hop's
 * class (NVLink / PCI / NET) for the algorithm and protocol (nccl.md §1.3),
 * paid before the first byte; the protocol's wire overhead inflates bytes
 * by 1/eff (LL 2x, LL128 1/0.92: nccl.md §1.5); NCCL's baseLatency is
 * paid once at the start. Pipelined chains (tree, ring broadcast) pay
 * alpha on the first chunk of each edge only; later chunks stream.
 *
 * Large rings at flow fidelity run coupled (sim.h "Coupled rings"): one
 * flow per channel over all the ring's edges at the slowest edge's rate,
 * plus the latency chain of a chunk's journey; O(edges) events instead of
 * O(edges x steps), each a max-min re-solve.
 *
 * ECMP: each (collective, channel, sender, receiver) connection hashes to
 * one path, fixed for the whole operation (one QP per connection); the
 * executor gives all of a group's collectives one salt, so their paths
 * stay put all iteration, as a communicator's connections do. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "sim/compute.h"
#include "sim/sim_int.h"

/* ---- plan ----------------------------------------------------------------- */

/* Buffer slots of a connection: a sender is at most this many chunks
 * ahead of what its receiver has consumed, and learns of a freed slot one
 * path latency later (NCCL_STEPS, 8, in NCCL's device.h, recalled: not in
 * shared/reference, an assumption; found by review: without it, a ring
 * over 16-GPU nodes with 100 us links had 16 chunks in flight on a link). */
#define RING_SLOTS 8

struct ring {
	int32_t m;                 /* ranks in this ring */
	int32_t *gpu;              /* GPU of ring position i */
	int32_t nsteps;            /* sends per rank */
	double step_bytes;         /* payload per send, bytes */
	uint64_t hash;             /* ECMP salt of this ring (channel) */
	/* execution state */
	int32_t *sent, *recvd;     /* per position: sends started, chunks received */
	bool *busy;                /* per position: a send is in flight (FIFO connection) */
	int32_t *freed;            /* per position: its receiver's slots handed back (credits
	                            * arrived); sent - freed <= RING_SLOTS */
	simtime_ps *cr;            /* per position: RING_SLOTS credit arrival times, a FIFO
	                            * from cr_head (cr_n entries) */
	int8_t *cr_head, *cr_n;    /* per position: its credit FIFO */
	bool *cr_armed;            /* per position: a ring_credit_ev is queued */
	simtime_ps *plat;          /* per position: its path's latency (a credit's way back), ps */
	int32_t *path;             /* per position: route to the next, TOPO_MAX_HOPS each */
	int8_t *hops;              /* per position: route length */
	simtime_ps *alpha;         /* per position: software latency of its hop, ps */
	bool coupled;              /* runs as coupled flows (sim.h), not step by step */
	simtime_ps *elat;          /* coupled: per edge path latency + alpha + message cost, ps */
	simtime_ps *emsg;          /* coupled: per edge message cost (TCP's host), ps */
	double *xfac;              /* coupled: per edge slowest edge capacity / its own (<= 1) */
	double *bcap, *both;       /* coupled, probed: per edge its bottleneck link's capacity
	                            * and the other flows' load on it, bytes/s (bcap 0: no
	                            * link, or not probed) */
	double cmin;               /* coupled: the slowest edge's capacity, bytes/s */
	double prate;              /* coupled: its flow's rate at the probe (0: none), bytes/s */
	simtime_ps cstart_ps;      /* coupled: when its flows started, ps */
	simtime_ps cprop_ps;       /* coupled: its flow's path latency (one lap; spread: the
	                            * samples' mean), ps */
	int32_t cflow;             /* coupled: its flow's id in the flow model (a spread flow
	                            * under spray), else -1 */
	struct sim_coll *c;        /* owner */
};

struct xfer {
	int32_t src, dst;          /* GPUs; dst < 0: a single link (link) */
	int32_t link;              /* link id when dst < 0 */
	double bytes;              /* payload, bytes */
	bool pay_alpha;            /* first chunk of its edge */
	int32_t ndeps;             /* unfinished predecessors, and on its connection the
	                            * last transfer until it has left and the one
	                            * RING_SLOTS before until that slot's credit is back */
	int32_t onext;             /* the next transfer on this connection, which may go
	                            * once this one's last byte has left (dag_order), or -1 */
	int32_t wnext;             /* the transfer RING_SLOTS later on this connection, which
	                            * may go once this one has arrived and its slot's credit
	                            * is back at the sender (dag_window), or -1 */
	int32_t stage;             /* staged DAG: transfers with bytes on its longest chain before it */
	uint64_t hash;             /* ECMP hash */
};

struct dag {
	int32_t n, cap;            /* transfers, allocated */
	struct xfer *x;            /* transfers, in an order where deps come first */
	int32_t ne, cape;          /* edges, allocated */
	int32_t *efrom, *eto;      /* edges from -> to (builder) */
	int32_t *soff, *succ;      /* CSR successors (after finalize) */
	bool staged;               /* store and forward (no chunks): a transfer waits for whole
	                            * earlier ones, so the analytic model prices stage by stage */
	int32_t nstages;           /* staged: stages (after finalize) */
	double rep;                /* analytic: the network's chunks one planned chunk stands
	                            * for (planned_chunks; 0 or 1: itself) */
	double rep_w;              /* and the network's window stalls one planned window's
	                            * stands for */
	struct sim_coll *c;        /* owner */
};

struct phase {
	int32_t nrings;            /* rings in this phase */
	struct ring *rings;        /* owned */
	struct dag dag;            /* transfers besides the rings */
	int64_t pending;           /* transfers still to arrive */
};

#define MAX_PHASES 3

struct sim_coll {
	struct sim_net *net;       /* not owned */
	const struct topo *t;      /* not owned */
	struct sim_coll_spec s;    /* copy; s.ranks points to gpus-independent copy */
	int32_t *ranks;            /* owned copy of the group */
	int32_t *gpus;             /* GPU of each group member */
	double *weights;           /* owned copy of s.weights, NULL uniform */
	int nph, cur;              /* phases, current */
	struct phase ph[MAX_PHASES];
	double wire_factor;        /* 1 / protocol efficiency */
	simtime_ps floor_ps;       /* the least time from the start: LL's bus bandwidth cap, NCCL's
	                            * tree bandwidth (coll_params), ps (0 none) */
	bool floor_wait;           /* the end waits for the floor (an event is queued) */
	simtime_ps a_ps[3];        /* alpha per sim_hw class, ps */
	simtime_ps base_ps;        /* NCCL base latency, ps */
	simtime_ps t0, t1;         /* start, end (-1 while running), ps */
	double bytes;              /* payload moved, bytes */
	sim_coll_done done;        /* callback */
	void *ctx;                 /* callback context (not owned) */
	int err;                   /* first error inside an event */
	bool net_spray;            /* analytic: spread loads as the sprayed network would */
	bool for_net;              /* planned for a network to run (not the analytic level) */
	bool p2p;                  /* NCCL's point-to-point sends (alltoall, send/recv): PXN */
	struct join *joins;        /* spray: pending multi-path sends (pool) */
	int32_t njoins, capjoins, join_free; /* used, allocated, free list */
};

/* A transfer sprayed over several equal-cost paths: done when all parts
 * are, and off the sender (lcb) when all parts are. */
struct join {
	int32_t left;              /* parts still in flight */
	int32_t unsent;            /* parts not yet off the sender */
	sim_xfer_done cb;          /* the transfer's callback */
	sim_xfer_done lcb;         /* its sim_net.on_left callback, or NULL */
	void *ctx;                 /* its context */
	uint64_t arg;              /* its argument */
};

int64_t sim_spray_paths(const struct topo *t, int32_t a, int32_t b, bool spray)
{
	int64_t np = spray && a != b ? topo_route_count(t, a, b) : 1;
	return np > SIM_SPRAY_MAX_PATHS ? SIM_SPRAY_MAX_PATHS : np < 1 ? 1 : np;
}

int sim_spray_route(const struct topo *t, int32_t a, int32_t b, uint64_t hash, int64_t np,
		    int64_t k, int32_t *path)
{
	int64_t total;
	if (np <= 1)
		return a == b ? 0 : topo_route(t, a, b, hash, path);
	total = topo_route_count(t, a, b);
	return topo_route_nth(t, a, b,
			      (int64_t)((rng_hash64(hash) % (uint64_t)total + (uint64_t)(k * total / np)) %
					(uint64_t)total),
			      path);
}

/* NCCL's PXN (NCCL 2.12 and later, on unless NCCL_PXN_DISABLE=1; NVIDIA's
 * "Doubling all2all Performance with NCCL 2.12", recalled, not in
 * shared/reference): a point-to-point send to a GPU of another node whose
 * NIC is on another rail first crosses NVLink to the GPU of the sender's
 * node on the receiver's rail and leaves through that GPU's NIC, so it
 * stays on the rail rather than crossing the spine (without it, an EP
 * all-to-all across two nodes sends 3 of 4 transfers between rails). */
/* The rail of GPU g's NIC: its index in the node. */
static int32_t rail_of(const struct topo *t, int32_t g)
{
	return (t->gpu_nic[g] - t->first_nic) % t->cl.node.nics;
}

int32_t sim_pxn_via(const struct topo *t, int32_t a, int32_t b)
{
	int gpn = t->cl.node.gpus;
	int32_t h, g, rb;
	if (t->cl.fabric.no_pxn || t->cl.node.nics < 2 || t->cl.node.intra != TOPO_INTRA_NVSWITCH ||
	    a == b || topo_gpu_host(t, a) == topo_gpu_host(t, b) || t->gpu_nic[a] < 0 ||
	    t->gpu_nic[b] < 0)
		return -1;
	rb = rail_of(t, b);
	if (rail_of(t, a) == rb)
		return -1;
	/* the GPU at b's local index when it is on b's rail, else the first
	 * that is */
	h = topo_gpu_host(t, a);
	g = h * gpn + topo_gpu_local(t, b);
	if (rail_of(t, g) == rb)
		return g;
	for (g = h * gpn; g < (h + 1) * gpn; g++)
		if (rail_of(t, g) == rb)
			return g;
	return -1;
}

int64_t sim_p2p_paths(const struct topo *t, int32_t a, int32_t b, bool spray)
{
	int32_t v = sim_pxn_via(t, a, b);
	return sim_spray_paths(t, v < 0 ? a : v, b, spray);
}

int sim_p2p_route(const struct topo *t, int32_t a, int32_t b, uint64_t hash, int64_t np, int64_t k,
		  int32_t *path)
{
	int32_t v = sim_pxn_via(t, a, b), rest[TOPO_MAX_HOPS];
	int h1, h2;
	if (v < 0)
		return sim_spray_route(t, a, b, hash, np, k, path);
	if ((h1 = topo_route(t, a, v, 0, path)) < 0)
		return h1;
	if ((h2 = sim_spray_route(t, v, b, hash, np, k, rest)) < 0)
		return h2;
	if (h1 + h2 > TOPO_MAX_HOPS) /* (a long explicit fabric: no proxy; found by review) */
		return sim_spray_route(t, a, b, hash, np, k, path);
	memcpy(path + h1, rest, (size_t)h2 * sizeof(int32_t));
	return h1 + h2;
}

int sim_send_sprayed(struct sim_net *n, const struct topo *t, int32_t a, int32_t b, uint64_t hash,
		     int64_t np, bool p2p, double bytes, simtime_ps start_delay_ps, sim_xfer_done done,
		     void *ctx, uint64_t arg)
{
	int32_t all[SIM_SPRAY_MAX_PATHS * TOPO_MAX_HOPS];
	int nl = 0;
	TS_ASSERT(n->kind == SIM_FLOW && np > 1 && np <= SIM_SPRAY_MAX_PATHS);
	for (int64_t k = 0; k < np; k++) {
		int h = p2p ? sim_p2p_route(t, a, b, hash, np, k, all + nl) :
			      sim_spray_route(t, a, b, hash, np, k, all + nl);
		if (h < 0)
			return h;
		nl += h;
	}
	return sim_net_send_paths(n, all, nl, (int)np, bytes, start_delay_ps, done, ctx, arg);
}

void sim_coll_spec_init(struct sim_coll_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->op = SIM_OP_ALLREDUCE;
	s->algo = SIM_ALGO_AUTO;
	s->proto = SIM_PROTO_AUTO;
}

/* ---- group facts ---------------------------------------------------------- */

int sim_group_info(const struct topo *t, const int32_t *ranks, int32_t n,
		   struct sim_group_info *gi, struct ts_error *err)
{
	int32_t i, *cnt = NULL, *seen = NULL;
	int rc = 0;
	memset(gi, 0, sizeof(*gi));
	if (n < 1)
		return ts_error_set(err, TS_EINPUT, "a group needs at least one rank");
	if (n > t->ngpus)
		return ts_error_set(err, TS_EINPUT, "group of %d ranks but the cluster has %d GPUs",
				    (int)n, (int)t->ngpus);
	cnt = calloc((size_t)t->nhosts, sizeof(*cnt));
	seen = calloc((size_t)t->ngpus, sizeof(*seen));
	if (!cnt || !seen) {
		rc = ts_error_set(err, TS_ENOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		int32_t g;
		if (ranks[i] < 0 || ranks[i] >= t->ngpus) {
			rc = ts_error_set(err, TS_EINPUT, "rank %d is outside the cluster's %d GPUs",
					  (int)ranks[i], (int)t->ngpus);
			goto fail;
		}
		g = t->rank_gpu[ranks[i]];
		if (seen[g]++) {
			rc = ts_error_set(err, TS_EINPUT, "rank %d appears twice in the group",
					  (int)ranks[i]);
			goto fail;
		}
		if (cnt[topo_gpu_host(t, g)]++ == 0)
			gi->nnodes++;
		if (cnt[topo_gpu_host(t, g)] > gi->ppn)
			gi->ppn = cnt[topo_gpu_host(t, g)];
	}
	gi->nranks = n;
	gi->uniform = gi->ppn * gi->nnodes == n;
	gi->pow2 = (n & (n - 1)) == 0;
	gi->intra = t->cl.node.intra == TOPO_INTRA_NVSWITCH ? SIM_HW_NVLINK : SIM_HW_PCI;
fail:
	free(cnt);
	free(seen);
	return rc;
}

static bool nccl_has(enum sim_algo a, enum sim_op op)
{
	switch (a) {
	case SIM_ALGO_RING:
		return op != SIM_OP_ALLTOALL && op != SIM_OP_SENDRECV;
	case SIM_ALGO_TREE:
		return op == SIM_OP_ALLREDUCE || op == SIM_OP_BROADCAST || op == SIM_OP_REDUCE;
	case SIM_ALGO_RHD:
		return op == SIM_OP_ALLREDUCE || op == SIM_OP_REDUCESCATTER || op == SIM_OP_ALLGATHER;
	case SIM_ALGO_DIRECT:
		return true;
	case SIM_ALGO_HIER:
	case SIM_ALGO_PS:
	case SIM_ALGO_NVLS:
	case SIM_ALGO_NVLSTREE:
		return op == SIM_OP_ALLREDUCE;
	default:
		return false;
	}
}

/* Point-to-point transfers of a direct plan: every member to every other
 * (twice for an all-reduce: reduce-scatter, then all-gather), else one per
 * member. */
static double direct_xfers(const struct sim_coll_spec *s)
{
	double n = s->nranks;
	switch (s->op) {
	case SIM_OP_ALLTOALL:
	case SIM_OP_ALLGATHER:
	case SIM_OP_REDUCESCATTER: return n * (n - 1);
	case SIM_OP_ALLREDUCE: return 2 * n * (n - 1);
	default: return n;
	}
}

/* Direct plans of more transfers than these are refused: each transfer
 * keeps some 60 bytes in the analytic model and some 500 with its flow
 * at flow or packet level (measured 2026-12-04 on dgx-h100-ndr-fat-tree,
 * 1 GB all-to-all: 4,096 ranks, 16.8 M transfers, 1.0 GB analytic and
 * 8.5 GB flow; 8,192 ranks 3.9 GB analytic, and at flow level no result
 * in minutes on its way to some 34 GB). */
#define DIRECT_MAX_XFERS (1 << 26)
#define DIRECT_FLOW_MAX_XFERS (1 << 24)

int sim_coll_size_check(const struct sim_coll_spec *s, int ng, bool flow, struct ts_error *err)
{
	double x = direct_xfers(s) * ng;
	int lim = flow ? DIRECT_FLOW_MAX_XFERS : DIRECT_MAX_XFERS;
	if (s->algo != SIM_ALGO_DIRECT && !sim_op_p2p(s->op))
		return 0;
	if (x <= lim)
		return 0;
	char what[96];
	if (ng > 1)
		snprintf(what, sizeof(what), "%d concurrent direct %ss over %d ranks each are", ng,
			 sim_op_name(s->op), (int)s->nranks);
	else
		snprintf(what, sizeof(what), "a direct %s over %d ranks is", sim_op_name(s->op),
			 (int)s->nranks);
	return ts_error_set(err, TS_EINPUT,
			    "%s %.3g point-to-point transfers, beyond the %d %s holds (about %s); %s",
			    what, x, lim, flow ? "a flow- or packet-level plan" : "the simulator",
			    flow ? "8.5 GB" : "4 GB",
			    flow && x <= DIRECT_MAX_XFERS ? "use --fidelity analytic"
							  : "use smaller groups");
}

int sim_coll_check(const struct topo *t, const struct sim_coll_spec *s, struct ts_error *err)
{
	struct sim_group_info gi;
	int rc = sim_group_info(t, s->ranks, s->nranks, &gi, err);
	const char *an = sim_algo_name(s->algo), *on = sim_op_name(s->op);
	if (rc)
		return rc;
	if (!(s->size_bytes > 0))
		return ts_error_set(err, TS_EINPUT, "size must be positive");
	if (s->root < 0 || s->root >= s->nranks)
		return ts_error_set(err, TS_EINPUT, "root %d is not in the group of %d", (int)s->root,
				    (int)s->nranks);
	if (s->weights) {
		if (s->op != SIM_OP_ALLTOALL)
			return ts_error_set(err, TS_EINPUT, "per-member weights are for alltoall only");
		for (int32_t i = 0; i < s->nranks; i++)
			if (!(s->weights[i] >= 0) || !isfinite(s->weights[i]))
				return ts_error_set(err, TS_EINPUT, "alltoall weight %d is %g", (int)i,
						    s->weights[i]);
	}
	if (s->algo == SIM_ALGO_AUTO)
		return 0;
	if (!nccl_has(s->algo, s->op))
		return ts_error_set(err, TS_EINPUT, "algorithm '%s' cannot run '%s'%s", an, on,
				    s->op == SIM_OP_ALLTOALL || s->op == SIM_OP_SENDRECV
					    ? " (point-to-point: use 'direct')"
					    : "");
	if (s->algo == SIM_ALGO_DIRECT && (rc = sim_coll_size_check(s, 1, false, err)))
		return rc;
	if (s->algo == SIM_ALGO_RHD && !gi.pow2)
		return ts_error_set(err, TS_EINPUT, "algorithm 'rhd' needs a power-of-two group, "
				    "got %d ranks", (int)s->nranks);
	if ((s->algo == SIM_ALGO_NVLS || s->algo == SIM_ALGO_NVLSTREE) &&
	    (t->cl.node.intra != TOPO_INTRA_NVSWITCH || !t->cl.node.nvls))
		return ts_error_set(err, TS_EINPUT, "algorithm '%s' needs NVSwitch nodes with NVLink "
				    "SHARP (node.nvls), which '%s' lacks", an, t->cl.name);
	if (s->algo == SIM_ALGO_NVLS) {
		if (gi.nnodes != 1)
			return ts_error_set(err, TS_EINPUT, "algorithm 'nvls' runs inside one node; the "
					    "group spans %d nodes", (int)gi.nnodes);
		if (s->nranks < 2)
			return ts_error_set(err, TS_EINPUT, "algorithm 'nvls' needs at least 2 ranks");
	}
	if (s->algo == SIM_ALGO_NVLSTREE) {
		if (gi.nnodes < 2)
			return ts_error_set(err, TS_EINPUT, "algorithm 'nvlstree' runs across nodes "
					    "(NCCL has it off on one node; 'nvls' runs there)");
		if (!gi.uniform)
			return ts_error_set(err, TS_EINPUT, "algorithm 'nvlstree' needs the same number "
					    "of ranks on every node (the group has %d on %d nodes)",
					    (int)s->nranks, (int)gi.nnodes);
		if (gi.ppn < 2)
			return ts_error_set(err, TS_EINPUT, "algorithm 'nvlstree' needs at least 2 ranks "
					    "on each node (the group has 1 on each of %d)",
					    (int)gi.nnodes);
	}
	/* NVLS and NVLSTree run Simple only (nccl.md §1.3: no LL or LL128
	 * latencies; found by review: only NCCL's choice kept to it, and a
	 * caller's LL was priced) */
	if ((s->algo == SIM_ALGO_NVLS || s->algo == SIM_ALGO_NVLSTREE) && s->proto != SIM_PROTO_AUTO &&
	    s->proto != SIM_PROTO_SIMPLE)
		return ts_error_set(err, TS_EINPUT, "algorithm '%s' runs protocol 'Simple' only", an);
	if (s->algo == SIM_ALGO_HIER) {
		if (gi.nnodes < 2)
			return ts_error_set(err, TS_EINPUT, "algorithm 'hier' needs ranks on at least "
					    "2 nodes; the group is on one");
		if (!gi.uniform)
			return ts_error_set(err, TS_EINPUT, "algorithm 'hier' needs the same number of "
					    "ranks on every node");
	}
	if (s->algo == SIM_ALGO_PS && (s->ps_servers < 0 || s->ps_servers >= s->nranks))
		return ts_error_set(err, TS_EINPUT, "parameter server: %d servers for %d ranks "
				    "(need at least one worker)", (int)s->ps_servers, (int)s->nranks);
	if (s->proto == SIM_PROTO_LL128 && gi.intra != SIM_HW_NVLINK)
		return ts_error_set(err, TS_EINPUT, "protocol 'LL128' needs NVLink inside nodes "
				    "(NCCL enables it only there)");
	return 0;
}

/* ---- builder -------------------------------------------------------------- */

static int dag_add(struct dag *d, int32_t src, int32_t dst, int32_t link, double bytes,
		   bool pay_alpha, uint64_t hash)
{
	if (d->n == d->cap) {
		int32_t nc = d->cap ? d->cap * 2 : 64;
		struct xfer *p = realloc(d->x, (size_t)nc * sizeof(*p));
		if (!p)
			return -1;
		d->x = p;
		d->cap = nc;
	}
	d->x[d->n].src = src;
	d->x[d->n].dst = dst;
	d->x[d->n].link = link;
	d->x[d->n].bytes = bytes;
	d->x[d->n].pay_alpha = pay_alpha;
	d->x[d->n].ndeps = 0;
	d->x[d->n].onext = -1;
	d->x[d->n].wnext = -1;
	d->x[d->n].stage = 0;
	d->x[d->n].hash = hash;
	return d->n++;
}

static int dag_dep(struct dag *d, int32_t from, int32_t to)
{
	if (from < 0 || to < 0)
		return 0;
	if (d->ne == d->cape) {
		int32_t nc = d->cape ? d->cape * 2 : 64;
		int32_t *a = realloc(d->efrom, (size_t)nc * sizeof(*a));
		if (!a)
			return TS_ENOMEM;
		d->efrom = a;
		a = realloc(d->eto, (size_t)nc * sizeof(*a));
		if (!a)
			return TS_ENOMEM;
		d->eto = a;
		d->cape = nc;
	}
	TS_ASSERT(from < to); /* added in topological order */
	d->efrom[d->ne] = from;
	d->eto[d->ne++] = to;
	d->x[to].ndeps++;
	return 0;
}

/* `to` after `from` on one connection (the same sender and receiver, one
 * chunk after the other), through *link, from's onext or wnext:
 * - onext, the next chunk: it may go once from's last byte has left the
 *   sender, as NCCL posts a connection's next step while the last is on
 *   the wire (found by review: as a data dependency, each later chunk of a
 *   chain or tree waited out the last one's path latency, so finer chunks
 *   added latency);
 * - wnext, RING_SLOTS chunks later: the receiver has RING_SLOTS slots, and
 *   `to` takes from's once it has arrived and the credit has come back,
 *   one path latency later, as a ring's connection (found by review:
 *   without it a chain over 100 us links had some 16 chunks in flight on
 *   a connection, a 64 MiB broadcast 1660 us at flow level against 8960
 *   us at packet level). */
static int dag_conn(struct dag *d, int32_t from, int32_t to, bool window)
{
	int32_t *link;
	if (from < 0 || to < 0)
		return 0;
	link = window ? &d->x[from].wnext : &d->x[from].onext;
	TS_ASSERT(from < to && *link < 0);
	*link = to;
	d->x[to].ndeps++;
	return 0;
}

static int dag_order(struct dag *d, int32_t from, int32_t to)
{
	return dag_conn(d, from, to, false);
}

static int dag_window(struct dag *d, int32_t from, int32_t to)
{
	return dag_conn(d, from, to, true);
}

static int dag_finalize(struct dag *d)
{
	int32_t i, *fill;
	d->soff = calloc((size_t)d->n + 1, sizeof(int32_t));
	d->succ = malloc((size_t)(d->ne ? d->ne : 1) * sizeof(int32_t));
	fill = calloc((size_t)d->n + 1, sizeof(int32_t));
	if (!d->soff || !d->succ || !fill) {
		free(fill);
		return TS_ENOMEM;
	}
	for (i = 0; i < d->ne; i++)
		d->soff[d->efrom[i] + 1]++;
	for (i = 0; i < d->n; i++)
		d->soff[i + 1] += d->soff[i];
	for (i = 0; i < d->ne; i++)
		d->succ[d->soff[d->efrom[i]] + fill[d->efrom[i]]++] = d->eto[i];
	free(fill);
	/* stages: a transfer follows the bytes-carrying transfers on its
	 * longest chain of predecessors (a zero-byte join adds none);
	 * predecessors come first */
	d->nstages = d->n > 0 ? 1 : 0;
	for (i = 0; i < d->n; i++) {
		int32_t k, nx = d->x[i].stage + (d->x[i].bytes > 0);
		if (d->x[i].stage + 1 > d->nstages)
			d->nstages = d->x[i].stage + 1;
		for (k = d->soff[i]; k < d->soff[i + 1]; k++)
			if (nx > d->x[d->succ[k]].stage)
				d->x[d->succ[k]].stage = nx;
	}
	free(d->efrom);
	free(d->eto);
	d->efrom = d->eto = NULL;
	return 0;
}

static void dag_release(struct dag *d)
{
	free(d->x);
	free(d->efrom);
	free(d->eto);
	free(d->soff);
	free(d->succ);
	memset(d, 0, sizeof(*d));
}

static void ring_release(struct ring *r)
{
	free(r->gpu);
	free(r->sent);
	free(r->recvd);
	free(r->busy);
	free(r->freed);
	free(r->cr);
	free(r->cr_head);
	free(r->cr_n);
	free(r->cr_armed);
	free(r->plat);
	free(r->path);
	free(r->hops);
	free(r->alpha);
	free(r->elat);
	free(r->emsg);
	free(r->xfac);
	free(r->bcap);
	free(r->both);
}

static void plan_release(struct sim_coll *c)
{
	int p, i;
	for (p = 0; p < MAX_PHASES; p++) {
		for (i = 0; i < c->ph[p].nrings; i++)
			ring_release(&c->ph[p].rings[i]);
		free(c->ph[p].rings);
		dag_release(&c->ph[p].dag);
		memset(&c->ph[p], 0, sizeof(c->ph[p]));
	}
	c->nph = 0;
}

static struct ring *add_ring(struct phase *ph, int32_t m, const int32_t *gpu, int32_t nsteps,
			     double step_bytes, uint64_t hash)
{
	struct ring *nr = realloc(ph->rings, (size_t)(ph->nrings + 1) * sizeof(*nr)), *r;
	if (!nr)
		return NULL;
	ph->rings = nr;
	r = &nr[ph->nrings];
	memset(r, 0, sizeof(*r));
	r->gpu = malloc((size_t)m * sizeof(int32_t));
	if (!r->gpu)
		return NULL;
	ph->nrings++;
	memcpy(r->gpu, gpu, (size_t)m * sizeof(int32_t));
	r->m = m;
	r->nsteps = nsteps;
	r->step_bytes = step_bytes;
	r->hash = hash;
	return r;
}

struct hkey {
	int32_t host_rank;         /* order of the GPU's host in the group (first appearance) */
	int32_t gpu;               /* GPU id */
};

static int cmp_hkey(const void *a, const void *b)
{
	const struct hkey *x = a, *y = b;
	if (x->host_rank != y->host_rank)
		return (x->host_rank > y->host_rank) - (x->host_rank < y->host_rank);
	return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* GPUs of the group with hosts contiguous: hosts in the order the group's
 * rank list first reaches them (NCCL chains nodes in rank order), GPUs
 * inside a host by local index. Returns the number of hosts;
 * host_off[h]..host_off[h+1] index the sorted array; -1 on no memory. */
static int32_t by_host(const struct topo *t, const int32_t *gpus, int32_t n, int32_t *sorted,
		       int32_t *host_off)
{
	struct hkey *k = malloc((size_t)n * sizeof(*k));
	int32_t *order = malloc((size_t)t->nhosts * sizeof(int32_t)), i, nh = 0;
	if (!k || !order) {
		free(k);
		free(order);
		return -1;
	}
	for (i = 0; i < n; i++)
		order[topo_gpu_host(t, gpus[i])] = -1;
	for (i = 0; i < n; i++) {
		int32_t h = topo_gpu_host(t, gpus[i]);
		if (order[h] < 0)
			order[h] = nh++;
		k[i].host_rank = order[h];
		k[i].gpu = gpus[i];
	}
	qsort(k, (size_t)n, sizeof(*k), cmp_hkey);
	nh = 0;
	for (i = 0; i < n; i++) {
		sorted[i] = k[i].gpu;
		if (i == 0 || k[i].host_rank != k[i - 1].host_rank)
			host_off[nh++] = i;
	}
	host_off[nh] = n;
	free(k);
	free(order);
	return nh;
}

/* Rings over gpus with nch channels: channel c visits hosts in order and,
 * inside each host, its GPUs rotated by c, so that each local GPU (and its
 * NIC) is the exit of a different channel. Odd hosts are walked backwards
 * (a snake), so a ring leaves host h and enters host h+1 through the same
 * local GPU index, i.e. the same NIC rail: NCCL keeps rings on one NIC
 * index across nodes (NCCL_CROSS_NIC=0 default) so rail-optimised fabrics
 * carry them within a rail. With an odd host count the wrap-around hop
 * crosses rails. */
/* Channel ch's ring over the host-grouped GPUs (by_host's sorted, off,
 * nh): hosts in order, each host's GPUs as sim_ring_local has them. */
static void ring_order(const int32_t *sorted, const int32_t *off, int32_t nh, int32_t ch,
		       int32_t *out)
{
	for (int32_t h = 0, j = 0; h < nh; h++) {
		int32_t len = off[h + 1] - off[h];
		for (int32_t k = 0; k < len; k++)
			out[j++] = sorted[off[h] + sim_ring_local(h, k, ch, len)];
	}
}

static int build_rings(struct sim_coll *c, struct phase *ph, const int32_t *gpus, int32_t n,
		       int32_t nch, int32_t nsteps, double step_bytes, uint64_t salt)
{
	int32_t *sorted = malloc((size_t)n * sizeof(int32_t)), *off = malloc(((size_t)n + 1) * sizeof(int32_t));
	int32_t *ord = malloc((size_t)n * sizeof(int32_t)), nh, ch;
	int rc = 0;
	if (!sorted || !off || !ord) {
		rc = TS_ENOMEM;
		goto fail;
	}
	nh = by_host(c->t, gpus, n, sorted, off);
	if (nh < 0) {
		rc = TS_ENOMEM;
		goto fail;
	}
	for (ch = 0; ch < nch; ch++) {
		ring_order(sorted, off, nh, ch, ord);
		if (!add_ring(ph, n, ord, nsteps, step_bytes / nch,
			      rng_hash2(c->s.hash ^ salt, (uint64_t)ch))) {
			rc = TS_ENOMEM;
			goto fail;
		}
	}
fail:
	free(sorted);
	free(off);
	free(ord);
	return rc;
}

static int32_t auto_channels(const struct topo *t, const int32_t *gpus, int32_t n)
{
	int32_t *sorted = malloc((size_t)n * sizeof(int32_t)), *off = malloc(((size_t)n + 1) * sizeof(int32_t));
	int32_t nh, ppn = 1, h, nch;
	if (!sorted || !off) {
		free(sorted);
		free(off);
		return 1;
	}
	nh = by_host(t, gpus, n, sorted, off);
	if (nh < 0)
		nh = 0; /* out of memory: one channel */
	for (h = 0; h < nh; h++)
		if (off[h + 1] - off[h] > ppn)
			ppn = off[h + 1] - off[h];
	free(sorted);
	free(off);
	/* Multi-node: one ring per local GPU, so every NIC carries one ring
	 * each way (NCCL's rings follow the NICs). One node: one ring (the
	 * GPU's NVLink/PCIe port is one link here, more rings add nothing).
	 * More channels per NIC (NCCL often runs 2) only add ECMP path
	 * diversity in this model; --channels sets it. */
	nch = nh > 1 ? ppn : 1;
	return nch;
}

/* LL's step: its FIFO of 512 KiB of 16-byte lines (8 data bytes and a
 * flag each) over NCCL_STEPS = 8 steps, 32 KiB of data (recalled from
 * NCCL's source, not in shared/reference: an assumption). */
#define LL_STEP_BYTES 32768.0

/* Chunks of size *cs each, the last the remainder, for `bytes` pipelined
 * in chunks of about `chunk`, as NCCL's loops cut a channel's data (the
 * last loop's chunk is what is left: found by review, splitting into
 * equal chunks made 4 more bytes than 512 KiB a channel two pipelined
 * chunks, a broadcast over 8 H100s 25 % faster than at 512 KiB); at most
 * maxc (equal ones then) to keep plans small, or s->chunks equal ones. */
static int32_t chunks_of(const struct sim_coll_spec *s, double bytes, double chunk, double *cs,
			 int32_t maxc)
{
	double c;
	if (s->chunks > 0) {
		*cs = bytes / s->chunks;
		return s->chunks;
	}
	c = ceil(bytes / chunk);
	if (c <= 1) {
		*cs = bytes;
		return 1;
	}
	if (c > maxc) {
		*cs = bytes / maxc;
		return maxc;
	}
	*cs = chunk;
	return (int32_t)c;
}

/* Chunk k's bytes of `chunks` chunks of cs, the last the remainder. */
static double chunk_bytes(double bytes, int32_t chunks, double cs, int32_t k)
{
	return k + 1 < chunks ? cs : bytes - cs * (chunks - 1);
}

/* Pipelined chain root -> ... (broadcast) or ... -> root (reduce) over
 * the ring order with chunks. */
static int build_chain(struct sim_coll *c, struct dag *d, const int32_t *ord, int32_t n,
		       bool toward_root, double bytes, int32_t chunks, double cs)
{
	int32_t h, k, *prev_hop = malloc((size_t)chunks * sizeof(int32_t));
	if (!prev_hop)
		return TS_ENOMEM;
	for (k = 0; k < chunks; k++)
		prev_hop[k] = -1;
	for (h = 0; h + 1 < n; h++) {
		/* a reduce runs along the ring too, from the root's
		 * successor to the root (NCCL's ring reduce: the rank after
		 * the root sends, the root receives last); it ran the
		 * broadcast's chain backwards, on the other direction's
		 * links (seen while a review compared the two) */
		int32_t src = toward_root ? ord[h + 1] : ord[h];
		int32_t dst = toward_root ? ord[(h + 2) % n] : ord[h + 1];
		int32_t last = -1;
		for (k = 0; k < chunks; k++) {
			int32_t id = dag_add(d, src, dst, -1, chunk_bytes(bytes, chunks, cs, k), k == 0,
					     rng_hash2(c->s.hash, (uint64_t)src << 20 | (uint64_t)dst));
			if (id < 0 || dag_dep(d, prev_hop[k], id) || dag_order(d, last, id) ||
			    (k >= RING_SLOTS && dag_window(d, prev_hop[k - RING_SLOTS], id)))
				goto oom;
			prev_hop[k] = id; /* (k - RING_SLOTS's is this hop's by now) */
			last = id;
		}
	}
	free(prev_hop);
	return 0;
oom:
	free(prev_hop);
	return TS_ENOMEM;
}

/* One binary tree (heap layout over hosts, a chain inside each host) rooted
 * at ord's first host; up (reduce) and/or down (broadcast) with chunks. */
static int build_tree(struct sim_coll *c, struct dag *d, const int32_t *ord, int32_t n,
		      bool up, bool down, double bytes, int32_t chunks, double cs, uint64_t salt)
{
	int32_t *parent = malloc((size_t)n * sizeof(int32_t)), *hostrep = malloc((size_t)n * sizeof(int32_t));
	int32_t *upid = NULL, *downid = NULL, *kid = NULL, *sib = NULL, i, k, nh = 0, rc = TS_ENOMEM;
	if (!parent || !hostrep)
		goto fail;
	/* positions: ord is host-contiguous; first of each host is its rep */
	for (i = 0; i < n; i++) {
		if (i == 0 || topo_gpu_host(c->t, ord[i]) != topo_gpu_host(c->t, ord[i - 1])) {
			hostrep[nh] = i;
			parent[i] = nh == 0 ? -1 : hostrep[(nh - 1) / 2];
			nh++;
		} else {
			parent[i] = i - 1;
		}
	}
	upid = malloc((size_t)n * (size_t)chunks * sizeof(int32_t));
	downid = malloc((size_t)n * (size_t)chunks * sizeof(int32_t));
	kid = malloc((size_t)n * sizeof(int32_t));
	sib = malloc((size_t)n * sizeof(int32_t));
	if (!upid || !downid || !kid || !sib)
		goto fail;
	/* children lists (a parent always precedes its children) */
	for (i = 0; i < n; i++)
		kid[i] = sib[i] = -1;
	for (i = n - 1; i > 0; i--) {
		sib[i] = kid[parent[i]];
		kid[parent[i]] = i;
	}
	for (i = 0; i < n * chunks; i++)
		upid[i] = downid[i] = -1;
	if (up) {
		/* children before parents: parents have smaller positions, so go
		 * from the last position down */
		for (k = 0; k < chunks; k++)
			for (i = n - 1; i > 0; i--) {
				int32_t id = dag_add(d, ord[i], ord[parent[i]], -1,
						     chunk_bytes(bytes, chunks, cs, k), k == 0,
						     rng_hash2(c->s.hash ^ salt, (uint64_t)i));
				int32_t j;
				if (id < 0)
					goto fail;
				upid[i * chunks + k] = id;
				if (k > 0 && dag_order(d, upid[i * chunks + k - 1], id))
					goto fail;
				if (k >= RING_SLOTS && dag_window(d, upid[i * chunks + k - RING_SLOTS], id))
					goto fail;
				for (j = kid[i]; j >= 0; j = sib[j]) /* children of i */
					if (dag_dep(d, upid[j * chunks + k], id))
						goto fail;
			}
	}
	if (down) {
		for (k = 0; k < chunks; k++)
			for (i = 1; i < n; i++) {
				int32_t p = parent[i], j, id;
				id = dag_add(d, ord[p], ord[i], -1, chunk_bytes(bytes, chunks, cs, k), k == 0,
					     rng_hash2(c->s.hash ^ salt ^ 0x5bd1e995u, (uint64_t)i));
				if (id < 0)
					goto fail;
				downid[i * chunks + k] = id;
				if (k > 0 && dag_order(d, downid[i * chunks + k - 1], id))
					goto fail;
				if (k >= RING_SLOTS && dag_window(d, downid[i * chunks + k - RING_SLOTS], id))
					goto fail;
				if (p > 0 && dag_dep(d, downid[p * chunks + k], id))
					goto fail;
				if (p == 0 && up)
					for (j = kid[0]; j >= 0; j = sib[j])
						if (dag_dep(d, upid[j * chunks + k], id))
							goto fail;
			}
	}
	rc = 0;
fail:
	free(parent);
	free(hostrep);
	free(upid);
	free(downid);
	free(kid);
	free(sib);
	return rc;
}

/* out = ord (host-contiguous) with each host's GPUs rotated by r. */
static void rotate_hosts(const struct topo *t, const int32_t *ord, int32_t *out, int32_t n, int32_t r)
{
	for (int32_t i = 0; i < n;) {
		int32_t len = 1;
		while (i + len < n && topo_gpu_host(t, ord[i + len]) == topo_gpu_host(t, ord[i]))
			len++;
		for (int32_t k = 0; k < len; k++)
			out[i + k] = ord[i + (k + r) % len];
		i += len;
	}
}

/* Trees over more than this many ranks are priced by NCCL's model
 * (sim_tree_model) in the analytic model rather than planned. */
#define TREE_PLAN_MAX_RANKS 64

/* Transfers a chain's chunks may add up to over its hops and channels: a
 * chain's pipeline fill is a chunk's time per hop, so a long chain cut
 * into fewer, larger chunks than NCCL's fills for longer (found by review
 * and left, then by an audit, 2026-12-05: at 64 chunks a 1 GiB broadcast
 * over 8 DGX H100 nodes took 4290 us at flow level against 3032 analytic,
 * and 13,496 against 4,242 over 64). 2^20 transfers keep a plan under
 * some 160 MB; beyond them (over 64 nodes of 8 GPUs at 1 GiB) the chunks
 * are fewer again, at least 64. */
#define CHAIN_PLAN_XFERS (1 << 20)

/* Chunks for the network (NCCL's while they add up to at most
 * CHAIN_PLAN_XFERS transfers at xfers a chunk, at least 64) or, planned
 * for the analytic level, 64 at most standing for the network's d->rep
 * each: the analytic level prices
 * the bytes and a chunk's journey, which the count does not move, and
 * the window's stall, which it scales by rep; NCCL's choice prices every
 * candidate there (found by review: with plans of NCCL's chunks, predict
 * of llama3-8b tp 8 on 8 DGX H100 nodes took 3.96 s and 90 MB for 0.15 s
 * and 7 MB, the same iteration). */
static int32_t planned_chunks_in(const struct sim_coll_spec *s, double bytes, double chunk,
				 double xfers, int32_t lo, int32_t amax, bool for_net, double *cs,
				 struct dag *d)
{
	double room = (double)CHAIN_PLAN_XFERS / (xfers > 1 ? xfers : 1);
	int32_t k = chunks_of(s, bytes, chunk, cs, room > lo ? (int32_t)room : lo);
	d->rep = d->rep_w = 1;
	if (!for_net && k > amax) {
		double net_cs = *cs;
		int32_t nk = k;
		k = chunks_of(s, bytes, chunk, cs, amax);
		d->rep = *cs / net_cs;
		/* a connection's stalls come one a window after the first:
		 * nk / RING_SLOTS - 1 of them for k / RING_SLOTS - 1 planned */
		d->rep_w = k > RING_SLOTS ? (double)(nk - RING_SLOTS) / (k - RING_SLOTS) : 1;
	}
	return k;
}

static int32_t planned_chunks(const struct sim_coll_spec *s, double bytes, double chunk,
			      double xfers, bool for_net, double *cs, struct dag *d)
{
	return planned_chunks_in(s, bytes, chunk, xfers, 64, 64, for_net, cs, d);
}

/* A chain's chunks (broadcast/reduce): NCCL's step, 512 KiB of Simple
 * (4 MiB over 8 steps) and LL128 (assumption: about Simple's), LL's 32 KiB
 * (LL forwards line by line inside a node, so this bounds it); n ranks,
 * nch chains. */
static int32_t pick_chunks(const struct sim_coll_spec *s, double bytes, int32_t n, int32_t nch,
			   bool for_net, double *cs, struct dag *d)
{
	return planned_chunks(s, bytes, s->proto == SIM_PROTO_LL ? LL_STEP_BYTES : 512.0 * 1024,
			      (double)(n > 1 ? n - 1 : 1) * (nch > 0 ? nch : 1), for_net, cs, d);
}

/* A tree's chunks: NCCL halves the tree's chunk from 512 KiB while a
 * channel has fewer than depth x 8 of them (down to 128 KiB), depth x 4
 * (64 KiB) and depth (32 KiB), depth = ppn - 1 + log2(nodes) (its
 * enqueue.cc; found by review: fixed 512 KiB chunks left an 8 MiB tree over
 * 16 nodes one chunk per tree, a store-and-forward at twice the analytic
 * time); as many as NCCL's while the operation's trees (ntrees, each with
 * dirs of up and down) add up to at most CHAIN_PLAN_XFERS transfers, at
 * least 64 (they were 64 at most: a 1 GiB all-reduce over 32 DGX H100
 * nodes in 1 MiB chunks filled its trees for 6444 us at flow level
 * against 5892 analytic). */
static double tree_chunk(const struct sim_coll_spec *s, double bytes, int32_t n, int32_t nh)
{
	double chunk = 512.0 * 1024, depth = (double)n / (nh > 0 ? nh : 1) - 1 + floor(log2(nh > 0 ? nh : 1));
	if (depth < 1)
		depth = 1;
	while (bytes / chunk < depth * 8 && chunk > 131072)
		chunk /= 2;
	while (bytes / chunk < depth * 4 && chunk > 65536)
		chunk /= 2;
	while (bytes / chunk < depth && chunk > 32768)
		chunk /= 2;
	/* LL: its step at most (pick_chunks) */
	if (s->proto == SIM_PROTO_LL && chunk > LL_STEP_BYTES)
		chunk = LL_STEP_BYTES;
	return chunk;
}

/* (tree_chunk's chunks, within the plan's budget) */
static int32_t pick_tree_chunks(const struct sim_coll_spec *s, double bytes, int32_t n, int32_t nh,
				int32_t ntrees, int32_t dirs, bool for_net, double *cs, struct dag *d)
{
	return planned_chunks(s, bytes, tree_chunk(s, bytes, n, nh),
			      (double)(n > 1 ? n - 1 : 1) * (ntrees > 0 ? ntrees : 1) * (dirs > 0 ? dirs : 1),
			      for_net, cs, d);
}

/* NCCL's NVLS efficiency nvlsEff, 0.85 on Hopper and 0.74 on Blackwell
 * (nccl.md §1.5), applied by NVLS and NVLSTree as extra wire bytes. */
static double nvls_eff(const struct topo *t)
{
	return t->cl.gpu.sm_arch >= 100 ? 0.74 : 0.85;
}

/* The GPU->switch NVLink ports of a GPU (one or several), for NVLS. */
static int nvlink_ports(const struct topo *t, int32_t gpu, int32_t *out, int max)
{
	int32_t k;
	int n = 0;
	for (k = t->out_off[gpu]; k < t->out_off[gpu + 1] && n < max; k++)
		if (t->links[t->out[k]].kind == TOPO_L_NVLINK)
			out[n++] = t->out[k];
	return n;
}

/* Plans of NVLSTree over more transfers than this price it with fewer
 * chunks at the analytic level, whose time the chunk count moves only by
 * the window stalls (NCCL's choice prices it for every group and size:
 * at 64 chunks 1,024 nodes of 8 GPUs would plan 6.8 M transfers). */
#define NVLS_TREE_ANALYTIC_XFERS (1 << 18)
/* NVLS's chunk, the unit of each shard its pipeline moves:
 * NCCL_NVLS_CHUNKSIZE, 128 KiB by default (recalled from NCCL's source,
 * not in shared/reference: an assumption; found by review: with the
 * tree's 512 KiB the fill of the switch's legs, ppn chunks each, put the
 * flow level 44-118 us above the analytic level, which leaves fill out). */
#define NVLS_CHUNK_BYTES (128.0 * 1024)
/* Chunks a flow-level plan keeps at least, past the transfer budget
 * (found by review: at 1 beyond the budget, 2,048 nodes had 5 chunks and
 * their fill, 47 % over the analytic level). */
#define NVLS_TREE_MIN_CHUNKS 16

/* One unit's legs through a node's switch (its P GPUs gpu[], their
 * NVLink ports port[]): each GPU sends `up` bytes into the switch (after
 * pre[j] where pre is given; paying the NVLS latency where pay), and once
 * every GPU's has arrived each receives `down`; each GPU's legs one after
 * another across units (last_up[], last_down[]: the previous unit's, -1
 * none; updated). Returns 0 or TS_ENOMEM. */
static int switch_legs(struct dag *d, const struct topo *t, const int32_t *gpu, const int32_t *port,
		       int32_t P, double up, double down, bool pay, const int32_t *pre,
		       int32_t *last_up, int32_t *last_down)
{
	int32_t j, join, id;
	for (j = 0; j < P; j++) {
		id = dag_add(d, gpu[j], -1, port[j], up, pay, 0);
		if (id < 0 || (pre && dag_dep(d, pre[j], id)) || dag_order(d, last_up[j], id))
			return TS_ENOMEM;
		last_up[j] = id;
	}
	if ((join = dag_add(d, gpu[0], gpu[0], -1, 0, false, 0)) < 0)
		return TS_ENOMEM;
	for (j = 0; j < P; j++)
		if (dag_dep(d, last_up[j], join))
			return TS_ENOMEM;
	for (j = 0; j < P; j++) {
		id = dag_add(d, gpu[j], -1, t->links[port[j]].rev, down, false, 0);
		if (id < 0 || dag_dep(d, join, id) || dag_order(d, last_down[j], id))
			return TS_ENOMEM;
		last_down[j] = id;
	}
	return 0;
}

/* NVLSTree, NCCL's multi-node all-reduce over NVLink SHARP (NVLS_TREE;
 * its costs in nccl.md §1.4-1.5): inside each node the switch reduces the
 * GPUs' buffers (multimem ld_reduce), so that local GPU j holds its node's
 * sum of shard j (1/ppn of the data); shard j is all-reduced across the
 * nodes over a double binary tree of the nodes' GPUs j (each with its own
 * NIC, as the trees of NCCL's NVLS heads), and the switch multicasts each
 * reduced shard back to every GPU of the node (multimem st). Every stage
 * is pipelined in the tree's chunks: a unit (chunk k of tree t, u bytes of
 * each shard) leaves each GPU as ppn x u toward the switch, comes back as
 * u once every GPU's has arrived, goes up and down the tree, returns to
 * the switch as u and reaches each GPU as ppn x u, so each GPU's NVLink
 * carries S (1 + 1/ppn) each way, as NVLS's (NCCL's NVLS efficiency as
 * extra wire bytes), and each NIC S/(2 ppn) x 3 at a tree's inner node and
 * x 1 at a leaf each way, S/ppn at two nodes (NCCL's x 2 for NVLSTree
 * across two nodes). The first unit pays NCCL's NVLS latency once inside
 * the node (the first of each GPU's stream of units into the switch) and
 * each tree's first chunk NVLSTree's network latency at each hop (intraLat
 * + 2 log2(nodes) interLat, nccl.md §1.4). Needs one NVLink port per GPU
 * (the built topologies' single switch a host). */
static int build_nvls_tree(struct sim_coll *c, struct dag *d)
{
	const struct sim_coll_spec *s = &c->s;
	const struct topo *t = c->t;
	int32_t n = s->nranks, nh, P, k, K, u, tr, h, j, pos;
	int32_t *sorted = malloc((size_t)n * sizeof(int32_t)), *off = malloc(((size_t)n + 1) * sizeof(int32_t));
	int32_t *port = malloc((size_t)n * sizeof(int32_t)), *at[2] = { NULL, NULL };
	int32_t *ru = malloc((size_t)n * sizeof(int32_t)), *rd = malloc((size_t)n * sizeof(int32_t));
	int32_t *mu = malloc((size_t)n * sizeof(int32_t)), *md = malloc((size_t)n * sizeof(int32_t));
	int32_t *post = malloc((size_t)n * sizeof(int32_t)), *jt = NULL, *upid = NULL, *dnid = NULL;
	double eff = nvls_eff(t), B, cs, xfers;
	int rc = TS_ENOMEM;
	if (!sorted || !off || !port || !ru || !rd || !mu || !md || !post)
		goto done;
	nh = by_host(t, c->gpus, n, sorted, off);
	if (nh < 0)
		goto done;
	P = n / nh;
	rc = TS_EINPUT;
	if (nh < 2 || P < 2 || P * nh != n)
		goto done; /* (sim_coll_check refuses these) */
	for (h = 0; h < nh; h++)
		if (off[h + 1] - off[h] != P)
			goto done;
	for (j = 0; j < n; j++) {
		int32_t pp[2];
		if (nvlink_ports(t, sorted[j], pp, 2) != 1)
			goto done;
		port[j] = pp[0];
	}
	rc = TS_ENOMEM;
	/* the trees' heap orders of the hosts: 0, 1, ..., nh - 1 and 0, nh -
	 * 1, ..., 1 (the second's leaves are the first's inner nodes) */
	for (tr = 0; tr < 2; tr++) {
		at[tr] = malloc((size_t)nh * sizeof(int32_t));
		if (!at[tr])
			goto done;
		for (pos = 0; pos < nh; pos++)
			at[tr][pos] = tr == 0 || pos == 0 ? pos : nh - pos;
	}
	/* each tree carries half of each shard; the budget's transfers a
	 * chunk: both trees' units, each some 6 ppn + 2 transfers a node */
	B = s->size_bytes / (2.0 * P);
	xfers = 2.0 * ((double)nh * (6.0 * P + 2) + 2.0 * P);
	{
		double am = (double)NVLS_TREE_ANALYTIC_XFERS / xfers;
		K = planned_chunks_in(s, B, NVLS_CHUNK_BYTES, xfers, NVLS_TREE_MIN_CHUNKS,
				      am >= 64 ? 64 : am >= 1 ? (int32_t)am : 1, c->for_net, &cs, d);
	}
	jt = malloc((size_t)P * sizeof(int32_t));
	upid = malloc((size_t)2 * (size_t)n * (size_t)K * sizeof(int32_t));
	dnid = malloc((size_t)2 * (size_t)n * (size_t)K * sizeof(int32_t));
	if (!jt || !upid || !dnid)
		goto done;
	for (j = 0; j < n; j++)
		ru[j] = rd[j] = mu[j] = md[j] = -1;
#define NT_ID(a, tr_, j_, pos_, k_) (a)[(((size_t)(tr_) * (size_t)P + (size_t)(j_)) * (size_t)nh + \
					(size_t)(pos_)) * (size_t)K + (size_t)(k_)]
	for (u = 0; u < 2 * K; u++) {
		double ub;
		k = u / 2;
		tr = u % 2;
		ub = chunk_bytes(B, K, cs, k);
		/* into the switch and the node's sum of each shard back */
		for (h = 0; h < nh; h++)
			if (switch_legs(d, t, sorted + off[h], port + off[h], P, P * ub / eff, ub / eff,
					u == 0, NULL, ru + off[h], rd + off[h]))
				goto done;
		/* shard j's tree over the nodes' GPUs j: up, children first */
		for (j = 0; j < P; j++) {
			for (pos = nh - 1; pos >= 0; pos--) {
				int32_t q = off[at[tr][pos]] + j, id, ch;
				if (pos == 0) {
					id = jt[j] = dag_add(d, sorted[q], sorted[q], -1, 0, false, 0);
				} else {
					int32_t pq = off[at[tr][(pos - 1) / 2]] + j;
					id = dag_add(d, sorted[q], sorted[pq], -1, ub, k == 0,
						     rng_hash2(s->hash ^ (0x1111u + 0x1111u * (uint64_t)tr),
							       (uint64_t)j << 32 | (uint64_t)pos));
					if (id < 0)
						goto done;
					NT_ID(upid, tr, j, pos, k) = id;
					if ((k > 0 && dag_order(d, NT_ID(upid, tr, j, pos, k - 1), id)) ||
					    (k >= RING_SLOTS &&
					     dag_window(d, NT_ID(upid, tr, j, pos, k - RING_SLOTS), id)))
						goto done;
				}
				if (id < 0 || dag_dep(d, rd[q], id))
					goto done;
				for (ch = 2 * pos + 1; ch <= 2 * pos + 2 && ch < nh; ch++)
					if (dag_dep(d, NT_ID(upid, tr, j, ch, k), id))
						goto done;
			}
			post[off[at[tr][0]] + j] = jt[j];
			/* down, parents first */
			for (pos = 1; pos < nh; pos++) {
				int32_t q = off[at[tr][pos]] + j, pa = (pos - 1) / 2;
				int32_t id = dag_add(d, sorted[off[at[tr][pa]] + j], sorted[q], -1, ub, k == 0,
						     rng_hash2(s->hash ^ (0x5bd1e995u + 0x1111u * (uint64_t)tr),
							       (uint64_t)j << 32 | (uint64_t)pos));
				if (id < 0 || dag_dep(d, pa == 0 ? jt[j] : NT_ID(dnid, tr, j, pa, k), id))
					goto done;
				NT_ID(dnid, tr, j, pos, k) = id;
				if ((k > 0 && dag_order(d, NT_ID(dnid, tr, j, pos, k - 1), id)) ||
				    (k >= RING_SLOTS && dag_window(d, NT_ID(dnid, tr, j, pos, k - RING_SLOTS), id)))
					goto done;
				post[q] = id;
			}
		}
		/* back into the switch and multicast to every GPU */
		for (h = 0; h < nh; h++)
			if (switch_legs(d, t, sorted + off[h], port + off[h], P, ub / eff, P * ub / eff,
					false, post + off[h], mu + off[h], md + off[h]))
				goto done;
	}
#undef NT_ID
	rc = 0;
done:
	free(sorted);
	free(off);
	free(port);
	free(ru);
	free(rd);
	free(mu);
	free(md);
	free(post);
	free(jt);
	free(upid);
	free(dnid);
	free(at[0]);
	free(at[1]);
	return rc;
}

static int build_plan(struct sim_coll *c)
{
	const struct sim_coll_spec *s = &c->s;
	int32_t n = s->nranks, i, j, nch;
	double S = s->size_bytes;
	struct dag *d;
	int rc = 0;
	uint64_t hh = s->hash;
	c->nph = 1;
	d = &c->ph[0].dag;
	if (n == 1)
		return 0; /* nothing moves */
	switch (s->algo) {
	case SIM_ALGO_RING:
		nch = s->channels > 0 ? s->channels : auto_channels(c->t, c->gpus, n);
		if (s->op == SIM_OP_ALLREDUCE)
			return build_rings(c, &c->ph[0], c->gpus, n, nch, 2 * (n - 1), S / n, 1);
		if (s->op == SIM_OP_REDUCESCATTER || s->op == SIM_OP_ALLGATHER)
			return build_rings(c, &c->ph[0], c->gpus, n, nch, n - 1, S / n, 1);
		{
			/* broadcast/reduce: a pipelined chain from the root along
			 * each channel's ring, S / channels each (NCCL runs them
			 * on all its rings; was one chain, one NIC's bandwidth
			 * across nodes) */
			int32_t *sorted = malloc((size_t)n * sizeof(int32_t));
			int32_t *off = malloc(((size_t)n + 1) * sizeof(int32_t));
			int32_t *ring = malloc((size_t)n * sizeof(int32_t)), *ord = malloc((size_t)n * sizeof(int32_t));
			int32_t nh = -1, rg = c->gpus[s->root];
			if (sorted && off && ring && ord)
				nh = by_host(c->t, c->gpus, n, sorted, off);
			rc = nh < 0 ? TS_ENOMEM : 0;
			for (int32_t ch = 0; ch < nch && !rc; ch++) {
				int32_t k, at = 0;
				ring_order(sorted, off, nh, ch, ring);
				for (k = 0; k < n; k++)
					if (ring[k] == rg)
						at = k;
				for (k = 0; k < n; k++)
					ord[k] = ring[(at + k) % n];
				double cs;
				int32_t chunks = pick_chunks(s, S / nch, n, nch, c->for_net, &cs, d);
				rc = build_chain(c, d, ord, n, s->op == SIM_OP_REDUCE, S / nch, chunks, cs);
			}
			free(sorted);
			free(off);
			free(ring);
			free(ord);
			return rc;
		}
	case SIM_ALGO_TREE: {
		/* double binary tree: two trees each with half the data; the second
		 * over the hosts in reverse order, so one's leaves are the other's
		 * inner nodes (NCCL's double binary tree, nccl.md §1.4 Tree) */
		int32_t *ord = malloc((size_t)n * sizeof(int32_t)), *off = malloc(((size_t)n + 1) * sizeof(int32_t));
		int32_t *rev = malloc((size_t)n * sizeof(int32_t)), nh, h, k;
		bool up = s->op != SIM_OP_BROADCAST, down = s->op != SIM_OP_REDUCE;
		if (!ord || !off || !rev) {
			rc = TS_ENOMEM;
			goto tree_done;
		}
		nh = by_host(c->t, c->gpus, n, ord, off);
		if (nh < 0) {
			rc = TS_ENOMEM;
			goto tree_done;
		}
		/* root's host first */
		{
			int32_t rg = c->gpus[s->root], rh = 0, w = 0;
			for (h = 0; h < nh; h++)
				if (topo_gpu_host(c->t, ord[off[h]]) == topo_gpu_host(c->t, rg))
					rh = h;
			for (h = 0; h < nh; h++) {
				int32_t hs = (rh + h) % nh;
				/* root GPU first inside its host */
				if (h == 0)
					rev[w++] = rg;
				for (k = off[hs]; k < off[hs + 1]; k++)
					if (ord[k] != rg || h != 0)
						rev[w++] = ord[k];
			}
			memcpy(ord, rev, (size_t)n * sizeof(int32_t));
			/* second tree: same root host, other hosts reversed */
			w = 0;
			for (k = 0; k < n && topo_gpu_host(c->t, ord[k]) == topo_gpu_host(c->t, rg); k++)
				rev[w++] = ord[k];
			{
				int32_t end = n;
				while (end > k) {
					int32_t b = end - 1;
					while (b > k && topo_gpu_host(c->t, ord[b - 1]) == topo_gpu_host(c->t, ord[end - 1]))
						b--;
					for (j = b; j < end; j++)
						rev[w++] = ord[j];
					end = b;
				}
			}
		}
		{
			/* channels (all-reduce across nodes): NCCL builds one double
			 * binary tree per channel, each entering and leaving the
			 * nodes through a different local GPU, so every NIC carries
			 * a tree (was one tree pair through the first GPU of each
			 * node: one NIC's bandwidth); a channel's trees rotate each
			 * node's GPUs by the channel */
			int32_t tch = 1, chunks;
			double cs;
			int32_t *oc = malloc((size_t)n * sizeof(int32_t)), *rc2 = malloc((size_t)n * sizeof(int32_t));
			if (!oc || !rc2) {
				free(oc);
				free(rc2);
				rc = TS_ENOMEM;
				goto tree_done;
			}
			if (s->op == SIM_OP_ALLREDUCE && nh > 1)
				tch = s->channels > 0 ? s->channels : auto_channels(c->t, c->gpus, n);
			chunks = pick_tree_chunks(s, S / 2 / tch, n, nh, 2 * tch, (up ? 1 : 0) + (down ? 1 : 0),
						  c->for_net, &cs, d);
			for (int32_t ch = 0; ch < tch && !rc; ch++) {
				rotate_hosts(c->t, ord, oc, n, ch);
				rotate_hosts(c->t, rev, rc2, n, ch);
				rc = build_tree(c, d, oc, n, up, down, S / 2 / tch, chunks, cs,
						0x1111 + 0x10000 * (uint64_t)ch);
				if (!rc)
					rc = build_tree(c, d, rc2, n, up, down, S / 2 / tch, chunks, cs,
							0x2222 + 0x10000 * (uint64_t)ch);
			}
			free(oc);
			free(rc2);
		}
	tree_done:
		free(ord);
		free(off);
		free(rev);
		return rc;
	}
	case SIM_ALGO_RHD: {
		/* recursive halving (reduce-scatter) then doubling (allgather);
		 * Thakur, Rabenseifner & Gropp, IJHPCA 2005, §4 */
		int32_t lg = 0, st, *last = malloc((size_t)n * sizeof(int32_t));
		bool rs = s->op != SIM_OP_ALLGATHER, ag = s->op != SIM_OP_REDUCESCATTER;
		double chunk = S;
		if (!last)
			return TS_ENOMEM;
		d->staged = true; /* each step sends what the previous step received */
		while ((1 << lg) < n)
			lg++;
		for (i = 0; i < n; i++)
			last[i] = -1;
		if (rs)
			for (st = 0; st < lg; st++) {
				int32_t dist = n >> (st + 1), *now = malloc((size_t)n * sizeof(int32_t));
				chunk /= 2;
				if (!now)
					goto rhd_oom;
				for (i = 0; i < n; i++) {
					int32_t p = i ^ dist;
					now[p] = dag_add(d, c->gpus[i], c->gpus[p], -1, chunk, true,
							 rng_hash2(hh, (uint64_t)i << 8 | (uint64_t)st));
					if (now[p] < 0 || dag_dep(d, last[i], now[p])) {
						free(now);
						goto rhd_oom;
					}
				}
				memcpy(last, now, (size_t)n * sizeof(int32_t));
				free(now);
			}
		if (ag) {
			chunk = S / n;
			for (st = 0; st < lg; st++) {
				int32_t dist = 1 << st, *now = malloc((size_t)n * sizeof(int32_t));
				if (!now)
					goto rhd_oom;
				for (i = 0; i < n; i++) {
					int32_t p = i ^ dist;
					now[p] = dag_add(d, c->gpus[i], c->gpus[p], -1, chunk, true,
							 rng_hash2(hh, (uint64_t)i << 8 | (uint64_t)(st + 64)));
					if (now[p] < 0 || dag_dep(d, last[i], now[p])) {
						free(now);
						goto rhd_oom;
					}
				}
				memcpy(last, now, (size_t)n * sizeof(int32_t));
				free(now);
				chunk *= 2;
			}
		}
		free(last);
		return 0;
	rhd_oom:
		free(last);
		return TS_ENOMEM;
	}
	case SIM_ALGO_DIRECT: {
		int32_t r = s->root;
		switch (s->op) {
		case SIM_OP_ALLTOALL:
		case SIM_OP_ALLGATHER:
		case SIM_OP_REDUCESCATTER:
			for (i = 0; i < n; i++)
				for (j = 0; j < n; j++) {
					/* alltoallv: what i sends j scaled by j's (or i's)
					 * weight; a member with nothing to send or receive
					 * (weight 0) has no transfer */
					double w = !c->weights	       ? 1 :
						   s->weight_by_sender ? c->weights[i] :
									 c->weights[j];
					if (i != j && w > 0 &&
					    dag_add(d, c->gpus[i], c->gpus[j], -1, S / n * w, true,
						    rng_hash2(hh, (uint64_t)i << 32 | (uint64_t)j)) < 0)
						return TS_ENOMEM;
				}
			return 0;
		case SIM_OP_ALLREDUCE: {
			/* reduce-scatter then allgather, both pairwise; a join per rank
			 * (its shard is reduced once every send into it arrived) */
			int32_t *join = malloc((size_t)n * sizeof(int32_t)), *rs = malloc((size_t)n * (size_t)n * sizeof(int32_t));
			rc = TS_ENOMEM;
			d->staged = true;
			if (!join || !rs)
				goto direct_done;
			for (i = 0; i < n; i++)
				for (j = 0; j < n; j++)
					if (i != j && (rs[i * n + j] = dag_add(d, c->gpus[i], c->gpus[j], -1, S / n, true,
							      rng_hash2(hh, (uint64_t)i << 32 | (uint64_t)j))) < 0)
						goto direct_done;
			for (j = 0; j < n; j++) {
				join[j] = dag_add(d, c->gpus[j], c->gpus[j], -1, 0, false, 0);
				if (join[j] < 0)
					goto direct_done;
				for (i = 0; i < n; i++)
					if (i != j && dag_dep(d, rs[i * n + j], join[j]))
						goto direct_done;
			}
			for (i = 0; i < n; i++)
				for (j = 0; j < n; j++) {
					int32_t id;
					if (i == j)
						continue;
					id = dag_add(d, c->gpus[i], c->gpus[j], -1, S / n, true,
						     rng_hash2(hh, (uint64_t)i << 32 | (uint64_t)j));
					if (id < 0 || dag_dep(d, join[i], id))
						goto direct_done;
				}
			rc = 0;
		direct_done:
			free(join);
			free(rs);
			return rc;
		}
		case SIM_OP_BROADCAST:
			for (j = 0; j < n; j++)
				if (j != r && dag_add(d, c->gpus[r], c->gpus[j], -1, S, true,
						      rng_hash2(hh, (uint64_t)j)) < 0)
					return TS_ENOMEM;
			return 0;
		case SIM_OP_REDUCE:
			for (j = 0; j < n; j++)
				if (j != r && dag_add(d, c->gpus[j], c->gpus[r], -1, S, true,
						      rng_hash2(hh, (uint64_t)j)) < 0)
					return TS_ENOMEM;
			return 0;
		case SIM_OP_SENDRECV:
			for (i = 0; i < n; i++)
				if (dag_add(d, c->gpus[i], c->gpus[(i + 1) % n], -1, S, true,
					    rng_hash2(hh, (uint64_t)i)) < 0)
					return TS_ENOMEM;
			return 0;
		default:
			return TS_EINPUT;
		}
	}
	case SIM_ALGO_HIER: {
		/* NCCL-style hierarchy: reduce-scatter inside each node, allreduce
		 * of each 1/ppn shard across nodes over the same local GPU (its
		 * rail), allgather inside each node. */
		int32_t *sorted = malloc((size_t)n * sizeof(int32_t)), *off = malloc(((size_t)n + 1) * sizeof(int32_t));
		int32_t *tmp = malloc((size_t)n * sizeof(int32_t)), nh, h, ppn;
		if (!sorted || !off || !tmp) {
			rc = TS_ENOMEM;
			goto hier_done;
		}
		nh = by_host(c->t, c->gpus, n, sorted, off);
		if (nh < 0) {
			rc = TS_ENOMEM;
			goto hier_done;
		}
		ppn = n / nh;
		c->nph = 3;
		for (h = 0; h < nh && !rc; h++) {
			if (ppn > 1) {
				rc = build_rings(c, &c->ph[0], sorted + off[h], ppn, 1, ppn - 1, S / ppn,
						 0x100 + (uint64_t)h);
				if (!rc)
					rc = build_rings(c, &c->ph[2], sorted + off[h], ppn, 1, ppn - 1,
							 S / ppn, 0x300 + (uint64_t)h);
			}
		}
		for (j = 0; j < ppn && !rc; j++) {
			for (h = 0; h < nh; h++)
				tmp[h] = sorted[off[h] + j];
			rc = build_rings(c, &c->ph[1], tmp, nh, 2, 2 * (nh - 1), S / ppn / nh,
					 0x200 + (uint64_t)j);
		}
	hier_done:
		free(sorted);
		free(off);
		free(tmp);
		return rc;
	}
	case SIM_ALGO_PS: {
		/* workers push their gradient shard to each server, servers send
		 * the reduced shard back (Li et al., OSDI 2014); servers are the
		 * first ps_servers ranks of the group */
		int32_t ns = s->ps_servers > 0 ? s->ps_servers : 1, base;
		double shard = S / ns;
		d->staged = true; /* a server sends once every push into it arrived */
		for (j = 0; j < ns; j++)
			for (i = 0; i < n; i++)
				if (i != j && dag_add(d, c->gpus[i], c->gpus[j], -1, shard, true,
						      rng_hash2(hh, (uint64_t)i << 32 | (uint64_t)j)) < 0)
					return TS_ENOMEM;
		base = d->n;
		for (j = 0; j < ns; j++) {
			int32_t join = dag_add(d, c->gpus[j], c->gpus[j], -1, 0, false, 0), k;
			if (join < 0)
				return TS_ENOMEM;
			for (k = 0; k < base; k++)
				if (d->x[k].dst == c->gpus[j] && dag_dep(d, k, join))
					return TS_ENOMEM;
			for (i = 0; i < n; i++) {
				int32_t id;
				if (i == j)
					continue;
				id = dag_add(d, c->gpus[j], c->gpus[i], -1, shard, true,
					     rng_hash2(hh, (uint64_t)j << 32 | (uint64_t)i | 1ull << 63));
				if (id < 0 || dag_dep(d, join, id))
					return TS_ENOMEM;
			}
		}
		return 0;
	}
	case SIM_ALGO_NVLSTREE:
		return build_nvls_tree(c, d);
	case SIM_ALGO_NVLS: {
		/* NVLink SHARP: multimem ld_reduce pulls every rank's copy of each
		 * shard through the switch (S out of each GPU) and multimem st
		 * multicasts the reduced shard (S/n out): S(1+1/n) each way per
		 * GPU, over NCCL's NVLS efficiency (nvls_eff). */
		double eff = nvls_eff(c->t);
		double per = S * (1.0 + 1.0 / n) / eff;
		for (i = 0; i < n; i++) {
			int32_t ports[32];
			int np = nvlink_ports(c->t, c->gpus[i], ports, 32), k;
			double tot = 0;
			if (np == 0)
				return TS_EINPUT;
			for (k = 0; k < np; k++)
				tot += c->t->links[ports[k]].bw_Bps;
			for (k = 0; k < np; k++) {
				double share = per * c->t->links[ports[k]].bw_Bps / tot;
				if (dag_add(d, c->gpus[i], -1, ports[k], share, true, 0) < 0 ||
				    dag_add(d, c->gpus[i], -1, c->t->links[ports[k]].rev, share, true, 0) < 0)
					return TS_ENOMEM;
			}
		}
		return 0;
	}
	default:
		return TS_EINPUT;
	}
}

/* ---- execution ---------------------------------------------------------------- */

static enum sim_hw hop_class(const struct topo *t, int32_t a, int32_t b)
{
	if (b < 0 || topo_gpu_host(t, a) == topo_gpu_host(t, b))
		return t->cl.node.intra == TOPO_INTRA_NVSWITCH ? SIM_HW_NVLINK : SIM_HW_PCI;
	return SIM_HW_NET;
}

static void phase_begin(struct sim_coll *c);

static void finish_phase_item(struct sim_coll *c)
{
	if (--c->ph[c->cur].pending > 0)
		return;
	c->cur++;
	phase_begin(c);
}

static void join_part_done(void *ctx, uint64_t arg)
{
	struct sim_coll *c = ctx;
	struct join *j = &c->joins[arg];
	sim_xfer_done cb;
	void *cctx;
	uint64_t carg;
	if (--j->left > 0)
		return;
	cb = j->cb;
	cctx = j->ctx;
	carg = j->arg;
	j->left = c->join_free;
	c->join_free = (int32_t)arg;
	cb(cctx, carg);
}

/* A part is off the sender; the last calls the transfer's lcb (which may
 * start transfers, so no join pointer is held across the call). */
static void join_part_left(void *ctx, uint64_t arg)
{
	struct sim_coll *c = ctx;
	struct join *j = &c->joins[arg];
	if (--j->unsent > 0 || !j->lcb)
		return;
	j->lcb(j->ctx, j->arg);
}

/* A join of parts transfers that calls cb(ctx, arg) when the last is done
 * (and lcb, where not NULL, when the last is off the sender); returns its
 * id for join_part_done, or TS_ENOMEM. */
static int32_t join_new(struct sim_coll *c, int32_t parts, sim_xfer_done cb, sim_xfer_done lcb,
			void *ctx, uint64_t arg)
{
	int32_t jid;
	if (c->join_free >= 0) {
		jid = c->join_free;
		c->join_free = c->joins[jid].left;
	} else {
		if (c->njoins == c->capjoins) {
			int32_t nc = c->capjoins ? c->capjoins * 2 : 64;
			struct join *nj = realloc(c->joins, (size_t)nc * sizeof(*nj));
			if (!nj)
				return TS_ENOMEM;
			c->joins = nj;
			c->capjoins = nc;
		}
		jid = c->njoins++;
	}
	c->joins[jid].left = parts;
	c->joins[jid].unsent = parts;
	c->joins[jid].cb = cb;
	c->joins[jid].lcb = lcb;
	c->joins[jid].ctx = ctx;
	c->joins[jid].arg = arg;
	return jid;
}

/* The paths of a transfer of c from GPU a to GPU b, and the k-th of np:
 * point-to-point sends take PXN's (sim_p2p_route). */
static int64_t coll_paths(const struct sim_coll *c, int32_t a, int32_t b, bool spray)
{
	return c->p2p ? sim_p2p_paths(c->t, a, b, spray) : sim_spray_paths(c->t, a, b, spray);
}

static int coll_route(const struct sim_coll *c, int32_t a, int32_t b, uint64_t hash, int64_t np,
		      int64_t k, int32_t *path)
{
	return c->p2p ? sim_p2p_route(c->t, a, b, hash, np, k, path) :
			sim_spray_route(c->t, a, b, hash, np, k, path);
}

/* Send bytes from GPU a to GPU b: one ECMP path chosen by hash, or, when
 * the network sprays (adaptive routing), equal parts over up to
 * SIM_SPRAY_MAX_PATHS of the equal-cost paths (evenly strided): one spread
 * flow at flow level, a part per path at packet level. path/hops give a
 * precomputed ECMP route (may be NULL). */
static int coll_send(struct sim_coll *c, int32_t a, int32_t b, uint64_t hash,
		     const int32_t *path, int hops, double bytes, simtime_ps alpha,
		     sim_xfer_done cb, void *ctx, uint64_t arg)
{
	int32_t p[TOPO_MAX_HOPS];
	int64_t np = b >= 0 ? coll_paths(c, a, b, c->net->par.spray) : 1, k;
	int32_t jid;
	sim_xfer_done lcb;
	int rc = 0;
	if (np <= 1) {
		if (!path) {
			hops = b < 0 || a == b ? 0 : coll_route(c, a, b, hash, 1, 0, p);
			if (hops < 0)
				return hops;
			path = p;
		}
		return sim_net_send(c->net, path, hops, bytes, alpha, cb, ctx, arg);
	}
	if (c->net->kind == SIM_FLOW) /* one flow over all np paths */
		return sim_send_sprayed(c->net, c->t, a, b, hash, np, c->p2p, bytes, alpha, cb, ctx, arg);
	lcb = c->net->on_left;
	jid = join_new(c, (int32_t)np, cb, lcb, ctx, arg);
	if (jid < 0)
		return jid;
	c->net->on_left = lcb ? join_part_left : NULL;
	for (k = 0; k < np && !rc; k++) {
		int h = coll_route(c, a, b, hash, np, k, p);
		/* packet level: a part per path */
		rc = h < 0 ? h :
			     sim_net_send(c->net, p, h, bytes / (double)np, alpha, join_part_done, c,
					  (uint64_t)jid);
	}
	c->net->on_left = lcb;
	return rc;
}

static void ring_try(struct ring *r, int32_t i);

/* The latency of path p (h links), ps. */
static simtime_ps path_lat_ps(const struct topo *t, const int32_t *p, int h)
{
	simtime_ps l = 0;
	for (int k = 0; k < h; k++)
		l += t->links[p[k]].lat_ps;
	return l;
}

/* The chunk of position i is usable at the next rank: alpha after it
 * arrived (software latency as a pipeline delay: the link is free again
 * during it, so a connection's next chunk can already be on the wire). */
static void ring_recv_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	int32_t i = (int32_t)arg, nx = (int32_t)((arg + 1) % (uint64_t)r->m);
	r->recvd[nx]++;
	r->c->bytes += r->step_bytes;
	/* the receiver consumes the chunk (assumption: at once) and hands its
	 * slot back: the sender learns of it one path latency later (chunks
	 * arrive in order on a connection, so the credits do too) */
	TS_ASSERT(r->cr_n[i] < RING_SLOTS);
	r->cr[(size_t)i * RING_SLOTS + (r->cr_head[i] + r->cr_n[i]) % RING_SLOTS] = e->now + r->plat[i];
	r->cr_n[i]++;
	ring_try(r, nx);
	ring_try(r, i);
	finish_phase_item(r->c);
}

/* A slot's credit has arrived at position arg's sender. */
static void ring_credit_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	(void)e;
	r->cr_armed[arg] = false;
	ring_try(r, (int32_t)arg);
}

/* Position i's send is off the sender: its connection's next may go. */
static void ring_left_cb(void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	int32_t i = (int32_t)arg;
	r->busy[i] = false;
	ring_try(r, i);
}

static void ring_done_cb(void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	if (r->alpha[arg] > 0) {
		if (!sim_after(r->c->net->eng, r->alpha[arg], ring_recv_ev, r, arg) && !r->c->err)
			r->c->err = TS_ENOMEM;
	} else {
		ring_recv_ev(r->c->net->eng, r, arg);
	}
}

static void ring_try(struct ring *r, int32_t i)
{
	struct sim_coll *c = r->c;
	/* one send at a time per connection (FIFO, like one QP: the next
	 * goes once the last byte of this one has left, ring_left_cb), into
	 * a free slot of the receiver's (RING_SLOTS), and only data that has
	 * arrived can be sent on */
	simtime_ps now = c->net->eng->now;
	simtime_ps *cq = r->cr + (size_t)i * RING_SLOTS;
	while (r->cr_n[i] > 0 && cq[r->cr_head[i]] <= now) {
		r->cr_head[i] = (int8_t)((r->cr_head[i] + 1) % RING_SLOTS);
		r->cr_n[i]--;
		r->freed[i]++;
	}
	if (r->busy[i] || r->sent[i] >= r->nsteps || (r->sent[i] > 0 && r->recvd[i] < r->sent[i]))
		return;
	if (r->sent[i] - r->freed[i] >= RING_SLOTS) {
		/* every slot taken: wait for the first credit on its way */
		if (r->cr_n[i] > 0 && !r->cr_armed[i]) {
			r->cr_armed[i] = true;
			if (!sim_at(c->net->eng, cq[r->cr_head[i]], ring_credit_ev, r, (uint64_t)i) && !c->err)
				c->err = TS_ENOMEM;
		}
		return;
	}
	{
		sim_xfer_done keep = c->net->on_left;
		int rc;
		r->sent[i]++;
		r->busy[i] = true;
		c->net->on_left = ring_left_cb;
		rc = coll_send(c, r->gpu[i], r->gpu[(i + 1) % r->m], rng_hash2(r->hash, (uint64_t)i),
			       r->path + (size_t)i * TOPO_MAX_HOPS, r->hops[i],
			       r->step_bytes * c->wire_factor, 0, ring_done_cb, r, (uint64_t)i);
		c->net->on_left = keep;
		if (rc && !c->err)
			c->err = rc;
	}
}

static void ring_coupled_end_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	r->c->bytes += (double)r->m * r->nsteps * r->step_bytes;
	finish_phase_item(r->c);
}

/* Edge i's chunk time over the slowest edges' (x), at sigma: the share of
 * the time the other flows on its bottleneck link move data. Probed
 * (ring_probe_ev), its chunk gets what they leave of the link, no more
 * than its path's capacity; otherwise the capacity ratio. An edge that
 * was a bottleneck of the ring's flow at the probe stays one: its link's
 * other flows took their max-min shares beside it all along (ECMP
 * collisions with other rings), and its chunks set x. */
static double edge_xfac(const struct ring *r, int32_t i, double sigma)
{
	double avail, cap, f;
	if (!(r->prate > 0) || !(r->bcap[i] > 0) || !(r->xfac[i] > 0))
		return r->xfac[i];
	cap = r->cmin / r->xfac[i];
	avail = r->bcap[i] - r->both[i];
	if (r->prate >= (1.0 - 1e-6) * (cap < avail ? cap : avail))
		return 1.0; /* a bottleneck at the probe */
	avail = r->bcap[i] - r->both[i] * sigma;
	if (cap < avail)
		avail = cap;
	f = avail > r->prate ? r->prate / avail : 1.0;
	return f >= 1.0 - 1e-6 ? 1.0 : f;
}

/* The ring's time at mean step transfer time x (ps) and sigma
 * (edge_xfac): the longest chain of nsteps waits (ring_coupled_done). */
static double ring_chain_ps(const struct ring *r, double x, double sigma)
{
	double lap = 0, win = 0, best, self = 0, tot;
	int32_t i, q = r->nsteps / r->m, rem = r->nsteps % r->m;
	for (i = 0; i < r->m; i++) {
		double f = edge_xfac(r, i, sigma), v = x * f + (double)r->elat[i];
		lap += v;
		if (i < rem)
			win += v;
		if (f >= 1.0) {
			/* one send after another on the edge (x + m each), and
			 * send k + RING_SLOTS after send k's slot came back (rt:
			 * it left, arrived, was usable, and the credit came back
			 * one path latency later); the last one's latency after */
			double m = (double)r->emsg[i], e = (double)r->elat[i];
			double rt = x + e + (e - (double)r->alpha[i] - m);
			int32_t j = (r->nsteps - 1) / RING_SLOTS;
			double st = (r->nsteps - 1) * (x + m);
			if (j * rt + (r->nsteps - 1 - j * RING_SLOTS) * (x + m) > st)
				st = j * rt + (r->nsteps - 1 - j * RING_SLOTS) * (x + m);
			st += x + e;
			if (st > self)
				self = st;
		}
	}
	best = win;
	for (i = 1; i < r->m && rem > 0; i++) {
		int32_t in = (i + rem - 1) % r->m;
		win += x * edge_xfac(r, in, sigma) + (double)r->elat[in] -
		       x * edge_xfac(r, i - 1, sigma) - (double)r->elat[i - 1];
		if (win > best)
			best = win;
	}
	tot = q * lap + best;
	return self > tot ? self : tot;
}

/* The coupled flows have moved the per-edge volume. Their wire time W
 * gives the ring's mean step transfer time x = W/nsteps on its slowest
 * edges (xfac 1); a faster edge moves a chunk in x·xfac. Step by step,
 * each step waits for the latest of (a) the same edge's previous send
 * leaving (x + message cost: its latency and alpha overlap the next chunk
 * on the wire) and (b) the chunk from the previous rank (its transfer + path
 * latency + alpha): the ring takes the longest chain of nsteps such
 * waits, which is (a) repeated on one slowest edge or (b) along a chunk's
 * journey (the maximum cycle mean of the step recurrence). On a uniform
 * ring this is nsteps·(x + latency + alpha), the closed form.
 *
 * A fast edge's chunk time depends on how busy its link's other flows
 * are; those are, most often, the ring's sibling channels (eight channels
 * of a ring over 8-GPU nodes share each GPU's NVLink port seven ways),
 * which move a chunk once a step, so they load the link a share sigma =
 * W/T of the time, T the ring's time, which in turn grows with the fast
 * edges' chunk times. sigma is that fixed point (bisection: T(sigma) does
 * not fall as sigma grows). Taking the siblings as always on (sigma 1)
 * put a 512-rank ring over 64 DGX H100 nodes at 9.11 ms against 7.47 ms
 * step by step. */
static void ring_coupled_done(void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	struct sim_engine *e = r->c->net->eng;
	simtime_ps w = sim_now(e) - r->cstart_ps - r->cprop_ps;
	double x = (double)(w > 0 ? w : 0) / r->nsteps, tot = ring_chain_ps(r, x, 1.0);
	bool shared = false;
	/* the network counted each flow once; it carried that volume on
	 * every one of the m edges */
	r->c->net->st.bytes_delivered += (double)(r->m - 1) * r->nsteps * r->step_bytes * r->c->wire_factor;
	for (int32_t i = 0; i < r->m && !shared && r->prate > 0; i++)
		shared = r->bcap[i] > 0 && r->both[i] > 0 && edge_xfac(r, i, 1.0) < 1.0;
	if (shared && x > 0 && tot > 0) {
		double lo = 0, hi = 1;
		for (int it = 0; it < 50 && hi - lo > 1e-9; it++) {
			double mid = 0.5 * (lo + hi);
			if (mid * ring_chain_ps(r, x, mid) < (double)w)
				lo = mid;
			else
				hi = mid;
		}
		tot = ring_chain_ps(r, x, hi);
	}
	if (r->cstart_ps + (simtime_ps)tot > sim_now(e)) {
		if (!sim_at(e, r->cstart_ps + (simtime_ps)tot, ring_coupled_end_ev, r, 0) && !r->c->err)
			r->c->err = TS_ENOMEM;
		return;
	}
	ring_coupled_end_ev(e, r, 0);
}

/* Right after the coupled flow got its first rate r: an edge with spare
 * capacity h along its path would move its chunks at up to r + h, so its
 * step transfer time is x·r/(r + h) (ECMP collisions slow only some edges
 * of a ring); its bottleneck link's capacity and the other flows' load
 * there are kept for ring_coupled_done's sigma. A snapshot at the start:
 * later changes of other traffic only move the ring's mean rate. A
 * sprayed edge (several paths) is probed on its hashed path, one of its
 * equal-cost paths: its bottleneck is most often the NIC's link, which all
 * its paths share (found by review: left at the capacity ratios, every
 * sprayed edge between nodes counted as a slowest one, +10.7 % against
 * step by step on 2 x 128 ranks placed at random over 32 DGX A100 nodes at
 * 16 MiB). */
static void ring_probe_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct ring *r = ctx;
	double rate = r->cflow >= 0 ? simf_rate_Bps(r->c->net, r->cflow) : 0;
	int32_t i;
	if (!(rate > 0))
		return; /* keep the capacity ratios */
	r->prate = rate;
	for (i = 0; i < r->m; i++) {
		double cap, load;
		simf_bottleneck(r->c->net, r->path + (size_t)i * TOPO_MAX_HOPS, r->hops[i], &cap, &load);
		r->bcap[i] = cap;
		r->both[i] = load > rate ? load - rate : 0;
	}
}

/* Start ring r coupled (sim.h "Coupled rings"): one flow over every edge
 * of the ring. With ECMP each edge is its connection's hashed path (as step
 * by step); with spray it is a spread flow (sim_net_send_paths) over K
 * samples of the ring, K the largest number of equal-cost paths sampled on
 * an edge (up to SIM_SPRAY_MAX_PATHS): sample k takes, on an edge with np_e
 * sampled paths, path k·np_e/K of that edge's sample (coll_send's strided
 * sample; an even split when np_e divides K, as on fat-trees), and carries
 * 1/K of the per-edge volume. Paths come from ring_start. The latencies are
 * added when the flow is done (ring_coupled_done). */
static int ring_start_coupled(struct sim_coll *c, struct ring *r)
{
	const struct topo *t = c->t;
	struct sim_net *net = c->net;
	simtime_ps msg_ps = 0;
	int32_t *np = malloc((size_t)r->m * sizeof(int32_t)), *path = NULL, i, j, k, K = 1;
	int64_t tot = 0;
	double bytes = (double)r->nsteps * r->step_bytes * c->wire_factor, cmin = INFINITY;
	int rc = TS_ENOMEM;
	r->elat = malloc((size_t)r->m * sizeof(simtime_ps));
	r->emsg = malloc((size_t)r->m * sizeof(simtime_ps));
	r->xfac = malloc((size_t)r->m * sizeof(double));
	r->bcap = calloc((size_t)r->m, sizeof(double));
	r->both = calloc((size_t)r->m, sizeof(double));
	r->prate = 0;
	if (!np || !r->elat || !r->emsg || !r->xfac || !r->bcap || !r->both)
		goto fail;
	for (i = 0; i < r->m; i++) {
		const int32_t *p = r->path + (size_t)i * TOPO_MAX_HOPS;
		simtime_ps pl = 0;
		double cap = INFINITY;
		/* per message and per byte host costs, as sim_net_send and the flow
		 * model charge them */
		msg_ps = simn_tcp_path(net, p, r->hops[i]) ? time_from_s(net->par.tcp_msg_s) : 0;
		if (msg_ps > 0 && net->par.tcp_byte_s > 0)
			cap = 1.0 / net->par.tcp_byte_s;
		for (j = 0; j < r->hops[i]; j++) {
			const struct sim_link *l = &net->links[p[j]];
			pl += l->lat_ps;
			if (l->bw_Bps * simn_payload_eff(l) < cap)
				cap = l->bw_Bps * simn_payload_eff(l);
		}
		r->elat[i] = pl + r->alpha[i] + msg_ps;
		r->emsg[i] = msg_ps;
		r->xfac[i] = cap; /* capacity for now, a ratio below */
		if (cap < cmin)
			cmin = cap;
		tot += r->hops[i];
		np[i] = (int32_t)sim_spray_paths(t, r->gpu[i], r->gpu[(i + 1) % r->m], net->par.spray);
		if (np[i] > K)
			K = np[i];
	}
	r->cmin = cmin;
	for (i = 0; i < r->m; i++)
		r->xfac[i] = r->xfac[i] <= cmin * (1 + 1e-9) ? 1.0 : cmin / r->xfac[i];
	r->cstart_ps = sim_now(net->eng);
	r->cprop_ps = 0;
	/* spray: the K samples one after another, one spread flow over them */
	path = malloc((size_t)tot * (size_t)K * sizeof(int32_t));
	if (!path)
		goto fail;
	{
		int32_t w = 0;
		for (k = 0; k < K; k++) {
			for (i = 0; i < r->m; i++) {
				int32_t a = r->gpu[i], b = r->gpu[(i + 1) % r->m], pk[TOPO_MAX_HOPS];
				const int32_t *p = r->path + (size_t)i * TOPO_MAX_HOPS;
				int h = r->hops[i];
				if (np[i] > 1) {
					/* coll_send's sample, part k*np/K of it */
					h = sim_spray_route(t, a, b, rng_hash2(r->hash, (uint64_t)i), np[i],
							    (int64_t)k * np[i] / K, pk);
					if (h < 0) {
						rc = h;
						goto fail;
					}
					p = pk;
				}
				for (j = 0; j < h; j++)
					path[w++] = p[j];
			}
		}
		if (K > 1)
			rc = simn_send_paths(net, path, w, K, bytes, 0, ring_coupled_done, r, 0,
					     &r->cflow);
		else
			rc = simf_send(net, path, w, bytes, 0, ring_coupled_done, r, 0, &r->cflow);
		if (rc)
			goto fail;
		/* started at once (no delay): its latency is known, and
		 * ring_coupled_done takes it out again (a spread flow's: the
		 * samples' mean) */
		r->cprop_ps = simf_prop_ps(net, r->cflow);
		net->st.bytes_sent += (double)(r->m - 1) * bytes; /* see ring_coupled_done */
		if (!sim_at(net->eng, sim_now(net->eng), ring_probe_ev, r, 0))
			goto fail; /* after the solve queued by the flow's start */
	}
	rc = 0;
fail:
	free(np);
	free(path);
	return rc;
}

static int ring_start(struct sim_coll *c, struct ring *r)
{
	int32_t i;
	r->c = c;
	r->path = malloc((size_t)r->m * TOPO_MAX_HOPS * sizeof(int32_t));
	r->hops = malloc((size_t)r->m);
	r->alpha = malloc((size_t)r->m * sizeof(simtime_ps));
	if (!r->path || !r->hops || !r->alpha)
		return TS_ENOMEM;
	for (i = 0; i < r->m; i++) {
		int32_t a = r->gpu[i], b = r->gpu[(i + 1) % r->m];
		int h = topo_route(c->t, a, b, rng_hash2(r->hash, (uint64_t)i), r->path + (size_t)i * TOPO_MAX_HOPS);
		if (h < 0)
			return h;
		r->hops[i] = (int8_t)h;
		r->alpha[i] = c->a_ps[hop_class(c->t, a, b)];
	}
	if (r->coupled)
		return ring_start_coupled(c, r);
	/* step by step: each position's sends, receives and slots */
	r->sent = calloc((size_t)r->m, sizeof(int32_t));
	r->recvd = calloc((size_t)r->m, sizeof(int32_t));
	r->busy = calloc((size_t)r->m, sizeof(bool));
	r->freed = calloc((size_t)r->m, sizeof(int32_t));
	r->cr = malloc((size_t)r->m * RING_SLOTS * sizeof(simtime_ps));
	r->cr_head = calloc((size_t)r->m, 1);
	r->cr_n = calloc((size_t)r->m, 1);
	r->cr_armed = calloc((size_t)r->m, sizeof(bool));
	r->plat = malloc((size_t)r->m * sizeof(simtime_ps));
	if (!r->sent || !r->recvd || !r->busy || !r->freed || !r->cr || !r->cr_head || !r->cr_n ||
	    !r->cr_armed || !r->plat)
		return TS_ENOMEM;
	for (i = 0; i < r->m; i++)
		r->plat[i] = path_lat_ps(c->t, r->path + (size_t)i * TOPO_MAX_HOPS, r->hops[i]);
	for (i = 0; i < r->m; i++)
		ring_try(r, i);
	return c->err;
}

static int xfer_send(struct sim_coll *c, struct dag *d, int32_t id);

/* One of transfer s's predecessors is done: send it once none is left. */
static void dag_ready(struct dag *d, int32_t s)
{
	if (--d->x[s].ndeps == 0) {
		int rc = xfer_send(d->c, d, s);
		if (rc && !d->c->err)
			d->c->err = rc;
	}
}

/* A transfer's last byte has left: its connection's next may go. */
static void dag_left_cb(void *ctx, uint64_t arg)
{
	struct dag *d = ctx;
	dag_ready(d, d->x[(int32_t)arg].onext);
}

/* A slot's credit is back at the sender: the transfer it waited for. */
static void dag_credit_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	dag_ready(ctx, (int32_t)arg);
}

/* Transfer x's route (its ECMP one) into p: its hops, 0 for a single link
 * or a join. */
static int xfer_route(const struct sim_coll *c, const struct xfer *x, int32_t *p)
{
	int h = x->dst < 0 || x->src == x->dst ? 0 : coll_route(c, x->src, x->dst, x->hash, 1, 0, p);
	return h > 0 ? h : 0;
}

/* The path latency of transfer x's route, ps. */
static simtime_ps xfer_plat_ps(const struct sim_coll *c, const struct xfer *x)
{
	int32_t p[TOPO_MAX_HOPS];
	return path_lat_ps(c->t, p, xfer_route(c, x, p));
}

static void dag_done_cb(void *ctx, uint64_t arg)
{
	struct dag *d = ctx;
	struct sim_coll *c = d->c;
	int32_t id = (int32_t)arg, k;
	c->bytes += d->x[id].bytes;
	if (d->x[id].wnext >= 0 &&
	    !sim_after(c->net->eng, xfer_plat_ps(c, &d->x[id]), dag_credit_ev, d,
		       (uint64_t)d->x[id].wnext) &&
	    !c->err)
		c->err = TS_ENOMEM;
	for (k = d->soff[id]; k < d->soff[id + 1]; k++)
		dag_ready(d, d->succ[k]);
	finish_phase_item(c);
}

static int xfer_send(struct sim_coll *c, struct dag *d, int32_t id)
{
	const struct xfer *x = &d->x[id];
	int32_t path[TOPO_MAX_HOPS];
	int h, rc;
	simtime_ps a = x->pay_alpha ? c->a_ps[hop_class(c->t, x->src, x->dst)] : 0;
	sim_xfer_done keep = c->net->on_left;
	c->net->on_left = x->onext >= 0 ? dag_left_cb : NULL;
	if (x->dst < 0) {
		path[0] = x->link;
		h = 1;
	} else if (x->src == x->dst) {
		h = 0; /* a join: completes at once */
	} else {
		/* an all-to-all's flows are independent: their ends may be
		 * coalesced (sim.h, SIM_FLOW_COALESCE) */
		c->net->coalesce_sends = c->s.op == SIM_OP_ALLTOALL;
		rc = coll_send(c, x->src, x->dst, x->hash, NULL, 0, x->bytes * c->wire_factor, a,
			       dag_done_cb, d, (uint64_t)id);
		c->net->coalesce_sends = false;
		c->net->on_left = keep;
		return rc;
	}
	rc = sim_net_send(c->net, path, h, x->bytes * c->wire_factor, a, dag_done_cb, d,
			  (uint64_t)id);
	c->net->on_left = keep;
	return rc;
}

static void floor_ev(struct sim_engine *e, void *ctx, uint64_t arg);

static void coll_finish(struct sim_coll *c)
{
	simtime_ps now = sim_now(c->net->eng);
	if (!c->floor_wait && c->floor_ps > 0 && now < c->t0 + c->floor_ps) {
		/* LL's cap, NCCL's tree: done no earlier than the floor */
		c->floor_wait = true;
		if (!sim_at(c->net->eng, c->t0 + c->floor_ps, floor_ev, c, 0))
			c->err = TS_ENOMEM;
		else
			return;
	}
	c->t1 = now;
	if (c->done)
		c->done(c->ctx, c);
}

static void floor_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	(void)arg;
	coll_finish(ctx);
}

static void phase_begin(struct sim_coll *c)
{
	struct phase *ph;
	int32_t i;
	int rc = 0;
	while (c->cur < c->nph) {
		ph = &c->ph[c->cur];
		ph->pending = ph->dag.n;
		for (i = 0; i < ph->nrings; i++) {
			struct ring *r = &ph->rings[i];
			r->coupled = c->net->kind == SIM_FLOW && r->m > c->net->par.ring_coupled_above;
			ph->pending += r->coupled ? 1 : (int64_t)r->m * r->nsteps;
		}
		if (ph->pending > 0)
			break;
		c->cur++;
	}
	if (c->cur >= c->nph) {
		coll_finish(c);
		return;
	}
	ph = &c->ph[c->cur];
	for (i = 0; i < ph->nrings && !rc; i++)
		rc = ring_start(c, &ph->rings[i]);
	ph->dag.c = c;
	for (i = 0; i < ph->dag.n && !rc; i++)
		if (ph->dag.x[i].ndeps == 0)
			rc = xfer_send(c, &ph->dag, i);
	if (rc && !c->err)
		c->err = rc;
	/* a failure inside an event (out of memory) stops the run; the caller
	 * reads it with sim_coll_error (found by review: it aborted) */
	if (c->err)
		sim_stop(c->net->eng);
}

static void begin_ev(struct sim_engine *e, void *ctx, uint64_t arg)
{
	phase_begin(ctx);
}

/* NCCL's latency of a tree all-reduce with protocol p on the group
 * (nccl.md §1.4), us. */
static double nccl_tree_lat_us(const struct sim_group_info *gi, enum sim_proto p)
{
	double intra = sim_nccl_hw_lat_us(gi->intra, SIM_ALGO_TREE, p);
	double inter = sim_nccl_hw_lat_us(SIM_HW_NET, SIM_ALGO_TREE, p);
	return sim_nccl_base_lat_us(SIM_ALGO_TREE, p) +
	       2 * ((gi->ppn - 1) * intra + log2(gi->nnodes) * inter);
}

/* NCCL's tree time from the ring's bandwidth time ring_bw_s over the
 * group: the tree's latency plus that time x n/(n-1) over protocol p's
 * factor (NCCL's algorithm bandwidth: the tree's busBw x 0.5, the ring's
 * busBw x n / (2(n-1)), tuning.cc's ratio; nccl.md §1.4-1.5). */
static double tree_over_ring_s(const struct sim_group_info *gi, const struct sim_coll_spec *s,
			       double ring_bw_s, enum sim_proto p)
{
	double n = s->nranks;
	double f = p == SIM_PROTO_LL ? 3.8 : p == SIM_PROTO_LL128 ? 128.0 / 120 : 1 / 0.92;
	return nccl_tree_lat_us(gi, p) * 1e-6 +
	       (ring_bw_s > 0 ? ring_bw_s : 0) * f * n / (n - 1);
}

static double path_lat_s(const struct topo *t, const int32_t *p, int h);

/* The links' own latency a planned tree adds to NCCL's hop latencies,
 * along nccl_tree_lat_us's chain: up and down, ppn - 1 hops inside a host
 * and log2(nodes) across, each the path from the group's first rank to
 * another on its host or on another host (found by review: trees over 64
 * ranks, priced without it, came out 7 us faster at 9 nodes than planned
 * at 8, and below the flow level's). */
/* The route (into p, its hop count returned; 0: none) from the group's
 * first rank to its first other rank on the same host (away false) or on
 * another host (away true). */
static int first_route(const struct topo *t, const struct sim_coll_spec *s, bool away, int32_t *p)
{
	int32_t g0 = t->rank_gpu[s->ranks[0]];
	for (int32_t i = 1; i < s->nranks; i++) {
		int32_t g = t->rank_gpu[s->ranks[i]];
		if ((topo_gpu_host(t, g) != topo_gpu_host(t, g0)) == away) {
			int h = topo_route(t, g0, g, s->hash, p);
			return h > 0 ? h : 0;
		}
	}
	return 0;
}

static double tree_path_lat_s(const struct topo *t, const struct sim_coll_spec *s,
			      const struct sim_group_info *gi)
{
	int32_t p[TOPO_MAX_HOPS];
	int h = first_route(t, s, false, p);
	double li = h ? path_lat_s(t, p, h) : 0, lo;
	h = first_route(t, s, true, p);
	lo = h ? path_lat_s(t, p, h) : 0;
	return 2 * ((gi->ppn - 1) * li + log2(gi->nnodes) * lo);
}

/* sim_tree_model's time for protocol p (gi: the group's facts): LL's at
 * least its bus bytes at llMaxBw. */
static double tree_model_proto(const struct topo *t, const struct sim_group_info *gi,
			       const struct sim_coll_spec *s, double ring_bw_s, enum sim_proto p)
{
	double tm = tree_over_ring_s(gi, s, ring_bw_s, p) + tree_path_lat_s(t, s, gi);
	if (p == SIM_PROTO_LL) {
		double cap = sim_ll_max_busbw_Bps(t->cl.gpu.sm_arch, gi->nnodes);
		double fl = cap > 0 ? sim_busbw_factor(s->op, s->nranks) * s->size_bytes / cap +
					      sim_nccl_base_lat_us(SIM_ALGO_TREE, p) * 1e-6 :
				      0;
		tm = tm > fl ? tm : fl;
	}
	return tm;
}

int sim_tree_model(const struct topo *t, const struct sim_coll_spec *s, double ring_bw_s,
		   enum sim_proto *proto, double *time_s, struct ts_error *err)
{
	struct sim_group_info gi;
	int rc = sim_group_info(t, s->ranks, s->nranks, &gi, err);
	*time_s = INFINITY;
	*proto = SIM_PROTO_SIMPLE;
	if (rc)
		return rc;
	if (gi.nnodes < 2 || s->op != SIM_OP_ALLREDUCE || s->nranks < 2)
		return 0;
	for (int pi = SIM_PROTO_LL; pi < SIM_PROTO_COUNT; pi++) {
		double tm = tree_model_proto(t, &gi, s, ring_bw_s, (enum sim_proto)pi);
		if (tm < *time_s) {
			*time_s = tm;
			*proto = (enum sim_proto)pi;
		}
	}
	return 0;
}

int sim_nvls_tree_model(const struct topo *t, const struct sim_coll_spec *s, double ring_bw_s,
			double *time_s, struct ts_error *err)
{
	struct sim_group_info gi;
	struct sim_coll_spec c = *s;
	struct ts_error why = TS_ERROR_INIT;
	int32_t p[TOPO_MAX_HOPS], g0, port;
	double bw = ring_bw_s > 0 ? ring_bw_s : 0, lo, nv;
	int rc, h;
	*time_s = INFINITY;
	c.algo = SIM_ALGO_NVLSTREE;
	c.proto = SIM_PROTO_SIMPLE;
	if (s->op != SIM_OP_ALLREDUCE || sim_coll_check(t, &c, &why))
		return 0; /* (not there for this group) */
	if ((rc = sim_group_info(t, s->ranks, s->nranks, &gi, err)))
		return rc;
	g0 = t->rank_gpu[s->ranks[0]];
	if (nvlink_ports(t, g0, &port, 1) != 1)
		return 0;
	nv = s->size_bytes * (1.0 + 1.0 / gi.ppn) / nvls_eff(t) /
	     sim_link_cap_topo(t, port);
	/* a tree hop's links: the path to a GPU of another node */
	h = first_route(t, s, true, p);
	lo = h ? path_lat_s(t, p, h) : 0;
	/* The ring's bandwidth time stands for the NICs' (and the fabric's)
	 * unless the ring is bound by its NVLink hops (each GPU sends 2 S
	 * (n-1)/n, all but one channel's over NVLink): then the NICs' own
	 * time, each carrying 2 S/ppn (S/ppn at two nodes) for the group's
	 * GPUs that share it, at the path's narrowest link (found by review:
	 * 24 GPUs and NICs a node, the ring's NVLink time was taken, 51 %
	 * over the plan's). */
	{
		double n = s->nranks, P = gi.ppn, cap = INFINITY, share = 0;
		double ring_nv = 2 * s->size_bytes * (n - 1) / n * (P - 1) / P / sim_link_cap_topo(t, port);
		if (bw <= ring_nv * (1 + 1e-6) && h > 0) {
			for (int32_t i = 0; i < s->nranks; i++) {
				int32_t g = t->rank_gpu[s->ranks[i]];
				share += topo_gpu_host(t, g) == topo_gpu_host(t, g0) &&
					 t->gpu_nic[g] == t->gpu_nic[g0];
			}
			for (int k = 0; k < h; k++) /* (the tree hop's path above) */
				cap = fmin(cap, sim_link_cap_topo(t, p[k]));
			bw = 2 * s->size_bytes / P * (share > 1 ? share : 1) / cap;
		}
	}
	if (gi.nnodes == 2)
		bw /= 2;
	bw = fmax(bw, nv);
	*time_s = (sim_nccl_hw_lat_us(SIM_HW_NVLINK, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE) +
		   2 * log2(gi.nnodes) * sim_nccl_hw_lat_us(SIM_HW_NET, SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE)) *
			  1e-6 +
		  2 * log2(gi.nnodes) * lo + 4 * path_lat_s(t, &port, 1) + bw;
	return 0;
}

/* Returns 0 or TS_ENOMEM (found by review: an allocation failure left the
 * group at one node, so every ring took the wrong latencies unsaid). */
static int coll_params(struct sim_coll *c)
{
	int k, nnodes = 1;
	double cap;
	struct sim_group_info gi;
	memset(&gi, 0, sizeof(gi));
	if (c->s.proto == SIM_PROTO_LL || c->s.algo == SIM_ALGO_TREE || c->s.algo == SIM_ALGO_RING) {
		/* the group's nodes and ranks per node (sim_group_info's, without
		 * its checks and its cluster-sized tables: the group was checked) */
		int32_t *sorted = malloc((size_t)c->s.nranks * sizeof(int32_t));
		int32_t *off = malloc(((size_t)c->s.nranks + 1) * sizeof(int32_t));
		int32_t nh;
		if (!sorted || !off) {
			free(sorted);
			free(off);
			return TS_ENOMEM;
		}
		nh = by_host(c->t, c->gpus, c->s.nranks, sorted, off);
		for (int32_t h = 0; h < nh; h++)
			if (off[h + 1] - off[h] > gi.ppn)
				gi.ppn = off[h + 1] - off[h];
		if (nh > 0)
			nnodes = nh;
		gi.nranks = c->s.nranks;
		gi.nnodes = nnodes;
		gi.intra = c->t->cl.node.intra == TOPO_INTRA_NVSWITCH ? SIM_HW_NVLINK : SIM_HW_PCI;
		free(sorted);
		free(off);
	}
	c->wire_factor = 1.0 / sim_proto_eff_for(c->s.algo, c->s.proto, nnodes);
	if (c->s.nranks == 1) {
		/* One rank: NCCL runs no algorithm or protocol; out of place it
		 * copies the send buffer into the receive buffer on the GPU
		 * (ncclLaunchOneRank; in place, nothing). Priced as the compute
		 * model's element-wise kernel reading and writing S (the
		 * nccl-tests out-of-place column; `collective`'s in-place column
		 * repeats it, an upper bound; found by review: one rank took
		 * LL's or Simple's base latency at any size, a broadcast with LL
		 * its llMaxBw floor). */
		struct sim_compute cm;
		struct sim_op_desc op = { .cls = SIM_OP_ELEMENTWISE,
					  .bytes = 2 * c->s.size_bytes,
					  .dtype_bytes = 2 };
		sim_compute_init(&cm, &c->t->cl.gpu);
		c->floor_ps = time_from_s(sim_compute_time_s(&cm, &op));
		c->base_ps = 0;
		memset(c->a_ps, 0, sizeof(c->a_ps));
		return 0;
	}
	/* LL's bus bandwidth is capped (NCCL's llMaxBw: the flag polling of
	 * the 8-byte protocol, not the wire, bounds it): the operation takes
	 * at least its bus bytes at the cap */
	cap = c->s.proto == SIM_PROTO_LL ? sim_ll_max_busbw_Bps(c->t->cl.gpu.sm_arch, nnodes) : 0;
	c->floor_ps = cap > 0 ? time_from_s(sim_busbw_factor(c->s.op, c->s.nranks) * c->s.size_bytes /
					    cap) :
				0;
	if (c->floor_ps > 0)
		c->floor_ps += time_from_us(sim_nccl_base_lat_us(c->s.algo, c->s.proto));
	/* A tree across nodes moves half the inter-node bytes of a ring, so
	 * simulated it would beat the ring by up to 2x at 2 nodes; NCCL's own
	 * model gives the tree at most the ring's bus bandwidth x 0.92 (Simple;
	 * x 120/128 LL128, / 3.8 LL: nccl.md §1.5) and the measured A100 set
	 * agrees (its 2-node TP all-reduces run at ring speed): the tree takes
	 * at least NCCL's tree latency plus the ring's bandwidth time over
	 * that factor */
	if (c->s.algo == SIM_ALGO_TREE && c->s.op == SIM_OP_ALLREDUCE && nnodes > 1 &&
	    !c->s.no_latency) {
		struct sim_coll_spec r = c->s;
		struct ts_error e2 = TS_ERROR_INIT;
		double tr, t0;
		r.algo = SIM_ALGO_RING;
		r.proto = SIM_PROTO_SIMPLE;
		/* the ring's nominal time: its loads spread over the equal-cost
		 * paths, as NCCL's model knows no routing (found by review: the
		 * ECMP ring's collisions set a sprayed tree's floor, 12.1 to
		 * 24.0 ms by seed for 1 GiB over 8 nodes of the 2:1 leaf-spine) */
		if (!sim_coll_check(c->t, &r, &e2) &&
		    !sim_coll_analytic_groups(c->t, &r, 1, true, &tr, &e2)) {
			simtime_ps fl;
			/* the ring's bandwidth time: its time less its time for
			 * one byte (the latency, as the simulation has it) */
			r.size_bytes = 1;
			if (sim_coll_analytic_groups(c->t, &r, 1, true, &t0, &e2))
				t0 = 0;
			fl = time_from_s(tree_over_ring_s(&gi, &c->s, tr - t0, c->s.proto));
			if (fl > c->floor_ps)
				c->floor_ps = fl;
		}
	}
	for (k = 0; k < 3; k++)
		c->a_ps[k] = time_from_us(c->s.algo == SIM_ALGO_RING ?
						  sim_nccl_ring_hop_lat_us((enum sim_hw)k, c->s.proto,
									   nnodes, gi.ppn,
									   c->t->cl.node.cpu) :
						  sim_nccl_hw_lat_us((enum sim_hw)k, c->s.algo, c->s.proto));
	c->base_ps = time_from_us(sim_nccl_base_lat_us(c->s.algo, c->s.proto));
	if (c->s.no_latency) { /* (the tree's bound, priced by two ring plans, not taken) */
		memset(c->a_ps, 0, sizeof(c->a_ps));
		c->base_ps = c->floor_ps = 0;
	}
	return 0;
}

/* Why build_plan failed, from its code: a phrase for the error line. */
static const char *plan_fail_why(int rc)
{
	if (rc == TS_ENOMEM)
		return "out of memory";
	if (rc == TS_EINPUT) /* an op the algorithm lacks, or NVLS without NVLink ports */
		return "the algorithm does not apply to this op or these GPUs";
	return "no route";
}

static struct sim_coll *coll_new(const struct topo *t, const struct sim_coll_spec *s, bool for_net,
				 int *rc)
{
	struct sim_coll *c = calloc(1, sizeof(*c));
	int32_t i;
	*rc = TS_ENOMEM;
	if (!c)
		return NULL;
	c->t = t;
	c->s = *s;
	c->for_net = for_net;
	c->p2p = sim_op_p2p(s->op);
	c->ranks = malloc((size_t)s->nranks * sizeof(int32_t));
	c->gpus = malloc((size_t)s->nranks * sizeof(int32_t));
	if (!c->ranks || !c->gpus)
		goto fail;
	memcpy(c->ranks, s->ranks, (size_t)s->nranks * sizeof(int32_t));
	for (i = 0; i < s->nranks; i++)
		c->gpus[i] = t->rank_gpu[s->ranks[i]];
	c->s.ranks = c->ranks;
	if (s->weights) {
		c->weights = malloc((size_t)s->nranks * sizeof(double));
		if (!c->weights)
			goto fail;
		memcpy(c->weights, s->weights, (size_t)s->nranks * sizeof(double));
		c->s.weights = c->weights;
	}
	c->t1 = -1;
	c->join_free = -1;
	*rc = coll_params(c);
	if (*rc)
		goto fail;
	*rc = build_plan(c);
	if (*rc)
		goto fail;
	for (i = 0; i < c->nph; i++) {
		*rc = dag_finalize(&c->ph[i].dag);
		if (*rc)
			goto fail;
	}
	return c;
fail:
	sim_coll_free(c);
	return NULL;
}

int sim_coll_start(struct sim_net *net, const struct topo *t, const struct sim_coll_spec *s,
		   sim_coll_done done, void *ctx, struct sim_coll **out, struct ts_error *err)
{
	struct sim_coll *c;
	struct sim_coll_spec chosen;
	int rc;
	*out = NULL;
	if (s->algo == SIM_ALGO_AUTO || s->proto == SIM_PROTO_AUTO) {
		/* NCCL's choice for what was left open */
		chosen = *s;
		rc = sim_coll_choose(t, &chosen, &chosen.algo, &chosen.proto, err);
		if (rc)
			return rc;
		s = &chosen;
	}
	rc = sim_coll_check(t, s, err);
	if (rc)
		return rc;
	if ((rc = sim_coll_size_check(s, 1, true, err)))
		return rc;
	c = coll_new(t, s, true, &rc);
	if (!c)
		return ts_error_set(err, rc, "cannot build the %s plan for %s (%s)",
				    sim_algo_name(s->algo), sim_op_name(s->op), plan_fail_why(rc));
	c->net = net;
	c->done = done;
	c->ctx = ctx;
	c->t0 = sim_now(net->eng);
	if (!sim_after(net->eng, c->base_ps, begin_ev, c, 0)) {
		sim_coll_free(c);
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	}
	*out = c;
	return 0;
}

simtime_ps sim_coll_start_time(const struct sim_coll *c) { return c->t0; }
simtime_ps sim_coll_end_time(const struct sim_coll *c) { return c->t1; }
int sim_coll_error(const struct sim_coll *c) { return c->err; }
enum sim_algo sim_coll_algo(const struct sim_coll *c) { return c->s.algo; }
enum sim_proto sim_coll_proto(const struct sim_coll *c) { return c->s.proto; }
double sim_coll_bytes(const struct sim_coll *c) { return c->bytes; }

void sim_coll_free(struct sim_coll *c)
{
	if (!c)
		return;
	plan_release(c);
	free(c->joins);
	free(c->ranks);
	free(c->gpus);
	free(c->weights);
	free(c);
}

/* ---- analytic ----------------------------------------------------------------- */

static double path_lat_s(const struct topo *t, const int32_t *p, int h)
{
	double s = 0;
	int k;
	for (k = 0; k < h; k++)
		s += time_to_s(t->links[p[k]].lat_ps);
	return s;
}

/* Add bytes from GPU a to GPU b to the per-link load (one ECMP path, or
 * spread over the sprayed paths); returns the path latency in seconds or a
 * negative error. */
/* Per-link bytes of one analytic phase in a small open-addressing table
 * keyed by link, so that a phase costs what it touches, not the topology's
 * size (a 16k-GPU fabric has hundreds of thousands of links; a small
 * collective touches a few dozen). */
struct lload {
	int32_t *link;             /* per slot: link id, -1 empty */
	double *bytes;             /* per slot: bytes on that link */
	int32_t *used;             /* slots in use, in first-touch order */
	int32_t n, cap;            /* slots in use; slots (a power of two, 0 before use) */
	bool oom;                  /* the table could not grow */
};

static uint32_t lload_slot(const struct lload *ll, int32_t l)
{
	uint32_t i = (uint32_t)rng_hash64((uint64_t)(uint32_t)l) & (uint32_t)(ll->cap - 1);
	while (ll->link[i] >= 0 && ll->link[i] != l)
		i = (i + 1) & (uint32_t)(ll->cap - 1);
	return i;
}

static bool lload_grow(struct lload *ll)
{
	int32_t nc = ll->cap ? 2 * ll->cap : 256;
	struct lload g = { malloc((size_t)nc * sizeof(int32_t)), malloc((size_t)nc * sizeof(double)),
			   malloc((size_t)nc / 2 * sizeof(int32_t)), 0, nc, false };
	if (!g.link || !g.bytes || !g.used) {
		free(g.link);
		free(g.bytes);
		free(g.used);
		return false;
	}
	for (int32_t i = 0; i < nc; i++)
		g.link[i] = -1;
	for (int32_t j = 0; j < ll->n; j++) {
		uint32_t o = (uint32_t)ll->used[j], k = lload_slot(&g, ll->link[o]);
		g.link[k] = ll->link[o];
		g.bytes[k] = ll->bytes[o];
		g.used[g.n++] = (int32_t)k;
	}
	free(ll->link);
	free(ll->bytes);
	free(ll->used);
	*ll = g;
	return true;
}

static void bump(struct lload *ll, int32_t l, double bytes)
{
	uint32_t i;
	if (!(bytes > 0))
		return;
	if (2 * (ll->n + 1) > ll->cap && !lload_grow(ll)) {
		ll->oom = true;
		return;
	}
	i = lload_slot(ll, l);
	if (ll->link[i] < 0) {
		ll->link[i] = l;
		ll->bytes[i] = 0;
		ll->used[ll->n++] = (int32_t)i;
	}
	ll->bytes[i] += bytes;
}

static void lload_clear(struct lload *ll)
{
	for (int32_t j = 0; j < ll->n; j++)
		ll->link[ll->used[j]] = -1;
	ll->n = 0;
}

static double add_load(struct sim_coll *c, struct lload *ll, int32_t a, int32_t b, uint64_t hash,
		       double bytes)
{
	int32_t p[TOPO_MAX_HOPS];
	int64_t np = coll_paths(c, a, b, c->net_spray), k;
	double lat = 0;
	int h, q;
	for (k = 0; k < np; k++) {
		h = coll_route(c, a, b, hash, np, k, p);
		if (h < 0)
			return h;
		for (q = 0; q < h; q++)
			bump(ll, p[q], np > 1 ? bytes / (double)np : bytes);
		lat = path_lat_s(c->t, p, h);
	}
	return lat;
}

/* Add DAG transfer x's wire bytes to the per-link loads ll; returns its
 * path latency in seconds or a negative error, and in *copy_s the time of
 * its TCP host copy (0 off TCP): the transfer is no faster than that, as
 * the flow model's per-flow cap. */
static double xfer_load(struct sim_coll *c, struct lload *ll, const struct xfer *x,
			double *copy_s)
{
	const struct topo *t = c->t;
	double wb = x->bytes * c->wire_factor;
	*copy_s = 0;
	if (x->dst < 0) {
		bump(ll, x->link, wb);
		return path_lat_s(t, &x->link, 1);
	}
	if (sim_tcp_hop(t, x->src, x->dst))
		*copy_s = wb * t->cl.fabric.tcp_byte_s;
	return add_load(c, ll, x->src, x->dst, x->hash, wb);
}

/* Transfer x's wire time alone on its route (its ECMP one), s. */
static double xfer_wire_s(const struct sim_coll *c, const struct xfer *x)
{
	int32_t p[TOPO_MAX_HOPS];
	double cap = INFINITY;
	int h = xfer_route(c, x, p);
	for (int k = 0; k < h; k++)
		cap = fmin(cap, sim_link_cap_topo(c->t, p[k]));
	return h > 0 ? x->bytes * c->wire_factor / cap : 0;
}

/* The busiest link's time in the loads ll: its bytes over its capacity. */
static double lload_max_s(const struct topo *t, const struct lload *ll)
{
	double mx = 0;
	for (int32_t j = 0; j < ll->n; j++) {
		int32_t u = ll->used[j];
		double tl = ll->bytes[u] / sim_link_cap_topo(t, ll->link[u]);
		if (tl > mx)
			mx = tl;
	}
	return mx;
}

/* The bandwidth term of phase p's store-and-forward DAGs (dag.staged):
 * stage k's transfers start once the transfers before them arrived, so
 * the stages' bottlenecks add up, the same stage of every group side by
 * side (found by review: a parameter server's pushes and pulls, on
 * opposite link directions, were priced as overlapping, at half the flow
 * model's time; recursive halving's steps inside and across nodes as one).
 * Raises *bw to that sum; ll is scratch. */
static int staged_bw(struct sim_coll *const *cs, int ncs, int p, struct lload *ll, double *bw)
{
	int32_t nst = 0, k, i;
	double sum = 0;
	int ci;
	for (ci = 0; ci < ncs; ci++)
		if (p < cs[ci]->nph && cs[ci]->ph[p].dag.staged && cs[ci]->ph[p].dag.nstages > nst)
			nst = cs[ci]->ph[p].dag.nstages;
	if (nst < 2)
		return 0; /* one stage: the phase's bottleneck already */
	for (k = 0; k < nst; k++) {
		double mx = 0;
		lload_clear(ll);
		for (ci = 0; ci < ncs; ci++) {
			struct sim_coll *c = cs[ci];
			const struct dag *d;
			if (p >= c->nph || !c->ph[p].dag.staged)
				continue;
			d = &c->ph[p].dag;
			for (i = 0; i < d->n; i++) {
				double cp, pl;
				if (d->x[i].stage != k || !(d->x[i].bytes > 0))
					continue;
				pl = xfer_load(c, ll, &d->x[i], &cp);
				if (pl < 0)
					return (int)pl;
				/* TCP: each stage pays its host copy (found by
				 * review: it does at flow level) */
				if (cp > mx)
					mx = cp;
			}
		}
		if (ll->oom)
			return TS_ENOMEM;
		sum += fmax(mx, lload_max_s(cs[0]->t, ll));
	}
	if (sum > *bw)
		*bw = sum;
	return 0;
}

/* alpha-beta per phase: bandwidth term = the most loaded link's bytes over
 * its capacity (the bottleneck share of every flow of the phase, counting
 * how many of the group's transfers cross each NIC and link); latency term
 * = the longest chain of per-hop latencies (software + propagation). */
static int analytic_time(struct sim_coll *const *cs, int ncs, double *out_s)
{
	const struct topo *t = cs[0]->t;
	struct lload ll = { NULL, NULL, NULL, 0, 0, false };
	struct lload sl = { NULL, NULL, NULL, 0, 0, false }; /* one stage's */
	double total = 0;
	double *fin = NULL;
	int p, ci, nph = 0, rc = 0;
	for (ci = 0; ci < ncs; ci++) {
		if (cs[ci]->nph > nph)
			nph = cs[ci]->nph;
		if (time_to_s(cs[ci]->base_ps) > total)
			total = time_to_s(cs[ci]->base_ps);
	}
	for (p = 0; p < nph; p++) {
		double lat = 0, bw = 0;
		lload_clear(&ll); /* the previous phase's */
		for (ci = 0; ci < ncs; ci++) {
			struct sim_coll *c = cs[ci];
			struct phase *ph = &c->ph[p];
			int32_t i, k;
			if (p >= c->nph)
				continue;
			for (i = 0; i < ph->nrings; i++) {
				struct ring *r = &ph->rings[i];
				double lap = 0;
				bool tcp = false;
				for (k = 0; k < r->m; k++) {
					int32_t a = r->gpu[k], b = r->gpu[(k + 1) % r->m];
					double eb = r->step_bytes * c->wire_factor * r->nsteps;
					double pl = add_load(c, &ll, a, b, rng_hash2(r->hash, (uint64_t)k), eb);
					if (pl < 0) {
						rc = (int)pl;
						goto out;
					}
					lap += time_to_s(c->a_ps[hop_class(t, a, b)]) + pl;
					if (sim_tcp_hop(t, a, b)) {
						/* TCP's host costs (the flow model's): per
						 * message, and the edge's bytes at most at the
						 * host copy rate */
						lap += t->cl.fabric.tcp_msg_s;
						tcp = true;
						if (eb * t->cl.fabric.tcp_byte_s > bw)
							bw = eb * t->cl.fabric.tcp_byte_s;
					}
				}
				/* a chunk's journey: nsteps hops, lap/m each on average */
				if (lap / r->m * r->nsteps > lat)
					lat = lap / r->m * r->nsteps;
				/* or a TCP connection's own sends, one after another,
				 * each after its per-message host cost (the flow
				 * level's self chain; the bytes are in bw) */
				if (tcp && r->nsteps * t->cl.fabric.tcp_msg_s > lat)
					lat = r->nsteps * t->cl.fabric.tcp_msg_s;
			}
			if (ph->dag.n > 0) {
				struct dag *d = &ph->dag;
				double *nf = realloc(fin, (size_t)d->n * sizeof(double));
				if (!nf) {
					rc = TS_ENOMEM;
					goto out;
				}
				fin = nf;
				for (i = 0; i < d->n; i++)
					fin[i] = 0;
				for (i = 0; i < d->n; i++) {
					const struct xfer *x = &d->x[i];
					double a, cp, pl = xfer_load(c, &ll, x, &cp);
					if (pl < 0) {
						rc = (int)pl;
						goto out;
					}
					a = pl + (x->pay_alpha ? time_to_s(c->a_ps[hop_class(t, x->src, x->dst)]) : 0);
					if (x->dst >= 0 && sim_tcp_hop(t, x->src, x->dst)) {
						/* host costs: per message, and the transfer no
						 * faster than the host copy (the larger of that
						 * and its wire time, as the flow model's cap) */
						a += t->cl.fabric.tcp_msg_s;
						if (cp > bw)
							bw = cp;
					}
					/* fin[i] is the latest predecessor's finish (set below) */
					fin[i] += a;
					if (fin[i] > lat)
						lat = fin[i];
					for (k = d->soff[i]; k < d->soff[i + 1]; k++)
						if (fin[i] > fin[d->succ[k]])
							fin[d->succ[k]] = fin[i];
					/* the connection's next goes once this one has
					 * left: its path latency before the finish */
					if (x->onext >= 0 && fin[i] - pl > fin[x->onext])
						fin[x->onext] = fin[i] - pl;
					/* the slot RING_SLOTS chunks later: its credit is
					 * back a path latency after this arrived, so it
					 * goes a round trip plus a chunk's wire time after
					 * this one left, where the link alone would take
					 * RING_SLOTS chunks' time (that in the bandwidth
					 * term): the excess is a stall; a planned chunk
					 * standing for rep of the network's, rep_w of
					 * their windows' stalls */
					if (x->wnext >= 0) {
						double rep = d->rep > 1 ? d->rep : 1;
						double st = fin[i] - pl +
							    (rep > 1 ? d->rep_w : 1) *
								    fmax(0, 2 * pl - (RING_SLOTS - 1) *
											     xfer_wire_s(c, x) / rep);
						if (st > fin[x->wnext])
							fin[x->wnext] = st;
					}
				}
			}
		}
		if (ll.oom) {
			rc = TS_ENOMEM;
			goto out;
		}
		bw = fmax(bw, lload_max_s(t, &ll));
		rc = staged_bw(cs, ncs, p, &sl, &bw);
		if (rc)
			goto out;
		total += lat + bw;
	}
	/* LL's bus bandwidth cap, NCCL's tree bandwidth (coll_params) */
	for (ci = 0; ci < ncs; ci++) {
		double fl = time_to_s(cs[ci]->floor_ps);
		if (cs[ci]->floor_ps > 0 && fl > total)
			total = fl;
	}
	*out_s = total;
out:
	free(ll.link);
	free(ll.bytes);
	free(ll.used);
	free(sl.link);
	free(sl.bytes);
	free(sl.used);
	free(fin);
	return rc;
}

/* ---- compiled all-to-all (sim_a2a) ------------------------------------------ */

struct a2a_ent {
	int32_t mem, link;
	double share;              /* of one transfer (1, or 1/paths when sprayed) */
};

static int cmp_a2a_ent(const void *a, const void *b)
{
	const struct a2a_ent *x = a, *y = b;
	if (x->mem != y->mem)
		return x->mem < y->mem ? -1 : 1;
	return (x->link > y->link) - (x->link < y->link);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void sim_a2a_release(struct sim_a2a *a)
{
	free(a->off);
	free(a->lk);
	free(a->coef);
	free(a->lat_s);
	memset(a, 0, sizeof(*a));
}

/* Each group's plan is built once with unit weights (every transfer
 * present, S/n bytes); a transfer's bytes under weights are its weighting
 * member's weight times that, so a link's load is linear in the weights:
 * sum over members of w x size x unit x (the member's transfers on it),
 * as analytic_time adds them up transfer by transfer. */
int sim_a2a_compile(const struct topo *t, const struct sim_coll_spec *s, int nspecs,
		    bool spray, struct sim_a2a *out, struct ts_error *err)
{
	struct sim_coll *c = NULL;
	struct a2a_ent *e = NULL;
	int64_t *gi = NULL;        /* per group member: gpu << 32 | index, sorted */
	int32_t *lmap = NULL;
	double *unit = NULL;       /* per member: wire bytes per transfer per byte at unit weight */
	double *inv_cap = NULL;    /* per link: 1 / its analytic capacity, s/byte */
	size_t ne = 0, cape = 0;
	int32_t moff = 0, caplk = 0;
	int rc = 0;
	memset(out, 0, sizeof(*out));
	for (int g = 0; g < nspecs; g++) {
		if (s[g].op != SIM_OP_ALLTOALL || s[g].algo != SIM_ALGO_DIRECT)
			return 1;
		out->nmem += s[g].nranks;
	}
	out->lat_s = calloc((size_t)out->nmem + 1, sizeof(double));
	unit = calloc((size_t)out->nmem + 1, sizeof(double));
	lmap = malloc((size_t)(t->nlinks > 0 ? t->nlinks : 1) * sizeof(int32_t));
	if (!out->lat_s || !unit || !lmap)
		goto oom;
	for (int32_t l = 0; l < t->nlinks; l++)
		lmap[l] = -1;
	for (int g = 0; g < nspecs; g++) {
		struct sim_coll_spec sg = s[g];
		int32_t n = sg.nranks, p[TOPO_MAX_HOPS];
		const struct dag *d;
		sg.weights = NULL;
		if ((rc = sim_coll_check(t, &sg, err)))
			goto out;
		c = coll_new(t, &sg, false, &rc);
		if (!c) {
			rc = ts_error_set(err, rc, "cannot build the all-to-all plan");
			goto out;
		}
		if (c->nph != 1 || c->ph[0].nrings > 0 || c->floor_ps > 0) {
			rc = 1;
			goto out;
		}
		if (time_to_s(c->base_ps) > out->base_s)
			out->base_s = time_to_s(c->base_ps);
		free(gi);
		gi = malloc((size_t)n * sizeof(int64_t));
		if (!gi)
			goto oom;
		for (int32_t i = 0; i < n; i++) {
			gi[i] = (int64_t)c->gpus[i] << 32 | i;
			unit[moff + i] = c->wire_factor / n;
		}
		qsort(gi, (size_t)n, sizeof(int64_t), cmp_i64);
		d = &c->ph[0].dag;
		for (int32_t k = 0; k < d->n; k++) {
			const struct xfer *x = &d->x[k];
			int32_t who, m, h, lo = 0, hi = n;
			double lat;
			if (x->dst < 0 || sim_tcp_hop(t, x->src, x->dst)) {
				rc = 1; /* a single-link step, or TCP's host costs */
				goto out;
			}
			who = sg.weight_by_sender ? x->src : x->dst;
			while (lo < hi) { /* the member on GPU who */
				int32_t mid = (lo + hi) / 2;
				if ((gi[mid] >> 32) < who)
					lo = mid + 1;
				else
					hi = mid;
			}
			m = moff + (int32_t)(gi[lo] & 0xffffffff);
			/* the path(s) and share of each, as add_load takes them */
			int64_t np = sim_p2p_paths(t, x->src, x->dst, spray);
			for (int64_t pk = 0; pk < np; pk++) {
				h = sim_p2p_route(t, x->src, x->dst, x->hash, np, pk, p);
				if (h < 0) {
					rc = ts_error_set(err, TS_EINPUT, "no route from GPU %d to GPU %d",
							  x->src, x->dst);
					goto out;
				}
				/* (add_load reports the last path's latency) */
				if (pk == np - 1) {
					lat = path_lat_s(t, p, h) +
					      (x->pay_alpha ?
						       time_to_s(c->a_ps[hop_class(t, x->src, x->dst)]) :
						       0);
					if (lat > out->lat_s[m])
						out->lat_s[m] = lat;
				}
				for (int q = 0; q < h; q++) {
					if (lmap[p[q]] < 0) {
						if (out->nlinks == caplk) {
							int32_t nc = caplk ? 2 * caplk : 256;
							double *ic = realloc(inv_cap, (size_t)nc * sizeof(double));
							if (!ic)
								goto oom;
							inv_cap = ic;
							caplk = nc;
						}
						inv_cap[out->nlinks] = 1.0 / sim_link_cap_topo(t, p[q]);
						lmap[p[q]] = out->nlinks++;
					}
					if (ne == cape) {
						size_t nc = cape ? 2 * cape : 1024;
						struct a2a_ent *ng = realloc(e, nc * sizeof(*e));
						if (!ng)
							goto oom;
						e = ng;
						cape = nc;
					}
					e[ne++] = (struct a2a_ent){ m, lmap[p[q]], 1.0 / (double)np };
				}
			}
		}
		sim_coll_free(c);
		c = NULL;
		moff += n;
	}
	/* per member, its links with the time its transfers take of each */
	qsort(e, ne, sizeof(*e), cmp_a2a_ent);
	out->off = calloc((size_t)out->nmem + 1, sizeof(int32_t));
	out->lk = malloc((ne ? ne : 1) * sizeof(int32_t));
	out->coef = malloc((ne ? ne : 1) * sizeof(double));
	if (!out->off || !out->lk || !out->coef)
		goto oom;
	{
		size_t k = 0, u = 0;
		for (int32_t m = 0; m < out->nmem; m++) {
			out->off[m] = (int32_t)u;
			while (k < ne && e[k].mem == m) {
				int32_t l = e[k].link;
				if (u > (size_t)out->off[m] && out->lk[u - 1] == l) {
					out->coef[u - 1] += e[k].share * unit[m] * inv_cap[l];
				} else {
					out->lk[u] = l;
					out->coef[u] = e[k].share * unit[m] * inv_cap[l];
					u++;
				}
				k++;
			}
		}
		out->off[out->nmem] = (int32_t)u;
	}
	goto out;
oom:
	rc = ts_error_set(err, TS_ENOMEM, "out of memory");
out:
	if (c)
		sim_coll_free(c);
	free(e);
	free(gi);
	free(lmap);
	free(unit);
	free(inv_cap);
	if (rc)
		sim_a2a_release(out);
	return rc;
}

double sim_a2a_time(const struct sim_a2a *a, const double *w, double size_bytes, double *ld)
{
	double lat = 0, bw = 0;
	for (int32_t l = 0; l < a->nlinks; l++)
		ld[l] = 0;
	for (int32_t m = 0; m < a->nmem; m++) {
		double wm = w[m];
		if (!(wm > 0))
			continue;
		for (int32_t k = a->off[m]; k < a->off[m + 1]; k++)
			ld[a->lk[k]] += wm * a->coef[k];
		if (a->lat_s[m] > lat)
			lat = a->lat_s[m];
	}
	for (int32_t l = 0; l < a->nlinks; l++)
		if (ld[l] > bw)
			bw = ld[l];
	return a->base_s + lat + bw * size_bytes;
}

int sim_coll_analytic_groups(const struct topo *t, const struct sim_coll_spec *s, int nspecs,
			     bool spray, double *time_s, struct ts_error *err)
{
	struct sim_coll **cs;
	int rc = 0, i;
	if (nspecs > 0 && s[0].algo == SIM_ALGO_TREE && s[0].op == SIM_OP_ALLREDUCE &&
	    s[0].nranks > TREE_PLAN_MAX_RANKS && s[0].proto != SIM_PROTO_AUTO) {
		/* a tree too large to plan (its plan is chunks x ranks x trees:
		 * found by review, 16k ranks did not finish in a minute):
		 * NCCL's model from the rings' bandwidth time over the same
		 * groups (sim_tree_model), as sim/exec.c prices it */
		struct sim_coll_spec *r = malloc((size_t)nspecs * sizeof(*r));
		struct sim_group_info gi;
		double tr, t0;
		if (!r)
			return ts_error_set(err, TS_ENOMEM, "out of memory");
		for (i = 0; i < nspecs; i++) {
			r[i] = s[i];
			r[i].algo = SIM_ALGO_RING;
			r[i].proto = SIM_PROTO_SIMPLE;
		}
		rc = sim_coll_analytic_groups(t, r, nspecs, spray, &tr, err);
		r[0].size_bytes = 1;
		if (!rc)
			rc = sim_coll_analytic_groups(t, r, 1, spray, &t0, err);
		if (!rc)
			rc = sim_group_info(t, s[0].ranks, s[0].nranks, &gi, err);
		if (!rc)
			*time_s = gi.nnodes > 1 ? tree_model_proto(t, &gi, &s[0], tr - t0, s[0].proto) : tr;
		free(r);
		return rc;
	}
	cs = calloc((size_t)(nspecs > 0 ? nspecs : 1), sizeof(*cs));
	if (!cs)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	for (i = 0; i < nspecs && !rc; i++) {
		if (s[i].algo == SIM_ALGO_AUTO || s[i].proto == SIM_PROTO_AUTO)
			TS_BUG("sim_coll_analytic needs a chosen algorithm and protocol");
		rc = sim_coll_check(t, &s[i], err);
		if (rc)
			break;
		cs[i] = coll_new(t, &s[i], false, &rc);
		if (!cs[i])
			rc = ts_error_set(err, rc, "cannot build the %s plan for %s (%s)",
					  sim_algo_name(s[i].algo), sim_op_name(s[i].op), plan_fail_why(rc));
		else
			cs[i]->net_spray = spray;
	}
	if (!rc && nspecs > 0) {
		rc = analytic_time(cs, nspecs, time_s);
		if (rc)
			ts_error_set(err, rc, "analytic model failed (no route or out of memory)");
	}
	for (i = 0; i < nspecs; i++)
		sim_coll_free(cs[i]);
	free(cs);
	return rc;
}

int sim_coll_analytic(const struct topo *t, const struct sim_coll_spec *s, double *time_s,
		      struct ts_error *err)
{
	return sim_coll_analytic_groups(t, s, 1, false, time_s, err);
}

int sim_coll_choose(const struct topo *t, const struct sim_coll_spec *s, enum sim_algo *algo,
		    enum sim_proto *proto, struct ts_error *err)
{
	static const enum sim_algo nccl_algos[] = { SIM_ALGO_RING, SIM_ALGO_TREE, SIM_ALGO_NVLS,
						    SIM_ALGO_NVLSTREE, SIM_ALGO_DIRECT };
	struct sim_group_info gi;
	struct sim_coll_spec in = *s; /* algo/proto may alias s's fields */
	struct ts_error why = TS_ERROR_INIT; /* why the last candidate could not run */
	double best = INFINITY;
	size_t ai, ncand = TS_ARRAY_LEN(nccl_algos);
	const enum sim_algo *cand = nccl_algos;
	int pi, rc = sim_group_info(t, in.ranks, in.nranks, &gi, err);
	if (rc)
		return rc;
	*algo = SIM_ALGO_AUTO;
	*proto = SIM_PROTO_AUTO;
	if (sim_op_p2p(in.op) && (in.algo == SIM_ALGO_AUTO || in.algo == SIM_ALGO_DIRECT) &&
	    in.proto == SIM_PROTO_AUTO) {
		/* NCCL runs point-to-point sends (sendrecv, and an all-to-all as
		 * grouped sends to each peer) outside its tuner's cost table:
		 * LL for a send of at most NCCL_P2P_LL_THRESHOLD bytes (16 KiB
		 * by default), Simple above, never LL128 (addP2pToPlan in NCCL's
		 * enqueue.cc; recalled from NCCL's source, not in
		 * shared/reference: an assumption). A send is an all-to-all
		 * member's size over the group, the mean peer's under weights.
		 * Before, the three protocols were each priced, each pricing
		 * building the n^2-transfer plan: 25 s for a 4,096-rank
		 * all-to-all, and LL or LL128 where NCCL runs Simple. */
		double send = in.op == SIM_OP_ALLTOALL ? in.size_bytes / in.nranks : in.size_bytes;
		struct sim_coll_spec c = in;
		c.algo = SIM_ALGO_DIRECT;
		c.proto = send <= SIM_P2P_LL_THRESHOLD ? SIM_PROTO_LL : SIM_PROTO_SIMPLE;
		if ((rc = sim_coll_check(t, &c, err)))
			return rc;
		*algo = c.algo;
		*proto = c.proto;
		return 0;
	}
	if (in.algo != SIM_ALGO_AUTO) {
		/* a fixed algorithm: only its protocol is chosen */
		cand = &in.algo;
		ncand = 1;
		rc = sim_coll_check(t, &in, err);
		if (rc)
			return rc;
	}
	for (ai = 0; ai < ncand; ai++) {
		enum sim_algo a = cand[ai];
		/* NCCL: point-to-point ops go direct; ring/tree/nvls for the rest,
		 * broadcast and reduce on its rings only */
		if (in.algo == SIM_ALGO_AUTO && a == SIM_ALGO_DIRECT &&
		    in.op != SIM_OP_ALLTOALL && in.op != SIM_OP_SENDRECV)
			continue;
		if (in.algo == SIM_ALGO_AUTO && a == SIM_ALGO_TREE &&
		    (in.op == SIM_OP_BROADCAST || in.op == SIM_OP_REDUCE))
			continue;
		for (pi = SIM_PROTO_LL; pi < SIM_PROTO_COUNT; pi++) {
			struct sim_coll_spec c = in;
			double tm;
			if (in.proto != SIM_PROTO_AUTO && in.proto != (enum sim_proto)pi)
				continue;
			if ((a == SIM_ALGO_NVLS || a == SIM_ALGO_NVLSTREE) && pi != SIM_PROTO_SIMPLE)
				continue; /* NVLS(Tree) is Simple only (nccl.md §1.3 tables) */
			c.algo = a;
			c.proto = (enum sim_proto)pi;
			if (sim_coll_check(t, &c, &why))
				continue; /* not available for this group */
			/* priced on the nominal network (loads spread over the
			 * equal-cost paths): NCCL's model knows no routing, so its
			 * pick does not follow the ECMP draw (found by review: an
			 * 8 MiB sprayed all-gather picked ring LL at seed 1, 30 %
			 * slower than LL128, and LL128 at seed 2) */
			rc = sim_coll_analytic_groups(t, &c, 1, true, &tm, err);
			if (rc)
				return rc;
			if (tm < best) {
				best = tm;
				*algo = a;
				*proto = (enum sim_proto)pi;
			}
		}
	}
	if (*algo == SIM_ALGO_AUTO) {
		if (in.algo != SIM_ALGO_AUTO) {
			struct sim_coll_spec c = in;
			c.proto = in.proto == SIM_PROTO_AUTO ? SIM_PROTO_SIMPLE : in.proto;
			rc = sim_coll_check(t, &c, err);
			if (rc)
				return rc;
			return ts_error_set(err, TS_EINPUT, "algorithm '%s' cannot use protocol '%s'",
					    sim_algo_name(in.algo), sim_proto_name(c.proto));
		}
		return ts_error_set(err, TS_EINPUT, "no algorithm can run '%s' with protocol '%s' on "
				    "this group: %s", sim_op_name(in.op), sim_proto_name(in.proto),
				    why.msg[0] ? why.msg : "none is available");
	}
	return 0;
}

/* sim.h: the face of sim/: discrete-event engine, network models and
 * collective algorithms. Never includes hw/.
 *
 * Data flow (in the order of this header):
 *   engine    a queue of events ordered by (integer picoseconds, insertion
 *             sequence); handlers take a context pointer; no global state.
 *   network   a model (analytic | flow | packet) over an array of directed
 *             links {capacity, latency, MTU, overhead}; a transfer is a
 *             path (link ids, as topo_route returns them) and a byte count,
 *             with a callback when its last byte has arrived.
 *   nccl      NCCL's cost-model tables (latencies, protocol factors) and its
 *             automatic choice of algorithm and protocol.
 *   collective an operation (allreduce, ...) on a group of ranks, run by an
 *             algorithm (ring, tree, ...) as transfers on the network, with a
 *             done-callback; or, at the analytic fidelity, a closed form.
 *
 * An executor (iteration simulation) creates one engine, attaches one
 * network built from a struct topo, starts any number of collectives of any
 * groups at the current time, schedules its own events (compute) with
 * sim_at/sim_after, and calls sim_run. Everything is deterministic for a
 * given seed: equal times fire in insertion order. */
#ifndef TS_SIM_H
#define TS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/units.h"
#include "topo/topo.h"

/* ---- engine --------------------------------------------------------------- */

struct sim_engine;
typedef void (*sim_handler)(struct sim_engine *e, void *ctx, uint64_t arg);

/* A handle names one scheduled event. It is valid from sim_at/sim_after
 * until that event fires or is cancelled; afterwards sim_cancel on it is a
 * harmless no-op that returns false (slots carry a generation count, so a
 * stale handle never cancels a newer event). 0 is never a valid handle. */
typedef uint64_t sim_event_id;

struct sim_event;                 /* pooled, private to engine.c */
struct sim_qlink;                 /* a pool slot's queue links, private to engine.c */

/* Simulated time a run accepts, s: anything that would end later comes
 * from absurd bandwidths or sizes (the engine's integer picoseconds
 * overflow near 1e7 s) and is refused with a message instead. */
#define SIM_HORIZON_S 1e6

/* Buckets of the radix queue (engine.c): bit lengths 0..63 of t XOR now. */
#define SIM_NBUCKETS 64

struct sim_engine {
	simtime_ps now;               /* current simulated time, ps */
	struct sim_event *ev;         /* event pool, cap entries */
	struct sim_qlink *lk;         /* time and bucket links of each pool slot, cap entries */
	uint32_t len, cap;            /* pending events, pool capacity (count) */
	uint32_t free_head;           /* first free pool slot (valid while len < cap) */
	uint64_t nonempty;            /* bit j set: bucket j holds events */
	uint32_t head[SIM_NBUCKETS];  /* first event (pool slot) of bucket j (valid if non-empty) */
	uint32_t tail[SIM_NBUCKETS];  /* last event of bucket j (valid if non-empty) */
	simtime_ps bmin[SIM_NBUCKETS];/* smallest time in bucket j, ps (valid if non-empty
	                               * and bit j of bmin_stale is clear) */
	uint64_t bmin_stale;          /* bit j set: a cancel removed bucket j's minimum */
	uint64_t fired;               /* events handled so far, count */
	bool stop;                    /* sim_stop was called */
};

#define SIM_ENGINE_INIT { 0 }

void sim_engine_init(struct sim_engine *e);
void sim_engine_release(struct sim_engine *e);
/* Schedule h(e, ctx, arg) at absolute time t >= now. Returns 0 when memory
 * runs out (the event is not scheduled). */
sim_event_id sim_at(struct sim_engine *e, simtime_ps t, sim_handler h, void *ctx, uint64_t arg);
sim_event_id sim_after(struct sim_engine *e, simtime_ps delay, sim_handler h, void *ctx,
		       uint64_t arg);
/* Cancel a pending event; false when the handle is stale (fired/cancelled). */
bool sim_cancel(struct sim_engine *e, sim_event_id id);
/* Fire events in (time, sequence) order until none is left, or the next is
 * after `until`, or a handler called sim_stop. Time never goes backwards
 * (asserted). Returns the number of events fired. */
uint64_t sim_run(struct sim_engine *e, simtime_ps until);
void sim_stop(struct sim_engine *e);
static inline simtime_ps sim_now(const struct sim_engine *e) { return e->now; }
static inline uint32_t sim_pending(const struct sim_engine *e) { return e->len; }
/* Time of the next pending event, TS_SIMTIME_MAX when none. */
simtime_ps sim_next_time(const struct sim_engine *e);
/* For prefetching only (a handler warming what the next one will touch):
 * when the event to fire after the current one is already known (due now,
 * scheduled before it) and its handler is h, store its argument in *arg and
 * return true; else false. O(1). */
bool sim_peek_next(const struct sim_engine *e, sim_handler h, uint64_t *arg);

/* ---- network ------------------------------------------------------------- */

enum sim_fidelity { SIM_ANALYTIC, SIM_FLOW, SIM_PACKET };

/* One directed link as the network models see it. */
struct sim_link {
	double bw_Bps;                /* usable capacity, bytes/s (after NVLink efficiency) */
	simtime_ps lat_ps;            /* propagation + switch latency, ps */
	int32_t mtu_bytes;            /* payload bytes per packet */
	int32_t overhead_bytes;       /* header bytes per packet on the wire */
	bool net;                     /* a NIC or switch link: TCP's host costs apply to a
	                               * transfer that crosses one (not to NVLink or PCIe) */
};

struct sim_net_params {
	bool tcp;                     /* transport: false RDMA (lossless), true TCP */
	double tcp_byte_s;            /* TCP host cost per byte, seconds (rate cap 1/x) */
	double tcp_msg_s;             /* TCP host cost per message, seconds */
	int64_t buffer_bytes;         /* packet: output queue per port, bytes */
	int64_t pfc_bytes;            /* packet: pause upstream above this, bytes */
	int32_t window_pkts;          /* packet: sender window, packets (fixed after init) */
	simtime_ps rto_ps;            /* packet TCP: retransmission timeout, ps */
	bool spray;                   /* collectives spread each transfer evenly over
	                               * the equal-cost paths (adaptive routing /
	                               * packet spraying) instead of one ECMP hash;
	                               * may be set at any time after init */
	int32_t ring_coupled_above;   /* flow: rings of more ranks than this run
	                               * coupled (below), ranks; default 64;
	                               * INT32_MAX: always step by step */
	double coalesce;              /* flow: the flows a finished all-to-all flow
	                               * leaves (sim_net.coalesce_sends) are re-rated
	                               * up to this fraction of its own time (bytes /
	                               * final rate) later, so ends close together
	                               * share one solve; 0 (default): at once, exact
	                               * max-min at every instant */
};

/* The tools' coalesce (predict through sim_predict_opts_init, collective;
 * sim_net_params_default keeps 0, exact): an all-to-all flow's end
 * re-rates the flows it leaves within 0.2 % of its own time (bytes / its
 * final rate), so the ends of an all-to-all's thousands of flows share
 * solves instead of each re-solving the whole saturated fabric. The freed
 * bandwidth idles that long (congestion control takes some RTTs to hand it
 * on as well); every flow on the links it leaves waits with the rest, but
 * only an all-to-all flow's end is deferred: a step-by-step ring's steps
 * wait on each other's ends (deferred there too, rings of 16 moved by up
 * to 0.35 % with a 1 % window). A uniform all-to-all's end time is its busiest link's load
 * over capacity whenever the others are re-rated, so it does not move
 * (256 ranks on a 2:1 leaf-spine: 11019.76 us in 4.8 s instead of 26 s);
 * uneven and mixed traffic does, about 0.9 x the window at worst (an
 * alltoallv with loads 1-5: +0.19 % at 0.002, +0.91 % at 0.01); predict
 * plans measured against exact max-min (0) moved by +0.0001 % to +0.056 %
 * at 1.5x to 2.5x the speed (README, the flow model). */
#define SIM_FLOW_COALESCE 0.002

/* Coupled rings (flow fidelity only). Step by step, a ring of n ranks is
 * 2(n-1)·n chunk transfers (allreduce), each a flow start and end with a
 * max-min re-solve: 8 rings of 2,048 ranks on 16k GPUs took minutes. A
 * coupled ring is instead one flow per channel whose path is all the
 * ring's edges (a link crossed by k edges counts k times), carrying the
 * per-edge volume nsteps·S_step; max-min gives it the rate of its slowest
 * edge, which is the pipelined ring's steady-state rate (every edge moves
 * the same bytes). The per-step latency is paid as one chain: the largest
 * sum, over nsteps consecutive edges (a chunk's journey), of the edge's
 * chunk time + path latency + NCCL's alpha (+ TCP's per-message cost), as
 * the step mode pays it, or the slowest edge's own sends if longer (back
 * to back, and 8 a round trip: a connection's slots, RING_SLOTS); a fast
 * edge's chunk time counts the other flows on its link at the share of
 * the time they send (collective.c, ring_coupled_done). Agreement with
 * step by step: within 2% on the rings of tests/test_sim_coll.c
 * coupled_ring_agrees_with_steps (16-512 ranks, single and concurrent
 * groups, 1:1 and 2:1 fabrics, 1 and 8 GPUs a node, ECMP and spray, 10 us
 * links), -3.8 to +6.4 % on 342 power-of-two sizes (the most, +0.3 to
 * +6.4 %, at 256 ranks and 1 GiB, where a chunk's journey and the NIC's
 * own sends take about as long); up to +8.2 % at sizes between them
 * (README). Packet
 * fidelity always runs step by step. The default threshold 64 keeps the
 * results of groups of up to 64 ranks exactly as before. */

/* Defaults: RDMA; buffers 1 MiB per port with pause at 3/4 (assumption:
 * shallow-buffer data-centre switch, a few hundred KB to MBs per port);
 * window 256 packets (assumption: ≥ bandwidth-delay product of a 400G
 * fabric with a few µs RTT at 4 KiB MTU); RTO 100 µs (assumption). */
void sim_net_params_default(struct sim_net_params *p);

typedef void (*sim_xfer_done)(void *ctx, uint64_t arg);

struct sim_net_stats {
	double bytes_sent;            /* payload bytes handed to the network, bytes */
	double bytes_delivered;       /* payload bytes arrived, bytes */
	uint64_t xfers_started;       /* transfers started, count */
	uint64_t xfers_done;          /* transfers completed, count */
	uint64_t recomputes;          /* max-min solves (flow), count */
	uint64_t solve_flows;         /* flows re-rated over all solves (flow), count */
	uint64_t solve_passes;        /* water-filling passes over all solves (flow), count */
	uint64_t solve_links;         /* links touched over all solves (flow), count */
	uint64_t solve_max_flows;     /* largest solve (flow), flows */
	uint64_t pkt_hops;            /* packet hops forwarded (packet), count */
	uint64_t drops;               /* packets dropped (packet TCP), count */
	uint64_t pauses;              /* times a port paused its upstream (packet RDMA), count */
};

struct sim_flow_state;            /* private to net_flow.c */
struct sim_pkt_state;             /* private to net_packet.c */

struct sim_net {
	struct sim_engine *eng;       /* not owned */
	enum sim_fidelity kind;       /* SIM_FLOW or SIM_PACKET (analytic runs no events) */
	int32_t nlinks;               /* entries in links */
	struct sim_link *links;       /* owned copy */
	struct sim_net_params par;    /* transport and packet parameters */
	bool coalesce_sends;          /* flow: sends made while set may have their ends
	                               * coalesced (par.coalesce): a collective sets it
	                               * around an all-to-all's sends */
	sim_xfer_done on_left;        /* sends made while set call it, with their done's
	                               * ctx and arg, once their last byte has left the
	                               * sender (before done: one path latency earlier at
	                               * flow level; the last packet off the first link at
	                               * packet level): a connection's next transfer may
	                               * go then (FIFO, like one QP). NULL: none */
	struct sim_net_stats st;      /* counters */
	struct sim_flow_state *flow;  /* SIM_FLOW state (owned) */
	struct sim_pkt_state *pkt;    /* SIM_PACKET state (owned) */
};

/* Attach a network model to e over links (copied). kind SIM_ANALYTIC
 * gives a net that only answers questions (no transfers). */
int sim_net_init(struct sim_net *n, struct sim_engine *e, enum sim_fidelity kind,
		 const struct sim_link *links, int32_t nlinks, const struct sim_net_params *p,
		 struct ts_error *err);
/* Links from a topology: NET links get the payload efficiency
 * mtu/(mtu+overhead) in the packet model only through real packet sizes
 * and in the flow model as a capacity factor; NVLink links get NCCL's
 * effective per-link speed (see sim_nvlink_eff); transport from the fabric. */
int sim_net_init_topo(struct sim_net *n, struct sim_engine *e, enum sim_fidelity kind,
		      const struct topo *t, struct ts_error *err);
/* The sim_link that sim_net_init_topo makes of topology link i, and the
 * usable capacity the flow model gives it (bytes/s of payload); the
 * analytic model prices links with the same figure. */
void sim_link_of_topo(const struct topo *t, int32_t i, struct sim_link *l);
double sim_link_cap_topo(const struct topo *t, int32_t i);
void sim_net_release(struct sim_net *n);

/* Start a transfer now: bytes of payload along path (hops link ids; the
 * array is copied). The first byte leaves after start_delay_ps (software
 * latency); done(ctx, arg) is called when the last byte has arrived.
 * hops == 0 (same GPU) completes after start_delay_ps. Returns 0 or
 * TS_ENOMEM. bytes must be > 0 (0 is allowed with hops == 0: a join). */
int sim_net_send(struct sim_net *n, const int32_t *path, int hops, double bytes,
		 simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg);

/* Start a transfer spread evenly over `parts` paths (flow model only):
 * links lists the paths' links one path after another (nl in all, any
 * length). It runs as one flow whose paths move equal shares: a link that
 * k of the paths cross carries k/parts of its rate, and the last byte
 * arrives after the paths' mean latency. Otherwise as sim_net_send (TCP's
 * per-message cost when the paths leave the host). This is how a transfer
 * sprayed over equal-cost paths (--routing spray) runs: as one flow, not
 * one per path. Returns 0, TS_ENOMEM, or TS_EINPUT for an empty list. */
int sim_net_send_paths(struct sim_net *n, const int32_t *links, int nl, int parts, double bytes,
		       simtime_ps start_delay_ps, sim_xfer_done done, void *ctx, uint64_t arg);

/* Flow model invariants, for tests: every link's allocated rate is at most
 * its capacity (feasible) and every active flow has a bottleneck: a
 * saturated link where no other flow gets more, or its own rate cap (max-min
 * fair). Returns 0, or TS_EINPUT with the first violation in err. */
int sim_net_check_maxmin(const struct sim_net *n, double rel_tol, struct ts_error *err);
/* The same check on given rates (what sim_net_check_maxmin hands it, and
 * what its own tests hand it to see it fail): flow i crosses links
 * links[i][0..hops-1], carrying rate x coef there (coef NULL: 1), capped at
 * cap_Bps (0: none); links have capacities cap_Bps[0..nlinks-1]. */
struct sim_mm_flow {
	const int32_t *links;
	const double *coef;
	int hops;
	double rate_Bps, cap_Bps;
	int32_t id; /* named in the message */
};
int sim_maxmin_verify(const double *cap_Bps, int32_t nlinks, const struct sim_mm_flow *fl,
		      int32_t nfl, double rel_tol, struct ts_error *err);
/* Active flows and their rates (flow model), for tests. */
int32_t sim_net_active_flows(const struct sim_net *n);

/* NCCL's effective NVLink speed over line rate for a GPU architecture:
 * SM80 20.0, SM90 20.6, SM100 40.1 GB/s per link (nccl.md §1.5, topo.h
 * constants) over the per-link line rate 25, 25, 50 GB/s (hardware.md). */
double sim_nvlink_eff(int sm_arch);

/* ---- NCCL cost model --------------------------------------------------------- */

enum sim_op {
	SIM_OP_ALLREDUCE, SIM_OP_REDUCESCATTER, SIM_OP_ALLGATHER, SIM_OP_ALLTOALL,
	SIM_OP_BROADCAST, SIM_OP_REDUCE, SIM_OP_SENDRECV, SIM_OP_COUNT
};
enum sim_algo {
	SIM_ALGO_AUTO, SIM_ALGO_RING, SIM_ALGO_TREE, SIM_ALGO_RHD, SIM_ALGO_DIRECT,
	SIM_ALGO_HIER, SIM_ALGO_PS, SIM_ALGO_NVLS, SIM_ALGO_NVLSTREE, SIM_ALGO_COUNT
};
enum sim_proto { SIM_PROTO_AUTO, SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE, SIM_PROTO_COUNT };
enum sim_hw { SIM_HW_NVLINK, SIM_HW_PCI, SIM_HW_NET };

/* NCCL runs it as point-to-point sends (PXN applies: sim_p2p_route). */
static inline bool sim_op_p2p(enum sim_op op)
{
	return op == SIM_OP_ALLTOALL || op == SIM_OP_SENDRECV;
}

const char *sim_op_name(enum sim_op op);
const char *sim_algo_name(enum sim_algo a);
const char *sim_proto_name(enum sim_proto p);
/* Parse a name; returns the value or -1 when unknown. */
int sim_op_parse(const char *s);
int sim_algo_parse(const char *s);
int sim_proto_parse(const char *s);

/* Payload bytes per packet of a network link of MTU mtu under transport tr:
 * RDMA's is the IB MTU, at most 4096 bytes, inside whatever Ethernet frame
 * carries it (hardware.md "Packets and MTU"; found by review: a 9000-byte
 * RoCE MTU was credited). */
static inline int32_t sim_payload_mtu(enum topo_transport tr, int32_t mtu)
{
	return tr == TOPO_TRANSPORT_RDMA && mtu > 4096 ? 4096 : mtu;
}

/* nccl-tests' busbw factor for op on n ranks (nccl.md §2.1). */
double sim_busbw_factor(enum sim_op op, int n);

/* NCCL's per-step hardware latency (µs) and base latency (µs) for an
 * algorithm/protocol (nccl.md §1.3); algorithms NCCL lacks use Ring's. */
double sim_nccl_hw_lat_us(enum sim_hw hw, enum sim_algo a, enum sim_proto p);
double sim_nccl_base_lat_us(enum sim_algo a, enum sim_proto p);
/* NCCL's network post overhead on hosts with CPU cpu (getNetOverhead: 2 us
 * on AMD, 1 us otherwise; nccl.md §1.3), us. */
double sim_nccl_net_overhead_us(enum topo_cpu cpu);
/* NCCL's latency (us) of one ring step over a hop of class hw, for a ring
 * of protocol p over nnodes nodes with at most ppn ranks on one, on hosts
 * with CPU cpu (nccl.md §1.4). */
double sim_nccl_ring_hop_lat_us(enum sim_hw hw, enum sim_proto p, int32_t nnodes, int32_t ppn,
				enum topo_cpu cpu);
/* Fraction of the wire carrying data for a protocol (Simple 1, LL128 0.92,
 * LL 0.5: nccl.md §1.5 ring refinements). */
double sim_proto_eff(enum sim_proto p);
/* The same for algorithm a over nnodes nodes (NCCL's tree refinements). */
double sim_proto_eff_for(enum sim_algo a, enum sim_proto p, int nnodes);
/* NCCL's cap on LL's bus bandwidth (llMaxBws) for a GPU of sm_arch over
 * nnodes nodes, bytes/s; 0 when the reference has none. */
double sim_ll_max_busbw_Bps(int sm_arch, int nnodes);

/* ---- collectives --------------------------------------------------------------- */

struct sim_coll_spec {
	enum sim_op op;               /* operation */
	enum sim_algo algo;           /* algorithm, or SIM_ALGO_AUTO */
	enum sim_proto proto;         /* protocol, or SIM_PROTO_AUTO */
	double size_bytes;            /* nccl-tests "size": see sim_coll_spec_init */
	int32_t nranks;               /* ranks in the group */
	const int32_t *ranks;         /* the group's ranks (placement maps to GPUs), not owned */
	int32_t root;                 /* index in the group for broadcast/reduce */
	int32_t channels;             /* ring channels, 0 = automatic */
	int32_t chunks;               /* pipeline chunks per step/tree, 0 = automatic */
	int32_t ps_servers;           /* parameter-server ranks (first of group), 0 = 1 */
	uint64_t hash;                /* ECMP salt for this collective's flows */
	/* alltoallv (direct alltoall only): per group member a factor on what
	 * it receives (or, weight_by_sender, sends): i -> j carries size/n x
	 * weights[j] (weights[i]); NULL: uniform. Not owned; copied at start. */
	const double *weights;
	bool weight_by_sender;
	/* the rest of an operation under way (predict's memo, whose kept time
	 * holds these): no NCCL base or per-step latency and no floor (LL's
	 * bandwidth cap, the tree's bound); its links' own delays and TCP's
	 * per-message host cost (sim_net_send's) kept */
	bool no_latency;
};

void sim_coll_spec_init(struct sim_coll_spec *s);

/* Facts about a group on a topology, used for checks and the cost model. */
struct sim_group_info {
	int32_t nranks;               /* ranks, count */
	int32_t nnodes;               /* distinct hosts, count */
	int32_t ppn;                  /* ranks per host (max), count */
	bool uniform;                 /* every host holds ppn ranks */
	bool pow2;                    /* nranks is a power of two */
	enum sim_hw intra;            /* NVLink or PCIe inside a host */
};
int sim_group_info(const struct topo *t, const int32_t *ranks, int32_t n,
		   struct sim_group_info *gi, struct ts_error *err);

/* NCCL's cost model of a tree all-reduce over a group too large to build
 * the tree's plan (more than 64 ranks), given the ring's bandwidth time
 * over the same group (its time less its latency, as concurrent traffic
 * leaves it): the tree's latency plus that time x n/(n-1) over the
 * protocol's factor (x 1/0.92 Simple, 128/120 LL128, 3.8 LL, LL at least
 * its llMaxBw bytes), the floor a simulated tree keeps (nccl.md §1.4-1.5).
 * The best protocol into *proto and its time into *time_s; *time_s is
 * INFINITY when the group sits on one host (no tree across nodes). */
int sim_tree_model(const struct topo *t, const struct sim_coll_spec *s, double ring_bw_s,
		   enum sim_proto *proto, double *time_s, struct ts_error *err);
/* NVLSTree's time over such a group (Simple), from the ring's bandwidth
 * time: from three nodes each NIC carries what a ring's does (2 S/ppn)
 * and each NVLink less, so the ring's time; at two nodes half of it, or
 * the NVLink's S (1 + 1/ppn) / 0.85 if longer; plus NVLSTree's latency
 * (nccl.md §1.4) and the links' own along a tree. *time_s is INFINITY
 * where it cannot run (sim_coll_check: no node.nvls, one node, one GPU
 * a node, uneven nodes). */
int sim_nvls_tree_model(const struct topo *t, const struct sim_coll_spec *s, double ring_bw_s,
			double *time_s, struct ts_error *err);

/* Check that algo can run op on the group (ranks distinct and placed, a
 * power of two for rhd, NVSwitch with NVLS on one node for nvls, ...).
 * Returns 0 or TS_EINPUT with a message that says why. */
int sim_coll_check(const struct topo *t, const struct sim_coll_spec *s, struct ts_error *err);

/* Whether ng concurrent copies of s fit the transfers the simulator holds
 * where s runs direct (an alltoall or sendrecv always does; another op
 * where s->algo is direct): every member to every other, about 60 bytes a
 * transfer analytic and 500 with its flow (flow: flow or packet level).
 * Returns 0 or TS_EINPUT with a one-line message. Checked before any plan
 * is built, since choosing a protocol for a direct plan of another op
 * prices each protocol first. */
int sim_coll_size_check(const struct sim_coll_spec *s, int ng, bool flow, struct ts_error *err);

/* Analytic time of a collective (alpha-beta, bottleneck bandwidth from the
 * per-link load of the algorithm's transfers on the topology). No events. */
int sim_coll_analytic(const struct topo *t, const struct sim_coll_spec *s, double *time_s,
		      struct ts_error *err);
/* The same for nspecs collectives started together (e.g. concurrent
 * groups): their per-link loads add up phase by phase. spray: loads spread
 * over the equal-cost paths (as sim_net_params.spray). */
int sim_coll_analytic_groups(const struct topo *t, const struct sim_coll_spec *s, int nspecs,
			     bool spray, double *time_s, struct ts_error *err);
/* NCCL's PXN for point-to-point sends (alltoall, send/recv): the GPU of a's
 * node on b's rail through which a transfer from a to b goes, or -1 when it
 * goes directly (same node or rail, no NVSwitch, PXN off). */
int32_t sim_pxn_via(const struct topo *t, int32_t a, int32_t b);
/* sim_spray_paths and sim_spray_route for a point-to-point transfer: over
 * NVLink to sim_pxn_via's GPU, then from its NIC. */
int64_t sim_p2p_paths(const struct topo *t, int32_t a, int32_t b, bool spray);
int sim_p2p_route(const struct topo *t, int32_t a, int32_t b, uint64_t hash, int64_t np, int64_t k,
		  int32_t *path);

/* The analytic model of a direct all-to-all(v) run by nspecs groups at
 * once, compiled for repeated evaluation with different member loads: per
 * member (the groups' ranks in spec order, the weighting side: sender when
 * s[g].weight_by_sender, else receiver), how many of its transfers cross
 * each link (a share of one where spray spreads a transfer over its
 * equal-cost paths) and the latest of their latencies. sim_a2a_time then
 * gives sim_coll_analytic_groups' time (with the same spray) for any
 * weights in O(member-link pairs), without routing or planning again. */
struct sim_a2a {
	int32_t nlinks;            /* links the transfers cross, count */
	int32_t nmem;              /* members of all groups, count */
	int32_t *off;              /* per member: its entries [off[m], off[m+1]) */
	int32_t *lk;               /* entry: a link the member's transfers cross */
	double *coef;              /* entry: the seconds they take of it per byte of size
	                            * at unit weight (count x protocol factor / group
	                            * size / capacity), s/byte */
	double *lat_s;             /* per member: latest transfer latency (path + alpha), s */
	double base_s;             /* NCCL's base latency, s */
};
/* Returns 0; TS_EINPUT with err set for a bad spec; 1 (err untouched)
 * where the model is not of that form (not a direct all-to-all, a TCP hop
 * with its host costs, a floor): use sim_coll_analytic_groups. */
int sim_a2a_compile(const struct topo *t, const struct sim_coll_spec *s, int nspecs,
		    bool spray, struct sim_a2a *out, struct ts_error *err);
/* Time for member weights w (nmem, >= 0) and per-group size size_bytes;
 * scratch: nlinks doubles. */
double sim_a2a_time(const struct sim_a2a *a, const double *w, double size_bytes, double *scratch);
void sim_a2a_release(struct sim_a2a *a);

/* NCCL's default NCCL_P2P_LL_THRESHOLD: a point-to-point send of at most
 * this many bytes runs LL, a larger one Simple (an assumption: recalled
 * from NCCL's enqueue.cc, not in shared/reference). */
#define SIM_P2P_LL_THRESHOLD 16384.0

/* NCCL's choice: the (algorithm, protocol) of minimum predicted time among
 * those enabled for op/group (ring, tree, nvls for allreduce; ring for
 * others), keeping any fixed in s; alltoall and sendrecv go direct with
 * NCCL's point-to-point protocol by send size (SIM_P2P_LL_THRESHOLD). */
int sim_coll_choose(const struct topo *t, const struct sim_coll_spec *s, enum sim_algo *algo,
		    enum sim_proto *proto, struct ts_error *err);

struct sim_coll;                  /* a running collective, private */
typedef void (*sim_coll_done)(void *ctx, struct sim_coll *c);

/* Start a collective now on net (built from t). An AUTO algorithm or
 * protocol is chosen by sim_coll_choose. On success *out is the running
 * collective (owned by the caller: free it with sim_coll_free after done
 * has been called, or at any time after sim_run returned); done(ctx, c) is
 * called when its last transfer arrives. spec->ranks is copied. */
int sim_coll_start(struct sim_net *net, const struct topo *t, const struct sim_coll_spec *s,
		   sim_coll_done done, void *ctx, struct sim_coll **out, struct ts_error *err);
simtime_ps sim_coll_start_time(const struct sim_coll *c);
simtime_ps sim_coll_end_time(const struct sim_coll *c);  /* -1 while running */
/* The first error inside the collective's events (0 none; TS_ENOMEM): the
 * engine was stopped when it happened. */
int sim_coll_error(const struct sim_coll *c);
enum sim_algo sim_coll_algo(const struct sim_coll *c);   /* as run */
enum sim_proto sim_coll_proto(const struct sim_coll *c); /* as run */
double sim_coll_bytes(const struct sim_coll *c);        /* payload bytes moved, bytes */
void sim_coll_free(struct sim_coll *c);

#endif

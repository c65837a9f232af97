/* exec.c: the iteration executor (see exec.h).
 *
 * Instances: folded, one per (simulated data-parallel unit, stage); exact,
 * one per rank. Each instance runs its role's op DAG: an op starts when its
 * dependencies (previous op of its stream, data and blocking waits) have
 * ended. Compute ops take the compute model's time (scaled by the replica's
 * drawn vision / expert load, slowed by the overlap factor while the
 * instance has communication in flight). Communication ops meet at a
 * rendezvous of the group's instances, then start, on the network of the
 * whole topology, the collective of every group the arriving instances
 * stand for (groups inside one host share no link with each other under
 * topo/'s routing policy, so one of them stands for all unless the unit's
 * traffic crosses their NVLink ports by PXN: one_for_all; groups that
 * cross hosts are all started; folded flow, the data-parallel groups run
 * from their members' DP streams: dp_emit). Large rings (> FLUID_MIN_RANKS) run as their
 * steady state: one flow per ring edge and channel carrying 2(n-1)/n x S
 * (allreduce) or (n-1)/n x S, after 2(n-1) or (n-1) hop latencies (the
 * ring closed form of DESIGN.md, nccl-tests PERFORMANCE.md), so 1000-rank
 * groups cost O(n) flows instead of O(n^2) transfers.
 *
 * Invariants: ops of a role are in an order where dependencies come first;
 * an instance's op ends exactly once; every started collective is freed
 * after sim_run. Time is integer picoseconds; ties fire in insertion order,
 * so a run is deterministic for a given seed. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "common/rng.h"
#include "models/workload.h"
#include "sim/exec.h"
#include "sim/sim_int.h"

#define FLUID_MIN_RANKS 64
/* Folded, units placed differently (blocks_alike) are all simulated up to
 * this many instances (units x stages); beyond, K stand for them. */
#define FOLD_ALL_MAX 4096
/* Folded on the network, every unit is simulated up to this many instances
 * (units x stages) when its own exchanges cross hosts; beyond, K stand for
 * them and the rest send in step with theirs. Qwen3-VL-30B-A3B on 64
 * dgx-h100-ndr nodes with PXN off (16 units x 2 stages), tp 2, EP 8, fixed
 * images, 8 micro-batches, flow level: K = 4 3.7 % over --exact, all 16
 * units 0.1 % under at about the same wall time; the 16k benchmark (128
 * units x 16 stages, EP in the hosts) 34x the wall time for 1.5 %. */
#define FOLD_EVERY_MAX 256

/* Op states the simulated ranks keep at most (a rank's state per op of its
 * stage: some 28 bytes), about 7.5 GB (found by review: --exact on 2,048
 * nodes ran out of memory only after allocating). */
#define EXEC_MAX_OP_STATES 268435456.0
/* Folded, positions of a unit placed differently (blocks_alike of one position): every
 * rank is simulated up to this many GPUs. */
#define EXACT_FALLBACK_MAX 4096
/* Images drawn per sample with units of several positions: every rank is
 * simulated up to this many GPUs, where the fold is up to 1.6 % pessimistic
 * (0.4 % at 128 GPUs, 0.8 % at 512; its cost grows with the ranks: the quick
 * start's plan on 64 nodes, 32 micro-batches, took 53 s and 4.2 GB as
 * --exact, 55 s and 1.4 GB folded over all 16 units). */
#define IMAGES_EXACT_MAX 512
/* Units of several CP positions whose exchanges cross hosts on ECMP-hashed
 * paths (positions_hashed): every rank is simulated up to this many GPUs
 * (the same bound as above, for the same cost). */
#define HASHED_EXACT_MAX 512
/* Analytic network: ECMP salts drawn per collective where paths differ. */
#define AN_ECMP_DRAWS 8

const char *sim_comm_kind_name(enum sim_comm_kind k)
{
	static const char *const n[] = { "tp", "pp", "dp", "ep", "cp" };
	return (unsigned)k < SIM_COMM_COUNT ? n[k] : "?";
}

void sim_predict_opts_init(struct sim_predict_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fidelity = SIM_FLOW;
	o->seed = 1;
	o->coalesce = SIM_FLOW_COALESCE;
}

static enum sim_comm_kind kind_of(int dim)
{
	switch (dim) {
	case WL_D_TP: return SIM_COMM_TP;
	case WL_D_PP: return SIM_COMM_PP;
	case WL_D_EP: return SIM_COMM_EP;
	case WL_D_TPEP: return SIM_COMM_EP;
	case WL_D_CP: return SIM_COMM_CP;
	default: return SIM_COMM_DP;
	}
}

/* An op's kind in the breakdown: its dimension's, except the tied
 * embedding's gradient exchange between the first and last stage, which
 * exists because of the pipeline and is reported with it (found by
 * review: counted as data-parallel, where DP remedies do not touch it). */
static enum sim_comm_kind kind_of_op(const struct wl_op *op)
{
	if (op->phase == WL_P_DP && (op->kind == WL_K_SEND || op->kind == WL_K_RECV))
		return SIM_COMM_PP;
	/* the CP group's gradient reduction of a step without the replicas'
	 * (relaxed sync): gradient synchronisation, as the DP x CP reduction
	 * it is part of */
	if (op->phase == WL_P_DP && op->kind == WL_K_COLL && op->dim == WL_D_CP)
		return SIM_COMM_DP;
	return kind_of(op->dim);
}

static enum sim_op sim_op_of(int coll)
{
	switch (coll) {
	case WL_C_ALLREDUCE: return SIM_OP_ALLREDUCE;
	case WL_C_REDUCESCATTER: return SIM_OP_REDUCESCATTER;
	case WL_C_ALLGATHER: return SIM_OP_ALLGATHER;
	case WL_C_ALLTOALL: return SIM_OP_ALLTOALL;
	default: return SIM_OP_SENDRECV;
	}
}

/* ---- state ------------------------------------------------------------------ */

/* A micro-batch's drawn image load over the plan's mean (vision_pass
 * builds the encoder at the mean): lin scales what grows with the patches
 * (GEMMs, element-wise ops, the TP all-reduces, attention's bytes), att
 * the attention's FLOPs, which grow with each image's patches squared
 * (found by review: one FLOP ratio, its P^2 term included, scaled the
 * all-reduces and GEMMs too, +20 % for a 1,024-token image against the
 * mean's 544). */
struct vload {
	double lin, att; /* factors */
};

struct inst {
	int32_t role;              /* stage */
	int32_t unit;              /* folded: simulated unit index k; exact: -1 */
	int32_t pos;               /* exact: DP x CP position; folded: first position of its unit */
	int32_t tpi;               /* exact: TP index; folded: 0 */
	int16_t *ndeps;            /* per op: unfinished dependencies */
	simtime_ps *t0, *t1;       /* per op: start and end, ps (-1 before) */
	simtime_ps *xfer;          /* per COLL/SEND op: when it launched (all members there);
	                            * per COMPUTE op: when its GPU work started, after the
	                            * host's dispatch wait, ps */
	uint8_t *arrived;          /* per RECV op: data arrived (1), receive posted (2), the
	                            * tied-embedding send waits for it to be posted (3) */
	int32_t comm_inflight;     /* communication ops running, count */
	uint8_t *dpr;              /* per op: a DP collective's deps off its DP stream ended
	                            * (dp_ready); a pipeline send started behind its DP op
	                            * (dp_early_send); the role's erecv posted with all else
	                            * done (dp_erecv_posted); flag */
	struct vload *vis_f;       /* per micro-batch vision load */
	float *exp_f;              /* per micro-batch x decoder layer: the rank's expert load
	                            * (folded: the unit's largest), factor; NULL if not drawn */
	simtime_ps cpu_ps;         /* host thread: when it finished dispatching the last op, ps */
	/* the running compute op (one compute stream), slowed while its own
	 * communication runs (overlap slowdown, comp_rerate) */
	sim_event_id comp_ev;      /* its end event, 0 none */
	simtime_ps comp_t0;        /* when its GPU work (re)started at its speed: after
	                            * the host's dispatch wait, then at each change, ps */
	double comp_left;          /* its work left then, s at full speed */
	double comp_rate;          /* its speed, 1 or 1 / slowdown */
	bool comp_slows;           /* it runs on the SMs (the overlap slowdown applies;
	                            * not to host work, PCIe copies or waits) */
	int32_t comp_op;           /* its op index */
	double *jit;               /* folded, --jitter: per rank of its unit (position x TP
	                            * rank) and of the units it stands for, the time its drawn
	                            * noise added, s; the representative runs as the slowest
	                            * (NULL: exact, or one rank) */
	int32_t *jgid;             /* with jit: per dimension x rank of jit, its group of that
	                            * dimension among them, 0.. (jit_end) */
	int32_t jn;                /* with jit: its ranks, tp x U x the units it stands for */
	int32_t *jrank;            /* with jit: per rank of jit, its rank number (its noise's
	                            * key, as --exact's) */
	double **jpp;              /* with jit: per communication op, each rank's lag behind
	                            * [jn], s: from its start (jit_start) until it ends, then
	                            * behind its end, ps, at [jn] (a receive's: behind its
	                            * data's arrival, its sender's lags); NULL: none */
	int32_t *jref;             /* with jpp: per op, its successors yet to read it */
	simtime_ps comp_free;      /* with jit: when its last compute op ended, ps */
	simtime_ps jstart;         /* with jit: when the collective ending now started, ps */
	int32_t njpp;              /* jpp's ops, count */
	struct vload *jvis;        /* with jit and units it stands for: per unit of jrank (in
	                            * its order) x micro-batch, the unit's vision load, as
	                            * vis_f (NULL: none) */
	float *jexp;               /* the same for expert loads, x layer, as exp_f */
	int32_t jmm;               /* jvis's micro-batches, count */
};

struct launch {                    /* one communication op in flight */
	struct exec *x;
	int32_t role, op;          /* the op */
	int32_t nwait;             /* instances waiting, count */
	int32_t *waiters;          /* instance ids (owned) */
	int32_t left;              /* transfers/collectives outstanding, count */
	simtime_ps t_start;        /* ps */
	uint64_t memo_key;         /* 0 none */
	double memo_an;            /* memoised alltoallv: its analytic time at its loads, s (0 none) */
	double size;               /* payload per rank: the op's, scaled by the drawn load, bytes */
	/* --memo 1 at flow and packet level (memo_crowd): */
	bool net;                  /* it takes part: its traffic, or its memoised time, counts */
	bool overlapped;           /* another launch that may share its links ran beside it:
	                            * its time is not kept */
	int32_t hk;                /* the hosts it runs on: its stage's units of simulated unit hk
	                            * (folded), or the whole stage (-1) */
	sim_event_id memo_ev;      /* its memoised time's end event (0: none, or running live) */
	simtime_ps memo_end;       /* when that time ends, ps */
	bool memo_live;            /* memoised, then its rest ran live: done when both are */
	double rest;               /* its traffic is the rest of a memoised op (memo_materialise):
	                            * that share of its bytes, without latency (0: the whole op,
	                            * with it) */
	struct launch *next;       /* in the rendezvous table / free list */
	struct launch *fprev, *fnext; /* in the in-flight list (launched, not done) */
	uint64_t rkey;             /* rendezvous key */
	int32_t need;              /* arrivals needed */
	bool bg;                   /* folded: background traffic of the units a representative
	                            * stands for beside its own; nobody waits for it */
	/* folded flow: one data-parallel group's op (dp_emit), run from its
	 * members' DP streams, counted in its dp_op's live until done */
	bool dpbg;
	int32_t gti, gpos;         /* dpbg: the group's leader (tp index, position) */
	int32_t gn, garrived;      /* dpbg: members, count; members whose stream reached it */
	int32_t *granks;           /* dpbg: the members (owned) */
	struct launch **gnext;     /* dpbg: per member, the next op on its stream (owned) */
	struct launch *owner;      /* dpbg: the representatives' launch it is the own op of */
	double gdelay;             /* dpbg: from its members' streams reaching it to its start
	                            * (the optimizer between, dp_emit), s */
	struct launch *held_next;  /* in dp_role's held: done, waiting for the DP background */
	struct dp_slice *slices;   /* dpbg: sends waiting for it to end (dp_early_send) */
	int32_t gslices;           /* dpbg: members whose early slice it still waits for */
	simtime_ps sl_t0, sl_t1;   /* dpbg: the last of those slices' send and arrival, ps
	                            * (sl_t1 0: it waited for none) */
};

struct dp_slw {                    /* a group op waiting for a rank's early slice */
	struct launch *b;
	struct dp_slw *next;
};

struct dp_slice {                  /* one rank's slice of an early pipeline send (owned by the
	                            * DP group op it waits for) */
	struct launch *to;         /* the send's launch it is a transfer of */
	int32_t a, b;              /* sending and receiving GPU */
	uint64_t hash;             /* its ECMP hash */
	simtime_ps lat;
	uint64_t arg;              /* slice_done_cb's */
	int32_t rrole, rk, rr;     /* then its receiving rank rr's DP group op of op rk of role
	                            * rrole (the tied embedding's receive waits for it), rk -1:
	                            * none */
	struct dp_slice *next;
};

struct dp_op {                     /* folded flow, a DP op of a role (dp_emit) */
	int32_t ready_n;           /* representatives ready for it off the DP stream, count */
	int32_t live;              /* its group ops queued or running, count */
	struct launch *own;        /* the representatives' own group's, NULL: none or done */
	uint8_t made, bgmade;      /* its group ops made; the others' made ahead (dp_gated) */
	uint8_t hold;              /* the representatives' op waits for every group's ops up to
	                            * it (dp_sync, not dp_gated_next) */
	uint8_t down;              /* follows the role's erecv */
	uint8_t feeds;             /* not down, but a down op waits for it */
	uint8_t after_erecv;       /* a DP op that follows the role's erecv: its group ops wait
	                            * for their members' slices of it (dp_slw) */
	simtime_ps sl_t0, sl_t1;   /* its representatives' own group op's sl_t0, sl_t1 */
	simtime_ps send_t0;        /* a pipeline send started early (dp_early_send): when its
	                            * last slice started, behind its rank's DP group, ps */
	bool send_rcv;             /* that slice waited last for its receiving rank's group
	                            * (the tied embedding's), not its own */
};

struct dp_role {
	struct dp_op *op;          /* per op of the role (owned) */
	struct launch *held;       /* launches done but held until the earlier group ops end */
	int32_t lo;                /* no group op live below this op (dp_pending) */
	int32_t erecv;             /* a receive followed only by the optimizer and DP ops (the
	                            * tied embedding's gradient): each rank's groups of those
	                            * DP ops wait for its own slice of it (dp_erecv_posted);
	                            * -1 none */
	double erecv_opt_s;        /* the optimizer's compute between it and the DP ops, s */
	int32_t erecv_posted;      /* representatives that posted it with all else done */
	bool erecv_go;             /* all did: the DP ops after it are made (dp_erecv_posted) */
};

struct memo {
	uint64_t key;
	simtime_ps dur;
};

struct memo_tab {                  /* open addressing, keys are nonzero hashes */
	struct memo *e;
	uint32_t cap, len;
};

/* A collective's algorithm and protocol as it ran (the trace's args);
 * SIM_ALGO_AUTO: none (a point-to-point send, a group of one rank, free
 * communication). */
struct coll_pick {
	enum sim_algo algo;
	enum sim_proto proto;
};

struct exec {
	const struct topo *t;
	const struct model *m;
	const struct plan *p;
	const struct sim_predict_opts *o;
	struct sim_compute comp;
	struct workload *w;
	int32_t **succ_off, **succ; /* per role CSR of successors */
	struct sim_engine eng;
	struct sim_net net;
	bool have_net;
	int32_t ninst;
	struct inst *in;
	int K;                     /* folded: simulated units */
	bool alike;                /* folded: the units sit in the fabric alike (blocks_alike) */
	int32_t *unit_of;          /* folded: unit -> simulated index k it rides with */
	int32_t *sim_unit;         /* folded: k -> unit */
	int U, nunits, D;          /* positions per unit, units, DP x CP positions */
	int es;                    /* expert slots per position: tp when the experts are
	                            * whole (etp 1: each TP rank its own EP member), else
	                            * 1 (the TP group holds one EP member), count */
	int nle;                   /* decoder layers with drawn expert loads: all for a MoE under
	                            * EP or a capacity, else 0 */
	const float *loads;        /* the drawn expert loads (run_once's), [(slot x micro) x nle +
	                            * layer], slot = pos x es + (es > 1 ? tpi : 0) */
	struct launch **rtab;      /* rendezvous hash table */
	struct launch *inflight;   /* launched and not done (freed at release if a run stops) */
	uint32_t rcap;
	struct memo_tab memo;      /* launch durations by op (opts.memo) */
	struct memo_tab an_memo;   /* analytic: group time by (op, size, ranks), exact */
	struct memo_tab picks;     /* with a timeline: coll_pick by instance and op (inst_key),
	                            * else by (stage, op, size) (op_key); note_pick */
	bool use_memo;
	uint64_t *role_hosts;      /* --memo 1: per role, bitmaps of the hosts its GPUs are on,
	                            * all of them and those of each simulated unit's units
	                            * (K + 1 of hwords words each; built at the first launch) */
	int hwords;
	struct sim_coll **colls;   /* started collectives not yet reaped (coll_room) */
	int64_t ncolls, capcolls;
	uint64_t colls_started;    /* collectives started on the network, count */
	uint64_t nflows;
	bool local[WL_NDIMS];      /* groups of this dim stay inside one host */
	bool one_for_all[WL_NDIMS]; /* folded flow: one such group stands for
	                            * the unit's others (local, and no PXN
	                            * traffic of the unit through their ports) */
	/* folded flow, every DP group's ops from its members' streams
	 * (dp_emit): whether they run so; per role; per rank, where its DP
	 * stream's last queued op keeps the next (NULL: idle) */
	bool dp_bgon;
	struct dp_role *dp;
	struct launch ***dp_tail;
	uint8_t *sl_state;         /* per rank: its slice of its role's erecv not sent yet (0),
	                            * on its way (1), arrived (2) */
	struct dp_slw **slw;       /* per rank: group ops waiting for that slice */
	simtime_ps *sl_t0;         /* per rank: when that slice's transfer started, ps */
	size_t sl_n;               /* ranks of sl_state and slw */
	struct rng rng;
	int err;
	struct ts_error *errp;
	struct sim_timeline *tl;
	int32_t *ranks_buf;        /* scratch for group ranks */
	sim_event_id last_ev;      /* the event after_s queued last */
	double *wbuf;              /* scratch for an EP group's loads (ep) */
	double *jit_mx;            /* folded --jitter: scratch, a representative's ranks (jn) */
	double vw_att;             /* the share of the encoder's forward FLOPs at the mean
	                            * image that is attention (vscore) */
	double *vtok;              /* drawn image tokens of each replica's micro-batch over the
	                            * plan's mean, [replica x micro + j] (NULL: no images) */
	struct a2a_entry *a2a;     /* analytic: compiled all-to-alls by (coll, dim, stage, dir) */
	int32_t na2a, capa2a;
	double *a2a_ld;            /* scratch: per-link loads of a compiled all-to-all */
	int32_t a2a_ldcap;
	uint64_t run_gen;          /* run_once's count (its drawn loads are its own) */
};

/* An alltoallv set's compiled analytic model, one per ECMP draw (ok[d]
 * false: not of sim_a2a's form, priced by sim_coll_analytic_groups). */
struct a2a_entry {
	uint64_t key;
	int draws;
	bool ok[AN_ECMP_DRAWS];
	struct sim_a2a a[AN_ECMP_DRAWS];
};

static int32_t rank_of(const struct exec *x, int tpi, int pos, int stage)
{
	return tpi + x->p->tp * (pos + x->D * stage);
}

/* Expert slots per DP x CP position (struct exec's es). */
static int expert_slots(const struct plan *p)
{
	return plan_etp(p) == 1 ? p->tp : 1;
}

/* The expert slot of (tpi, pos): EP groups are ep consecutive slots (with
 * whole experts, ep consecutive ranks of the stage: Megatron-core's
 * expert rank order), expert-DP groups the slots equal modulo ep. */
static int slot_of(const struct exec *x, int tpi, int pos)
{
	return pos * x->es + (x->es > 1 ? tpi : 0);
}

static int32_t gpu_of(const struct exec *x, int32_t rank)
{
	return x->t->rank_gpu[rank];
}

/* Ranks of the group of `dim` holding (tpi, pos, stage), into out; returns n. */
static int group_ranks(const struct exec *x, int dim, int tpi, int pos, int stage, int32_t *out)
{
	const struct plan *p = x->p;
	int n = 0, i;
	switch (dim) {
	case WL_D_TP:
		for (i = 0; i < p->tp; i++)
			out[n++] = rank_of(x, i, pos, stage);
		break;
	case WL_D_CP:
		for (i = 0; i < p->cp; i++)
			out[n++] = rank_of(x, tpi, pos / p->cp * p->cp + i, stage);
		break;
	case WL_D_EP: {
		int base = slot_of(x, tpi, pos) / p->ep * p->ep;
		for (i = base; i < base + p->ep; i++)
			out[n++] = rank_of(x, x->es > 1 ? i % x->es : tpi, i / x->es, stage);
		break;
	}
	case WL_D_DP:
		for (i = 0; i < x->D; i++)
			out[n++] = rank_of(x, tpi, i, stage);
		break;
	case WL_D_EDP:
		for (i = slot_of(x, tpi, pos) % p->ep; i < x->D * x->es; i += p->ep)
			out[n++] = rank_of(x, x->es > 1 ? i % x->es : tpi, i / x->es, stage);
		break;
	case WL_D_TPEP:
		if (x->es > 1) /* whole experts: the EP group */
			return group_ranks(x, WL_D_EP, tpi, pos, stage, out);
		for (i = pos / p->ep * p->ep; i < pos / p->ep * p->ep + p->ep; i++)
			for (int ti = 0; ti < p->tp; ti++)
				out[n++] = rank_of(x, ti, i, stage);
		break;
	}
	return n;
}

static bool group_local(const struct exec *x, const int32_t *r, int n)
{
	int h = topo_gpu_host(x->t, gpu_of(x, r[0]));
	for (int i = 1; i < n; i++)
		if (topo_gpu_host(x->t, gpu_of(x, r[i])) != h)
			return false;
	return true;
}

static void set_err(struct exec *x, int rc)
{
	if (!x->err) {
		x->err = rc;
		if (x->errp && !x->errp->code)
			ts_error_set(x->errp, rc, "simulation failed (%s)",
				     rc == TS_ENOMEM ? "out of memory" : "network error");
	}
	sim_stop(&x->eng);
}

/* Fail the run as bad input with the message (the first failure's is
 * kept) and stop the engine. */
static void refuse(struct exec *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct exec *x, const char *fmt, ...)
{
	if (!x->err) {
		x->err = TS_EINPUT;
		if (x->errp && !x->errp->code) {
			va_list ap;
			va_start(ap, fmt);
			ts_error_vset(x->errp, TS_EINPUT, fmt, ap);
			va_end(ap);
		}
	}
	sim_stop(&x->eng);
}


/* Schedule h after dur seconds, or fail the run when dur is not a finite
 * time that ends within the horizon. */
static bool after_s(struct exec *x, double dur, sim_handler h, void *ctx, uint64_t arg,
		    const char *what)
{
	double end = time_to_s(sim_now(&x->eng)) + dur;
	if (!(dur >= 0) || !(end <= SIM_HORIZON_S)) {
		refuse(x,
		       "'%s' would end at %.3g s of simulated time, beyond the simulator's horizon "
		       "of %.0e s (absurd bandwidths or sizes in the cluster, plan or calibration?)",
		       what, end, SIM_HORIZON_S);
		return false;
	}
	x->last_ev = sim_after(&x->eng, time_from_s(dur), h, ctx, arg);
	if (!x->last_ev) {
		set_err(x, TS_ENOMEM);
		return false;
	}
	return true;
}

/* ---- timeline --------------------------------------------------------------- */

static double launch_size(const struct exec *x, const struct wl_op *op, const struct inst *in);

/* The instance of stage `stage` that instance ii sends to or receives
 * from (instance ids: folded s*K + k, exact s*tp*D + pos*tp + tpi). */
static int32_t peer_inst(const struct exec *x, int32_t ii, int stage)
{
	int32_t per = x->ninst / x->w->nroles;
	return stage * per + ii % per;
}

/* Whether the run's slices fit the timeline: every simulated rank's ops
 * outside the vision encoder end in one (tl_add); with vision (after the
 * images are drawn, x->in set), also the encoder's ops of the
 * micro-batches whose drawn load is not zero, its TP all-reduces but
 * under --free-comm, where they take no time (so the count is the
 * slices', checked on Qwen3-VL-2B with and without images, folded and
 * --exact). TS_EINPUT with the message where they do not. */
static int timeline_fits(struct exec *x, bool vision)
{
	double sl = workload_traced_ops(x->w) * (double)(x->ninst / x->w->nroles);
	for (int32_t ii = 0; vision && ii < x->ninst; ii++) {
		const struct wl_role *r = &x->w->roles[x->in[ii].role];
		for (int32_t i = 0; i < r->nops; i++) {
			const struct wl_op *op = &r->ops[i];
			if (op->vary == WL_V_VISION &&
			    (op->kind == WL_K_COMPUTE || !x->o->free_comm) &&
			    (op->micro < 0 || x->in[ii].vis_f[op->micro].lin > 0))
				sl++;
		}
	}
	if (sl <= SIM_TIMELINE_MAX_SLICES)
		return 0;
	return ts_error_set(x->errp, TS_EINPUT,
			    "the timeline for --trace/--svg would have at least %.3g slices (%d "
			    "simulated ranks x their stage's ops%s), more than the %d slices a trace "
			    "Perfetto can open; trace a plan with fewer micro-batches or ranks",
			    sl, (int)x->ninst, vision ? ", the vision encoder's at the drawn images" : "",
			    SIM_TIMELINE_MAX_SLICES);
}

static struct coll_pick op_pick(struct exec *x, int32_t inst, int32_t opi, double size);

/* When compute op i's GPU work started (its host dispatch wait is [t0,
 * this]), within its span; t0 where it did not wait. */
static simtime_ps gpu_start(const struct inst *in, int32_t i)
{
	simtime_ps g = in->xfer[i];
	return g <= in->t0[i] ? in->t0[i] : g < in->t1[i] ? g : in->t1[i];
}

static void tl_add(struct exec *x, int32_t inst, const struct wl_op *op, int32_t opi,
		   simtime_ps t0, simtime_ps t1)
{
	struct sim_timeline *tl = x->tl;
	struct sim_slice *s;
	bool comm = op->kind != WL_K_COMPUTE;
	if (!tl)
		return;
	/* a micro-batch without images has no vision work (found by review:
	 * zero-length vision slices) */
	if (op->vary == WL_V_VISION && t1 == t0)
		return;
	if (tl->n >= SIM_TIMELINE_MAX_SLICES) {
		refuse(x,
		       "the timeline for --trace/--svg would pass %d slices (a trace Perfetto "
		       "cannot open); trace a plan with fewer micro-batches or ranks",
		       SIM_TIMELINE_MAX_SLICES);
		return;
	}
	if (tl->n == tl->cap) {
		int32_t nc = tl->cap ? tl->cap * 2 : 4096;
		struct sim_slice *ns = realloc(tl->s, (size_t)nc * sizeof(*ns));
		if (!ns) {
			set_err(x, TS_ENOMEM);
			return;
		}
		tl->s = ns;
		tl->cap = nc;
	}
	s = &tl->s[tl->n++];
	/* host work on its own track (found by review: CPU Adam and its
	 * copies were drawn as GPU compute) */
	s->track = inst * SIM_TL_PER +
		   (op->kind == WL_K_COMPUTE && (op->cls == WL_HOST_OPT || op->cls == WL_HOST_COPY)
			    ? SIM_TL_HOST
			    : op->stream);
	s->op = opi;
	s->t0_s = time_to_s(t0);
	s->t1_s = time_to_s(t1);
	s->name = op->name;
	s->micro = op->micro;
	s->layer = op->layer;
	s->host_wait_s = comm ? 0 : time_to_s(gpu_start(&x->in[inst], opi) - t0);
	/* (found by an audit: a recomputed forward op looked like the
	 * forward's, so a reader counted the forward twice) */
	s->recompute = op->phase == WL_P_RECOMPUTE;
	/* (found by review: collective slices carried no size or group);
	 * whole bytes: a size scaled by a drawn image or expert load, or
	 * top-k's k, is an expected value (found by review: the encoder's TP
	 * all-reduces showed 7342293.45 bytes in the trace, 7342293 in the
	 * SVG) */
	s->bytes = comm ? round(launch_size(x, op, &x->in[inst])) : 0;
	/* (a send or receive is the pipeline's, the tied-embedding exchange
	 * too, as kind_of_op counts it) */
	s->dim = comm ? (int8_t)(op->coll == WL_C_P2P ? WL_D_PP : op->dim) : -1;
	s->coll = comm ? (int8_t)op->coll : -1;
	{
		struct coll_pick pk = { SIM_ALGO_AUTO, SIM_PROTO_AUTO };
		if (comm && op->coll != WL_C_P2P)
			pk = op_pick(x, inst, opi, s->bytes);
		s->algo = (int8_t)pk.algo;
		s->proto = (int8_t)pk.proto;
	}
	/* a send and its receive share an id (the trace's flow arrows) */
	s->flow = 0;
	if (op->kind == WL_K_SEND || op->kind == WL_K_RECV) {
		bool send = op->kind == WL_K_SEND;
		int64_t ri = send ? peer_inst(x, inst, op->peer_stage) : inst;
		s->flow = ri * x->w->nops + (send ? op->peer_op : opi) + 1;
	}
}

/* ---- op lifecycle ------------------------------------------------------------ */

static void op_ready(struct exec *x, int32_t ii, int32_t oi);
static void dp_early_send(struct exec *x, int32_t ii, int32_t oi);
static void comp_rerate(struct exec *x, int32_t ii);
static void dp_ready(struct exec *x, int32_t ii, int32_t oi);
static void dp_erecv_posted(struct exec *x, int32_t ii);

/* The group of `dim` that (tpi, pos) is in, as a number equal for the
 * members of one group (group_ranks' groups). */
static int64_t group_key(const struct exec *x, int dim, int tpi, int pos)
{
	const struct plan *p = x->p;
	switch (dim) {
	case WL_D_TP: return pos;
	case WL_D_CP: return (int64_t)(pos / p->cp) * p->tp + tpi;
	case WL_D_EP: return slot_of(x, tpi, pos) / p->ep;
	case WL_D_DP: return tpi;
	case WL_D_EDP: return slot_of(x, tpi, pos) % p->ep;
	case WL_D_TPEP: return x->es > 1 ? slot_of(x, tpi, pos) / p->ep : pos / p->ep;
	default: return 0;
	}
}

/* --jitter: rank's factor on compute op oi's GPU time, keyed by both
 * alone, so that a folded representative's ranks draw what --exact's do,
 * whatever the order
 * of events (was: one seeded stream in event order, whose different draws
 * left folded and --exact apart by chance: a 1024-wide 8-layer GPT-2-style
 * model on 40 nodes, pp 2, jitter 0.2, seeds 1-16: sd 0.48 %, to -1.40 %). */
static double jit_factor(const struct exec *x, int32_t rank, int32_t oi)
{
	/* a lognormal factor of mean 1 and relative sigma jitter: the
	 * log's sigma^2 = ln(1 + jitter^2), its mean -sigma^2 / 2 (found by
	 * an audit, 2026-12-05: 1 + N(0, jitter) clipped at 0.5 raised the
	 * mean op time, x1.04 at jitter 0.5, x1.20 at 1, so a fifth of
	 * jitter 1's slowdown was the mean moving, not stragglers) */
	double s2 = log1p(x->o->jitter * x->o->jitter);
	double z = rng_keyed_gaussian(x->o->seed ^ 0x6a69747465720000ULL,
				      (uint64_t)(uint32_t)rank << 32 | (uint32_t)oi, 1);
	return exp(sqrt(s2) * z - s2 / 2);
}

/* Folded --jitter: the noise in's slowest rank has added, s. */
static double jit_max(const struct inst *in)
{
	double mx = in->jit[0];
	for (int i = 1; i < in->jn; i++)
		mx = in->jit[i] > mx ? in->jit[i] : mx;
	return mx;
}

/* Folded --jitter: op oi of in is ready to start: when each rank of in is
 * ready, into ready (s): the later of its own inputs (the representative's
 * compute and inputs that carry no ranks' lags, less the rank's lag behind
 * its slowest) and the inputs that do (a collective's or send's end, a
 * receive's data), each at that rank's own time. Those inputs' lags are
 * freed once every successor has read them. Returns jit_max. */
static double jit_ready(struct exec *x, struct inst *in, int32_t oi, double *ready)
{
	const struct wl_op *ops = x->w->roles[in->role].ops, *op = &ops[oi];
	double own = op->kind == WL_K_COMPUTE ? time_to_s(in->comp_free) : -1e300, mx = jit_max(in);
	if (op->ndeps == 0 && op->kind != WL_K_COMPUTE)
		own = time_to_s(sim_now(&x->eng));
	for (int k = 0; k < op->ndeps; k++)
		if (!in->jpp[op->deps[k]]) {
			double t = time_to_s(in->t1[op->deps[k]]);
			own = t > own ? t : own;
		}
	for (int i = 0; i < in->jn; i++)
		ready[i] = own - (mx - in->jit[i]);
	for (int k = 0; k < op->ndeps; k++) {
		int32_t d = op->deps[k];
		const double *lag = in->jpp[d];
		if (!lag)
			continue;
		double t = time_to_s((simtime_ps)lag[in->jn]);
		for (int i = 0; i < in->jn; i++)
			ready[i] = t - lag[i] > ready[i] ? t - lag[i] : ready[i];
		if (--in->jref[d] == 0) {
			free(in->jpp[d]);
			in->jpp[d] = NULL;
		}
	}
	return mx;
}

/* Folded --jitter, op oi of in ready: a compute op's ranks go on from their
 * own readiness (jit_ready: a rank held only by its own inputs is not held
 * by its slowest peer's), a collective or send records each rank's lag at
 * its start (without: with K of 160 units carrying the rest, a GPT-2-style
 * plan, pp 2, jitter 0.2, was -0.43 % under --exact on average over 16
 * seeds; a tp 2 plan evened out its TP ranks at an input-gradient
 * all-reduce that compute overlaps: +0.45 %). */
static int jit_start(struct exec *x, struct inst *in, int32_t oi)
{
	const struct wl_op *op = &x->w->roles[in->role].ops[oi];
	double now = time_to_s(sim_now(&x->eng)), *r = x->jit_mx;
	double mx = jit_ready(x, in, oi, r);
	if (op->kind == WL_K_RECV)
		return 0; /* (its data's lags come from its sender) */
	if (op->kind == WL_K_COMPUTE) {
		for (int i = 0; i < in->jn; i++)
			in->jit[i] = mx - (now - r[i]);
		return 0;
	}
	double *lag = malloc((size_t)(in->jn + 1) * sizeof(double));
	if (!lag) {
		set_err(x, TS_ENOMEM);
		return TS_ENOMEM;
	}
	for (int i = 0; i < in->jn; i++)
		lag[i] = now - r[i];
	lag[in->jn] = (double)sim_now(&x->eng);
	free(in->jpp[oi]);
	in->jpp[oi] = lag;
	in->jref[oi] = x->succ_off[in->role][oi + 1] - x->succ_off[in->role][oi];
	return 0;
}

/* Folded --jitter, communication op oi of in ended: its ranks' lags behind
 * its end. A collective's group ends when its last member arrives (the
 * least lag among them, less the wait for other representatives); a
 * send's ranks each finish their own transfer. */
static void jit_end(struct exec *x, struct inst *in, int32_t oi)
{
	const struct wl_op *op = &x->w->roles[in->role].ops[oi];
	double *lag = in->jpp[oi], *mn = x->jit_mx;
	if (!lag || op->kind == WL_K_RECV)
		return;
	if (op->kind == WL_K_COLL) {
		const int32_t *g = &in->jgid[(size_t)op->dim * in->jn];
		double w = time_to_s(in->jstart) - time_to_s((simtime_ps)lag[in->jn]);
		w = w > 0 ? w : 0;
		for (int i = 0; i < in->jn; i++)
			mn[i] = 1e300;
		for (int i = 0; i < in->jn; i++)
			mn[g[i]] = lag[i] < mn[g[i]] ? lag[i] : mn[g[i]];
		for (int i = 0; i < in->jn; i++)
			lag[i] = mn[g[i]] - w > 0 ? mn[g[i]] - w : 0;
	}
	lag[in->jn] = (double)sim_now(&x->eng);
}

struct jkey {
	int64_t k;
	int32_t i;
};

static int cmp_jkey(const void *a, const void *b)
{
	const struct jkey *p = a, *q = b;
	return p->k != q->k ? (p->k < q->k ? -1 : 1) : (p->i > q->i) - (p->i < q->i);
}

/* in->jrank: the rank numbers of in's unit (tp x U of them) and of each unit
 * it stands for after it, in unit order. */
static int jit_ranks(const struct exec *x, struct inst *in)
{
	int T = x->p->tp, TU = T * x->U, c = 0;
	if (!(in->jrank = malloc((size_t)in->jn * sizeof(int32_t))))
		return TS_ENOMEM;
	for (int32_t u = 0; u < x->nunits; u++) {
		if (x->unit_of[u] != in->unit)
			continue;
		for (int r = 0; r < TU; r++)
			in->jrank[c * TU + r] = rank_of(x, r % T, u * x->U + r / T, in->role);
		c++;
	}
	return 0;
}

static struct vload unit_vis(const struct exec *x, const struct vload *vis, int u, int mm, int j);
static float unit_exp(const struct exec *x, const float *exp_, int u, int mm, int j, int l);

/* in->jvis, jexp: the vision and expert loads of each unit in->jrank holds,
 * the largest of its positions' (as vis_f, exp_f of a unit's own), when it
 * holds more than its own and loads vary. */
static int jit_loads(const struct exec *x, struct inst *in, const struct vload *vis, const float *exp_,
		     int mm)
{
	int TU = x->p->tp * x->U, L = x->nle, c = 0;
	if (in->jn <= TU)
		return 0;
	in->jmm = mm;
	if (x->m->has_vision && !(in->jvis = calloc((size_t)(in->jn / TU) * mm, sizeof(struct vload))))
		return TS_ENOMEM;
	if (L && !(in->jexp = calloc((size_t)(in->jn / TU) * mm * L, sizeof(float))))
		return TS_ENOMEM;
	for (int32_t u = 0; u < x->nunits; u++) {
		if (x->unit_of[u] != in->unit)
			continue;
		for (int j = 0; j < mm; j++) {
			if (in->jvis)
				in->jvis[(size_t)c * mm + j] = unit_vis(x, vis, u, mm, j);
			for (int l = 0; l < L; l++)
				in->jexp[((size_t)c * mm + j) * L + l] = unit_exp(x, exp_, u, mm, j, l);
		}
		c++;
	}
	return 0;
}

/* in->jgid: each dimension's groups among the ranks of in's unit and of the
 * units it stands for (copy c of rank r at c x tp x U + r: its own TP, CP
 * and EP groups; DP and expert-DP rings join the copies), numbered. */
static int jit_groups(const struct exec *x, struct inst *in)
{
	int T = x->p->tp, TU = T * x->U, n = in->jn;
	struct jkey *kk = malloc((size_t)n * sizeof(*kk));
	if (!kk || !(in->jgid = malloc((size_t)n * WL_NDIMS * sizeof(int32_t)))) {
		free(kk);
		return TS_ENOMEM;
	}
	for (int d = 0; d < WL_NDIMS; d++) {
		int32_t id = -1;
		bool joins = d == WL_D_DP || d == WL_D_EDP;
		for (int i = 0; i < n; i++) {
			int r = i % TU;
			kk[i].k = group_key(x, d, r % T, in->pos + r / T) * (joins ? 1 : n / TU) +
				  (joins ? 0 : i / TU);
			kk[i].i = i;
		}
		qsort(kk, (size_t)n, sizeof(*kk), cmp_jkey);
		for (int i = 0; i < n; i++) {
			if (i == 0 || kk[i].k != kk[i - 1].k)
				id++;
			in->jgid[(size_t)d * n + kk[i].i] = id;
		}
	}
	free(kk);
	return 0;
}

static void op_end(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_role *r = &x->w->roles[in->role];
	const struct wl_op *op = &r->ops[oi];
	const int32_t *so = x->succ_off[in->role], *sc = x->succ[in->role];
	in->t1[oi] = sim_now(&x->eng);
	if (op->kind != WL_K_COMPUTE && op->kind != WL_K_RECV && --in->comm_inflight == 0)
		comp_rerate(x, ii);
	if (in->jit && op->kind == WL_K_COMPUTE)
		in->comp_free = in->t1[oi];
	else if (in->jit)
		jit_end(x, in, oi);
	tl_add(x, ii, op, oi, in->t0[oi], in->t1[oi]);
	if (x->dp_bgon)
		dp_ready(x, ii, oi);
	if (x->dp_bgon && x->dp[in->role].erecv >= 0 && x->dp[in->role].op[oi].feeds)
		dp_erecv_posted(x, ii);
	for (int32_t k = so[oi]; k < so[oi + 1]; k++) {
		if ((r->ops[sc[k]].kind == WL_K_SEND && in->dpr[sc[k]]) ||
		    (r->ops[sc[k]].kind == WL_K_RECV && r->ops[sc[k]].phase == WL_P_DP &&
		     in->t0[sc[k]] >= 0))
			continue; /* started early (dp_early_send) */
		if (--in->ndeps[sc[k]] == 0)
			op_ready(x, ii, sc[k]);
		else if (x->dp_bgon)
			dp_early_send(x, ii, sc[k]);
	}
}

static void ev_comp_end(struct sim_engine *e, void *ctx, uint64_t arg)
{
	struct exec *x = ctx;
	(void)e;
	x->in[arg >> 32].comp_ev = 0;
	op_end(x, (int32_t)(arg >> 32), (int32_t)(arg & 0xffffffffu));
}

/* The speed of instance in's compute: slowed by the overlap factor while
 * its communication runs. */
static double comp_speed(const struct exec *x, const struct inst *in)
{
	double sl = x->o->overlap_slowdown > 0 ? x->o->overlap_slowdown : x->comp.overlap_slowdown;
	return in->comm_inflight > 0 && !x->o->free_comm && sl > 1 ? 1 / sl : 1;
}


static uint64_t ev_arg(int32_t ii, int32_t oi)
{
	return (uint64_t)(uint32_t)ii << 32 | (uint32_t)oi;
}

/* Compute op op's time at these FLOPs, bytes, m, n and k, s. */
static double op_time_desc(const struct exec *x, const struct wl_op *op, double flops, double bytes,
			   int64_t m, int64_t n, int64_t k, double m_sd)
{
	struct sim_op_desc d;
	double reps = op->reps > 1 ? op->reps : 1; /* kernels one after another */
	memset(&d, 0, sizeof(d));
	d.cls = (enum sim_op_class)op->cls;
	d.flops = flops / reps;
	d.bytes = bytes / reps;
	d.m = m;
	d.n = n;
	d.k = k;
	d.batch = op->batch;
	d.m_sd = m_sd;
	d.masked = op->masked != WL_MASK_NONE;
	d.window = op->masked == WL_MASK_WINDOW;
	d.backward = op->attn_bwd;
	/* FP8 plans: only the decoder's linear layers run on FP8 operands
	 * (models/workload.c, linear()); everything else stays 16-bit */
	d.dtype_bytes = x->p->precision == PLAN_DT_FP32		  ? 4 :
			x->p->precision == PLAN_DT_FP8 && op->linear ? 1 :
								       2;
	/* a rank's experts run as one grouped GEMM (torch._grouped_mm's, as
	 * measured; Megatron's grouped MLP may run another): the compute
	 * model's grouped kernel, in 16 bits, as measured: the forward and
	 * data-gradient GEMMs (fitted) and the weight gradients, whose
	 * ragged tokens are k (checked, not fitted:
	 * validate/data/h200-kernels-wgrad.csv, 9.1 % mean error against 25
	 * % as batched GEMMs); one expert too (a grouped GEMM of one group:
	 * an assumption). FP8 runs other kernels and stays a batched GEMM
	 * (found by review); SequentialMLP's experts (moe_grouped_gemm
	 * false) are plain GEMMs, one after another */
	d.grouped = op->vary == WL_V_EXPERT && op->cls == WL_GEMM && d.dtype_bytes == 2 &&
		    !op->expert_loop;
	if (op->cls == WL_GEMM && d.m < 1)
		d.m = 1;
	if (op->cls == WL_GEMM && op->k > 0 && d.k < 1)
		d.k = 1;
	return (d.flops > 0 || d.bytes > 0) ? reps * sim_compute_time_s(&x->comp, &d) : 0;
}

/* The spread of the token counts of a rank's experts about their mean mu
 * (tokens an expert), which a grouped expert GEMM's row tiles see
 * (compute.h, m_sd): the routed tokens of the rank, e x mu, fall on its e
 * experts as a Dirichlet-multinomial whose probabilities are the router's
 * (draw_loads: concentration a per expert, each share's coefficient of
 * variation the plan's expert_imbalance), so an expert's count has variance
 * mu (1 - 1/e) (e mu + e a) / (1 + e a), mu (1 - 1/e) for a uniform router
 * (the multinomial's). Padded to the capacity, every expert has the same
 * rows; under a capacity the drops cut the spread (not modelled: the
 * dropless spread, an assumption). Only the GEMMs whose rows are tokens
 * (forward and data gradient; the weight gradient's tokens are its k). */
static double expert_rows_sd(const struct exec *x, const struct wl_op *op, double mu)
{
	const struct plan *p = x->p;
	double e = (double)op->batch, cv = p->expert_imbalance, E = x->m->experts, a;
	if (op->vary != WL_V_EXPERT || op->cls != WL_GEMM || op->tok_k || op->batch < 2 ||
	    p->pad_to_capacity || !(mu > 0))
		return 0;
	if (!(cv > 0))
		return sqrt(mu * (1 - 1 / e));
	a = ((E - 1) / (cv * cv) - 1) / E;
	return sqrt(mu * (1 - 1 / e) * (e * mu + e * a) / (1 + e * a));
}

/* Op op's time with its FLOPs scaled by ff and its tokens by fb (a drawn
 * image or expert load): its token dimension (m, or k for a weight
 * gradient: tok_k) and the bytes that follow the tokens (all but
 * bytes_fixed), s. No tokens: nothing runs. */
static double op_compute_s2(const struct exec *x, const struct wl_op *op, double ff, double fb)
{
	if (ff == 1 && fb == 1)
		return op_time_desc(x, op, op->flops, op->bytes, op->m, op->n, op->k,
				    expert_rows_sd(x, op, (double)op->m));
	if (!(ff > 0) && !(fb > 0))
		return 0;
	int64_t m = op->tok_k ? op->m : (int64_t)((double)op->m * fb + 0.5);
	/* an attention's keys a query attends follow its FLOPs per token
	 * (the vision's: patches of larger images attend more; found by
	 * review, the tiling took the mean image's) */
	int64_t n = op->cls == WL_ATTN && fb > 0 ? (int64_t)((double)op->n * ff / fb + 0.5) : op->n;
	return op_time_desc(x, op, op->flops * ff, op->bytes_fixed + (op->bytes - op->bytes_fixed) * fb,
			    m, n, op->tok_k ? (int64_t)((double)op->k * fb + 0.5) : op->k,
			    expert_rows_sd(x, op, (double)m));
}

static double op_compute_s(const struct exec *x, const struct wl_op *op, double f)
{
	return op_compute_s2(x, op, f, f);
}

/* A vision op's FLOPs factor at image load v: the attention's at v.att,
 * the rest at v.lin. */
static double vflops(const struct wl_op *op, struct vload v)
{
	return op->cls == WL_ATTN ? v.att : v.lin;
}

/* A vision op's time at image load v. */
static double op_vision_s(const struct exec *x, const struct wl_op *op, struct vload v)
{
	return op_compute_s2(x, op, vflops(op, v), v.lin);
}

/* Whether the host waits for receive op before issuing what follows it. */
static bool host_waits_recv(const struct exec *x, const struct wl_op *op)
{
	return op->kind == WL_K_RECV && !(x->p->overlap_pp && op->dim == WL_D_PP);
}

static void compute_start(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_op *op = &x->w->roles[in->role].ops[oi];
	double f = 1, dur;
	if (op->vary == WL_V_EXPERT && in->exp_f && op->micro >= 0 && op->layer >= 0)
		f = in->exp_f[(size_t)op->micro * x->nle + op->layer];
	dur = op->vary == WL_V_VISION && op->micro >= 0 ? op_vision_s(x, op, in->vis_f[op->micro])
							: op_compute_s(x, op, f);
	double base = dur;
	/* Host dispatch (compute model's dispatch_s): the host thread issues
	 * the stream's ops in order, dispatch_s each (framework and launch
	 * time on the CPU), and runs ahead of the GPU except where it blocks
	 * (pipeline receives, which Megatron and DeepSpeed wait for on the
	 * host, a stream synchronize before an op (sync_after: the MoE
	 * dispatcher's split sizes), and a CPU optimizer). An op starts when its inputs are ready
	 * and it has been dispatched, so streams of small ops are host-bound
	 * while large ops hide the dispatch. launch_s (inside the op's time) is
	 * the GPU-side per-kernel cost. */
	/* a stream synchronize before the op (sync_after: the MoE dispatcher
	 * reading its split sizes): the host waits for what was issued before
	 * it, whether or not the op itself has work */
	if (op->sync_after >= 0 && x->comp.dispatch_s > 0 && in->t1[op->sync_after] > in->cpu_ps)
		in->cpu_ps = in->t1[op->sync_after];
	if (dur > 0 && op->cls != WL_HOST_OPT && x->comp.dispatch_s > 0) {
		simtime_ps now = sim_now(&x->eng), disp = in->cpu_ps;
		const struct wl_op *ops = x->w->roles[in->role].ops;
		/* the host waits for the receive (directly, or behind the
		 * collective that consumes it: scatter-gather's or sequence
		 * parallelism's all-gather, an EP combine), then issues the op;
		 * not for a pipeline receive under overlap.pp (Megatron's
		 * overlap_p2p_comm waits on its requests on the GPU's stream,
		 * without the device synchronise of batched p2p; found by
		 * review, 2026-12-05) */
		for (int k = 0; k < op->ndeps; k++) {
			const struct wl_op *dk = &ops[op->deps[k]];
			if (host_waits_recv(x, dk) && in->t1[op->deps[k]] > disp)
				disp = in->t1[op->deps[k]];
			for (int j = 0; dk->kind == WL_K_COLL && j < dk->ndeps; j++)
				if (host_waits_recv(x, &ops[dk->deps[j]]) && in->t1[dk->deps[j]] > disp)
					disp = in->t1[dk->deps[j]];
		}
		/* (an op of several kernels issued one by one, wl_dispatch) */
		disp += time_from_s(x->comp.dispatch_s *
				    (op->dispatch == WL_DISP_NONE ? 0 :
				     op->dispatch == WL_DISP_ONCE || op->reps <= 1 ? 1 : op->reps));
		if (disp > now)
			dur += time_to_s(disp - now);
		in->cpu_ps = disp;
	} else if (dur > 0 && x->comp.dispatch_s > 0) { /* on the host thread itself */
		simtime_ps now = sim_now(&x->eng);
		if (in->cpu_ps > now)
			dur += time_to_s(in->cpu_ps - now);
		in->cpu_ps = now + time_from_s(dur);
	}
	double wait = dur - base; /* the host's: before the jitter on the GPU part */
	if (x->o->jitter > 0 && in->jit) {
		/* the ranks of its unit (its positions' TP ranks) and of the
		 * units it stands for each draw their own noise, and a
		 * collective among them waits for the slowest: the
		 * representative runs as the slowest of them (found by review:
		 * one draw for all was 1.0-3.1 % under --exact; each goes on
		 * from its own inputs: jit_start, jit_end) */
		int n = in->jn;
		double before = jit_max(in), after = -1e300, d = dur;
		for (int t = 0, TU = x->p->tp * x->U; t < n; t++) {
			double j = jit_factor(x, in->jrank[t], oi);
			/* each unit it stands for at its own load (beside its
			 * host's wait, dur - base) */
			size_t c = (size_t)(t / TU);
			if (t % TU == 0 && op->micro >= 0 && op->vary == WL_V_VISION && in->jvis)
				d = op_vision_s(x, op, in->jvis[c * in->jmm + op->micro]) + dur - base;
			else if (t % TU == 0 && op->micro >= 0 && op->layer >= 0 &&
				 op->vary == WL_V_EXPERT && in->jexp)
				d = op_compute_s(x, op,
						 in->jexp[(c * in->jmm + op->micro) * x->nle + op->layer]) +
				    dur - base;
			in->jit[t] += (d - dur) + (d - (dur - base)) * (j - 1);
			after = in->jit[t] > after ? in->jit[t] : after;
		}
		dur += after - before;
		if (dur < 0)
			dur = 0; /* rounding: the slowest rank's op took nothing (no images) */
	} else if (x->o->jitter > 0) {
		double j = jit_factor(x, rank_of(x, in->tpi, in->pos, in->role), oi);
		dur = (dur - base) + base * j;
	}
	/* The GPU part is slowed only while the rank's communication runs
	 * (comp_rerate); the host's dispatch wait before it, CPU optimizer
	 * work and PCIe copies are not SM work and keep their time (found by
	 * review: the slowdown stretched them too) */
	{
		double gpu;
		if (wait < 0)
			wait = 0;
		if (wait > dur)
			wait = dur;
		gpu = dur - wait;
		in->comp_slows = op->cls != WL_HOST_OPT && op->cls != WL_HOST_COPY;
		in->comp_rate = in->comp_slows ? comp_speed(x, in) : 1;
		in->comp_left = gpu;
		in->comp_t0 = sim_now(&x->eng) + time_from_s(wait);
		in->xfer[oi] = in->comp_t0;
		in->comp_op = oi;
		in->comp_ev = 0;
		if (!after_s(x, wait + gpu / in->comp_rate, ev_comp_end, x, ev_arg(ii, oi), op->name))
			return;
		in->comp_ev = x->last_ev;
	}
}

/* The compute op of instance ii runs at a new speed from now (its
 * communication started or ended): what is left finishes at that speed (was:
 * the whole op slowed when any communication ran at its start, so overlap
 * could cost more than doing the two in series). */
static void comp_rerate(struct exec *x, int32_t ii)
{
	struct inst *in = &x->in[ii];
	simtime_ps now = sim_now(&x->eng);
	double r = in->comp_slows ? comp_speed(x, in) : 1, hold = 0;
	if (!in->comp_ev || r == in->comp_rate)
		return;
	if (now > in->comp_t0) {
		in->comp_left -= time_to_s(now - in->comp_t0) * in->comp_rate;
		if (in->comp_left < 0)
			in->comp_left = 0;
		in->comp_t0 = now;
	} else {
		hold = time_to_s(in->comp_t0 - now); /* still the host's wait */
	}
	in->comp_rate = r;
	sim_cancel(&x->eng, in->comp_ev);
	in->comp_ev = 0;
	if (after_s(x, hold + in->comp_left / r, ev_comp_end, x, ev_arg(ii, in->comp_op), "compute"))
		in->comp_ev = x->last_ev;
}

/* ---- communication ------------------------------------------------------------ */

/* Key of a launch's time in memo: what runs (role, dim, collective, kind,
 * size), where (its lowest waiting instance: the group's ranks, as each
 * instance's groups are fixed) and, for a send or receive, to which stage
 * (found by review: a stage's activation send and its gradient send, one
 * across hosts and one not, shared a time) */
static uint64_t memo_key(int32_t role, const struct wl_op *op, double size, int32_t inst)
{
	uint64_t sz, peer = op->kind == WL_K_SEND || op->kind == WL_K_RECV ? (uint64_t)op->peer_stage + 1 : 0;
	memcpy(&sz, &size, sizeof(sz));
	return rng_hash2(rng_hash2(rng_hash2((uint64_t)role << 16 | (uint64_t)op->dim << 8 | op->coll, sz),
				   (uint64_t)op->kind),
			 peer << 32 | (uint64_t)(uint32_t)inst) | 1;
}

static struct memo *memo_find(struct memo_tab *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	for (uint32_t i = (uint32_t)key & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (t->e[i].key == key)
			return &t->e[i];
		if (!t->e[i].key)
			return NULL;
	}
}

/* Remember key -> dur; a failed grow only loses the entry (a cache). */
static void memo_put(struct memo_tab *t, uint64_t key, simtime_ps dur)
{
	if (t->len * 2 >= t->cap) {
		uint32_t nc = t->cap ? t->cap * 2 : 256;
		struct memo_tab nt = { calloc(nc, sizeof(struct memo)), nc, 0 };
		if (!nt.e)
			return;
		for (uint32_t i = 0; i < t->cap; i++)
			if (t->e[i].key)
				memo_put(&nt, t->e[i].key, t->e[i].dur);
		free(t->e);
		*t = nt;
	}
	for (uint32_t i = (uint32_t)key & (t->cap - 1);; i = (i + 1) & (t->cap - 1))
		if (!t->e[i].key || t->e[i].key == key) {
			if (!t->e[i].key)
				t->len++;
			t->e[i].key = key;
			t->e[i].dur = dur;
			return;
		}
}

/* A pick kept beside the entry key of t (picks of analytic and tree
 * times, of memoised launches, of traced ops). */
static uint64_t pick_key(uint64_t key)
{
	return (key ^ 0x7069636b2d746167ULL) | 1;
}

static void pick_put(struct memo_tab *t, uint64_t key, struct coll_pick pk)
{
	if (key && pk.algo != SIM_ALGO_AUTO)
		memo_put(t, pick_key(key), (simtime_ps)pk.algo << 8 | (simtime_ps)pk.proto);
}

/* Where the analytic time at the memoised run's loads is kept beside a
 * memoised alltoallv's duration (memo_an). */
static uint64_t an0_key(uint64_t key) { return rng_hash2(key, 0x616e30ULL) | 1; }

static struct coll_pick pick_get(struct memo_tab *t, uint64_t key)
{
	struct memo *mm = memo_find(t, pick_key(key));
	struct coll_pick pk = { SIM_ALGO_AUTO, SIM_PROTO_AUTO };
	if (mm) {
		pk.algo = (enum sim_algo)(mm->dur >> 8);
		pk.proto = (enum sim_proto)(mm->dur & 0xff);
	}
	return pk;
}

/* Picks of traced ops by (stage, op, size): the units a representative
 * stands for run one op at their own image and expert loads. */
static uint64_t op_key(int32_t role, int32_t opi, double size)
{
	uint64_t sz;
	/* whole bytes, as the slices carry them (found by an audit: a size
	 * scaled by a drawn image load was noted unrounded and looked up
	 * rounded, so 6,728 of the quick start's encoder all-reduces showed
	 * no algorithm at the analytic level) */
	size = round(size);
	memcpy(&sz, &size, sizeof(sz));
	return rng_hash2(rng_hash2(0x6f7070696b ^ (uint64_t)(uint32_t)role << 40, (uint64_t)(uint32_t)opi),
			 sz) | 1;
}

static uint64_t inst_key(int32_t inst, int32_t opi)
{
	return rng_hash2(0x696e73746b ^ (uint64_t)(uint32_t)inst << 32, (uint64_t)(uint32_t)opi) | 1;
}

/* With a timeline: what launch l's op ran with, for its slices. A group
 * started on the network (ranks, n) labels the waiting instances whose
 * rank it holds (a DP group run from its members' streams, those of the
 * launch it is the own op of), as groups placed unalike may pick apart;
 * every pick also labels (stage, op, size) for the instances no group
 * names (the analytic level's and a memoised time's, one pick per
 * communicator; a group inside a host standing for all). */
static void note_pick(struct exec *x, const struct launch *l, struct coll_pick pk,
		      const int32_t *ranks, int n)
{
	const struct launch *w = l->owner ? l->owner : l;
	if (!x->tl)
		return;
	pick_put(&x->picks, op_key(l->role, l->op, l->size), pk);
	for (int32_t i = 0; i < w->nwait; i++) {
		const struct inst *in = &x->in[w->waiters[i]];
		int32_t rk = rank_of(x, in->tpi, in->pos, in->role);
		for (int k = 0; k < n; k++)
			if (ranks[k] == rk) {
				pick_put(&x->picks, inst_key(w->waiters[i], l->op), pk);
				break;
			}
	}
}

/* The pick of instance inst's op opi of that size (coll_pick). */
static struct coll_pick op_pick(struct exec *x, int32_t inst, int32_t opi, double size)
{
	struct coll_pick pk = pick_get(&x->picks, inst_key(inst, opi));
	return pk.algo != SIM_ALGO_AUTO ? pk : pick_get(&x->picks, op_key(x->in[inst].role, opi, size));
}

/* Into the in-flight list (launched, not done). */
static void launch_link(struct exec *x, struct launch *l)
{
	l->fprev = NULL;
	l->fnext = x->inflight;
	if (x->inflight)
		x->inflight->fprev = l;
	x->inflight = l;
}

static void launch_unlink(struct exec *x, struct launch *l)
{
	if (l->fprev)
		l->fprev->fnext = l->fnext;
	else
		x->inflight = l->fnext;
	if (l->fnext)
		l->fnext->fprev = l->fprev;
}

/* The bytes a rank of launch l's traffic carries: its size, or the share
 * of it a memoised op's rest carries. */
static double launch_bytes(const struct launch *l)
{
	return l->rest > 0 ? l->size * l->rest : l->size;
}

static void group_ready(struct exec *x, struct launch *b);
static void part_done(struct launch *l);

static void slice_done_cb(void *ctx, uint64_t arg);
#define SLICE_OWN (1ull << 32)      /* the representative's own slice */

/* A pipeline slice sprayed over several paths: done when its parts are. */
struct slice_join {
	struct launch *to;         /* the send's launch (NULL: its start failed, the parts
	                            * in flight only end) */
	uint64_t arg;              /* slice_done_cb's */
	int64_t left;              /* parts in flight */
};

static void slice_part_cb(void *ctx, uint64_t arg)
{
	struct slice_join *j = ctx;
	(void)arg;
	if (--j->left > 0)
		return;
	if (j->to)
		slice_done_cb(j->to, j->arg);
	free(j);
}

/* Start one transfer of pipeline send `to` (launch_go, dp_slices_go) from
 * GPU a to GPU b: one path by hash, or (--routing spray) an even share on
 * each of its equal-cost paths (one spread flow at flow level, a part per
 * path at packet level), as the analytic level (analytic_sends) and
 * the collectives take them (found by review: one hashed path at flow
 * level, so under spray, without PXN, a 4-node random placement's sends
 * starved beside the sprayed TP traffic, 5.5x the analytic level's exposed
 * pipeline time). Notes for
 * the breakdown when a tracked slice (arg: the receiving rank + 1) and the
 * last slice of an early send (early: 1, 2 when its receiving rank's DP
 * group held it last) started. */
static int slice_send(struct exec *x, struct launch *to, int32_t a, int32_t b, uint64_t hash,
		      simtime_ps lat, uint64_t arg, int early)
{
	simtime_ps now = sim_now(&x->eng);
	int32_t path[TOPO_MAX_HOPS];
	int64_t np = sim_p2p_paths(x->t, a, b, x->o->spray);
	struct slice_join *j;
	int hops, rc = 0;
	if (to->rest > 0)
		lat = 0;
	if ((uint32_t)arg)
		x->sl_t0[(uint32_t)arg - 1] = now;
	if (early && x->dp) {
		x->dp[to->role].op[to->op].send_t0 = now;
		x->dp[to->role].op[to->op].send_rcv = early == 2;
	}
	if (np <= 1) {
		hops = sim_p2p_route(x->t, a, b, hash, 1, 0, path);
		if (hops < 0)
			return hops;
		x->nflows++;
		return sim_net_send(&x->net, path, hops, launch_bytes(to), lat, slice_done_cb, to, arg);
	}
	if (x->net.kind == SIM_FLOW) {
		/* one spread flow over the np paths */
		x->nflows++;
		return sim_send_sprayed(&x->net, x->t, a, b, hash, np, true, launch_bytes(to), lat,
					slice_done_cb, to, arg);
	}
	j = malloc(sizeof(*j));
	if (!j)
		return TS_ENOMEM;
	j->to = to;
	j->arg = arg;
	j->left = np;
	for (int64_t k = 0; k < np && !rc; k++) {
		hops = sim_p2p_route(x->t, a, b, hash, np, k, path); /* packet level: a part a path */
		rc = hops < 0 ? hops :
			       sim_net_send(&x->net, path, hops, launch_bytes(to) / (double)np, lat,
					    slice_part_cb, j, 0);
		if (!rc) {
			x->nflows++;
		} else if (k == 0) {
			free(j); /* nothing in flight holds it */
		} else {
			/* the caller takes the transfer back: the parts in
			 * flight end without it */
			j->left = k;
			j->to = NULL;
		}
	}
	return rc;
}

static struct launch *dp_slice_gate(struct exec *x, int32_t role, int32_t k, int32_t r);

/* DP group op b ended: the pipeline send slices waiting for it go (or
 * wait on for their receiving rank's group). */
static void dp_slices_go(struct exec *x, struct launch *b)
{
	for (struct dp_slice *q = b->slices, *n; q; q = n) {
		int rc;
		struct launch *g;
		n = q->next;
		if (q->rk >= 0 && (g = dp_slice_gate(x, q->rrole, q->rk, q->rr))) {
			/* its receiving rank still reduces: then */
			q->rk = -1;
			q->next = g->slices;
			g->slices = q;
			continue;
		}
		if (q->arg & SLICE_OWN) {
			/* the send shows from when its own slice started */
			struct launch *l = q->to;
			l->t_start = sim_now(&x->eng);
			for (int32_t i = 0; i < l->nwait; i++)
				x->in[l->waiters[i]].t0[l->op] = x->in[l->waiters[i]].xfer[l->op] =
					l->t_start;
		}
		rc = slice_send(x, q->to, q->a, q->b, q->hash, q->lat, q->arg,
				b->role == q->to->role ? 1 : 2);
		if (rc)
			set_err(x, rc);
		free(q);
	}
	b->slices = NULL;
}

static bool dp_coll(const struct wl_op *op)
{
	return op->kind == WL_K_COLL && (op->dim == WL_D_DP || op->dim == WL_D_EDP);
}

/* The DP collective that receive op oi of role waits for (the tied
 * embedding's: its end's last reduction), or -1. */
static int32_t recv_dp(const struct exec *x, int role, int32_t oi)
{
	const struct wl_op *ops = x->w->roles[role].ops;
	for (int d = 0; d < ops[oi].ndeps; d++)
		if (dp_coll(&ops[ops[oi].deps[d]]))
			return ops[oi].deps[d];
	return -1;
}

/* Pipeline send oi of instance ii waits only for a DP op whose group ops
 * are made (the tied embedding's gradient to the other end of the
 * pipeline, after the last reduction): it starts now, each rank's slice
 * once that rank's own DP group's op ended (launch_go, dp_slice_gate), as
 * --exact's ranks send after their own reduction; the representative
 * waited for the slowest group, and its slices all started at once where
 * --exact's ranks whose groups ended early sent while the others still
 * reduced (Qwen3-VL-2B tp 8 pp 2 SP, full recompute, --bucket-mb 10, 8
 * nodes of the ECMP leaf-spine: +1.6 / +0.45 / +0.52 % over --exact at
 * seeds 1-3, now 0.00 %). */
static void dp_early_send(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_op *ops = x->w->roles[in->role].ops, *op = &ops[oi];
	int32_t d = -1;
	if (op->kind == WL_K_RECV && op->phase == WL_P_DP && in->ndeps[oi] == 1 && in->t0[oi] < 0) {
		/* the tied embedding's receive likewise: posted now, the send
		 * to it goes, and each of its slices waits for its receiving
		 * rank's group too (launch_go: rgate), as --exact's ranks
		 * post theirs after their own reduction (op_ready) */
		for (int k = 0; k < op->ndeps; k++)
			if (in->t1[op->deps[k]] < 0)
				d = op->deps[k];
		if (d >= 0 && dp_coll(&ops[d]) && x->dp[in->role].op[d].made) {
			in->ndeps[oi] = 0;
			op_ready(x, ii, oi);
		}
		return;
	}
	if (op->kind != WL_K_SEND || in->ndeps[oi] != 1 || in->dpr[oi])
		return;
	for (int k = 0; k < op->ndeps; k++)
		if (in->t1[op->deps[k]] < 0)
			d = op->deps[k];
	if (d < 0 || !dp_coll(&ops[d]) || !x->dp[in->role].op[d].made)
		return;
	in->dpr[oi] = 1;
	in->ndeps[oi] = 0;
	op_ready(x, ii, oi);
}

static bool dp_gated_next(const struct exec *x, int32_t role, int32_t k);

/* DP group ops (dp_emit) of l's role at or before l's op still queued or
 * running (lo: at or below the first, amortised; found by review: a
 * scan from op 0 each time cost ZeRO-3 with 32 micro-batches 6 % of its
 * wall time). */
static bool dp_pending(struct exec *x, const struct launch *l)
{
	int32_t *lo = &x->dp[l->role].lo;
	while (*lo <= l->op && !x->dp[l->role].op[*lo].live)
		++*lo;
	return *lo <= l->op;
}


/* A data-parallel op whose end the rank waits on for more than the next
 * bucket (dp_emit): a successor other than a DP collective on its
 * stream (the optimizer after the last bucket; the compute stream after a
 * ZeRO-2 reduce-scatter on it), or none. */
static bool dp_sync(const struct exec *x, int32_t role, int32_t oi)
{
	const struct wl_op *ops = x->w->roles[role].ops;
	const int32_t *so = x->succ_off[role], *sc = x->succ[role];
	if (!dp_coll(&ops[oi]))
		return false;
	if (so[oi] == so[oi + 1])
		return true;
	for (int32_t k = so[oi]; k < so[oi + 1]; k++)
		if (!dp_coll(&ops[sc[k]]) || ops[sc[k]].stream != ops[oi].stream)
			return true;
	return false;
}

static void launch_done(struct exec *x, struct launch *l)
{
	const struct wl_op *op = &x->w->roles[l->role].ops[l->op];
	simtime_ps now = sim_now(&x->eng);
	if (l->bg) {
		int32_t role = l->role;
		struct launch *owner = NULL;
		if (l->dpbg) {
			/* each member's stream goes on to its next op (started
			 * from the event loop: this may run inside launch_go's
			 * use of ranks_buf) */
			for (int32_t i = 0; i < l->gn; i++) {
				struct launch *n = l->gnext[i];
				if (!n)
					x->dp_tail[l->granks[i]] = NULL;
				else if (++n->garrived == n->gn && !n->gslices)
					group_ready(x, n);
			}
			x->dp[role].op[l->op].live--;
			owner = l->owner;
			dp_slices_go(x, l);
			if (x->dp[role].op[l->op].own == l)
				x->dp[role].op[l->op].own = NULL;
			free(l->granks);
			free(l->gnext);
		}
		launch_unlink(x, l);
		free(l);
		if (owner)
			part_done(owner);
		if (x->dp && x->dp[role].held) {
			struct launch *h = x->dp[role].held, **pp = &x->dp[role].held;
			for (; h; h = *pp)
				if (dp_pending(x, h)) {
					pp = &h->held_next;
				} else {
					*pp = h->held_next;
					launch_done(x, h);
				}
		}
		return;
	}
	if (x->dp_bgon && x->dp[l->role].op[l->op].hold && dp_pending(x, l)) {
		/* its rank goes on, or ends, only once every DP group's ops up
		 * to this one are done too (dp_emit) */
		l->held_next = x->dp[l->role].held;
		x->dp[l->role].held = l;
		return;
	}
	if (l->memo_key && x->use_memo && !l->overlapped && !memo_find(&x->memo, l->memo_key)) {
		memo_put(&x->memo, l->memo_key, now - l->t_start);
		if (l->memo_an > 0 && isfinite(l->memo_an))
			memo_put(&x->memo, an0_key(l->memo_key), time_from_s(l->memo_an));
		if (x->tl)
			pick_put(&x->memo, l->memo_key, op_pick(x, l->waiters[0], l->op, l->size));
	}
	if (op->kind == WL_K_SEND) {
		/* the receiver's data has arrived */
		int32_t si = l->waiters[0], ri = peer_inst(x, si, op->peer_stage);
		struct inst *rin = &x->in[ri];
		if (x->in[si].jpp && x->in[si].jpp[l->op]) {
			/* the sender's ranks' lags, behind the data's arrival */
			double *lag = malloc((size_t)(rin->jn + 1) * sizeof(double));
			if (!lag) {
				set_err(x, TS_ENOMEM);
				return;
			}
			memcpy(lag, x->in[si].jpp[l->op], (size_t)rin->jn * sizeof(double));
			lag[rin->jn] = (double)now;
			free(rin->jpp[op->peer_op]);
			rin->jpp[op->peer_op] = lag;
			rin->jref[op->peer_op] = x->succ_off[rin->role][op->peer_op + 1] -
						 x->succ_off[rin->role][op->peer_op];
		}
		if (rin->arrived[op->peer_op] == 2)
			op_end(x, ri, op->peer_op);
		else
			rin->arrived[op->peer_op] = 1;
	}
	launch_unlink(x, l);
	for (int32_t i = 0; i < l->nwait; i++) {
		x->in[l->waiters[i]].jstart = l->t_start;
		op_end(x, l->waiters[i], l->op);
	}
	free(l->waiters);
	free(l);
}

static void ev_launch_done(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	(void)arg;
	struct launch *l = ctx;
	l->memo_ev = 0;
	if (l->memo_live) /* (and its rest's traffic: memo_materialise) */
		part_done(l);
	else
		launch_done(l->x, l);
}

static void part_done(struct launch *l)
{
	if (--l->left == 0)
		launch_done(l->x, l);
}

static void coll_done_cb(void *ctx, struct sim_coll *c)
{
	(void)c;
	part_done(ctx);
}

static void xfer_done_cb(void *ctx, uint64_t arg)
{
	(void)arg;
	part_done(ctx);
}

/* Rank r's slice of its role's erecv arrived: its DP groups waiting for it
 * may start (after its optimizer: their gdelay). */
static void slice_arrived(struct exec *x, uint32_t arg)
{
	x->sl_state[arg] = 2;
	for (struct dp_slw *q = x->slw[arg], *n; q; q = n) {
		n = q->next;
		if (--q->b->gslices == 0) {
			/* the group's last slice, for the breakdown (critical_path) */
			q->b->sl_t0 = x->sl_t0[arg];
			q->b->sl_t1 = sim_now(&x->eng);
			if (q->b->garrived == q->b->gn)
				group_ready(x, q->b);
		}
		free(q);
	}
	x->slw[arg] = NULL;
}

/* A pipeline send's transfer arrived (launch_go). arg: low 32 bits, the
 * receiving rank + 1 when the receive is its role's erecv; SLICE_OWN, the
 * representative's own slice of an early send (dp_early_send); 0 for any
 * other. */
static void slice_done_cb(void *ctx, uint64_t arg)
{
	struct launch *l = ctx;
	uint32_t rr = (uint32_t)arg;
	if (rr)
		slice_arrived(l->x, rr - 1);
	part_done(l);
}

/* Room for one more started collective in x->colls (made before it starts:
 * one that started and could not be kept leaked, found by review). A full
 * array first gives back the collectives that ended before now: their
 * callbacks have returned, and their errors pass to the run. Without
 * this every plan stayed to the end of the run: the vTrain set's 3.6B
 * model at tp 16 (two nodes) with micro-batch 2, flow, ran NCCL's tree
 * with a plan of some 0.4 MB per all-reduce and passed 3 GB at 4 layers. */
static int coll_room(struct exec *x)
{
	if (x->ncolls < x->capcolls)
		return 0;
	simtime_ps now = sim_now(&x->eng);
	int64_t k = 0;
	for (int64_t i = 0; i < x->ncolls; i++) {
		struct sim_coll *c = x->colls[i];
		simtime_ps end = sim_coll_end_time(c);
		if (end >= 0 && end < now) {
			if (sim_coll_error(c))
				set_err(x, sim_coll_error(c));
			sim_coll_free(c);
		} else {
			x->colls[k++] = c;
		}
	}
	x->ncolls = k;
	if (x->ncolls > x->capcolls / 2 || x->capcolls == 0) {
		/* still over half full: grow, so scans stay amortised O(1) */
		int64_t nc = x->capcolls ? x->capcolls * 2 : 16;
		struct sim_coll **n = realloc(x->colls, (size_t)nc * sizeof(*n));
		if (!n)
			return TS_ENOMEM;
		x->colls = n;
		x->capcolls = nc;
	}
	return 0;
}

static int cmp_gpu_host(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Steady-state ring (see the file comment): one flow per edge and channel. */
static int fluid_ring(struct exec *x, struct launch *l, const int32_t *ranks, int n, enum sim_op op,
		      double size)
{
	int32_t *g = malloc((size_t)n * sizeof(int32_t)), *ord = malloc((size_t)n * sizeof(int32_t));
	int32_t path[TOPO_MAX_HOPS];
	int gpn = x->t->cl.node.gpus, nch, rc = 0, ppn = 1, run = 1, nodes = 1;
	double steps = op == SIM_OP_ALLREDUCE ? 2.0 * (n - 1) : n - 1, per, inter;
	simtime_ps lat;
	if (!g || !ord) {
		rc = TS_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		g[i] = gpu_of(x, ranks[i]);
	qsort(g, (size_t)n, sizeof(int32_t), cmp_gpu_host);
	for (int i = 1; i < n; i++) {
		run = topo_gpu_host(x->t, g[i]) == topo_gpu_host(x->t, g[i - 1]) ? run + 1 : 1;
		if (run > ppn)
			ppn = run;
		nodes += run == 1;
	}
	/* NCCL: one ring per local GPU (its NIC) across nodes; 2 otherwise. */
	nch = ppn > 1 && ppn < n ? ppn : 2;
	per = steps / n * size / nch * (1 / sim_proto_eff(SIM_PROTO_SIMPLE));
	/* latency: NCCL's ring latency (nccl.md §1.4): base + the steps that
	 * stay in a node at the intra-node hop latency + the steps that cross
	 * nodes, 2(nodes - 1) for an all-reduce and nodes - 1 otherwise, at
	 * the network's (was: every step at the network's, 14 us on NVLink
	 * hops too, 3x too slow for a 72-rank DP all-reduce) */
	inter = nodes > 1 ? (op == SIM_OP_ALLREDUCE ? 2.0 : 1.0) * (nodes - 1) : 0;
	/* (a host's hops at PCIe's latency where the GPUs sit on PCIe; found
	 * by review: NVLink's always) */
	lat = time_from_us(sim_nccl_base_lat_us(SIM_ALGO_RING, SIM_PROTO_SIMPLE) +
			   (steps - inter) *
				   sim_nccl_ring_hop_lat_us(x->t->cl.node.intra == TOPO_INTRA_NVSWITCH ?
								    SIM_HW_NVLINK :
								    SIM_HW_PCI,
							    SIM_PROTO_SIMPLE, nodes, ppn, x->t->cl.node.cpu) +
			   inter * sim_nccl_ring_hop_lat_us(SIM_HW_NET, SIM_PROTO_SIMPLE, nodes, ppn,
							    x->t->cl.node.cpu));
	(void)gpn;
	if (l->rest > 0) /* (a memoised op's rest) */
		lat = 0;
	for (int c = 0; c < nch; c++) {
		/* hosts in order, GPUs of each host rotated by the channel, odd
		 * hosts walked backwards: a ring leaves a host and enters the
		 * next through the same local GPU index, its NIC rail, as
		 * collective.c's build_rings and NCCL (NCCL_CROSS_NIC=0) do (was:
		 * from GPU c-1 to GPU c, across rails, so through the spine, where
		 * ECMP collisions cost a 72-rank all-reduce 2.5x its time) */
		int j = 0;
		for (int i = 0, hi = 0; i < n; hi++) {
			int h = topo_gpu_host(x->t, g[i]), len = 0;
			while (i + len < n && topo_gpu_host(x->t, g[i + len]) == h)
				len++;
			for (int k = 0; k < len; k++)
				ord[j++] = g[i + sim_ring_local(hi, k, c, len)];
			i += len;
		}
		for (int i = 0; i < n; i++) {
			int32_t a = ord[i], b = ord[(i + 1) % n];
			/* (the group's, whatever the op, as its collectives'
			 * in start_group; not salted as theirs per channel) */
			uint64_t hash = rng_hash2(x->o->seed ^ ((uint64_t)(uint32_t)ranks[0] << 20),
						  (uint64_t)c << 32 | (uint64_t)i);
			/* --routing spray: the edge over its equal-cost paths, as
			 * the collectives send (coll_send) and the analytic level
			 * prices it (found by review, 2026-12-05: one hashed path
			 * here, so a sprayed DP ring of over 64 ranks ran as ECMP,
			 * 47 % above the analytic level on a 2:1 leaf-spine) */
			int64_t np = sim_spray_paths(x->t, a, b, x->o->spray);
			if (np > 1 && x->net.kind == SIM_FLOW) {
				l->left++;
				x->nflows++;
				rc = sim_send_sprayed(&x->net, x->t, a, b, hash, np, false, per, lat,
						      xfer_done_cb, l, 0);
				if (rc) {
					l->left--;
					goto out;
				}
				continue;
			}
			/* its hashed path (np 1), or at packet level a part per path */
			for (int64_t k = 0; k < np; k++) {
				int hops = sim_spray_route(x->t, a, b, hash, np, k, path);
				if (hops < 0) {
					rc = hops;
					goto out;
				}
				l->left++;
				x->nflows++;
				rc = sim_net_send(&x->net, path, hops, per / (double)np, lat, xfer_done_cb, l, 0);
				if (rc) {
					l->left--;
					goto out;
				}
			}
		}
	}
out:
	free(g);
	free(ord);
	return rc;
}

/* Index of the drawn expert load of expert slot s (slot_of), micro-batch j
 * and decoder layer l among mm micro-batches and L layers. */
static size_t load_ix(int s, int mm, int j, int L, int l)
{
	return ((size_t)s * mm + j) * L + l;
}

/* Unit u's image load of micro-batch j (vis: per DP rank, the CP ranks of
 * a position share its sample): the largest of its positions'. */
/* An image load's forward FLOPs over the mean's. */
static double vscore(const struct exec *x, struct vload v)
{
	return (1 - x->vw_att) * v.lin + x->vw_att * v.att;
}

static struct vload unit_vis(const struct exec *x, const struct vload *vis, int u, int mm, int j)
{
	struct vload v = { 0, 0 };
	for (int pos = u * x->U; pos < (u + 1) * x->U; pos++) {
		struct vload a = vis[(size_t)(pos / x->p->cp) * mm + j];
		if (vscore(x, a) > vscore(x, v))
			v = a;
	}
	return v;
}

/* Unit u's expert load of micro-batch j at layer l: the largest of its
 * expert slots'. */
static float unit_exp(const struct exec *x, const float *exp_, int u, int mm, int j, int l)
{
	float e = 0;
	for (int sl = u * x->U * x->es; sl < (u + 1) * x->U * x->es; sl++) {
		float b = exp_[load_ix(sl, mm, j, x->nle, l)];
		e = b > e ? b : e;
	}
	return e;
}

/* An EP all-to-all of routed tokens is an alltoallv: what each member
 * receives (dispatch and its backward, towards the experts) or sends
 * (combine and its backward) follows its drawn load in the op's layer and
 * micro-batch. */
static bool ep_weighted(const struct exec *x, const struct wl_op *op)
{
	return x->loads && op->vary == WL_V_EXPERT && op->dim == WL_D_EP && op->micro >= 0 &&
	       op->layer >= 0;
}

/* The members' loads of the EP group of (tpi, pos) in w (returns w), or
 * NULL for a uniform exchange. */
static const double *ep_weights(const struct exec *x, const struct wl_op *op, int tpi, int pos,
				double *w)
{
	int ep = x->p->ep, mm = x->w->micro, base = slot_of(x, tpi, pos) / ep * ep;
	if (!ep_weighted(x, op))
		return NULL;
	for (int i = 0; i < ep; i++)
		w[i] = x->loads[load_ix(base + i, mm, op->micro, x->nle, op->layer)];
	return w;
}

static int big_tree_s(struct exec *x, const int32_t *ranks, int n, double size, double ring_s,
		      double *tree_s, struct coll_pick *tree_pk);

/* Key of a group's collective in an_memo: tag (what is kept, and the op),
 * the group's size, the bytes and the ranks in order. */
static uint64_t ranks_key(uint64_t tag, int n, double size, const int32_t *ranks)
{
	uint64_t sz, key;
	memcpy(&sz, &size, sizeof(sz));
	key = rng_hash2(tag ^ (uint64_t)(uint32_t)n, sz);
	for (int i = 0; i < n; i++)
		key = rng_hash2(key, (uint64_t)(uint32_t)ranks[i]);
	return key | 1;
}

/* The ECMP salt of a group's first draw (the analytic level's routes). */
static uint64_t draw0_hash(const struct exec *x, const int32_t *ranks)
{
	return rng_hash2(x->o->seed, (uint64_t)(uint32_t)ranks[0] << 20);
}

/* NCCL's tuner picks the algorithm and protocol per communicator and size,
 * blind to any one operation's ECMP draw: picked once per (op, size,
 * ranks) on the group's first draw of routes, as the analytic level
 * prices it, and kept. Before, the flow level priced every candidate
 * again for every operation on that operation's own draw (found
 * profiling llama3-70b tp 8 pp 4 on 16 DGX H100 nodes at flow level: 95 %
 * of its 11.2 s wall), and identical operations of one group could pick
 * differently. */
static int nccl_pick(struct exec *x, struct sim_coll_spec *s)
{
	uint64_t key = ranks_key(0x7069636bULL << 40 ^ (uint64_t)s->op << 32, s->nranks,
				 s->size_bytes, s->ranks);
	struct coll_pick pk = pick_get(&x->an_memo, key);
	struct sim_coll_spec c;
	int rc;
	if (pk.algo == SIM_ALGO_AUTO) {
		c = *s;
		c.hash = draw0_hash(x, s->ranks);
		if ((rc = sim_coll_choose(x->t, &c, &pk.algo, &pk.proto, x->errp)))
			return rc;
		pick_put(&x->an_memo, key, pk);
	}
	s->algo = pk.algo;
	s->proto = pk.proto;
	return 0;
}

/* Context parallelism's ring attention exchange (Transformer Engine's
 * p2p form): each step one send and one receive per rank, so it runs as a
 * one-channel ring, each hop on one path (one NIC across nodes), not as
 * NCCL's all-gather over every channel (found by review: cp 16 over two
 * nodes priced its exchange over 8 NICs, 374 us a layer where the hops
 * take 2.9 ms). */
static bool cp_ring_op(const struct wl_op *op)
{
	return op->dim == WL_D_CP && op->phase != WL_P_DP &&
	       (op->coll == WL_C_ALLGATHER || op->coll == WL_C_REDUCESCATTER);
}

/* NCCL's choice for s, or the ring attention's one-channel ring. */
static int coll_choose(struct exec *x, const struct wl_op *op, struct sim_coll_spec *s)
{
	if (cp_ring_op(op)) {
		s->algo = SIM_ALGO_RING;
		s->proto = SIM_PROTO_SIMPLE;
		s->channels = 1;
		return 0;
	}
	return nccl_pick(x, s);
}

static void ev_part_done(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	(void)arg;
	part_done(ctx);
}

/* The collective of op over group ranks (n) with size bytes a rank, at
 * the loads w (an alltoallv's; NULL: even) into *s; its algorithm,
 * protocol and ECMP salt are the caller's. */
static void op_spec(struct sim_coll_spec *s, const struct wl_op *op, double size,
		    const int32_t *ranks, int n, const double *w)
{
	sim_coll_spec_init(s);
	s->op = sim_op_of(op->coll);
	s->size_bytes = size;
	s->nranks = n;
	s->ranks = ranks;
	s->weights = w;
	s->weight_by_sender = !op->inbound;
}

/* Start one group's collective on the network (w: its alltoallv loads). */
static int start_group(struct exec *x, struct launch *l, const int32_t *ranks, int n,
		       const struct wl_op *op, const double *w)
{
	struct sim_coll_spec s;
	struct sim_coll *c = NULL;
	int rc;
	enum sim_op sop = sim_op_of(op->coll);
	if (n < 2)
		return 0;
	if (n > FLUID_MIN_RANKS && sop == SIM_OP_ALLREDUCE) {
		/* NCCL's tree or NVLSTree when its model beats the ring
		 * (big_tree_s): priced by the model, without flows (cached by
		 * op, size and ranks) */
		uint64_t key = ranks_key(0x62696774726565ULL, n, l->size, ranks);
		struct memo *mm;
		struct coll_pick pk = { SIM_ALGO_TREE, SIM_PROTO_SIMPLE };
		double tree = INFINITY;
		if ((mm = memo_find(&x->an_memo, key))) {
			tree = mm->dur > 0 ? time_to_s(mm->dur) : INFINITY;
			pk = pick_get(&x->an_memo, key);
		} else {
			if ((rc = big_tree_s(x, ranks, n, l->size, -1, &tree, &pk)))
				return rc;
			memo_put(&x->an_memo, key, tree <= SIM_HORIZON_S ? time_from_s(tree) : 0);
			pick_put(&x->an_memo, key, pk);
		}
		if (tree <= SIM_HORIZON_S) {
			note_pick(x, l, pk, ranks, n);
			l->left++;
			/* (a memoised op's rest: its share of the time, latency
			 * and all) */
			if (!sim_after(&x->eng, time_from_s(l->rest > 0 ? tree * l->rest : tree),
				       ev_part_done, l, 0)) {
				l->left--;
				return TS_ENOMEM;
			}
			return 0;
		}
	}
	if (n > FLUID_MIN_RANKS && sop != SIM_OP_ALLTOALL) {
		note_pick(x, l, (struct coll_pick){ SIM_ALGO_RING, SIM_PROTO_SIMPLE }, ranks, n);
		if ((rc = fluid_ring(x, l, ranks, n, sop, launch_bytes(l))))
			return rc;
		x->colls_started++; /* its flows are on the network, as a sim_coll's */
		return 0;
	}
	op_spec(&s, op, l->size, ranks, n, w);
	/* the group's ECMP draw, the same for all its collectives: NCCL makes
	 * a communicator's connections (queue pairs, whose UDP ports or
	 * routes the switches hash) once and keeps them (found by a
	 * metamorphic audit: drawn per op index, so a plan that added ops
	 * before a DP all-reduce, such as recompute, moved its paths: exposed
	 * DP 0.43 -> 0.29 s on a 2:1 leaf-spine); the analytic level's first
	 * draw. Keyed by the group's first rank, as the analytic draws are:
	 * two groups that start at one rank (a DP and an expert-DP group)
	 * share it, which correlates their paths where real communicators'
	 * would be independent (found by review; left) */
	s.hash = draw0_hash(x, ranks);
	if (sop == SIM_OP_ALLTOALL) {
		s.algo = SIM_ALGO_DIRECT;
		s.proto = SIM_PROTO_SIMPLE;
	} else if ((rc = coll_choose(x, op, &s)))
		return rc;
	/* a memoised op's rest: the algorithm of the whole op, its share of
	 * the bytes, no latency */
	s.size_bytes = launch_bytes(l);
	s.no_latency = l->rest > 0;
	note_pick(x, l, (struct coll_pick){ s.algo, s.proto }, ranks, n);
	if ((rc = coll_room(x)))
		return rc;
	l->left++;
	rc = sim_coll_start(&x->net, x->t, &s, coll_done_cb, l, &c, x->errp);
	if (rc) {
		l->left--;
		return rc;
	}
	x->nflows += (uint64_t)n;
	x->colls[x->ncolls++] = c;
	x->colls_started++;
	return 0;
}

/* Cache an analytic duration under key (0: not cached), and the pick it
 * was priced as (pk; NULL for sends); *sec becomes the value a cache hit
 * returns (rounded to the engine's time unit). Beyond the horizon nothing
 * is kept: after_s refuses the run. */
static void an_keep(struct exec *x, uint64_t key, double *sec, const struct coll_pick *pk)
{
	if (*sec <= SIM_HORIZON_S) {
		if (key)
			memo_put(&x->an_memo, key, time_from_s(*sec));
		*sec = time_to_s(time_from_s(*sec));
	}
	if (pk)
		pick_put(&x->an_memo, key, *pk);
}

/* An all-reduce over more than FLUID_MIN_RANKS ranks: NCCL's tree when its
 * cost model beats the ring's time ring_s over the group (< 0: the ring
 * alone, analytic), priced by that model (sim_tree_model; the tree's plan
 * is not built at this size); the tree's time into *tree_s (INFINITY: the
 * ring stays) and its protocol into *tree_pr. Found by review:
 * such groups always ran as rings, whose latency (2(n-1) steps) costs a
 * 1,024-rank all-reduce about 9.7 ms where NCCL's tuner takes its tree. */
static int big_tree_s(struct exec *x, const int32_t *ranks, int n, double size, double ring_s,
		      double *tree_s, struct coll_pick *tree_pk)
{
	struct sim_coll_spec s;
	double t0, tn;
	int rc;
	*tree_s = INFINITY;
	tree_pk->algo = SIM_ALGO_TREE;
	sim_coll_spec_init(&s);
	s.op = SIM_OP_ALLREDUCE;
	s.algo = SIM_ALGO_RING;
	s.proto = SIM_PROTO_SIMPLE;
	s.size_bytes = 1; /* the ring's latency, as the model has it */
	s.nranks = n;
	s.ranks = ranks;
	if ((rc = sim_coll_analytic_groups(x->t, &s, 1, x->o->spray, &t0, x->errp)))
		return rc;
	s.size_bytes = size;
	if (ring_s < 0 && (rc = sim_coll_analytic_groups(x->t, &s, 1, x->o->spray, &ring_s, x->errp)))
		return rc;
	if ((rc = sim_tree_model(x->t, &s, ring_s - t0, &tree_pk->proto, tree_s, x->errp)))
		return rc;
	/* and NCCL's NVLSTree where the nodes have NVLink SHARP (2026-12-06:
	 * groups this large took the tree or the ring only) */
	s.hash = draw0_hash(x, ranks);
	if ((rc = sim_nvls_tree_model(x->t, &s, ring_s - t0, &tn, x->errp)))
		return rc;
	if (tn < *tree_s) {
		*tree_s = tn;
		*tree_pk = (struct coll_pick){ SIM_ALGO_NVLSTREE, SIM_PROTO_SIMPLE };
	}
	if (!(*tree_s < ring_s))
		*tree_s = INFINITY;
	return 0;
}

/* Analytic duration of one group's collective (alpha-beta on the topology).
 * The result depends only on the op, the size and the ranks, so it is
 * cached under a hash of exactly those (building the algorithm's transfer
 * plan for every candidate is what costs). */
static int analytic_group(struct exec *x, const int32_t *ranks, int n, const struct wl_op *op,
			  double size, const double *w, double *sec, struct coll_pick *pk)
{
	struct sim_coll_spec s;
	struct memo *mm;
	uint64_t key;
	int rc;
	*sec = 0;
	if (n < 2)
		return 0;
	op_spec(&s, op, size, ranks, n, w);
	s.hash = draw0_hash(x, ranks);
	key = ranks_key((uint64_t)s.op << 32 | (uint64_t)cp_ring_op(op) << 40, n, size, ranks);
	/* (an alltoallv's loads differ from op to op: not cached) */
	if (!w && (mm = memo_find(&x->an_memo, key))) {
		*sec = time_to_s(mm->dur);
		*pk = pick_get(&x->an_memo, key);
		return 0;
	}
	if (s.op == SIM_OP_ALLTOALL) {
		s.algo = SIM_ALGO_DIRECT;
		s.proto = SIM_PROTO_SIMPLE;
	} else if (n > FLUID_MIN_RANKS) {
		/* as the flow model runs it: a steady-state ring (fluid_ring) */
		s.algo = SIM_ALGO_RING;
		s.proto = SIM_PROTO_SIMPLE;
	} else if ((rc = coll_choose(x, op, &s)))
		return rc;
	if ((rc = sim_coll_analytic_groups(x->t, &s, 1, x->o->spray, sec, x->errp)))
		return rc;
	pk->algo = s.algo;
	pk->proto = s.proto;
	if (n > FLUID_MIN_RANKS && s.op == SIM_OP_ALLREDUCE) {
		double tr;
		struct coll_pick tp;
		if ((rc = big_tree_s(x, ranks, n, size, *sec, &tr, &tp)))
			return rc;
		if (tr < *sec) {
			*sec = tr;
			*pk = tp;
		}
	}
	an_keep(x, w ? 0 : key, sec, pk);
	return 0;
}

/* Whether the group of `dim` holding (tpi, pos) has it as its first
 * member, so each group is counted once when positions and TP ranks are
 * walked. */
static bool group_lead(const struct exec *x, int dim, int tpi, int pos)
{
	switch (dim) {
	case WL_D_TP: return true;
	case WL_D_CP: return pos % x->p->cp == 0;
	case WL_D_EP: return slot_of(x, tpi, pos) % x->p->ep == 0;
	case WL_D_TPEP:
		return x->es > 1 ? slot_of(x, tpi, pos) % x->p->ep == 0
				 : tpi == 0 && pos % x->p->ep == 0;
	case WL_D_DP: return pos == 0;
	default: return slot_of(x, tpi, pos) < x->p->ep; /* WL_D_EDP */
	}
}

/* Folded, an alltoallv whose groups stay inside one host (one stands for
 * all): of the groups the representative at unit position pos stands for,
 * the one with the busiest member, into (tpi, pos) (found by review: the
 * first group stood for all, under whole experts with ep < tp one of
 * several, and the fold came out up to 0.7 % under --exact). */
static void heaviest_group(const struct exec *x, const struct wl_op *op, int *tpi, int *pos)
{
	double best = -1;
	int p0 = *pos;
	if (x->o->exact || !ep_weighted(x, op))
		return;
	for (int q = p0; q < p0 + x->U; q++)
		for (int ti = 0; ti < x->p->tp; ti++) {
			const double *w;
			double most = 0;
			if (!group_lead(x, op->dim, ti, q))
				continue;
			w = ep_weights(x, op, ti, q, x->wbuf);
			for (int i = 0; i < x->p->ep; i++)
				most = w[i] > most ? w[i] : most;
			if (most > best) {
				best = most;
				*tpi = ti;
				*pos = q;
			}
		}
}

/* Each group its ECMP salt of draw d, as each communicator has its own
 * (one salt for all would send every group's i-th connection down the
 * same spine). */
static void draw_hashes(const struct exec *x, struct sim_coll_spec *s, int ng, int d)
{
	for (int g = 0; g < ng; g++)
		s[g].hash = rng_hash2(x->o->seed + (uint64_t)d, (uint64_t)(uint32_t)s[g].ranks[0] << 20);
}

/* AN_ECMP_DRAWS where a group's members reach each other over equal-cost
 * paths and connections hash onto one of them, else 1. */
static int an_draws(const struct exec *x, const struct sim_coll_spec *s, int ng)
{
	/* sprayed, a transfer takes an even share of its paths: no hash to
	 * draw (beyond SIM_SPRAY_MAX_PATHS paths the strided set's offset
	 * is one, a small residue) */
	if (x->o->spray)
		return 1;
	/* (point-to-point sends take PXN's routes: a cross-rail pair keeps to
	 * one rail, often one path; found by review: DeepSeek-V3 on 256 nodes
	 * drew 8 identical times, 2.0 s wall against 0.33) */
	for (int g = 0; g < ng; g++) {
		bool p2p = sim_op_p2p(s[g].op);
		for (int i = 0; i < s[g].nranks; i++) {
			int32_t a = gpu_of(x, s[g].ranks[0]), b = gpu_of(x, s[g].ranks[i]);
			if ((p2p ? sim_p2p_paths(x->t, a, b, true) : topo_route_count(x->t, a, b)) > 1)
				return AN_ECMP_DRAWS;
		}
	}
	return 1;
}

/* Compile the alltoallv set s (its groups and routes, per ECMP draw) into
 * a new cache entry under key. */
static int a2a_compile_set(struct exec *x, struct sim_coll_spec *s, int ng, uint64_t key,
			   struct a2a_entry **out)
{
	struct a2a_entry *en;
	if (x->na2a == x->capa2a) {
		int32_t nc = x->capa2a ? 2 * x->capa2a : 16;
		struct a2a_entry *g = realloc(x->a2a, (size_t)nc * sizeof(*g));
		if (!g)
			return ts_error_set(x->errp, TS_ENOMEM, "out of memory");
		x->a2a = g;
		x->capa2a = nc;
	}
	en = &x->a2a[x->na2a++];
	memset(en, 0, sizeof(*en));
	en->key = key;
	en->draws = an_draws(x, s, ng);
	for (int d = 0; d < en->draws; d++) {
		int rc;
		draw_hashes(x, s, ng, d);
		rc = sim_a2a_compile(x->t, s, ng, x->o->spray, &en->a[d], x->errp);
		if (rc == 1)
			continue;
		if (rc)
			return rc;
		en->ok[d] = true;
		if (en->a[d].nlinks > x->a2a_ldcap) {
			double *l = realloc(x->a2a_ld, (size_t)en->a[d].nlinks * sizeof(double));
			if (!l)
				return ts_error_set(x->errp, TS_ENOMEM, "out of memory");
			x->a2a_ld = l;
			x->a2a_ldcap = en->a[d].nlinks;
		}
	}
	*out = en;
	return 0;
}

/* Time of the alltoallv set s (ng groups, member weights w) at size:
 * its compiled model, found under key or compiled now, averaged over its
 * ECMP draws (a draw it could not compile priced in full). Adds to *sec. */
static int a2a_set_time(struct exec *x, struct sim_coll_spec *s, int ng, uint64_t key,
			const double *w, double size, double *sec)
{
	struct a2a_entry *en = NULL;
	int rc;
	for (int32_t i = 0; i < x->na2a && !en; i++)
		if (x->a2a[i].key == key)
			en = &x->a2a[i];
	if (!en && (rc = a2a_compile_set(x, s, ng, key, &en)))
		return rc;
	for (int d = 0; d < en->draws; d++) {
		double t1;
		if (en->ok[d]) {
			t1 = sim_a2a_time(&en->a[d], w, size, x->a2a_ld);
		} else {
			draw_hashes(x, s, ng, d);
			if ((rc = sim_coll_analytic_groups(x->t, s, ng, x->o->spray, &t1, x->errp)))
				return rc;
		}
		*sec += t1 / en->draws;
	}
	return 0;
}

/* Analytic duration of a collective run by every group of `dim` in the
 * stage at once (as they are in the iteration: the eight DP groups of a
 * tp-8 stage share their nodes' NICs). The per-link loads of all groups add
 * up (sim_coll_analytic_groups), so the bottleneck is the most loaded link
 * of the whole set, as the flow model finds it. Groups that stay inside one
 * host use private NVLink ports: one stands for all. Each group has its
 * own ECMP salt; where equal-cost paths exist, the time is the mean over
 * AN_ECMP_DRAWS draws. The set depends only on (dim, stage), so the time is
 * cached under (op, size, dim, stage). */
static int analytic_concurrent(struct exec *x, const struct wl_op *op, int stage, int tpi,
			       int pos, double size, double *sec, struct coll_pick *pk)
{
	int dim = op->dim, tpn = dim == WL_D_TP ? 1 : x->p->tp, ng = 0, nr = 0, rc, draws = 1;
	struct sim_coll_spec *s = NULL;
	int32_t *r = NULL;
	double *wt = NULL;
	struct memo *mm;
	uint64_t key, sz;
	bool weighted = ep_weighted(x, op);
	*sec = 0;
	if (x->local[dim]) {
		int n;
		heaviest_group(x, op, &tpi, &pos);
		n = group_ranks(x, dim, tpi, pos, stage, x->ranks_buf);
		return analytic_group(x, x->ranks_buf, n, op, size, ep_weights(x, op, tpi, pos, x->wbuf),
				      sec, pk);
	}
	memcpy(&sz, &size, sizeof(sz));
	key = rng_hash2(0x616e616c79746963ULL ^ ((uint64_t)op->coll << 40 | (uint64_t)dim << 32 |
						  (uint64_t)(uint32_t)stage),
			sz) | 1;
	/* an alltoallv's loads differ from op to op, but not between the ops
	 * of one (layer, micro-batch) that move the same tokens the same way
	 * (the dispatch, its recompute and the combine's backward): cached
	 * under those and the run that drew the loads */
	if (weighted)
		key = rng_hash2(rng_hash2(key, x->run_gen << 1 | op->inbound),
				(uint64_t)(uint32_t)op->layer << 32 | (uint32_t)op->micro) | 1;
	if ((mm = memo_find(&x->an_memo, key))) {
		*sec = time_to_s(mm->dur);
		*pk = pick_get(&x->an_memo, key);
		return 0;
	}
	/* every rank of the stage is in exactly one group of dim */
	r = malloc((size_t)x->p->tp * (size_t)x->D * sizeof(*r));
	s = malloc((size_t)x->p->tp * (size_t)x->D * sizeof(*s));
	if (weighted)
		wt = malloc((size_t)x->p->tp * (size_t)x->D * sizeof(*wt));
	if (!r || !s || (weighted && !wt)) {
		rc = ts_error_set(x->errp, TS_ENOMEM, "out of memory");
		goto out;
	}
	for (int q = 0; q < x->D; q++) {
		for (int ti = 0; ti < tpn; ti++) {
			int n;
			if (!group_lead(x, dim, ti, q))
				continue;
			n = group_ranks(x, dim, ti, q, stage, r + nr);
			if (n < 2)
				continue;
			op_spec(&s[ng], op, size, r + nr, n,
				weighted ? ep_weights(x, op, ti, q, wt + nr) : NULL);
			s[ng].hash = draw0_hash(x, r + nr);
			nr += n;
			ng++;
		}
	}
	rc = 0;
	if (ng == 0)
		goto out;
	/* NCCL picks per communicator; the groups are alike, so the first's choice */
	if (s[0].op == SIM_OP_ALLTOALL) {
		s[0].algo = SIM_ALGO_DIRECT;
		s[0].proto = SIM_PROTO_SIMPLE;
	} else if (s[0].nranks > FLUID_MIN_RANKS) {
		/* as the flow model runs it: a steady-state ring (fluid_ring;
		 * NCCL might pick its tree at middle sizes: not modelled) */
		s[0].algo = SIM_ALGO_RING;
		s[0].proto = SIM_PROTO_SIMPLE;
	} else if ((rc = coll_choose(x, op, &s[0]))) {
		goto out;
	}
	for (int g = 1; g < ng; g++) {
		s[g].algo = s[0].algo;
		s[g].proto = s[0].proto;
		s[g].channels = s[0].channels;
	}
	pk->algo = s[0].algo;
	pk->proto = s[0].proto;
	if (weighted) {
		/* the set's loads differ from op to op, its groups and routes do
		 * not: priced by its compiled model (found while planning
		 * DeepSeek-V3: EP 64 across nodes took minutes at analytic
		 * fidelity, each all-to-all planned and routed again) */
		uint64_t k2 = rng_hash2(0x6132616361636865ULL,
					(uint64_t)op->coll << 40 | (uint64_t)dim << 32 |
						(uint64_t)(uint32_t)stage << 1 | op->inbound);
		if ((rc = a2a_set_time(x, s, ng, k2, wt, size, sec)))
			goto out;
		an_keep(x, key, sec, pk);
		goto out;
	}
	draws = an_draws(x, s, ng);
	/* where connections hash over equal-cost paths, the mean over draws
	 * of the salts (the flow model keeps the first draw, the group's) */
	for (int d = 0; d < draws; d++) {
		double t1;
		draw_hashes(x, s, ng, d);
		if ((rc = sim_coll_analytic_groups(x->t, s, ng, x->o->spray, &t1, x->errp)))
			goto out;
		*sec += t1 / draws;
	}
	if (s[0].nranks > FLUID_MIN_RANKS && s[0].op == SIM_OP_ALLREDUCE) {
		/* (the rings' bandwidth time as the groups share links) */
		double tr;
		struct coll_pick tp;
		if ((rc = big_tree_s(x, s[0].ranks, s[0].nranks, size, *sec, &tr, &tp)))
			goto out;
		if (tr < *sec) {
			*sec = tr;
			*pk = tp;
		}
	}
	an_keep(x, weighted ? 0 : key, sec, pk);
out:
	free(r);
	free(s);
	free(wt);
	return rc;
}

static bool unit_covered(const struct exec *x, int32_t k, int u);

/* Whether a launch of instance in0 waits for unit u's traffic (its own
 * unit; all it covers when units are placed unalike, as slow as the
 * slowest), else that traffic is background (unit_launch). */
static bool unit_waited(const struct exec *x, const struct inst *in0, int u)
{
	return x->o->exact || !x->alike || u == x->sim_unit[in0->unit];
}

/* Analytic time of the alltoallv op of `stage` for the EP group holding
 * (tpi, pos), priced alone at its drawn loads by the group's compiled
 * model (cached per group). */
static int group_a2a_s(struct exec *x, const struct wl_op *op, int stage, int tpi, int pos,
		       double size, double *sec)
{
	struct sim_coll_spec s;
	int32_t *r = x->ranks_buf;
	const double *w;
	uint64_t k2;
	int n;
	*sec = 0;
	n = group_ranks(x, op->dim, tpi, pos, stage, r);
	if (n < 2)
		return 0;
	w = ep_weights(x, op, tpi, pos, x->wbuf);
	op_spec(&s, op, size, r, n, w);
	s.algo = SIM_ALGO_DIRECT;
	s.proto = SIM_PROTO_SIMPLE;
	k2 = rng_hash2(0x6f776e613261ULL ^ ((uint64_t)op->coll << 40 | (uint64_t)op->dim << 32 |
					    (uint64_t)op->inbound),
		       (uint64_t)(uint32_t)r[0]);
	return a2a_set_time(x, &s, 1, k2, w, size, sec);
}

/* Analytic time of the alltoallv op of instance in0's `stage` as its
 * launch waits for it: its own group (--exact); folded, the heaviest group
 * its representative stands for where a host's group stands for all (as
 * the launch runs it), else the slowest group of the units it waits for
 * (its own, or every unit it covers where they are placed unalike), each
 * priced alone (group_a2a_s). The memo scales by it (found by review: the
 * whole stage's set of groups, whose bottleneck follows the busiest group,
 * put a memoised iteration at the analytic level's bias, +6 % at an
 * expert imbalance of 3 with two EP groups across nodes a stage). */
static int own_a2a_s(struct exec *x, const struct wl_op *op, int stage, const struct inst *in0,
		     double size, double *sec)
{
	int dim = op->dim, tpn = dim == WL_D_TP ? 1 : x->p->tp, rc;
	*sec = 0;
	if (x->o->exact || x->one_for_all[dim]) {
		/* (heaviest_group keeps --exact's own group) */
		int ti = x->o->exact ? in0->tpi : 0, q = in0->pos;
		heaviest_group(x, op, &ti, &q);
		return group_a2a_s(x, op, stage, ti, q, size, sec);
	}
	for (int u = 0; u < x->nunits; u++) {
		if (!unit_covered(x, in0->unit, u) || !unit_waited(x, in0, u))
			continue;
		for (int pos = u * x->U; pos < (u + 1) * x->U; pos++)
			for (int ti = 0; ti < tpn; ti++) {
				double t;
				if (!group_lead(x, dim, ti, pos))
					continue;
				if ((rc = group_a2a_s(x, op, stage, ti, pos, size, &t)))
					return rc;
				if (t > *sec)
					*sec = t;
			}
	}
	return 0;
}

/* Analytic duration of a stage-to-stage send that every rank of the stage
 * makes at once (1F1B moves all tp x dp activation slices together): bytes
 * add up on each link of each sender's route, and the time is the longest
 * route's latency plus the most loaded link's bytes over its bandwidth.
 * Cached under (stage, peer, size). */
static int analytic_sends(struct exec *x, int stage, int peer, double size, double *sec)
{
	const struct topo *t = x->t;
	double *load, lat = 0, bw = 0;
	struct memo *mm;
	uint64_t key, sz;
	*sec = 0;
	memcpy(&sz, &size, sizeof(sz));
	key = rng_hash2(0x73656e6473ULL ^ ((uint64_t)(uint32_t)stage << 32 | (uint64_t)(uint32_t)peer),
			sz) | 1;
	if ((mm = memo_find(&x->an_memo, key))) {
		*sec = time_to_s(mm->dur);
		return 0;
	}
	load = calloc((size_t)t->nlinks, sizeof(*load));
	if (!load)
		return ts_error_set(x->errp, TS_ENOMEM, "out of memory");
	for (int q = 0; q < x->D; q++)
		for (int ti = 0; ti < x->p->tp; ti++) {
			int32_t a = gpu_of(x, rank_of(x, ti, q, stage));
			int32_t b = gpu_of(x, rank_of(x, ti, q, peer));
			int32_t path[TOPO_MAX_HOPS];
			uint64_t hash = rng_hash2(x->o->seed, (uint64_t)a << 32 | (uint64_t)b);
			/* one path by hash, or (spray) an even share on each of up
			 * to SIM_SPRAY_MAX_PATHS equal-cost paths, as the analytic
			 * collectives take them */
			int64_t np = sim_p2p_paths(t, a, b, x->o->spray);
			double pl = 0;
			for (int64_t k = 0; k < np; k++) {
				int hops = sim_p2p_route(t, a, b, hash, np, k, path);
				if (hops < 0) {
					free(load);
					return ts_error_set(x->errp, hops, "no route from GPU %d to GPU %d",
							    a, b);
				}
				pl = 0;
				for (int h = 0; h < hops; h++) {
					load[path[h]] += np > 1 ? size / (double)np : size;
					pl += time_to_s(t->links[path[h]].lat_ps);
				}
			}
			if (sim_tcp_hop(t, a, b)) {
				/* TCP's host costs, as the flow model charges them */
				pl += t->cl.fabric.tcp_msg_s;
				if (size * t->cl.fabric.tcp_byte_s > bw)
					bw = size * t->cl.fabric.tcp_byte_s;
			}
			if (pl > lat)
				lat = pl;
		}
	for (int32_t i = 0; i < t->nlinks; i++)
		if (load[i] > 0 && load[i] / t->links[i].bw_Bps > bw)
			bw = load[i] / t->links[i].bw_Bps;
	free(load);
	*sec = lat + bw;
	an_keep(x, key, sec, NULL);
	return 0;
}

/* Units (data-parallel blocks) a folded instance's communication covers. */
static bool unit_covered(const struct exec *x, int32_t k, int u)
{
	return x->unit_of[u] == k;
}

/* Folded: the launch that carries the traffic of unit u: l for the
 * representative's own unit, else *bg, made on first use, whose transfers
 * nobody waits for. The units a representative stands for run their
 * exchanges in step with it, loading the links as theirs would, but each
 * ends on its own: waiting for the slowest took, op after op, the largest
 * of their times where every unit keeps its own (Qwen3-VL-30B-A3B on 64
 * dgx-h100-ndr nodes, EP 8, flow level: 13 % over --exact). NULL: out of
 * memory. */
static struct launch *unit_launch(struct exec *x, struct launch *l, struct launch **bg, int u)
{
	if (unit_waited(x, &x->in[l->waiters[0]], u))
		return l;
	if (!*bg) {
		struct launch *b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		b->x = x;
		b->role = l->role;
		b->op = l->op;
		b->size = l->size;
		b->t_start = l->t_start;
		b->bg = true;
		b->net = l->net;
		b->hk = l->hk;
		b->rest = l->rest;
		launch_link(x, b);
		*bg = b;
	}
	return *bg;
}

/* The payload per rank of communication op op of instance in, bytes. */
static double launch_size(const struct exec *x, const struct wl_op *op, const struct inst *in)
{
	/* traffic of the vision encoder follows the representative's drawn
	 * image load, as its compute does (the group is inside it) */
	if (op->vary == WL_V_VISION && op->micro >= 0)
		return op->size_bytes * in->vis_f[op->micro].lin;
	if (op->vary == WL_V_EXPERT && in->exp_f && op->micro >= 0 && op->layer >= 0 &&
	    op->dim != WL_D_EP) {
		/* routed tokens: the TP group's gather moves what its experts
		 * received (an EP all-to-all is an alltoallv: ep_weights) */
		return op->size_bytes * in->exp_f[(size_t)op->micro * x->nle + op->layer];
	}
	return op->size_bytes;
}

/* Folded: whether a data-parallel group (ranks r) is the representatives'
 * own: a DP group joins one position of every unit, so the
 * representatives of role's units meet in theirs, at the same position of
 * each. */
static bool dp_own(const struct exec *x, int32_t role, const int32_t *r, int n)
{
	const struct inst *in0 = &x->in[role * x->K];
	int32_t me = rank_of(x, in0->tpi, in0->pos, role);
	for (int i = 0; i < n; i++)
		if (r[i] == me)
			return true;
	return false;
}

/* Group op b's collective starts. */
static void ev_group_go(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	(void)arg;
	struct launch *b = ctx;
	struct exec *x = b->x;
	const struct wl_op *op = &x->w->roles[b->role].ops[b->op];
	int rc;
	b->t_start = sim_now(&x->eng);
	if (b->owner) {
		for (int32_t i = 0; i < b->owner->nwait; i++)
			x->in[b->owner->waiters[i]].xfer[b->op] = b->t_start;
		x->dp[b->role].op[b->op].sl_t0 = b->sl_t0;
		x->dp[b->role].op[b->op].sl_t1 = b->sl_t1;
	}
	if ((rc = start_group(x, b, b->granks, b->gn, op,
			      ep_weights(x, op, b->gti, b->gpos, x->wbuf)))) {
		set_err(x, rc);
		return;
	}
	if (b->left == 0)
		after_s(x, 0, ev_launch_done, b, 0, op->name);
}

/* Every member's DP stream reached group op b: it starts, after each
 * member's copy of its parameter shard from host memory where it gathers
 * host-resident parameters (op_start's). */
static void group_ready(struct exec *x, struct launch *b)
{
	const struct wl_op *op = &x->w->roles[b->role].ops[b->op];
	double fetch = op->bytes > 0 && x->comp.host_link_Bps > 0 ? op->bytes / x->comp.host_link_Bps : 0;
	after_s(x, fetch + b->gdelay, ev_group_go, b, 0, op->name);
}

/* Folded: the group led by (ti, pos), ranks r, runs op oi of role once each
 * member's DP stream ran its earlier ops. */
static int dp_group_op(struct exec *x, int32_t role, int32_t oi, double size, int ti, int pos,
		       const int32_t *r, int n, double delay)
{
	struct launch *b = calloc(1, sizeof(*b));
	if (!b)
		return TS_ENOMEM;
	b->gdelay = delay;
	b->x = x;
	b->role = role;
	b->op = oi;
	b->size = size;
	b->bg = b->dpbg = true;
	b->gti = ti;
	b->gpos = pos;
	b->gn = n;
	launch_link(x, b); /* (queued or running: freed at release if a run stops) */
	b->granks = malloc((size_t)n * sizeof(*b->granks));
	b->gnext = calloc((size_t)n, sizeof(*b->gnext));
	if (!b->granks || !b->gnext)
		return TS_ENOMEM;
	memcpy(b->granks, r, (size_t)n * sizeof(*r));
	x->dp[role].op[oi].live++;
	if (oi < x->dp[role].lo)
		x->dp[role].lo = oi;
	if (dp_own(x, role, r, n))
		x->dp[role].op[oi].own = b;
	for (int i = 0; i < n; i++) {
		struct launch **t = x->dp_tail[r[i]];
		if (t)
			*t = b;
		else
			b->garrived++;
		x->dp_tail[r[i]] = &b->gnext[i];
		if (x->dp[role].op[oi].after_erecv && x->sl_state[r[i]] != 2) {
			/* the member's optimizer waits for its slice */
			struct dp_slw *q = malloc(sizeof(*q));
			if (!q)
				return TS_ENOMEM;
			q->b = b;
			q->next = x->slw[r[i]];
			x->slw[r[i]] = q;
			b->gslices++;
		}
	}
	if (b->garrived == n && !b->gslices)
		group_ready(x, b);
	return x->err;
}

static bool dp_chained(const struct wl_op *from, const struct wl_op *to)
{
	return dp_coll(from) && dp_coll(to) && from->stream == to->stream;
}

/* Whether op oi of role waits, through its deps, for op k (deps point to
 * earlier ops; past 64 levels or 4,096 visits, taken to). */
static bool op_follows(const struct exec *x, int32_t role, int32_t oi, int32_t k, int depth,
		       int *budget)
{
	const struct wl_op *op = &x->w->roles[role].ops[oi];
	if (oi == k)
		return true;
	if (oi < k)
		return false;
	if (depth > 64 || --*budget < 0)
		return true;
	for (int d = 0; d < op->ndeps; d++)
		if (op_follows(x, role, op->deps[d], k, depth + 1, budget))
			return true;
	return false;
}

/* The longest run of optimizer-phase compute from DP op k to op oi, along
 * deps (but k's own and pipeline sends that do not follow k), at nominal
 * speed, into *t; false where oi does not follow k by such ops alone. */
static bool opt_path_s(const struct exec *x, int32_t role, int32_t oi, int32_t k, int depth,
		       double *t, bool *via)
{
	const struct wl_op *op = &x->w->roles[role].ops[oi];
	double best = 0, u;
	if (oi == k) {
		*t = 0;
		*via = true;
		return true;
	}
	if (op->kind != WL_K_COMPUTE || op->phase != WL_P_OPT || op->ndeps == 0 || depth > 16)
		return false;
	for (int d = 0; d < op->ndeps; d++) {
		/* (k's own deps, done before it, and a pipeline send that does
		 * not follow k (the backward's last, which the optimizer waits
		 * for) are taken as done by then, the same for every group) */
		const struct wl_op *kop = &x->w->roles[role].ops[k];
		const struct wl_op *dop = &x->w->roles[role].ops[op->deps[d]];
		bool before = false;
		int budget = 4096;
		for (int e = 0; e < kop->ndeps; e++)
			before |= kop->deps[e] == op->deps[d];
		if (before || (dop->kind == WL_K_SEND && dop->phase != WL_P_DP &&
			       !op_follows(x, role, op->deps[d], k, 0, &budget)))
			continue;
		if (!opt_path_s(x, role, op->deps[d], k, depth + 1, &u, via))
			return false;
		best = u > best ? u : best;
	}
	*t = best + op_compute_s(x, op, 1);
	return true;
}

/* Whether DP op oi waits, off its DP stream, only for its rank's optimizer
 * after its previous DP op k: then each group's ranks run it that long
 * after their own op k (*delay), not when the representatives do. */
static bool dp_gated(const struct exec *x, int32_t role, int32_t oi, int32_t k, double *delay)
{
	const struct wl_op *op = &x->w->roles[role].ops[oi];
	bool any = false;
	*delay = 0;
	for (int d = 0; d < op->ndeps; d++) {
		double t;
		bool via = false;
		if (op->deps[d] == k)
			continue;
		/* a path that never waits for k (rooted at what k itself
		 * waited for: top-k compression's selection, which runs beside
		 * the previous bucket's all-gather) starts before k ends, not
		 * after it: not gated (found by review: every other group's
		 * expert-DP all-gather started the selection's time after its
		 * previous all-gather ended, 2.7 ms late, Qwen3-VL-30B-A3B tp 2
		 * EP 4 with top-k, +1.27 % over --exact) */
		if (!opt_path_s(x, role, op->deps[d], k, 0, &t, &via) || !via)
			return false;
		any = true;
		*delay = t > *delay ? t : *delay;
	}
	return any;
}

/* Whether a DP op after DP op k is dp_gated on it: then k's rank goes on
 * (to its optimizer) without waiting for the other groups, which run that
 * op after their own k. */
static bool dp_gated_next(const struct exec *x, int32_t role, int32_t k)
{
	const struct wl_op *ops = x->w->roles[role].ops;
	const int32_t *so = x->succ_off[role], *sc = x->succ[role];
	for (int32_t i = so[k]; i < so[k + 1]; i++) {
		double delay;
		if (dp_chained(&ops[k], &ops[sc[i]]) && dp_gated(x, role, sc[i], k, &delay))
			return true;
	}
	return false;
}

/* Make the group ops of op oi of role: every group's, the
 * representatives' own only (own), or all but theirs, each delay after
 * its members' streams reach it (bg). */
static void dp_groups(struct exec *x, int32_t role, int32_t oi, bool own, bool bg, double delay,
		      double own_delay)
{
	const struct wl_op *op = &x->w->roles[role].ops[oi];
	double size = launch_size(x, op, &x->in[role * x->K]);
	int32_t *r = x->ranks_buf;
	for (int pos = 0; pos < x->D && size > 0 && !x->err; pos++)
		for (int ti = 0; ti < x->p->tp && !x->err; ti++) {
			int n, rc;
			bool mine;
			if (!group_lead(x, op->dim, ti, pos))
				continue;
			n = group_ranks(x, op->dim, ti, pos, role, r);
			mine = dp_own(x, role, r, n);
			if (n >= 2 && ((mine && own) || (!mine && bg)) &&
			    (rc = dp_group_op(x, role, oi, size, ti, pos, r, n, mine ? own_delay : delay)))
				set_err(x, rc);
		}
}

/* Folded flow: every DP group's ops run from its members' streams, each in
 * turn (as --exact's ranks' DP streams do), from when the representatives
 * are ready for them (their deps off the DP stream ended: the ranks they
 * stand for are ready then); the representatives' own group's op ends
 * their launch (launch_go). Waiting for all groups at every bucket took the
 * slowest ring each time (Qwen3-VL-2B on an ECMP leaf-spine, 8 nodes, tp 8,
 * overlap.dp: +2.5 to +13.7 % over --exact at seeds 1-6); starting the
 * others with the representatives' own put a late ring's buckets behind
 * the own ring's (+4.6 % at seed 4), and chaining each group alone let a
 * rank's DP and expert-DP rings overlap (Qwen3-VL-30B-A3B, 8 nodes, tp 2,
 * EP 8: +3.8 % mean over 20 seeds). An op leading
 * to anything but the next bucket (dp_sync) is held until every group's
 * ops up to it ended: the iteration waits for its slowest rank. An op that
 * waits only for the optimizer after the previous one (the distributed
 * optimizer's parameter all-gather) runs in each other group that long
 * after the group's own previous op (dp_gated): held behind the slowest
 * ring, every group's gather started late (Qwen3-VL-8B, tp 4, on an ECMP
 * leaf-spine: +6.5 % at seed 3). Op oi of role is made once ready and
 * after the ops before it on its stream. */
static void dp_emit(struct exec *x, int32_t role, int32_t oi)
{
	const struct wl_role *ro = &x->w->roles[role];
	const struct wl_op *op = &ro->ops[oi];
	const int32_t *so = x->succ_off[role], *sc = x->succ[role];
	bool nonchain = false;
	double erd = 0;
	if (x->dp[role].op[oi].made || x->err)
		return;
	for (int d = 0; d < op->ndeps; d++) {
		if (!dp_chained(&ro->ops[op->deps[d]], op))
			nonchain = true;
		else if (!x->dp[role].op[op->deps[d]].made)
			return;
	}
	if (nonchain && x->dp[role].op[oi].ready_n < x->K &&
	    !(x->dp[role].op[oi].after_erecv && x->dp[role].erecv_go))
		return;
	x->dp[role].op[oi].made = 1;
	if (x->dp[role].op[oi].after_erecv && x->dp[role].erecv_go) {
		/* made when the ranks' other deps ended (dp_erecv_posted):
		 * each group starts after its members' optimizer, when their
		 * slices arrived and their streams reached it, unless its
		 * stream predecessor came after that optimizer too */
		bool first = true;
		for (int d = 0; d < op->ndeps; d++)
			if (dp_chained(&ro->ops[op->deps[d]], op) && x->dp[role].op[op->deps[d]].after_erecv)
				first = false;
		erd = first ? x->dp[role].erecv_opt_s : 0;
	}
	dp_groups(x, role, oi, true, !x->dp[role].op[oi].bgmade, erd, erd);
	for (int32_t k = so[oi]; k < so[oi + 1]; k++)
		for (int32_t i = 0; i < x->K; i++)
			dp_early_send(x, role * x->K + i, sc[k]);
	for (int32_t k = so[oi]; k < so[oi + 1]; k++) {
		double delay;
		if (!dp_chained(op, &ro->ops[sc[k]]))
			continue;
		if (!x->dp[role].op[sc[k]].bgmade && dp_gated(x, role, sc[k], oi, &delay)) {
			x->dp[role].op[sc[k]].bgmade = 1;
			dp_groups(x, role, sc[k], false, true, delay, 0);
		}
		dp_emit(x, role, sc[k]);
	}
}

/* Instance ii's op oi ended: a DP collective after it whose deps off its DP
 * stream have all ended counts this representative ready (dp_emit). */
static void dp_ready(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_op *ops = x->w->roles[in->role].ops;
	const int32_t *so = x->succ_off[in->role], *sc = x->succ[in->role];
	for (int32_t k = so[oi]; k < so[oi + 1]; k++) {
		const struct wl_op *s = &ops[sc[k]];
		bool all = true;
		if (!dp_coll(s) || in->dpr[sc[k]] || dp_chained(&ops[oi], s))
			continue;
		for (int d = 0; d < s->ndeps && all; d++)
			if (!dp_chained(&ops[s->deps[d]], s))
				all = in->t1[s->deps[d]] >= 0;
		if (!all)
			continue;
		in->dpr[sc[k]] = 1;
		if (++x->dp[in->role].op[sc[k]].ready_n == x->K)
			dp_emit(x, in->role, sc[k]);
	}
}

/* The DP group op of op k of role that rank r is in, queued or running;
 * NULL: done. */
static struct launch *dp_slice_gate(struct exec *x, int32_t role, int32_t k, int32_t r)
{
	for (struct launch *b = x->inflight; b; b = b->fnext)
		if (b->dpbg && b->role == role && b->op == k)
			for (int32_t i = 0; i < b->gn; i++)
				if (b->granks[i] == r)
					return b;
	return NULL;
}

/* Instance ii posted its role's erecv, or ended an op that ops after it
 * wait for: once it posted it and every other op the DP ops after it wait
 * for has ended, the ranks it stands for are ready for them when their own
 * slice arrived and their optimizer ran; when every representative is,
 * those ops are made, each group op waiting for its members' slices
 * (dp_group_op) and then their optimizer (dp_emit), not for the
 * representatives' receive, which ends with the slowest slice. With the
 * distributed optimizer, each group gathers its parameters after its own
 * members' slices: waiting for the representatives' started every group's
 * gather at once, behind the slowest (Qwen3-VL-2B tp 8 pp 2 interleaved,
 * fat-tree-k8.json with one GPU a node: +1.5 / -0.1 / +0.2 / -1.4 % over
 * --exact at seeds 1-4; now 0.00 % at each). */
static void dp_erecv_posted(struct exec *x, int32_t ii)
{
	struct inst *in = &x->in[ii];
	const struct wl_role *ro = &x->w->roles[in->role];
	struct dp_role *dr = &x->dp[in->role];
	if (in->t0[dr->erecv] < 0 || in->dpr[dr->erecv])
		return;
	for (int32_t j = dr->erecv + 1; j < ro->nops; j++) {
		if (!dr->op[j].down)
			continue;
		for (int d = 0; d < ro->ops[j].ndeps; d++) {
			int32_t k = ro->ops[j].deps[d];
			if (k != dr->erecv && !dr->op[k].down && in->t1[k] < 0)
				return;
		}
	}
	in->dpr[dr->erecv] = 1;
	if (++dr->erecv_posted < x->K)
		return;
	dr->erecv_go = true;
	for (int32_t j = dr->erecv + 1; j < ro->nops && !x->err; j++)
		if (dr->op[j].after_erecv)
			dp_emit(x, in->role, j);
}

/* Start the traffic of launch l on the network, l->size a rank (launch_go;
 * memo_materialise the rest of a memoised one): its transfers or groups
 * counted in l->left (or its units' background launch), or at the
 * analytic level the time into *an. gate, track, rgate: launch_go's. */
static int launch_traffic(struct exec *x, struct launch *l, int32_t gate, bool track,
			  int32_t rgate, double *an)
{
	const struct wl_op *op = &x->w->roles[l->role].ops[l->op];
	const struct inst *in0 = &x->in[l->waiters[0]];
	struct launch *bg = NULL, *to;
	int32_t *r = x->ranks_buf;
	int rc = 0, n;
	if (op->kind == WL_K_SEND) {
		/* every rank the sender stands for sends its activation slice */
		int tpn = x->o->exact ? 1 : x->p->tp;
		for (int u = 0; u < x->nunits && !rc; u++) {
			if (!x->o->exact && !unit_covered(x, in0->unit, u))
				continue;
			for (int pos = u * x->U; pos < (u + 1) * x->U && !rc; pos++) {
				if (x->o->exact && pos != in0->pos)
					continue;
				for (int ti = 0; ti < tpn && !rc; ti++) {
					int tpi = x->o->exact ? in0->tpi : ti;
					int32_t a = gpu_of(x, rank_of(x, tpi, pos, l->role));
					int32_t b = gpu_of(x, rank_of(x, tpi, pos, op->peer_stage));
					int32_t path[TOPO_MAX_HOPS];
					bool same = topo_gpu_host(x->t, a) == topo_gpu_host(x->t, b);
					int hops;
					double lat_us;
					uint64_t arg = 0; /* slice_done_cb's: a plain transfer */
					if (x->o->fidelity == SIM_ANALYTIC)
						continue;
					if (!x->o->exact && same && (pos != in0->pos || ti) && !track)
						continue; /* private NVLink ports: one stands for all */
					if (!(to = unit_launch(x, l, &bg, u))) {
						rc = TS_ENOMEM;
						break;
					}
					uint64_t hash = rng_hash2(x->o->seed, (uint64_t)a << 32 | (uint64_t)b);
					hops = sim_p2p_route(x->t, a, b, hash, 1, 0, path);
					if (hops < 0) { /* (a route exists: checked here) */
						rc = hops;
						break;
					}
					lat_us = sim_nccl_hw_lat_us(same ? SIM_HW_NVLINK : SIM_HW_NET, SIM_ALGO_RING,
								    SIM_PROTO_SIMPLE);
					to->left++;
					if (gate >= 0 || track || rgate >= 0) {
						int32_t rr = rank_of(x, tpi, pos, op->peer_stage);
						struct launch *g = gate < 0 ? NULL :
							dp_slice_gate(x, l->role, gate, rank_of(x, tpi, pos, l->role));
						struct launch *g2 =
							rgate < 0 ? NULL : dp_slice_gate(x, op->peer_stage, rgate, rr);
						if (pos == in0->pos && tpi == 0)
							arg |= SLICE_OWN;
						if (track) {
							x->sl_state[rr] = 1;
							arg |= (uint64_t)(uint32_t)(rr + 1);
						}
						if (g || g2) { /* after its ranks' DP groups (dp_slices_go) */
							struct dp_slice *q = malloc(sizeof(*q));
							if (!q) {
								rc = TS_ENOMEM;
								break;
							}
							q->to = to;
							q->a = a;
							q->b = b;
							q->hash = hash;
							q->lat = time_from_us(lat_us);
							q->arg = arg;
							q->rrole = op->peer_stage;
							q->rk = g && g2 ? rgate : -1;
							q->rr = rr;
							if (!g)
								g = g2;
							q->next = g->slices;
							g->slices = q;
							continue;
						}
					}
					rc = slice_send(x, to, a, b, hash, time_from_us(lat_us), arg,
							gate >= 0 || rgate >= 0);
					if (rc)
						to->left--;
				}
			}
		}
		if (x->o->fidelity == SIM_ANALYTIC) {
			rc = analytic_sends(x, l->role, op->peer_stage, l->size, an);
		}
	} else if (x->o->fidelity == SIM_ANALYTIC) {
		/* folded or exact alike: every group of the stage at once */
		struct coll_pick pk = { SIM_ALGO_AUTO, SIM_PROTO_AUTO };
		rc = analytic_concurrent(x, op, l->role, in0->tpi, in0->pos, l->size, an, &pk);
		note_pick(x, l, pk, NULL, 0);
	} else if (x->o->exact) {
		n = group_ranks(x, op->dim, in0->tpi, in0->pos, l->role, r);
		rc = start_group(x, l, r, n, op, ep_weights(x, op, in0->tpi, in0->pos, x->wbuf));
	} else {
		/* folded: every group of this dim the arriving instances stand for */
		int dim = op->dim, tpn = dim == WL_D_TP ? 1 : x->p->tp;
		bool first = true, dp = dim == WL_D_DP || dim == WL_D_EDP;
		bool own = x->one_for_all[dim] && ep_weighted(x, op);
		if (dp && x->dp_bgon) {
			/* every group's op is dp_emit's, run from its members'
			 * streams; the representatives' own, queued or running
			 * (NULL: done), ends l */
			struct launch *o = x->dp[l->role].op[l->op].own;
			own = true;
			if (o) {
				o->owner = l;
				l->left++;
			}
		} else if (own) {
			/* one group inside a host stands for all: for an alltoallv,
			 * the representative's own, whose loads it computes with */
			int ti = 0, q = in0->pos;
			heaviest_group(x, op, &ti, &q);
			n = group_ranks(x, dim, ti, q, l->role, r);
			rc = start_group(x, l, r, n, op, ep_weights(x, op, ti, q, x->wbuf));
		}
		for (int u = 0; u < x->nunits && !rc && !own; u++) {
			if (!dp && !unit_covered(x, in0->unit, u))
				continue;
			for (int pos = u * x->U; pos < (u + 1) * x->U && !rc; pos++) {
				for (int ti = 0; ti < tpn && !rc; ti++) {
					/* the group's first member, so each group starts once */
					if (!group_lead(x, dim, ti, pos))
						continue;
					n = group_ranks(x, dim, ti, pos, l->role, r);
					if (x->one_for_all[dim] && !first)
						continue;
					first = false;
					/* (a host's group standing for all: the op's own) */
					to = dp || x->one_for_all[dim] ? l : unit_launch(x, l, &bg, u);
					rc = to ? start_group(x, to, r, n, op,
							      ep_weights(x, op, ti, pos, x->wbuf))
						: TS_ENOMEM;
				}
			}
		}
	}
	if (bg && bg->left == 0)
		launch_done(x, bg);
	return rc;
}

/* --memo 1 at flow and packet level: a collective's kept time stands for
 * a later one only where that runs alone, as its first did: a memoised
 * collective puts no traffic on the network, so what overlapped it ran
 * uncontended (found: ZeRO-3's parameter gathers beside the EP
 * all-to-alls, 0.7133 s memoised against 0.7730 s live). Launches that
 * may share links (memo_share) run live while they overlap, and the
 * time of one that overlapped another is not kept. */

/* The hosts of stage r's GPUs (k -1) or of its units simulated unit k
 * stands for. */
static uint64_t *role_hosts(const struct exec *x, int32_t r, int32_t k)
{
	return x->role_hosts + ((size_t)r * (size_t)(x->K + 1) + (size_t)(k + 1)) * (size_t)x->hwords;
}

/* Whether stage r1's GPUs of unit k1 and stage r2's of unit k2 share a host. */
static bool roles_share(const struct exec *x, int32_t r1, int32_t k1, int32_t r2, int32_t k2)
{
	const uint64_t *a = role_hosts(x, r1, k1), *b = role_hosts(x, r2, k2);
	for (int i = 0; i < x->hwords; i++)
		if (a[i] & b[i])
			return true;
	return false;
}

/* Whether launches a and b may share links: not the same op of a stage
 * (its groups and units launch it together each time, and its kept time
 * holds what they do to each other), and a stage of one (a pipeline
 * send's receiving stage too) shares a host with a stage of the other
 * (two pipeline sends: their sending stages, or their receiving stages;
 * a link carries each way apart). Assumptions: two ops of one stage on
 * hosts apart (--exact's groups) count as sharing; traffic between hosts
 * apart does not meet in the fabric (true where it is non-blocking and
 * spread; under ECMP the kept time holds the first one's collisions). */
static bool memo_share(const struct exec *x, const struct launch *a, const struct launch *b)
{
	const struct wl_op *oa = &x->w->roles[a->role].ops[a->op];
	const struct wl_op *ob = &x->w->roles[b->role].ops[b->op];
	int32_t ra[2] = { a->role, oa->kind == WL_K_SEND ? oa->peer_stage : a->role };
	int32_t rb[2] = { b->role, ob->kind == WL_K_SEND ? ob->peer_stage : b->role };
	if (a->role == b->role && a->op == b->op)
		return false;
	if (oa->kind == WL_K_SEND && ob->kind == WL_K_SEND)
		return roles_share(x, ra[0], a->hk, rb[0], b->hk) ||
		       roles_share(x, ra[1], a->hk, rb[1], b->hk);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (roles_share(x, ra[i], a->hk, rb[j], b->hk))
				return true;
	return false;
}

static int role_hosts_build(struct exec *x)
{
	int32_t P = x->w->nroles;
	x->hwords = (int)((x->t->nhosts + 63) / 64);
	x->role_hosts = calloc((size_t)P * (size_t)(x->K + 1) * (size_t)x->hwords, sizeof(uint64_t));
	if (!x->role_hosts)
		return TS_ENOMEM;
	for (int32_t s = 0; s < P; s++)
		for (int pos = 0; pos < x->D; pos++)
			for (int ti = 0; ti < x->p->tp; ti++) {
				int h = topo_gpu_host(x->t, gpu_of(x, rank_of(x, ti, pos, s)));
				role_hosts(x, s, -1)[h / 64] |= 1ull << (h % 64);
				if (!x->o->exact)
					role_hosts(x, s, x->unit_of[pos / x->U])[h / 64] |= 1ull << (h % 64);
			}
	return 0;
}

/* A memoised launch that another now overlaps: the rest of its kept time
 * runs live, as the same traffic with that share of its bytes and
 * without latency (paid in the kept time), and it ends at the later of
 * its kept end and that traffic's: alone it keeps its time, slowed it
 * ends later. */
static int memo_materialise(struct exec *x, struct launch *l)
{
	simtime_ps now = sim_now(&x->eng);
	double an = 0;
	if (l->memo_end <= now) /* (its end is due now) */
		return 0;
	l->memo_ev = 0;
	l->memo_live = true;
	l->left = 1; /* its kept end (ev_launch_done) */
	l->rest = (double)(l->memo_end - now) / (double)(l->memo_end - l->t_start);
	return launch_traffic(x, l, -1, false, -1, &an);
}

/* Launch l is about to start (l->net): whether a launch that may share
 * its links is in flight; each such one, and l, is marked overlapped,
 * and a memoised one runs the rest of its time live. */
static int memo_crowd(struct exec *x, struct launch *l, bool *crowded)
{
	int rc = 0;
	*crowded = false;
	if (!x->role_hosts && (rc = role_hosts_build(x)))
		return rc;
	for (struct launch *b = x->inflight, *n; b && !rc; b = n) {
		n = b->fnext;
		if (b == l || !b->net || !memo_share(x, l, b))
			continue;
		*crowded = true;
		b->overlapped = true;
		if (b->memo_ev)
			rc = memo_materialise(x, b);
	}
	if (*crowded)
		l->overlapped = true;
	return rc;
}

/* Start everything the launch stands for. */
static void launch_go(struct exec *x, struct launch *l)
{
	const struct wl_op *op = &x->w->roles[l->role].ops[l->op];
	const struct inst *in0 = &x->in[l->waiters[0]];
	struct memo *mm;
	int rc = 0;
	double an = 0;
	bool memo = x->use_memo && x->o->fidelity != SIM_ANALYTIC, crowded = false, hit = false;
	/* a send started early behind its DP op (dp_early_send): each slice
	 * waits for its rank's group (gate: the op); to its peer's erecv: each
	 * slice tracked (track) */
	int32_t gate = -1;
	bool track = op->kind == WL_K_SEND && x->dp_bgon &&
		     x->dp[op->peer_stage].erecv == op->peer_op;
	/* the tied embedding's, folded: each slice after its receiving
	 * rank's DP group too (dp_early_send posts the receive early) */
	bool tied = op->kind == WL_K_SEND && op->phase == WL_P_DP;
	int32_t rgate =
		tied && x->dp_bgon && !x->o->exact ? recv_dp(x, op->peer_stage, op->peer_op) : -1;
	if (op->kind == WL_K_SEND && !x->o->exact && in0->dpr[l->op])
		for (int d = 0; d < op->ndeps; d++)
			if (in0->t1[op->deps[d]] < 0) /* (the one dp_early_send found) */
				gate = op->deps[d];
	l->t_start = sim_now(&x->eng);
	launch_link(x, l);
	for (int32_t i = 0; i < l->nwait; i++) {
		if (x->in[l->waiters[i]].comm_inflight++ == 0)
			comp_rerate(x, l->waiters[i]);
		x->in[l->waiters[i]].xfer[l->op] = l->t_start;
	}
	l->size = launch_size(x, op, in0);
	if (x->o->free_comm || l->size <= 0)
		goto timer;
	if (memo) {
		l->net = true;
		/* a DP group joins every unit; else the units of its own
		 * representative's k */
		l->hk = x->o->exact || op->dim == WL_D_DP || op->dim == WL_D_EDP ? -1 : in0->unit;
		if ((rc = memo_crowd(x, l, &crowded))) {
			set_err(x, rc);
			return;
		}
	}
	if (memo && gate < 0 && !crowded &&
	    !(x->o->fidelity == SIM_PACKET && ep_weighted(x, op))) {
		/* (at packet level an alltoallv runs live: its queues' cost
		 * does not follow the analytic time it would be scaled by,
		 * found by review: a combine 14 % over it, a dispatch not) */
		int32_t lo = l->waiters[0];
		struct memo *m0 = NULL;
		for (int32_t i = 1; i < l->nwait; i++)
			if (l->waiters[i] < lo)
				lo = l->waiters[i];
		bool wtd = ep_weighted(x, op);
		/* an alltoallv's loads differ from op to op: the first one's
		 * time on the network, scaled by the analytic model's time of
		 * what its launch waits for (own_a2a_s) at this op's loads over
		 * that at the first's; where either is not a positive time, it
		 * runs live */
		if (wtd && (rc = own_a2a_s(x, op, l->role, in0, l->size, &l->memo_an))) {
			set_err(x, rc);
			return;
		}
		l->memo_key = memo_key(l->role, op, l->size, lo);
		if (wtd) /* a dispatch and a combine of the same bytes apart */
			l->memo_key = rng_hash2(l->memo_key, 0x696e62ULL + op->inbound) | 1;
		mm = memo_find(&x->memo, l->memo_key);
		if (mm && wtd &&
		    (!(l->memo_an > 0 && isfinite(l->memo_an)) ||
		     !(m0 = memo_find(&x->memo, an0_key(l->memo_key))) || m0->dur <= 0))
			mm = NULL;
		if (mm) {
			an = time_to_s(mm->dur);
			if (wtd)
				an *= l->memo_an / time_to_s(m0->dur);
			note_pick(x, l, pick_get(&x->memo, l->memo_key), NULL, 0);
			hit = true;
			goto timer;
		}
	}
	rc = launch_traffic(x, l, gate, track, rgate, &an);
	if (rc) {
		set_err(x, rc);
		return;
	}
	if (l->left > 0)
		return;
timer:
	if (after_s(x, an, ev_launch_done, l, 0, op->name) && hit) {
		l->memo_ev = x->last_ev;
		l->memo_end = l->t_start + time_from_s(an);
	}
}

/* Rendezvous: a communication op starts once every instance of its group
 * reached it. */
static void comm_arrive(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_op *op = &x->w->roles[in->role].ops[oi];
	int32_t need = 1;
	uint64_t key = (uint64_t)oi << 20 | (uint64_t)in->role;
	struct launch *l, **slot;
	if (in->jpp && in->jpp[oi]) /* its ranks' lags behind its arrival (jit_end) */
		in->jpp[oi][in->jn] = (double)sim_now(&x->eng);
	if (op->kind == WL_K_COLL) {
		if (x->o->exact) {
			int n = group_ranks(x, op->dim, in->tpi, in->pos, in->role, x->ranks_buf);
			need = n;
			key = rng_hash2(key, (uint64_t)x->ranks_buf[0] << 8 | op->dim);
		} else if (op->dim == WL_D_DP || op->dim == WL_D_EDP) {
			need = x->K;
		}
	}
	if (need <= 1) {
		l = calloc(1, sizeof(*l));
		if (l)
			l->waiters = malloc(sizeof(int32_t));
		if (!l || !l->waiters) {
			free(l);
			set_err(x, TS_ENOMEM);
			return;
		}
		l->x = x;
		l->role = in->role;
		l->op = oi;
		l->waiters[l->nwait++] = ii;
		launch_go(x, l);
		return;
	}
	slot = &x->rtab[rng_hash64(key) & (x->rcap - 1)];
	for (l = *slot; l && l->rkey != key; l = l->next)
		;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (l)
			l->waiters = malloc((size_t)need * sizeof(int32_t));
		if (!l || !l->waiters) {
			free(l);
			set_err(x, TS_ENOMEM);
			return;
		}
		l->x = x;
		l->role = in->role;
		l->op = oi;
		l->rkey = key;
		l->need = need;
		l->next = *slot;
		*slot = l;
	}
	l->waiters[l->nwait++] = ii;
	if (l->nwait == l->need) {
		struct launch **pp = slot;
		while (*pp != l)
			pp = &(*pp)->next;
		*pp = l->next;
		l->next = NULL;
		launch_go(x, l);
	}
}

static void ev_comm_arrive(struct sim_engine *e, void *ctx, uint64_t arg)
{
	(void)e;
	comm_arrive(ctx, (int32_t)(arg >> 32), (int32_t)(arg & 0xffffffffu));
}

static void op_ready(struct exec *x, int32_t ii, int32_t oi)
{
	struct inst *in = &x->in[ii];
	const struct wl_op *op = &x->w->roles[in->role].ops[oi];
	in->t0[oi] = sim_now(&x->eng);
	if (in->jit && jit_start(x, in, oi))
		return;
	/* a gather of host-resident parameters: the host-to-GPU copy of the
	 * rank's shard first (PCIe, the compute model's host link rate) */
	if (op->kind == WL_K_COLL && op->bytes > 0 && x->comp.host_link_Bps > 0) {
		after_s(x, op->bytes / x->comp.host_link_Bps, ev_comm_arrive, x, ev_arg(ii, oi),
			op->name);
		return;
	}
	switch (op->kind) {
	case WL_K_COMPUTE: compute_start(x, ii, oi); break;
	case WL_K_RECV: {
		bool parked = in->arrived[oi] == 3;
		if (x->dp_bgon && oi == x->dp[in->role].erecv)
			dp_erecv_posted(x, ii);
		if (in->arrived[oi] == 1)
			op_end(x, ii, oi);
		else
			in->arrived[oi] = 2;
		if (parked) /* the tied-embedding send that waited for it */
			comm_arrive(x, peer_inst(x, ii, op->peer_stage), op->peer_op);
		break;
	}
	case WL_K_SEND:
		if (op->phase == WL_P_DP) {
			/* the tied embedding's gradients: an all-reduce of the two
			 * ends (Megatron's _allreduce_embedding_grads after each
			 * end's DP sync, DeepSpeed's tied-module reduction), whose
			 * data moves once both have entered it: the send waits for
			 * its receiver to post the receive (found by review,
			 * 2026-12-04: it went as soon as the sender was done and
			 * met the receiver's own DP reduction on its NICs) */
			int32_t ri = peer_inst(x, ii, op->peer_stage);
			if (x->in[ri].t0[op->peer_op] < 0) {
				x->in[ri].arrived[op->peer_op] = 3;
				break;
			}
		}
		comm_arrive(x, ii, oi);
		break;
	default: comm_arrive(x, ii, oi); break;
	}
}

/* ---- set-up ------------------------------------------------------------------------ */

static int build_succ(struct exec *x)
{
	int P = x->w->nroles;
	x->succ_off = calloc((size_t)P, sizeof(*x->succ_off));
	x->succ = calloc((size_t)P, sizeof(*x->succ));
	if (!x->succ_off || !x->succ)
		return TS_ENOMEM;
	for (int s = 0; s < P; s++) {
		const struct wl_role *r = &x->w->roles[s];
		int32_t *off = calloc((size_t)r->nops + 1, sizeof(int32_t)), *fill;
		int32_t *sc;
		int64_t ne = 0;
		if (!off)
			return TS_ENOMEM;
		x->succ_off[s] = off;
		for (int32_t i = 0; i < r->nops; i++)
			for (int d = 0; d < r->ops[i].ndeps; d++)
				off[r->ops[i].deps[d] + 1]++, ne++;
		for (int32_t i = 0; i < r->nops; i++)
			off[i + 1] += off[i];
		sc = malloc((size_t)(ne ? ne : 1) * sizeof(int32_t));
		fill = calloc((size_t)r->nops + 1, sizeof(int32_t));
		if (!sc || !fill) {
			free(sc);
			free(fill);
			return TS_ENOMEM;
		}
		for (int32_t i = 0; i < r->nops; i++)
			for (int d = 0; d < r->ops[i].ndeps; d++) {
				int32_t from = r->ops[i].deps[d];
				sc[off[from] + fill[from]++] = i;
			}
		free(fill);
		x->succ[s] = sc;
	}
	return 0;
}

static int inst_alloc(struct exec *x, struct inst *in, int role, int mm)
{
	int32_t n = x->w->roles[role].nops;
	in->role = role;
	in->ndeps = malloc((size_t)n * sizeof(int16_t));
	in->t0 = malloc((size_t)n * sizeof(simtime_ps));
	in->t1 = malloc((size_t)n * sizeof(simtime_ps));
	in->xfer = calloc((size_t)n, sizeof(simtime_ps));
	in->arrived = calloc((size_t)n, 1);
	in->dpr = calloc((size_t)n, 1);
	in->vis_f = malloc((size_t)mm * sizeof(struct vload));
	if (x->nle) {
		in->exp_f = malloc((size_t)mm * x->nle * sizeof(float));
		if (!in->exp_f)
			return TS_ENOMEM;
	}
	/* folded --jitter: the noise of each rank of the unit and of the units
	 * it stands for (K of them simulated, beyond FOLD_EVERY_MAX), which a
	 * DP collective waits for too (was: K units stood for the slowest of K;
	 * llama3-8b, tp 1, pp 4, 256 nodes, jitter 0.1: -1.07 % under --exact,
	 * 0.00 % now) */
	if (x->o->jitter > 0 && !x->o->exact) {
		int32_t c = 0;
		for (int32_t u = 0; u < x->nunits; u++)
			c += x->unit_of[u] == in->unit;
		in->jn = x->p->tp * x->U * c;
	}
	if (in->jn > 1 &&
	    (!(in->jit = calloc((size_t)in->jn, sizeof(double))) || jit_ranks(x, in) ||
	     !(in->jpp = calloc((size_t)(in->njpp = n), sizeof(double *))) ||
	     !(in->jref = calloc((size_t)n, sizeof(int32_t))) ||
	     jit_groups(x, in) ||
	     (!x->jit_mx && !(x->jit_mx = malloc((size_t)x->p->tp * x->U *
						 ((x->nunits + x->K - 1) / x->K) * sizeof(double))))))
		return TS_ENOMEM;
	if (!in->ndeps || !in->t0 || !in->t1 || !in->xfer || !in->arrived || !in->dpr ||
	    !in->vis_f)
		return TS_ENOMEM;
	for (int32_t i = 0; i < n; i++) {
		in->ndeps[i] = (int16_t)x->w->roles[role].ops[i].ndeps;
		in->t0[i] = in->t1[i] = -1;
	}
	in->cpu_ps = 0;
	return 0;
}

static void inst_release(struct inst *in)
{
	free(in->ndeps);
	free(in->t0);
	free(in->t1);
	free(in->xfer);
	free(in->arrived);
	free(in->dpr);
	free(in->vis_f);
	free(in->exp_f);
	free(in->jit);
	free(in->jgid);
	free(in->jvis);
	free(in->jexp);
	for (int32_t i = 0; in->jpp && i < in->njpp; i++)
		free(in->jpp[i]);
	free(in->jpp);
	free(in->jref);
	free(in->jrank);
}

/* Draw one value of a plan distribution (GSL, seeded). */
static double draw(struct rng *g, const struct plan_dist *d)
{
	double v;
	switch (d->kind) {
	case PLAN_DIST_POISSON: return gsl_ran_poisson(g->r, d->mean);
	case PLAN_DIST_UNIFORM: return d->min + (d->max - d->min) * gsl_rng_uniform(g->r);
	case PLAN_DIST_LOGNORMAL: v = gsl_ran_lognormal(g->r, d->mean, d->sigma); return v;
	default: return d->value;
	}
}

/* A whole count drawn from d (images per sample) with d's mean: uniform
 * with whole bounds draws the counts min..max evenly; otherwise a draw's
 * fraction rounds up with that probability (a fixed 0.5 gives half the
 * samples one image; found by review: rounding to the nearest made 0.5
 * one image per sample and 0.4 none, while memory and MFU used the mean).
 * Whole draws take no extra number from the stream. */
static int draw_count(struct rng *g, const struct plan_dist *d)
{
	double v, k;
	if (d->kind == PLAN_DIST_UNIFORM && d->min == floor(d->min) && d->max == floor(d->max))
		return (int)d->min + (int)gsl_rng_uniform_int(g->r, (unsigned long)(d->max - d->min) + 1);
	v = draw(g, d);
	v = v > 0 ? v : 0;
	k = floor(v);
	if (v > k && gsl_rng_uniform(g->r) < v - k)
		k += 1;
	return k < INT_MAX ? (int)k : INT_MAX;
}

/* Multinomial counts of n trials over k categories of probabilities p
 * (summing to 1), as GSL's gsl_ran_multinomial draws them (a chain of
 * conditional binomials), but with each binomial of variance 50 or more
 * drawn from its normal approximation: a group's token assignments number
 * in the thousands to millions per draw, and a plan draws one per EP group,
 * micro-batch and MoE layer (millions at 16k GPUs), where exact binomials
 * took seconds. Counts are whole and add up to n. */
static void multinomial(const gsl_rng *r, int k, double n, const double *p, double *out)
{
	double left = round(n), rest = 1;
	for (int i = 0; i < k - 1; i++) {
		double q = rest > 0 ? p[i] / rest : 1, v, c;
		q = q < 0 ? 0 : q > 1 ? 1 : q;
		v = left * q * (1 - q);
		if (v >= 50)
			c = round(left * q + gsl_ran_gaussian_ziggurat(r, sqrt(v)));
		else if (left <= 4e9)
			c = gsl_ran_binomial(r, q, (unsigned int)left);
		else /* a rare category among very many trials */
			c = gsl_ran_poisson(r, left * q);
		c = c < 0 ? 0 : c > left ? left : c;
		out[i] = c;
		left -= c;
		rest -= p[i];
	}
	out[k - 1] = left;
}

/* What one source rank keeps for one expert under a capacity: the mean of
 * min(X, c) for its X ~ Binomial(n, q) token assignments to the expert.
 * A capacity of up to KEPT_EXACT_MAX tokens takes it exactly, E[min(X, c)]
 * = sum over k < floor(c) of P(X > k) + frac(c) P(X > floor(c)), the
 * pmf walked up from P(X = 0) = (1 - q)^n (an underflow there means X is
 * far above c: each P(X > k) is then 1 and the result c); a larger one the
 * normal approximation (mu = nq, sigma^2 = nq(1 - q)): mu - E[(X - c)+] =
 * mu - (sigma phi(z) + (mu - c) Q(z)), z = (c - mu)/sigma, which is good
 * there but went negative where a source sends an expert a fraction of a
 * token (found by fuzzing: 8,192 experts, capacity 1.25, an all-to-all
 * weight of -0.008), so it is also held to [0, min(mu, c)]. (The mean
 * rather than a draw: summed over the experts of a rank and the sources,
 * the tokens' own noise is a fraction of a percent.) */
#define KEPT_EXACT_MAX 64.0

static double kept_mean(double n, double q, double c)
{
	double mu = n * q, sd = sqrt(n * q * (1 - q)), z, k;
	double most = mu < c ? mu : c;
	if (!(sd > 0) || !(c > 0))
		return most > 0 ? most : 0;
	if (c >= n) /* X <= n <= c: every assignment kept */
		return mu;
	if (c <= KEPT_EXACT_MAX) {
		double pk = exp(n * log1p(-q)), cdf = 0, sum = 0, fl = floor(c), r = q / (1 - q);
		for (double j = 0; j <= fl; j++) {
			cdf += pk; /* P(X <= j) */
			double tail = cdf < 1 ? 1 - cdf : 0; /* P(X > j) */
			sum += j < fl ? tail : (c - fl) * tail;
			pk *= (n - j) / (j + 1) * r; /* (j < fl <= c < n: positive) */
		}
		return sum < most ? sum : most;
	}
	z = (c - mu) / sd;
	k = mu - (sd * gsl_ran_ugaussian_pdf(z) + (mu - c) * gsl_cdf_ugaussian_Q(z));
	return k < 0 ? 0 : k < most ? k : most;
}

/* Per replica and micro-batch vision load over the plan's mean (a sample's
 * drawn images take at most seq_len tokens: one that would overflow is cut
 * to what is left, as a data pipeline truncates to the context), and per DP x
 * CP position, micro-batch and decoder layer the load of the rank's experts
 * over the balanced load (exp_[(pos x mm + micro) x layers + layer]; 1 for
 * dense layers; not touched when x->nle is 0). *load_max: the mean over EP
 * groups, micro-batches and MoE layers of the group's largest load (0 when
 * nothing is drawn); *load_mean: the mean load of all of them (1 when
 * nothing is drawn; below 1 when tokens are dropped, the capacity when
 * padded).
 *
 * Routing (assumption): in each layer and micro-batch the T x top-k
 * assignments of an EP group fall on the E experts as a multinomial whose
 * probabilities are drawn from a symmetric Dirichlet with concentration
 * a = ((E - 1)/cv^2 - 1)/E, so that each expert's share has the plan's
 * coefficient of variation cv (expert_imbalance; its variance is
 * (1/E)(1 - 1/E)/(E a + 1)); cv 0 is a uniform router. Draws are
 * independent across layers and micro-batches (each layer has its own
 * router; which experts are hot also drifts with the data). Without a
 * capacity the ranks' loads are all that matters: by the Dirichlet's
 * aggregation property the E/ep experts of a rank have a Dirichlet share
 * with a x E/ep, so ep categories are drawn instead of E. With a capacity
 * (capacity_factor > 0; with or without EP) each source rank keeps at most
 * capacity x its balanced share per expert: the experts' probabilities are
 * drawn one by one, each source's kept tokens per expert taken at their
 * mean (kept_mean), and a rank keeps that fraction of the tokens drawn for
 * it (at most its capacity): the same draw as dropless, less the expected
 * drops, so a large capacity converges on dropless. cv is the spread of the
 * router's probabilities; the token counts spread a little more
 * (multinomial noise). */
static int draw_loads(struct exec *x, struct vload *vis, float *exp_, int mm, double *vis_fwd,
		      double *load_max, double *load_mean)
{
	const struct plan *p = x->p;
	const struct model *m = x->m;
	double mg2 = (double)m->vit.merge * m->vit.merge;
	double mean_img = plan_dist_mean(&p->images_per_sample);
	double mean_pat = plan_dist_mean(&p->image_tokens) * mg2;
	double fwd1 = m->has_vision ? model_vision_flops_fwd(m, mean_pat) : 0;
	double mean_n = mean_img * p->micro_batch; /* images of a micro-batch at the mean */
	int E = m->experts, ep = p->ep, L = m->layers;
	size_t n = (size_t)x->D * x->es * mm * x->nle;

	x->vw_att = fwd1 > 0 ? model_vision_attn_coef(m) * mean_pat * mean_pat / fwd1 : 0;
	*vis_fwd = 0;
	for (int r = 0; r < p->dp; r++)
		for (int j = 0; j < mm; j++) {
			double f = 0, tokens = 0, sq = 0;
			struct vload v = { 1, 1 };
			if (mean_n * fwd1 > 0) {
				for (int b = 0; b < p->micro_batch; b++) {
					/* (at most a token each: a draw of millions of
					 * images of a fraction of a token each ran
					 * billions of times, found by review) */
					int ni = draw_count(&x->rng, &p->images_per_sample);
					ni = ni < p->seq_len ? ni : p->seq_len;
					double room = p->seq_len; /* a sample's images fit in it */
					/* once the sequence is full the rest are cut to
					 * nothing (a count of millions ends here) */
					for (int i = 0; i < ni && room > 0; i++) {
						double tok = draw(&x->rng, &p->image_tokens);
						tok = tok < room ? tok : room;
						if (tok > 0) {
							f += model_vision_flops_fwd(m, tok * mg2);
							tokens += tok;
							sq += tok * mg2 * tok * mg2;
						}
						room -= tok > 0 ? tok : 0;
					}
				}
				*vis_fwd += f;
				v.lin = tokens * mg2 / (mean_n * mean_pat);
				v.att = sq / (mean_n * mean_pat * mean_pat);
				if (x->vtok) /* (memory: the images' activations) */
					x->vtok[(size_t)r * mm + j] = v.lin;
			}
			vis[(size_t)r * mm + j] = v;
		}
	for (size_t i = 0; i < n; i++)
		exp_[i] = 1;
	*load_max = 0;
	*load_mean = 1;
	if (x->nle && p->pad_to_capacity) {
		/* every expert's input padded to the capacity: fixed sizes, no
		 * draw (the MoE layers at the capacity's whole tokens over the
		 * balanced load) */
		double cf = plan_moe_capacity(p, m);
		for (int s = 0; s < x->D * x->es; s++)
			for (int j = 0; j < mm; j++)
				for (int l = 0; l < L; l++)
					if (m->moe_layer[l])
						exp_[load_ix(s, mm, j, L, l)] = (float)cf;
		*load_max = *load_mean = cf;
	} else if (x->nle) {
		bool cap = p->capacity_factor > 0;
		int nc = cap ? E : ep, per = E / nc; /* categories of the Dirichlet, experts in each */
		/* with a capacity, each source rank (the EP group's ep positions
		 * x their tp ranks, each routing its 1/tp of the tokens; with
		 * whole experts its ep ranks) drops what exceeds capacity x its
		 * own balanced share per expert, as Megatron's router does
		 * before the dispatch */
		int nsrc = cap ? ep * p->tp / x->es : 1;
		double cv = p->expert_imbalance;
		double a = cv > 0 ? ((E - 1) / (cv * cv) - 1) / E : 0; /* per expert */
		double assign = x->w->expert_tokens * ep, mean_r = assign / ep;
		double src = assign / nsrc, sum = 0, all = 0;
		/* per source and expert, whole tokens: Megatron-core's
		 * get_capacity, ceil(tokens x top-k / experts x factor) */
		double limit = plan_moe_capacity_tokens(p, m);
		long cnt_n = 0;
		double *cnt = malloc((size_t)nc * sizeof(*cnt));
		double *prob = malloc((size_t)nc * sizeof(*prob));
		double *alpha = malloc((size_t)nc * sizeof(*alpha));
		double *ld = malloc((size_t)ep * sizeof(*ld));
		double *rp = malloc((size_t)ep * sizeof(*rp)), *kf = malloc((size_t)ep * sizeof(*kf));
		if (!cnt || !prob || !alpha || !ld || !rp || !kf) {
			free(cnt);
			free(prob);
			free(alpha);
			free(ld);
			free(rp);
			free(kf);
			return TS_ENOMEM;
		}
		for (int c = 0; c < nc; c++) {
			prob[c] = 1.0 / nc;
			alpha[c] = a * per;
		}
		for (int g = 0; g < x->D * x->es / ep; g++)
			for (int j = 0; j < mm; j++)
				for (int l = 0; l < L; l++) {
					double top = 0;
					if (!m->moe_layer[l])
						continue;
					if (a > 0)
						gsl_ran_dirichlet(x->rng.r, (size_t)nc, alpha, prob);
					if (!cap) {
						multinomial(x->rng.r, nc, assign, prob, cnt);
						for (int r = 0; r < ep; r++)
							ld[r] = cnt[r] / mean_r;
					} else {
						/* per rank: its experts' probability and
						 * the fraction of their tokens kept (a
						 * uniform router: the same every time) */
						if (a > 0 || cnt_n == 0)
							for (int r = 0; r < ep; r++) {
								double q = 0, k = 0;
								for (int e = r * (E / ep); e < (r + 1) * (E / ep); e++) {
									q += prob[e];
									k += kept_mean(src, prob[e], limit);
								}
								rp[r] = q;
								kf[r] = q > 0 ? k / (src * q) : 0;
							}
						multinomial(x->rng.r, ep, assign, rp, cnt);
						for (int r = 0; r < ep; r++) {
							double kept = cnt[r] * kf[r], most = nsrc * limit * (E / ep);
							ld[r] = (kept < most ? kept : most) / mean_r;
						}
					}
					for (int r = 0; r < ep; r++) {
						exp_[load_ix(g * ep + r, mm, j, L, l)] = (float)ld[r];
						top = ld[r] > top ? ld[r] : top;
						all += ld[r];
					}
					sum += top;
					cnt_n++;
				}
		free(cnt);
		free(prob);
		free(alpha);
		free(ld);
		free(rp);
		free(kf);
		if (cnt_n) {
			*load_max = sum / cnt_n;
			*load_mean = all / ((double)cnt_n * ep);
		}
	}
	return 0;
}

struct scored {
	double s;
	int u;
};

/* A vision op for scoring units: its time at the nominal load (t), its
 * host dispatch (d), the load factor above which its GPU time is the
 * longer (r = d / t). */
struct vop {
	double r, t, d;
};

static int cmp_vop(const void *a, const void *b)
{
	const struct vop *x = a, *y = b;
	return (x->r > y->r) - (x->r < y->r);
}

/* The vision ops' time at load factor f, each op the longer of its GPU
 * time (t f) and its dispatch (d), from ops sorted by r with prefix sums
 * of t (pt) and d (pd): those with r <= f take t f, the rest d. */
static double vops_time(const struct vop *v, int32_t n, const double *pt, const double *pd, double f)
{
	int32_t lo = 0, hi = n;
	if (f <= 0 || n == 0)
		return 0; /* no images: the encoder's ops have no work and are not issued */
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (v[mid].r <= f)
			lo = mid + 1;
		else
			hi = mid;
	}
	return f * pt[lo] + (pd[n] - pd[lo]);
}

static int cmp_scored(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? 1 : -1;
	return x->u - y->u;
}

/* Where GPU g sits: its host, its NIC's leaf switch and that leaf's pod
 * (the lowest tier-2 switch above it), -1 where there is none. */
static void gpu_place(const struct topo *t, int32_t g, int32_t key[3])
{
	int32_t leaf = t->gpu_nic && t->gpu_nic[g] >= 0 && t->nic_leaf ?
			       t->nic_leaf[t->gpu_nic[g] - t->first_nic] :
			       -1;
	key[0] = topo_gpu_host(t, g);
	key[1] = leaf;
	key[2] = -1;
	for (int32_t k = leaf >= 0 ? t->out_off[leaf] : 0; leaf >= 0 && k < t->out_off[leaf + 1]; k++) {
		int32_t v = t->links[t->out[k]].to;
		if (t->nodes[v].kind == TOPO_N_SWITCH && t->nodes[v].tier == 2 &&
		    (key[2] < 0 || v < key[2]))
			key[2] = v;
	}
}

/* The D data-parallel positions in blocks of B sit in the fabric alike,
 * each block compared with the first of its group of G blocks: each
 * block's ranks, in (stage, position, TP index) order, fall on hosts, leaf
 * switches and pods in the same pattern (each numbered in order of first
 * use). Units are compared with each other (B = U, G = D / U), a unit's
 * positions with its first (B = 1, G = U: compared across units, positions
 * whose stages meet different leaves set every rank simulated under a
 * linear placement, where units already take care of it; found by
 * review). Returns 1, 0, or -1 when memory ran out.
 * Folding assumes its units (blocks of U positions) are alike, so that K
 * simulated stand for the rest: true under linear and round-robin
 * placement; a random or listed one can put one unit's TP group inside a
 * node and another's across two. A unit of several positions (EP, CP)
 * also waits at each op for the worst placed of them, so those positions
 * must be alike too (found by review: +2-7 % over --exact under a random
 * placement with ep 2-4). Leaves and pods count since the units a
 * representative stands for send beside it without being waited for
 * (unit_launch): one straddling two leaves behind oversubscribed uplinks
 * is slower than one inside a leaf (found by review: the fold 15.7 % under
 * --exact on a 2:1 leaf-spine of 3 hosts per leaf, tp 2, EP 8). */
static int blocks_alike(const struct exec *x, int D, int B, int G)
{
	const struct plan *p = x->p;
	int n = B * p->tp * p->pp, rc = 1;
	int32_t *ref = malloc((size_t)n * 3 * sizeof(*ref)), *seen = malloc((size_t)n * 3 * sizeof(*seen));
	if (!ref || !seen) {
		rc = -1;
		goto out;
	}
	for (int u = 0; u < D / B && rc == 1; u++) {
		int i = 0, nseen[3] = { 0, 0, 0 };
		for (int s = 0; s < p->pp && rc == 1; s++)
			for (int pos = u * B; pos < (u + 1) * B && rc == 1; pos++)
				for (int ti = 0; ti < p->tp && rc == 1; ti++, i++) {
					int32_t key[3];
					gpu_place(x->t, x->t->rank_gpu[ti + p->tp * (pos + D * s)], key);
					for (int c = 0; c < 3; c++) {
						int32_t *sn = seen + (size_t)c * n;
						int lab = 0;
						while (lab < nseen[c] && sn[lab] != key[c])
							lab++;
						if (lab == nseen[c])
							sn[nseen[c]++] = key[c];
						if (u % G == 0) {
							ref[(size_t)c * n + i] = lab;
						} else if (ref[(size_t)c * n + i] != lab) {
							rc = 0;
							break;
						}
					}
				}
	}
out:
	free(ref);
	free(seen);
	return rc;
}

/* Every group of dim d stays inside one host (then one group stands for
 * all on the network: private NVLink ports). */
static bool dim_local(struct exec *x, int d)
{
	if (d == WL_D_PP)
		return false;
	for (int s = 0; s < x->p->pp; s++)
		for (int pos = 0; pos < x->D; pos++) {
			for (int ti = 0; ti < (d == WL_D_TP ? 1 : x->p->tp); ti++) {
				int n;
				if (!group_lead(x, d, ti, pos))
					continue;
				n = group_ranks(x, d, ti, pos, s, x->ranks_buf);
				if (!group_local(x, x->ranks_buf, n))
					return false;
			}
		}
	return true;
}


/* Whether a pipeline send of some position leaves its host with more than
 * one equal-cost path: each unit's sends then take their own hashed path
 * (launch_go's, under --routing spray too) and units differ (Qwen3-VL-2B on an ECMP leaf-spine, 8 nodes, tp 2, pp 2,
 * overlap.dp: four of 16 units simulated came out 2.8 % under --exact at
 * seed 2, where a unit left out drew a path shared with DP rings; all 16:
 * equal at seeds 1-6). */
static bool pp_hashed(const struct exec *x)
{
	for (int s = 0; s + 1 < x->p->pp; s++)
		for (int pos = 0; pos < x->D; pos++)
			for (int ti = 0; ti < x->p->tp; ti++) {
				int32_t a = gpu_of(x, rank_of(x, ti, pos, s));
				int32_t b = gpu_of(x, rank_of(x, ti, pos, s + 1));
				if (topo_gpu_host(x->t, a) != topo_gpu_host(x->t, b) &&
				    sim_p2p_paths(x->t, a, b, true) > 1)
					return true;
			}
	return false;
}

/* Whether a group of dims (each stage; the first unit's npos positions)
 * has two members on GPUs a and b that test holds for: any two (all), or
 * ring neighbours. r: room for every rank. */
static bool unit_groups_any(const struct exec *x, const int *dims, int nd, int npos, bool all,
			    bool (*test)(const struct exec *, int32_t, int32_t), int32_t *r)
{
	for (int k = 0; k < nd; k++)
		for (int s = 0; s < x->p->pp; s++)
			for (int pos = 0; pos < npos; pos++)
				for (int ti = 0; ti < (dims[k] == WL_D_TP ? 1 : x->p->tp); ti++) {
					int n;
					if (!group_lead(x, dims[k], ti, pos))
						continue;
					n = group_ranks(x, dims[k], ti, pos, s, r);
					for (int i = 0; i < n && n > 1; i++) {
						int32_t a = gpu_of(x, r[i]);
						if (!all && test(x, a, gpu_of(x, r[(i + 1) % n])))
							return true;
						for (int j = 0; all && j < n; j++)
							if (test(x, a, gpu_of(x, r[j])))
								return true;
					}
				}
	return false;
}

/* Whether a unit's exchanges that cross hosts go through NVLink ports of
 * other GPUs (NCCL PXN: to the GPU on the receiver's rail, then out of its
 * NIC), where the groups inside the host, one standing for all, would be
 * absent: then each is simulated (Qwen3-VL-30B-A3B, 8 nodes of
 * dgx-h100-ndr, tp 2, EP 8, overlap.dp, 20 seeds: folded over --exact
 * -0.16 % mean, rms 0.93 %, from +0.76 %, 1.42 %, this alone; -0.13 %,
 * 1.06 % with dp_emit; with pad_to_capacity 0.00 %, from +0.06 %). */
static bool pxn_pair(const struct exec *x, int32_t a, int32_t b)
{
	return sim_pxn_via(x->t, a, b) >= 0;
}

static bool unit_pxn(const struct exec *x)
{
	static const int dims[] = { WL_D_TP, WL_D_EP, WL_D_CP, WL_D_TPEP };
	return unit_groups_any(x, dims, 4, x->U, true, pxn_pair, x->ranks_buf);
}

static void dp_bg_free(struct exec *x)
{
	for (int r = 0; x->dp && r < x->w->nroles; r++)
		free(x->dp[r].op);
	for (size_t r = 0; x->slw && r < x->sl_n; r++)
		for (struct dp_slw *q = x->slw[r], *n; q; q = n) {
			n = q->next;
			free(q);
		}
	free(x->dp);
	free(x->dp_tail);
	free(x->sl_state);
	free(x->slw);
	free(x->sl_t0);
	x->dp = NULL;
	x->dp_tail = NULL;
	x->sl_state = NULL;
	x->slw = NULL;
	x->sl_t0 = NULL;
	x->sl_n = 0;
}

/* Role's erecv (struct dp_role): a receive of the DP phase whose every
 * successor, through any number of ops, is the optimizer's compute or a DP
 * collective; those collectives marked after_erecv, the longest compute
 * before one into erecv_opt_s. reach: room for the role's ops. */
static void find_erecv(struct exec *x, int32_t role, double *reach)
{
	const struct wl_role *ro = &x->w->roles[role];
	struct dp_role *dr = &x->dp[role];
	dr->erecv = -1;
	for (int32_t i = ro->nops - 1; i >= 0; i--) {
		bool ok = true;
		double opt = 0, host = 0;
		if (ro->ops[i].kind != WL_K_RECV || ro->ops[i].phase != WL_P_DP)
			continue;
		/* reach[j]: -1 not after i; else when j ends after i did, s:
		 * each op issued by the host after the one before it
		 * (compute_start's dispatch; the host waits for the receive),
		 * started once issued and its deps ended */
		for (int32_t j = i; j < ro->nops; j++)
			reach[j] = j == i ? 0 : -1;
		for (int32_t j = i + 1; j < ro->nops && ok; j++) {
			const struct wl_op *op = &ro->ops[j];
			double t = -1;
			for (int d = 0; d < op->ndeps; d++)
				if (op->deps[d] >= i && reach[op->deps[d]] > t)
					t = reach[op->deps[d]];
			if (t < 0)
				continue;
			if (dp_coll(op)) {
				opt = t > opt ? t : opt;
				reach[j] = 0;
			} else if (op->kind == WL_K_COMPUTE && op->phase == WL_P_OPT &&
				   op->cls != WL_HOST_OPT && op->cls != WL_HOST_COPY) {
				double c = op_compute_s(x, op, 1);
				if (c > 0 && x->comp.dispatch_s > 0) {
					host += x->comp.dispatch_s;
					t = host > t ? host : t;
				}
				reach[j] = t + c;
			} else {
				/* (a CPU optimizer's and its copies' time
				 * depends on the host thread's earlier work) */
				ok = false;
			}
		}
		if (!ok)
			continue;
		dr->erecv = i;
		dr->erecv_opt_s = opt;
		for (int32_t j = i + 1; j < ro->nops; j++) {
			dr->op[j].down = reach[j] >= 0;
			dr->op[j].after_erecv = reach[j] >= 0 && dp_coll(&ro->ops[j]);
			for (int d = 0; d < ro->ops[j].ndeps && reach[j] >= 0; d++)
				if (ro->ops[j].deps[d] < i || reach[ro->ops[j].deps[d]] < 0)
					dr->op[ro->ops[j].deps[d]].feeds = 1;
		}
		return;
	}
}

/* dp_emit's per-run state (x->dp_bgon and x->D set). */
static int dp_bg_alloc(struct exec *x)
{
	int P = x->w->nroles;
	size_t nr = (size_t)P * (size_t)x->p->tp * (size_t)x->D;
	int32_t maxops = 0;
	double *reach;
	dp_bg_free(x);
	if (!x->dp_bgon)
		return 0;
	x->dp = calloc((size_t)P, sizeof(*x->dp));
	x->dp_tail = calloc(nr, sizeof(*x->dp_tail));
	x->sl_state = calloc(nr, 1);
	x->slw = calloc(nr, sizeof(*x->slw));
	x->sl_t0 = calloc(nr, sizeof(*x->sl_t0));
	x->sl_n = nr;
	if (!x->dp || !x->dp_tail || !x->sl_state || !x->slw || !x->sl_t0)
		return TS_ENOMEM;
	for (int r = 0; r < P; r++) {
		if (!(x->dp[r].op = calloc((size_t)x->w->roles[r].nops, sizeof(*x->dp[r].op))))
			return TS_ENOMEM;
		maxops = x->w->roles[r].nops > maxops ? x->w->roles[r].nops : maxops;
	}
	if (!(reach = malloc((size_t)(maxops ? maxops : 1) * sizeof(*reach))))
		return TS_ENOMEM;
	for (int r = 0; r < P; r++) {
		find_erecv(x, r, reach);
		for (int32_t i = 0; i < x->w->roles[r].nops; i++)
			x->dp[r].op[i].hold = dp_sync(x, r, i) && !dp_gated_next(x, r, i);
	}
	free(reach);
	return 0;
}

static int gcd(int a, int b)
{
	while (b) {
		int t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* DP x CP positions that fold together as one unit: the EP and CP groups
 * they share (lcm(cp, positions an EP group spans), at most dp x cp). An
 * EP group spans ep positions when the TP group holds one member (etp =
 * tp), lcm(ep, tp) / tp when each TP rank is one (etp 1). */
static int unit_positions(const struct plan *p)
{
	int pe = p->ep / gcd(p->ep, expert_slots(p));
	int u = p->cp / gcd(p->cp, pe) * pe, d = p->dp * p->cp;
	return u < d ? u : d;
}

/* Whether a unit's context-parallel positions run TP or CP exchanges that
 * cross hosts where more than one equal-cost path joins them: under ECMP
 * each position's groups hash to paths of their own, while a unit's fold
 * waits at each exchange for its slowest position where --exact lets each
 * go on to the next exchange that meets them (Qwen3-VL-2B, tp 8, pp 2,
 * cp 2 on fat-tree-k8.json, one GPU a node: +0.8 to +1.1 % at seeds 1-3,
 * found by review's fuzzer; 0.00 % under spray). (EP positions keep the
 * fold: their all-to-alls meet every member's own load, and MoE plans of
 * 64 GPUs on rails would all fall back.) x->D and x->es set; -1: out of
 * memory. */
static bool hashed_pair(const struct exec *x, int32_t a, int32_t b)
{
	return topo_gpu_host(x->t, a) != topo_gpu_host(x->t, b) && sim_spray_paths(x->t, a, b, true) > 1;
}

static int groups_hashed(const struct exec *x, const int *dims, int nd)
{
	int32_t *r = malloc((size_t)x->p->tp * (size_t)x->D * (size_t)x->p->pp * sizeof(*r));
	int h;
	if (!r)
		return -1;
	h = unit_groups_any(x, dims, nd, unit_positions(x->p), false, hashed_pair, r);
	free(r);
	return h;
}

static int positions_hashed(const struct exec *x)
{
	static const int dims[] = { WL_D_TP, WL_D_CP };
	return groups_hashed(x, dims, 2);
}

/* Whether DP or expert-DP rings cross hosts where more than one equal-cost
 * path joins ring neighbours. For a MoE plan: with overlap.dp each bucket's
 * rings start as their members' backward reaches it, and under ECMP the
 * rings that hash onto the same links slow each other by how they overlap.
 * A unit's positions draw their own expert loads, so their ranks reach
 * each bucket at their own times, where the fold's representative runs
 * the unit's heaviest: the overlaps differ (Qwen3-VL-30B-A3B, tp 4, EP 4,
 * SP, overlap.dp, 8 nodes of the ECMP leaf-spine, with the flow model's
 * exact max-min (--flow-coalesce 0): -3.9 to +3.1 % over --exact at seeds
 * 1-10; sprayed within 0.22 %; without overlap.dp equal). x->D and x->es
 * set; -1: out of memory. */
static int dp_rings_hashed(const struct exec *x)
{
	static const int dims[] = { WL_D_DP, WL_D_EDP };
	return groups_hashed(x, dims, 2);
}


/* ---- breakdown ----------------------------------------------------------------------
 * The critical path: from the op that ends the iteration, back through
 * whichever dependency ended last (inside an instance: the op's deps, which
 * include stream order; across instances: the sender of a receive that
 * waited for its data, the member of a collective that arrived last). Each
 * segment of the path is compute, optimizer or one kind of communication,
 * and the segments add up to the iteration time. A communication segment
 * is exposed while the rank waiting for it has an idle compute stream, and
 * compute while that rank computes. Compute is reported as the path's
 * compute up to the busiest stage's own (what the stage must do); the rest
 * of the path's compute (pipeline fill and drain) and any unexplained wait
 * is the bubble. */

struct path_sum {
	double comp_s, opt_s, idle_s;          /* compute, optimizer, unexplained wait, s */
	double host_s;                         /* compute ops' wait for the host's dispatch, s */
	double *role_s;                        /* per role: of comp_s + host_s, on its ranks, s;
	                                        * then [nroles + role]: of comp_s (owned) */
	double comm_s[SIM_COMM_COUNT];         /* communication by kind, s */
};

/* When an instance's compute stream is busy: its compute ops (those of the
 * optimizer phase, or all others, or of those the host's dispatch waits
 * before their GPU work) as disjoint intervals sorted by start, with
 * prefix sums of their lengths. */
enum busy_kind { BUSY_COMP, BUSY_OPT, BUSY_HOST, BUSY_KINDS };
struct busy_iv {
	int32_t n;                 /* intervals, count */
	simtime_ps *a, *b;         /* starts, ends, ps */
	double *cum;               /* cum[i]: total length of intervals 0..i-1, s */
};

static int cmp_iv(const void *p, const void *q)
{
	const simtime_ps *x = p, *y = q;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int busy_build(const struct exec *x, const struct inst *in, enum busy_kind k,
		      struct busy_iv *bv)
{
	bool opt = k == BUSY_OPT;
	const struct wl_role *r = &x->w->roles[in->role];
	simtime_ps *iv = malloc((size_t)(r->nops ? r->nops : 1) * 2 * sizeof(simtime_ps));
	int32_t n = 0, m = 0;
	bool sorted = true;
	if (!iv)
		return TS_ENOMEM;
	for (int32_t i = 0; i < r->nops; i++)
		if (r->ops[i].kind == WL_K_COMPUTE && (r->ops[i].phase == WL_P_OPT) == opt &&
		    in->t1[i] > in->t0[i] && (k != BUSY_HOST || gpu_start(in, i) > in->t0[i])) {
			iv[2 * n] = in->t0[i];
			iv[2 * n + 1] = k == BUSY_HOST ? gpu_start(in, i) : in->t1[i];
			sorted = sorted && (n == 0 || iv[2 * n] >= iv[2 * n - 2]);
			n++;
		}
	if (!sorted) /* one compute stream in schedule order is already sorted */
		qsort(iv, (size_t)n, 2 * sizeof(simtime_ps), cmp_iv);
	bv->a = malloc((size_t)(n ? n : 1) * sizeof(simtime_ps));
	bv->b = malloc((size_t)(n ? n : 1) * sizeof(simtime_ps));
	bv->cum = malloc((size_t)(n + 1) * sizeof(double));
	if (!bv->a || !bv->b || !bv->cum) {
		free(iv);
		return TS_ENOMEM;
	}
	for (int32_t i = 0; i < n; i++) {
		if (m > 0 && iv[2 * i] <= bv->b[m - 1]) {
			if (iv[2 * i + 1] > bv->b[m - 1])
				bv->b[m - 1] = iv[2 * i + 1];
			continue;
		}
		bv->a[m] = iv[2 * i];
		bv->b[m] = iv[2 * i + 1];
		m++;
	}
	bv->n = m;
	bv->cum[0] = 0;
	for (int32_t i = 0; i < m; i++)
		bv->cum[i + 1] = bv->cum[i] + time_to_s(bv->b[i] - bv->a[i]);
	free(iv);
	return 0;
}

/* Time within [t0, t1] the compute stream was busy, s. */
static double busy_within(const struct busy_iv *bv, simtime_ps t0, simtime_ps t1)
{
	int32_t lo = 0, hi = bv->n, first, last;
	double s;
	if (t1 <= t0)
		return 0;
	while (lo < hi) { /* first interval ending after t0 */
		int32_t mid = (lo + hi) / 2;
		if (bv->b[mid] <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	hi = bv->n;
	while (lo < hi) { /* first interval starting at or after t1 */
		int32_t mid = (lo + hi) / 2;
		if (bv->a[mid] < t1)
			lo = mid + 1;
		else
			hi = mid;
	}
	last = lo - 1;
	if (last < first)
		return 0;
	s = bv->cum[last + 1] - bv->cum[first];
	if (bv->a[first] < t0)
		s -= time_to_s(t0 - bv->a[first]);
	if (bv->b[last] > t1)
		s -= time_to_s(bv->b[last] - t1);
	return s;
}

struct walk {
	const struct exec *x;
	struct busy_iv *bv;        /* per instance w, [BUSY_KINDS w + k] its busy_kind k,
	                            * built when the path first needs them */
	struct path_sum *ps;
};

/* A communication segment [t0, t1] of kind k on the path, seen by instance
 * w that waits for it: exposed while w's compute stream is idle; the rest
 * overlaps w's own compute, or its optimizer-phase ops (top-k selection
 * beside the all-gather: found by review, counted as compute, whose
 * excess over the stage's own then showed as a bubble without a
 * pipeline). The two share one stream, so they do not overlap. */
static int walk_comm(struct walk *wk, int32_t w, simtime_ps t0, simtime_ps t1, enum sim_comm_kind k)
{
	double busy[BUSY_KINDS];
	int rc;
	if (t1 <= t0)
		return 0;
	for (int o = 0; o < BUSY_KINDS; o++) {
		struct busy_iv *bv = &wk->bv[BUSY_KINDS * w + o];
		if (!bv->cum && (rc = busy_build(wk->x, &wk->x->in[w], (enum busy_kind)o, bv)))
			return rc;
		busy[o] = busy_within(bv, t0, t1);
	}
	/* (the host's waits are within the compute ops' intervals) */
	wk->ps->comp_s += busy[BUSY_COMP] - busy[BUSY_HOST];
	wk->ps->host_s += busy[BUSY_HOST];
	wk->ps->role_s[wk->x->in[w].role] += busy[BUSY_COMP];
	wk->ps->role_s[wk->x->w->nroles + wk->x->in[w].role] += busy[BUSY_COMP] - busy[BUSY_HOST];
	wk->ps->opt_s += busy[BUSY_OPT];
	wk->ps->comm_s[k] += time_to_s(t1 - t0) - busy[BUSY_COMP] - busy[BUSY_OPT];
	return 0;
}

/* Walk the critical path back from op (ii, oi), which ends at the
 * iteration's end. */
static int critical_path(const struct exec *x, int32_t ii, int32_t oi, struct path_sum *ps)
{
	int32_t per = x->ninst / x->w->nroles, waiter = -1;
	struct walk wk = { x, calloc(BUSY_KINDS * (size_t)x->ninst, sizeof(struct busy_iv)), ps };
	int rc;
	int64_t steps = 0, max_steps = 1;
	for (int32_t i = 0; i < x->ninst; i++)
		max_steps += x->w->roles[x->in[i].role].nops;
	memset(ps, 0, sizeof(*ps));
	ps->role_s = calloc(2 * (size_t)x->w->nroles, sizeof(*ps->role_s));
	rc = wk.bv && ps->role_s ? 0 : TS_ENOMEM;
	/* cur: how far back the path is accounted. An op can start before a
	 * dependency ends where the fold lets a representative's part go
	 * early (the tied-embedding slices: the send starts with the rank's
	 * own DP group, its reduce op ends with the slowest); each op's
	 * interval is clipped to cur, so no time counts twice and the parts
	 * add up to the iteration (found by a check of the sums: 9.3 us of
	 * DP counted twice, Qwen3-VL-2B tp 8 pp 2 folded) */
	simtime_ps cur = x->in[ii].t1[oi];
	while (!rc) {
		if (++steps > max_steps) { /* each step goes to an op that ended no later */
			rc = ts_error_set(x->errp, TS_EINPUT, "internal error: the critical path walk did not end");
			break;
		}
		const struct inst *in = &x->in[ii];
		const struct wl_role *r = &x->w->roles[in->role];
		const struct wl_op *op = &r->ops[oi];
		simtime_ps t = in->t0[oi] < cur ? in->t0[oi] : cur;
		simtime_ps e = in->t1[oi] < cur ? in->t1[oi] : cur;
		int32_t pred = -1, w = waiter >= 0 ? waiter : ii;
		waiter = -1;
		if (op->kind == WL_K_COMPUTE) {
			if (op->phase == WL_P_OPT) {
				ps->opt_s += time_to_s(e - t);
			} else {
				/* the host's dispatch wait first, then the GPU work */
				simtime_ps g = gpu_start(in, oi);
				if (g > e)
					g = e;
				double h = g > t ? time_to_s(g - t) : 0;
				ps->host_s += h;
				ps->comp_s += time_to_s(e - t) - h;
				ps->role_s[in->role] += time_to_s(e - t);
				ps->role_s[x->w->nroles + in->role] += time_to_s(e - t) - h;
			}
		} else if (op->kind == WL_K_RECV) {
			int32_t so = op->peer_op; /* the send that feeds it */
			if (in->t1[oi] > in->t0[oi] && so >= 0) {
				/* waited for the data: the path goes through the sender,
				 * and the receiver is the one waiting */
				waiter = ii;
				ii = peer_inst(x, ii, op->peer_stage);
				oi = so;
				cur = e;
				continue;
			}
		} else {
			/* from the launch (every member there) to the end; before
			 * it, the wait for the member that arrived last */
			enum sim_comm_kind k = kind_of_op(op);
			simtime_ps launch = in->xfer[oi], go = launch < e ? launch : e;
			simtime_ps late = !x->o->exact && x->dp_bgon && op->kind == WL_K_SEND
						  ? x->dp[in->role].op[oi].send_t0 : 0;
			if (late > 0 && late >= go && late < e && op->phase == WL_P_DP &&
			    x->dp[in->role].op[oi].send_rcv) { /* (late > 0: folded dp_bgon) */
				/* folded, the tied embedding's send whose last
				 * slice waited for its receiving rank's reduction:
				 * the transfer from then, and the path goes on
				 * through that reduction (--exact: through the
				 * receive, posted after it) */
				rc = walk_comm(&wk, w, late, e, k);
				ii = peer_inst(x, ii, op->peer_stage);
				oi = recv_dp(x, x->in[ii].role, op->peer_op);
				cur = late;
				if (!rc && oi < 0) /* (none: as a path without a predecessor) */
					ps->idle_s += time_to_s(cur);
				if (rc || oi < 0)
					break;
				continue;
			} else if (late > go && late < e) {
				/* folded, a send started early: its op shows from
				 * the representative's own slice, but its end is
				 * the last slice's, which waited for its rank's DP
				 * group until late: as --exact's path through that
				 * rank, the transfer from then is PP, the wait
				 * before it the reduction's (DP) */
				rc = walk_comm(&wk, w, late, e, k);
				if (!rc)
					rc = walk_comm(&wk, w, go, late, SIM_COMM_DP);
			} else {
				rc = walk_comm(&wk, w, go, e, k);
			}
			if (!rc && op->kind == WL_K_SEND && op->phase == WL_P_DP && go > in->t0[oi] &&
			    x->in[peer_inst(x, ii, op->peer_stage)].t0[op->peer_op] == launch) {
				/* the tied-embedding send waited for its receiver to
				 * post the receive: the path goes on through what the
				 * receive waited for (its end's reduction), also
				 * where a slice then waited for its own rank's (the
				 * late branch above took [go, e]; found by review) */
				ii = peer_inst(x, ii, op->peer_stage);
				in = &x->in[ii];
				oi = op->peer_op;
				op = &x->w->roles[in->role].ops[oi];
				t = go;
			} else if (!rc && go > in->t0[oi]) {
				/* the members: exact, the group's ranks (instance id =
				 * rank); folded, the stage's instances (DP waits for all) */
				int32_t last = ii, n = per, *mem = NULL;
				if (x->o->exact) {
					n = group_ranks(x, op->dim, in->tpi, in->pos, in->role, x->ranks_buf);
					mem = x->ranks_buf;
				}
				for (int32_t q = 0; q < n; q++) {
					int32_t j = mem ? mem[q] : in->role * per + q;
					if (x->in[j].xfer[oi] == launch && x->in[j].t0[oi] > x->in[last].t0[oi])
						last = j;
				}
				/* what remains (a host-to-GPU copy first) is the op's own */
				ii = last;
				in = &x->in[ii];
				t = in->t0[oi] < go ? in->t0[oi] : go;
				if (!x->o->exact && x->dp_bgon && x->dp[in->role].op[oi].after_erecv &&
				    x->dp[in->role].op[oi].sl_t1 > t) {
					/* folded, a DP op after the tied-embedding
					 * receive: its group waited for a member's
					 * slice that no representative carries. As
					 * --exact's path goes through that slice:
					 * its sender's reduction (the op's own kind),
					 * the transfer (pp), the member's optimizer */
					const struct dp_op *dq = &x->dp[in->role].op[oi];
					simtime_ps s1 = dq->sl_t1 < go ? dq->sl_t1 : go;
					simtime_ps s0 = dq->sl_t0 > t ? (dq->sl_t0 < s1 ? dq->sl_t0 : s1) : t;
					ps->opt_s += time_to_s(go - s1);
					rc = walk_comm(&wk, w, s0, s1, SIM_COMM_PP);
					if (!rc)
						rc = walk_comm(&wk, w, t, s0, k);
				} else {
					rc = walk_comm(&wk, w, t, go, k);
				}
			}
		}
		cur = t;
		for (int d = 0; d < op->ndeps; d++) {
			int32_t di = op->deps[d];
			if (pred < 0 || in->t1[di] > in->t1[pred])
				pred = di;
		}
		if (pred < 0) {
			ps->idle_s += time_to_s(cur);
			break;
		}
		if (in->t1[pred] < cur)
			ps->idle_s += time_to_s(cur - in->t1[pred]);
		oi = pred;
	}
	if (wk.bv)
		for (int32_t i = 0; i < BUSY_KINDS * x->ninst; i++) {
			free(wk.bv[i].a);
			free(wk.bv[i].b);
			free(wk.bv[i].cum);
		}
	free(wk.bv);
	return rc;
}

/* Busy compute and optimizer time of one instance, s; of comp, the
 * host's dispatch waits before the GPU work. */
static void busy_time(const struct exec *x, const struct inst *in, double *comp, double *opt,
		      double *host)
{
	const struct wl_role *r = &x->w->roles[in->role];
	*comp = *opt = *host = 0;
	for (int32_t i = 0; i < r->nops; i++) {
		const struct wl_op *op = &r->ops[i];
		if (op->kind != WL_K_COMPUTE)
			continue;
		if (op->phase == WL_P_OPT) {
			*opt += time_to_s(in->t1[i] - in->t0[i]);
		} else {
			*comp += time_to_s(in->t1[i] - in->t0[i]);
			*host += time_to_s(gpu_start(in, i) - in->t0[i]);
		}
	}
}

/* ---- one run ------------------------------------------------------------------------ */

struct run_out {
	double iter_s;
	struct sim_breakdown bd;
	int crit;
	double dp_busy_s;          /* DP stream busy time of the busiest instance, s */
	double comm_bytes[SIM_COMM_COUNT]; /* nccl-tests bytes per GPU by kind */
	double expert_load_max;    /* mean largest expert load of an EP group, factor (0 undrawn) */
	double expert_load_mean;   /* mean expert load of all ranks, factor (1 undrawn) */
	struct vload vision_load_mean; /* mean image load of all replicas' micro-batches */
	double vision_fwd_flops;   /* the drawn images' encoder forward FLOPs, all replicas */
	double hw_flops;           /* executed by all GPUs, FLOP */
	bool units_differ;         /* folded: the units are placed differently (blocks_alike) */
};

/* Expert loads drawn per iteration at most (one float each: 1 GiB). */
#define EXP_MAX_DRAWS 268435456.0

static int run_once(struct exec *x, struct run_out *ro)
{
	const struct plan *p = x->p;
	int P = p->pp, mm = x->w->micro, rc = 0;
	struct vload *vis = NULL;
	double *ef = NULL;
	float *exp_ = NULL;
	struct scored *sc = NULL;
	int L = x->m->layers;
	simtime_ps end = 0;
	double best = -1, end_busy = -1;
	double *rbusy = NULL;      /* per role: [2 role] its busiest rank's compute and
	                            * optimizer, [2 role + 1] that rank's GPU compute, s */
	int32_t end_inst = -1, end_op = -1;
	struct path_sum ps = { 0 };

	x->run_gen++; /* the analytic alltoallv cache keys on the run's draws */
	x->D = p->dp * p->cp;
	x->U = unit_positions(p);
	x->nunits = x->D / x->U;
	vis = malloc((size_t)p->dp * mm * sizeof(*vis));
	if (!x->vtok && x->m->has_vision) {
		x->vtok = calloc((size_t)p->dp * mm, sizeof(double));
		if (!x->vtok) {
			rc = TS_ENOMEM;
			goto out;
		}
	}
	/* expert loads vary across ranks under EP, and drop under a capacity */
	x->nle = x->m->experts > 0 && (p->ep > 1 || p->capacity_factor > 0) ? L : 0;
	if (x->nle && (double)x->D * x->es * mm * L > EXP_MAX_DRAWS) {
		rc = ts_error_set(x->errp, TS_EINPUT,
				  "the plan's expert loads (dp x cp %d%s x %d micro-batches x %d layers "
				  "= %.3g) exceed the %.3g the simulator draws; use fewer, larger "
				  "micro-batches",
				  x->D, x->es > 1 ? " x tp (etp 1)" : "", mm, L,
				  (double)x->D * x->es * mm * L, EXP_MAX_DRAWS);
		goto out;
	}
	if (x->nle)
		exp_ = malloc((size_t)x->D * x->es * mm * L * sizeof(float));
	ef = calloc((size_t)L, sizeof(double));
	sc = malloc((size_t)x->nunits * sizeof(*sc));
	x->unit_of = malloc((size_t)x->nunits * sizeof(int32_t));
	x->sim_unit = malloc((size_t)x->nunits * sizeof(int32_t));
	if (!vis || (x->nle && !exp_) || !ef || !sc || !x->unit_of || !x->sim_unit) {
		rc = TS_ENOMEM;
		goto out;
	}
	if ((rc = draw_loads(x, vis, exp_, mm, &ro->vision_fwd_flops, &ro->expert_load_max,
			     &ro->expert_load_mean)))
		goto out;
	ro->vision_load_mean.lin = ro->vision_load_mean.att = 0;
	for (size_t i = 0; i < (size_t)p->dp * mm; i++) {
		ro->vision_load_mean.lin += vis[i].lin / ((double)p->dp * mm);
		ro->vision_load_mean.att += vis[i].att / ((double)p->dp * mm);
	}
	x->loads = exp_;
	/* score units by their drawn loads' time: each micro-batch's vision
	 * ops at its image load (the attention's at its own factor), each the
	 * longer of its GPU time and the host's dispatch (found by review:
	 * scored by FLOPs, a unit with fewer but larger images outranked one
	 * whose every micro-batch had images, which the host's 55 us an op
	 * makes slower: Qwen3-VL-2B pp 2 on 2 DGX H100 nodes, Poisson images,
	 * folded 9.98 % under --exact), and each layer's expert ops at its
	 * expert load; the heaviest K are simulated */
	{
		struct vop *vo[2] = { NULL, NULL };
		double *pt[2] = { NULL, NULL }, *pd[2] = { NULL, NULL };
		int32_t nv[2] = { 0, 0 };
		for (int s = 0; s < P; s++)
			for (int32_t i = 0; i < x->w->roles[s].nops; i++)
				nv[0] += x->w->roles[s].ops[i].vary == WL_V_VISION;
		for (int k = 0; k < 2 && !rc; k++) {
			vo[k] = malloc(((size_t)nv[0] + 1) * sizeof(struct vop));
			pt[k] = malloc(((size_t)nv[0] + 1) * sizeof(double));
			pd[k] = malloc(((size_t)nv[0] + 1) * sizeof(double));
			if (!vo[k] || !pt[k] || !pd[k])
				rc = TS_ENOMEM;
		}
		nv[0] = 0;
		for (int s = 0; s < P && !rc; s++)
			for (int32_t i = 0; i < x->w->roles[s].nops; i++) {
				const struct wl_op *op = &x->w->roles[s].ops[i];
				if (op->vary == WL_V_VISION) {
					int k = op->cls == WL_ATTN;
					struct vop *v = &vo[k][nv[k]++];
					/* (each micro-batch's copy: a micro-batch's mean) */
					v->t = op_vision_s(x, op, (struct vload){ 1, 1 }) / mm;
					v->d = op->cls == WL_HOST_OPT || op->dispatch == WL_DISP_NONE ? 0 :
					       x->comp.dispatch_s *
						       (op->dispatch == WL_DISP_ONCE || op->reps <= 1 ? 1 : op->reps) /
						       mm;
					v->r = v->d <= 0 ? 0 : v->t > 0 ? v->d / v->t : INFINITY;
				} else if (op->vary == WL_V_EXPERT && op->layer >= 0) {
					ef[op->layer] += op_compute_s(x, op, 1) / mm;
				}
			}
		for (int k = 0; k < 2 && !rc; k++) {
			qsort(vo[k], (size_t)nv[k], sizeof(struct vop), cmp_vop);
			pt[k][0] = pd[k][0] = 0;
			for (int32_t i = 0; i < nv[k]; i++) {
				pt[k][i + 1] = pt[k][i] + vo[k][i].t;
				pd[k][i + 1] = pd[k][i] + vo[k][i].d;
			}
		}
		for (int u = 0; u < x->nunits && !rc; u++) {
			double s = 0;
			for (int j = 0; j < mm; j++) {
				struct vload v = unit_vis(x, vis, u, mm, j);
				if (v.lin > 0)
					s += vops_time(vo[0], nv[0], pt[0], pd[0], v.lin) +
					     vops_time(vo[1], nv[1], pt[1], pd[1], v.att);
				for (int l = 0; l < x->nle; l++)
					if (ef[l] > 0)
						s += (double)unit_exp(x, exp_, u, mm, j, l) * ef[l];
			}
			sc[u].s = s;
			sc[u].u = u;
		}
		for (int k = 0; k < 2; k++) {
			free(vo[k]);
			free(pt[k]);
			free(pd[k]);
		}
		if (rc)
			goto out;
		qsort(sc, (size_t)x->nunits, sizeof(*sc), cmp_scored);
		bool crosses = false;
		for (int d = 0; d < WL_NDIMS; d++) {
			x->local[d] = dim_local(x, d);
			crosses |= d != WL_D_DP && d != WL_D_EDP && d != WL_D_PP && !x->local[d];
		}
		{
			bool pxn = crosses && x->o->fidelity != SIM_ANALYTIC && unit_pxn(x);
			for (int d = 0; d < WL_NDIMS; d++)
				x->one_for_all[d] = x->local[d] && !pxn;
		}
		x->K = x->o->replicas > 0 ? x->o->replicas : 4;
		if (!crosses && x->o->replicas <= 0 && x->o->fidelity != SIM_ANALYTIC &&
		    (int64_t)x->nunits * P <= FOLD_EVERY_MAX && pp_hashed(x))
			crosses = true;
		/* on the network, every unit when few and a unit's own exchanges
		 * (TP, CP, EP; PP sends on hashed paths) cross hosts: the units a
		 * representative stands for send in step with it, where each
		 * drifts on its own (unit_launch; where they stay in the hosts,
		 * all units only multiply the flows: 1.3 -> 7.4 s wall for the
		 * same iteration within 0.6 % on the 16k benchmark's plan on
		 * 2,048 GPUs, found by review) */
		/* and under --jitter, where each unit draws its own noise and
		 * a DP collective waits for the slowest of them all, while K
		 * units stand for the slowest of K (found by review: llama3-8b,
		 * 16 GPUs, local SGD with top-k, jitter 0.05: K = 4 1.06 %
		 * under --exact, all 16 equal; three more plans 1.0-1.31 %
		 * under); and where images vary between units: the score above
		 * sums a unit's loads over its micro-batches, but which unit
		 * sets the pace follows where in the schedule its images fall
		 * (found by an audit, 2026-12-05: Qwen3-VL-2B pp 2, ZeRO 1, 64
		 * GPUs, Poisson(1.5) images, seed 4: K = 4 0.73 % under
		 * --exact, always under at seeds 1-10) */
		if (x->o->replicas <= 0 &&
		    ((x->o->fidelity != SIM_ANALYTIC && crosses) || x->o->jitter > 0 ||
		     plan_images_vary(p, x->m)) &&
		    (int64_t)x->nunits * P <= FOLD_EVERY_MAX)
			x->K = x->nunits;
		if (x->K > x->nunits)
			x->K = x->nunits;
		/* units placed differently: all of them (when affordable); the
		 * rest wait for the units they stand for (unit_launch) */
		x->alike = true;
		if (!x->o->exact && x->nunits > 1) {
			int a = blocks_alike(x, x->D, x->U, x->D / x->U);
			if (a < 0) {
				rc = TS_ENOMEM;
				goto out;
			}
			if (!a && x->o->replicas <= 0 && (int64_t)x->nunits * P <= FOLD_ALL_MAX)
				x->K = x->nunits;
			ro->units_differ = !a;
			x->alike = a;
		}
		for (int k = 0; k < x->K; k++)
			x->sim_unit[k] = sc[k].u;
		for (int i = 0; i < x->nunits; i++)
			x->unit_of[sc[i].u] = i < x->K ? i : i % x->K;
	}
	x->ninst = x->o->exact ? p->tp * x->D * P : x->K * P;
	{
		double states = 0;
		for (int s = 0; s < P; s++)
			states += (double)x->w->roles[s].nops * (x->ninst / P);
		if (states > EXEC_MAX_OP_STATES) {
			rc = ts_error_set(x->errp, TS_EINPUT,
					  "simulating %d ranks would keep %.3g op states (each rank x its "
					  "stage's ops), beyond the %.3g the simulator holds (about 7.5 "
					  "GB)%s",
					  (int)x->ninst, states, EXEC_MAX_OP_STATES,
					  x->o->exact ? "; drop --exact or use fewer, larger micro-batches"
						      : "; use fewer, larger micro-batches");
			goto out;
		}
	}
	/* every simulated rank's ops outside the vision encoder end in a
	 * slice (tl_add): refused before the ranks' state is allocated, not
	 * at the 4 millionth slice (Qwen3-VL-2B, dp 64, 1,024 micro-batches
	 * each: 3.7 s and 600 MB first); the encoder's once the images are
	 * drawn, below */
	if (x->tl && (rc = timeline_fits(x, false)))
		goto out;
	x->in = calloc((size_t)x->ninst, sizeof(*x->in));
	/* (under --jitter with every unit simulated, their DP ops run as
	 * their own: the background's groups start from delays taken from
	 * the representatives' times, which each rank's noise sets apart;
	 * found by review: Qwen3-VL-2B pp 2 ZeRO 1 on one node, flow, jitter
	 * 0.2: -0.63 % under --exact, 0.00 % now) */
	x->dp_bgon = !x->o->exact && x->alike && x->o->fidelity != SIM_ANALYTIC && !x->use_memo &&
		     !x->o->free_comm && !(x->o->jitter > 0 && x->K == x->nunits);
	if ((rc = dp_bg_alloc(x)))
		goto out;
	if (!x->in) {
		rc = TS_ENOMEM;
		goto out;
	}
	for (int32_t ii = 0; ii < x->ninst; ii++) {
		struct inst *in = &x->in[ii];
		int s, k;
		if (x->o->exact) {
			s = ii / (p->tp * x->D);
			in->tpi = ii % p->tp;
			in->pos = (ii / p->tp) % x->D;
			in->unit = -1;
		} else {
			s = ii / x->K;
			k = ii % x->K;
			in->unit = k;
			in->pos = x->sim_unit[k] * x->U;
			in->tpi = 0;
		}
		if ((rc = inst_alloc(x, in, s, mm)))
			goto out;
		/* folded: the largest loads of the unit's positions; under ZeRO
		 * 2/3, whose data-parallel collectives meet every micro-batch,
		 * of every unit it stands for, each micro-batch waiting for its
		 * heaviest replica (found by a fuzzer: 4 of 32 units taken by
		 * their total load were 4.6 % under --exact, Qwen3-VL-2B, ZeRO
		 * 2, Poisson(0.5) images, 11 micro-batches, analytic) */
		for (int j = 0; j < mm; j++) {
			if (x->o->exact) {
				in->vis_f[j] = vis[(size_t)(in->pos / p->cp) * mm + j];
				for (int l = 0; l < x->nle; l++)
					in->exp_f[(size_t)j * L + l] =
						exp_[load_ix(slot_of(x, in->tpi, in->pos), mm, j, L, l)];
				continue;
			}
			in->vis_f[j].lin = in->vis_f[j].att = 0;
			for (int l = 0; l < x->nle; l++)
				in->exp_f[(size_t)j * L + l] = 0;
			for (int u = 0; u < x->nunits; u++) {
				if (p->zero >= 2 ? x->unit_of[u] != in->unit : u != x->sim_unit[in->unit])
					continue;
				struct vload a = unit_vis(x, vis, u, mm, j);
				if (vscore(x, a) > vscore(x, in->vis_f[j]))
					in->vis_f[j] = a;
				/* every slot of the positions (whole experts: the
				 * TP ranks the representative stands for, which meet
				 * at the next TP collective; the all-to-alls take
				 * every member's own: ep_weights) */
				for (int l = 0; l < x->nle; l++) {
					float *e = &in->exp_f[(size_t)j * L + l], b = unit_exp(x, exp_, u, mm, j, l);
					*e = b > *e ? b : *e;
				}
			}
		}
		if ((rc = jit_loads(x, in, vis, exp_, mm)))
			goto out;
	}
	if (x->tl && (rc = timeline_fits(x, true)))
		goto out;
	for (int32_t s = 0; s < P && x->dp_bgon; s++)
		for (int32_t i = 0; i < x->w->roles[s].nops && !x->err; i++)
			if (dp_coll(&x->w->roles[s].ops[i]))
				dp_emit(x, s, i); /* (those waiting on nothing off the DP stream) */
	for (int32_t ii = 0; ii < x->ninst && !x->err; ii++) {
		const struct wl_role *r = &x->w->roles[x->in[ii].role];
		for (int32_t i = 0; i < r->nops && !x->err; i++)
			if (x->in[ii].ndeps[i] == 0 && x->in[ii].t0[i] < 0)
				op_ready(x, ii, i);
	}
	sim_run(&x->eng, TS_SIMTIME_MAX);
	for (int64_t i = 0; i < x->ncolls && !x->err; i++)
		if (x->colls[i] && sim_coll_error(x->colls[i]))
			set_err(x, sim_coll_error(x->colls[i]));
	if (x->err) {
		rc = x->err;
		goto out;
	}
	for (int32_t ii = 0; ii < x->ninst; ii++) {
		const struct wl_role *r = &x->w->roles[x->in[ii].role];
		for (int32_t i = 0; i < r->nops; i++) {
			if (x->in[ii].t1[i] < 0) {
				rc = ts_error_set(x->errp, TS_EINPUT,
						  "simulation deadlocked at stage %d op %d (%s)", r->stage, i,
						  r->ops[i].name);
				goto out;
			}
			if (x->in[ii].t1[i] > end)
				end = x->in[ii].t1[i];
		}
	}
	ro->iter_s = time_to_s(end);
	if (!(ro->iter_s <= SIM_HORIZON_S)) {
		rc = ts_error_set(x->errp, TS_EINPUT,
				  "the iteration would last %.3g s of simulated time, beyond the "
				  "simulator's horizon of %.0e s (absurd bandwidths or sizes in the "
				  "cluster, plan or calibration?)",
				  ro->iter_s, SIM_HORIZON_S);
		goto out;
	}
	rbusy = malloc(2 * (size_t)x->w->nroles * sizeof(*rbusy));
	if (!rbusy) {
		rc = TS_ENOMEM;
		goto out;
	}
	for (int s = 0; s < 2 * x->w->nroles; s++)
		rbusy[s] = -1;
	for (int32_t ii = 0; ii < x->ninst; ii++) {
		double c, o, h, busy = 0;
		int role = x->in[ii].role;
		const struct wl_role *r = &x->w->roles[role];
		busy_time(x, &x->in[ii], &c, &o, &h);
		if (c + o > best + 1e-12) {
			best = c + o;
			ro->crit = role;
		}
		if (c + o > rbusy[2 * role] + 1e-12) {
			rbusy[2 * role] = c + o;
			rbusy[2 * role + 1] = c - h;
		}
		/* the busiest DP stream of any rank: every stage's reduction must
		 * keep up under SSP/async (found by review: the critical stage's
		 * was taken, and a stage with more gradients but less compute
		 * made the step 14 % short), timed from each op's launch (every
		 * member there), not from this rank's arrival: a fast replica's
		 * wait for the slowest is not reduction time */
		for (int32_t i = 0; i < r->nops; i++)
			if (r->ops[i].stream == WL_S_DP) {
				simtime_ps go = x->in[ii].xfer[i] > x->in[ii].t0[i] ? x->in[ii].xfer[i]
										       : x->in[ii].t0[i];
				busy += time_to_s(x->in[ii].t1[i] - go);
			}
		if (busy > ro->dp_busy_s)
			ro->dp_busy_s = busy;
		/* the path starts on the busiest of the ranks whose last op
		 * ends the iteration (found by review: the first, under
		 * --exact a light replica, whose idle compute stream made its
		 * overlapped DP buckets exposed where the folded heaviest
		 * replica's backward hid them) */
		if (end_inst < 0 || c + o > end_busy + 1e-12)
			for (int32_t i = 0; i < r->nops; i++)
				if (x->in[ii].t1[i] == end) {
					end_inst = ii;
					end_op = i;
					end_busy = c + o;
					break;
				}
	}
	{
		int crit;
		if (end_inst < 0)
			goto out;
		if ((rc = critical_path(x, end_inst, end_op, &ps)))
			goto out;
		/* the critical stage: the one the path spends the most compute
		 * time on, its host waits included, else the busiest (found by
		 * review: with the host's dispatch, a stage busiest with its
		 * waits was taken while the path ran on another stage's
		 * heavier GPU work, which then showed as bubble: Qwen3-VL-2B
		 * pp 4, 8 micro-batches, communication free: bubble 0.161 s
		 * against 0.092 without the dispatch) */
		crit = ro->crit;
		for (int s = 0; s < x->w->nroles; s++)
			if (ps.role_s[s] > ps.role_s[crit] + 1e-12)
				crit = s;
		ro->crit = crit;
		/* the path's compute on the critical stage's ranks, whichever
		 * rank of it the path is on (a straggler's or the most loaded
		 * replica's compute is compute: found by review, it was
		 * bubble beyond one rank's busy time, on plans with no
		 * pipeline), and at least up to that stage's own GPU busy
		 * time; other stages' compute (fill and drain) and
		 * unexplained waits are the bubble */
		ro->bd.compute_s = rbusy[2 * crit + 1];
		if (ps.role_s[x->w->nroles + crit] > ro->bd.compute_s)
			ro->bd.compute_s = ps.role_s[x->w->nroles + crit];
		if (ps.comp_s < ro->bd.compute_s)
			ro->bd.compute_s = ps.comp_s;
		ro->bd.optimizer_s = ps.opt_s;
		ro->bd.host_s = ps.host_s;
		for (int k = 0; k < SIM_COMM_COUNT; k++)
			ro->bd.exposed_comm_s[k] = ps.comm_s[k];
		ro->bd.bubble_s = ps.comp_s - ro->bd.compute_s + ps.idle_s;
	}
out:
	free(ps.role_s);
	free(rbusy);
	free(vis);
	x->loads = NULL;
	free(exp_);
	free(ef);
	free(sc);
	return rc;
}

static void exec_release(struct exec *x)
{
	for (int64_t i = 0; i < x->ncolls; i++)
		sim_coll_free(x->colls[i]);
	free(x->colls);
	x->colls = NULL;
	x->ncolls = x->capcolls = 0;
	x->colls_started = 0;
	if (x->have_net)
		sim_net_release(&x->net);
	x->have_net = false;
	sim_engine_release(&x->eng);
	for (int32_t i = 0; x->in && i < x->ninst; i++)
		inst_release(&x->in[i]);
	free(x->in);
	x->in = NULL;
	x->ninst = 0;
	dp_bg_free(x);
	for (int s = 0; x->succ_off && s < x->w->nroles; s++)
		free(x->succ_off[s]);
	for (int s = 0; x->succ && s < x->w->nroles; s++)
		free(x->succ[s]);
	free(x->succ_off);
	free(x->succ);
	x->succ_off = x->succ = NULL;
	for (struct launch *l = x->inflight, *n; l; l = n) {
		n = l->fnext;
		for (struct dp_slice *q = l->slices, *qn; q; q = qn) {
			qn = q->next;
			free(q);
		}
		free(l->waiters);
		free(l->granks);
		free(l->gnext);
		free(l);
	}
	x->inflight = NULL;
	if (x->rtab)
		for (uint32_t i = 0; i < x->rcap; i++)
			for (struct launch *l = x->rtab[i], *n; l; l = n) {
				n = l->next;
				free(l->waiters);
				free(l);
			}
	free(x->rtab);
	x->rtab = NULL;
	free(x->unit_of);
	free(x->sim_unit);
	x->unit_of = x->sim_unit = NULL;
}

/* Build, run and measure one workload variant. */
static int predict_variant(struct exec *x, const struct wl_opts *wo, struct run_out *ro,
			   struct sim_prediction *out)
{
	struct workload w;
	int rc;
	memset(&w, 0, sizeof(w));
	if ((rc = workload_build(&w, x->m, x->p, wo, x->errp)))
		return rc;
	x->w = &w;
	out->ops = w.nops;
	out->micro_batches = w.micro;
	sim_engine_init(&x->eng);
	if (x->o->fidelity != SIM_ANALYTIC) {
		if ((rc = sim_net_init_topo(&x->net, &x->eng, x->o->fidelity, x->t, x->errp)))
			goto out;
		x->net.par.coalesce = x->o->coalesce;
		x->net.par.spray = x->o->spray;
		x->have_net = true;
	}
	x->rcap = 4096;
	x->rtab = calloc(x->rcap, sizeof(*x->rtab));
	if (!x->rtab || (rc = build_succ(x))) {
		rc = ts_error_set(x->errp, TS_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = rng_init(&x->rng, x->o->seed)))
		goto out;
	rc = run_once(x, ro);
	rng_release(&x->rng);
	out->events += x->eng.fired;
	out->instances = x->ninst;
	if (x->have_net) {
		out->flows += x->net.st.xfers_started;
	}
	out->collectives += x->colls_started;
	if (!rc) {
		/* a role's ops are those of each of its tp x dp x cp ranks */
		double ranks = (double)x->p->tp * x->p->dp * x->p->cp;
		for (int s = 0; s < w.nroles; s++)
			for (int32_t i = 0; i < w.roles[s].nops; i++) {
				const struct wl_op *op = &w.roles[s].ops[i];
				if (op->kind == WL_K_COMPUTE)
					ro->hw_flops +=
						op->flops * ranks *
						(op->vary == WL_V_EXPERT   ? ro->expert_load_mean
						 : op->vary == WL_V_VISION ? vflops(op, ro->vision_load_mean)
									   : 1);
				/* (what a rank moves for its experts, and the
				 * encoder's all-reduces: at the mean drawn load;
				 * found by review: the encoder's at the plan's
				 * mean, which counted images cut at seq_len) */
				if (op->kind == WL_K_COLL || op->kind == WL_K_SEND)
					ro->comm_bytes[kind_of_op(op)] +=
						op->size_bytes / w.nroles *
						(op->vary == WL_V_EXPERT   ? ro->expert_load_mean
						 : op->vary == WL_V_VISION ? ro->vision_load_mean.lin
									   : 1);
			}
	}
out:
	if (rc && x->errp && !x->errp->code)
		ts_error_set(x->errp, rc, "simulation failed (%s)",
			     rc == TS_ENOMEM ? "out of memory" : "internal error");
	exec_release(x);
	workload_release(&w);
	x->w = NULL;
	return rc;
}

/* ---- the prediction ------------------------------------------------------------------ */

int sim_predict(const struct topo *t, const struct model *m, const struct plan *p,
		const struct sim_predict_opts *o, struct sim_prediction *out, struct ts_error *err)
{
	struct exec x;
	struct sim_predict_opts oo;
	struct run_out sync_run, nosync;
	struct wl_opts wo;
	struct memory_env env;
	struct memory_report *mr = NULL;
	struct timespec ts0, ts1;
	int need = p->tp * p->pp * p->dp * p->cp, rc = 0;
	bool placed_apart = false;     /* the exact fallback's cause: the placement */
	double model_f, hw_f, peak;

	clock_gettime(CLOCK_MONOTONIC, &ts0);
	memset(out, 0, sizeof(*out));
	memset(&x, 0, sizeof(x));
	memset(&sync_run, 0, sizeof(sync_run));
	memset(&nosync, 0, sizeof(nosync));
	if (plan_microbatches(p) > PLAN_MAX_MICRO)
		return ts_error_set(err, TS_EINPUT,
				    "%s: %d micro-batches per replica (global batch %d / (dp %d x "
				    "micro-batch %d)): more than the %d the simulator holds (it builds "
				    "every op of every micro-batch); raise micro_batch or dp",
				    p->src[PF_GLOBAL][0] ? p->src[PF_GLOBAL] : "global_batch (default)",
				    plan_microbatches(p), p->global_batch, p->dp, p->micro_batch,
				    PLAN_MAX_MICRO);
	if (need > t->ngpus)
		return ts_error_set(err, TS_EINFEASIBLE,
				    "the plan needs %d GPUs (tp %d x pp %d x dp %d x cp %d), the cluster "
				    "has %d",
				    need, p->tp, p->pp, p->dp, p->cp, t->ngpus);
	oo = *o;
	x.t = t;
	x.m = m;
	x.p = p;
	x.es = expert_slots(p);
	x.o = &oo;
	x.errp = err;
	/* (before the fold's rules: the host's dispatch is one of them) */
	if (o->compute)
		x.comp = *o->compute;
	else
		sim_compute_init(&x.comp, &t->cl.gpu);
	sim_compute_set_host_link(&x.comp, t->cl.node.pcie_Bps);
	{
		/* units of several positions (EP, CP) placed unalike inside:
		 * every rank, when affordable (blocks_alike of units covers one-position
		 * units) */
		int D = p->dp * p->cp;
		if (!oo.exact && oo.replicas <= 0 && unit_positions(p) > 1 && need <= EXACT_FALLBACK_MAX) {
			int a = blocks_alike(&x, D, 1, unit_positions(p));
			if (a < 0)
				return ts_error_set(err, TS_ENOMEM, "out of memory");
			if (!a) {
				oo.exact = out->exact_fallback = placed_apart = true;
				out->exact_why = "the placement puts the data-parallel positions of a "
						 "unit differently in the fabric";
			}
		}
		/* images that vary between replicas: a unit's fold takes each
		 * micro-batch's heaviest replica, but its replicas absorb each
		 * other's encoder skew between the MoE exchanges (a stage's
		 * backward encoder of one micro-batch and forward of the next
		 * run between two of them), so the fold is pessimistic
		 * (Qwen3-VL-30B-A3B on 32 GPUs, tp 2, pp 2, EP 8, the quick
		 * start's images: 1.6 % over --exact at 16 micro-batches, 1.3-2.0 %
		 * with overlap.ep, 1.2-1.5 % with the allgather dispatcher; 0.4 %
		 * at 128 GPUs, 0.8 % at 512): every rank, up to IMAGES_EXACT_MAX
		 * GPUs */
		bool vary = plan_images_vary(p, m);
		if (!oo.exact && oo.replicas <= 0 && vary && unit_positions(p) > 1 &&
		    need <= IMAGES_EXACT_MAX) {
			oo.exact = out->exact_fallback = true;
			out->exact_why = "the replicas of a unit draw their own images (its fold "
					 "takes each micro-batch's heaviest)";
		}
		/* images that vary between replicas under ZeRO 2/3 with the
		 * host's dispatch priced: a representative takes each
		 * micro-batch's heaviest replica of those it stands for (their
		 * DP collectives meet every micro-batch), right while the GPUs
		 * set the pace; where the hosts do, each runs ahead on its own,
		 * issuing the encoder's ops only where its own samples have
		 * images, and the iteration follows the replica whose host has
		 * the most to issue (Qwen3-VL-2B, tp 2, ZeRO 2, Poisson(0.5)
		 * images, 64 GPUs, dispatch 46 us: folded 0.7503 s, --exact
		 * 0.6443 s; each unit's own loads gave 0.6443 s there but 7.5 %
		 * under --exact without dispatch): every rank, up to
		 * IMAGES_EXACT_MAX GPUs */
		if (!oo.exact && oo.replicas <= 0 && vary && p->zero >= 2 &&
		    x.comp.dispatch_s > 0 && need <= IMAGES_EXACT_MAX) {
			oo.exact = out->exact_fallback = true;
			out->exact_why = "under ZeRO 2/3 the replicas of a unit draw their own "
					 "images and their hosts issue them at their own pace (its "
					 "fold takes each micro-batch's heaviest)";
		}
		/* --jitter where a representative stands for several ranks
		 * of its unit (TP, CP, EP): each draws its own noise into the
		 * unit's shared exchanges, whose times (a MoE position's own
		 * expert load, a CP ring's steps) the representative carries
		 * only approximately (found by review's fuzzer at jitter 0.2:
		 * Qwen3-VL-30B-A3B EP 8 ZeRO 3 on 64 GPUs +2.82 %, GPT-2 tp 2
		 * pp 2 gpipe -1.28 %, pp 4 CP 2 -1.75 % under --exact; one rank
		 * per unit folds to --exact within 1e-9): every rank, up to
		 * HASHED_EXACT_MAX GPUs */
		if (!oo.exact && oo.replicas <= 0 && oo.jitter > 0 && p->tp * unit_positions(p) > 1 &&
		    need <= HASHED_EXACT_MAX) {
			oo.exact = out->exact_fallback = true;
			out->exact_why = "under --jitter a unit's ranks (TP, CP, EP) each draw their "
					 "own noise into its shared exchanges (its fold carries them "
					 "approximately)";
		}
		/* a MoE unit of several positions with overlap.dp: its
		 * positions draw their own expert loads and reach each
		 * overlapped bucket at their own times, where the fold's
		 * representative runs the unit's heaviest. Found first on
		 * ECMP-hashed rings (Qwen3-VL-30B-A3B tp 4 EP 4 on the
		 * leaf-spine: -3.9 to +3.1 % over --exact at seeds 1-10), then
		 * by review without any multipath (tp 2 EP 8, interleaved, 8
		 * nodes of one clos3-pods.json leaf: +2.04 / -1.22 % at seeds
		 * 3-4, the same sprayed): every rank, up to HASHED_EXACT_MAX
		 * GPUs, on the network */
		if (!oo.exact && oo.replicas <= 0 && oo.fidelity != SIM_ANALYTIC &&
		    need <= HASHED_EXACT_MAX && m->experts > 0 && p->ep > 1 && !p->pad_to_capacity &&
		    p->overlap_dp && unit_positions(p) > 1) {
			oo.exact = out->exact_fallback = true;
			out->exact_why = "the positions of a MoE unit reach each overlapped DP "
					 "bucket at their own times (its fold runs the unit's "
					 "heaviest expert load)";
		}
		/* exchanges on ECMP-hashed paths of a unit's positions' own
		 * (positions_hashed, dp_rings_hashed): every rank, up to
		 * HASHED_EXACT_MAX GPUs */
		if (!oo.exact && oo.replicas <= 0 && !oo.spray && oo.fidelity != SIM_ANALYTIC &&
		    need <= HASHED_EXACT_MAX) {
			/* a tied embedding's gradient received before a CPU
			 * optimizer and the sharded parameters' gather: each
			 * rank's gather follows its own slice, but the CPU
			 * optimizer's time depends on the host thread's earlier
			 * work, so the fold's groups wait for the
			 * representatives (find_erecv), for the slowest slice
			 * (Qwen3-VL-2B-sized GPT tp 4 pp 2 interleaved, the
			 * distributed optimizer, --offload optimizer, overlap.dp,
			 * fat-tree-k8.json with 64 one-GPU nodes: +1.3 / +1.8 %
			 * over --exact at seeds 2-3, found by review) */
			bool tied_cpu = m->tie_embeddings && p->pp > 1 &&
					p->offload != PLAN_OFF_NONE &&
					(p->distributed_optimizer || p->zero >= 1);
			/* the step's length under SSP and async is the busiest
			 * rank's DP reduction time, which the fold takes from its
			 * representatives' ops, held until every group's ended:
			 * on hashed rings the slowest group's (Qwen3-VL-8B tp 8,
			 * ZeRO 2, SSP, clos3-pods.json 8 nodes: +18.9 % over
			 * --exact at seed 3; llama3-8b tp 8 cp 2 ZeRO 3 SSP,
			 * refused since: +15.0 %); ZeRO 3 gathers and reduces every micro-batch
			 * behind the slowest group (llama3-8b tp 2, 2:1 leaf-spine,
			 * 8 nodes: +1.7 / +1.5 / +0.6 % at seeds 1-3). Found by
			 * review; sprayed, equal. */
			bool busy = p->sync == PLAN_SYNC_SSP || p->sync == PLAN_SYNC_ASYNC;
			bool zero3 = p->zero >= 3;
			/* overlap.dp where a representative stands for more than
			 * one DP ring (its TP ranks', its unit's positions'): each
			 * rank's compute is slowed while its own ring's buckets
			 * run, and on hashed rings they run for their own times,
			 * where the fold slows its representative by its own
			 * ring's (found by review: llama3-8b tp 4, clos3-pods.json
			 * 8 nodes, -1.33 to +1.33 % over --exact at seeds 1-4;
			 * Qwen3-VL-8B tp 4 SP on the leaf-spine, +1.37 / +2.16 %
			 * at seeds 1-2) */
			bool ovdp = p->overlap_dp && p->tp * unit_positions(p) > 1;
			int h = 0;
			x.D = D;
			/* units placed unalike (a stage boundary inside a host)
			 * whose representative stands for several ranks, each
			 * with pipeline sends or DP rings on ECMP-hashed paths of
			 * its own (found by review: gpt2 tp 4 SP pp 2 on 5 nodes
			 * of clos3-pods.json, -4.90 % under --exact; Qwen3-VL-2B
			 * tp 4 pp 2 interleaved on 6 nodes of the 2:1 leaf-spine,
			 * +5.34 %; equal at 4 and 8 nodes, and sprayed) */
			int unalike = 0, dh = 0; /* dh: dp_rings_hashed, where asked */
			if (p->tp * unit_positions(p) > 1 && p->pp > 1 &&
			    (unalike = blocks_alike(&x, D, unit_positions(p), D / unit_positions(p))) >= 0)
				unalike = !unalike;
			if (unalike >= 0 && (unalike || tied_cpu || busy || zero3 || ovdp))
				dh = dp_rings_hashed(&x);
			if (unalike < 0 || dh < 0)
				return ts_error_set(err, TS_ENOMEM, "out of memory");
			if (unalike && (dh > 0 || pp_hashed(&x))) {
				h = 1;
				out->exact_why = "units sit unalike in the fabric and their ranks' "
						 "pipeline sends or DP rings take ECMP-hashed paths of "
						 "their own (the fold's representative stands for them)";
			} else if (p->cp > 1 && (h = positions_hashed(&x)) > 0) {
				out->exact_why = "the positions of a unit cross hosts on ECMP-hashed "
						 "paths of their own (its fold waits at each exchange "
						 "for its slowest)";
			} else if (h == 0 && (tied_cpu || busy || zero3 || ovdp) && dh > 0) {
				h = 1;
				out->exact_why =
					tied_cpu ? "each rank's tied-embedding gradient reaches its CPU "
						     "optimizer and ECMP-hashed parameter gather at its "
						     "own time (the fold waits for the slowest)"
					: busy ? "under SSP or async the step lasts the busiest "
						 "rank's DP reductions, on ECMP-hashed rings of "
						 "their own (the fold's wait for the slowest group)"
					: zero3 ? "ZeRO-3's gathers and reductions run every "
						  "micro-batch on ECMP-hashed rings of their own "
						  "(the fold waits for the slowest group at each)"
						: "each rank's compute is slowed while its own "
						  "overlapped DP buckets run, on ECMP-hashed rings "
						  "of their own (the fold slows a representative by "
						  "its own ring's)";
			}
			if (h < 0)
				return ts_error_set(err, TS_ENOMEM, "out of memory");
			if (h)
				oo.exact = out->exact_fallback = true;
		}
	}
	if (p->precision == PLAN_DT_FP8 && !(x.comp.peak_fp8_flops > 0)) {
		/* FP8 GEMMs need FP8 tensor cores (Hopper and later) */
		rc = ts_error_set(err, TS_EINPUT,
				  "%s: fp8: GPU '%s' has no FP8 rate (the cluster's "
				  "gpu.fp8_tflops or the calibration's peak_fp8_flops is 0 or absent)",
				  p->src[PF_PRECISION][0] ? p->src[PF_PRECISION] : "precision",
				  t->cl.gpu.name);
		goto out;
	}
	x.use_memo = o->memo > 0;
	x.ranks_buf = malloc((size_t)need * sizeof(int32_t));
	x.wbuf = malloc((size_t)p->ep * sizeof(double));
	mr = malloc(sizeof(*mr));
	if (!x.ranks_buf || !x.wbuf || !mr) {
		rc = ts_error_set(err, TS_ENOMEM, "out of memory");
		goto out;
	}
	if (o->timeline) {
		x.tl = calloc(1, sizeof(*x.tl));
		if (!x.tl) {
			rc = ts_error_set(err, TS_ENOMEM, "out of memory");
			goto out;
		}
	}
	wl_opts_init(&wo);
	/* each op of a traced rank is a slice: a workload of more ops than
	 * the timeline holds is refused before it is built (tl_add checks
	 * the ranks' sum as they run) */
	if (x.tl)
		wo.max_slices = SIM_TIMELINE_MAX_SLICES;
	if ((rc = predict_variant(&x, &wo, &sync_run, out)))
		goto out;
	out->iteration_time_s = sync_run.iter_s;
	out->bd = sync_run.bd;
	memcpy(out->comm_bytes, sync_run.comm_bytes, sizeof(out->comm_bytes));
	out->critical_stage = sync_run.crit;
	out->expert_load_max = sync_run.expert_load_max;
	out->units_differ = sync_run.units_differ || placed_apart;
	out->units = x.nunits;
	out->units_simulated = x.o->exact ? x.nunits : x.K;
	out->expert_load_mean = sync_run.expert_load_max > 0 ? sync_run.expert_load_mean : 0;
	/* (dp 1: no replicas to relax; with cp > 1 the run without the
	 * replicas' reduction keeps the CP group's, workload's dp_flush) */
	if (p->sync != PLAN_SYNC_EVERY_STEP && p->dp > 1) {
		/* the same iteration without the gradient reduction */
		struct sim_timeline *keep = x.tl;
		int64_t ops = out->ops;
		int micro = out->micro_batches;
		x.tl = NULL;
		wo.dp_reduce = false;
		wo.max_slices = 0;
		rc = predict_variant(&x, &wo, &nosync, out);
		x.tl = keep;
		if (rc)
			goto out;
		/* the workload is the synchronous run's (found by review: the
		 * second run's, without the reduction's ops); the engine's
		 * counters add up over both runs */
		out->ops = ops;
		out->micro_batches = micro;
		if (p->sync == PLAN_SYNC_LOCAL_SGD) {
			/* Lin et al. 2020 (local SGD): one reduction every H steps;
			 * per step = ((H - 1) t_local + t_sync) / H. */
			double H = p->sync_interval > 0 ? p->sync_interval : 1;
			out->iteration_time_s = ((H - 1) * nosync.iter_s + sync_run.iter_s) / H;
			for (int k = 0; k < SIM_COMM_COUNT; k++)
				out->bd.exposed_comm_s[k] = ((H - 1) * nosync.bd.exposed_comm_s[k] +
							     sync_run.bd.exposed_comm_s[k]) / H;
			out->bd.compute_s = ((H - 1) * nosync.bd.compute_s + sync_run.bd.compute_s) / H;
			out->bd.optimizer_s = ((H - 1) * nosync.bd.optimizer_s + sync_run.bd.optimizer_s) / H;
			out->bd.bubble_s = ((H - 1) * nosync.bd.bubble_s + sync_run.bd.bubble_s) / H;
			out->bd.host_s = ((H - 1) * nosync.bd.host_s + sync_run.bd.host_s) / H;
			for (int k = 0; k < SIM_COMM_COUNT; k++)
				out->comm_bytes[k] = ((H - 1) * nosync.comm_bytes[k] +
						      sync_run.comm_bytes[k]) / H;
		} else if (p->sync == PLAN_SYNC_SSP && p->staleness <= 0) {
			/* staleness 0 is synchronous */
		} else {
			/* SSP with bound >= 1 / async (Ho et al. 2013): the reduction of
			 * step k overlaps steps k+1..k+s; in steady state a step takes
			 * the longer of the step without reduction and the reduction's
			 * own busy time (one reduction per step must keep up). */
			double t_red = sync_run.dp_busy_s;
			out->iteration_time_s = nosync.iter_s > t_red ? nosync.iter_s : t_red;
			out->bd = nosync.bd;
			/* (the run without reduction still has ZeRO-3 gathers and the
			 * tied-embedding exchange) */
			out->bd.exposed_comm_s[SIM_COMM_DP] += out->iteration_time_s - nosync.iter_s;
		}
	}
	/* FLOPs and utilisation */
	/* model FLOPs: Megatron's count without recompute (what `model`
	 * reports, with the vocabulary padded as the plan trains it); hardware
	 * FLOPs: what the ops executed (recompute, causal flash attention,
	 * dropped or padded expert tokens, the drawn images). Both count the
	 * images drawn, as far as they fit in the sequence (found by review:
	 * model FLOPs took the plan's mean images at the mean size, crediting
	 * images cut at seq_len and missing attention's P^2 spread) */
	{
		struct plan q = *p;
		q.recompute = PLAN_RC_NONE;
		q.images_per_sample.kind = PLAN_DIST_FIXED;
		q.images_per_sample.value = 0;
		model_f = model_flops_iteration(m, &q) + 3 * sync_run.vision_fwd_flops;
		hw_f = sync_run.hw_flops;
	}
	out->model_flops = model_f;
	out->hw_flops = hw_f;
	out->ngpus = need;
	peak = x.comp.peak_flops;
	if (out->iteration_time_s > 0) {
		out->tokens_per_s = (double)p->global_batch * p->seq_len / out->iteration_time_s;
		out->tflops_per_gpu = model_f / out->iteration_time_s / need / 1e12;
		out->mfu = peak > 0 ? model_f / (out->iteration_time_s * need * peak) : 0;
		out->hfu = peak > 0 ? hw_f / (out->iteration_time_s * need * peak) : 0;
	}
	memset(&env, 0, sizeof(env));
	env.gpu_mem_bytes = t->cl.gpu.mem_bytes;
	env.ngpus = need;
	env.host_mem_bytes = 0;
	/* stage 0 holds the images drawn for the run, not the mean's */
	env.vision_tokens = x.vtok;
	env.vision_rows = p->dp;
	env.vision_micro = plan_microbatches(p);
	memory_eval(m, p, &env, mr);
	out->memory_gib_per_gpu = bytes_to_gib(mr->peak_bytes);
	out->fits = mr->fits;
	if (x.tl) {
		int32_t per = 0;
		out->tl = x.tl;
		x.tl = NULL;
		per = out->instances;
		out->tl->ntracks = per * SIM_TL_PER;
		out->tl->track = calloc((size_t)out->tl->ntracks, sizeof(*out->tl->track));
		out->tl->proc = calloc((size_t)(per > 0 ? per : 1), sizeof(*out->tl->proc));
		if (!out->tl->track || !out->tl->proc) {
			rc = ts_error_set(err, TS_ENOMEM, "out of memory");
			goto out;
		}
		for (int32_t i = 0; i < per; i++) {
			static const char *const sn[SIM_TL_PER] = { "compute", "tp/ep/cp comm",
								    "pp send",	"pp recv",
								    "dp comm", "moe dispatch",
								    "host offload" };
			int npst = per / p->pp;
			snprintf(out->tl->proc[i], sizeof(out->tl->proc[0]),
				 x.o->exact ? "rank %d stage %d" : "rep %d stage %d",
				 x.o->exact ? i : i % npst, i / npst);
			for (int s = 0; s < SIM_TL_PER; s++)
				snprintf(out->tl->track[i * SIM_TL_PER + s], sizeof(out->tl->track[0]),
					 "%s %s", out->tl->proc[i], sn[s]);
		}
	}
out:
	clock_gettime(CLOCK_MONOTONIC, &ts1);
	out->wall_s = (double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec);
	if (x.tl) {
		free(x.tl->s);
		free(x.tl);
	}
	free(x.ranks_buf);
	free(x.wbuf);
	free(x.jit_mx);
	free(x.vtok);
	free(x.memo.e);
	free(x.role_hosts);
	free(x.an_memo.e);
	free(x.picks.e);
	for (int32_t i = 0; i < x.na2a; i++)
		for (int d = 0; d < x.a2a[i].draws; d++)
			if (x.a2a[i].ok[d])
				sim_a2a_release(&x.a2a[i].a[d]);
	free(x.a2a);
	free(x.a2a_ld);
	free(mr);
	if (rc)
		sim_prediction_release(out);
	return rc;
}

void sim_prediction_release(struct sim_prediction *out)
{
	if (out->tl) {
		free(out->tl->track);
		free(out->tl->proc);
		free(out->tl->s);
		free(out->tl);
		out->tl = NULL;
	}
}

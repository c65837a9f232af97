/* exec.h: the iteration executor: predict one training iteration of a model
 * under a parallel plan on a topology.
 *
 * Data flow: models/workload.h builds the op DAG of one iteration per role
 * (pipeline stage); sim_predict() runs it on the event engine, a compute
 * stream and communication streams per representative rank, with the
 * collectives on the network model of the whole topology (every concurrent
 * group that crosses a host is started, so congestion is real), and returns
 * the iteration time, throughput, MFU/HFU, memory and the breakdown that
 * `trainsim predict --json` prints. Traces (Chrome trace-event JSON, SVG)
 * are written from the timeline a prediction keeps when asked.
 *
 * Folding (DESIGN.md, Scale): ranks of one stage in one data-parallel unit
 * (the ranks an EP group couples) run as one representative; the K heaviest
 * units (by their drawn vision and expert load) are simulated and the others
 * put their flows on the network alongside them. `exact` simulates every
 * rank. Deterministic for a given seed.
 *
 * Ownership: sim_predict() reads t, m, p and o and keeps no pointer to them;
 * out owns its timeline (free with sim_prediction_release). */
#ifndef TS_SIM_EXEC_H
#define TS_SIM_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/fileio.h"
#include "models/models.h"
#include "sim/compute.h"
#include "sim/sim.h"
#include "topo/topo.h"

/* Communication kinds of the breakdown, in DESIGN.md's order. */
enum sim_comm_kind { SIM_COMM_TP, SIM_COMM_PP, SIM_COMM_DP, SIM_COMM_EP, SIM_COMM_CP, SIM_COMM_COUNT };
const char *sim_comm_kind_name(enum sim_comm_kind k); /* "tp", "pp", ... */

struct sim_predict_opts {
	enum sim_fidelity fidelity;   /* analytic | flow | packet */
	bool exact;                   /* simulate every rank (no folding) */
	uint64_t seed;                /* RNG seed for replica variation and ECMP */
	const struct sim_compute *compute; /* compute model; NULL = defaults for the topology's GPU */
	double overlap_slowdown;      /* compute slowdown while own communication runs, factor >= 1; 0 = compute's */
	double jitter;                /* relative sigma of per-op compute jitter, dimensionless (0 = none) */
	int replicas;                 /* folded: data-parallel units simulated (K), count; 0 = 4 */
	int memo;                     /* 1: reuse a collective's measured time for identical later ones that run
	                               * alone on their links (speed; exec.c, memo_share), 0 off */
	bool free_comm;               /* test hook: every communication takes zero time */
	double coalesce;              /* flow: re-rate after a flow ends up to this fraction of
	                               * its time later (sim_net_params.coalesce), fraction;
	                               * 0 = exact max-min at every instant */
	bool timeline;                /* keep the per-op timeline for traces */
	bool spray;                   /* routing: every transfer spread evenly over its
	                               * equal-cost paths (adaptive routing, as InfiniBand's
	                               * AR or packet spraying) instead of one ECMP hash per
	                               * connection (sim_net_params.spray), flag */
};

/* Defaults: flow, folded, seed 1, compute from the topology, no jitter,
 * coalesce SIM_FLOW_COALESCE (sim.h). */
void sim_predict_opts_init(struct sim_predict_opts *o);

/* Where the iteration's time goes, along its critical path (the parts add
 * up to the iteration time; exec.c, "breakdown"). */
struct sim_breakdown {
	double compute_s;                     /* compute on the path, at most the critical stage's own
	                                       * (fwd, bwd, recompute, vision), s */
	double bubble_s;                      /* the rest of the path's compute (pipeline fill and
	                                       * drain on other stages) and unexplained waits, s */
	double optimizer_s;                   /* optimizer step (and compression compute) on the path, s */
	double host_s;                        /* compute ops' wait for the host's dispatch on the
	                                       * path (host-bound stretches; in none of the
	                                       * others), s */
	double exposed_comm_s[SIM_COMM_COUNT];/* path communication while the waiting rank's compute idles, s */
};

/* The timeline's tracks: SIM_TL_PER per representative, one per stream
 * (enum wl_stream), then SIM_TL_HOST, the host's offload work (CPU Adam and
 * the host<->device copies around it), which the executor runs in the
 * compute stream's order but which are no GPU kernels. */
#define SIM_TL_HOST WL_NSTREAMS
#define SIM_TL_PER (WL_NSTREAMS + 1)

/* One slice of the timeline (when opts.timeline). */
struct sim_slice {
	int32_t track;                /* index into the track names */
	int32_t op;                   /* op index in the role's workload, -1 none */
	double t0_s, t1_s;            /* start, end, s */
	const char *name;             /* static label ("fwd gemm", "tp allreduce"...) */
	int32_t micro, layer;         /* micro-batch, decoder layer (-1 none) */
	double bytes;                 /* communication: the nccl-tests size on this rank (its
	                               * drawn image or expert load applied; an EP all-to-all's
	                               * at the mean load; P2P: the payload), bytes; 0 compute */
	int8_t dim, coll;             /* communication: enum wl_dim, enum wl_coll; -1 compute */
	bool recompute;               /* of the activation recompute before a backward (the
	                               * forward's ops run again, same names) */
	int8_t algo, proto;           /* a collective: the enum sim_algo and sim_proto it ran
	                               * with (NCCL's pick, or the model's ring or tree over
	                               * more than 64 ranks); 0 (auto) not known or no
	                               * collective */
	int64_t flow;                 /* a send and its receive: an id they share (the receive's
	                               * instance x workload ops + its op + 1), else 0 */
	double host_wait_s;           /* compute: of t1_s - t0_s, the wait for the host's
	                               * dispatch before the GPU work (breakdown host_s), s */
};

/* At most this many slices are recorded (about 260 MB here and 600 MB of
 * trace JSON); a run that would record more fails with TS_EINPUT. */
#define SIM_TIMELINE_MAX_SLICES 4000000

struct sim_timeline {
	int32_t ntracks;              /* tracks, count */
	char (*track)[64];            /* "rep 0 stage 1 compute", ntracks (owned) */
	char (*proc)[48];             /* "rep 0 stage 1", one per ntracks / SIM_TL_PER
	                               * representative (owned) */
	int32_t n, cap;               /* slices, allocated */
	struct sim_slice *s;          /* slices (owned) */
};

struct sim_prediction {
	double iteration_time_s;      /* one iteration (per-step average under local SGD / SSP), s */
	double tokens_per_s;          /* global_batch x seq_len / iteration, tokens/s */
	double tflops_per_gpu;        /* model FLOPs / iteration / GPUs, TFLOP/s */
	double mfu;                   /* model FLOPs / (iteration x GPUs x peak), fraction */
	double hfu;                   /* hardware FLOPs likewise, fraction */
	double memory_gib_per_gpu;    /* worst rank, GiB (with error-feedback residuals) */
	bool fits;                    /* memory fits in GPU memory */
	struct sim_breakdown bd;      /* along the critical path */
	int critical_stage;           /* stage the critical path spends the most compute on */
	double model_flops;           /* per iteration, all GPUs: Megatron's count (full s x s
	                               * attention, every routed token, no recompute), FLOP */
	double hw_flops;              /* per iteration, all GPUs: what the ops execute (recompute,
	                               * causal flash attention, dropped or padded expert
	                               * tokens, the drawn images), FLOP */
	int ngpus;                    /* GPUs used by the plan, count */
	int micro_batches;            /* per replica per iteration, count */
	int instances;                /* representative ranks simulated, count */
	int units;                    /* data-parallel units (blocks of dp x cp positions that
	                               * fold together), count */
	int units_simulated;          /* of those, simulated (folded: K, or all when placed
	                               * differently; exact: all), count */
	bool units_differ;            /* folded: the units sit differently in the fabric (a
	                               * random or listed placement), flag */
	bool exact_fallback;          /* folded asked, but a unit's positions sit differently or
	                               * its replicas draw their images: every rank was
	                               * simulated, flag */
	const char *exact_why;        /* why, a phrase (static), when exact_fallback */
	int64_t ops;                  /* ops in the workload (all roles), count */
	uint64_t events;              /* engine events fired (local SGD, SSP, async: over both
	                               * runs, with and without the reduction), count */
	uint64_t collectives;         /* collectives started on the network (likewise), count */
	uint64_t flows;               /* transfers handed to the network (likewise), count */
	double comm_bytes[SIM_COMM_COUNT]; /* nccl-tests size per GPU per iteration by kind (MoE
	                                    * exchanges at the mean drawn load), bytes */
	double expert_load_max;       /* MoE: the EP group's largest expert load over the balanced
	                               * one, mean over groups, micro-batches and MoE layers
	                               * (what the all-to-alls wait for; under a capacity what is
	                               * kept); 0 when no load is drawn (dense, or MoE without
	                               * EP and capacity), factor */
	double expert_load_mean;      /* MoE: the mean over all ranks likewise (below 1 when a
	                               * capacity drops tokens; the capacity when padded); 0
	                               * when no load is drawn, factor */
	double wall_s;                /* host wall time of the prediction, s */
	struct sim_timeline *tl;      /* NULL unless opts.timeline (owned) */
};

/* Predict one iteration of m under the resolved plan p (plan_resolve done
 * with t's GPU count or fewer) on topology t. Returns 0; TS_EINFEASIBLE when
 * the plan needs more GPUs than t has (out->fits tells memory, which is not
 * an error here); TS_EINPUT/TS_ENOMEM otherwise, with err set. */
int sim_predict(const struct topo *t, const struct model *m, const struct plan *p,
		const struct sim_predict_opts *o, struct sim_prediction *out, struct ts_error *err);
void sim_prediction_release(struct sim_prediction *out);

/* Traces of out->tl, written atomically. Chrome trace-event JSON (one
 * process per representative, one thread per stream; collectives as
 * slices) that Perfetto opens, and an SVG timeline. title: what ran (the
 * model, cluster and plan, one line; NULL or "" for none), the JSON's
 * otherData.run and the SVG's first line. keep: NULL to commit the file,
 * else the written file, flushed and synced (afile_finish) but not in
 * place, for the caller to commit or abort (predict: once its report is
 * out). */
int sim_trace_write_json(const struct sim_prediction *out, const char *path, const char *title,
			 struct afile *keep, struct ts_error *err);
int sim_trace_write_svg(const struct sim_prediction *out, const char *path, const char *title,
			struct afile *keep, struct ts_error *err);

#endif

/* workload.h: the op DAG of one training iteration, per role.
 *
 * A role is a pipeline stage (a device of the pipeline): every rank of that
 * stage does the same work on its own shard, so ranks fold into one op list
 * per stage (DESIGN.md, Scale). Ops are listed in schedule order (GPipe,
 * 1F1B, interleaved 1F1B), each on one stream of the rank (compute, the
 * TP/EP/CP communication stream, PP send, PP receive, DP), with up to
 * WL_MAX_DEPS dependencies on earlier ops of the same role; a receive op
 * also waits for its matching send in the neighbouring stage.
 *
 * Sizes are per rank: compute ops carry FLOPs, HBM bytes and GEMM shapes
 * (for the compute model); communication ops carry the collective and its
 * nccl-tests size. Per-layer FLOPs are exactly models/' model_layer_cost
 * numbers: GEMM shapes only decide efficiency, so MFU agrees with `model`.
 * Knows nothing of topo/ or sim/. */
#ifndef TS_MODELS_WORKLOAD_H
#define TS_MODELS_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "models/models.h"

#define WL_MAX_DEPS 4

enum wl_kind { WL_K_COMPUTE, WL_K_COLL, WL_K_SEND, WL_K_RECV };
/* WL_S_EP: the MoE all-to-alls under overlap.ep (Megatron-core's own
 * communication stream for them); otherwise they run on WL_S_COMM. */
enum wl_stream { WL_S_COMPUTE, WL_S_COMM, WL_S_PP_SEND, WL_S_PP_RECV, WL_S_DP, WL_S_EP,
		 WL_NSTREAMS };
/* Same order as sim/compute.h's enum sim_op_class. */
enum wl_class { WL_GEMM, WL_ATTN, WL_ELEM, WL_OPT, WL_HOST_COPY, WL_HOST_OPT };
/* Which group a communication op runs on. EDP: expert data parallel (the
 * ranks holding the same experts); counted as DP in reports. TPEP: the
 * expert-TP x EP group (Megatron-core's tp_ep_group: the TP ranks of an EP
 * group's positions when experts are split over TP, the EP group itself
 * when they are whole); counted as EP. */
enum wl_dim { WL_D_TP, WL_D_PP, WL_D_DP, WL_D_EP, WL_D_CP, WL_D_EDP, WL_D_TPEP, WL_NDIMS };
enum wl_coll { WL_C_ALLREDUCE, WL_C_REDUCESCATTER, WL_C_ALLGATHER, WL_C_ALLTOALL, WL_C_P2P };
enum wl_phase { WL_P_FWD, WL_P_BWD, WL_P_RECOMPUTE, WL_P_VISION, WL_P_OPT, WL_P_DP };
/* Per data-parallel replica variation the executor applies: VISION scales
 * by the replica's drawn image load of the micro-batch; EXPERT by the drawn
 * load of the rank's experts in the op's layer and micro-batch (an EP
 * all-to-all becomes an alltoallv: each member's share by its own load). */
enum wl_vary { WL_V_NONE, WL_V_VISION, WL_V_EXPERT };

/* Ops of one iteration's workload (all roles) at most: some 120 bytes each
 * here and as much again in the executor, so about 8 GB (found by review: a
 * 1,024-layer model at 16,384 micro-batches grew to 100 GB). */
#define WL_MAX_OPS (1 << 25)

/* A fused attention kernel's mask (wl_op.masked). */
enum wl_mask {
	WL_MASK_NONE,   /* every query attends every key of its sequence */
	WL_MASK_CAUSAL, /* a query attends the keys up to its own */
	WL_MASK_WINDOW, /* ... within a sliding window shorter than the sequence */
};

/* How the host issues a compute op (the compute model's dispatch_s each):
 * once per kernel (a Python-level loop: SequentialMLP's experts, context
 * parallelism's ring steps), once for the whole op, or not at all (its
 * kernels are launched inside the framework call of the op before it:
 * Transformer Engine's userbuffers loop over overlap.tp's chunks in C++
 * within the one Linear call). */
enum wl_dispatch { WL_DISP_EACH, WL_DISP_ONCE, WL_DISP_NONE };

struct wl_op {
	uint8_t kind;              /* enum wl_kind */
	uint8_t stream;            /* enum wl_stream */
	uint8_t cls;               /* compute: enum wl_class */
	uint8_t dim;               /* communication: enum wl_dim */
	uint8_t coll;              /* communication: enum wl_coll */
	uint8_t phase;             /* enum wl_phase */
	uint8_t vary;              /* enum wl_vary */
	uint8_t ndeps;             /* entries in deps, count */
	uint8_t linear;            /* compute: a GEMM of a decoder linear layer (QKV, projection,
	                            * MLP, experts): FP8 operands under an FP8 plan, flag */
	uint8_t inbound;           /* EP all-to-all: carries tokens to the experts (what each
	                            * rank receives follows its load; else what it sends), flag */
	uint8_t masked;            /* compute, fused attention: its mask (m queries, n keys
	                            * each on average, k head dim, batch heads x sequences;
	                            * compute.h), enum wl_mask */
	uint8_t attn_bwd;          /* compute, fused attention: the backward kernel (the
	                            * vision pass runs in one phase both ways), flag */
	uint8_t expert_loop;       /* compute, expert GEMM: one expert after another
	                            * (moe_grouped_gemm false), not the grouped kernel, flag */

	int16_t layer;             /* decoder layer, -1 vision/embedding/head/optimizer */
	int16_t chunk;             /* virtual pipeline chunk on this device, index */
	int32_t micro;             /* micro-batch, -1 for per-iteration ops */
	int32_t deps[WL_MAX_DEPS]; /* earlier ops of the same role that must end first */
	double flops;              /* compute: FLOP */
	double bytes;              /* compute: HBM bytes; collective: bytes first copied from host
	                            * memory to the GPU (ZeRO-Infinity parameter fetch) */
	int64_t m, n, k, batch;    /* GEMM shape, elements; batch: GEMMs of that shape, count */
	double bytes_fixed;        /* compute with a drawn load (vary): the part of bytes that
	                            * does not follow it (a GEMM's weights; a weight gradient's
	                            * output), bytes */
	int32_t reps;              /* compute: kernels of the shape m x n x k run one after
	                            * another (overlap.tp's chunks; flops and bytes are all
	                            * of theirs), count; 0 = 1 */
	uint8_t dispatch;          /* compute: the host's issues of it, enum wl_dispatch */
	uint8_t tok_k;             /* compute with a drawn load: the load scales the GEMM's k
	                            * (a weight gradient, whose inner dimension is the tokens),
	                            * else its m, flag */
	double size_bytes;         /* communication: nccl-tests size (P2P: payload, a receive's
	                            * that of its send), bytes */
	int32_t peer_stage;        /* SEND/RECV: the other stage, index */
	int32_t peer_op;           /* SEND: the matching RECV op in peer_stage, RECV: the SEND
	                            * that feeds it, index */
	int32_t sync_after;        /* compute: the host synchronises the stream before it and
	                            * so waits for this earlier op (the last issued before the
	                            * sync point) to end, -1 none (Megatron's MoE dispatcher
	                            * reading split sizes), index */
	const char *name;          /* static label for traces */
};

struct wl_role {
	int stage;                 /* pipeline stage (device), index */
	int32_t nops, cap;         /* ops, allocated */
	struct wl_op *ops;         /* schedule order; deps point backwards (owned) */
	double param_bytes;        /* gradient payload per rank per iteration, bytes */
};

struct wl_opts {
	bool dp_reduce;            /* emit the DP gradient reduction (false: local SGD steps) */
	int64_t max_slices;        /* with a timeline: the most ops outside the vision encoder
	                            * the workload may have (each is a slice of every simulated
	                            * rank, so more cannot be traced), refused before the build
	                            * where its estimate passes it; 0: no bound, count */
};

struct workload {
	int nroles;                /* = pp, count */
	struct wl_role *roles;     /* owned */
	int micro;                 /* micro-batches per replica, count */
	int vchunks;               /* virtual chunks per device (1 unless interleaved), count */
	double vision_flops_micro; /* mean forward vision FLOPs of one micro-batch (one rank), FLOP */
	double expert_tokens;      /* token-expert assignments per rank per MoE layer, count */
	int64_t nops;              /* ops of all roles, count */
};

/* Build the workload of a resolved plan. All counts are per rank. */
void wl_opts_init(struct wl_opts *o);
int workload_build(struct workload *w, const struct model *m, const struct plan *p,
		   const struct wl_opts *o, struct ts_error *err);
void workload_release(struct workload *w);
/* Ops of w outside the vision encoder: each a slice of every simulated rank
 * of its stage in a timeline (wl_opts.max_slices bounds them), count. */
double workload_traced_ops(const struct workload *w);

const char *wl_dim_name(enum wl_dim d);
const char *wl_coll_name(enum wl_coll c);

#endif

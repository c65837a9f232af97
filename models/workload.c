/* workload.c: the op DAG of one iteration per pipeline stage (see
 * workload.h). Layer FLOPs come from model_layer_cost (Megatron SC'21
 * appendix counts); GEMM shapes follow Megatron's column/row-parallel
 * linear layers; schedules follow Megatron-LM's schedules.py (1F1B warm-up
 * p - s - 1, interleaved warm-up 2(p - s - 1) + (v - 1)p, Narayanan SC'21
 * §2.2). Element-wise HBM traffic is an assumption stated where it is set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/workload.h"

struct task {
	uint8_t bwd;               /* 0 forward, 1 backward */
	uint8_t steady;            /* of the steady state's forward-backward pairs, flag */
	int32_t micro;             /* micro-batch */
	int32_t chunk;             /* virtual chunk on the device */
};

struct bld {
	const struct model *m;
	const struct plan *p;
	const struct wl_opts *o;
	struct wl_role *r;
	int32_t last[WL_NSTREAMS]; /* last op per stream, -1 none */
	int32_t pend;              /* op the next compute op must wait for, -1 none */
	int32_t pend_later;        /* overlapped comm: waited for by the compute op after next */
	int32_t pend2;             /* a DP-stream op (ZeRO-3 gather, blocking reduction) or the
	                            * tied-embedding receive the next compute op waits for, -1 none */
	int32_t micro, chunk, layer; /* current context */
	double T;                  /* tokens per micro-batch per rank (b s / cp) */
	double wb, gb;             /* parameter and activation (plan_act_bytes, one rule for
	                            * both), gradient-on-wire bytes per element */
	double ga;                 /* accumulated-gradient bytes per element */
	double bucket_dense, bucket_exp; /* gradient elements pending in the current DP buckets */
	double host_shard;         /* ZeRO-2/3 offload: elements of the rank's gradient shard
	                            * reduced this micro-batch (their host copy is due), count */
	bool dp_fine;              /* layer_bwd hands its MLP's (experts') gradients to the
	                            * buckets as their weight gradients are done, flag */
	double fine_dense, fine_exp; /* elements it handed so, this layer */
	bool dp_block;             /* a DP flush blocks the compute stream (per-micro-batch
	                            * reduction without overlap), flag */
	int32_t pend_send;         /* blocking pipeline send the next compute or collective
	                            * waits for (Megatron waits on its requests), -1 none */
	int32_t sync_next;         /* the next compute op's sync_after (a host stream sync
	                            * before it), -1 none */
	bool moe_path;             /* emitting the MoE dispatcher's exchange (moe_comm), flag */
	bool vision_path;          /* emitting the vision encoder's TP all-reduce (vision_comm):
	                            * a WL_V_VISION op from the start (emit counts the rest
	                            * against o->max_slices), flag */
	struct deferred *dfr;      /* compute ops that wait for DP-stream results (top-k
	                            * scatter-adds, ZeRO-2/3 shard adds) */
	int ndfr, capdfr;          /* entries of dfr, allocated */
	int nrc;                   /* return code */
	int64_t done_ops;          /* ops of the roles built before this one */
	int64_t tl_ops;            /* ops outside the vision encoder so far (o->max_slices) */
	bool over_slices;          /* nrc says they passed o->max_slices, flag */
};

struct deferred {
	const char *name;
	enum wl_phase ph;
	double bytes;              /* HBM bytes of the element-wise op */
};

static double dt_bytes(enum plan_dtype d)
{
	return d == PLAN_DT_FP32 ? 4 : d == PLAN_DT_FP8 ? 1 : 2;
}

void wl_opts_init(struct wl_opts *o)
{
	o->dp_reduce = true;
	o->max_slices = 0;
}

const char *wl_dim_name(enum wl_dim d)
{
	static const char *const n[] = { "tp", "pp", "dp", "ep", "cp", "edp", "tpep" };
	return (unsigned)d < WL_NDIMS ? n[d] : "?";
}

const char *wl_coll_name(enum wl_coll c)
{
	static const char *const n[] = { "allreduce", "reducescatter", "allgather", "alltoall",
					 "sendrecv" };
	return (unsigned)c <= WL_C_P2P ? n[c] : "?";
}

/* Append op (deps: the previous op of its stream, d1, d2, d3) and return
 * its index. */
static int32_t emit(struct bld *b, struct wl_op *op, int32_t d1, int32_t d2, int32_t d3)
{
	struct wl_role *r = b->r;
	int32_t id, cand[WL_MAX_DEPS];
	if (b->nrc)
		return -1;
	if (b->done_ops + r->nops >= WL_MAX_OPS) {
		b->nrc = TS_EINPUT; /* (workload_build says why) */
		return -1;
	}
	if (b->o->max_slices > 0 && op->vary != WL_V_VISION && ++b->tl_ops > b->o->max_slices) {
		b->nrc = TS_EINPUT;
		b->over_slices = true;
		return -1;
	}
	if (r->nops == r->cap) {
		int32_t nc = r->cap ? r->cap * 2 : 256;
		struct wl_op *n = realloc(r->ops, (size_t)nc * sizeof(*n));
		if (!n) {
			b->nrc = TS_ENOMEM;
			return -1;
		}
		r->ops = n;
		r->cap = nc;
	}
	id = r->nops++;
	op->sync_after = -1;
	op->micro = b->micro;
	op->chunk = (int16_t)b->chunk;
	op->layer = (int16_t)b->layer;
	op->ndeps = 0;
	cand[0] = b->last[op->stream];
	cand[1] = d1;
	cand[2] = d2;
	cand[3] = d3;
	for (int i = 0; i < WL_MAX_DEPS; i++) {
		bool dup = cand[i] < 0;
		for (int j = 0; j < op->ndeps && !dup; j++)
			dup = op->deps[j] == cand[i];
		if (!dup)
			op->deps[op->ndeps++] = cand[i];
	}
	r->ops[id] = *op;
	b->last[op->stream] = id;
	return id;
}

static int32_t cmp_op(struct bld *b, enum wl_phase ph, enum wl_class cls, const char *name,
		      double flops, double bytes, double m, double n, double k, double batch,
		      enum wl_vary vary)
{
	struct wl_op op;
	int32_t id, wait = b->pend;
	memset(&op, 0, sizeof(op));
	op.kind = WL_K_COMPUTE;
	op.stream = WL_S_COMPUTE;
	op.cls = (uint8_t)cls;
	op.phase = (uint8_t)ph;
	op.vary = (uint8_t)vary;
	op.flops = flops;
	op.bytes = bytes;
	op.m = (int64_t)(m + 0.5);
	op.n = (int64_t)(n + 0.5);
	op.k = (int64_t)(k + 0.5);
	op.batch = (int64_t)(batch + 0.5);
	op.name = name;
	op.peer_stage = op.peer_op = -1;
	id = emit(b, &op, wait, b->pend2, b->pend_send);
	if (id >= 0 && b->sync_next >= 0) {
		b->r->ops[id].sync_after = b->sync_next;
		b->sync_next = -1;
	}
	b->pend2 = -1;
	b->pend_send = -1;
	b->pend = b->pend_later;
	b->pend_later = -1;
	return id;
}

/* A fused attention kernel (flash; the vision blocks'): cmp_op with its
 * shape, m queries attending n keys each (their FLOPs' average), head dim
 * k, batch heads x sequences, its mask (enum wl_mask), bwd for
 * the backward kernel (its own efficiency: the phase does not tell, the
 * vision pass runs in one both ways; found by review); the compute model
 * prices its tiling from them (compute.h). */
static int32_t attn_op(struct bld *b, enum wl_phase ph, const char *name, double flops,
		       double bytes, double m, double n, double k, double batch, enum wl_mask mask,
		       bool bwd, enum wl_vary vary)
{
	int32_t id = cmp_op(b, ph, WL_ATTN, name, flops, bytes, m, n, k, batch, vary);
	if (id >= 0) {
		b->r->ops[id].masked = (uint8_t)mask;
		b->r->ops[id].attn_bwd = bwd;
	}
	return id;
}

/* A GEMM of shape m x n x k (batch of them), FLOPs 2mnk x batch x scale;
 * bytes: the three operands once. A decoder linear layer's GEMM (linear())
 * takes FP8 inputs under an FP8 plan (Transformer Engine's default recipe:
 * its Linear and GroupedLinear modules); attention's batched GEMMs, the
 * router, the LM head and the vision encoder stay 16-bit. */
static int32_t gemm_op(struct bld *b, enum wl_phase ph, const char *name, double m, double n,
		       double k, double batch, double scale, enum wl_vary vary, bool lin)
{
	double flops = 2 * m * n * k * batch * scale;
	bool f8 = lin && b->p->precision == PLAN_DT_FP8;
	double bytes = ((m * k + k * n) * (f8 ? 1 : b->wb) + m * n * b->wb) * batch;
	int32_t id = cmp_op(b, ph, WL_GEMM, name, flops, bytes, m, n, k, batch, vary);
	if (id >= 0) {
		b->r->ops[id].linear = lin;
		/* a drawn load changes the tokens (m), not the weights */
		if (vary != WL_V_NONE)
			b->r->ops[id].bytes_fixed = k * n * (f8 ? 1 : b->wb) * batch;
	}
	return id;
}

/* A weight gradient under a drawn load: dW (m x n) = X^T dY over k tokens,
 * so the load scales k and every operand's bytes but the output's (found
 * by review: scaling m, a weight dimension, priced expert down wgrad at
 * padded capacity 1.25 13 % slow). */
static int32_t wgrad_of(struct bld *b, int32_t id)
{
	if (id >= 0) {
		struct wl_op *op = &b->r->ops[id];
		op->tok_k = 1;
		op->bytes_fixed = (double)op->m * op->n * b->wb * op->batch * (op->reps > 1 ? op->reps : 1);
	}
	return id;
}

static int32_t gemm(struct bld *b, enum wl_phase ph, const char *name, double m, double n,
		    double k, double batch, double scale, enum wl_vary vary)
{
	return gemm_op(b, ph, name, m, n, k, batch, scale, vary, false);
}

static int32_t linear(struct bld *b, enum wl_phase ph, const char *name, double m, double n,
		      double k, double batch, double scale, enum wl_vary vary)
{
	return gemm_op(b, ph, name, m, n, k, batch, scale, vary, true);
}

/* A collective after the last compute op and `after`, `after2` (other ops,
 * or -1). */
static int32_t coll_op2(struct bld *b, enum wl_phase ph, enum wl_dim dim, enum wl_coll coll,
		       double size, const char *name, int32_t after, int32_t after2)
{
	struct wl_op op;
	if (size <= 0)
		return -1;
	memset(&op, 0, sizeof(op));
	op.kind = WL_K_COLL;
	/* under the EP overlaps the dispatcher's exchanges (its all-to-alls,
	 * and expert TP's all-gather and reduce-scatter of the routed tokens)
	 * run on a stream of their own, the rest beside them (found by
	 * review: the shared experts' TP collectives queued behind the
	 * routed ones) */
	/* (the CP group's gradient reduction, dp_flush's cp_only, on the DP
	 * stream as the reduction it stands in for) */
	op.stream = (dim == WL_D_DP || dim == WL_D_EDP || (ph == WL_P_DP && dim == WL_D_CP)) ? WL_S_DP :
		    ((dim == WL_D_EP && coll == WL_C_ALLTOALL) || b->moe_path) &&
				    (b->p->overlap_ep || b->p->overlap_shared) ?
			    WL_S_EP :
			    WL_S_COMM;
	op.dim = (uint8_t)dim;
	op.coll = (uint8_t)coll;
	op.phase = (uint8_t)ph;
	op.vary = b->vision_path ? WL_V_VISION : WL_V_NONE;
	op.size_bytes = size;
	op.name = name;
	op.peer_stage = op.peer_op = -1;
	return emit(b, &op, b->last[WL_S_COMPUTE], after, after2);
}

static int32_t coll_op(struct bld *b, enum wl_phase ph, enum wl_dim dim, enum wl_coll coll,
		       double size, const char *name, int32_t after)
{
	return coll_op2(b, ph, dim, coll, size, name, after, -1);
}

/* A communication op of the layer's program order: after the last compute
 * op and after what the next compute op was to wait for (a pipeline
 * receive, a blocking collective), since it consumes their data.
 * Blocking: the next compute op waits for it; else (overlapped) the compute
 * op after next does. */
static int32_t comm(struct bld *b, enum wl_phase ph, enum wl_dim dim, enum wl_coll coll,
		    double size, const char *name, bool overlap)
{
	int32_t id = coll_op2(b, ph, dim, coll, size, name, b->pend, b->pend_send);
	if (id < 0)
		return id;
	b->pend_send = -1;
	if (overlap)
		b->pend_later = id;
	else
		b->pend = id;
	return id;
}

static double mats(const struct model *m)
{
	return m->mlp == MODEL_MLP_GELU ? 1 : 2; /* up (+ gate) columns per ffn unit */
}

/* overlap.tp as Transformer Engine's userbuffers do it (initialize_ub's
 * defaults: "ring_exchange" in tp chunks for an all-gather that feeds a
 * GEMM, "pipeline" in 4 chunks for the reduce-scatter of a GEMM's output).
 * Ring exchange: each rank multiplies the chunk it holds while the next one
 * arrives, so only the GEMM's last 1/n waits for the whole all-gather:
 * t = max(AG, (n-1)/n G) + G/n = (n-1) max(g, c) + g with g = G/n and
 * c = AG/(n-1). Pipeline: the first chunk's GEMM, then the other chunks
 * beside the collective of the first (n-1)/n of the data, then the last
 * chunk's collective: t = g + (n-1) max(g, c) + c with c = RS/n. Two ops
 * give the pipeline's time: the GEMM chunks beside the collective are one
 * op of n-1 kernels of the chunk's shape, each priced (a chunk's smaller
 * GEMM and its launch; found by review: one GEMM of (n-1)/n of the rows
 * ran at the whole GEMM's efficiency, 18 % under the formula on llama3-8b
 * tp 8's MLP up); the chunks' collectives are one collective (userbuffers'
 * copies, not NCCL calls: an NCCL latency per chunk is not paid). The
 * host pays one dispatch per pipeline (its Linear call; the chunks are
 * launched from Transformer Engine's C++: CommOverlap's split_overlap_ag /
 * split_overlap_rs loops, as recalled, not checked here).
 * overlap.tp needs sequence parallelism (plan_resolve). */
#define TP_OVERLAP_PIPE_SPLITS 4.0

/* Op id stands for reps kernels of its shape run one after another. */
static void repeat_op(struct bld *b, int32_t id, double reps)
{
	if (id >= 0 && reps > 1) {
		struct wl_op *op = &b->r->ops[id];
		op->reps = (int32_t)(reps + 0.5);
		op->flops *= op->reps;
		op->bytes *= op->reps;
		op->bytes_fixed *= op->reps;
	}
}

/* How the host issues op id (enum wl_dispatch). */
static void set_dispatch(struct bld *b, int32_t id, enum wl_dispatch d)
{
	if (id >= 0)
		b->r->ops[id].dispatch = (uint8_t)d;
}

/* The GEMM fed by an overlapped all-gather (emitted just before). The
 * pipeline is one Linear call of Transformer Engine, whose C++ launches
 * the chunks: one host dispatch for all of it, as for the GEMM without
 * the overlap. */
static void gemm_after_ag(struct bld *b, enum wl_phase ph, const char *name, double m, double n,
			  double k, double scale)
{
	double s = b->p->tp;
	int32_t id = linear(b, ph, name, m / s, n, k, 1, scale, WL_V_NONE);
	repeat_op(b, id, s - 1);
	set_dispatch(b, id, WL_DISP_ONCE);
	set_dispatch(b, linear(b, ph, name, m / s, n, k, 1, scale, WL_V_NONE), WL_DISP_NONE);
}

/* A linear layer's GEMM on the activation all-gathered over TP first (with
 * sequence parallelism; pipelined with it under overlap.tp). */
static void linear_after_ag(struct bld *b, enum wl_phase ph, const char *name, double m, double n,
			    double k, double scale)
{
	const struct plan *p = b->p;
	bool sp = p->sp && p->tp > 1;
	if (sp)
		comm(b, ph, WL_D_TP, WL_C_ALLGATHER, b->wb * b->T * b->m->hidden, "tp allgather",
		     p->overlap_tp);
	if (sp && p->overlap_tp)
		gemm_after_ag(b, ph, name, m, n, k, scale);
	else
		linear(b, ph, name, m, n, k, 1, scale, WL_V_NONE);
}

/* A GEMM whose output a TP collective of `bytes` reduces, pipelined. */
static void gemm_then_reduce(struct bld *b, enum wl_phase ph, const char *name, double m,
			     double n, double k, double scale, enum wl_coll coll, double bytes,
			     const char *cname)
{
	double s = TP_OVERLAP_PIPE_SPLITS;
	int32_t id;
	linear(b, ph, name, m / s, n, k, 1, scale, WL_V_NONE);
	comm(b, ph, WL_D_TP, coll, bytes * (s - 1) / s, cname, true);
	/* (the rest of the one Linear call: no dispatch of its own) */
	id = linear(b, ph, name, m / s, n, k, 1, scale, WL_V_NONE);
	repeat_op(b, id, s - 1);
	set_dispatch(b, id, WL_DISP_NONE);
	comm(b, ph, WL_D_TP, coll, bytes / s, cname, false);
}

/* Attention core of one micro-batch (after the QKV GEMM, before the
 * output projection), forward or backward.
 * Flash attention (plan flash_attention): one fused kernel, FLOPs at the
 * compute model's attention efficiency, reading Q, K, V and writing O once
 * (backward: twice that traffic). The FLOPs it executes follow
 * FlashAttention's own accounting (benchmark_flash_attention.py's flops():
 * 4 b s^2 heads d, halved when causal, backward 2.5x the forward: five
 * matmuls to the forward's two): a decoder's causal mask lets the kernel
 * skip the tiles above the diagonal (with context parallelism the
 * load-balanced ring gives each rank the same half). The model FLOPs
 * (MFU) keep Megatron's full count.
 * Otherwise Megatron's core attention: per (micro-batch, head) two batched
 * GEMMs, scores = Q K^T (sq x sk x d) and context = P V (sq x d x sk),
 * around a fused scale-mask-softmax and a dropout on the b x heads x sq x sk
 * scores. Their HBM traffic, in 16-bit elements E of the score tensor
 * (assumption: each kernel touches each tensor once): softmax reads the
 * scores and writes the probabilities (2 + 2 B/E); dropout reads them and
 * writes the dropped copy and a 1-byte mask (5 B/E). Backward: the four
 * GEMMs dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q; dropout backward
 * reads the gradient and mask and writes (5 B/E); softmax backward reads
 * the gradient and the probabilities and writes (6 B/E). A decoder's
 * causal softmax is Megatron's scaled_upper_triang_masked_softmax (sq =
 * sk, no window), whose rows read only up to the diagonal and write whole
 * (zeros above it): 1 + 2 B/E forward, 1 + 1 + 2 B/E backward (found by
 * review: charged as full reads; recalled from Megatron's fused kernel,
 * an assumption). The context leaves the batched GEMM as [b x heads, sq,
 * d] and is permuted to [sq, b, heads x d] by a copy (read and write) for
 * the output projection (Megatron's CoreAttention; found by review). FLOPs total the
 * same 4 b sq sk heads d / tp (twice backward) as the flash path; a
 * sliding window masks the scores but computes them all, where the flash
 * kernel skips the tiles outside it (model_attn_keys). */
#define FLASH_CAUSAL_FRACTION 0.5 /* of the full s x s FLOPs, causal */
#define FLASH_BWD_RATIO 2.5       /* backward FLOPs / forward FLOPs */

static void attn_core(struct bld *b, enum wl_phase ph, bool bwd)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	double tp = p->tp, q = (double)m->heads * m->head_dim, d = m->head_dim, dv = model_v_dim(m);
	double kvr = model_kv_width_rank(m, p) + model_v_width_rank(m, p), T = b->T;
	double sq = (double)p->seq_len / p->cp, sk = p->seq_len;
	double bh = (double)p->micro_batch * m->heads / tp, E = bh * sq * sk;
	double keys = model_attn_keys(m, b->layer, p->seq_len);
	double attn = 2.0 * sq * keys * model_attn_width(m) * p->micro_batch / tp;
	if (p->flash_attention || p->cp > 1) {
		/* a sliding window skips the tiles outside it too (model_attn_keys) */
		double ex = FLASH_CAUSAL_FRACTION * attn, n = p->cp;
		const char *name = bwd			   ? "attention bwd" :
				   ph == WL_P_RECOMPUTE ? "attention recompute" :
							  "attention";
		double f = bwd ? FLASH_BWD_RATIO * ex : ex, by = (bwd ? 4 : 2) * T * (q / tp + kvr) * b->wb;
		/* context parallelism: ring attention as Transformer Engine's
		 * p2p form runs it (Megatron's default cp_comm_type): a kernel
		 * per step on the K/V chunk the rank holds while the next one
		 * arrives (the caller's exchange, overlapped), the last step's
		 * waiting for it: n - 1 steps, then one (found by review: one
		 * kernel after the whole exchange left it all exposed) */
		/* the kernel's shape, for its tiling (compute.c): sq queries of
		 * each head and micro-batch, attending the FLOPs' keys each
		 * (half the causal span; a step of the ring sees 1 / n of it),
		 * masked on the diagonal */
		double kq = FLASH_CAUSAL_FRACTION * keys / n;
		/* (with context parallelism only the step on the rank's own
		 * chunk runs masked, the diagonal; the load-balanced ring's other
		 * steps see whole chunks, unmasked: found by review. Transformer
		 * Engine runs the diagonal first; priced here as the last, which
		 * changes no sum) */
		if (n > 1)
			repeat_op(b, attn_op(b, ph, name, f / n, by / n, sq, kq, d, bh, WL_MASK_NONE, bwd,
					     WL_V_NONE),
				  n - 1);
		attn_op(b, ph, name, f / n, by / n, sq, kq, d, bh,
			keys < sk ? WL_MASK_WINDOW : WL_MASK_CAUSAL, bwd, WL_V_NONE);
		return;
	}
	/* the fraction of a row the softmax reads: up to the diagonal where
	 * Megatron takes its causal kernel (16-bit scores, 16 < sk <= 16384,
	 * no window binding; otherwise the general masked softmax, whole rows;
	 * found by review: fp32 and longer rows took the causal kernel too) */
	double rd = keys < sk || b->wb != 2 || sk <= 16 || sk > 16384 ? 1 : 0.5;
	if (!bwd) {
		gemm(b, ph, "attn scores bmm", sq, sk, d, bh, 1, WL_V_NONE);
		cmp_op(b, ph, WL_ELEM, "softmax", 0, (rd + 1) * b->wb * E, 0, 0, 0, 0, WL_V_NONE);
		if (m->attn_dropout)
			cmp_op(b, ph, WL_ELEM, "attn dropout", 0, (2 * b->wb + 1) * E, 0, 0, 0, 0,
			       WL_V_NONE);
		gemm(b, ph, "attn context bmm", sq, dv, sk, bh, 1, WL_V_NONE);
		cmp_op(b, ph, WL_ELEM, "attn context copy", 0, 2 * b->wb * T * m->heads * dv / tp, 0,
		       0, 0, 0, WL_V_NONE);
		return;
	}
	gemm(b, ph, "attn context dgrad", sq, sk, dv, bh, 1, WL_V_NONE);
	gemm(b, ph, "attn context wgrad", sk, dv, sq, bh, 1, WL_V_NONE);
	if (m->attn_dropout)
		cmp_op(b, ph, WL_ELEM, "attn dropout bwd", 0, (2 * b->wb + 1) * E, 0, 0, 0, 0,
		       WL_V_NONE);
	cmp_op(b, ph, WL_ELEM, "softmax bwd", 0, (2 * rd + 1) * b->wb * E, 0, 0, 0, 0, WL_V_NONE);
	gemm(b, ph, "attn scores dgrad", sq, d, sk, bh, 1, WL_V_NONE);
	gemm(b, ph, "attn scores wgrad", sk, d, sq, bh, 1, WL_V_NONE);
}

/* Residual add after the attention and MLP blocks (Megatron's fused
 * bias-dropout-add). Assumption, one pass over the tensors it touches:
 * forward reads the block output and the residual and writes the sum
 * (3 x 16-bit per element of b s h) plus a 1-byte dropout mask; backward
 * reads the gradient (and the mask) and writes the masked gradient. */
static void residual(struct bld *b, enum wl_phase ph, bool bwd, bool bias)
{
	/* sequence parallelism: on the rank's 1/tp of the sequence */
	double e = b->T * b->m->hidden / (b->p->sp ? b->p->tp : 1), mask = b->m->dropout ? 1 : 0;
	if (!bwd)
		cmp_op(b, ph, WL_ELEM, "residual add", 0, (3 * b->wb + mask) * e, 0, 0, 0, 0,
		       WL_V_NONE);
	else if (b->m->dropout)
		cmp_op(b, ph, WL_ELEM, "residual add bwd", 0, (2 * b->wb + mask) * e, 0, 0, 0, 0,
		       WL_V_NONE);
	/* the block's output bias, broadcast over the tokens into the add
	 * (bias.expand_as(residual)), gets its gradient from autograd's sum
	 * over them: a reduction reading the gradient (found by review) */
	if (bwd && bias)
		cmp_op(b, ph, WL_ELEM, "bias grad", 0, b->wb * e, 0, 0, 0, 0, WL_V_NONE);
}

/* In backward a block's input gets its gradient from two uses, the norm
 * and the residual: autograd adds the two, a kernel reading both and
 * writing the sum (found by review: not priced), on the rank's 1/tp of
 * the sequence with sequence parallelism. */
static void residual_grad_add(struct bld *b)
{
	double e = b->T * b->m->hidden / (b->p->sp && b->p->tp > 1 ? b->p->tp : 1);
	cmp_op(b, WL_P_BWD, WL_ELEM, "residual grad add", 0, 3 * b->wb * e, 0, 0, 0, 0, WL_V_NONE);
}

/* An element-wise op that reads a DP-stream result: emitted by
 * run_deferred once the reductions are in. */
static void defer_op(struct bld *b, const char *name, enum wl_phase ph, double bytes)
{
	if (b->ndfr == b->capdfr) {
		int nc = b->capdfr ? 2 * b->capdfr : 64;
		struct deferred *g = realloc(b->dfr, (size_t)nc * sizeof(*g));
		if (!g) {
			b->nrc = TS_ENOMEM;
			return;
		}
		b->dfr = g;
		b->capdfr = nc;
	}
	b->dfr[b->ndfr++] = (struct deferred){ name, ph, bytes };
}

/* Gradient accumulation without fusion (plan grad_accum_fusion false):
 * PyTorch autograd's AccumulateGrad adds each parameter's new gradient
 * into the accumulated one for every micro-batch after the first, one
 * kernel per parameter tensor (assumption: one pass reading both and
 * writing the sum, 2 x accumulated + 1 x new-gradient bytes per element;
 * tensors of a layer priced at their mean size). Megatron's fused
 * accumulation happens inside the weight-gradient GEMM: nothing here. */
static void grad_accum(struct bld *b, const char *name, double elems, double exp, int tensors)
{
	if (b->p->grad_accum_fusion || b->micro <= 0 || !(elems + exp > 0) || tensors < 1)
		return;
	if (b->p->zero >= 2) {
		/* ZeRO-2/3 reduce every micro-batch and add the reduced result
		 * into the rank's gradient shard, one add, once the reduction
		 * is in (the micro-batch's epilogue): the dense elements' 1/D
		 * of dp x cp, the experts' 1/D of the expert data-parallel
		 * group they are partitioned over (found by review: the
		 * experts' at 1/(dp x cp) too) */
		elems = elems / (b->p->dp * b->p->cp) + exp / plan_expert_dp(b->p);
		defer_op(b, name, WL_P_BWD, elems * (2 * b->ga + b->wb));
		return;
	}
	elems += exp;
	double per = elems / tensors * (2 * b->ga + b->wb);
	for (int i = 0; i < tensors; i++)
		cmp_op(b, WL_P_BWD, WL_ELEM, name, 0, per, 0, 0, 0, 0, WL_V_NONE);
}

/* Parameter tensors of decoder layer l as Megatron holds them: its norms
 * (two; one in Falcon-7B's parallel block; weight, + bias for LayerNorm), fused QKV and the output projection
 * (+ biases; + q_norm/k_norm), MLP fc1 (gate and up fused) and fc2
 * (+ biases), or a router and the grouped experts' fc1 and fc2. */
static int layer_tensors(const struct model *m, int l)
{
	int n = m->layer_norms * (m->norm == MODEL_NORM_LAYER ? 2 : 1) + 2;
	if (m->bias || m->attn_bias)
		n += 2;
	else if (m->qkv_bias)
		n += 1;
	if (m->qk_norm)
		n += 2;
	if (m->kv_lora > 0) /* MLA: two or four projections and one or two norms for fused QKV */
		n += m->q_lora > 0 ? 5 : 3;
	int mb = m->bias || m->mlp_bias ? 2 : 0; /* MLP biases */
	if (m->experts > 0 && m->moe_layer[l])
		return n + 3 + (m->shared_ffn > 0 ? 2 + mb + m->shared_gate : 0);
	return n + 2 + mb;
}

/* Q, K and V have biases (GPT's every linear, attention_bias, Qwen2's
 * q/k/v). */
static bool qkv_has_bias(const struct model *m)
{
	return m->bias || m->attn_bias || m->qkv_bias;
}

/* What a decoder layer's forward and backward both need: its costs, the
 * rank's GEMM widths (the QKV columns with K/V replicated when tp is a
 * multiple of their heads), the experts it holds and the tokens each gets,
 * and the factor that brings the GEMMs' FLOPs to model_layer_cost's count
 * (the model FLOPs keep K/V split). */
struct lshape {
	struct model_layer_cost c;
	bool moe;
	double qkv_n, ffn_t, e_loc, me, scale;
	double fs_t;       /* MoE: the shared experts' MLP width on this rank (0 none) */
};

static void layer_shape(const struct bld *b, int l, struct lshape *o)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	double T = b->T, h = m->hidden, tp = p->tp, q = (double)m->heads * m->head_dim;
	double kv = (double)m->kv_heads * m->head_dim, attn, sumg;
	model_layer_cost(m, p, l, &o->c);
	o->moe = m->experts > 0 && m->moe_layer[l];
	o->qkv_n = q / tp + 2 * model_kv_width_rank(m, p);
	o->e_loc = o->me = o->fs_t = 0;
	attn = 2.0 * ((double)p->seq_len / p->cp) * model_attn_keys(m, l, p->seq_len) *
	       model_attn_width(m) * p->micro_batch / tp;
	if (m->kv_lora > 0) /* mla_fwd's GEMMs and the output projection */
		sumg = (p->sp ? T / tp : T) * model_mla_down_params(m) +
		       T * (model_mla_q_in(m) * q + m->kv_lora * model_mla_kv_up(m)) / tp +
		       T * h * ((double)m->heads * model_v_dim(m) / tp);
	else
		sumg = T * (q + 2 * kv) / tp * h + T * h * (q / tp);
	if (o->moe) {
		/* a rank's experts each get T x top-k / (experts / ep) tokens:
		 * its TP group's, gathered, when the experts are split over it
		 * (etp = tp), its own T/tp's share when they are whole (etp 1) */
		o->e_loc = (double)m->experts / p->ep;
		o->me = T * m->top_k / o->e_loc * plan_etp(p) / tp;
		o->ffn_t = (double)m->moe_ffn / plan_etp(p);
		sumg += T / tp * m->experts * h +
			o->e_loc * (o->me * mats(m) * o->ffn_t * h + o->me * h * o->ffn_t);
		o->fs_t = (double)m->shared_ffn / tp;
		sumg += T * mats(m) * o->fs_t * h + T * h * o->fs_t + (m->shared_gate ? T / tp * h : 0);
	} else {
		o->ffn_t = (double)m->ffn / tp;
		sumg += T * mats(m) * o->ffn_t * h + T * h * o->ffn_t;
	}
	sumg *= 2;
	/* the backward's GEMMs are each at this forward scale (bwd = 2 x fwd) */
	o->scale = sumg > 0 ? (o->c.fwd_flops - attn) / sumg : 1;
}

/* The MoE block as Megatron-core's all-to-all token dispatcher runs it
 * (moe_token_dispatcher_type alltoall, experts split over the TP group).
 * With TP the router and the dispatch work on the rank's 1/tp of the
 * tokens: its sequence-parallel shard (Megatron-core's MoE layer requires
 * sequence parallelism with TP; plan_resolve refuses the plan without
 * it). After the dispatch the TP group all-gathers
 * the routed tokens for its TP-split experts and reduce-scatters their
 * outputs before the combine; with whole experts (expert_tensor_parallel
 * 1) there is neither: the EP group then spans TP ranks, each rank's
 * experts work on what it received, and the sorts move 1/tp of what they
 * move below. All-to-all bytes per rank: top-k x T/tp x h x
 * 2 (model_layer_cost's ep_bytes, with the (ep-1)/ep that leaves the rank);
 * the TP all-gather and reduce-scatter move the T x top-k routed tokens of
 * the group. Around them the dispatcher's memory passes (assumption: each
 * reads its input and writes its output once): permute copies the rank's
 * tokens into top-k expert order (reads its T/tp x h, writes the routed
 * copies R), sort_chunks_by_idxs regroups the gathered tokens by local
 * expert when the rank holds more than one (reads and writes tp x R), and
 * after the experts the reverse sort and unpermute, which sums each token's
 * top-k outputs weighted by the router's probabilities (reads R, writes
 * T/tp x h); backward the same passes.
 *
 * Every size here is the balanced load. What a rank receives follows the
 * router: the ops on received tokens (WL_V_EXPERT: the expert GEMMs, the
 * sorts, the TP all-gather and reduce-scatter of the routed tokens) scale
 * with the load the executor draws for the rank's experts in that layer
 * and micro-batch (after the capacity's drops when one is set), and each
 * all-to-all runs as an alltoallv: every rank receives (dispatch; sends,
 * combine) its own load's share, so the busiest member sets the time and
 * shared links carry the true total. Megatron's default does not pad to
 * the capacity (moe_pad_expert_input_to_capacity off), so a capacity
 * bounds the exchange but does not size it. */
static double moe_routed_bytes(const struct bld *b)
{
	return b->m->top_k * b->T * b->m->hidden * b->wb;
}

/* A communication op on the routed tokens (see above); inbound: an
 * all-to-all towards the experts (dispatch, the combine's backward). */
static int32_t moe_comm(struct bld *b, enum wl_phase ph, enum wl_dim dim, enum wl_coll coll,
			double size, const char *name, bool inbound)
{
	int32_t id;
	b->moe_path = true;
	id = comm(b, ph, dim, coll, size, name, false);
	b->moe_path = false;
	if (id >= 0) {
		b->r->ops[id].vary = WL_V_EXPERT;
		b->r->ops[id].inbound = inbound;
	}
	return id;
}

/* Permute and unpermute: the rank's T/tp x h and its routed copies; padded
 * to the capacity (drop-and-pad), the routed buffer holds every expert's
 * capacity slots, capacity factor x the balanced copies (found by review:
 * priced at the balanced copies) */
static void moe_permute(struct bld *b, enum wl_phase ph, const char *name)
{
	double routed = moe_routed_bytes(b), tp = b->p->tp;
	if (b->p->pad_to_capacity)
		routed *= plan_moe_capacity(b->p, b->m);
	cmp_op(b, ph, WL_ELEM, name, 0, routed / tp + b->wb * b->T / tp * b->m->hidden, 0, 0, 0, 0,
	       WL_V_NONE);
}

static void moe_sort(struct bld *b, enum wl_phase ph, const char *name)
{
	int etp = plan_etp(b->p);
	/* Megatron-core sorts whenever the rank holds more than one expert
	 * ("Permutation 2", num_local_experts > 1), even from one source
	 * (found by review: skipped without EP and expert TP) */
	if ((double)b->m->experts / b->p->ep > 1)
		cmp_op(b, ph, WL_ELEM, name, 0, 2 * moe_routed_bytes(b) * etp / b->p->tp, 0, 0, 0,
		       0, WL_V_EXPERT);
}

/* Op names of a dense MLP block: a dense layer's MLP, or a MoE layer's
 * shared experts. */
struct mlp_names {
	const char *up, *act, *down, *down_dgrad, *down_wgrad, *act_bwd, *up_dgrad, *up_wgrad;
};
static const struct mlp_names dense_names = {
	"mlp up gemm",	 "activation",	   "mlp down gemm", "mlp down dgrad",
	"mlp down wgrad", "activation bwd", "mlp up dgrad",  "mlp up wgrad"
};
static const struct mlp_names shared_names = {
	"shared expert up gemm",    "shared expert activation",	    "shared expert down gemm",
	"shared expert down dgrad", "shared expert down wgrad",	    "shared expert activation bwd",
	"shared expert up dgrad",   "shared expert up wgrad"
};

/* Which part of an MLP block to emit: all of it, or (shared experts under
 * overlap.shared_experts) the up projection with the activation (FC1) or
 * the down projection (FC2), forward and backward; MLP_KEPT_INPUT: the up
 * projection kept its input whole (no sequence-parallel re-gather for its
 * weight gradient). */
enum { MLP_FC1 = 1, MLP_FC2 = 2, MLP_ALL = 3, MLP_KEPT_INPUT = 4 };

/* Forward of a dense MLP block of width ffn_t on this rank: column-parallel
 * up (after the sequence-parallel all-gather), activation, row-parallel
 * down and its TP reduction (see layer_fwd on overlap.tp). */
static void mlp_fwd(struct bld *b, enum wl_phase ph, double ffn_t, double scale,
		    const struct mlp_names *nm, int part)
{
	const struct plan *p = b->p;
	double T = b->T, h = b->m->hidden, act = b->wb * T * h;
	bool sp = p->sp && p->tp > 1;
	enum wl_coll tpc = sp ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
	if (part & MLP_FC1) {
		linear_after_ag(b, ph, nm->up, T, mats(b->m) * ffn_t, h, scale);
		cmp_op(b, ph, WL_ELEM, nm->act, 0, (mats(b->m) + 1) * T * ffn_t * b->wb, 0, 0, 0,
		       0, WL_V_NONE);
	}
	if (!(part & MLP_FC2))
		return;
	if (p->tp > 1 && p->overlap_tp) {
		gemm_then_reduce(b, ph, nm->down, T, h, ffn_t, scale, tpc, act,
				 sp ? "tp reducescatter" : "tp allreduce");
	} else {
		linear(b, ph, nm->down, T, h, ffn_t, 1, scale, WL_V_NONE);
		if (p->tp > 1)
			comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", false);
	}
}

/* Its backward (hide: the input-gradient collective runs behind the wgrad
 * GEMM, see layer_bwd). */
static void mlp_bwd(struct bld *b, double ffn_t, double scale, bool hide,
		    const struct mlp_names *nm, int part)
{
	const struct plan *p = b->p;
	const enum wl_phase ph = WL_P_BWD;
	double T = b->T, h = b->m->hidden, act = b->wb * T * h;
	bool sp = p->sp && p->tp > 1;
	enum wl_coll tpc = sp ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
	if (part & MLP_FC2) {
		linear_after_ag(b, ph, nm->down_dgrad, T, ffn_t, h, scale);
		linear(b, ph, nm->down_wgrad, ffn_t, h, T, 1, scale, WL_V_NONE);
	}
	if (!(part & MLP_FC1))
		return;
	/* the activation's backward reads the gradient and its inputs and
	 * writes their gradients (1 + 2 x mats; found by review: 2 x mats + 2
	 * counted one pass more); the up projection's bias, fused into the
	 * activation (bias_gelu), gets its gradient from autograd's sum over
	 * the tokens, a kernel of its own (dense MLPs; found by review) */
	cmp_op(b, ph, WL_ELEM, nm->act_bwd, 0, (1 + 2 * mats(b->m)) * T * ffn_t * b->wb, 0, 0, 0, 0,
	       WL_V_NONE);
	if (nm == &dense_names && (b->m->bias || b->m->mlp_bias))
		cmp_op(b, ph, WL_ELEM, "mlp up bias grad", 0, mats(b->m) * T * ffn_t * b->wb, 0, 0, 0,
		       0, WL_V_NONE);
	if (sp && !(part & MLP_KEPT_INPUT)) /* the saved input shard, gathered again for the wgrad */
		comm(b, ph, WL_D_TP, WL_C_ALLGATHER, act, "tp allgather", true);
	linear(b, ph, nm->up_dgrad, T, h, mats(b->m) * ffn_t, 1, scale, WL_V_NONE);
	if (hide)
		comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", true);
	linear(b, ph, nm->up_wgrad, h, mats(b->m) * ffn_t, T, 1, scale, WL_V_NONE);
	if (p->tp > 1 && !hide)
		comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", false);
}

/* A MoE layer's shared experts (Megatron-core's SharedExpertMLP: after the
 * routed experts' combine, on the same input): a dense MLP, with
 * Qwen2-MoE's sigmoid gate from an h -> 1 linear on the rank's tokens.
 * Under overlap.shared_experts (its moe_shared_expert_overlap) moe_fwd and
 * moe_bwd emit the two halves beside the all-to-alls (part). */
static void shared_fwd(struct bld *b, enum wl_phase ph, const struct lshape *ls, int part)
{
	if (ls->fs_t <= 0)
		return;
	if (b->m->shared_gate && (part & MLP_FC1))
		gemm(b, ph, "shared expert gate gemm", b->T / b->p->tp, 1, b->m->hidden, 1, ls->scale,
		     WL_V_NONE);
	mlp_fwd(b, ph, ls->fs_t, ls->scale, &shared_names, part);
}

static void shared_bwd(struct bld *b, const struct lshape *ls, bool hide, int part)
{
	double T = b->T / b->p->tp, h = b->m->hidden;
	if (ls->fs_t <= 0)
		return;
	mlp_bwd(b, ls->fs_t, ls->scale, hide, &shared_names, part);
	if (b->m->shared_gate && (part & MLP_FC1)) {
		gemm(b, WL_P_BWD, "shared expert gate dgrad", T, h, 1, 1, ls->scale, WL_V_NONE);
		gemm(b, WL_P_BWD, "shared expert gate wgrad", h, 1, T, 1, ls->scale, WL_V_NONE);
	}
}

/* overlap.shared_experts (Megatron-core's moe_shared_expert_overlap;
 * recalled, an assumption): the shared experts run on a stream of their
 * own beside the EP all-to-alls (which then run on theirs, WL_S_EP):
 * forward, the up projection and activation while the dispatch travels,
 * the down projection and its reduce-scatter while the combine does;
 * backward (autograd runs each on its forward's stream), the down
 * projection's gradients beside the combine's backward and the rest
 * beside the dispatch's. On the one compute stream here: the part is
 * emitted right after the all-to-all is issued and does not wait for it;
 * the op that consumes the all-to-all's output does. Returns what the op
 * after the part must also wait for (its TP reduce-scatter, -1 none). */
static int32_t shared_beside(struct bld *b, enum wl_phase ph, const struct lshape *ls, bool bwd,
			     bool hide, int part)
{
	int32_t a2a = b->pend, tail;
	b->pend = -1;
	if (bwd)
		shared_bwd(b, ls, hide, part);
	else
		shared_fwd(b, ph, ls, part);
	tail = b->pend;
	b->pend = a2a;
	return tail;
}

/* Expert TP's all-gather of the routed tokens (or, backward, of their
 * gradients) after the all-to-all; its input is the all-to-all's output,
 * so it does not wait for the shared experts' compute emitted in between
 * (`before`: the compute op before them). */
static void routed_gather(struct bld *b, enum wl_phase ph, double routed, int32_t before)
{
	int32_t last = b->last[WL_S_COMPUTE];
	b->last[WL_S_COMPUTE] = before;
	moe_comm(b, ph, WL_D_TP, WL_C_ALLGATHER, routed, "expert tp allgather", false);
	b->last[WL_S_COMPUTE] = last;
}

static bool shared_overlap(const struct bld *b, const struct lshape *ls)
{
	return b->p->overlap_shared && ls->fs_t > 0 && b->p->ep > 1;
}

/* One expert computation of the rank's e_loc experts: as one grouped
 * GEMM (batch e_loc), or, without moe_grouped_gemm, as Megatron-core's
 * SequentialMLP runs them: each expert's GEMM (or activation) on its own,
 * one after another (e_loc kernels of one expert's shape at the mean load;
 * op reps), a plain GEMM each, not the grouped kernel. Each expert at the
 * mean rows: the experts' spread is not rounded to tiles per expert (a
 * review measured 0.04 % of compute at an imbalance of 0.5); the host
 * issues the reps' dispatches before the op's GPU time (overstated where
 * the GPU would run earlier reps while later ones are issued); FP8's
 * padding of each expert's tokens to a multiple of 16 is not modelled. */
static int32_t expert_op(struct bld *b, int32_t id, double e_loc)
{
	if (id >= 0 && !b->p->moe_grouped_gemm) {
		b->r->ops[id].expert_loop = 1;
		repeat_op(b, id, e_loc);
	}
	return id;
}

static int32_t expert_linear(struct bld *b, enum wl_phase ph, const char *name, double m,
			     double n, double k, const struct lshape *ls)
{
	bool loop = !b->p->moe_grouped_gemm;
	return expert_op(b, linear(b, ph, name, m, n, k, loop ? 1 : ls->e_loc, ls->scale, WL_V_EXPERT),
			 ls->e_loc);
}

static void expert_elem(struct bld *b, enum wl_phase ph, const char *name, double bytes,
			const struct lshape *ls)
{
	bool loop = !b->p->moe_grouped_gemm;
	expert_op(b, cmp_op(b, ph, WL_ELEM, name, 0, loop ? bytes / ls->e_loc : bytes, 0, 0, 0, 0,
			    WL_V_EXPERT),
		  ls->e_loc);
}

/* SequentialMLP's join of its e_loc experts' token rows (hidden wide),
 * read and written once; none with one local expert (called directly) or
 * with the grouped kernel. */
static void expert_concat(struct bld *b, enum wl_phase ph, const char *name,
			  const struct lshape *ls)
{
	if (!b->p->moe_grouped_gemm && ls->e_loc > 1)
		cmp_op(b, ph, WL_ELEM, name, 0, 2 * ls->e_loc * ls->me * b->m->hidden * b->wb, 0, 0,
		       0, 0, WL_V_EXPERT);
}

/* The rank's local experts on their drawn load (e_loc experts of me tokens
 * each), forward: up projection, activation, down; SequentialMLP then
 * concatenates the experts' outputs (a copy; its input's split is views),
 * except with one local expert, which it calls directly. */
static void experts_fwd(struct bld *b, enum wl_phase ph, const struct lshape *ls)
{
	const struct model *m = b->m;
	double h = m->hidden, me = ls->me, e_loc = ls->e_loc, ffn_t = ls->ffn_t;
	expert_linear(b, ph, "expert up gemm", me, mats(m) * ffn_t, h, ls);
	expert_elem(b, ph, "activation", (mats(m) + 1) * e_loc * me * ffn_t * b->wb, ls);
	expert_linear(b, ph, "expert down gemm", me, h, ffn_t, ls);
	expert_concat(b, ph, "expert output concat", ls);
}

/* Their backward: each GEMM's data and weight gradients, the activation's;
 * SequentialMLP's input split joins its gradients (a copy; the output
 * concatenation's backward is views). */
static void experts_bwd(struct bld *b, const struct lshape *ls)
{
	const struct model *m = b->m;
	const enum wl_phase ph = WL_P_BWD;
	double h = m->hidden, me = ls->me, e_loc = ls->e_loc, ffn_t = ls->ffn_t;
	expert_linear(b, ph, "expert down dgrad", me, ffn_t, h, ls);
	wgrad_of(b, expert_linear(b, ph, "expert down wgrad", ffn_t, h, me, ls));
	expert_elem(b, ph, "activation bwd", (1 + 2 * mats(m)) * e_loc * me * ffn_t * b->wb, ls);
	expert_linear(b, ph, "expert up dgrad", me, h, mats(m) * ffn_t, ls);
	wgrad_of(b, expert_linear(b, ph, "expert up wgrad", h, mats(m) * ffn_t, me, ls));
	expert_concat(b, ph, "expert input grad concat", ls);
}

/* Megatron-core's allgather token dispatcher (MoEAllGatherTokenDispatcher,
 * --moe-token-dispatcher-type allgather; recalled, an assumption): over
 * the expert-TP x EP group (G ranks; the TP group without EP) it
 * all-gathers every rank's hidden states and its routing map and
 * probabilities (a bool and a 16-bit value per token and expert: the
 * router's softmax cast back to the logits' type), permutes the
 * gathered tokens routed to the rank's experts straight into expert order,
 * runs them, scatters the results back into a buffer of all G ranks'
 * tokens (zeroed first) and reduce-scatters that to the rank's own:
 * G x T/tp tokens of h each way, whatever the top-k, where the all-to-all
 * dispatcher moves the routed top-k copies. The rank's expert load is the
 * same. The expert counts go to the host for the grouped GEMM (a stream
 * sync before the experts). Backward
 * mirrors it: the reduce-scatter's gradient is an all-gather and the
 * all-gathers' reduce-scatters (the hidden states' and the
 * probabilities'). */
static int32_t gather_group(const struct plan *p, enum wl_dim *dim)
{
	*dim = p->ep == 1 ? WL_D_TP : plan_etp(p) > 1 ? WL_D_TPEP : WL_D_EP;
	return plan_tpep(p); /* (1 without EP and expert TP: nothing to gather) */
}

static void moe_fwd_allgather(struct bld *b, enum wl_phase ph, const struct lshape *ls)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	enum wl_dim dim;
	double h = m->hidden, tl = b->T / p->tp, G = gather_group(p, &dim);
	double routed = b->T * m->top_k * plan_etp(p) / p->tp; /* the rank's expert load */
	double scale = ls->scale;
	gemm(b, ph, "router gemm", tl, m->experts, h, 1, scale, WL_V_NONE);
	if (G > 1) {
		comm(b, ph, dim, WL_C_ALLGATHER, G * tl * m->experts * (1 + b->wb),
		     "moe routing allgather", false);
		comm(b, ph, dim, WL_C_ALLGATHER, G * tl * h * b->wb, "moe tokens allgather", false);
	}
	cmp_op(b, ph, WL_ELEM, "moe permute", 0, 2 * routed * h * b->wb, 0, 0, 0, 0, WL_V_EXPERT);
	b->sync_next = b->last[WL_S_COMPUTE];
	experts_fwd(b, ph, ls);
	cmp_op(b, ph, WL_ELEM, "moe unpermute buffer", 0, G * tl * h * b->wb, 0, 0, 0, 0, WL_V_NONE);
	cmp_op(b, ph, WL_ELEM, "moe unpermute", 0, 2 * routed * h * b->wb, 0, 0, 0, 0, WL_V_EXPERT);
	if (G > 1)
		comm(b, ph, dim, WL_C_REDUCESCATTER, G * tl * h * b->wb, "moe tokens reducescatter",
		     false);
	shared_fwd(b, ph, ls, MLP_ALL);
}

static void moe_bwd_allgather(struct bld *b, const struct lshape *ls, bool hide)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	const enum wl_phase ph = WL_P_BWD;
	enum wl_dim dim;
	double h = m->hidden, tl = b->T / p->tp, G = gather_group(p, &dim);
	double routed = b->T * m->top_k * plan_etp(p) / p->tp;
	double scale = ls->scale;
	shared_bwd(b, ls, hide, MLP_ALL);
	if (G > 1)
		comm(b, ph, dim, WL_C_ALLGATHER, G * tl * h * b->wb, "moe tokens allgather bwd",
		     false);
	cmp_op(b, ph, WL_ELEM, "moe unpermute bwd", 0, 2 * routed * h * b->wb, 0, 0, 0, 0,
	       WL_V_EXPERT);
	experts_bwd(b, ls);
	cmp_op(b, ph, WL_ELEM, "moe permute bwd buffer", 0, G * tl * h * b->wb, 0, 0, 0, 0,
	       WL_V_NONE);
	cmp_op(b, ph, WL_ELEM, "moe permute bwd", 0, 2 * routed * h * b->wb, 0, 0, 0, 0, WL_V_EXPERT);
	if (G > 1) {
		comm(b, ph, dim, WL_C_REDUCESCATTER, G * tl * h * b->wb,
		     "moe tokens reducescatter bwd", false);
		comm(b, ph, dim, WL_C_REDUCESCATTER, G * tl * m->experts * b->wb,
		     "moe probs reducescatter bwd", false);
	}
	gemm(b, ph, "router dgrad", tl, h, m->experts, 1, scale, WL_V_NONE);
	gemm(b, ph, "router wgrad", h, m->experts, tl, 1, scale, WL_V_NONE);
}

static void moe_fwd(struct bld *b, enum wl_phase ph, const struct lshape *ls)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	const struct model_layer_cost *c = &ls->c;
	double h = m->hidden, tp = p->tp, routed = moe_routed_bytes(b);
	double scale = ls->scale;
	int etp = plan_etp(p);
	if (p->dispatcher == PLAN_DISP_ALLGATHER) {
		moe_fwd_allgather(b, ph, ls);
		return;
	}
	gemm(b, ph, "router gemm", b->T / tp, m->experts, h, 1, scale, WL_V_NONE);
	/* the dispatcher's preprocess all-gathers every rank's tokens per
	 * expert (E int64 counts) over the expert-TP x EP group (tp_ep_group)
	 * for the all-to-all's split sizes (not when padding to the capacity,
	 * whose sizes are fixed). It is stream-ordered (a blocking
	 * all-gather): the permute waits for it. The sizes go to the host,
	 * which synchronises the stream (Megatron-core's cuda_sync_point):
	 * with a capacity before the permute ("before_permutation_1", for the
	 * kept-token count), dropless after it (before the EP all-to-all, or
	 * before the experts without EP); padded, never. The op dispatched
	 * after the sync waits for what was issued before it (sync_after) */
	int32_t last = b->last[WL_S_COMPUTE];
	if (!p->pad_to_capacity && (p->ep > 1 || etp > 1))
		last = comm(b, ph, p->ep == 1 ? WL_D_TP : etp > 1 ? WL_D_TPEP : WL_D_EP,
			    WL_C_ALLGATHER, (double)m->experts * 8 * p->ep * etp, "moe token counts",
			    false);
	if (!p->pad_to_capacity && p->capacity_factor > 0)
		b->sync_next = last;
	moe_permute(b, ph, "moe permute");
	if (!p->pad_to_capacity && !(p->capacity_factor > 0))
		b->sync_next = b->last[WL_S_COMPUTE];
	bool so = shared_overlap(b, ls);
	int32_t tail = -1;
	if (p->ep > 1)
		moe_comm(b, ph, WL_D_EP, WL_C_ALLTOALL, c->ep_bytes * p->ep / (p->ep - 1),
			 "ep dispatch", true);
	int32_t pre = b->last[WL_S_COMPUTE];
	if (so)
		shared_beside(b, ph, ls, false, false, MLP_FC1);
	if (etp > 1)
		routed_gather(b, ph, routed, pre);
	moe_sort(b, ph, "moe sort chunks");
	experts_fwd(b, ph, ls);
	moe_sort(b, ph, "moe unsort chunks");
	if (etp > 1)
		moe_comm(b, ph, WL_D_TP, WL_C_REDUCESCATTER, routed, "expert tp reducescatter", false);
	if (p->ep > 1)
		moe_comm(b, ph, WL_D_EP, WL_C_ALLTOALL, c->ep_bytes * p->ep / (p->ep - 1),
			 "ep combine", false);
	if (so)
		tail = shared_beside(b, ph, ls, false, false, MLP_FC2);
	moe_permute(b, ph, "moe unpermute");
	if (so) /* the sum waits for the shared output's reduce-scatter */
		b->pend = tail;
	else
		shared_fwd(b, ph, ls, MLP_ALL);
}

static void moe_bwd(struct bld *b, const struct lshape *ls, bool hide)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	const struct model_layer_cost *c = &ls->c;
	const enum wl_phase ph = WL_P_BWD;
	double h = m->hidden, tp = p->tp, T = b->T, routed = moe_routed_bytes(b);
	double scale = ls->scale;
	int etp = plan_etp(p);
	bool so = shared_overlap(b, ls);
	int32_t tail = -1;
	if (p->dispatcher == PLAN_DISP_ALLGATHER) {
		moe_bwd_allgather(b, ls, hide);
		return;
	}
	if (!so)
		shared_bwd(b, ls, hide, MLP_ALL);
	moe_permute(b, ph, "moe unpermute bwd");
	if (p->ep > 1)
		moe_comm(b, ph, WL_D_EP, WL_C_ALLTOALL, c->ep_bytes * p->ep / (p->ep - 1),
			 "ep combine bwd", true);
	int32_t pre = b->last[WL_S_COMPUTE];
	if (so)
		shared_beside(b, ph, ls, true, hide, MLP_FC2);
	if (etp > 1)
		routed_gather(b, ph, routed, pre);
	moe_sort(b, ph, "moe unsort chunks bwd");
	experts_bwd(b, ls);
	moe_sort(b, ph, "moe sort chunks bwd");
	if (etp > 1)
		moe_comm(b, ph, WL_D_TP, WL_C_REDUCESCATTER, routed, "expert tp reducescatter", false);
	if (p->ep > 1)
		moe_comm(b, ph, WL_D_EP, WL_C_ALLTOALL, c->ep_bytes * p->ep / (p->ep - 1),
			 "ep dispatch bwd", false);
	if (so) {
		/* the input gradients' sum waits for the shared path's too
		 * (pend2 is free here: the layer's first op took any gather) */
		tail = shared_beside(b, ph, ls, true, hide, MLP_FC1 | MLP_KEPT_INPUT);
		if (tail > b->pend2)
			b->pend2 = tail;
	}
	moe_permute(b, ph, "moe permute bwd");
	gemm(b, ph, "router dgrad", T / tp, h, m->experts, 1, scale, WL_V_NONE);
	gemm(b, ph, "router wgrad", h, m->experts, T / tp, 1, scale, WL_V_NONE);
}

/* Multi-head latent attention's projections (DeepSeek-V2/V3) as
 * Megatron-core's MLASelfAttention runs them (assumption, recalled from
 * its code, not in shared/reference): the down projections (h -> q_lora,
 * h -> kv_lora + qk_rope; h -> heads x head_dim column-parallel instead of
 * the first without q_lora) are whole on every TP rank and work on the
 * rank's tokens: its sequence-parallel shard, whose latents the TP group
 * then all-gathers for the column-parallel up projections (q_lora -> heads
 * x head_dim, kv_lora -> heads x (nope + v)); without sequence parallelism
 * every rank projects all tokens. The latents' RMSNorms read and write
 * them once (16 bits); the rotary embedding and the assembly of query,
 * key and value follow (mla_qk_prep). */
static void mla_fwd(struct bld *b, enum wl_phase ph, double scale)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	bool sp = p->sp && p->tp > 1;
	double T = b->T, h = m->hidden, tp = p->tp, Tl = sp ? T / tp : T, ql = m->q_lora;
	double kl = m->kv_lora, rope = m->qk_rope, a = m->heads, hd = m->head_dim;
	double kvn = model_mla_kv_up(m) / tp, qin = model_mla_q_in(m);
	if (ql > 0)
		linear(b, ph, "q down gemm", Tl, ql, h, 1, scale, WL_V_NONE);
	linear(b, ph, "kv down gemm", Tl, kl + rope, h, 1, scale, WL_V_NONE);
	cmp_op(b, ph, WL_ELEM, "latent norms", 0, 2 * b->wb * Tl * (ql + kl), 0, 0, 0, 0, WL_V_NONE);
	if (sp)
		comm(b, ph, WL_D_TP, WL_C_ALLGATHER, b->wb * T * model_mla_gather_width(m), "tp allgather",
		     p->overlap_tp);
	if (sp && p->overlap_tp)
		gemm_after_ag(b, ph, ql > 0 ? "q up gemm" : "q gemm", T, a * hd / tp, qin, scale);
	else
		linear(b, ph, ql > 0 ? "q up gemm" : "q gemm", T, a * hd / tp, qin, 1, scale,
		       WL_V_NONE);
	linear(b, ph, "kv up gemm", T, kvn, kl, 1, scale, WL_V_NONE);
}

/* Its backward: the up projections' data gradients, the TP reduction of
 * the latents' (partial) gradients, behind the weight gradients when the
 * plan hides input-gradient collectives (with sequence parallelism the
 * saved latent shards are all-gathered again for the weight gradients,
 * and the reduction is a reduce-scatter), then the norms and the down
 * projections on the rank's tokens, whose input gradient needs no TP
 * collective. */
static void mla_bwd(struct bld *b, double scale, bool hide)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	const enum wl_phase ph = WL_P_BWD;
	bool sp = p->sp && p->tp > 1;
	double T = b->T, h = m->hidden, tp = p->tp, Tl = sp ? T / tp : T, ql = m->q_lora;
	double kl = m->kv_lora, rope = m->qk_rope, a = m->heads, hd = m->head_dim;
	double kvn = model_mla_kv_up(m) / tp, qin = model_mla_q_in(m);
	double lat = b->wb * T * model_mla_gather_width(m);
	enum wl_coll tpc = sp ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
	const char *cn = sp ? "tp reducescatter" : "tp allreduce";
	if (sp)
		comm(b, ph, WL_D_TP, WL_C_ALLGATHER, lat, "tp allgather", true);
	linear(b, ph, "kv up dgrad", T, kl, kvn, 1, scale, WL_V_NONE);
	linear(b, ph, ql > 0 ? "q up dgrad" : "q dgrad", T, qin, a * hd / tp, 1, scale, WL_V_NONE);
	if (hide)
		comm(b, ph, WL_D_TP, tpc, lat, cn, true);
	linear(b, ph, "kv up wgrad", kl, kvn, T, 1, scale, WL_V_NONE);
	linear(b, ph, ql > 0 ? "q up wgrad" : "q wgrad", qin, a * hd / tp, T, 1, scale, WL_V_NONE);
	if (p->tp > 1 && !hide)
		comm(b, ph, WL_D_TP, tpc, lat, cn, false);
	cmp_op(b, ph, WL_ELEM, "latent norms bwd", 0, 4 * b->wb * Tl * (ql + kl), 0, 0, 0, 0,
	       WL_V_NONE);
	/* the kv down projection's output was split into the latent and the
	 * rotary key: its gradient joins theirs (a copy; mla_qk_prep) */
	cmp_op(b, ph, WL_ELEM, "latent split bwd", 0, 2 * b->wb * Tl * (kl + rope), 0, 0, 0, 0,
	       WL_V_NONE);
	linear(b, ph, "kv down dgrad", Tl, h, kl + rope, 1, scale, WL_V_NONE);
	linear(b, ph, "kv down wgrad", h, kl + rope, Tl, 1, scale, WL_V_NONE);
	if (ql > 0) {
		linear(b, ph, "q down dgrad", Tl, h, ql, 1, scale, WL_V_NONE);
		linear(b, ph, "q down wgrad", h, ql, Tl, 1, scale, WL_V_NONE);
	}
}

/* MLA's query, key and value between the up projections and attention,
 * as Megatron-core's MLASelfAttention builds them without rope fusion
 * (assumption, recalled from its code, as mla_fwd; HF transformers'
 * DeepseekV3Attention does the same; found unpriced: the README said so):
 * the rotary embedding on q's rotary part of each of the rank's heads and
 * on the token's one shared rotary key (a pass each, as
 * qk_pre_attention's); query = cat(q_nope, q_rope) and key = cat(k_nope,
 * the rotary key broadcast to the heads), and value made contiguous out of
 * the kv up projection's output: copies that write the rank's heads x (2
 * head_dim + v) and read as much (the shared rotary key once a token).
 * Megatron-core's fused MLA rope kernels (apply_rope_fusion) rotate q in
 * place and write key and value from kv in one kernel, about a third
 * fewer bytes forward at DeepSeek-V3's shapes; not modelled. Backward:
 * the rotary's pass over the gradients (rope bwd), then the
 * concatenations' own (one op for their kernels): q's gradient joined
 * from its parts, the broadcast key's gradient summed over the heads,
 * k_nope's and value's gradients joined into the kv up projection's. The
 * T tokens the up projections work on; the latent's and rotary key's
 * gradients join in mla_bwd, on the down projection's tokens. */
static void mla_qk_prep(struct bld *b, enum wl_phase ph, bool bwd)
{
	const struct model *m = b->m;
	double n = (double)m->heads / b->p->tp, hd = m->head_dim, rope = m->qk_rope;
	double nope = hd - rope, v = model_v_dim(m), wt = b->wb * b->T;
	double rot = 2 * wt * (n * rope + rope);
	bool rotary = m->rotary && rope > 0;
	if (!bwd) {
		if (rotary)
			cmp_op(b, ph, WL_ELEM, "rope", 0, rot, 0, 0, 0, 0, WL_V_NONE);
		cmp_op(b, ph, WL_ELEM, "qkv concat", 0,
		       wt * (2 * n * hd + n * nope + rope + n * hd + 2 * n * v), 0, 0, 0, 0, WL_V_NONE);
		return;
	}
	if (rotary)
		cmp_op(b, ph, WL_ELEM, "rope bwd", 0, rot, 0, 0, 0, 0, WL_V_NONE);
	cmp_op(b, ph, WL_ELEM, "qkv concat bwd", 0,
	       wt * (2 * n * hd + n * rope + rope + 2 * n * (nope + v)), 0, 0, 0, 0, WL_V_NONE);
}

/* The kernels between the QKV GEMM and attention that read and write q
 * and k once each (assumption, as a norm's pass): the q/k norms (Qwen3's
 * q_norm and k_norm; found missing against layers timed on an H200,
 * validate/kernels/measure_step.py) and the rotary embedding (a fused
 * kernel such as Transformer Engine's, which writes the whole of q and k,
 * a partial rotary's pass-through part too). Backward in reverse order:
 * the rotary's one pass of the gradients, the norms' as a norm backward's
 * (4 x). The rank's q and k: heads / tp and its K width, of T tokens.
 * MLA's (its rotary parts and the concatenations): mla_qk_prep. */
static void qk_pre_attention(struct bld *b, enum wl_phase ph, bool bwd)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	if (m->kv_lora > 0) {
		mla_qk_prep(b, ph, bwd);
		return;
	}
	double qk = b->wb * b->T * ((double)m->heads * m->head_dim / p->tp + model_kv_width_rank(m, p));
	if (!bwd && m->qk_norm)
		cmp_op(b, ph, WL_ELEM, "qk norm", 0, 2 * qk, 0, 0, 0, 0, WL_V_NONE);
	if (m->rotary)
		cmp_op(b, ph, WL_ELEM, bwd ? "rope bwd" : "rope", 0, 2 * qk, 0, 0, 0, 0, WL_V_NONE);
	if (bwd && m->qk_norm)
		cmp_op(b, ph, WL_ELEM, "qk norm bwd", 0, 4 * qk, 0, 0, 0, 0, WL_V_NONE);
}

/* Forward (or full recompute) of decoder layer l. */
static void layer_fwd(struct bld *b, int l, enum wl_phase ph)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	struct lshape ls;
	double T = b->T, h = m->hidden, tp = p->tp, q = (double)m->heads * model_v_dim(m);
	double act = b->wb * T * h;
	bool sp = p->sp && p->tp > 1;
	bool ov = p->overlap_tp;
	enum wl_coll tpc = sp ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;

	layer_shape(b, l, &ls);
	b->layer = l;
	const struct model_layer_cost c = ls.c;
	double qkv_n = ls.qkv_n, ffn_t = ls.ffn_t, scale = ls.scale;

	/* Element-wise traffic (assumption): a norm or residual reads and
	 * writes the bsh activation once each in the activations' dtype (16
	 * bits, fp32 under precision fp32): 2 x act bytes (with
	 * sequence parallelism on the rank's 1/tp of the sequence, before the
	 * all-gather). overlap.tp pipelines each TP collective with its GEMM
	 * (Megatron --tp-comm-overlap): an all-gather with the GEMM that
	 * consumes it, a reduce-scatter or all-reduce with the GEMM that
	 * produces it; the op after that GEMM waits for it. */
	cmp_op(b, ph, WL_ELEM, "norm", 0, 2 * act / (sp ? tp : 1), 0, 0, 0, 0, WL_V_NONE);
	if (m->kv_lora > 0) {
		mla_fwd(b, ph, scale);
	} else {
		linear_after_ag(b, ph, "qkv gemm", T, qkv_n, h, scale);
		/* its bias: Megatron's column-parallel linear adds it after the
		 * GEMM (output + bias, read and write; found by review) */
		if (qkv_has_bias(m))
			cmp_op(b, ph, WL_ELEM, "qkv bias add", 0, 2 * b->wb * T * qkv_n, 0, 0, 0, 0,
			       WL_V_NONE);
	}
	qk_pre_attention(b, ph, false);
	if (p->cp > 1) /* ring attention: K/V of the other chunks (an all-gather's output)
			* beside the steps before the last (attn_core) */
		comm(b, ph, WL_D_CP, WL_C_ALLGATHER, c.cp_bytes * p->cp / (p->cp - 1), "cp kv exchange",
		     true);
	attn_core(b, ph, false);
	if (p->tp > 1 && ov) {
		gemm_then_reduce(b, ph, "proj gemm", T, h, q / tp, scale, tpc, act,
				 sp ? "tp reducescatter" : "tp allreduce");
	} else {
		linear(b, ph, "proj gemm", T, h, q / tp, 1, scale, WL_V_NONE);
		if (p->tp > 1)
			comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", false);
	}
	residual(b, ph, false, false);
	cmp_op(b, ph, WL_ELEM, "norm", 0, 2 * act / (sp ? tp : 1), 0, 0, 0, 0, WL_V_NONE);
	if (ls.moe)
		moe_fwd(b, ph, &ls);
	else
		mlp_fwd(b, ph, ffn_t, scale, &dense_names, MLP_ALL);
	residual(b, ph, false, false);
}

static void dp_flush(struct bld *b, bool expert, bool force);

/* With bucketed reductions (b->dp_fine: overlap.dp, or ZeRO 2/3 every
 * micro-batch) the MLP's or the routed experts' weight gradients, done
 * before the attention's, go into the buckets at once, so a full bucket
 * starts reducing mid-layer as Megatron's, which closes a bucket at the
 * parameter that fills it, and DeepSpeed's (found by review: buckets
 * closed only at layer ends, so bucket_mb below one layer changed
 * nothing). The layer's other gradients follow at its end. */
static void dp_ready(struct bld *b, double dense, double expert)
{
	if (!b->dp_fine)
		return;
	b->fine_dense += dense;
	b->fine_exp += expert;
	b->bucket_dense += dense;
	b->bucket_exp += expert;
	dp_flush(b, false, false);
	dp_flush(b, true, false);
}

/* Backward of decoder layer l: each GEMM twice (data and weight gradient),
 * attention core twice its forward (Megatron SC'21 appendix: backward =
 * 2 x forward), communication mirrored. */
static void layer_bwd(struct bld *b, int l)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	struct lshape ls;
	double T = b->T, h = m->hidden, tp = p->tp, q = (double)m->heads * model_v_dim(m);
	double act = b->wb * T * h;
	bool sp = p->sp && p->tp > 1;
	bool ov = p->overlap_tp;
	enum wl_coll tpc = sp ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
	const enum wl_phase ph = WL_P_BWD;
	/* Megatron's async input-gradient all-reduce (not with sequence
	 * parallelism, whose reduce-scatter it replaces): issued after the dgrad
	 * GEMM of a column-parallel layer (QKV, MLP up), it runs while the
	 * weight-gradient GEMM computes; the next op waits for it. overlap.tp
	 * does the same with every input-gradient collective, and pipelines
	 * the all-gathers with the dgrad GEMM that consumes them. */
	bool awg = p->tp > 1 && !sp && !ov && p->overlap_tp_grad;
	/* With sequence parallelism Megatron-core's column-parallel linear
	 * always works this way in backward (linear_with_grad_accumulation_
	 * and_async_allreduce): it all-gathers its saved input shard for the
	 * weight gradient behind the dgrad GEMM, then reduce-scatters the
	 * input gradient behind the wgrad GEMM; Transformer Engine's bulk
	 * overlaps do the same. */
	bool hide = p->tp > 1 && (awg || ov || sp); /* input-gradient collective behind wgrad */

	if (p->recompute == PLAN_RC_FULL)
		layer_fwd(b, l, WL_P_RECOMPUTE);
	layer_shape(b, l, &ls);
	b->layer = l;
	const struct model_layer_cost c = ls.c;
	double qkv_n = ls.qkv_n, ffn_t = ls.ffn_t, scale = ls.scale;
	/* Ring attention keeps only the rank's own K/V chunk (Transformer
	 * Engine's context-parallel attention, both its P2P and all-gather
	 * forms): recomputing the attention forward exchanges K/V again, and
	 * so does its backward, which also sends the dK/dV back. */
	if (p->recompute == PLAN_RC_SELECTIVE) {
		if (p->cp > 1)
			comm(b, WL_P_RECOMPUTE, WL_D_CP, WL_C_ALLGATHER,
			     c.cp_bytes * p->cp / (p->cp - 1), "cp kv exchange", true);
		attn_core(b, WL_P_RECOMPUTE, false);
	}

	residual(b, ph, true, !ls.moe && (m->bias || m->mlp_bias));
	if (ls.moe) {
		double d, e;
		moe_bwd(b, &ls, hide);
		model_layer_rank_params(m, p, l, &d, &e);
		dp_ready(b, 0, e);
	} else {
		mlp_bwd(b, ffn_t, scale, hide, &dense_names, MLP_ALL);
		dp_ready(b, (mats(m) + 1) * h * ffn_t, 0); /* fc1 (gated: 2 mats) and fc2 */
	}
	cmp_op(b, ph, WL_ELEM, "norm bwd", 0, 4 * act / (sp ? tp : 1), 0, 0, 0, 0, WL_V_NONE);
	residual_grad_add(b);
	residual(b, ph, true, m->bias || m->attn_bias);
	linear_after_ag(b, ph, "proj dgrad", T, q / tp, h, scale);
	linear(b, ph, "proj wgrad", q / tp, h, T, 1, scale, WL_V_NONE);
	/* the ring's K/V again, and the dK/dV travelling back with them a
	 * hop behind (all steps' but the last: `early`, whole bytes as every
	 * op's size), beside the steps before the last; the last step's dK/dV
	 * hop after it (exposed) */
	double cpsz = p->cp > 1 ? c.cp_bytes * p->cp / (p->cp - 1) : 0;
	double early = p->cp > 2 ? floor(cpsz * (p->cp - 2) / (p->cp - 1)) : 0;
	if (p->cp > 1) {
		comm(b, ph, WL_D_CP, WL_C_ALLGATHER, cpsz, "cp kv exchange", true);
		if (early > 0)
			comm(b, ph, WL_D_CP, WL_C_REDUCESCATTER, early, "cp dkv exchange", true);
	}
	attn_core(b, ph, true);
	if (p->cp > 1)
		comm(b, ph, WL_D_CP, WL_C_REDUCESCATTER, cpsz - early, "cp dkv exchange", false);
	qk_pre_attention(b, ph, true);
	if (m->kv_lora > 0) {
		mla_bwd(b, scale, hide);
	} else {
		/* Q, K and V are split from the QKV output: autograd's split
		 * backward concatenates their gradients, a copy (found by
		 * review) */
		cmp_op(b, ph, WL_ELEM, "qkv split bwd", 0, 2 * b->wb * T * qkv_n, 0, 0, 0, 0,
		       WL_V_NONE);
		if (sp)
			comm(b, ph, WL_D_TP, WL_C_ALLGATHER, act, "tp allgather", true);
		linear(b, ph, "qkv dgrad", T, h, qkv_n, 1, scale, WL_V_NONE);
		if (hide)
			comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", true);
		linear(b, ph, "qkv wgrad", h, qkv_n, T, 1, scale, WL_V_NONE);
		/* (grad_output.sum over the tokens, after the wgrad) */
		if (qkv_has_bias(m))
			cmp_op(b, ph, WL_ELEM, "qkv bias grad", 0, b->wb * T * qkv_n, 0, 0, 0, 0,
			       WL_V_NONE);
		if (p->tp > 1 && !hide)
			comm(b, ph, WL_D_TP, tpc, act, sp ? "tp reducescatter" : "tp allreduce", false);
	}
	cmp_op(b, ph, WL_ELEM, "norm bwd", 0, 4 * act / (sp ? tp : 1), 0, 0, 0, 0, WL_V_NONE);
	residual_grad_add(b);
}

/* A TP all-reduce of the vision encoder: its size follows the drawn image
 * load like the encoder's compute (the executor scales WL_V_VISION ops). */
static void vision_comm_as(struct bld *b, enum wl_phase ph, double bytes, bool overlap,
			   const char *name)
{
	b->vision_path = true;
	comm(b, ph, WL_D_TP, WL_C_ALLREDUCE, bytes, name, overlap);
	b->vision_path = false;
}

static void vision_comm(struct bld *b, enum wl_phase ph, double bytes, bool overlap)
{
	vision_comm_as(b, ph, bytes, overlap, "vit tp allreduce");
}

/* Vision encoder of one micro-batch (mean load; the executor scales it per
 * replica). ViT blocks under the plan's TP (assumption: Megatron applies
 * the LLM's tensor parallelism to the encoder, as for LLaVA). */
static void vision_pass(struct bld *b, bool bwd, enum wl_phase ph);

static void vision(struct bld *b, bool bwd)
{
	/* full recompute covers the encoder too (its blocks keep only their
	 * inputs, as models/memory.c counts): its forward runs again first */
	if (bwd && b->p->recompute == PLAN_RC_FULL)
		vision_pass(b, false, WL_P_RECOMPUTE);
	vision_pass(b, bwd, WL_P_VISION);
}

static void vision_pass(struct bld *b, bool bwd, enum wl_phase ph)
{
	const struct model *m = b->m;
	const struct plan *p = b->p;
	const struct model_vision *v = &m->vit;
	double imgs = plan_dist_mean(&p->images_per_sample) * p->micro_batch;
	double pimg = plan_dist_mean(&p->image_tokens) * v->merge * v->merge;
	double P = imgs * pimg, vh = v->hidden, tp = p->tp, total, attn, sumg, scale, mult;
	if (!m->has_vision || P <= 0)
		return;
	b->layer = -1;
	/* split by tp but the patch embedding (a convolution, whole on every
	 * TP rank as memory counts it; found by an audit: split too) */
	total = imgs * model_vision_flops_fwd(m, pimg) / tp +
		2.0 * (double)model_vision_embed_weights(m) * P * (1 - 1 / tp);
	attn = model_vision_attn_coef(m) * pimg * P / tp;
	sumg = 2 * v->depth * P * (3 * vh * vh + vh * vh + 2 * vh * v->ffn) / tp;
	scale = sumg > 0 ? (total - attn) / sumg : 1;
	mult = bwd ? 2 : 1; /* backward: data + weight gradients */
	/* attention: no mask in the encoder; the fused kernel's backward is
	 * 2.5x its forward (FLASH_BWD_RATIO) */
	double amult = bwd ? FLASH_BWD_RATIO : 1;
	if (bwd) {
		/* Backward, block by block: the row-parallel GEMMs (MLP down,
		 * projection) need no exchange; the column-parallel ones (MLP up,
		 * QKV) all-reduce their input gradient, behind their wgrad GEMM
		 * when Megatron's async all-reduce is on (tp_grad, the default;
		 * the encoder runs without sequence parallelism). */
		bool hide = p->tp > 1 && (p->overlap_tp_grad || p->overlap_tp);
		/* the mergers' (and DeepStack's) column-parallel fc1: the input
		 * gradient of the merged patches, 4 x hidden wide, all-reduced
		 * (their GEMMs' FLOPs are in the blocks' `scale`; found by an
		 * audit: their exchanges were missing) */
		for (int k = 0; p->tp > 1 && k < 1 + v->deepstack; k++)
			vision_comm_as(b, ph, b->wb * P * vh, false, "vit merger tp allreduce");
		for (int d = 0; d < v->depth; d++) {
			gemm(b, ph, "vit mlp down dgrad", P, v->ffn / tp, vh, 1, scale, WL_V_VISION);
			wgrad_of(b, gemm(b, ph, "vit mlp down wgrad", v->ffn / tp, vh, P, 1, scale, WL_V_VISION));
			/* (gelu's backward, 3 passes, and its bias gradient's sum over
			 * the patches, 1, as one op) */
			cmp_op(b, ph, WL_ELEM, "vit activation bwd", 0, 4 * b->wb * P * v->ffn / tp, 0, 0,
			       0, 0, WL_V_VISION);
			gemm(b, ph, "vit mlp up dgrad", P, vh, v->ffn / tp, 1, scale, WL_V_VISION);
			if (p->tp > 1 && hide)
				vision_comm(b, ph, b->wb * P * vh, true);
			wgrad_of(b, gemm(b, ph, "vit mlp up wgrad", vh, v->ffn / tp, P, 1, scale, WL_V_VISION));
			if (p->tp > 1 && !hide)
				vision_comm(b, ph, b->wb * P * vh, false);
			cmp_op(b, ph, WL_ELEM, "vit norm bwd", 0, 4 * b->wb * P * vh, 0, 0, 0, 0,
			       WL_V_VISION);
			gemm(b, ph, "vit proj dgrad", P, vh / tp, vh, 1, scale, WL_V_VISION);
			wgrad_of(b, gemm(b, ph, "vit proj wgrad", vh / tp, vh, P, 1, scale, WL_V_VISION));
			attn_op(b, ph, "vit attention bwd", amult * 4 * pimg * P * vh / tp,
				mult * 4 * b->wb * P * vh / tp, P, pimg, vh / v->heads, v->heads / tp,
				WL_MASK_NONE, true, WL_V_VISION);
			/* (the rotary embedding's backward: one pass of q's and
			 * k's gradients, as the decoder's) */
			cmp_op(b, ph, WL_ELEM, "vit rope bwd", 0, 4 * b->wb * P * vh / tp, 0, 0, 0, 0,
			       WL_V_VISION);
			gemm(b, ph, "vit qkv dgrad", P, vh, 3 * vh / tp, 1, scale, WL_V_VISION);
			if (p->tp > 1 && hide)
				vision_comm(b, ph, b->wb * P * vh, true);
			wgrad_of(b, gemm(b, ph, "vit qkv wgrad", vh, 3 * vh / tp, P, 1, scale, WL_V_VISION));
			if (p->tp > 1 && !hide)
				vision_comm(b, ph, b->wb * P * vh, false);
			cmp_op(b, ph, WL_ELEM, "vit norm bwd", 0, 4 * b->wb * P * vh, 0, 0, 0, 0,
			       WL_V_VISION);
		}
		return;
	}
	/* A block as Qwen3-VL's: norm, attention, residual add, norm, MLP
	 * (fc1, activation, fc2), residual add; the element-wise ops priced as
	 * the decoder's (found by review: only the first norm was) */
	for (int d = 0; d < v->depth; d++) {
		cmp_op(b, ph, WL_ELEM, "vit norm", 0, 2 * b->wb * P * vh, 0, 0, 0, 0, WL_V_VISION);
		gemm(b, ph, "vit qkv gemm", P, 3 * vh / tp, vh, 1, scale, WL_V_VISION);
		/* Qwen3-VL's vision blocks rotate q and k too (2-D rotary):
		 * one pass over both, as the decoder's qk_pre_attention */
		cmp_op(b, ph, WL_ELEM, "vit rope", 0, 4 * b->wb * P * vh / tp, 0, 0, 0, 0,
		       WL_V_VISION);
		attn_op(b, ph, "vit attention", 4 * pimg * P * vh / tp, 4 * b->wb * P * vh / tp, P,
			pimg, vh / v->heads, v->heads / tp, WL_MASK_NONE, false, WL_V_VISION);
		gemm(b, ph, "vit proj gemm", P, vh, vh / tp, 1, scale, WL_V_VISION);
		if (p->tp > 1)
			vision_comm(b, ph, b->wb * P * vh, false);
		cmp_op(b, ph, WL_ELEM, "vit residual add", 0, 3 * b->wb * P * vh, 0, 0, 0, 0,
		       WL_V_VISION);
		cmp_op(b, ph, WL_ELEM, "vit norm", 0, 2 * b->wb * P * vh, 0, 0, 0, 0, WL_V_VISION);
		gemm(b, ph, "vit mlp up gemm", P, v->ffn / tp, vh, 1, scale, WL_V_VISION);
		cmp_op(b, ph, WL_ELEM, "vit activation", 0, 2 * b->wb * P * v->ffn / tp, 0, 0, 0, 0,
		       WL_V_VISION);
		gemm(b, ph, "vit mlp down gemm", P, vh, v->ffn / tp, 1, scale, WL_V_VISION);
		if (p->tp > 1)
			vision_comm(b, ph, b->wb * P * vh, false);
		cmp_op(b, ph, WL_ELEM, "vit residual add", 0, 3 * b->wb * P * vh, 0, 0, 0, 0,
		       WL_V_VISION);
	}
	/* the mergers' row-parallel fc2: their outputs, the merged tokens
	 * (P / merge^2) at the decoder's width, all-reduced */
	for (int k = 0; p->tp > 1 && k < 1 + v->deepstack; k++)
		vision_comm_as(b, ph, b->wb * P / ((double)v->merge * v->merge) * v->out_hidden,
			       false, "vit merger tp allreduce");
}

/* The next compute op also waits for DP-stream op id (-1 none). pend2 holds
 * DP-stream ops only while micro-batches run (gathers, blocking
 * reductions), and a later one implies the earlier: keep the later. */
static void wait_dp(struct bld *b, int32_t id)
{
	if (id > b->pend2)
		b->pend2 = id;
}

/* Data-parallel gradient traffic of `elems` gradient elements (one rank):
 * into the bucket, flushed as a collective when full. */
static void dp_flush(struct bld *b, bool expert, bool force)
{
	const struct plan *p = b->p;
	double *acc = expert ? &b->bucket_exp : &b->bucket_dense;
	/* A step without the replicas' reduction (local SGD's local steps,
	 * the SSP/async estimate's run) still reduces over the CP group: the
	 * CP ranks of one replica hold the same parameters, each with the
	 * gradients of its part of the sequence (Megatron reduces over DP x
	 * CP; found by review: the relaxed modes dropped this reduction with
	 * the replicas'). plan_check_model leaves only dense models without a
	 * sharded optimizer here. */
	bool cp_only = !b->o->dp_reduce && p->cp > 1, sends = b->o->dp_reduce || cp_only;
	enum wl_dim dim = cp_only ? WL_D_CP : expert ? WL_D_EDP : WL_D_DP;
	int D = p->dp * p->cp, Dg = cp_only ? p->cp : expert ? plan_expert_dp(p) : D;
	enum wl_coll c;
	double size, elems = *acc;
	int32_t saved = b->pend;
	if (elems <= 0 || (!force && elems * b->gb < p->bucket_bytes))
		return;
	*acc = 0;
	/* (a local SGD step sends nothing across replicas: nothing to
	 * select, keep or add; found by review: its local steps paid top-k's
	 * compute) */
	if (Dg <= 1 || (!sends && p->sync == PLAN_SYNC_LOCAL_SGD))
		return;
	if (p->compression == PLAN_CMP_TOPK) {
		/* Sparse all-gather: every rank's k values (in the reduction's
		 * dtype, grad_reduce_dtype) and int32 indices (Aji & Heafield
		 * 2017; Lin et al. 2018 DGC): output = D x k x (value + 4). */
		double k = elems * p->compression_ratio, pair = b->gb + 4;
		c = WL_C_ALLGATHER;
		size = Dg * k * pair;
		/* selection: two passes over fp32 gradients (assumption: radix
		 * select). Without the reduction in the SSP/async estimate's
		 * run the step still selects, keeps its residual and applies
		 * what arrives: the compute stays, only the all-gather goes
		 * (found by review: all three were dropped) */
		cmp_op(b, WL_P_OPT, WL_ELEM, "top-k select", 0, 2 * 4 * elems, 0, 0, 0, 0, WL_V_NONE);
		if (p->error_feedback)
			cmp_op(b, WL_P_OPT, WL_ELEM, "error feedback", 0, 3 * 4 * elems, 0, 0, 0, 0,
			       WL_V_NONE);
		/* overlapped: nothing on the compute stream waits until the optimizer */
		if (sends)
			coll_op(b, WL_P_DP, dim, c, size,
				cp_only ? "cp grad top-k allgather" :
				expert	? "edp top-k allgather" :
					  "dp top-k allgather",
				-1);
		/* scatter-add of the D x k received pairs into the dense gradient:
		 * it needs the all-gather's output, so it runs after backward
		 * (run_deferred) */
		defer_op(b, "top-k accumulate", WL_P_OPT, Dg * k * pair * 2 + 4 * elems);
		return;
	}
	if (!sends)
		return;
	c = (p->zero >= 1 || p->distributed_optimizer) ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
	size = elems * b->gb;
	if (p->zero >= 2 && p->offload != PLAN_OFF_NONE)
		b->host_shard += elems / Dg;
	const char *name = cp_only ? "cp grad reduce" : expert ? "edp grad reduce" : "dp grad reduce";
	if (b->dp_block) {
		/* on the compute stream: after what it waited for, and before
		 * its next op */
		int32_t id = coll_op(b, WL_P_DP, dim, c, size, name, saved);
		/* pend2 as well: a communication op emitted next (sequence
		 * parallelism's all-gather, an EP combine) takes over pend */
		if (id >= 0) {
			b->pend = id;
			wait_dp(b, id);
		}
		return;
	}
	/* overlapped: nothing on the compute stream waits until the optimizer */
	coll_op(b, WL_P_DP, dim, c, size, name, -1);
}

/* The deferred element-wise ops, once every DP-stream op so far is done. */
static void run_deferred(struct bld *b)
{
	if (b->ndfr > 0)
		wait_dp(b, b->last[WL_S_DP]);
	for (int i = 0; i < b->ndfr; i++)
		cmp_op(b, b->dfr[i].ph, WL_ELEM, b->dfr[i].name, 0, b->dfr[i].bytes, 0, 0, 0, 0,
		       WL_V_NONE);
	b->ndfr = 0;
}

/* A point-to-point op: a send (on the PP send stream, after d1/d2) or a
 * receive (PP receive stream) from/to stage `peer`; the workload connects
 * each send to its receive at the end. */
static int32_t p2p(struct bld *b, enum wl_kind kind, enum wl_dim dim, enum wl_phase ph,
		   const char *name, double bytes, int peer, int32_t d1, int32_t d2)
{
	struct wl_op op;
	memset(&op, 0, sizeof(op));
	op.kind = (uint8_t)kind;
	op.stream = kind == WL_K_SEND ? WL_S_PP_SEND : WL_S_PP_RECV;
	op.dim = (uint8_t)dim;
	op.coll = WL_C_P2P;
	op.phase = (uint8_t)ph;
	op.name = name;
	op.size_bytes = bytes;
	op.peer_stage = peer;
	op.peer_op = -1;
	return emit(b, &op, d1, d2, -1);
}

/* Tied input and output embeddings on the first and last stage (pp > 1):
 * their gradients are summed across the two stages before the optimizer
 * (Megatron's _allreduce_embedding_grads, DeepSpeed's tied-module
 * reduction). An all-reduce of two ranks is, byte for byte, both sending
 * their whole gradient to the other (ring: S/2 twice each way), so it is
 * a send and a receive on the pipeline streams, each end's after its own
 * reduction; the data moves once both ends are there (sim/exec.c: the
 * send waits for its receive to be posted); the optimizer waits for the
 * receive. Reported with the pipeline's communication (sim/exec.c's
 * kind_of_op), which it exists for. */
static void emb_exchange(struct bld *b, int peer, double bytes, int32_t *recv_id)
{
	p2p(b, WL_K_SEND, WL_D_DP, WL_P_DP, "embedding grad send", bytes, peer,
	    b->last[WL_S_COMPUTE], b->last[WL_S_DP]);
	*recv_id = p2p(b, WL_K_RECV, WL_D_DP, WL_P_DP, "embedding grad recv", 0, peer,
		       b->last[WL_S_COMPUTE], b->last[WL_S_DP]);
	b->pend2 = *recv_id;
}

/* Gather the parameters of layer l (dense over DP, experts over EDP) as
 * the collectives `dense` and `expert`: ZeRO-3's before each use, or the
 * distributed optimizer's after its step (overlap.param_gather). A
 * prefetch: issued ahead, waited for by the layer's first op. Returns the
 * last collective (the DP stream runs them in order). */
static int32_t layer_gather(struct bld *b, int l, const char *dense, const char *expert)
{
	double d, e;
	int32_t id;
	const struct plan *p = b->p;
	model_layer_rank_params(b->m, p, l, &d, &e);
	b->layer = l;
	id = coll_op(b, WL_P_DP, WL_D_DP, WL_C_ALLGATHER, d * b->wb, dense, -1);
	/* ZeRO-Infinity (offload: params, ZeRO-3 only): the rank's shard lives
	 * in host memory and is copied to the GPU before each gather. */
	if (id >= 0 && p->offload == PLAN_OFF_PARAMS)
		b->r->ops[id].bytes = d * b->wb / (p->dp * p->cp);
	if (e > 0 && plan_expert_dp(p) > 1) {
		id = coll_op(b, WL_P_DP, WL_D_EDP, WL_C_ALLGATHER, e * b->wb, expert, -1);
		if (id >= 0 && p->offload == PLAN_OFF_PARAMS)
			b->r->ops[id].bytes = e * b->wb / plan_expert_dp(p);
	}
	return id;
}

/* The same for `params` dense parameters of this rank that belong to no
 * layer (embeddings, LM head, vision encoder), -1 if none. */
static int32_t extra_gather(struct bld *b, double params, const char *name)
{
	const struct plan *p = b->p;
	int32_t id;
	if (params <= 0)
		return -1;
	b->layer = -1;
	id = coll_op(b, WL_P_DP, WL_D_DP, WL_C_ALLGATHER, params * b->wb, name, -1);
	if (id >= 0 && p->offload == PLAN_OFF_PARAMS)
		b->r->ops[id].bytes = params * b->wb / (p->dp * p->cp);
	return id;
}

/* ZeRO-3 gathers every parameter before its forward and backward
 * (DeepSpeed partitions every module's). */
static int32_t z3_gather(struct bld *b, int l)
{
	return layer_gather(b, l, "zero3 param allgather", "zero3 expert allgather");
}

static int32_t z3_gather_extra(struct bld *b, double params, const char *name)
{
	return b->p->zero >= 3 ? extra_gather(b, params, name) : -1;
}

/* overlap.param_gather (Megatron --overlap-param-gather): the distributed
 * optimizer's all-gather of the updated parameters runs beside the next
 * iteration's first forward, a layer ahead (Megatron dispatches the next
 * bucket's all-gather from each forward pre-hook; per layer here), and
 * the layer's forward waits for its own. In one iteration: issued in the
 * first forward of each model chunk instead of after the step. */
static int32_t pg_gather(struct bld *b, int l)
{
	return layer_gather(b, l, "dp param allgather", "edp param allgather");
}

static int32_t pg_gather_extra(struct bld *b, double params)
{
	return extra_gather(b, params, "dp param allgather");
}

/* ---- overlap.ep: merged forward/backward pairs ------------------------------
 *
 * Megatron-core's --overlap-moe-expert-parallel-comm (its combined 1F1B, as
 * DeepSeek's DualPipe does; recalled, an assumption: not in
 * shared/reference) runs a steady-state forward and the independent
 * backward scheduled after it together: the two are cut at their EP
 * all-to-alls and their compute alternates, the backward's first, so each
 * all-to-all (on its own stream, WL_S_EP) travels while the other
 * micro-batch computes: b.combine || f.attention, f.dispatch || b.experts,
 * b.dispatch || f.experts, f.combine || b.attention. Both receives come
 * first and both sends after. The builder emits each task as a chain of
 * its own (struct chain: what the next op of that task waits for) from
 * the same starting point, then merge_chains interleaves the two and
 * re-threads every stream in the merged order. */
struct chain {
	int32_t last[WL_NSTREAMS];
	int32_t pend, pend_later, pend2, pend_send, sync_next;
};

static void chain_save(const struct bld *b, struct chain *c)
{
	memcpy(c->last, b->last, sizeof(c->last));
	c->pend = b->pend;
	c->pend_later = b->pend_later;
	c->pend2 = b->pend2;
	c->pend_send = b->pend_send;
	c->sync_next = b->sync_next;
}

static void chain_load(struct bld *b, const struct chain *c)
{
	memcpy(b->last, c->last, sizeof(b->last));
	b->pend = c->pend;
	b->pend_later = c->pend_later;
	b->pend2 = c->pend2;
	b->pend_send = c->pend_send;
	b->sync_next = c->sync_next;
}

static bool is_ep_a2a(const struct wl_op *op)
{
	return op->kind == WL_K_COLL && op->dim == WL_D_EP && op->coll == WL_C_ALLTOALL;
}

static int32_t moved(const int32_t *pos, int32_t base, int32_t i)
{
	return i >= base ? pos[i - base] : i;
}

/* Interleave the forward chain [base, mid) and the backward chain [mid,
 * nops), both emitted after `start` (the builder's state before them):
 * segments ending at an EP all-to-all alternate, the backward's first.
 * Each op's stream predecessor becomes the one before it in the merged
 * order; the chains' end states (end[0] forward, end[1] backward) are
 * renumbered, and the builder's last ops are the merged ones. */
static int merge_chains(struct bld *b, int32_t base, int32_t mid, const struct chain *start,
			struct chain end[2])
{
	struct wl_role *r = b->r;
	int32_t n = r->nops - base, k = 0, at[2] = { mid, base }, stop[2] = { r->nops, mid };
	int32_t prev[WL_NSTREAMS], *order = malloc((size_t)n * sizeof(*order));
	int32_t *pos = malloc((size_t)n * sizeof(*pos));
	uint8_t *spred = malloc((size_t)n);
	struct wl_op *tmp = malloc((size_t)n * sizeof(*tmp));
	int who = 0;
	if (!order || !pos || !spred || !tmp) {
		free(order);
		free(pos);
		free(spred);
		free(tmp);
		return TS_ENOMEM;
	}
	/* which ops have their chain's stream predecessor as deps[0] (emit) */
	for (int c = 0; c < 2; c++) {
		memcpy(prev, start->last, sizeof(prev));
		for (int32_t i = c ? mid : base; i < (c ? r->nops : mid); i++) {
			const struct wl_op *op = &r->ops[i];
			spred[i - base] = prev[op->stream] >= 0 && op->ndeps > 0 &&
					  op->deps[0] == prev[op->stream];
			prev[op->stream] = i;
		}
	}
	while (at[0] < stop[0] || at[1] < stop[1]) {
		if (at[who] < stop[who]) {
			int32_t i;
			do {
				i = at[who]++;
				order[k++] = i;
			} while (!is_ep_a2a(&r->ops[i]) && at[who] < stop[who]);
		}
		who ^= 1;
	}
	for (k = 0; k < n; k++)
		pos[order[k] - base] = base + k;
	memcpy(prev, start->last, sizeof(prev));
	for (k = 0; k < n; k++) {
		struct wl_op op = r->ops[order[k]];
		int32_t sp = prev[op.stream];
		int nd = 0;
		for (int d = 0; d < op.ndeps; d++)
			op.deps[d] = moved(pos, base, op.deps[d]);
		if (op.sync_after >= 0)
			op.sync_after = moved(pos, base, op.sync_after);
		if (spred[order[k] - base])
			op.deps[0] = sp;
		else if (sp >= 0 && op.ndeps < WL_MAX_DEPS)
			op.deps[op.ndeps++] = sp; /* (emit keeps a slot for it) */
		for (int d = 0; d < op.ndeps; d++) { /* drop repeats */
			bool dup = false;
			for (int e = 0; e < nd && !dup; e++)
				dup = op.deps[e] == op.deps[d];
			if (!dup)
				op.deps[nd++] = op.deps[d];
		}
		op.ndeps = (uint8_t)nd;
		tmp[k] = op;
		prev[op.stream] = base + k;
	}
	memcpy(r->ops + base, tmp, (size_t)n * sizeof(*tmp));
	for (int c = 0; c < 2; c++) {
		struct chain *e = &end[c];
		for (int st = 0; st < WL_NSTREAMS; st++)
			e->last[st] = moved(pos, base, e->last[st]);
		e->pend = moved(pos, base, e->pend);
		e->pend_later = moved(pos, base, e->pend_later);
		e->pend2 = moved(pos, base, e->pend2);
		e->pend_send = moved(pos, base, e->pend_send);
		e->sync_next = moved(pos, base, e->sync_next);
	}
	memcpy(b->last, prev, sizeof(prev));
	free(order);
	free(pos);
	free(spred);
	free(tmp);
	return 0;
}

/* One step of a stage's program: a whole task, or a part of a task of a
 * merged pair (its receive, its body or its send; see above). */
enum { PART_RECV = 1, PART_BODY = 2, PART_SEND = 4, PART_ALL = 7 };
struct step {
	int32_t task;              /* index into the schedule */
	uint8_t parts;             /* PART_* */
	uint8_t pair;              /* 0 alone, 1 a merged pair's forward, 2 its backward */
};

/* The steps of a schedule: under overlap.ep each steady-state forward and
 * the backward after it is a merged pair (not the last warm-up forward
 * and the first cool-down backward when every forward is warm-up: merging
 * those would make the pipeline wait on itself). */
static int plan_steps(const struct plan *p, const struct task *t, int nt, struct step *st)
{
	int n = 0;
	for (int i = 0; i < nt; i++) {
		if (p->overlap_ep && i + 1 < nt && t[i].steady && !t[i].bwd && t[i + 1].bwd &&
		    (t[i].micro != t[i + 1].micro || t[i].chunk != t[i + 1].chunk)) {
			for (uint8_t part = PART_RECV; part <= PART_SEND; part <<= 1) {
				st[n++] = (struct step){ i, part, 1 };
				st[n++] = (struct step){ i + 1, part, 2 };
			}
			i++;
			continue;
		}
		st[n++] = (struct step){ i, PART_ALL, 0 };
	}
	return n;
}

/* Schedule of device s: 2 x mm x v tasks in Megatron's order. */
static int schedule(const struct plan *p, int s, int mm, int v, struct task *t)
{
	int total = mm * v, n = 0, warm, i;
	struct task f, bk;
	if (p->schedule == PLAN_SCHED_GPIPE) {
		for (i = 0; i < mm; i++)
			t[n++] = (struct task){ 0, 0, i, 0 };
		for (i = 0; i < mm; i++)
			t[n++] = (struct task){ 1, 0, i, 0 };
		return n;
	}
	warm = plan_warmup(p, s, mm);
	/* overlap.ep: one more, so that each steady-state forward pairs with
	 * a backward it does not feed (merge_chains; without it the last
	 * stage would pair a chunk's forward with its own backward) */
	if (p->overlap_ep)
		warm++;
	if (warm > total)
		warm = total;
	f.steady = bk.steady = 0;
	f.bwd = 0;
	bk.bwd = 1;
	for (i = 0; i < total; i++) {
		int mi, c;
		plan_vtask(p, mm, i, &mi, &c);
		f.micro = mi;
		f.chunk = c;
		if (i < warm) {
			t[n++] = f;
			continue;
		}
		f.steady = bk.steady = 1;
		t[n++] = f;
		plan_vtask(p, mm, i - warm, &mi, &c);
		bk.micro = mi;
		bk.chunk = v - 1 - c;
		t[n++] = bk;
	}
	bk.steady = 0;
	for (i = total - warm; i < total; i++) {
		int mi, c;
		plan_vtask(p, mm, i, &mi, &c);
		bk.micro = mi;
		bk.chunk = v - 1 - c;
		t[n++] = bk;
	}
	return n;
}

static void release_roles(struct workload *w)
{
	for (int i = 0; i < w->nroles; i++)
		free(w->roles[i].ops);
	free(w->roles);
	w->roles = NULL;
	w->nroles = 0;
}

/* The workload would pass WL_MAX_OPS: ops, at least (how "at least") or
 * as estimated (how "about"; 0: found while built). */
static int too_many_ops(struct ts_error *err, int micro, const struct model *m, double ops,
			const char *how)
{
	char n[48];
	if (ops > 0)
		snprintf(n, sizeof(n), "would have %s %.3g", how, ops);
	else
		snprintf(n, sizeof(n), "has more than %d", WL_MAX_OPS);
	return ts_error_set(err, TS_EINPUT,
			    "the iteration %s ops (%d micro-batches x %d layers x each one's forward "
			    "and backward ops), beyond the %d the simulator holds (about 8 GB); use "
			    "fewer, larger micro-batches",
			    n, micro, m->layers, WL_MAX_OPS);
}

/* With a timeline: the workload would pass o->max_slices ops outside the
 * vision encoder, each a slice of every simulated rank: ops as estimated
 * (a lower bound of the slices, one rank a stage; 0: found while built).
 * The message names the same limit as the executor's (sim/exec.c,
 * tl_add). */
static int too_many_slices(struct ts_error *err, const struct wl_opts *o, double ops)
{
	char n[64];
	if (ops > 0)
		snprintf(n, sizeof(n), "have at least %.3g slices, more than", ops);
	else
		snprintf(n, sizeof(n), "pass");
	return ts_error_set(err, TS_EINPUT,
			    "the timeline for --trace/--svg would %s the %lld slices a trace "
			    "Perfetto can open (each op of each simulated rank is one); trace a plan "
			    "with fewer micro-batches or ranks",
			    n, (long long)o->max_slices);
}

double workload_traced_ops(const struct workload *w)
{
	double n = 0;
	for (int s = 0; s < w->nroles; s++)
		for (int32_t i = 0; i < w->roles[s].nops; i++)
			n += w->roles[s].ops[i].vary != WL_V_VISION;
	return n;
}

int workload_build(struct workload *w, const struct model *m, const struct plan *p,
		   const struct wl_opts *o, struct ts_error *err)
{
	int P = p->pp, v = p->schedule == PLAN_SCHED_INTERLEAVED ? p->virtual_stages : 1;
	int mm = plan_microbatches(p), V = P * v, rc = 0;
	struct task *tasks = NULL;
	struct step *steps = NULL;
	int32_t *recv_of = NULL; /* [dir][vstage][micro] -> op index in the receiving role */
	int32_t emb_recv[2] = { -1, -1 }; /* tied-embedding receive of stage 0, of stage P-1 */
	struct bld b;
	double h = m->hidden, vocab = plan_vocab(p, m);
	/* with sequence parallelism the tensor is already split over tp */
	bool sg = p->pp_scatter_gather && p->tp > 1 && !p->sp;
	/* sequence parallelism: the embedding's output is reduce-scattered to
	 * sequence shards and the LM head's input all-gathered (Megatron's
	 * VocabParallelEmbedding and output layer); backward mirrors them */
	bool spl = p->sp && p->tp > 1;
	/* parameters of this rank outside the layers (ZeRO-3 gathers them):
	 * the vocabulary-parallel word embeddings' 1/tp, and the learned
	 * positions whole (Megatron's "Position embedding (serial)", the same
	 * on every tp rank) */
	double emb_params = vocab * m->hidden / p->tp + (double)m->max_pos * m->hidden +
			    (double)model_embed_norm_params(m);
	/* the final norm (whole on every TP rank) */
	double fnorm_params = (double)model_norm_params(m);
	/* the LM head's weights (a tied one is the embedding's, gathered again)
	 * with the final norm before it */
	double hbias = m->head_bias ? vocab / p->tp : 0; /* the LM head's bias, split */
	double head_params = vocab * m->hidden / p->tp + fnorm_params + hbias;
	double vit_params = model_vision_rank_params(m, p);
	/* the parameters the last stage's optimizer holds outside the layers */
	double pg_head = (!m->tie_embeddings || P > 1 ? vocab * m->hidden / p->tp : 0) +
			 fnorm_params + hbias;
	/* a sharded optimizer below ZeRO-3 all-gathers the updated parameters:
	 * after its step, or beside the next forward with overlap.param_gather */
	bool step_gather = (p->zero >= 1 || p->distributed_optimizer) && p->zero < 3 &&
			   p->dp * p->cp > 1 && o->dp_reduce;
	bool pg = step_gather && p->overlap_param_gather;

	memset(w, 0, sizeof(*w));
	memset(&b, 0, sizeof(b));
	if (mm < 1 || P < 1 || p->tp < 1 || p->cp < 1 || p->ep < 1 || p->dp < 1)
		return ts_error_set(err, TS_EINPUT, "plan is not resolved (micro-batches %d, pp %d)",
				    mm, P);
	if (v > PLAN_MAX_CHUNKS) /* (plan_check_model refuses it) */
		return ts_error_set(err, TS_EINPUT, "virtual_stages %d: at most %d supported", v,
				    PLAN_MAX_CHUNKS);
	if (v > 1 && mm < P) /* (plan_resolve refuses it) */
		return ts_error_set(err, TS_EINPUT,
				    "the interleaved schedule needs at least pp (%d) micro-batches, "
				    "not %d",
				    P, mm);
	/* at least 16 ops per layer and micro-batch (forward and backward) */
	if ((double)mm * m->layers * 16 >= WL_MAX_OPS)
		return too_many_ops(err, mm, m, (double)mm * m->layers * 16, "at least");
	if (o->max_slices > 0 && (double)mm * m->layers * 16 > (double)o->max_slices)
		return too_many_slices(err, o, (double)mm * m->layers * 16);
	/* within 16 times of the limit by that count (a layer has 27 ops or
	 * more, many more with TP, recompute or a vision encoder): the ops of
	 * the same plan at k and 2k micro-batches (k = 1, pp where
	 * interleaving needs pp), each further micro-batch adding what the
	 * second k added (exact on every plan counted), so that such a plan
	 * is refused before it is built rather than at the limit, some 8 GB
	 * on (Qwen3-VL-8B, tp 2, full recompute, 16,384 micro-batches: built
	 * for 19 s and 4.5 GB before its refusal). Only where the samples are
	 * small beside the plan (found by review: at 2 pp micro-batches the
	 * samples outgrew a pp 256 plan) */
	int k0 = v > 1 ? P : 1;
	double lim = o->max_slices > 0 && o->max_slices < WL_MAX_OPS ? (double)o->max_slices
								      : WL_MAX_OPS;
	if (mm >= 8 * k0 && (double)mm * m->layers * 16 * 16 >= lim) {
		struct plan q = *p;
		double n[2] = { 0, 0 }, tl[2] = { 0, 0 };
		for (int k = 0; k < 2; k++) {
			struct workload t;
			q.global_batch = (k + 1) * k0 * p->dp * p->micro_batch;
			if ((rc = workload_build(&t, m, &q, o, err))) {
				/* a sample over the limit: the plan, four times
				 * its size or more, is too (said with its own count) */
				if (rc == TS_EINPUT && strstr(err->msg, "the simulator holds"))
					return too_many_ops(err, mm, m, 0, NULL);
				if (rc == TS_EINPUT && strstr(err->msg, "a trace Perfetto can open"))
					return too_many_slices(err, o, 0);
				return rc;
			}
			for (int s = 0; s < t.nroles; s++)
				n[k] += t.roles[s].nops;
			tl[k] = workload_traced_ops(&t);
			workload_release(&t);
		}
		/* (the build holds WL_MAX_OPS ops and refuses the next: emit) */
		double est = n[0] + (n[1] - n[0]) / k0 * (mm - k0);
		if (est > WL_MAX_OPS)
			return too_many_ops(err, mm, m, est, "about");
		/* the ops a timeline traces, the same way (measured, 2026-12-04: a
		 * GPT of 8 layers at 30,000 micro-batches with --trace ran 6.8 s
		 * and 1.5 GB before the executor refused its 4 millionth slice) */
		est = tl[0] + (tl[1] - tl[0]) / k0 * (mm - k0);
		if (o->max_slices > 0 && est > (double)o->max_slices)
			return too_many_slices(err, o, est);
	}
	w->micro = mm;
	w->vchunks = v;
	w->nroles = P;
	w->roles = calloc((size_t)P, sizeof(*w->roles));
	tasks = malloc((size_t)2 * mm * v * sizeof(*tasks));
	steps = malloc((size_t)3 * 2 * mm * v * sizeof(*steps));
	recv_of = malloc((size_t)2 * V * mm * sizeof(*recv_of));
	if (!w->roles || !tasks || !steps || !recv_of) {
		rc = ts_error_set(err, TS_ENOMEM, "out of memory building the workload");
		goto fail;
	}
	for (int i = 0; i < 2 * V * mm; i++)
		recv_of[i] = -1;
	b.m = m;
	b.p = p;
	b.o = o;
	b.T = (double)p->micro_batch * p->seq_len / p->cp;
	/* FP8 (Transformer Engine): weights, activations and the distributed
	 * optimizer's parameter all-gather stay 16-bit (as models/memory.c
	 * assumes; no fp8 parameter gather); only GEMM operands are FP8 */
	b.wb = plan_act_bytes(p);
	b.ga = dt_bytes(p->grad_dtype);
	b.gb = plan_grad_wire_bytes(p);
	if (m->has_vision)
		w->vision_flops_micro = plan_dist_mean(&p->images_per_sample) * p->micro_batch *
					model_vision_flops_fwd(m, plan_dist_mean(&p->image_tokens) *
									 m->vit.merge * m->vit.merge) /
					p->tp;
	/* whole experts (etp 1): a rank's share of its own T/tp tokens */
	w->expert_tokens = m->experts > 0 ? b.T * m->top_k * plan_etp(p) / p->tp : 0;

	for (int s = 0; s < P; s++) {
		int nt = schedule(p, s, mm, v, tasks), bwd_left[PLAN_MAX_CHUNKS];
		/* ZeRO-2/3 keep only their gradient shard, so every micro-batch's
		 * gradients are reduce-scattered during its backward (DeepSpeed's
		 * stage 2/3 hooks); without overlap (DeepSpeed overlap_comm false)
		 * on the compute stream. Otherwise once, after the last one. */
		bool per_micro = p->zero >= 2;
		double grads_total = 0, opt_dense = 0, opt_exp = 0;
		struct wl_role *r = &w->roles[s];
		r->stage = s;
		b.r = r;
		for (int i = 0; i < WL_NSTREAMS; i++)
			b.last[i] = -1;
		b.pend = b.pend_later = b.pend2 = b.pend_send = b.sync_next = -1;
		b.bucket_dense = b.bucket_exp = b.host_shard = 0;
		b.dp_block = per_micro && !p->overlap_dp;
		for (int c = 0; c < v; c++)
			bwd_left[c] = mm;
		int nst = plan_steps(p, tasks, nt, steps);
		struct chain ch[2], start;
		int32_t base = 0, mid = 0, merged_last = -1;
		/* where a step's receive is posted (below): the compute before
		 * the step and before the one before it, the last forward's and
		 * backward's ends, and the direction of the step before (-1
		 * none, 1 forward, 0 backward) */
		int32_t before_cur = -1, before_prev = -1, fwd_end = -1, bwd_end = -1;
		int prev_fwd = -1;
		for (int si = 0; si < nst && !b.nrc; si++) {
			const struct step *sp = &steps[si];
			const struct task *tk = &tasks[sp->task];
			int q = sp->pair - 1; /* the chain of a merged pair's task */
			int vs = tk->chunk * P + s, first, nl;
			bool first_vs = vs == 0, last_vs = vs == V - 1;
			bool after_fwd = prev_fwd == 1;
			if (!sp->pair) {
				if (prev_fwd == 1)
					fwd_end = b.last[WL_S_COMPUTE];
				else if (prev_fwd == 0)
					bwd_end = b.last[WL_S_COMPUTE];
				before_prev = before_cur;
				before_cur = b.last[WL_S_COMPUTE];
				prev_fwd = !tk->bwd;
			}
			b.micro = tk->micro;
			b.chunk = tk->chunk;
			b.layer = -1;
			plan_chunk_layers(p, m, s, tk->chunk, &first, &nl);
			/* input from the neighbouring stage, posted where Megatron
			 * posts it (NCCL's stream waits for the compute issued
			 * before): after the compute before the step (1F1B's
			 * send_forward_recv_backward and send_backward_recv_forward,
			 * each followed by a device synchronise; DeepSpeed's
			 * pipeline engine runs its instructions in order); a steady
			 * interleaved backward's before the forward before it
			 * (send_forward_backward_recv_forward_backward posts both
			 * receives after the previous backward; the forward does
			 * not wait for the backward's here, as Megatron's exchange
			 * does: what the last stage receives there is another
			 * task's gradient, and tying it to the next backward
			 * deadlocks); with overlap.pp (overlap_p2p_comm,
			 * interleaved only) after the previous compute of the same
			 * direction, asynchronously. Found by an audit, 2026-12-05:
			 * every receive was posted as soon as the one before it was
			 * in, so a trace's receive track was busy all iteration and
			 * the host waited for the data only, not for the compute
			 * Megatron's synchronize waits for too. (A merged pair
			 * posts both first.) */
			if ((sp->parts & PART_RECV) && ((!tk->bwd && !first_vs) || (tk->bwd && !last_vs))) {
				int32_t post = b.last[WL_S_COMPUTE];
				/* (the first backward's: after the last warm-up
				 * forward, as Megatron's last warm-up step posts it;
				 * found by review: posted ahead) */
				if (!sp->pair && p->overlap_pp)
					post = !tk->bwd	    ? fwd_end :
					       bwd_end >= 0 ? bwd_end :
					       after_fwd    ? before_prev :
							      fwd_end;
				else if (!sp->pair && v > 1 && tk->steady && tk->bwd && after_fwd)
					post = before_prev;
				int32_t id = p2p(&b, WL_K_RECV, WL_D_PP, tk->bwd ? WL_P_BWD : WL_P_FWD,
						 tk->bwd ? "pp recv grad" : "pp recv act", 0,
						 ((tk->bwd ? vs + 1 : vs - 1) % P + P) % P, post, -1);
				if (id >= 0) {
					recv_of[((size_t)tk->bwd * V + vs) * mm + tk->micro] = id;
					b.pend = id;
					/* scatter-gather (Megatron SC'21 §3.5; DeepSpeed's
					 * PartitionedTensor.full()): each tp rank received
					 * bsh/t; the stage all-gathers bsh over NVLink
					 * before computing on it */
					if (sg)
						b.pend = coll_op(&b, tk->bwd ? WL_P_BWD : WL_P_FWD, WL_D_TP,
								 WL_C_ALLGATHER, b.wb * b.T * h, "pp allgather", id);
				}
			}
			if (sp->pair && sp->parts == PART_RECV) {
				chain_save(&b, &ch[q]); /* what its first op waits for */
				continue;
			}
			if (sp->pair && sp->parts == PART_BODY) {
				/* its body: a chain from after both receives */
				if (q == 0) {
					chain_save(&b, &start);
					base = b.r->nops;
				}
				memcpy(ch[q].last, start.last, sizeof(start.last));
				chain_load(&b, &ch[q]);
			}
			if (!(sp->parts & PART_BODY)) {
				/* a merged pair's send: after its own chain's last op */
				merged_last = b.last[WL_S_COMPUTE];
				b.last[WL_S_COMPUTE] = ch[q].last[WL_S_COMPUTE];
				b.pend = ch[q].pend;
			} else if (!tk->bwd) {
				int32_t g_head = -1;
				bool gat = pg && tk->micro == 0; /* this chunk's parameter gathers */
				if (first_vs && gat)
					wait_dp(&b, pg_gather_extra(&b, emb_params + vit_params));
				if (first_vs) {
					wait_dp(&b, z3_gather_extra(&b, emb_params + vit_params,
								    "zero3 embedding allgather"));
					vision(&b, false);
					b.layer = -1;
					cmp_op(&b, WL_P_FWD, WL_ELEM, "embedding", 0, 2 * b.wb * b.T * h, 0, 0,
					       0, 0, WL_V_NONE);
					if (p->tp > 1)
						comm(&b, WL_P_FWD, WL_D_TP,
						     spl ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE, b.wb * b.T * h,
						     spl ? "embedding tp reducescatter" : "embedding tp allreduce",
						     false);
					if (m->embed_norm) /* BLOOM's, on each rank's tokens */
						cmp_op(&b, WL_P_FWD, WL_ELEM, "embedding norm", 0,
						       2 * b.wb * b.T * h / (spl ? p->tp : 1), 0, 0, 0, 0,
						       WL_V_NONE);
				}
				int32_t g_next = p->zero >= 3 && nl > 0 ? z3_gather(&b, first) :
						 gat && nl > 0	       ? pg_gather(&b, first) :
									 -1;
				for (int l = first; l < first + nl; l++) {
					int32_t g_cur = g_next;
					/* prefetch: the next layer's gather is queued before this
					 * layer runs; this layer's first op waits for its own */
					g_next = l + 1 >= first + nl ? -1 :
						 p->zero >= 3	    ? z3_gather(&b, l + 1) :
						 gat		    ? pg_gather(&b, l + 1) :
									    -1;
					/* the head's weights are prefetched with the last layer */
					if (last_vs && l + 1 == first + nl)
						g_head = gat ? pg_gather_extra(&b, pg_head) :
							       z3_gather_extra(&b, head_params,
									       "zero3 lm head allgather");
					wait_dp(&b, g_cur);
					layer_fwd(&b, l, WL_P_FWD);
				}
				if (last_vs) {
					if (nl == 0)
						g_head = gat ? pg_gather_extra(&b, pg_head) :
							       z3_gather_extra(&b, head_params,
									       "zero3 lm head allgather");
					b.layer = -1;
					wait_dp(&b, g_head);
					cmp_op(&b, WL_P_FWD, WL_ELEM, "final norm", 0,
					       2 * b.wb * b.T * h / (spl ? p->tp : 1), 0, 0, 0, 0, WL_V_NONE);
					if (spl)
						comm(&b, WL_P_FWD, WL_D_TP, WL_C_ALLGATHER, b.wb * b.T * h,
						     "lm head tp allgather", false);
					gemm(&b, WL_P_FWD, "lm head gemm", b.T, vocab / p->tp,
					     h, 1, 1, WL_V_NONE);
					/* softmax cross-entropy: fp32 logits read and written;
					 * over a vocabulary split by TP, Megatron's
					 * vocab_parallel_cross_entropy all-reduces the
					 * per-token max, the predicted logit and the sum of
					 * exponentials (fp32 each) */
					cmp_op(&b, WL_P_FWD, WL_ELEM, "loss", 0,
					       2 * 4 * b.T * vocab / p->tp, 0, 0, 0, 0, WL_V_NONE);
					for (int k = 0; k < 3 && p->tp > 1; k++)
						comm(&b, WL_P_FWD, WL_D_TP, WL_C_ALLREDUCE, 4 * b.T,
						     "loss tp allreduce", false);
				}
			} else {
				bool last_bwd = --bwd_left[tk->chunk] == 0;
				bool reduce = last_bwd || per_micro; /* this backward's gradients */
				/* Megatron-core's DDP buckets only pipeline stage 0's
				 * first model chunk (bucket_size None on later stages,
				 * disable_bucketing for chunks after the first): the rest
				 * reduce their chunk in one bucket once its last backward
				 * is done */
				bool bucketed = p->bucket_all_stages || per_micro ||
						(s == 0 && tk->chunk == 0);
				bool flush = (p->overlap_dp || per_micro) && bucketed;
				/* ZeRO-3: the head's weights, then the stage's last layer
				 * (DeepSpeed prefetches it while the head's backward runs) */
				int32_t g_head = last_vs ? z3_gather_extra(&b, head_params,
									   "zero3 lm head allgather")
							 : -1;
				int32_t g_emb = -1;
				int32_t g_next = p->zero >= 3 && nl > 0 ? z3_gather(&b, first + nl - 1) :
									  -1;
				if (last_vs) {
					b.layer = -1;
					cmp_op(&b, WL_P_BWD, WL_ELEM, "loss bwd", 0,
					       2 * 4 * b.T * vocab / p->tp, 0, 0, 0, 0, WL_V_NONE);
					/* an LM head's bias gradient: the head's 16-bit
					 * output gradient summed over the tokens (found by
					 * review, 2026-12-05: not priced) */
					if (m->head_bias)
						cmp_op(&b, WL_P_BWD, WL_ELEM, "lm head bias grad", 0,
						       b.wb * b.T * vocab / p->tp + 4 * vocab / p->tp, 0, 0,
						       0, 0, WL_V_NONE);
					wait_dp(&b, g_head);
					/* a column-parallel linear like QKV (layer_bwd): with
					 * SP its saved input shard is gathered again beside
					 * the dgrad; the input gradient's collective runs
					 * behind the wgrad (always with SP, with tp_grad or
					 * overlap.tp without) */
					bool hide_head = p->tp > 1 &&
							 (spl || p->overlap_tp_grad || p->overlap_tp);
					if (spl)
						comm(&b, WL_P_BWD, WL_D_TP, WL_C_ALLGATHER, b.wb * b.T * h,
						     "lm head tp allgather", true);
					gemm(&b, WL_P_BWD, "lm head dgrad", b.T, h,
					     vocab / p->tp, 1, 1, WL_V_NONE);
					enum wl_coll hc = spl ? WL_C_REDUCESCATTER : WL_C_ALLREDUCE;
					const char *hn = spl ? "lm head tp reducescatter"
							     : "lm head tp allreduce";
					if (p->tp > 1 && hide_head)
						comm(&b, WL_P_BWD, WL_D_TP, hc, b.wb * b.T * h, hn, true);
					gemm(&b, WL_P_BWD, "lm head wgrad", h, vocab / p->tp,
					     b.T, 1, 1, WL_V_NONE);
					if (p->tp > 1 && !hide_head)
						comm(&b, WL_P_BWD, WL_D_TP, hc, b.wb * b.T * h, hn, false);
					/* the head's own weight, or the last stage's copy of a
					 * tied one (one stage: it shares the embedding's).
					 * Megatron reduces both copies over DP before summing
					 * them across the two stages, and both optimizers
					 * update theirs. */
					bool own = !m->tie_embeddings || P > 1;
					cmp_op(&b, WL_P_BWD, WL_ELEM, "final norm bwd", 0,
					       4 * b.wb * b.T * h / (spl ? p->tp : 1), 0, 0, 0, 0, WL_V_NONE);
					if (own || hbias > 0)
						grad_accum(&b, "lm head grad accumulate",
							   (own ? vocab * h / p->tp : 0) + hbias, 0,
							   own + (hbias > 0));
					grad_accum(&b, "final norm grad accumulate", fnorm_params, 0,
						   m->norm == MODEL_NORM_LAYER ? 2 : 1);
					if (reduce) {
						b.bucket_dense += fnorm_params + hbias +
								  (own ? vocab * h / p->tp : 0);
						if (flush)
							dp_flush(&b, false, false);
					}
				}
				for (int l = first + nl - 1; l >= first; l--) {
					int32_t g_cur = g_next;
					double d, e;
					g_next = p->zero >= 3 && l - 1 >= first ? z3_gather(&b, l - 1) : -1;
					/* the embedding and encoder weights with the first layer */
					if (first_vs && l == first)
						g_emb = z3_gather_extra(&b, emb_params + vit_params,
									"zero3 embedding allgather");
					wait_dp(&b, g_cur);
					/* (unfused accumulation adds the layer's
					 * gradients after its backward: whole;
					 * ZeRO 2/3's hooks fill DeepSpeed's bucket
					 * per parameter, overlapped or blocking) */
					b.dp_fine = reduce && flush &&
						    (p->grad_accum_fusion || p->zero >= 2);
					b.fine_dense = b.fine_exp = 0;
					layer_bwd(&b, l);
					b.dp_fine = false;
					model_layer_rank_params(m, p, l, &d, &e);
					grad_accum(&b, "grad accumulate", d, e, layer_tensors(m, l));
					if (reduce) {
						b.bucket_dense += d - b.fine_dense;
						b.bucket_exp += e - b.fine_exp;
						if (flush) {
							dp_flush(&b, false, false);
							dp_flush(&b, true, false);
						}
					}
				}
				if (first_vs) {
					if (nl == 0)
						g_emb = z3_gather_extra(&b, emb_params + vit_params,
									"zero3 embedding allgather");
					b.layer = -1;
					wait_dp(&b, g_emb);
					if (m->embed_norm)
						cmp_op(&b, WL_P_BWD, WL_ELEM, "embedding norm bwd", 0,
						       4 * b.wb * b.T * h / (spl ? p->tp : 1), 0, 0, 0, 0,
						       WL_V_NONE);
					if (spl)
						comm(&b, WL_P_BWD, WL_D_TP, WL_C_ALLGATHER, b.wb * b.T * h,
						     "embedding tp allgather", false);
					cmp_op(&b, WL_P_BWD, WL_ELEM, "embedding bwd", 0, 2 * b.wb * b.T * h, 0,
					       0, 0, 0, WL_V_NONE);
					grad_accum(&b, "embedding grad accumulate", emb_params, 0,
						   (m->max_pos > 0 ? 2 : 1) +
							   (m->embed_norm ? (m->norm == MODEL_NORM_LAYER ? 2 : 1)
									  : 0));
					vision(&b, true);
					/* encoder blocks: 12 tensors each (two LayerNorms,
					 * qkv, proj, fc1, fc2 with biases); 6 more for the
					 * patch embedding, positions and merger (assumption) */
					grad_accum(&b, "vit grad accumulate", vit_params, 0,
						   m->has_vision ? 12 * m->vit.depth + 6 : 0);
					if (reduce) {
						b.bucket_dense += emb_params + vit_params;
						if (flush)
							dp_flush(&b, false, false);
					}
				}
				if (reduce && p->overlap_dp && !bucketed) {
					b.layer = first; /* after the chunk's first layer */
					dp_flush(&b, false, true);
					dp_flush(&b, true, true);
				}
				if (per_micro) {
					/* the rest of the buckets; the next micro-batch waits
					 * for this backward's reductions (DeepSpeed's epilogue) */
					b.layer = -1;
					dp_flush(&b, false, true);
					dp_flush(&b, true, true);
					wait_dp(&b, b.last[WL_S_DP]);
					/* ZeRO-2/3 with offload keep the accumulated
					 * gradient shard in host memory: after the first
					 * micro-batch it comes to the GPU, takes this
					 * micro-batch's reduced shard and goes back
					 * (DeepSpeed's async_accumulate_grad_in_cpu_via_gpu,
					 * stage 3's partition_grads: copy up, add, copy
					 * down; assumption: at the accumulated gradients'
					 * bytes both ways, not overlapped with compute,
					 * since the epilogue synchronises) */
					double hs = b.host_shard * b.ga;
					b.host_shard = 0;
					if (hs > 0 && tk->micro > 0)
						cmp_op(&b, WL_P_OPT, WL_HOST_COPY, "offload grads h2d", 0,
						       hs, 0, 0, 0, 0, WL_V_NONE);
					run_deferred(&b); /* shard adds of reduced gradients */
					if (hs > 0)
						cmp_op(&b, WL_P_OPT, WL_HOST_COPY, "offload grads d2h", 0,
						       hs, 0, 0, 0, 0, WL_V_NONE);
				}
			}
			if (sp->pair && sp->parts == PART_BODY) {
				chain_save(&b, &ch[q]);
				if (q == 0)
					mid = b.r->nops;
				else if (merge_chains(&b, base, mid, &start, ch))
					b.nrc = TS_ENOMEM;
				continue;
			}
			/* output to the neighbouring stage */
			if ((!tk->bwd && !last_vs) || (tk->bwd && !first_vs)) {
				int32_t id;
				b.layer = -1;
				/* Megatron SC'21 §3.5: bsh per micro-batch, bsh/t when
				 * split over the tp ranks (sequence parallelism or the
				 * scatter-gather optimisation) */
				id = p2p(&b, WL_K_SEND, WL_D_PP, tk->bwd ? WL_P_BWD : WL_P_FWD,
					 tk->bwd ? "pp send grad" : "pp send act",
					 b.wb * b.T * h / (p->sp || sg ? p->tp : 1),
					 ((tk->bwd ? vs - 1 : vs + 1) % P + P) % P, b.last[WL_S_COMPUTE], b.pend);
				/* blocking (Megatron waits on its send and receive
				 * requests together): the next compute or collective
				 * waits for it, whatever receive comes in between */
				if (id >= 0 && !p->overlap_pp)
					b.pend_send = id;
			}
			if (sp->pair == 2) {
				/* after the pair: the merged stream, and what both
				 * chains left for the next compute ops: the first two
				 * as pend and pend_later, any more (rare) with pend2
				 * (found by review: the forward's trailing blocking
				 * collective, a last stage's loss all-reduce, was
				 * dropped) */
				int32_t c[4] = { ch[1].pend, ch[0].pend, ch[1].pend_later, ch[0].pend_later };
				int nc = 0;
				b.last[WL_S_COMPUTE] = merged_last;
				b.pend = b.pend_later = -1;
				b.pend2 = ch[0].pend2 > ch[1].pend2 ? ch[0].pend2 : ch[1].pend2;
				for (int k = 0; k < 4; k++) {
					if (c[k] < 0 || c[k] == b.pend || c[k] == b.pend_later)
						continue;
					if (nc == 0)
						b.pend = c[k];
					else if (nc == 1)
						b.pend_later = c[k];
					else if (c[k] > b.pend2)
						b.pend2 = c[k];
					nc++;
				}
				b.sync_next = ch[1].sync_next >= 0 ? ch[1].sync_next : ch[0].sync_next;
				/* (where the next receives are posted: after the
				 * pair, a forward and a backward; found by review) */
				fwd_end = bwd_end = before_cur = merged_last;
				prev_fwd = 0;
			} else if (sp->pair == 1) {
				b.last[WL_S_COMPUTE] = merged_last;
			}
		}
		/* gradients not yet reduced (all of them without overlap) */
		b.micro = -1;
		b.chunk = 0;
		b.layer = -1;
		dp_flush(&b, false, true);
		dp_flush(&b, true, true);
		run_deferred(&b); /* top-k scatter-adds */
		if (P > 1 && m->tie_embeddings && (s == 0 || s == P - 1))
			emb_exchange(&b, s == 0 ? P - 1 : 0, vocab * h / p->tp * b.gb,
				     &emb_recv[s == 0 ? 0 : 1]);
		/* optimizer step over this rank's shard after every reduction */
		for (int l0 = 0; l0 < v; l0++) {
			int first, nl;
			plan_chunk_layers(p, m, s, l0, &first, &nl);
			for (int l = first; l < first + nl; l++) {
				double d, e;
				model_layer_rank_params(m, p, l, &d, &e);
				opt_dense += d;
				opt_exp += e;
			}
		}
		if (s == 0)
			opt_dense += emb_params + vit_params;
		if (s == (V - 1) % P && (!m->tie_embeddings || P > 1))
			opt_dense += vocab * h / p->tp;
		if (s == (V - 1) % P)
			opt_dense += fnorm_params + hbias;
		grads_total = opt_dense + opt_exp;
		r->param_bytes = grads_total * b.gb;
		{
			int D = p->dp * p->cp;
			bool shard = p->zero >= 1 || p->distributed_optimizer;
			double wbp, gbp, obp, n_opt;
			memory_bytes_per_param(p, &wbp, &gbp, &obp);
			n_opt = shard ? opt_dense / D + opt_exp / plan_expert_dp(p) : grads_total;
			if (b.last[WL_S_DP] >= 0)
				b.pend = b.last[WL_S_DP];
			/* With sequence parallelism the parameters every TP rank
			 * holds whole but uses on its sequence shard (norms, q/k
			 * norms, MoE routers, row-parallel biases: all of
			 * model_layer_tp_whole_params) have partial gradients;
			 * q/k norms have, without it too (each rank normalises
			 * its own heads). Megatron's
			 * finalize_model_grads all-reduces them over TP, coalesced
			 * into one collective of their main gradients (grad_dtype:
			 * fp32 by default; found by an audit: fp32 whatever it
			 * was), after the DP sync */
			double qkw = (double)model_qk_norm_params(m);
			if (spl || (p->tp > 1 && qkw > 0)) {
				double rep = spl && s == (V - 1) % P ? (double)model_norm_params(m) : 0;
				rep += spl && s == 0 ? (double)model_embed_norm_params(m) : 0;
				for (int l0 = 0; l0 < v; l0++) {
					int first, nl;
					plan_chunk_layers(p, m, s, l0, &first, &nl);
					for (int l = first; l < first + nl; l++)
						rep += spl ? (double)model_layer_tp_whole_params(m, l) : qkw;
				}
				b.layer = -1;
				comm(&b, WL_P_OPT, WL_D_TP, WL_C_ALLREDUCE, b.ga * rep,
				     "tp replicated grads allreduce", false);
			}
			if (p->offload == PLAN_OFF_NONE) {
				/* Adam (assumption): reads weights, gradients and optimizer
				 * state, writes weights and state; ~10 FLOP per parameter. */
				cmp_op(&b, WL_P_OPT, WL_OPT, "optimizer step", 10 * n_opt,
				       n_opt * (wbp + gbp + obp + wbp + obp), 0, 0, 0, 0, WL_V_NONE);
			} else {
				/* ZeRO-Offload (Ren et al., ATC'21): the shard's reduced
				 * gradients go to host memory, DeepSpeed's CPU Adam updates
				 * the fp32 state there (reads gradients and state, writes
				 * state and 16-bit weights: memory bound, assumption), and
				 * the 16-bit weights come back, unless they live in host
				 * memory (ZeRO-Infinity's offload_param: each gather
				 * fetches them). Not overlapped with the next step
				 * (DeepSpeed's one-step delayed update is off by default).
				 * Megatron-core's --optimizer-cpu-offload (the distributed
				 * optimizer's shard, offload fraction 1) runs the same way
				 * (assumption: its d2h/h2d copies not overlapped, as
				 * without --overlap-cpu-optimizer-d2h-h2d). */
				/* (ZeRO-2/3's shard is there already: copied down
				 * with each micro-batch) */
				if (p->zero < 2)
					cmp_op(&b, WL_P_OPT, WL_HOST_COPY, "offload grads d2h", 0,
					       n_opt * gbp, 0, 0, 0, 0, WL_V_NONE);
				/* (its gradients fp32, as the host keeps them:
				 * DeepSpeed's CPU Adam steps float gradients,
				 * recalled, an assumption; the memory model's
				 * host gradients are fp32 too. Found by an audit:
				 * it read them at the 16-bit gradients' 2 bytes.
				 * The state read and written is the optimizer's
				 * without the main gradients obp counts for
				 * Megatron's 16-bit gradients: those are the fp32
				 * gradients read; found by review, they were
				 * counted three times) */
				cmp_op(&b, WL_P_OPT, WL_HOST_OPT, "cpu adam", 0,
				       n_opt * (4 + 2 * (obp - memory_step_bytes_per_param(p)) + wbp),
				       0, 0, 0, 0, WL_V_NONE);
				if (p->offload == PLAN_OFF_OPTIMIZER)
					cmp_op(&b, WL_P_OPT, WL_HOST_COPY, "offload params h2d", 0,
					       n_opt * wbp, 0, 0, 0, 0, WL_V_NONE);
			}
			if (step_gather && !pg) {
				comm(&b, WL_P_DP, WL_D_DP, WL_C_ALLGATHER, opt_dense * b.wb,
				     "dp param allgather", false);
				if (opt_exp > 0 && plan_expert_dp(p) > 1)
					comm(&b, WL_P_DP, WL_D_EDP, WL_C_ALLGATHER, opt_exp * b.wb,
					     "edp param allgather", false);
			}
		}
		if (b.nrc == TS_EINPUT) {
			rc = b.over_slices ? too_many_slices(err, o, 0)
					   : too_many_ops(err, mm, m, 0, NULL);
			goto fail;
		}
		if (b.nrc) {
			rc = ts_error_set(err, b.nrc, "out of memory building the workload");
			goto fail;
		}
		w->nops += r->nops;
		b.done_ops = w->nops;
	}
	/* connect every send to its receive */
	for (int s = 0; s < P; s++) {
		struct wl_role *r = &w->roles[s];
		for (int32_t i = 0; i < r->nops; i++) {
			struct wl_op *op = &r->ops[i];
			int vs, to, dir;
			if (op->kind != WL_K_SEND)
				continue;
			if (op->phase == WL_P_DP) { /* tied-embedding exchange */
				op->peer_op = emb_recv[op->peer_stage == 0 ? 0 : 1];
			} else {
				vs = op->chunk * P + s;
				dir = op->phase == WL_P_BWD;
				to = dir ? vs - 1 : vs + 1;
				op->peer_op = recv_of[((size_t)dir * V + to) * mm + op->micro];
			}
			if (op->peer_op < 0) {
				rc = ts_error_set(err, TS_EINPUT, "workload: no receive for a send (bug)");
				goto fail;
			}
			w->roles[op->peer_stage].ops[op->peer_op].size_bytes = op->size_bytes;
			w->roles[op->peer_stage].ops[op->peer_op].peer_op = i;
		}
	}
	free(tasks);
	free(steps);
	free(recv_of);
	free(b.dfr);
	return 0;
fail:
	free(tasks);
	free(steps);
	free(recv_of);
	free(b.dfr);
	release_roles(w);
	return rc;
}

void workload_release(struct workload *w)
{
	release_roles(w);
	memset(w, 0, sizeof(*w));
}

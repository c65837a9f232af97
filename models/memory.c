/* memory.c: per-layer costs and memory per GPU per pipeline stage.
 *
 * Activations follow Korthikanti et al. (MLSys'23) Table 2, generalised to
 * GQA, gated MLPs, experts and models without dropout; for a GPT-shaped
 * layer (gelu, 4h MLP, MHA, dropout) every row reduces exactly to the
 * paper's. Weights/gradients/optimizer follow ZeRO (Rajbhandari et al.
 * SC'20 §3.1) and Megatron's dist_optimizer.md table (formulas.md §3.1).
 * memory_eval() allocates nothing: a plan search calls it per candidate. */
#include "models/models.h"

#include <math.h>
#include <string.h>

/* Assumption (not from a datasheet): CUDA context, cuBLAS/NCCL workspaces
 * and the caching allocator's reserve, commonly 0.5-1.5 GiB per process. */
#define MEM_CONTEXT_BYTES (1.0 * 1024 * 1024 * 1024)
/* Assumption: allocator fragmentation, a fraction of everything else. */
#define MEM_FRAGMENTATION 0.05
/* DeepSpeed's default stage3_prefetch_bucket_size, 5e7 parameters (DeepSpeed
 * config docs; not in shared/reference: assumption). */
#define MEM_ZERO3_PREFETCH_PARAMS 5e7

static double dtype_bytes(enum plan_dtype d)
{
	return d == PLAN_DT_FP32 ? 4 : 2; /* fp8: bf16 weights kept (assumption, TE default) */
}

void memory_bytes_per_param(const struct plan *p, double *w, double *g, double *o)
{
	*w = dtype_bytes(p->precision);
	*g = dtype_bytes(p->grad_dtype);
	/* ZeRO §3.1: K = 12 (fp32 master copy + Adam m + v) for 16-bit params;
	 * Megatron's optimizer (without ZeRO, or its distributed optimizer)
	 * also makes fp32 main gradients when the gradients are 16-bit:
	 * dist_optimizer.md's fp16/fp16 row, 20 and 4 + 16/d, K = 16 (4 of
	 * them only during the step: memory_step_bytes_per_param);
	 * fp32/fp32 row: m + v only, K = 8. */
	if (p->precision == PLAN_DT_FP32)
		*o = 8;
	else
		*o = 12 + memory_step_bytes_per_param(p);
}

/* The fp32 main gradients of 16-bit gradients are made at the optimizer
 * step (Megatron's Float16OptimizerWithFloat16Params and DistributedOptimizer
 * _copy_model_grads_to_main_grads: main_param.grad = model_grad.float()) and
 * freed by the next iteration's optimizer.zero_grad(set_to_none=True)
 * before its forward, "a memory optimization" in Megatron's words: they
 * never coexist with the activations. (Found against the vTrain set: GPT
 * 3.6B on 64 A100s of at most 80 GB, tp 1, dp 64, micro-batch 8, fp16,
 * ran in 3.57 s; counted for the whole iteration they made it 80.7 GiB.) */
double memory_step_bytes_per_param(const struct plan *p)
{
	if (p->precision == PLAN_DT_FP32)
		return 0;
	return dtype_bytes(p->grad_dtype) < 4 && (p->zero == 0 || p->distributed_optimizer) ? 4
											      : 0;
}

/* ---- activations ----------------------------------------------------------- */

struct act_shape {
	double s, b;       /* tokens per sequence on this rank, sequences */
	double h, q, kvd;  /* hidden, heads*head_dim, kv*head_dim per rank-unsplit, elements */
	double vd;         /* MLA: V (and output-projection input) width heads*v_head_dim, elements */
	double lat;        /* MLA: latents a layer keeps per token (see act_terms), elements; 0 none */
	double a;          /* heads */
	double f;          /* MLP inner width (per expert for MoE), elements */
	double fs;         /* shared experts' MLP inner width (MoE), elements */
	bool gated, drop, adrop, qk_norm; /* (drop: hidden dropout; adrop: attention's) */
	double routed;     /* expert token copies per token: capacity x top_k (0 dense) */
	double experts;    /* router width (0 dense) */
};

/* Bytes of one layer split as Korthikanti does: R (replicated across TP
 * unless SP), S (split by TP), A (attention scores, split by TP), and U,
 * never split: the routed tokens a MoE layer's TP group all-gathers for its
 * TP-split experts (Megatron-core's all-to-all dispatcher), which every TP
 * rank keeps as the first expert GEMM's input (with whole experts, etp 1,
 * each rank keeps what it received: act_combine_as divides U by tp).
 * grouped_kv: K and V are kept at their groups' width (a fused core
 * attention, or a checkpointed one), else expanded to every query head. */
static void act_terms(const struct act_shape *x, int tp, double *R, double *S, double *A,
		      double *U, bool flash, bool grouped_kv)
{
	double sb = x->s * x->b, mlp_in = x->routed > 0 ? x->routed : 1;
	/* Korthikanti §4.1: attention 11sbh + 5as^2b, MLP 19sbh, norms 4sbh. */
	*R = 4 * sb * x->h            /* the two norms' inputs, 2sbh each */
	     + 2 * sb * x->h          /* QKV input (norm output) */
	     + 2 * sb * x->h          /* MLP input (norm output) */
	     + (x->drop ? 2 * sb * x->h : 0); /* dropout masks after attention and MLP, 1 B */
	if (x->routed > 0)            /* router probabilities (fp32) */
		*R += 4 * sb * x->experts;
	*U = x->routed > 0 ? 2 * sb * x->h * x->routed : 0; /* gathered expert inputs */
	if (x->lat > 0) {
		/* MLA (assumption: each saved once, 16 bits): the down
		 * projections' outputs and the normed latents the up projections
		 * read, on the rank's tokens like the norm outputs; Q and K of
		 * head_dim, V and the output projection's input of v_head_dim */
		*R += 2 * sb * x->lat;
		*S = 2 * sb * x->q + 2 * sb * x->kvd + 2 * sb * x->vd + 2 * sb * x->vd;
	} else {
		/* Q, K, V; the unfused core attention saves K and V expanded
		 * to every query head (Megatron-core's DotProductAttention
		 * repeat_interleave before its bmm; found by review), a fused
		 * kernel takes the groups as they are */
		*S = 2 * sb * x->q + 4 * sb * (grouped_kv ? x->kvd : x->q)
		     + 2 * sb * x->q; /* output-projection input */
	}
	if (x->qk_norm)
		*S += 2 * sb * x->q + 2 * sb * x->kvd; /* q_norm/k_norm inputs */
	/* MLP: gelu stores fc1 output and gelu output (2 x 2sbf); gated, with
	 * Megatron-core's fused SwiGLU (bias_swiglu_fusion, on by default),
	 * the fc1 output [gate, up] that the fused kernel saves for its
	 * backward and the activation output that fc2 saves as its input
	 * (3 x 2sbf; unfused PyTorch would also keep act(gate): 4 x 2sbf). */
	*S += (x->gated ? 6 : 4) * sb * x->f * mlp_in;
	/* shared experts: a dense MLP on every token (TP-split like one) */
	*S += (x->gated ? 6 : 4) * sb * x->fs;
	if (flash)
		*A = 4 * sb * x->a; /* fp32 log-sum-exp per row (Dao et al. 2022) */
	else
		*A = (x->adrop ? 5 : 2) * x->a * x->s * x->s * x->b; /* softmax (+ mask, dropout) */
	(void)tp;
}

/* Stored bytes of one layer of shape x under TP tp, sequence parallelism
 * sp, fused attention flash and recompute rc (the plan gives the dtype). */
static double act_combine_as(const struct act_shape *x, const struct plan *p, int tp, bool sp,
			     bool flash, enum plan_recompute rc)
{
	double R, S, A, U, scale = p->precision == PLAN_DT_FP32 ? 2 : 1;
	/* selective recompute checkpoints the core attention, whose inputs
	 * are K and V as projected, at their groups' width: the copies
	 * expanded to every query head exist only while one layer's core is
	 * rebuilt, as its scores (found by review, 2026-12-04: llama3-70b tp 8
	 * pp 8 SP stage 0 at 11.81 instead of 10.73 GiB of activations) */
	act_terms(x, tp, &R, &S, &A, &U, flash, flash || rc == PLAN_RC_SELECTIVE);
	if (scale != 1) {
		/* fp32 doubles the 16-bit tensors only: not the 1-byte dropout
		 * masks, nor what is fp32 already (router probabilities, the
		 * log-sum-exp) (found by review) */
		double sb = x->s * x->b;
		double rf = (x->drop ? 2 * sb * x->h : 0) + (x->routed > 0 ? 4 * sb * x->experts : 0);
		double af = flash ? A : x->adrop ? x->a * x->s * x->s * x->b : 0;
		R = scale * (R - rf) + rf;
		A = scale * (A - af) + af;
		S *= scale;
		U *= scale;
	}
	/* whole experts (etp 1): a rank keeps only the routed tokens it
	 * received, 1/tp of what a TP group gathers for split experts */
	U *= (double)plan_etp(p) / p->tp;
	if (rc == PLAN_RC_FULL) /* Korthikanti Table 2: 2sbh (the layer input) */
		return scale * 2 * x->s * x->b * x->h / (sp ? tp : 1);
	if (rc == PLAN_RC_SELECTIVE) /* Table 2: attention core recomputed */
		A = 0;
	if (sp) { /* Table 2: TP + SP divides everything by t */
		/* overlap.shared_experts: Megatron-core's shared experts gather
		 * their sequence-parallel input themselves and their first
		 * linear keeps it whole (no re-gather in backward; found by
		 * review), in the training dtype */
		double whole = p->overlap_shared && x->fs > 0 ?
				       scale * 2 * x->s * x->b * x->h * (1 - 1.0 / tp) :
				       0;
		return (R + S + A) / tp + U + whole;
	}
	return R + S / tp + A / tp + U;
}


static void layer_shape(const struct model *m, const struct plan *p, int l,
			struct act_shape *x)
{
	memset(x, 0, sizeof(*x));
	x->s = (double)p->seq_len / p->cp;
	x->b = p->micro_batch;
	x->h = m->hidden;
	x->q = (double)m->heads * m->head_dim;
	x->kvd = (double)m->kv_heads * m->head_dim;
	/* K/V replicated when tp > kv heads: each rank keeps one group. */
	if (m->kv_heads % p->tp)
		x->kvd = (double)m->head_dim * p->tp;
	if (m->kv_lora > 0) {
		/* q latent (the down projection's output, normed), kv latent
		 * (likewise) and the rotary key part */
		x->vd = (double)m->heads * model_v_dim(m);
		x->lat = 2.0 * m->q_lora + 2.0 * m->kv_lora + m->qk_rope;
	}
	x->a = m->heads;
	x->gated = m->mlp == MODEL_MLP_GATED;
	x->drop = m->dropout;
	x->adrop = m->attn_dropout;
	x->qk_norm = m->qk_norm;
	if (m->experts > 0 && m->moe_layer[l]) {
		x->f = m->moe_ffn;
		/* the mean load: every routed token when dropless, at most the
		 * balanced load under a capacity (what exceeds it is dropped;
		 * capacity x that when every expert's input is padded to it;
		 * the capacity in whole tokens, plan_moe_capacity).
		 * A layer's skew averages out over the layers and micro-batches
		 * a stage keeps. */
		double cf = plan_moe_capacity(p, m);
		x->routed = (p->pad_to_capacity ? cf : cf > 0 && cf < 1 ? cf : 1) * m->top_k;
		x->experts = m->experts;
		x->fs = m->shared_ffn;
	} else {
		x->f = m->ffn;
	}
}

static double layer_act_rc(const struct model *m, const struct plan *p, int l,
			   enum plan_recompute rc)
{
	struct act_shape x;
	layer_shape(m, p, l, &x);
	return act_combine_as(&x, p, p->tp, p->sp, p->flash_attention, rc);
}

double model_layer_act_bytes(const struct model *m, const struct plan *p, int l)
{
	return layer_act_rc(m, p, l, p->recompute);
}

/* One ViT block and the mergers, for `images` images of `patches` each. */
static void vision_shape(const struct model *m, double images, double patches,
			 struct act_shape *x)
{
	const struct model_vision *v = &m->vit;
	memset(x, 0, sizeof(*x));
	x->s = patches;
	x->b = images;
	x->h = x->q = x->kvd = v->hidden;
	x->a = v->heads;
	x->f = v->ffn;
}

/* One encoder block's full activations (what its recompute holds). */
static double vision_block_full_bytes(const struct model *m, const struct plan *p, double images,
				      double patches)
{
	struct act_shape x;
	if (!m->has_vision || images <= 0 || patches <= 0)
		return 0;
	vision_shape(m, images, patches, &x);
	return act_combine_as(&x, p, p->tp, false, true, PLAN_RC_NONE);
}

static double vision_act_bytes(const struct model *m, const struct plan *p, double images,
			       double patches)
{
	const struct model_vision *v = &m->vit;
	struct act_shape x;
	double in, per, merged;
	if (!m->has_vision || images <= 0 || patches <= 0)
		return 0;
	vision_shape(m, images, patches, &x);
	/* as models/workload.c runs the encoder: TP without sequence
	 * parallelism, fused (flash) attention */
	per = act_combine_as(&x, p, p->tp, false, true, p->recompute) * v->depth;
	/* Mergers, per merged token (2 bytes each): the norm's input and
	 * output (fc1's input), whole on every TP rank, and fc1's output and
	 * the activation's (fc2's input), split by tp (found by an audit:
	 * three tensors, all split) */
	in = (double)v->hidden * v->merge * v->merge;
	merged = patches / ((double)v->merge * v->merge);
	if (p->recompute != PLAN_RC_FULL)
		per += (1 + v->deepstack) * 2 * in * merged * images * (2 + 2.0 / p->tp);
	return per;
}

/* ---- per-layer costs --------------------------------------------------------- */

double model_kv_width_rank(const struct model *m, const struct plan *p)
{
	/* tp a multiple of the K/V heads: each rank keeps one group */
	if (m->kv_heads % p->tp)
		return m->head_dim;
	return (double)m->kv_heads * m->head_dim / p->tp;
}

double model_v_width_rank(const struct model *m, const struct plan *p)
{
	if (m->kv_lora > 0)
		return (double)m->heads * model_v_dim(m) / p->tp;
	return model_kv_width_rank(m, p);
}

/* Parameters of layer l held by one rank: the dense part / tp, but whole
 * what every TP rank keeps whole (model_layer_tp_whole_params) and with K/V
 * replicated when tp exceeds the kv heads; experts / (ep x etp)
 * (Megatron-core's expert_tensor_parallel_size, tp by default). */
void model_layer_rank_params(const struct model *m, const struct plan *p, int l, double *dense,
			     double *experts)
{
	int64_t tot, act, ex, whole = model_layer_tp_whole_params(m, l);
	double kvfix = 0;
	model_layer_params(m, l, &tot, &act, &ex);
	/* replicated: one kv group per rank instead of kv/tp */
	if (m->kv_lora <= 0 && m->kv_heads % p->tp)
		kvfix = 2.0 * m->hidden * m->head_dim * (1.0 - (double)m->kv_heads / p->tp);
	*dense = (double)(tot - ex - whole) / p->tp + (double)whole + kvfix;
	*experts = (double)ex / ((double)p->ep * plan_etp(p));
}

double model_vision_rank_params(const struct model *m, const struct plan *p)
{
	double whole = (double)model_vision_tp_whole_params(m);
	return ((double)model_vision_params(m) - whole) / p->tp + whole;
}

void model_layer_cost(const struct model *m, const struct plan *p, int l,
		      struct model_layer_cost *o)
{
	int64_t tot;
	double dense, ex, s_loc = (double)p->seq_len / p->cp, b = p->micro_batch;
	double tokens = s_loc * b, attn, w = model_attn_width(m);
	double wb = dtype_bytes(p->precision);
	/* activations and what moves them (found by review: 2 bytes always) */
	double ab = plan_act_bytes(p);
	memset(o, 0, sizeof(*o));
	model_layer_params(m, l, &tot, NULL, NULL);
	model_layer_rank_params(m, p, l, &dense, &ex);
	o->params = tot;
	o->params_rank = dense + ex;
	/* Megatron SC'21 appendix: 2 FLOPs/MAC; local queries attend to all s keys. */
	attn = 2.0 * s_loc * model_attn_keys(m, l, p->seq_len) * w * b / p->tp;
	o->fwd_flops = 2 * model_layer_matmul_active(m, l) * tokens / p->tp + attn;
	/* MLA's duplicated down projections run on every TP rank: on its
	 * sequence-parallel shard (1/tp of the tokens, as counted) or, without
	 * sequence parallelism, on all of them */
	if (m->kv_lora > 0 && !p->sp)
		o->fwd_flops += 2 * model_mla_down_params(m) * tokens * (1.0 - 1.0 / p->tp);
	o->bwd_flops = 2 * o->fwd_flops;
	if (p->recompute == PLAN_RC_FULL)
		o->recompute_flops = o->fwd_flops;
	else if (p->recompute == PLAN_RC_SELECTIVE)
		o->recompute_flops = attn;
	o->weight_bytes = o->params_rank * wb;
	o->act_bytes = model_layer_act_bytes(m, p, l);
	o->out_bytes = ab * tokens * m->hidden / (p->sp ? p->tp : 1);
	/* Megatron SC'21 §3.5: two all-reduces of bsh per layer forward (TP). */
	o->tp_bytes = p->tp > 1 ? 2 * ab * tokens * m->hidden : 0;
	/* Megatron-core's all-to-all dispatcher: each TP rank dispatches its
	 * 1/tp of the tokens (models/workload.c, moe_fwd), at the balanced
	 * load; sim/ runs each exchange as an alltoallv at every member's drawn
	 * load */
	if (m->experts > 0 && m->moe_layer[l] && p->ep > 1)
		o->ep_bytes = m->top_k * tokens / p->tp * m->hidden * ab * (p->ep - 1) / (double)p->ep;
	if (p->cp > 1) /* ring attention: K and V of the other cp-1 chunks */
		o->cp_bytes = ab * tokens * (model_kv_width_rank(m, p) + model_v_width_rank(m, p)) *
			      (p->cp - 1);
}

double model_flops_iteration(const struct model *m, const struct plan *p)
{
	double T = (double)p->global_batch * p->seq_len, f = 0, w = model_attn_width(m);
	double passes = p->recompute == PLAN_RC_FULL ? 4 : 3, imgs, patches;
	for (int l = 0; l < m->layers; l++) {
		/* per token, no causal halving (eq. 3) */
		double attn = 2.0 * model_attn_keys(m, l, p->seq_len) * w;
		f += (2 * model_layer_matmul_active(m, l) + attn) * T * passes;
		if (p->recompute == PLAN_RC_SELECTIVE)
			f += attn * T;
	}
	f += 3 * 2.0 * plan_vocab(p, m) * m->hidden * T; /* logits: fwd + 2x bwd, never recomputed */
	if (m->has_vision) {
		/* an image's expected FLOPs: the attention's P^2 term at E[P^2]
		 * (found by review: at the mean size, 6 % short for images of
		 * 64-1,024 tokens); images cut at seq_len are counted whole
		 * (predict counts those it draws) */
		double mg2 = (double)m->vit.merge * m->vit.merge;
		imgs = (double)p->global_batch * plan_dist_mean(&p->images_per_sample);
		patches = plan_dist_mean(&p->image_tokens) * mg2;
		f += passes * imgs *
		     (model_vision_flops_fwd(m, patches) +
		      model_vision_attn_coef(m) * plan_dist_var(&p->image_tokens) * mg2 * mg2);
	}
	return f;
}

/* ---- memory per stage ------------------------------------------------------- */

/* Micro-batches (in units of model chunks) whose activations stage s holds
 * at the peak. 1F1B: p - s (Narayanan SC'21 §2.2); GPipe: all m;
 * interleaved: Megatron's warm-up 2(p-s-1) + (v-1)p, + 1 in flight, which
 * for stage 0 is Korthikanti's L x (1 + (p-1)/(pv)) (formulas.md §3.2);
 * with m = p every forward is warm-up (schedules.py), all m v in flight. */
static double chunks_in_flight(const struct plan *p, int s, int m_micro)
{
	int v = p->schedule == PLAN_SCHED_INTERLEAVED ? p->virtual_stages : 1;
	int n = plan_warmup(p, s, m_micro) + 1; /* (GPipe: all m) */
	return n < m_micro * v ? n : m_micro * v;
}

/* overlap.ep: the steady state runs each forward merged with a backward
 * (models/workload.c), one more forward ahead than the schedule's warm-up
 * (none when every forward is warm-up: interleaved with m = p). */
static bool ep_paired(const struct plan *p, int m_micro)
{
	return p->overlap_ep && (p->schedule == PLAN_SCHED_1F1B ?
					 m_micro > 1 :
					 p->schedule == PLAN_SCHED_INTERLEAVED && m_micro != p->pp);
}

/* Stage s's interleaved order walked (plan_vtask, as models/workload.c
 * runs it): forward i stashes its chunk's activations, chunk_act bytes per
 * micro-batch (one each when NULL); from i = warm-up on, backward i -
 * warm-up frees its chunk's after it. Gives the peak of the total (for
 * equal chunks, chunks_in_flight x their size; the overlap.ep pair's extra
 * layer is added by the caller) and the most micro-batches of the last
 * chunk held at once: one where p divides m (all m when m = p), which
 * logits_in_flight takes without walking (checked for p 2-16, v 2-4, m = p
 * to 8p: walking made bench_models' interleaved gpt3-175b plan 6.2 against
 * 0.9 us an evaluation); overlap.ep's extra warm-up forward and merged
 * pairs (the backward's LM head first) leave that count as it is, for any
 * m. */
struct vwalk {
	double peak; /* bytes (chunk_act) */
	int last;    /* the last chunk's micro-batches, at most */
};

static struct vwalk interleaved_walk(const struct plan *p, int s, int m_micro,
				     const double *chunk_act)
{
	int v = p->virtual_stages, total = m_micro * v, warm = plan_warmup(p, s, m_micro);
	int mi, c, nl = 0;
	double live = 0;
	struct vwalk w = { 0, 0 };
	for (int i = 0; i < total; i++) {
		plan_vtask(p, m_micro, i, &mi, &c);
		live += chunk_act ? chunk_act[c] : 1;
		nl += c == v - 1;
		w.peak = live > w.peak ? live : w.peak;
		w.last = nl > w.last ? nl : w.last;
		if (i >= warm) {
			plan_vtask(p, m_micro, i - warm, &mi, &c);
			live -= chunk_act ? chunk_act[v - 1 - c] : 1;
			nl -= c == 0;
		}
	}
	return w;
}

/* Of those, the micro-batches of stage 0's first model chunk, where the
 * vision encoder and the embedding live: all unless interleaved, where at
 * the peak of the total Megatron's order holds min(m, 2p) of chunk 0 (the
 * forwards run p at a time per chunk, so chunk 0 is ahead; walked through
 * the order of plan_vtask for p 2-16, v 2-4, m = p to 8p, whether p divides
 * m or not). */
static double chunk0_in_flight(const struct plan *p, int m_micro)
{
	/* overlap.ep without a pipeline: the next micro-batch's forward
	 * allocates its encoder and embedding activations first and the
	 * backward frees its own last: one more. Interleaved, chunk 0's count
	 * at the peak stays min(m, 2p) (walked through the schedule with the
	 * extra warm-up forward and each pair holding both; found by review:
	 * one more was counted there too) */
	if (p->schedule != PLAN_SCHED_INTERLEAVED) {
		double n = chunks_in_flight(p, 0, m_micro) + (ep_paired(p, m_micro) ? 1 : 0);
		return n < m_micro ? n : m_micro;
	}
	return m_micro < 2 * p->pp ? m_micro : 2 * p->pp;
}

/* Micro-batches whose LM-head logits the last stage holds at once: each
 * loss forward's until its backward. GPipe runs every forward first (m);
 * 1F1B's last stage goes forward then straight back (one); interleaved:
 * the walk's (all m when m = p, every forward being warm-up; else one when
 * p divides m, two at some m where the last micro-batch group is short).
 * Found by review: one was counted under every schedule. */
static double logits_in_flight(const struct plan *p, int m_micro)
{
	if (p->schedule == PLAN_SCHED_GPIPE)
		return m_micro;
	if (p->schedule == PLAN_SCHED_INTERLEAVED && m_micro % p->pp == 0)
		return m_micro == p->pp ? m_micro : 1; /* (the walk's, without the walk) */
	if (p->schedule == PLAN_SCHED_INTERLEAVED)
		return interleaved_walk(p, p->pp - 1, m_micro, NULL).last;
	return 1;
}

/* The heaviest of env's drawn image loads over n consecutive micro-batches
 * of one replica, as a multiple of n x the mean (1 without draws). */
static double vision_peak(const struct memory_env *env, int n)
{
	double best = 0;
	int mm = env->vision_micro;
	if (!env->vision_tokens || env->vision_rows < 1 || mm < 1 || n < 1)
		return 1;
	if (n > mm)
		n = mm;
	for (int r = 0; r < env->vision_rows; r++) {
		const double *t = env->vision_tokens + (size_t)r * mm;
		double w = 0;
		for (int j = 0; j < mm; j++) {
			w += t[j] - (j >= n ? t[j - n] : 0);
			if (j >= n - 1 && w > best)
				best = w;
		}
	}
	return best / n;
}

void memory_eval(const struct model *m, const struct plan *p, const struct memory_env *env,
		 struct memory_report *r)
{
	double wb, gb, ob, obs, d_dense = (double)p->dp * p->cp, d_exp = plan_expert_dp(p);
	double sh_w_d, sh_w_e, sh_g_d, sh_g_e, sh_o_d, sh_o_e;
	int m_micro = plan_microbatches(p), v = p->schedule == PLAN_SCHED_INTERLEAVED ?
							      p->virtual_stages : 1;
	double s_loc = (double)p->seq_len / p->cp, b = p->micro_batch, h = m->hidden;
	double vocab = plan_vocab(p, m); /* as trained: padded */
	/* learned positions: whole on every tp rank (Megatron's serial
	 * position embedding) */
	double emb_rank = vocab * h / p->tp + (double)m->max_pos * h +
			  (double)model_embed_norm_params(m);
	double head_rank = vocab * h / p->tp;
	/* the final norm: whole on every TP rank; an LM head's bias, split
	 * as its weight (a tied head's too) */
	double fin_norm = (double)model_norm_params(m) + (m->head_bias ? vocab / p->tp : 0);
	double vis = model_vision_rank_params(m, p);
	double act_dense = -1, act_moe = -1, pd_dense = 0, pe_dense = 0, pd_moe = 0, pe_moe = 0;
	int first_dense = -1, first_moe = -1;

	memory_bytes_per_param(p, &wb, &gb, &ob);
	obs = memory_step_bytes_per_param(p);
	sh_w_d = p->zero >= 3 ? d_dense : 1;
	sh_w_e = p->zero >= 3 ? d_exp : 1;
	sh_g_d = p->zero >= 2 ? d_dense : 1;
	sh_g_e = p->zero >= 2 ? d_exp : 1;
	sh_o_d = p->zero >= 1 || p->distributed_optimizer ? d_dense : 1;
	sh_o_e = p->zero >= 1 || p->distributed_optimizer ? d_exp : 1;

	/* Layers come in at most two shapes (dense, MoE): cost each once. */
	for (int l = 0; l < m->layers && (first_dense < 0 || first_moe < 0); l++) {
		bool moe = m->experts > 0 && m->moe_layer[l];
		if (moe && first_moe < 0) {
			first_moe = l;
			act_moe = model_layer_act_bytes(m, p, l);
			model_layer_rank_params(m, p, l, &pd_moe, &pe_moe);
		} else if (!moe && first_dense < 0) {
			first_dense = l;
			act_dense = model_layer_act_bytes(m, p, l);
			model_layer_rank_params(m, p, l, &pd_dense, &pe_dense);
		}
	}

	memset(r, 0, sizeof(*r));
	r->nstages = p->pp;
	r->fits = true;
	for (int s = 0; s < p->pp; s++) {
		struct memory_stage *st = &r->stage[s];
		int first, n, nmoe = 0;
		double Pd, Pe, act_layers, inflight, big_unit, host = 0, chunk_act[PLAN_MAX_CHUNKS];
		/* the stage's layers: its model chunks' runs (interleaved:
		 * strided over the model, as Megatron assigns them; found by
		 * review: one block, which put other dense/MoE counts on a stage) */
		n = 0;
		for (int c = 0; c < v; c++) {
			int cn, cm = 0;
			plan_chunk_layers(p, m, s, c, &first, &cn);
			for (int l = first; l < first + cn; l++)
				cm += m->experts > 0 && m->moe_layer[l];
			if (c < PLAN_MAX_CHUNKS) /* (plan_check_model's bound) */
				chunk_act[c] = (cn - cm) * (act_dense > 0 ? act_dense : 0) +
					       cm * (act_moe > 0 ? act_moe : 0);
			nmoe += cm;
			n += cn;
		}
		Pd = (n - nmoe) * pd_dense + nmoe * pd_moe;
		Pe = (n - nmoe) * pe_dense + nmoe * pe_moe;
		big_unit = (double)m->heads * m->head_dim * h / p->tp;
		if (m->kv_lora > 0) /* MLA: the largest of o_proj and the up projections */
			big_unit = fmax((double)m->heads * model_v_dim(m) * h,
					fmax(model_mla_q_in(m) * m->heads * m->head_dim,
					     m->kv_lora * model_mla_kv_up(m))) /
				   p->tp;
		if (n - nmoe > 0) {
			double f = (double)m->ffn * h / p->tp;
			big_unit = f > big_unit ? f : big_unit;
		}
		if (nmoe > 0) { /* HF fuses all experts' gate_up into one tensor (assumption) */
			double f = 2.0 * m->moe_ffn * h * m->experts / ((double)p->ep * plan_etp(p));
			big_unit = f > big_unit ? f : big_unit;
		}
		if (s == 0) {
			Pd += emb_rank + vis;
			big_unit = emb_rank > big_unit ? emb_rank : big_unit;
		}
		if (s == p->pp - 1) {
			Pd += fin_norm + (m->tie_embeddings ? (p->pp > 1 ? head_rank : 0) : head_rank);
			big_unit = head_rank > big_unit ? head_rank : big_unit;
		}
		st->layers = n;
		st->weights_bytes = wb * (Pd / sh_w_d + Pe / sh_w_e);
		st->grads_bytes = gb * (Pd / sh_g_d + Pe / sh_g_e);
		st->optimizer_bytes = (ob - obs) * (Pd / sh_o_d + Pe / sh_o_e);
		st->step_bytes = obs * (Pd / sh_o_d + Pe / sh_o_e);
		/* top-k compression's error feedback keeps the unsent residual of
		 * every gradient element, fp32 (Lin et al. 2018, DGC; top-k is
		 * refused with ZeRO >= 2, so it is not sharded); counted with the
		 * gradients that are compressed: those reduced over more than one
		 * rank, as topk_out below (found by an audit: a residual for
		 * experts of expert-DP 1, or with no DP at all, which the
		 * workload never selects from) */
		if (p->compression == PLAN_CMP_TOPK && p->error_feedback)
			st->grads_bytes += 4 * ((d_dense > 1 ? Pd : 0) + (d_exp > 1 ? Pe : 0));
		/* ZeRO-Offload (Ren et al. ATC'21): optimizer state leaves the GPU,
		 * and the host keeps the fp32 gradients of the optimizer's shard
		 * that the CPU optimizer steps (DeepSpeed's fp32 partition
		 * gradients, Megatron's main gradients: step_bytes where the GPU
		 * made them); with ZeRO >= 2 those are the reduced gradient
		 * partitions, which leave the GPU. (Found by an audit: at ZeRO 1
		 * without the distributed optimizer, or with fp32 gradients,
		 * the host had no gradients for its CPU Adam to read.)
		 * ZeRO-Infinity parameter offload moves the fp16 shards too. */
		if (p->offload != PLAN_OFF_NONE) {
			host += st->optimizer_bytes + 4 * (Pd / sh_o_d + Pe / sh_o_e);
			st->optimizer_bytes = st->step_bytes = 0;
			if (p->zero >= 2)
				st->grads_bytes = 0;
		}
		if (p->offload == PLAN_OFF_PARAMS) {
			host += st->weights_bytes;
			st->weights_bytes = 0;
		}
		/* Activations. */
		inflight = chunks_in_flight(p, s, m_micro);
		act_layers = (n - nmoe) * (act_dense > 0 ? act_dense : 0) +
			     nmoe * (act_moe > 0 ? act_moe : 0);
		st->inflight = inflight;
		st->activations_bytes = act_layers * inflight / v;
		/* chunks of unequal activations (layers_per_virtual_stage, or
		 * dense and MoE layers in different chunks): the peak of the
		 * schedule's own order (found by review: the mean chunk was
		 * counted, 31-50 % off where chunk 0 and the last differ; and
		 * 19 % high for a default layout whose chunks mix dense and
		 * MoE layers differently) */
		bool uneven = false;
		for (int c = 1; c < v && c < PLAN_MAX_CHUNKS; c++)
			uneven = uneven || chunk_act[c] != chunk_act[0];
		if ((p->nlpvs || uneven) && p->schedule == PLAN_SCHED_INTERLEAVED && v <= PLAN_MAX_CHUNKS)
			st->activations_bytes = interleaved_walk(p, s, m_micro, chunk_act).peak;
		/* overlap.ep: the warm-up's extra forward takes the place of the
		 * one the count holds in flight, and the merged pair's forward
		 * stashes a layer before its backward has freed one: one layer
		 * more at the peak */
		if (ep_paired(p, m_micro) && n > 0)
			st->activations_bytes += fmax(nmoe > 0 && act_moe > 0 ? act_moe : 0,
						      n - nmoe > 0 && act_dense > 0 ? act_dense : 0);
		double imgs = b * plan_dist_mean(&p->images_per_sample);
		double patches = plan_dist_mean(&p->image_tokens) *
				 (m->has_vision ? m->vit.merge * m->vit.merge : 0);
		if (p->recompute == PLAN_RC_SELECTIVE && n > 0)
			/* backward rebuilds one layer's attention core at a time:
			 * its scores and softmax (found by review: left out; large
			 * without flash attention) */
			st->activations_bytes +=
				layer_act_rc(m, p, nmoe ? first_moe : first_dense, PLAN_RC_NONE) -
				layer_act_rc(m, p, nmoe ? first_moe : first_dense, PLAN_RC_SELECTIVE);
		if (p->recompute == PLAN_RC_FULL && n > 0) {
			/* Backward recomputes one layer at a time: its full
			 * activations (on stage 0 the larger of a decoder layer's
			 * and an encoder block's, recomputed at different times) */
			double one = layer_act_rc(m, p, nmoe ? first_moe : first_dense,
						  PLAN_RC_NONE);
			if (s == 0) /* (the heaviest drawn micro-batch's) */
				one = fmax(one, vision_block_full_bytes(m, p, imgs, patches) *
							vision_peak(env, 1));
			st->activations_bytes += one;
		}
		if (s == 0) {
			/* Korthikanti §4.3: embedding dropout mask sbh per micro-batch. */
			double c0 = chunk0_in_flight(p, m_micro);
			/* (the whole sequence on each TP rank without sequence
			 * parallelism; found by review) */
			if (m->dropout)
				st->activations_bytes += s_loc * b * h / (p->sp ? p->tp : 1) * c0;
			/* a norm after the word embeddings (BLOOM's): its 16-bit
			 * input, 2sbh (fp32: twice), outside the recomputed layers
			 * (found by review, 2026-12-05: the op ran, its input was
			 * not held) */
			if (m->embed_norm)
				st->activations_bytes += 2 * s_loc * b * h *
							 (p->precision == PLAN_DT_FP32 ? 2 : 1) /
							 (p->sp ? p->tp : 1) * c0;
			/* the encoder's activations grow with the images (linear in
			 * patches with fused attention): the c0 micro-batches in
			 * flight at the mean, or the heaviest c0 in a row drawn */
			st->activations_bytes += vision_act_bytes(m, p, imgs, patches) * c0 *
						 vision_peak(env, (int)c0);
		}
		/* Korthikanti §4.3: 4sbh/t (1 + V/h): the final norm's and the
		 * output layer's 16-bit inputs, 2sbh each (split by tp with
		 * sequence parallelism only; twice that in fp32, found by a
		 * memory audit), and the fp32 logits (vocabulary-parallel), per
		 * micro-batch the last stage holds */
		if (s == p->pp - 1)
			st->activations_bytes +=
				(4 * s_loc * b * h * (p->precision == PLAN_DT_FP32 ? 2 : 1) /
					 (p->sp ? p->tp : 1) +
				 4 * s_loc * b * vocab / p->tp) *
				logits_in_flight(p, m_micro);
		/* Buffers: DeepSpeed-style reduce buckets (two in flight, assumption),
		 * each at most the stage's gradients at the bucket's dtype (found by
		 * review: a bucket larger than the gradients was counted whole);
		 * Megatron reduces in place in its grad buffer. ZeRO-3 gathers the
		 * largest tensor plus the prefetch bucket, when its weights are
		 * sharded (found by review: counted at dp x cp 1, where nothing is
		 * gathered). */
		st->buffers_bytes = 0;
		if (p->zero >= 1 && d_dense > 1)
			st->buffers_bytes += 2 * fmin(p->bucket_bytes, (Pd + Pe) * plan_grad_wire_bytes(p));
		if (p->zero == 3 && (d_dense > 1 || d_exp > 1)) /* sharded: gathers run */
			st->buffers_bytes += wb * (big_unit + MEM_ZERO3_PREFETCH_PARAMS);
		/* top-k's sparse all-gathers land every rank's k values and
		 * int32 indices, D x k x (value + 4) bytes (experts' D their
		 * expert-DP degree), and each stays until its scatter-add,
		 * which the workload runs once every reduction of the step is
		 * in (run_deferred): the stage's gradients together, bucketed
		 * or not (found by review: not counted, 4 GB of gpt2 at ratio 1
		 * and dp 4). They arrive as the backward ends (after it
		 * without overlap.dp, beside the last micro-batch's with it)
		 * and go before the step: in place of the activations
		 * (assumption), not on top of them. */
		double topk_out = 0;
		if (p->compression == PLAN_CMP_TOPK)
			topk_out = ((d_dense > 1 ? d_dense * Pd : 0) + (d_exp > 1 ? d_exp * Pe : 0)) *
				   p->compression_ratio * (plan_grad_wire_bytes(p) + 4);
		/* the allgather token dispatcher (models/workload.c): the
		 * expert-TP x EP group's gathered hidden states and the buffer
		 * its results are scattered into before the reduce-scatter,
		 * both alive around the experts (assumption: one of each, the
		 * layers reuse them) */
		if (nmoe > 0 && p->dispatcher == PLAN_DISP_ALLGATHER && plan_tpep(p) > 1)
			st->buffers_bytes += 2 * plan_tpep(p) * s_loc * b * h / p->tp *
					     (p->precision == PLAN_DT_FP32 ? 4 : 2);
		/* the step's main gradients take the place of the freed
		 * activations and buckets, and so do top-k's outputs */
		double live = fmax(fmax(st->activations_bytes + st->buffers_bytes, topk_out),
				   st->step_bytes);
		st->buffers_bytes += topk_out;
		st->overhead_bytes = MEM_CONTEXT_BYTES +
				     MEM_FRAGMENTATION * (st->weights_bytes + st->grads_bytes +
							  st->optimizer_bytes + live);
		st->total_bytes = st->weights_bytes + st->grads_bytes + st->optimizer_bytes + live +
				  st->overhead_bytes;
		st->host_bytes = host;
		if (st->total_bytes > r->peak_bytes) {
			r->peak_bytes = st->total_bytes;
			r->peak_stage = s;
		}
		if (host > r->peak_host_bytes)
			r->peak_host_bytes = host;
	}
	r->fits = r->peak_bytes <= env->gpu_mem_bytes &&
		  (env->host_mem_bytes <= 0 || r->peak_host_bytes <= env->host_mem_bytes);
}

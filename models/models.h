/* models.h: model architectures, parallel plans and the memory model.
 * The face of models/; knows nothing of topo/ or sim/ (DESIGN.md): the
 * caller passes plain numbers (GPU count, GPU memory) in.
 *
 * Data flow, in the order of this header:
 *   model: a built-in name or a Hugging Face config.json -> struct model
 *          -> parameters per part and per layer, FLOPs per token;
 *   plan:  a plan JSON file, command-line values, and optionally a DeepSpeed
 *          ds_config.json -> struct plan, then plan_resolve() checks it
 *          against the model and the GPU count (one reason per refusal);
 *   cost:  per-layer costs for one micro-batch on one rank (FLOPs, bytes,
 *          parameters, activations, communication volumes): what the
 *          workload builder of the next issue will consume;
 *   memory: per pipeline stage, bytes per GPU of weights, gradients,
 *          optimizer state, activations, buffers and overhead.
 *
 * Conventions: parameter counts are exact integers (int64_t); FLOPs count
 * 2 per multiply-accumulate; bytes are bytes. Attention scores are counted
 * without causal halving (Megatron SC'21 appendix eq. 3 does the same).
 * memory_eval() allocates nothing and is meant to be called millions of
 * times by a plan search. */
#ifndef TS_MODELS_H
#define TS_MODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/json.h"

#define MODEL_MAX_LAYERS 1024
#define PLAN_MAX_STAGES 256
#define PLAN_MAX_VSTAGES 1024 /* pp x virtual_stages in a layers_per_virtual_stage list */
#define PLAN_MAX_CHUNKS 64    /* virtual_stages */
/* Micro-batches per replica the iteration simulator (sim_predict) builds:
 * each is a copy of the stage's ops, about 34 KB for an 8B model. */
#define PLAN_MAX_MICRO 16384

/* ---- model architecture ------------------------------------------------ */

enum model_mlp { MODEL_MLP_GELU, MODEL_MLP_GATED };  /* 2-matrix / 3-matrix (SwiGLU) */
enum model_norm { MODEL_NORM_RMS, MODEL_NORM_LAYER };/* weight / weight + bias */

/* Parameters a model may have (an upper estimate; 2,000 x the largest
 * published), count. */
#define MODEL_MAX_PARAMS 1e15

struct model_vision {
	int depth;            /* ViT blocks, count */
	int hidden;           /* ViT width, elements */
	int heads;            /* ViT attention heads, count */
	int ffn;              /* ViT MLP inner width (gelu, 2 matrices), elements */
	int patch;            /* patch side, pixels */
	int temporal_patch;   /* frames per patch, count */
	int in_channels;      /* image channels, count */
	int merge;            /* spatial merge side (2 = 2x2 patches per token), patches */
	int out_hidden;       /* merger output width (the LLM's hidden), elements */
	int pos_embeddings;   /* learned position-embedding rows, count */
	int deepstack;        /* DeepStack mergers (one per listed ViT layer), count */
	double min_pixels;    /* the image processor resizes an image to at least ... */
	double max_pixels;    /* ... and at most this many pixels (0: no bound), pixels */
};

struct model {
	char name[64];             /* built-in name or file name */
	char source[200];          /* where the numbers come from */
	char note[200];            /* what a config left to a guess (an unknown model_type), "" none */
	int hidden;                /* model width h, elements */
	int layers;                /* decoder layers L, count */
	int heads;                 /* attention heads a, count */
	int kv_heads;              /* key/value heads (GQA groups), count */
	int head_dim;              /* per query/key head, elements */
	/* Multi-head latent attention (DeepSeek-V2/V3 MLA), all 0 otherwise:
	 * queries from h through a q_lora latent (0: projected from h
	 * directly), keys and values from one kv_lora latent plus a rotary key
	 * part shared by the heads; each head's query/key is head_dim =
	 * qk_nope_head_dim + qk_rope wide, its value v_head_dim. */
	int q_lora;                /* query latent rank (q_lora_rank), elements */
	int kv_lora;               /* key/value latent rank (kv_lora_rank), 0 = not MLA, elements */
	int qk_rope;               /* rotary part of a query/key head (qk_rope_head_dim), elements */
	int v_head_dim;            /* value head width where it differs from head_dim, 0 = head_dim */
	int ffn;                   /* dense MLP inner width, elements */
	int vocab;                 /* vocabulary V, tokens */
	int max_pos;               /* learned position rows (0 with rotary), count */
	bool rotary;               /* rotary position embeddings on q and k (RoPE, partial too),
	                            * applied by a kernel of their own, flag */
	int experts;               /* routed experts per MoE layer (0 = dense), count */
	int top_k;                 /* experts per token, count */
	int moe_ffn;               /* expert MLP inner width, elements */
	int shared_ffn;            /* shared experts' MLP inner width in every MoE layer (Qwen2-MoE
	                            * shared_expert_intermediate_size, DeepSeek n_shared_experts x
	                            * moe_intermediate_size), 0 none, elements */
	bool shared_gate;          /* the shared expert's output is scaled by a sigmoid gate
	                            * (an h -> 1 linear, Qwen2-MoE), flag */
	enum model_mlp mlp;        /* dense and expert MLP shape */
	enum model_norm norm;      /* norm kind */
	int layer_norms;           /* norms per decoder layer (2; 1 in Falcon-7B's parallel block), count */
	bool bias;                 /* every linear layer has a bias (GPT-2/3) */
	bool mlp_bias;             /* the MLP's linears have biases (Llama's mlp_bias, GPT-J), flag */
	bool attn_bias;            /* q/k/v/o have biases (attention_bias) */
	bool qkv_bias;             /* q/k/v have biases, o none (Qwen2), flag */
	bool qk_norm;              /* per-head q_norm/k_norm of head_dim (Qwen3) */
	bool qk_norm_full;         /* with qk_norm: over all heads, heads x head_dim and kv_heads x
	                            * head_dim wide (OLMo 2, OLMoE), flag */
	bool tie_embeddings;       /* LM head shares the embedding matrix */
	bool head_bias;            /* the LM head has a bias of vocab (GPT-J, Phi), flag */
	bool embed_norm;           /* a norm after the word embeddings (BLOOM), flag */
	bool dropout;              /* hidden dropout (after attention and MLP, and the
	                            * embedding's): masks stored (Korthikanti counts them) */
	bool attn_dropout;         /* attention dropout on the scores, flag */
	bool has_vision;           /* a vision encoder is present */
	struct model_vision vit;   /* valid when has_vision */
	int window;                /* sliding-window attention span, tokens (0 none) */
	uint8_t moe_layer[MODEL_MAX_LAYERS]; /* 1 when layer l routes to experts, flag */
	uint8_t swa_layer[MODEL_MAX_LAYERS]; /* 1 when layer l attends within window, flag */
};

/* Whether model_load reads name as a config file rather than a built-in
 * (not a built-in's name, and a '/' or ".json" in it). */
bool model_names_file(const char *name);
/* Load a built-in name or a config.json path (anything with '/' or ending
 * in .json is a path). Errors name file:line:column and the JSON path. */
int model_load(struct model *m, const char *name_or_path, struct ts_error *err);
/* Parse a Hugging Face config already in a document (for tests). */
int model_from_json(struct model *m, const struct jdoc *d, struct ts_error *err);
/* Check internal consistency (sizes > 0, kv divides heads, top-k <= experts...). */
int model_check(const struct model *m, struct ts_error *err);
const char *const *model_builtin_names(void); /* NULL-terminated */

/* ---- parameters and FLOPs ------------------------------------------------ */

enum model_part {
	MODEL_PART_VISION,     /* patch embed, position table, ViT blocks */
	MODEL_PART_MERGER,     /* merger + DeepStack mergers */
	MODEL_PART_EMBED,      /* token (and learned position) embeddings */
	MODEL_PART_ATTN,       /* q/k/v/o (+ biases, q_norm/k_norm) */
	MODEL_PART_MLP,        /* dense MLPs */
	MODEL_PART_ROUTER,     /* MoE routers */
	MODEL_PART_EXPERTS,    /* MoE experts */
	MODEL_PART_NORM,       /* decoder norms and the final norm */
	MODEL_PART_LM_HEAD,    /* output projection (0 when tied) */
	MODEL_PART_COUNT
};
const char *model_part_name(enum model_part p);

struct model_params {
	int64_t total[MODEL_PART_COUNT];   /* parameters stored, count */
	int64_t active[MODEL_PART_COUNT];  /* parameters used per token, count */
	int64_t sum_total;                 /* count */
	int64_t sum_active;                /* count */
};
void model_count_params(const struct model *m, struct model_params *out);

/* Parameters of decoder layer l: stored, used per token, of which experts
 * (stored). Norm and router weights included. */
void model_layer_params(const struct model *m, int l, int64_t *total, int64_t *active,
			int64_t *experts);
/* Parameters of one norm over the hidden size (the final norm). */
int64_t model_norm_params(const struct model *m);
/* The norm after the word embeddings (BLOOM's word_embeddings_layernorm;
 * 0 without one): whole on every TP rank. */
int64_t model_embed_norm_params(const struct model *m);
/* One layer's q_norm and k_norm weights (0 without them). */
int64_t model_qk_norm_params(const struct model *m);
/* Vision encoder + mergers parameters (0 without vision). */
int64_t model_vision_params(const struct model *m);
/* The patch embedding's convolution weights (no bias): channels x temporal
 * patch x patch^2 x the encoder's width (0 for a model without vision,
 * whose fields are zero). */
int64_t model_vision_embed_weights(const struct model *m);
/* Of those, the ones every TP rank holds whole (Megatron-core: patch
 * embedding, positions, LayerNorms, row-parallel biases). */
int64_t model_vision_tp_whole_params(const struct model *m);
/* Parameters of decoder layer l that every TP rank holds whole: norms,
 * q/k norms, MLA's down projections and latent norms, a MoE
 * layer's router and shared-expert gate, row-parallel biases. */
int64_t model_layer_tp_whole_params(const struct model *m, int l);

/* Forward FLOPs per text token at sequence length seq_len: 2 x active
 * matmul parameters (biases and norms excluded) + the attention scores
 * 4 x seq_len x heads x head_dim per layer + the LM head. */
double model_flops_per_token_fwd(const struct model *m, int seq_len);
/* Matmul parameters (no biases, no norms) a token passes through in layer l:
 * attention, and the MLP, or the router, its top-k experts and the shared
 * experts. */
double model_layer_matmul_active(const struct model *m, int l);
/* Value head width: v_head_dim for MLA, else head_dim. */
int model_v_dim(const struct model *m);
/* Widths the attention scores and context multiply over per token:
 * heads x head_dim (Q K^T) + heads x v_dim (P V), elements (2 x heads x
 * head_dim without MLA). */
double model_attn_width(const struct model *m);
/* MLA's down projections (h -> q_lora, h -> kv_lora + qk_rope): matmul
 * parameters every TP rank holds whole (Megatron-core duplicates them), 0
 * without MLA. */
double model_mla_down_params(const struct model *m);
/* MLA's up-projection widths, elements: the queries' input (q_lora, or h
 * without a query latent) and the key/value up projection's output,
 * heads x (qk_nope + v_head_dim); 0 without MLA. */
double model_mla_q_in(const struct model *m);
double model_mla_kv_up(const struct model *m);
/* MLA: per token, what the TP group all-gathers for the up projections
 * under sequence parallelism (the latents, and h for the queries when
 * there is no q_lora), elements; 0 without MLA. */
double model_mla_gather_width(const struct model *m);
/* Keys each query of layer l attends to in Megatron's FLOPs convention
 * (every query counts all seq_len keys; a causal kernel does half): seq_len,
 * or with a sliding window w < seq_len the same scaled by the windowed
 * causal pairs (w s - w(w-1)/2) over the causal pairs s(s+1)/2. */
double model_attn_keys(const struct model *m, int l, int seq_len);
/* Some layer's window is shorter than seq_len. */
bool model_window_binds(const struct model *m, int seq_len);
/* Forward FLOPs of the vision encoder and mergers for one image of
 * `patches` patches (before merging). */
double model_vision_flops_fwd(const struct model *m, double patches);
/* Its attention term per patch squared: an image of P patches does
 * this x P^2 FLOPs of attention in the encoder forward. */
double model_vision_attn_coef(const struct model *m);
/* The pixels an image of h x w becomes in the processor (Qwen2/3-VL's
 * smart_resize): each side a multiple of patch x merge, within the pixel
 * bounds; 0 x 0 without a vision encoder. */
void model_image_resize(const struct model *m, int h_px, int w_px, double *h_out,
			double *w_out);
/* Patches and LLM tokens of an image of h x w pixels (one frame). */
void model_image_tokens(const struct model *m, int h_px, int w_px, double *patches,
			double *tokens);

/* ---- parallel plans ---------------------------------------------------------- */

enum plan_schedule { PLAN_SCHED_GPIPE, PLAN_SCHED_1F1B, PLAN_SCHED_INTERLEAVED };
enum plan_recompute { PLAN_RC_NONE, PLAN_RC_SELECTIVE, PLAN_RC_FULL };
enum plan_dtype { PLAN_DT_BF16, PLAN_DT_FP16, PLAN_DT_FP32, PLAN_DT_FP8 };
enum plan_offload { PLAN_OFF_NONE, PLAN_OFF_OPTIMIZER, PLAN_OFF_PARAMS };
enum plan_compress { PLAN_CMP_NONE, PLAN_CMP_FP16, PLAN_CMP_BF16, PLAN_CMP_TOPK };
/* Megatron-core's MoE token dispatchers (--moe-token-dispatcher-type). */
enum plan_dispatcher { PLAN_DISP_ALLTOALL, PLAN_DISP_ALLGATHER };
enum plan_sync { PLAN_SYNC_EVERY_STEP, PLAN_SYNC_LOCAL_SGD, PLAN_SYNC_SSP, PLAN_SYNC_ASYNC };
enum plan_dist_kind { PLAN_DIST_FIXED, PLAN_DIST_POISSON, PLAN_DIST_UNIFORM, PLAN_DIST_LOGNORMAL };

struct plan_dist {
	enum plan_dist_kind kind;  /* fixed value or a distribution */
	double value;              /* FIXED: the value; else unused, same unit as the key */
	double mean;               /* POISSON: mean; LOGNORMAL: mu of log, same unit */
	double min, max;           /* UNIFORM: inclusive bounds, same unit */
	double sigma;              /* LOGNORMAL: sigma of log, dimensionless */
};
double plan_dist_mean(const struct plan_dist *d);
/* Its variance (the spread image sizes give attention's P^2 term). */
double plan_dist_var(const struct plan_dist *d);

/* Fields whose origin is remembered for error messages. */
enum plan_field {
	PF_TP, PF_PP, PF_DP, PF_EP, PF_ETP, PF_CP, PF_SP, PF_MICRO, PF_GLOBAL, PF_SEQ, PF_SCHED,
	PF_VSTAGES, PF_RECOMPUTE, PF_ZERO, PF_DISTOPT, PF_PRECISION, PF_GRAD_DTYPE, PF_OFFLOAD,
	PF_LPS, PF_IMAGES, PF_IMAGE_TOKENS, PF_FLASH, PF_COMPRESSION, PF_SYNC, PF_BUCKET,
	PF_CAPACITY, PF_EXPERT_IMB, PF_PAD_CAP, PF_PP_SG, PF_GA_FUSION, PF_OVERLAP_DP, PF_OVERLAP_TP, PF_OVERLAP_PG, PF_OVERLAP_EP,
	PF_OVERLAP_SH, PF_OVERLAP_PP, PF_DISPATCHER, PF_LPVS, PF_VOCAB_DIV, PF_GROUPED_GEMM, PF_COUNT
};

struct plan {
	int tp, pp, dp, ep, cp;        /* parallel degrees, count (dp 0 = derive) */
	int etp;                       /* expert tensor parallelism (Megatron-core's
	                                * expert_tensor_parallel_size): tp (its default:
	                                * every expert split over the TP group) or 1 (whole
	                                * experts; the EP group spans TP ranks); 0 = tp
	                                * (read it through plan_etp), count */
	bool sp;                       /* Megatron sequence parallelism, flag */
	bool pp_scatter_gather;        /* stage-boundary tensors split over the tp ranks and
	                                * all-gathered on arrival (Megatron SC'21 §3.5,
	                                * DeepSpeed's pipeline engine), flag */
	int micro_batch;               /* sequences per micro-batch per replica, count */
	int global_batch;              /* sequences per iteration (0 = dp x micro x pp), count */
	int seq_len;                   /* tokens per sequence (image tokens included), tokens */
	enum plan_schedule schedule;   /* pipeline schedule */
	int virtual_stages;            /* model chunks per device (interleaved), count */
	int vocab_divisor;             /* the vocabulary is padded to a multiple of this x tp
	                                * (Megatron's make_vocab_size_divisible_by, 128; 1:
	                                * only to a multiple of tp), count */
	enum plan_recompute recompute; /* activation recomputation */
	int zero;                      /* ZeRO stage 0..3 */
	bool distributed_optimizer;    /* Megatron's sharded optimizer (= ZeRO-1 memory) */
	enum plan_dtype precision;     /* parameter/compute dtype */
	enum plan_dtype grad_dtype;    /* gradient accumulation dtype */
	enum plan_dtype grad_reduce_dtype; /* dtype on the wire for DP reduction */
	bool grad_reduce_given;    /* grad_reduce_dtype was set (else plan_resolve makes it
	                            * grad_dtype: Megatron reduces its grad buffer), flag */
	bool overlap_dp, overlap_tp, overlap_pp; /* communication overlap, flags */
	bool overlap_param_gather;     /* the distributed optimizer's parameter all-gather runs
	                                * beside the next forward (Megatron
	                                * --overlap-param-gather), flag */
	bool overlap_ep;               /* MoE all-to-alls hidden behind another micro-batch's
	                                * compute: the steady state's forward and backward run
	                                * merged, layer by layer (Megatron-core's
	                                * --overlap-moe-expert-parallel-comm), flag */
	bool overlap_shared;           /* shared experts beside the EP all-to-alls on a stream of
	                                * their own (Megatron-core's --moe-shared-expert-overlap),
	                                * flag */
	bool overlap_tp_grad;          /* backward input-gradient TP all-reduce runs during the
	                                * weight-gradient GEMM (Megatron async_tensor_model_parallel_allreduce), flag */
	bool grad_accum_fusion;        /* micro-batch gradients accumulate inside the weight-
	                                * gradient GEMM (Megatron gradient_accumulation_fusion);
	                                * false: one add kernel per parameter tensor per
	                                * micro-batch after the first (PyTorch autograd's
	                                * AccumulateGrad, as under DeepSpeed's engine), flag */
	double bucket_bytes;           /* DP gradient bucket, bytes (0 before plan_resolve: the
	                                * framework's default, see plan_resolve) */
	bool bucket_all_stages;        /* overlap.dp buckets every stage and chunk (PyTorch DDP,
	                                * DeepSpeed) instead of only stage 0's first chunk
	                                * (Megatron-core's DDP), flag; set by a ds_config and
	                                * by callers, not a plan key */
	enum plan_offload offload;     /* what ZeRO-Offload moves to host memory */
	enum plan_compress compression;/* gradient compression */
	double compression_ratio;      /* top-k: fraction kept, dimensionless */
	bool error_feedback;           /* top-k residual kept, flag */
	enum plan_sync sync;           /* DP synchronisation mode */
	int sync_interval;             /* local SGD: steps between reductions, count */
	int staleness;                 /* SSP: bound, steps */
	struct plan_dist images_per_sample; /* images per sequence, count */
	struct plan_dist image_tokens; /* LLM tokens per image (after merge), tokens */
	bool flash_attention;          /* no s^2 score storage (Dao et al. 2022), flag */
	double capacity_factor;        /* MoE expert capacity factor: each expert keeps at most this
	                                * multiple of its balanced share of a source rank's tokens
	                                * (Megatron's moe_expert_capacity_factor); 0 = None,
	                                * dropless, dimensionless */
	enum plan_dispatcher dispatcher; /* MoE token dispatcher (alltoall default) */
	bool moe_grouped_gemm;         /* a rank's experts as one grouped GEMM (Megatron-core
	                                * --moe-grouped-gemm; default true); false: one expert
	                                * after another (SequentialMLP), flag */
	bool pad_to_capacity;          /* every expert's input padded to the capacity (Megatron
	                               * --moe-pad-expert-input-to-capacity): fixed-size
	                               * exchanges and expert GEMMs at capacity_factor, flag */
	double expert_imbalance;       /* MoE router skew: coefficient of variation of the experts'
	                                * shares of one layer's tokens in one micro-batch, drawn
	                                * per EP group from a symmetric Dirichlet (0 = a uniform
	                                * router: multinomial noise only), dimensionless */
	int nlps;                      /* entries in layers_per_stage (0 = even split), count */
	int layers_per_stage[PLAN_MAX_STAGES]; /* decoder layers per stage, count */
	int nlpvs;                     /* entries in layers_per_vstage (0 none), count */
	int layers_per_vstage[PLAN_MAX_VSTAGES]; /* decoder layers per virtual stage in
	                                * the model's order (virtual stage c pp + s is chunk c
	                                * of stage s), 0 allowed, count */
	char src[PF_COUNT][TS_WHERE_MAX]; /* where each field was set ("" = default) */
	/* DeepSpeed batch numbers, checked once dp is known (plan_resolve). */
	bool ds_used;                  /* a ds_config.json was applied, flag */
	bool ds_bucket_auto;           /* its reduce_bucket_size is "auto" (hidden^2), flag */
	double ds_bucket_el;           /* its reduce_bucket_size, elements (0: none given) */
	bool ds_tb_given, ds_mb_given; /* train_batch_size / micro given (not "auto"), flags */
	char ds_auto_src[TS_WHERE_MAX]; /* where the first batch key "auto" is (the launcher
	                                * fills it in; "" none) */
	int ds_gas;                    /* gradient_accumulation_steps (0 = unknown), count */
	char ds_gas_src[TS_WHERE_MAX]; /* where ds_gas was set */
	char ds_mb_src[TS_WHERE_MAX];  /* where the config set the micro-batch ("" not) */
	int ds_accum;                  /* data_types.grad_accum_dtype: enum plan_dtype + 1, 0 none
	                                * (checked against the precision that stands) */
	char ds_accum_src[TS_WHERE_MAX]; /* where it was set */
};

/* Ranks of one stage that hold the same experts and reduce their
 * gradients together (Megatron-core's expert data-parallel group):
 * tp x dp x cp / (etp x ep), count. After plan_resolve. */
int plan_expert_dp(const struct plan *p);
/* The vocabulary as the plan trains it: padded to a multiple of
 * vocab_divisor x tp (Megatron's _vocab_size_with_padding), so that the
 * embedding and the LM head split evenly over the tp ranks. */
double plan_vocab(const struct plan *p, const struct model *m);
/* Bytes of one gradient element in the DP reduction: 2 under fp16/bf16
 * compression, else grad_reduce_dtype's. */
double plan_grad_wire_bytes(const struct plan *p);
/* Bytes of one activation element, and so of everything activation-sized
 * that moves: 4 under precision fp32, else 2 (FP8, Transformer Engine's,
 * keeps 16-bit activations; only GEMM operands are FP8). */
double plan_act_bytes(const struct plan *p);
/* Megatron-core's expert capacity (get_capacity) over the balanced load:
 * each source rank routes its T/tp tokens of a micro-batch (T = micro x
 * seq_len / cp) to top_k experts each and keeps at most
 * ceil(capacity_factor x T/tp x top_k / experts) per expert, a whole
 * number of tokens, so the factor in force is that count over the balanced
 * share T/tp x top_k / experts (capacity_factor itself only where that
 * product is whole). Padded to the capacity, every expert gets exactly
 * that; 0 without a capacity or experts. */
double plan_moe_capacity(const struct plan *p, const struct model *m);
/* That capacity in tokens an expert from one source rank:
 * ceil(capacity_factor x its balanced share); 0 without a capacity. */
double plan_moe_capacity_tokens(const struct plan *p, const struct model *m);
/* Whether the images predict draws can differ between samples, and so
 * between replicas: a distribution of images or tokens, or a fractional
 * count of images (rounded up with its fraction's probability). */
bool plan_images_vary(const struct plan *p, const struct model *m);
/* The expert tensor parallelism in force (etp, or its default tp). */
static inline int plan_etp(const struct plan *p)
{
	return p->etp ? p->etp : p->tp;
}

/* Ranks of the expert-TP x EP group (Megatron-core's tp_ep_group): etp x
 * ep (the TP group without EP, the EP group, which then spans TP ranks,
 * with whole experts; 1 with neither: found by review, tp was taken). */
static inline int plan_tpep(const struct plan *p)
{
	return plan_etp(p) * p->ep;
}

/* Megatron-style defaults: tp=pp=ep=cp=1, dp derived, micro 1, seq 4096,
 * 1f1b, no recompute, zero 0, bf16 params with fp32 gradients. */
void plan_init(struct plan *p);
/* Apply a plan JSON document on top of p (only present keys change). */
int plan_apply_json(struct plan *p, const struct jdoc *d, struct ts_error *err);
int plan_load(struct plan *p, const char *path, struct ts_error *err);
/* Apply a DeepSpeed ds_config.json: zero stage, offload, batch sizes,
 * gradient accumulation and precision. "auto" values leave the field as
 * the plan has it. Batch arithmetic is checked in plan_resolve(). */
int plan_apply_deepspeed(struct plan *p, const struct jdoc *d, struct ts_error *err);
/* Record where field f was set (for messages), e.g. "--tp". */
void plan_set_src(struct plan *p, enum plan_field f, const char *where);
/* Parse enum words ("1f1b", "selective", "bf16"...); -1 when unknown. */
int plan_schedule_from(const char *s);
int plan_recompute_from(const char *s);
int plan_dtype_from(const char *s);
int plan_offload_from(const char *s);
int plan_dispatcher_from(const char *s);
const char *plan_schedule_name(enum plan_schedule s);
const char *plan_recompute_name(enum plan_recompute r);
const char *plan_dtype_name(enum plan_dtype d);
const char *plan_offload_name(enum plan_offload o);
const char *plan_dispatcher_name(enum plan_dispatcher d);
const char *plan_compress_name(enum plan_compress c);
const char *plan_sync_name(enum plan_sync y);

/* Derive dp (and global_batch, DeepSpeed's missing batch numbers) from the
 * GPU count and check the plan against the model; one reason per refusal,
 * naming where the offending value came from. TS_EINPUT on refusal. */
int plan_resolve(struct plan *p, const struct model *m, int ngpus, struct ts_error *err);
/* The part of plan_resolve's checks that holds whatever the GPU count (run
 * it before refusing a plan for needing more GPUs than there are, so that
 * bad input is said first). TS_EINPUT on refusal. */
int plan_check_model(const struct plan *p, const struct model *m, struct ts_error *err);
/* Micro-batches per iteration per replica. */
int plan_microbatches(const struct plan *p);
/* Forwards stage s runs before its first backward under 1F1B (p - s - 1)
 * or interleaved 1F1B (2(p - s - 1) + (v - 1)p; all of the m v when m = p),
 * as Megatron's schedules.py, at most m v; GPipe: all m. */
int plan_warmup(const struct plan *p, int s, int m_micro);
/* The micro-batch and model chunk of forward k (0 <= k < m v) of every
 * stage under the interleaved schedule, as Megatron-core's schedule table
 * (schedules.py get_schedule_table, micro-batch groups of p, its default
 * microbatch_group_size_per_vp_stage): groups of p micro-batches run
 * through chunk 0, 1 ... v - 1 before the next group, and the last group
 * takes the rest (m mod p of them when p does not divide m). Backward k
 * runs the same micro-batch through chunk v - 1 - chunk. Other schedules:
 * micro-batch k, chunk 0. */
void plan_vtask(const struct plan *p, int m_micro, int k, int *micro, int *chunk);
/* Decoder layers of model chunk c of stage s (chunks: the interleaved
 * schedule's virtual stages, else one): as Megatron-core assigns them
 * (get_transformer_layer_offset), chunk c of stage s holds the (c p + s)-th
 * run of L/(p v) layers, so the pipeline's virtual stages follow the
 * model's order; with an uneven layers_per_stage, stage s's own block
 * split into v runs; with layers_per_virtual_stage, its (c p + s)-th entry
 * (Megatron-core's --pipeline-model-parallel-layout, decoder layers only). */
void plan_chunk_layers(const struct plan *p, const struct model *m, int s, int c, int *first,
		       int *n);

/* ---- per-layer costs (for the workload builder of the next issue) ------ */

struct model_layer_cost {
	int64_t params;            /* parameters of the layer (whole, unsharded), count */
	double params_rank;        /* parameters held by one rank (TP/EP sharded), count */
	double fwd_flops;          /* forward, one micro-batch, one rank, FLOP */
	double bwd_flops;          /* backward (2 x forward), one micro-batch, one rank, FLOP */
	double recompute_flops;    /* extra forward under the plan's recompute, FLOP */
	double weight_bytes;       /* weights read per forward, one rank, bytes */
	double act_bytes;          /* activations stored for backward, one rank, bytes */
	double out_bytes;          /* layer output (PP send/recv size), one rank, bytes */
	double tp_bytes;           /* TP all-reduce payload per forward, bytes (x2 with backward) */
	double ep_bytes;           /* EP all-to-all dispatch payload per forward and rank (1/tp of
	                            * the tokens each) at the balanced load (the executor runs
	                            * it as an alltoallv at the members' drawn loads), bytes */
	double cp_bytes;           /* CP K/V exchange per forward, bytes */
};
/* Costs of decoder layer l for one micro-batch on one rank under plan p. */
void model_layer_cost(const struct model *m, const struct plan *p, int l,
		      struct model_layer_cost *out);
/* K (or V) width one TP rank holds, elements: kv_heads x head_dim / tp, or
 * one head when tp is a multiple of the K/V heads (replicated). */
double model_kv_width_rank(const struct model *m, const struct plan *p);
/* V width one TP rank holds: model_kv_width_rank, or heads x v_head_dim /
 * tp with MLA. */
double model_v_width_rank(const struct model *m, const struct plan *p);
/* Parameters of decoder layer l one rank holds: dense (TP-split, but the
 * TP-whole ones whole and K/V replicated as above) and experts (EP x TP). */
void model_layer_rank_params(const struct model *m, const struct plan *p, int l, double *dense,
			     double *experts);
/* The vision encoder's and mergers' parameters one rank of the first
 * stage holds: TP-split, the TP-whole ones whole. */
double model_vision_rank_params(const struct model *m, const struct plan *p);
/* Korthikanti et al. (MLSys'23) Table 2 per-layer activation bytes for a
 * layer of the model at micro-batch b and sequence s (used by the cost). */
double model_layer_act_bytes(const struct model *m, const struct plan *p, int l);

/* FLOPs of one training iteration (all GPUs), model FLOPs including the
 * plan's recompute (hardware FLOPs): layers x (3 or 4 forward) + LM head x 3
 * + vision encoder. */
double model_flops_iteration(const struct model *m, const struct plan *p);

/* ---- memory --------------------------------------------------------------- */

struct memory_env {
	double gpu_mem_bytes;      /* HBM per GPU, bytes */
	int ngpus;                 /* GPUs in the job, count */
	double host_mem_bytes;     /* host memory per GPU for offload (0 = not checked), bytes */
	/* Drawn image loads (NULL: every micro-batch at the mean): the image
	 * tokens of micro-batch j of replica r over the plan's mean, at
	 * [r x vision_micro + j], for vision_rows replicas. Stage 0 then holds
	 * the heaviest run of consecutive micro-batches it keeps in flight. */
	const double *vision_tokens;
	int vision_rows, vision_micro; /* replicas, micro-batches each, counts */
};

struct memory_stage {
	double weights_bytes;      /* per GPU, bytes */
	double grads_bytes;        /* per GPU, bytes */
	double optimizer_bytes;    /* persistent optimizer state per GPU, bytes */
	double step_bytes;         /* fp32 main gradients alive only during the optimizer
				    * step, when the activations are freed, bytes */
	double activations_bytes;  /* peak stored activations per GPU, bytes */
	double buffers_bytes;      /* DP buckets, ZeRO-3 gathers, bytes */
	double overhead_bytes;     /* CUDA context + allocator (assumption), bytes */
	double total_bytes;        /* weights + grads + optimizer + max(activations +
				    * buffers, step) + overhead, bytes */
	double host_bytes;         /* offloaded state per GPU in host memory, bytes */
	double inflight;           /* micro-batches (of layers_per_stage) in flight, count */
	int layers;                /* decoder layers on the stage, count */
};

struct memory_report {
	int nstages;               /* = pp, count */
	int peak_stage;            /* stage with the largest total */
	double peak_bytes;         /* largest total, bytes */
	double peak_host_bytes;    /* largest host_bytes, bytes */
	bool fits;                 /* peak <= GPU memory (and host when checked) */
	struct memory_stage stage[PLAN_MAX_STAGES];
};

/* Memory per GPU per stage for a resolved plan. Allocates nothing. */
void memory_eval(const struct model *m, const struct plan *p, const struct memory_env *env,
		 struct memory_report *r);
/* Bytes per parameter of weights, gradients and optimizer state, before
 * any sharding: e.g. 2 + 4 + 12 = 18 for bf16 with fp32 grads. */
void memory_bytes_per_param(const struct plan *p, double *w, double *g, double *o);
/* Of o, the bytes per parameter that exist only during the optimizer step
 * (fp32 main gradients of 16-bit gradients under Megatron's optimizer). */
double memory_step_bytes_per_param(const struct plan *p);

#endif

/* model.c: model architectures: built-ins, Hugging Face config.json,
 * parameter counts per part and per layer, FLOPs per token.
 *
 * Parameter counts follow the module shapes of the published code
 * (transformers' modeling_qwen3_vl.py / modeling_llama.py / Megatron's GPT):
 * every count is an exact integer so tests can compare with ==. */
#include "models/models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- built-in models ---------------------------------------------------- */

struct builtin {
	const char *name;
	const char *source;
	int hidden, layers, heads, kv, head_dim, ffn, vocab, experts, top_k, moe_ffn;
	bool tie;
	int vit; /* 0 none, 1 = 24/1024/16/4096 (2B/4B), 2 = 27/1152/16/4304 */
	int family; /* 0 qwen3 (rms, silu, qk_norm), 1 llama, 2 gpt3 */
};

#define QREF "shared/reference/qwen3_vl.md, table row "
static const struct builtin builtins[] = {
	{ "qwen3-vl-2b", QREF "2B", 2048, 28, 16, 8, 128, 6144, 151936, 0, 0, 0, true, 1, 0 },
	{ "qwen3-vl-4b", QREF "4B", 2560, 36, 32, 8, 128, 9728, 151936, 0, 0, 0, true, 1, 0 },
	{ "qwen3-vl-8b", QREF "8B", 4096, 36, 32, 8, 128, 12288, 151936, 0, 0, 0, false, 2, 0 },
	{ "qwen3-vl-32b", QREF "32B", 5120, 64, 64, 8, 128, 25600, 151936, 0, 0, 0, false, 2, 0 },
	{ "qwen3-vl-30b-a3b", QREF "30B-A3B", 2048, 48, 32, 4, 128, 6144, 151936, 128, 8, 768,
	  false, 2, 0 },
	{ "qwen3-vl-235b-a22b", QREF "235B-A22B", 4096, 94, 64, 4, 128, 12288, 151936, 128, 8,
	  1536, false, 2, 0 },
	{ "qwen3-30b-a3b", "shared/reference/qwen3_vl.md, Qwen3 text-only MoE table", 2048, 48,
	  32, 4, 128, 8192, 151936, 128, 8, 768, false, 0, 0 },
	{ "qwen3-235b-a22b", "shared/reference/qwen3_vl.md, Qwen3 text-only MoE table", 4096, 94,
	  64, 4, 128, 12288, 151936, 128, 8, 1536, false, 0, 0 },
	/* Llama 3.1 shapes as in Meta's published config.json files; recalled,
	 * not in shared/reference (assumption: numbers from memory). */
	{ "llama3-8b", "Meta Llama-3.1-8B config.json (recalled, not in shared/reference)", 4096,
	  32, 32, 8, 128, 14336, 128256, 0, 0, 0, false, 0, 1 },
	{ "llama3-70b", "Meta Llama-3.1-70B config.json (recalled, not in shared/reference)",
	  8192, 80, 64, 8, 128, 28672, 128256, 0, 0, 0, false, 0, 1 },
	{ "llama3-405b", "Meta Llama-3.1-405B config.json (recalled, not in shared/reference)",
	  16384, 126, 128, 8, 128, 53248, 128256, 0, 0, 0, false, 0, 1 },
	/* Megatron SC'21 Table 1 GPT-3 row: h=12288, l=96, a=96, V=51200, s=2048. */
	{ "gpt3-175b", "Megatron-LM SC'21 (Narayanan et al.) Table 1 / eq. 2, V=51200", 12288, 96,
	  96, 96, 128, 49152, 51200, 0, 0, 0, true, 0, 2 },
};

static const char *builtin_names[TS_ARRAY_LEN(builtins) + 1];

const char *const *model_builtin_names(void)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(builtins); i++)
		builtin_names[i] = builtins[i].name;
	builtin_names[TS_ARRAY_LEN(builtins)] = NULL;
	return builtin_names;
}

static void model_zero(struct model *m)
{
	memset(m, 0, sizeof(*m));
	m->mlp = MODEL_MLP_GATED;
	m->norm = MODEL_NORM_RMS;
	m->layer_norms = 2;
}

/* The image processor's pixel bounds (assumption: recalled from the
 * published preprocessor_config.json files, not in shared/reference):
 * Qwen3-VL's "size" shortest_edge 65,536 and longest_edge 16,777,216
 * (256^2 and 4096^2 pixels), Qwen2-VL's min_pixels 3,136 and max_pixels
 * 12,845,056. */
static void qwen3_vl_pixels(struct model_vision *v)
{
	v->min_pixels = 65536;
	v->max_pixels = 16777216;
}

/* Qwen3-VL vision towers, shared/reference/qwen3_vl.md (ViT column, and the
 * shared values: patch 16, temporal patch 2, merge 2, 2304 positions). */
static void set_vit(struct model *m, int kind)
{
	struct model_vision *v = &m->vit;
	m->has_vision = true;
	v->depth = kind == 1 ? 24 : 27;
	v->hidden = kind == 1 ? 1024 : 1152;
	v->heads = 16;
	v->ffn = kind == 1 ? 4096 : 4304;
	v->patch = 16;
	v->temporal_patch = 2;
	v->in_channels = 3;
	v->merge = 2;
	v->out_hidden = m->hidden;
	v->pos_embeddings = 2304;
	v->deepstack = 3;
	qwen3_vl_pixels(v);
}

static void from_builtin(struct model *m, const struct builtin *b)
{
	model_zero(m);
	snprintf(m->name, sizeof(m->name), "%s", b->name);
	snprintf(m->source, sizeof(m->source), "%s", b->source);
	m->hidden = b->hidden;
	m->layers = b->layers;
	m->heads = b->heads;
	m->kv_heads = b->kv;
	m->head_dim = b->head_dim;
	m->ffn = b->ffn;
	m->vocab = b->vocab;
	m->experts = b->experts;
	m->top_k = b->top_k;
	m->moe_ffn = b->moe_ffn;
	m->tie_embeddings = b->tie;
	m->qk_norm = b->family == 0;
	m->rotary = b->family != 2;
	if (b->family == 2) { /* Megatron GPT: biases, LayerNorm, gelu, learned positions */
		m->mlp = MODEL_MLP_GELU;
		m->norm = MODEL_NORM_LAYER;
		m->bias = true;
		m->max_pos = 2048;
		m->dropout = m->attn_dropout = true;
	}
	for (int l = 0; l < m->layers; l++)
		m->moe_layer[l] = m->experts > 0; /* decoder_sparse_step 1, mlp_only_layers [] */
	if (b->vit)
		set_vit(m, b->vit);
}

/* ---- Hugging Face config.json ------------------------------------------- */

/* An int under one of two spellings (e.g. hidden_size / n_embd); both
 * present with different values is a contradiction. */
/* Key k is given with a value: transformers reads null as "the default"
 * (GPT-J's "n_inner": null), so null counts as absent. */
static bool present(const struct jval *o, const char *k, struct jval *c)
{
	return jval_child(o, k, c) && !cJSON_IsNull(c->j);
}

static int opt_bool(const struct jval *o, const char *k, bool *out, struct ts_error *err)
{
	struct jval c;
	return present(o, k, &c) ? jval_get_bool(o, k, false, out, err) : 0;
}

static int opt_number(const struct jval *o, const char *k, double *out, struct ts_error *err)
{
	struct jval c;
	return present(o, k, &c) ? jval_get_number(o, k, false, out, err) : 0;
}

static int get_int2(const struct jval *o, const char *k1, const char *k2, bool required,
		    long long lo, long long hi, int *out, struct ts_error *err)
{
	struct jval c1, c2;
	bool h1 = present(o, k1, &c1), h2 = k2 && present(o, k2, &c2);
	long long a = 0, b = 0;
	if (h1 && jval_get_int(o, k1, true, lo, hi, &a, err))
		return TS_EINPUT;
	if (h2 && jval_get_int(o, k2, true, lo, hi, &b, err))
		return TS_EINPUT;
	if (h1 && h2 && a != b)
		return jval_error(&c2, err, "contradicts '%s' (%lld vs %lld)", k1, b, a);
	if (!h1 && !h2) {
		if (!required)
			return 0;
		return jval_get_int(o, k1, true, lo, hi, &a, err); /* "missing field" */
	}
	*out = (int)(h1 ? a : b);
	return 0;
}

static bool str_starts(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

/* Whether model_type mtype (NULL: none given) is type. */
static bool type_is(const char *mtype, const char *type)
{
	return mtype && !strcmp(mtype, type);
}

static int parse_vision(struct model *m, const struct jval *v, struct ts_error *err)
{
	struct model_vision *x = &m->vit;
	struct jval ds;
	if (jval_expect_object(v, err))
		return TS_EINPUT;
	m->has_vision = true;
	/* absent keys: Qwen3VLVisionConfig's defaults (qwen3_vl.md's shared
	 * values; deepstack_visual_indexes [8, 16, 24], recalled from
	 * transformers: three mergers); found by an audit, 2026-12-06: a
	 * config without spatial_merge_size had 4x the image tokens, without
	 * num_position_embeddings no position table */
	x->in_channels = 3;
	x->temporal_patch = 2;
	x->merge = 2;
	x->pos_embeddings = 2304;
	x->deepstack = 3;
	if (get_int2(v, "depth", NULL, true, 1, 512, &x->depth, err) ||
	    get_int2(v, "hidden_size", "embed_dim", true, 1, 1 << 16, &x->hidden, err) ||
	    get_int2(v, "num_heads", NULL, true, 1, 1024, &x->heads, err) ||
	    get_int2(v, "intermediate_size", NULL, true, 1, 1 << 18, &x->ffn, err) ||
	    get_int2(v, "patch_size", NULL, true, 1, 1024, &x->patch, err) ||
	    get_int2(v, "temporal_patch_size", NULL, false, 1, 64, &x->temporal_patch, err) ||
	    get_int2(v, "in_channels", "in_chans", false, 1, 16, &x->in_channels, err) ||
	    get_int2(v, "spatial_merge_size", NULL, false, 1, 16, &x->merge, err) ||
	    get_int2(v, "out_hidden_size", NULL, true, 1, 1 << 17, &x->out_hidden, err) ||
	    get_int2(v, "num_position_embeddings", NULL, false, 1, 1 << 20, &x->pos_embeddings,
		     err))
		return TS_EINPUT;
	/* the encoder as modelled: Qwen3-VL's ViT, two-matrix GELU MLPs and
	 * full attention in every block */
	{
		const char *act = NULL;
		struct jval c;
		if (present(v, "hidden_act", &c) && jval_get_string(v, "hidden_act", false, &act, err))
			return TS_EINPUT;
		if (act && !str_starts(act, "gelu") && strcmp(act, "quick_gelu"))
			return jval_error(&c, err,
					  "'%s': only GELU vision MLPs (two matrices) are modelled; a "
					  "gated one (Qwen2.5-VL's silu) is not",
					  act);
		if (present(v, "window_size", &c) || present(v, "fullatt_block_indexes", &c))
			return jval_error(&c, err, "windowed vision attention (Qwen2.5-VL) is not "
					  "modelled");
	}
	if (present(v, "deepstack_visual_indexes", &ds)) {
		const cJSON *it;
		int i = 0;
		if (jval_expect_array(&ds, err))
			return TS_EINPUT;
		cJSON_ArrayForEach(it, ds.j)
		{
			struct jval e;
			jval_elem(&ds, it, i++, &e);
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
			    it->valuedouble >= x->depth || it->valuedouble != floor(it->valuedouble))
				return jval_error(&e, err, "must be a ViT layer index in [0, %d)",
						  x->depth);
			/* each index is one merger: a repeat would count one twice */
			for (const cJSON *o = ds.j->child; o != it; o = o->next)
				if (o->valuedouble == it->valuedouble)
					return jval_error(&e, err, "repeats ViT layer %d",
							  (int)it->valuedouble);
		}
		x->deepstack = i;
	}
	if (x->out_hidden != m->hidden) {
		struct jval c;
		jval_child(v, "out_hidden_size", &c);
		return jval_error(&c, err, "%d contradicts the text hidden_size %d", x->out_hidden,
				  m->hidden);
	}
	if (x->hidden % x->heads) {
		struct jval c;
		jval_child(v, "num_heads", &c);
		return jval_error(&c, err, "%d heads do not divide hidden_size %d", x->heads,
				  x->hidden);
	}
	return 0;
}


/* What a config's model_type fixes that its keys do not say, from
 * transformers' configuration_<type>.py defaults and modeling_<type>.py
 * module shapes (recalled, not in shared/reference). gated: the MLP has
 * gate, up and down matrices whatever the activation (Gemma's GeGLU uses
 * gelu_pytorch_tanh), 0: two matrices, -1: unknown type, decided by the
 * activation (silu/swish gated, gelu* not). tie: tie_word_embeddings when
 * the key is absent (PretrainedConfig's default is true; these classes
 * set false). norms: Gemma 2 and 3 norm before and after both attention and
 * MLP (four per layer); Cohere and Phi one before their parallel attention
 * and MLP. kv: num_key_value_heads when the key is absent (MistralConfig and
 * MixtralConfig 8; Gemma2Config, Gemma3TextConfig and Qwen3MoeConfig 4,
 * Starcoder2Config 2; found by review and an audit, 2026-12-05: the heads
 * were taken, a Gemma 2 9B config without the key 10 % large). window:
 * sliding_window when the key is absent (MistralConfig, Gemma2Config,
 * Gemma3TextConfig 4096; null is none; found by an audit: taken as none,
 * Gemma 3 4B's attention FLOPs 76 % high at 32k; Qwen2Config, Qwen2MoeConfig,
 * Qwen3Config, Qwen3MoeConfig and Qwen2-VL's text configs 4096 too, used
 * only with use_sliding_window). window_from: Qwen's max_window_layers
 * when absent (28; Qwen2VLConfig and Qwen2_5_VLConfig 80). moe: a mixture of
 * experts, whose expert count trainsim does not assume (found by an audit:
 * a Mixtral config without it was counted as dense, 7.24 B for 46.70 B). */
struct arch {
	const char *type;
	signed char gated, tie;
	signed char norms; /* norms per decoder layer; 0: the usual two (Gemma 2/3: four) */
	signed char kv;    /* K/V heads by default, count; 0: the attention heads */
	short window;      /* sliding window by default, tokens; 0: none */
	short window_from; /* Qwen: max_window_layers by default, the first windowed layer */
	bool moe;          /* experts required */
};

static const struct arch arches[] = {
	{ "llama", 1, 0, 0, 0, 0, 0, false },
	{ "mistral", 1, 0, 0, 8, 4096, 0, false },
	{ "mixtral", 1, 0, 0, 8, 0, 0, true },
	{ "qwen2", 1, 0, 0, 0, 4096, 28, false },
	{ "qwen2_moe", 1, 0, 0, 0, 4096, 28, true },
	{ "qwen2_vl", 1, 0, 0, 0, 4096, 80, false },
	{ "qwen2_5_vl", 1, 0, 0, 0, 4096, 80, false },
	{ "qwen2_vl_text", 1, 0, 0, 0, 4096, 80, false },
	{ "qwen2_5_vl_text", 1, 0, 0, 0, 4096, 80, false },
	{ "qwen3", 1, 0, 0, 0, 4096, 28, false },
	{ "qwen3_moe", 1, 0, 0, 4, 4096, 28, true },
	{ "qwen3_vl", 1, 0, 0, 0, 0, 28, false },
	{ "qwen3_vl_text", 1, 0, 0, 0, 0, 28, false },
	{ "qwen3_vl_moe", 1, 0, 0, 0, 0, 28, true },
	{ "qwen3_vl_moe_text", 1, 0, 0, 0, 0, 28, true },
	{ "phi3", 1, 0, 0, 0, 0, 0, false },
	{ "olmo", 1, 0, 0, 0, 0, 0, false },
	{ "olmo2", 1, 0, 0, 0, 0, 0, false },
	{ "olmoe", 1, 0, 0, 0, 0, 0, true },
	{ "gemma", 1, 1, 0, 0, 0, 0, false },
	{ "gemma2", 1, 1, 4, 4, 4096, 0, false },
	{ "gemma3", 1, 1, 4, 4, 4096, 0, false },
	{ "gemma3_text", 1, 1, 4, 4, 4096, 0, false },
	{ "gpt2", 0, 1, 0, 0, 0, 0, false },
	{ "gptj", 0, 0, 0, 0, 0, 0, false },
	{ "gpt_neox", 0, 0, 0, 0, 0, 0, false },
	{ "bloom", 0, 1, 0, 0, 0, 0, false },
	{ "phi", 0, 0, 1, 0, 0, 0, false },
	{ "gpt_bigcode", 0, 1, 0, 0, 0, 0, false },
	{ "starcoder2", 0, 1, 0, 2, 0, 0, false },
	{ "falcon", 0, 1, 0, 0, 0, 0, false },
	{ "RefinedWeb", 0, 1, 0, 0, 0, 0, false },
	{ "RefinedWebModel", 0, 1, 0, 0, 0, 0, false },
	{ "deepseek", 1, 0, 0, 0, 0, 0, false },
	{ "deepseek_v2", 1, 0, 0, 0, 0, 0, false },
	{ "deepseek_v3", 1, 0, 0, 0, 0, 0, true },
	{ "cohere", 1, 1, 1, 0, 0, 0, false },
	{ "kimi_k2", 1, 0, 0, 0, 0, 0, true },
};

static struct arch arch_of(const char *type)
{
	struct arch a = { type, -1, 1, 0, 0, 0, 0, false };
	for (size_t i = 0; type && i < TS_ARRAY_LEN(arches); i++)
		if (!strcmp(type, arches[i].type))
			return arches[i];
	return a;
}

/* head_dim when a config leaves it out: transformers' default where the
 * type's config class fixes one (Qwen3Config 128; GemmaConfig,
 * Gemma2Config, Gemma3TextConfig 256), else 0 (hidden / heads). Found by
 * review: a Qwen3-0.6B config without the key came out 14.8 % small at
 * hidden / heads = 64, Gemma-7B's 4.1 % at 192. */
static int type_head_dim(const char *mtype)
{
	if (type_is(mtype, "qwen3"))
		return 128;
	if (type_is(mtype, "gemma") || type_is(mtype, "gemma2") || type_is(mtype, "gemma3") ||
	    type_is(mtype, "gemma3_text"))
		return 256;
	return 0;
}

/* Keys of architectures whose parameters or FLOPs trainsim does not model:
 * refused by name, since ignoring them gives a wrong count. */
static int refuse_unmodelled(const struct jval *root, const struct jval *t, const char *mtype,
			     struct ts_error *err)
{
#define PRICE "; trainsim cannot price this model"
#define TOWER                                                                  \
	" is not modelled (only Qwen3-VL's vision encoder is); for the language " \
	"model alone give its own config"
	/* (towers: other modalities' encoders, at the top level too; found by
	 * review, 2026-12-04: Phi-3.5-vision's CLIP encoder and an audio
	 * model's Whisper encoder were left out without a word, 7.9 % and
	 * about 14 % of their parameters) */
	static const struct {
		const char *key, *why;
		bool tower;
	} keys[] = {
		{ "interleave_moe_layer_step",
		  "Llama 4's interleaved MoE with a shared expert is not modelled" PRICE, false },
		{ "intermediate_size_mlp",
		  "Llama 4's separate dense and expert MLP widths are not modelled" PRICE, false },
		{ "attention_chunk_size", "chunked attention (Llama 4) is not modelled" PRICE, false },
		{ "attn_layer_period",
		  "hybrid attention/state-space layers (Jamba) are not modelled" PRICE, false },
		{ "cross_attention_layers",
		  "cross-attention layers (Llama 3.2 Vision) are not modelled" PRICE, false },
		{ "layers_block_type", "hybrid attention/state-space layers are not modelled" PRICE, false },
		{ "img_processor", "an image encoder (Phi-3-vision's)" TOWER, true },
		{ "mm_vision_tower", "a LLaVA vision tower" TOWER, true },
		{ "audio_config", "an audio encoder" TOWER, true },
		{ "audio_processor", "an audio encoder" TOWER, true },
	};
#undef PRICE
#undef TOWER
	/* not decoder-only transformers */
	static const char *const other[] = { "mamba",	      "mamba2",	      "falcon_mamba",
					     "falcon_h1",     "rwkv",	      "jamba",
					     "zamba",	      "zamba2",	      "bamba",
					     "nemotron_h",    "granitemoehybrid", "qwen3_next",
					     "lfm2",	      "minimax",      "recurrent_gemma",
					     "xlstm",	      "t5",	      "mt5",
					     "bart",	      "mbart",	      "whisper",
					     "encoder-decoder" };
	struct jval c;
	/* Multi-token prediction modules: transformers' DeepseekV3 model has
	 * none (it skips their weights on load), so a DeepSeek-V3 config is
	 * the model without them, as Hugging Face trains it; elsewhere they
	 * would be layers the count misses. */
	if (present(t, "num_nextn_predict_layers", &c) &&
	    !type_is(mtype, "deepseek_v3") &&
	    !(cJSON_IsNumber(c.j) && c.j->valuedouble == 0))
		return jval_error(&c, err,
				  "multi-token prediction layers are not modelled; trainsim cannot "
				  "price this model");
	if (mtype)
		for (size_t i = 0; i < TS_ARRAY_LEN(other); i++)
			if (!strcmp(mtype, other[i])) {
				if (!present(root, "model_type", &c))
					present(t, "model_type", &c);
				return jval_error(&c, err,
						  "'%s' is not a decoder-only transformer of attention "
						  "and MLP layers (state-space, linear-attention or "
						  "encoder-decoder layers are not modelled)",
						  mtype);
			}
	for (size_t i = 0; i < TS_ARRAY_LEN(keys); i++)
		if ((keys[i].tower && present(root, keys[i].key, &c)) || present(t, keys[i].key, &c))
			return jval_error(&c, err, "%s", keys[i].why);
	return 0;
}

/* Sliding-window attention (transformers' layer_types, or the rule each
 * config class derives them by): layer_types when given; otherwise Qwen2/3
 * only with use_sliding_window (default false) and from layer
 * max_window_layers (the type's default: 28, Qwen2-VL's 80) on, Gemma 2
 * every other layer from the first, Gemma 3 all but every
 * sliding_window_pattern-th (default 6), any other type with a
 * sliding_window on every layer (Mistral v0.1, Phi-3). */
static int parse_window(struct model *m, const struct jval *t, const char *mtype,
			struct ts_error *err)
{
	struct jval lt;
	bool qwen = str_starts(mtype, "qwen2") || str_starts(mtype, "qwen3");
	bool use = !qwen, any = false;
	struct arch a = arch_of(mtype);
	int w = 0, from = a.window_from > 0 ? a.window_from : 28, pattern = 6;
	/* (the type's default where the key is absent; null: None, no window) */
	if (!jval_child(t, "sliding_window", &lt))
		w = a.window;
	if (get_int2(t, "sliding_window", NULL, false, 1, 1 << 30, &w, err) ||
	    opt_bool(t, "use_sliding_window", &use, err) ||
	    get_int2(t, "max_window_layers", NULL, false, 0, 1 << 30, &from, err) ||
	    get_int2(t, "sliding_window_pattern", NULL, false, 1, MODEL_MAX_LAYERS, &pattern, err))
		return TS_EINPUT;
	/* Qwen's classes keep no window without use_sliding_window
	 * (sliding_window = None), whatever layer_types lists (found by
	 * review, 2026-12-05: their 4096 default was taken on its
	 * sliding_attention layers) */
	if (qwen && !use)
		w = 0;
	if (present(t, "layer_types", &lt)) {
		const cJSON *it;
		int i = 0;
		if (jval_expect_array(&lt, err))
			return TS_EINPUT;
		if (cJSON_GetArraySize(lt.j) != m->layers)
			return jval_error(&lt, err, "lists %d layers, the model has %d",
					  cJSON_GetArraySize(lt.j), m->layers);
		cJSON_ArrayForEach(it, lt.j)
		{
			struct jval e;
			jval_elem(&lt, it, i, &e);
			if (cJSON_IsString(it) && !strcmp(it->valuestring, "sliding_attention"))
				m->swa_layer[i] = 1;
			else if (!cJSON_IsString(it) || strcmp(it->valuestring, "full_attention"))
				return jval_error(&e, err,
						  "expected \"full_attention\" or \"sliding_attention\"");
			any = any || m->swa_layer[i];
			i++;
		}
		if (any && qwen && !use) {
			memset(m->swa_layer, 0, sizeof(m->swa_layer)); /* (no window: full) */
			return 0;
		}
		if (any && w == 0)
			return jval_error(&lt, err, "sliding_attention layers without a sliding_window");
		m->window = w;
		return 0;
	}
	if (w == 0 || !use)
		return 0;
	for (int l = 0; l < m->layers; l++) {
		if (qwen)
			m->swa_layer[l] = l >= from;
		else if (str_starts(mtype, "gemma2"))
			m->swa_layer[l] = l % 2 == 0;
		else if (str_starts(mtype, "gemma3"))
			m->swa_layer[l] = (l + 1) % pattern != 0;
		else
			m->swa_layer[l] = 1;
	}
	m->window = w;
	return 0;
}

/* Falcon (model_type falcon, or RefinedWeb/RefinedWebModel of the first
 * release): configuration_falcon.py / modelling_RW.py. Multi-query (7B) or
 * grouped KV heads (new_decoder_architecture, 40B/180B), rotary positions
 * (alibi: none either way), a 4h GELU MLP (ffn_hidden_size), LayerNorm, one
 * norm per layer for the 7B's parallel block and two for the new
 * architecture, biases only when "bias" is true. */
static int parse_falcon(struct model *m, const struct jval *t, struct ts_error *err)
{
	bool nda = false, mq = true, bias = false, par = true;
	const char *act = NULL;
	struct jval c;
	int kv = 0;
	if (get_int2(t, "hidden_size", "n_embd", true, 1, 1 << 20, &m->hidden, err) ||
	    get_int2(t, "num_hidden_layers", "n_layer", true, 1, MODEL_MAX_LAYERS, &m->layers,
		     err) ||
	    get_int2(t, "num_attention_heads", "n_head", true, 1, 1 << 14, &m->heads, err) ||
	    get_int2(t, "vocab_size", NULL, true, 1, 1 << 24, &m->vocab, err) ||
	    get_int2(t, "num_kv_heads", "n_head_kv", false, 1, 1 << 14, &kv, err) ||
	    opt_bool(t, "new_decoder_architecture", &nda, err) ||
	    opt_bool(t, "multi_query", &mq, err) || opt_bool(t, "parallel_attn", &par, err) ||
	    opt_bool(t, "bias", &bias, err) ||
	    (present(t, "activation", &c) && jval_get_string(t, "activation", false, &act, err)))
		return TS_EINPUT;
	/* rotary positions unless "alibi" (FalconConfig's alibi, default false) */
	bool alibi = false;
	if (opt_bool(t, "alibi", &alibi, err))
		return TS_EINPUT;
	m->rotary = !alibi;
	if (m->hidden % m->heads) {
		if (!present(t, "num_attention_heads", &c))
			present(t, "n_head", &c);
		return jval_error(&c, err, "%d heads do not divide hidden_size %d", m->heads,
				  m->hidden);
	}
	m->head_dim = m->hidden / m->heads;
	/* RefinedWeb's n_head_kv implies the new architecture */
	if (kv > 0 && !present(t, "new_decoder_architecture", &c))
		nda = true;
	m->kv_heads = nda ? (kv > 0 ? kv : m->heads) : mq ? 1 : m->heads;
	m->ffn = 4 * m->hidden;
	if (get_int2(t, "ffn_hidden_size", NULL, false, 1, 1 << 22, &m->ffn, err))
		return TS_EINPUT;
	if (act && !str_starts(act, "gelu")) {
		jval_child(t, "activation", &c);
		return jval_error(&c, err, "unknown Falcon activation '%s' (expected gelu*)", act);
	}
	m->mlp = MODEL_MLP_GELU;
	m->norm = MODEL_NORM_LAYER;
	m->bias = bias;
	/* FalconDecoderLayer: ln_attn and ln_mlp where the new architecture
	 * has num_ln_in_parallel_attn 2 (its default there), else one
	 * input_layernorm and, without the parallel block, one after the
	 * attention (found by an audit, 2026-12-05: Falcon2-11B's 1 was not
	 * read, two norms a layer counted) */
	int nln = nda ? 2 : 0;
	if (get_int2(t, "num_ln_in_parallel_attn", NULL, false, 1, 2, &nln, err))
		return TS_EINPUT;
	m->layer_norms = nda && nln == 2 ? 2 : 1 + !par;
	return 0;
}

int model_from_json(struct model *m, const struct jdoc *d, struct ts_error *err)
{
	struct jval root = jdoc_root(d), t, v, c;
	const char *act = NULL, *mtype = NULL;
	bool gpt2 = false, tie_root = true, tie_text = true, has_tie_root, has_tie_text;
	struct arch arch;
	double drop = 0, adrop = 0; /* hidden and attention dropout probabilities */

	model_zero(m);
	json_copy_text(m->name, sizeof(m->name), d->name); /* (whole characters) */
	snprintf(m->source, sizeof(m->source), "Hugging Face config %s", m->name);
	if (jval_expect_object(&root, err))
		return TS_EINPUT;
	t = root;
	if (present(&root, "text_config", &c)) {
		/* the decoder's numbers come from text_config; one repeated at
		 * the top level with another value is a contradiction */
		/* (the layer shapes; vocab_size and positions can legitimately
		 * differ where a wrapper resized the embeddings) */
		static const char *const keys[] = {
			"hidden_size", "num_hidden_layers", "num_attention_heads",
			"num_key_value_heads", "head_dim", "intermediate_size", "num_experts",
			"num_experts_per_tok", "moe_intermediate_size",
			"shared_expert_intermediate_size", "n_shared_experts", NULL
		};
		if (jval_expect_object(&c, err))
			return TS_EINPUT;
		t = c;
		for (int k = 0; keys[k]; k++) {
			struct jval a, b;
			if (jval_child(&root, keys[k], &a) && jval_child(&t, keys[k], &b) &&
			    cJSON_IsNumber(a.j) && cJSON_IsNumber(b.j) &&
			    a.j->valuedouble != b.j->valuedouble)
				return jval_error(&a, err, "%.17g contradicts text_config.%s %.17g",
						  a.j->valuedouble, keys[k], b.j->valuedouble);
		}
	}
	if ((present(&root, "model_type", &c) &&
	     jval_get_string(&root, "model_type", false, &mtype, err)) ||
	    (!mtype && t.j != root.j && present(&t, "model_type", &c) &&
	     jval_get_string(&t, "model_type", false, &mtype, err)) ||
	    refuse_unmodelled(&root, &t, mtype, err))
		return TS_EINPUT;
	/* another vision-language family, by the top level's model_type
	 * (found by review: Llava's and Gemma 3's were refused for a key
	 * transformers' defaults supply, Qwen2-VL's for a contradiction) */
	if (present(&root, "vision_config", &v) && present(&root, "model_type", &c) && mtype &&
	    !str_starts(mtype, "qwen3_vl"))
		return jval_error(&c, err,
				  "'%s': only Qwen3-VL's vision encoder is modelled; for the language "
				  "model alone %s",
				  mtype,
				  t.j != root.j ? "give its own config (a text_config may leave "
						  "sizes to transformers' defaults, which trainsim "
						  "needs spelled out)"
						: "leave out vision_config");
	arch = arch_of(mtype);
	tie_root = arch.tie != 0;
	if (present(&t, "num_nextn_predict_layers", &c) && cJSON_IsNumber(c.j) &&
	    c.j->valuedouble > 0) /* (accepted for deepseek_v3 only: refuse_unmodelled) */
		snprintf(m->source, sizeof(m->source),
			 "Hugging Face config %s, without its multi-token prediction layers, "
			 "which transformers does not build",
			 m->name);
	if (arch.norms > 0)
		m->layer_norms = arch.norms;
	if (type_is(mtype, "falcon") || type_is(mtype, "RefinedWeb") ||
	    type_is(mtype, "RefinedWebModel")) {
		/* FalconConfig's dropout keys, 0 when absent (found in an
		 * earlier note: not read) */
		if (parse_falcon(m, &t, err) || opt_number(&t, "hidden_dropout", &drop, err) ||
		    opt_number(&t, "attention_dropout", &adrop, err))
			return TS_EINPUT;
		goto common;
	}
	{
		/* GPT-2's spellings say GPT-2's block where the type is one
		 * whose config spells them so, or unknown; a known type's config
		 * class ignores them (found by review: a Llama config with an
		 * extra n_layer got biases, LayerNorm and 1,024 learned
		 * positions, 8036098048 parameters for 8030261248) */
		/* (and those types' blocks whatever the spelling: their config
		 * classes map hidden_size, num_hidden_layers... onto theirs;
		 * found by an audit, 2026-12-05: a gpt2 config so written lost
		 * its positions and biases, or was refused without n_inner) */
		struct jval probe;
		gpt2 = type_is(mtype, "gpt2") || type_is(mtype, "gpt_bigcode") ||
		       str_starts(mtype, "gptj") || type_is(mtype, "bloom") ||
		       (arch.gated < 0 &&
			(jval_child(&t, "n_embd", &probe) || jval_child(&t, "n_layer", &probe)));
	}
	/* said with the counts (found by review: an unknown type's
	 * structure was guessed without a word) */
	if (arch.gated < 0) {
		char ty[41]; /* 40 bytes of the type at most, whole characters */
		json_copy_text(ty, sizeof(ty), mtype ? mtype : "");
		snprintf(m->note, sizeof(m->note), "%s%s%s: %s",
			 mtype ? "model_type '" : "no model_type", ty,
			 mtype ? "' is not one trainsim knows" : "",
			 gpt2 ? "GPT-2's block assumed (biases on every linear, LayerNorm, learned "
				"positions)"
			      : "the layers follow the keys alone (MLP gated for silu, two norms a "
				"layer, biases where a key asks, rotary positions)");
	}
	ts_one_line(m->note); /* (the type is the file's string) */
	/* (BLOOM's configs spell the width n_embed; found by review) */
	if (get_int2(&t, "hidden_size", type_is(mtype, "bloom") ? "n_embed" : "n_embd", true, 1,
		     1 << 20, &m->hidden, err) ||
	    get_int2(&t, "num_hidden_layers", "n_layer", true, 1, MODEL_MAX_LAYERS, &m->layers,
		     err) ||
	    get_int2(&t, "num_attention_heads", "n_head", true, 1, 1 << 14, &m->heads, err) ||
	    get_int2(&t, "vocab_size", NULL, true, 1, 1 << 24, &m->vocab, err))
		return TS_EINPUT;
	/* (the type's default K/V heads where the key is absent: arch.kv) */
	m->kv_heads = arch.kv ? arch.kv : m->heads;
	m->head_dim = type_head_dim(mtype) ? type_head_dim(mtype) : m->hidden / m->heads;
	m->ffn = 4 * m->hidden;
	if (m->kv_heads != m->heads && !present(&t, "num_key_value_heads", &c) &&
	    !present(&t, "num_query_groups", &c) && m->heads % m->kv_heads) {
		if (!present(&root, "model_type", &c))
			present(&t, "model_type", &c);
		return jval_error(&c, err,
				  "num_key_value_heads is absent, and the default of '%s', %d, does "
				  "not divide num_attention_heads %d (give num_key_value_heads)",
				  mtype, m->kv_heads, m->heads);
	}
	if (get_int2(&t, "num_key_value_heads", "num_query_groups", false, 1, 1 << 14,
		     &m->kv_heads, err) ||
	    get_int2(&t, "head_dim", "kv_channels", false, 1, 1 << 16, &m->head_dim, err) ||
	    get_int2(&t, "intermediate_size", "n_inner", !gpt2, 1, 1 << 22, &m->ffn, err) ||
	    get_int2(&t, "num_experts", "num_local_experts", false, 0, 1 << 16, &m->experts, err))
		return TS_EINPUT;
	if (present(&t, "n_routed_experts", &c)) { /* DeepSeek's spelling */
		int e = 0;
		struct jval o;
		if (get_int2(&t, "n_routed_experts", NULL, true, 0, 1 << 16, &e, err))
			return TS_EINPUT;
		if ((present(&t, "num_experts", &o) || present(&t, "num_local_experts", &o)) &&
		    e != m->experts)
			return jval_error(&c, err, "contradicts the expert count %d", m->experts);
		m->experts = e;
	}
	if (get_int2(&t, "num_experts_per_tok", NULL, m->experts > 0, 1, 1 << 16, &m->top_k, err))
		return TS_EINPUT;
	/* a MoE type without its expert count: its config class has one (and
	 * the rest of the experts' shape), which trainsim does not assume
	 * (arch.moe; one without num_experts_per_tok alone is refused too) */
	if (m->experts == 0 && arch.moe && !present(&t, "num_experts", &c) &&
	    !present(&t, "num_local_experts", &c) && !present(&t, "n_routed_experts", &c)) {
		if (!present(&root, "model_type", &c))
			present(&t, "model_type", &c);
		return jval_error(&c, err,
				  "model_type '%s' is a mixture of experts, but no expert count is "
				  "given (num_experts, num_local_experts or n_routed_experts)",
				  mtype);
	}
	/* Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): kv_lora_rank
	 * given. A head's query/key is qk_nope + qk_rope wide (transformers'
	 * qk_head_dim; its head_dim key holds the rotary width) and every head
	 * has its own K and V after kv_b_proj. */
	if (present(&t, "kv_lora_rank", &c)) {
		int nope = 0;
		if (get_int2(&t, "kv_lora_rank", NULL, true, 1, 1 << 16, &m->kv_lora, err) ||
		    get_int2(&t, "q_lora_rank", NULL, false, 1, 1 << 16, &m->q_lora, err) ||
		    get_int2(&t, "qk_rope_head_dim", NULL, true, 0, 1 << 14, &m->qk_rope, err) ||
		    get_int2(&t, "qk_nope_head_dim", NULL, true, 0, 1 << 14, &nope, err) ||
		    get_int2(&t, "v_head_dim", NULL, true, 1, 1 << 14, &m->v_head_dim, err))
			return TS_EINPUT;
		if (nope + m->qk_rope < 1) {
			present(&t, "qk_nope_head_dim", &c);
			return jval_error(&c, err, "qk_nope_head_dim + qk_rope_head_dim must be positive");
		}
		m->head_dim = nope + m->qk_rope;
		m->kv_heads = m->heads;
	} else {
		static const char *const mla[] = { "q_lora_rank", "qk_rope_head_dim",
						   "qk_nope_head_dim", "v_head_dim" };
		for (size_t i = 0; i < TS_ARRAY_LEN(mla); i++)
			if (present(&t, mla[i], &c))
				return jval_error(&c, err, "given without kv_lora_rank (multi-head "
						  "latent attention needs it)");
	}
	if (!m->kv_lora && !present(&t, "head_dim", &c) && !present(&t, "kv_channels", &c) &&
	    m->hidden % m->heads && !type_head_dim(mtype)) {
		if (!present(&t, "num_attention_heads", &c))
			present(&t, "n_head", &c);
		return jval_error(&c, err, "%d heads do not divide hidden_size %d (give head_dim)",
				  m->heads, m->hidden);
	}
	if (m->experts > 0) {
		int nsh = 0;
		/* when moe_intermediate_size is absent: transformers' default
		 * of the type (Qwen3MoeConfig 768, Qwen2MoeConfig 1408; found by
		 * review: intermediate_size was taken for every type), else
		 * Mixtral's convention, the dense width */
		m->moe_ffn = type_is(mtype, "qwen3_moe")   ? 768 :
			     type_is(mtype, "qwen2_moe") ? 1408 :
							   m->ffn;
		/* (Qwen2MoeConfig's shared expert: 5632 wide by default; found
		 * by an audit, 2026-12-05: taken as none, Qwen1.5-MoE's active
		 * parameters 31 % short) */
		if (type_is(mtype, "qwen2_moe") && !present(&t, "n_shared_experts", &c))
			m->shared_ffn = 5632;
		/* DeepSeek's experts are narrower than its dense layers and
		 * its config classes' defaults differ by version: the width
		 * is asked for (found by an audit, 2026-12-05: the dense
		 * 18,432 was taken, DeepSeek-V3 5.9 T parameters) */
		if (!present(&t, "moe_intermediate_size", &c) &&
		    (str_starts(mtype, "deepseek") || type_is(mtype, "kimi_k2"))) {
			if (!present(&t, "n_routed_experts", &c))
				present(&t, "num_experts", &c);
			return jval_error(&c, err,
					  "model_type '%s' with experts needs moe_intermediate_size "
					  "(its experts' width, not the dense layers')",
					  mtype);
		}
		if (get_int2(&t, "moe_intermediate_size", NULL, false, 1, 1 << 22, &m->moe_ffn, err) ||
		    get_int2(&t, "shared_expert_intermediate_size", NULL, false, 0, 1 << 22,
			     &m->shared_ffn, err) ||
		    get_int2(&t, "n_shared_experts", NULL, false, 0, 1 << 10, &nsh, err))
			return TS_EINPUT;
		/* Qwen2-MoE: one gated shared expert; DeepSeek: n_shared_experts
		 * of the expert width, run as one MLP (DeepseekMoE.shared_experts) */
		m->shared_gate = m->shared_ffn > 0;
		if (nsh > 0) {
			if (m->shared_ffn > 0) {
				present(&t, "n_shared_experts", &c);
				return jval_error(&c, err, "contradicts shared_expert_intermediate_size "
						  "(one shared-expert width)");
			}
			/* (found by review: the product overflowed an int) */
			if ((int64_t)nsh * m->moe_ffn > 1 << 22) {
				present(&t, "n_shared_experts", &c);
				return jval_error(&c, err,
						  "%d shared experts of moe_intermediate_size %d: a "
						  "width of %lld, above 4194304",
						  nsh, m->moe_ffn, (long long)nsh * m->moe_ffn);
			}
			m->shared_ffn = nsh * m->moe_ffn;
		}
	} else if (present(&t, "num_experts_per_tok", &c) ||
		   present(&t, "moe_intermediate_size", &c) ||
		   present(&t, "shared_expert_intermediate_size", &c) ||
		   present(&t, "n_shared_experts", &c)) {
		return jval_error(&c, err, "given for a model without num_experts");
	}
	/* The MLP's shape: by model_type where known (arch_of), else by the
	 * activation: gelu* = 2-matrix MLP, silu/swish = gated 3-matrix MLP. */
	{
		const char *key = gpt2 ? "activation_function" : "hidden_act";
		if (present(&t, key, &c) && jval_get_string(&t, key, false, &act, err))
			return TS_EINPUT;
		if (!act && gpt2)
			act = "gelu_new";
		if (!act && arch.gated < 0)
			return jval_get_string(&t, "hidden_act", true, &act, err);
		if (act && !str_starts(act, "gelu") && strcmp(act, "silu") && strcmp(act, "swish")) {
			jval_child(&t, key, &c);
			return jval_error(&c, err, "unknown activation '%s' (expected gelu* or silu)",
					  act);
		}
		if (arch.gated >= 0)
			m->mlp = arch.gated ? MODEL_MLP_GATED : MODEL_MLP_GELU;
		else
			m->mlp = str_starts(act, "gelu") ? MODEL_MLP_GELU : MODEL_MLP_GATED;
	}
	if (gpt2) { /* GPT-2: biases, LayerNorm, learned positions */
		/* GPT2Config's and GPTBigCodeConfig's resid_pdrop and attn_pdrop
		 * default to 0.1 (found by review: absent keys meant no dropout,
		 * and attn_pdrop was not read) */
		if (type_is(mtype, "gpt2") || type_is(mtype, "gpt_bigcode"))
			drop = adrop = 0.1;
		m->bias = true;
		m->norm = MODEL_NORM_LAYER;
		m->max_pos = 1024;
		if (get_int2(&t, "n_positions", "max_position_embeddings", false, 1, 1 << 24,
			     &m->max_pos, err) ||
		    opt_number(&t, "resid_pdrop", &drop, err) ||
		    opt_number(&t, "attn_pdrop", &adrop, err) ||
		    /* BloomConfig's spellings (found in an earlier note:
		     * not read, so a config's dropout there was none) */
		    opt_number(&t, "hidden_dropout", &drop, err) ||
		    opt_number(&t, "attention_dropout", &adrop, err))
			return TS_EINPUT;
		/* GPT-J: rotary positions; attention without biases, the MLP
		 * with them, one LayerNorm before its parallel attention and
		 * MLP (found by review: counted as GPT-2's block) */
		if (str_starts(mtype, "gptj")) {
			m->max_pos = 0;
			m->rotary = true;
			m->bias = false;
			m->mlp_bias = true;
			m->layer_norms = 1;
			m->head_bias = true; /* GPTJForCausalLM's nn.Linear lm_head */
		}
		/* BLOOM: ALiBi, no position rows (found by review: GPT-2's 1024
		 * capped its sequence), a LayerNorm after the word embeddings
		 * (word_embeddings_layernorm; found by an audit: uncounted) */
		if (type_is(mtype, "bloom")) {
			m->max_pos = 0;
			m->embed_norm = true;
		}
		/* GPT2Config, GPTJConfig, BloomConfig and GPTBigCodeConfig have
		 * no K/V head count or head width: their attention takes n_head
		 * heads of n_embd / n_head, whatever else the file says (found by
		 * a review: num_key_value_heads was honoured) */
		if (arch.gated >= 0) {
			m->kv_heads = m->heads;
			m->head_dim = m->hidden / m->heads;
		}
		/* GPTBigCode (StarCoder): multi-query attention, one K/V head
		 * (GPTBigCodeConfig's default; found by an audit, 2026-12-05:
		 * without the key it was taken as off, StarCoder 19 % large) */
		{
			bool mq = type_is(mtype, "gpt_bigcode");
			if (opt_bool(&t, "multi_query", &mq, err))
				return TS_EINPUT;
			if (mq)
				m->kv_heads = 1;
		}
	} else {
		bool sc2 = type_is(mtype, "starcoder2");
		/* every type of this branch takes rotary positions (Llama, Qwen,
		 * Mistral, Gemma, Phi, GPT-NeoX and GPT-J's partial ones,
		 * DeepSeek's on MLA's rotary part, OLMo, Cohere, StarCoder2); an
		 * unknown type too, with the note of its guess, unless its
		 * config says ALiBi ("alibi": true) or another position
		 * embedding (position_embedding_type; found by review) */
		{
			bool alibi = false;
			const char *pe = NULL;
			if (opt_bool(&t, "alibi", &alibi, err) ||
			    (present(&t, "position_embedding_type", &c) &&
			     jval_get_string(&t, "position_embedding_type", false, &pe, err)))
				return TS_EINPUT;
			m->rotary = !alibi && (!pe || !strcmp(pe, "rotary"));
		}
		/* the epsilons name the norm (their values move no time): each a
		 * number in (0, 1), as a norm's epsilon is (found by an audit,
		 * 2026-12-06: "32", [] or true were taken) */
		{
			static const char *const eps[] = { "rms_norm_eps", "layer_norm_eps",
							   "layer_norm_epsilon" };
			for (size_t i = 0; i < sizeof(eps) / sizeof(eps[0]); i++) {
				double e;
				if (!present(&t, eps[i], &c))
					continue;
				if (jval_get_number(&t, eps[i], true, &e, err))
					return TS_EINPUT;
				if (!(e > 0 && e < 1))
					return jval_error(&c, err, "%g: a norm's epsilon is in (0, 1)", e);
			}
		}
		if (present(&t, "layer_norm_eps", &c) || present(&t, "layer_norm_epsilon", &c) || sc2)
			m->norm = MODEL_NORM_LAYER;
		/* GPT-NeoX: every linear biased (attention's by attention_bias,
		 * default true); StarCoder2: use_bias (default true) on every
		 * linear, LayerNorm (found by review: no biases); Phi (Phi-2):
		 * q/k/v, dense, fc1 and fc2 biased, one LayerNorm before the
		 * parallel attention and MLP (found by an audit, 2026-12-05:
		 * no biases and two norms, Phi-2 624,640 short) */
		m->attn_bias = m->mlp_bias = type_is(mtype, "gpt_neox") || type_is(mtype, "phi");
		m->head_bias = type_is(mtype, "phi"); /* PhiForCausalLM's lm_head: bias=True */
		m->bias = sc2;
		m->qkv_bias = str_starts(mtype, "qwen2"); /* Qwen2Attention: q/k/v bias=True */
		if (opt_bool(&t, "attention_bias", &m->attn_bias, err) ||
		    (sc2 && opt_bool(&t, "use_bias", &m->bias, err)) ||
		    opt_bool(&t, "mlp_bias", &m->mlp_bias, err) ||
		    opt_bool(&t, "use_qkv_bias", &m->qkv_bias, err) ||
		    opt_number(&t, "attention_dropout", &adrop, err) ||
		    opt_number(&t, "hidden_dropout", &drop, err) ||
		    /* PhiConfig's (and GPT-NeoX-era) residual dropout */
		    opt_number(&t, "resid_pdrop", &drop, err))
			return TS_EINPUT;
		/* q_norm/k_norm: per head (Qwen3, Gemma 3) or over all heads
		 * (OLMo 2, OLMoE; found by review: not counted) */
		m->qk_norm_full = type_is(mtype, "olmo2") || type_is(mtype, "olmoe");
		m->qk_norm = str_starts(mtype, "qwen3") || str_starts(mtype, "gemma3") ||
			     m->qk_norm_full;
		/* Cohere (Command R): one LayerNorm without bias before its
		 * parallel attention and MLP, counted as a weight alone;
		 * use_qk_norm's norms span all heads (found by review: two
		 * biased norms a layer) */
		if (type_is(mtype, "cohere")) {
			m->norm = MODEL_NORM_RMS;
			if (opt_bool(&t, "use_qk_norm", &m->qk_norm, err))
				return TS_EINPUT;
			m->qk_norm_full = m->qk_norm;
		}
	}
common:
	if (!(drop >= 0 && drop < 1)) {
		if (!jval_child(&t, "hidden_dropout", &c))
			jval_child(&t, "resid_pdrop", &c);
		return jval_error(&c, err, "a dropout probability must be in [0, 1) (got %g)", drop);
	}
	if (!(adrop >= 0 && adrop < 1)) {
		if (!jval_child(&t, "attention_dropout", &c))
			jval_child(&t, "attn_pdrop", &c);
		return jval_error(&c, err, "a dropout probability must be in [0, 1) (got %g)", adrop);
	}
	m->dropout = drop > 0;
	m->attn_dropout = adrop > 0;
	/* tie_word_embeddings: the config class's default when absent
	 * (arch_of); both places must agree. */
	has_tie_root = present(&root, "tie_word_embeddings", &c);
	has_tie_text = t.j != root.j && present(&t, "tie_word_embeddings", &v);
	if (opt_bool(&root, "tie_word_embeddings", &tie_root, err) ||
	    (t.j != root.j && opt_bool(&t, "tie_word_embeddings", &tie_text, err)))
		return TS_EINPUT;
	if (has_tie_root && has_tie_text && tie_root != tie_text)
		return jval_error(&v, err, "contradicts the top-level tie_word_embeddings");
	m->tie_embeddings = has_tie_text ? tie_text : tie_root;
	/* Which layers are MoE: decoder_sparse_step and mlp_only_layers (Qwen MoE). */
	if (m->experts > 0) {
		int step = 1;
		if (get_int2(&t, "decoder_sparse_step", NULL, false, 1, MODEL_MAX_LAYERS, &step, err))
			return TS_EINPUT;
		int kdense = 0, freq = 1;
		if (get_int2(&t, "first_k_dense_replace", NULL, false, 0, MODEL_MAX_LAYERS, &kdense,
			     err) ||
		    get_int2(&t, "moe_layer_freq", NULL, false, 1, MODEL_MAX_LAYERS, &freq, err))
			return TS_EINPUT;
		/* Qwen: every step-th layer; DeepSeek: from layer
		 * first_k_dense_replace on, every moe_layer_freq-th */
		for (int l = 0; l < m->layers; l++)
			m->moe_layer[l] = (l + 1) % step == 0 && l >= kdense && l % freq == 0;
		if (present(&t, "mlp_only_layers", &c)) {
			const cJSON *it;
			int i = 0;
			if (jval_expect_array(&c, err))
				return TS_EINPUT;
			cJSON_ArrayForEach(it, c.j)
			{
				struct jval e;
				jval_elem(&c, it, i++, &e);
				if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
				    it->valuedouble >= m->layers ||
				    it->valuedouble != floor(it->valuedouble))
					return jval_error(&e, err, "must be a layer index in [0, %d)",
							  m->layers);
				m->moe_layer[(int)it->valuedouble] = 0;
			}
		}
		/* every layer dense (mlp_only_layers, decoder_sparse_step): a
		 * dense model, which EP and the router settings refuse */
		bool any = false;
		for (int l = 0; l < m->layers; l++)
			any = any || m->moe_layer[l];
		if (!any)
			m->experts = m->top_k = m->shared_ffn = 0;
	}
	if (parse_window(m, &t, mtype, err))
		return TS_EINPUT;
	if (present(&root, "vision_config", &v) && parse_vision(m, &v, err))
		return TS_EINPUT;
	if (!m->has_vision && (type_is(mtype, "qwen3_vl") || type_is(mtype, "qwen3_vl_moe"))) {
		/* (transformers would build its default encoder, whose 3584-wide
		 * output fits one text width: spelled out, or refused; found by
		 * an audit, 2026-12-06: "vision_config": null dropped it) */
		if (!present(&root, "model_type", &c))
			present(&t, "model_type", &c);
		return jval_error(&c, err, "'%s' without its vision_config: give the encoder's "
				  "sizes (or, for the language model alone, its text_config as "
				  "the config)", mtype);
	}
	if (m->has_vision && mtype && str_starts(mtype, "qwen3_vl"))
		qwen3_vl_pixels(&m->vit);
	else if (m->has_vision && type_is(mtype, "qwen2_vl")) {
		m->vit.min_pixels = 3136;
		m->vit.max_pixels = 12845056;
	}
	{
		struct ts_error e2 = TS_ERROR_INIT;
		if (model_check(m, &e2)) {
			/* Point at the heads/experts keys for the consistency
			 * errors, else at the config */
			c.j = NULL;
			if (strstr(e2.msg, "num_key_value_heads"))
				jval_child(&t, "num_key_value_heads", &c);
			if (strstr(e2.msg, "num_experts_per_tok"))
				jval_child(&t, "num_experts_per_tok", &c);
			if (!c.j)
				c = t;
			return jval_error(&c, err, "%s", e2.msg);
		}
	}
	return 0;
}

static double mla_matmul_params(const struct model *m);

int model_check(const struct model *m, struct ts_error *err)
{
	if (m->hidden <= 0 || m->layers <= 0 || m->heads <= 0 || m->kv_heads <= 0 ||
	    m->head_dim <= 0 || m->ffn <= 0 || m->vocab <= 0)
		return ts_error_set(err, TS_EINPUT, "model '%s': sizes must be positive", m->name);
	if (m->layers > MODEL_MAX_LAYERS)
		return ts_error_set(err, TS_EINPUT, "model '%s': more than %d layers", m->name,
				    MODEL_MAX_LAYERS);
	if (m->kv_heads > m->heads || m->heads % m->kv_heads)
		return ts_error_set(err, TS_EINPUT,
				    "num_key_value_heads %d must divide num_attention_heads %d",
				    m->kv_heads, m->heads);
	if (m->experts > 0 && (m->top_k < 1 || m->top_k > m->experts))
		return ts_error_set(err, TS_EINPUT,
				    "num_experts_per_tok %d must be between 1 and num_experts %d",
				    m->top_k, m->experts);
	if (m->experts > 0 && m->moe_ffn <= 0)
		return ts_error_set(err, TS_EINPUT, "moe_intermediate_size must be positive");
	if (m->kv_lora < 0 || m->q_lora < 0 || m->qk_rope < 0 || m->v_head_dim < 0 ||
	    m->qk_rope > m->head_dim || (m->kv_lora == 0 && (m->q_lora || m->qk_rope)))
		return ts_error_set(err, TS_EINPUT,
				    "model '%s': latent attention sizes inconsistent (kv_lora_rank "
				    "%d, q_lora_rank %d, qk_rope_head_dim %d of a %d-wide head)",
				    m->name, m->kv_lora, m->q_lora, m->qk_rope, m->head_dim);
	{
		/* every size in range, the product may still be absurd: bound the
		 * parameters (in double, before the int64 counts could wrap; found
		 * by review) */
		const struct model_vision *v = &m->vit;
		double h = m->hidden, q = (double)m->heads * m->head_dim;
		double kv = (double)m->kv_heads * m->head_dim, g = 3;
		double layer = (m->kv_lora > 0 ? mla_matmul_params(m) : h * (2 * q + 2 * kv)) +
			       g * h * m->ffn +
			       (double)m->experts * (g * h * m->moe_ffn + h) + g * h * m->shared_ffn;
		double tot = m->layers * layer + 2.0 * m->vocab * h + (double)m->max_pos * h;
		if (m->has_vision)
			tot += (double)v->depth * (4.0 * v->hidden * v->hidden + 2.0 * v->hidden * v->ffn) +
			       (1.0 + v->deepstack) * ((double)v->hidden * v->merge * v->merge) *
				       ((double)v->hidden * v->merge * v->merge + v->out_hidden) +
			       (double)v->pos_embeddings * v->hidden;
		if (!(tot <= MODEL_MAX_PARAMS))
			return ts_error_set(err, TS_EINPUT,
					    "model '%s': its sizes give about %.3g parameters, above "
					    "the %.0e the simulator counts (absurd sizes?)",
					    m->name, tot, MODEL_MAX_PARAMS);
	}
	return 0;
}

static const struct builtin *builtin_named(const char *name)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(builtins); i++)
		if (!strcmp(name, builtins[i].name))
			return &builtins[i];
	return NULL;
}

bool model_names_file(const char *name)
{
	return !builtin_named(name) && (strchr(name, '/') || strstr(name, ".json"));
}

int model_load(struct model *m, const char *name_or_path, struct ts_error *err)
{
	struct jdoc d = JDOC_INIT;
	const struct builtin *b = builtin_named(name_or_path);
	int rc;
	if (b) {
		from_builtin(m, b);
		return 0;
	}
	if (!model_names_file(name_or_path))
		return ts_error_set(err, TS_EINPUT,
				    "unknown model '%s' (built-ins: qwen3-vl-2b ... gpt3-175b, see "
				    "'trainsim model --help'; or give a config.json path)",
				    name_or_path);
	rc = jdoc_load(&d, name_or_path, err);
	if (rc)
		return rc;
	rc = model_from_json(m, &d, err);
	jdoc_release(&d);
	if (!rc) {
		ts_one_line(m->name); /* (printed by the reports, as the cluster's) */
		ts_one_line(m->source); /* (it names the file too) */
	}
	return rc;
}

/* ---- parameters ---------------------------------------------------------- */

static const char *const part_names[MODEL_PART_COUNT] = {
	"vision", "merger", "embedding", "attention", "mlp", "router", "experts", "norms", "lm_head"
};

const char *model_part_name(enum model_part p)
{
	return part_names[p];
}

static int64_t norm_params(const struct model *m, int64_t width)
{
	return m->norm == MODEL_NORM_LAYER ? 2 * width : width;
}

int64_t model_norm_params(const struct model *m)
{
	return norm_params(m, m->hidden);
}

int64_t model_embed_norm_params(const struct model *m)
{
	return m->embed_norm ? norm_params(m, m->hidden) : 0;
}

int64_t model_qk_norm_params(const struct model *m)
{
	if (!m->qk_norm) /* RMSNorm q_norm, k_norm over head_dim, or over all heads */
		return 0;
	return m->qk_norm_full ? (int64_t)(m->heads + m->kv_heads) * m->head_dim
			       : 2 * (int64_t)m->head_dim;
}

/* One MLP of inner width f: gelu fc1+fc2 (+ biases f + h), gated gate/up/down. */
static int64_t mlp_params(const struct model *m, int64_t f)
{
	int64_t h = m->hidden;
	bool b = m->bias || m->mlp_bias;
	if (m->mlp == MODEL_MLP_GELU)
		return 2 * h * f + (b ? f + h : 0);
	return 3 * h * f + (b ? 2 * f + h : 0);
}

/* The shared experts of a MoE layer: one dense MLP of their summed width
 * (DeepSeek fuses them so; Qwen2-MoE has one), plus Qwen2-MoE's h -> 1 gate. */
static int64_t shared_params(const struct model *m)
{
	if (m->shared_ffn <= 0)
		return 0;
	return mlp_params(m, m->shared_ffn) + (m->shared_gate ? m->hidden : 0);
}

int model_v_dim(const struct model *m)
{
	return m->v_head_dim > 0 ? m->v_head_dim : m->head_dim;
}

double model_attn_width(const struct model *m)
{
	return (double)m->heads * m->head_dim + (double)m->heads * model_v_dim(m);
}

double model_mla_down_params(const struct model *m)
{
	if (m->kv_lora <= 0)
		return 0;
	return (double)m->hidden * ((double)m->q_lora + m->kv_lora + m->qk_rope);
}

double model_mla_q_in(const struct model *m)
{
	if (m->kv_lora <= 0)
		return 0;
	return m->q_lora > 0 ? m->q_lora : m->hidden;
}

double model_mla_kv_up(const struct model *m)
{
	if (m->kv_lora <= 0)
		return 0;
	return (double)m->heads * (m->head_dim - m->qk_rope + model_v_dim(m));
}

double model_mla_gather_width(const struct model *m)
{
	if (m->kv_lora <= 0)
		return 0;
	return model_mla_q_in(m) + m->kv_lora + m->qk_rope;
}

/* MLA's matmul parameters (transformers' DeepseekV3Attention): q_a_proj
 * h x q_lora and q_b_proj q_lora x heads(nope + rope), or q_proj h x
 * heads(nope + rope) without q_lora; kv_a_proj_with_mqa h x (kv_lora +
 * rope); kv_b_proj kv_lora x heads(nope + v); o_proj heads v x h. */
static double mla_matmul_params(const struct model *m)
{
	double h = m->hidden, a = m->heads, vd = model_v_dim(m);
	return model_mla_down_params(m) + model_mla_q_in(m) * a * m->head_dim +
	       m->kv_lora * model_mla_kv_up(m) + a * vd * h;
}

static int64_t attn_params(const struct model *m)
{
	int64_t h = m->hidden, q = (int64_t)m->heads * m->head_dim,
		kv = (int64_t)m->kv_heads * m->head_dim;
	if (m->kv_lora > 0) {
		/* + the latents' RMSNorms (q_a_layernorm, kv_a_layernorm);
		 * attention_bias puts biases on q_a_proj, kv_a_proj_with_mqa
		 * and o_proj only */
		int64_t p = (int64_t)mla_matmul_params(m) + norm_params(m, m->kv_lora) +
			    (m->q_lora > 0 ? norm_params(m, m->q_lora) : 0);
		if (m->bias || m->attn_bias)
			p += m->q_lora + m->kv_lora + m->qk_rope + h;
		return p;
	}
	int64_t p = h * q + 2 * h * kv + q * h;
	if (m->bias || m->attn_bias)
		p += q + 2 * kv + h;
	else if (m->qkv_bias)
		p += q + 2 * kv;
	return p + model_qk_norm_params(m);
}

void model_layer_params(const struct model *m, int l, int64_t *total, int64_t *active,
			int64_t *experts)
{
	int64_t base = attn_params(m) + m->layer_norms * norm_params(m, m->hidden), ex = 0, act;
	if (m->experts > 0 && m->moe_layer[l]) {
		int64_t one = mlp_params(m, m->moe_ffn);
		base += (int64_t)m->hidden * m->experts; /* router, no bias (Qwen3 MoE) */
		base += shared_params(m);
		ex = one * m->experts;
		act = base + one * m->top_k;
	} else {
		base += mlp_params(m, m->ffn);
		act = base;
	}
	if (total)
		*total = base + ex;
	if (active)
		*active = act;
	if (experts)
		*experts = ex;
}

/* Megatron-core keeps on every TP rank, whole: the norms (and q/k norms;
 * OLMo 2's over all heads too, assumption), MLA's down projections with
 * their latent norms (MLASelfAttention's duplicated linears), a MoE layer's
 * router (TopKRouter) and shared-expert gate, and the biases of the
 * row-parallel linears (o_proj's, the MLP's down projection's), which are
 * added after the reduction. */
int64_t model_layer_tp_whole_params(const struct model *m, int l)
{
	int64_t h = m->hidden, n = m->layer_norms * norm_params(m, h);
	bool moe = m->experts > 0 && m->moe_layer[l], mb = m->bias || m->mlp_bias;
	n += model_qk_norm_params(m);
	if (m->kv_lora > 0) {
		n += (int64_t)model_mla_down_params(m) + norm_params(m, m->kv_lora) +
		     (m->q_lora > 0 ? norm_params(m, m->q_lora) : 0);
		if (m->bias || m->attn_bias) /* q_a_proj's and kv_a_proj_with_mqa's */
			n += m->q_lora + m->kv_lora + m->qk_rope;
	}
	if (m->bias || m->attn_bias) /* o_proj's */
		n += h;
	if (!moe)
		return n + (mb ? h : 0);
	n += h * m->experts; /* the router */
	if (m->shared_ffn > 0)
		n += (m->shared_gate ? h : 0) + (mb ? h : 0);
	return n;
}

int64_t model_vision_embed_weights(const struct model *m)
{
	const struct model_vision *v = &m->vit;
	return (int64_t)v->in_channels * v->temporal_patch * v->patch * v->patch * v->hidden;
}

/* Vision parts: [0] encoder (patch embed, positions, blocks), [1] mergers. */
static void vision_params(const struct model *m, int64_t *enc, int64_t *merger)
{
	const struct model_vision *v = &m->vit;
	int64_t hd = v->hidden, in;
	int64_t block, one;
	*enc = *merger = 0;
	if (!m->has_vision)
		return;
	/* Conv3d patch embed with bias (modeling_qwen3_vl.py, assumption: bias=True). */
	*enc = model_vision_embed_weights(m) + hd;
	*enc += (int64_t)v->pos_embeddings * hd;
	/* Block: 2 LayerNorms, qkv and proj with biases, fc1/fc2 with biases. */
	block = 4 * hd + (hd * 3 * hd + 3 * hd) + (hd * hd + hd) + (hd * v->ffn + v->ffn) +
		((int64_t)v->ffn * hd + hd);
	*enc += block * v->depth;
	/* Merger: LayerNorm(hidden), fc1 in->in, fc2 in->out_hidden (biases);
	 * DeepStack mergers normalise after the shuffle: LayerNorm(in). */
	in = hd * v->merge * v->merge;
	one = (in * in + in) + (in * v->out_hidden + v->out_hidden);
	*merger = one + 2 * hd + (int64_t)v->deepstack * (one + 2 * in);
}

int64_t model_vision_params(const struct model *m)
{
	int64_t e, g;
	vision_params(m, &e, &g);
	return e + g;
}

/* As Megatron-core's vision models hold them under TP: the patch embedding
 * (a convolution) and learned positions, each block's two LayerNorms and
 * its row-parallel proj and fc2 biases, each merger's LayerNorm and fc2
 * bias are whole on every rank; the rest is split. */
int64_t model_vision_tp_whole_params(const struct model *m)
{
	const struct model_vision *v = &m->vit;
	int64_t hd = v->hidden, in = hd * v->merge * v->merge;
	if (!m->has_vision)
		return 0;
	return model_vision_embed_weights(m) + hd + (int64_t)v->pos_embeddings * hd +
	       (4 * hd + 2 * hd) * v->depth + (2 * hd + v->out_hidden) +
	       (int64_t)v->deepstack * (2 * in + v->out_hidden);
}

void model_count_params(const struct model *m, struct model_params *o)
{
	int64_t h = m->hidden;
	memset(o, 0, sizeof(*o));
	vision_params(m, &o->total[MODEL_PART_VISION], &o->total[MODEL_PART_MERGER]);
	o->total[MODEL_PART_EMBED] =
		(int64_t)m->vocab * h + (int64_t)m->max_pos * h + model_embed_norm_params(m);
	for (int l = 0; l < m->layers; l++) {
		int64_t n = norm_params(m, h);
		o->total[MODEL_PART_ATTN] += attn_params(m);
		o->total[MODEL_PART_NORM] += m->layer_norms * n;
		if (m->experts > 0 && m->moe_layer[l]) {
			int64_t one = mlp_params(m, m->moe_ffn);
			o->total[MODEL_PART_ROUTER] += h * m->experts;
			o->total[MODEL_PART_MLP] += shared_params(m); /* dense: always active */
			o->total[MODEL_PART_EXPERTS] += one * m->experts;
			o->active[MODEL_PART_EXPERTS] += one * m->top_k;
		} else {
			o->total[MODEL_PART_MLP] += mlp_params(m, m->ffn);
		}
	}
	o->total[MODEL_PART_NORM] += norm_params(m, h); /* final norm */
	o->total[MODEL_PART_LM_HEAD] =
		(m->tie_embeddings ? 0 : (int64_t)m->vocab * h) + (m->head_bias ? m->vocab : 0);
	for (int p = 0; p < MODEL_PART_COUNT; p++) {
		if (p != MODEL_PART_EXPERTS)
			o->active[p] = o->total[p];
		o->sum_total += o->total[p];
		o->sum_active += o->active[p];
	}
}

/* ---- FLOPs --------------------------------------------------------------- */

/* Matmul parameters (no biases, no norms) a token passes through in layer l. */
double model_layer_matmul_active(const struct model *m, int l)
{
	double h = m->hidden, q = (double)m->heads * m->head_dim,
	       kv = (double)m->kv_heads * m->head_dim;
	double p = m->kv_lora > 0 ? mla_matmul_params(m) : h * q + 2 * h * kv + q * h;
	double mats = m->mlp == MODEL_MLP_GELU ? 2 : 3;
	if (m->experts > 0 && m->moe_layer[l])
		p += h * m->experts + (double)m->top_k * mats * h * m->moe_ffn +
		     (m->shared_ffn > 0 ? mats * h * m->shared_ffn + (m->shared_gate ? h : 0) : 0);
	else
		p += mats * h * m->ffn;
	return p;
}

double model_attn_keys(const struct model *m, int l, int seq_len)
{
	double s = seq_len, w = m->window;
	if (!m->swa_layer[l] || m->window <= 0 || m->window >= seq_len)
		return s;
	return s * (w * s - w * (w - 1) / 2) / (s * (s + 1) / 2);
}

bool model_window_binds(const struct model *m, int seq_len)
{
	for (int l = 0; l < m->layers; l++)
		if (m->swa_layer[l] && m->window > 0 && m->window < seq_len)
			return true;
	return false;
}

double model_flops_per_token_fwd(const struct model *m, int seq_len)
{
	double f = 0, w = model_attn_width(m);
	for (int l = 0; l < m->layers; l++)
		/* Megatron SC'21 appendix: 2 FLOPs/MAC; scores QK^T and AV 2*s*q each
		 * (2*s*heads*v_head_dim for AV with MLA). */
		f += 2 * model_layer_matmul_active(m, l) + 2.0 * model_attn_keys(m, l, seq_len) * w;
	return f + 2.0 * m->vocab * m->hidden; /* LM head (tied or not) */
}

void model_image_resize(const struct model *m, int h_px, int w_px, double *h_out,
			double *w_out)
{
	const struct model_vision *v = &m->vit;
	double mg, hb, wb;
	if (!m->has_vision) {
		*h_out = *w_out = 0;
		return;
	}
	/* Qwen2/3-VL's smart_resize: each side to the nearest multiple of
	 * patch x merge (Python's round, half to even: rint), then, past the
	 * processor's pixel bounds, both scaled to fit them, down to
	 * multiples below or up to multiples above (found by an audit: no
	 * bounds, so 8192 x 8192 took 262,144 patches where the processor
	 * makes 4096 x 4096 of it, 65,536; and C's round) */
	mg = (double)v->patch * v->merge;
	hb = fmax(mg, rint(h_px / mg) * mg);
	wb = fmax(mg, rint(w_px / mg) * mg);
	if (v->max_pixels > 0 && hb * wb > v->max_pixels) {
		double beta = sqrt((double)h_px * w_px / v->max_pixels);
		hb = fmax(mg, floor(h_px / beta / mg) * mg);
		wb = fmax(mg, floor(w_px / beta / mg) * mg);
	} else if (v->min_pixels > 0 && hb * wb < v->min_pixels) {
		double beta = sqrt(v->min_pixels / ((double)h_px * w_px));
		hb = ceil(h_px * beta / mg) * mg;
		wb = ceil(w_px * beta / mg) * mg;
	}
	*h_out = hb;
	*w_out = wb;
}

void model_image_tokens(const struct model *m, int h_px, int w_px, double *patches,
			double *tokens)
{
	const struct model_vision *v = &m->vit;
	double ph, pw, hb, wb;
	if (!m->has_vision) {
		*patches = *tokens = 0;
		return;
	}
	model_image_resize(m, h_px, w_px, &hb, &wb);
	ph = hb / v->patch;
	pw = wb / v->patch;
	*patches = ph * pw; /* one image = temporal_patch copies of one frame */
	*tokens = *patches / ((double)v->merge * v->merge);
}

double model_vision_attn_coef(const struct model *m)
{
	return m->has_vision ? m->vit.depth * 4.0 * m->vit.hidden : 0;
}

double model_vision_flops_fwd(const struct model *m, double patches)
{
	const struct model_vision *v = &m->vit;
	double hd, block, in, merged, f;
	if (!m->has_vision)
		return 0;
	hd = v->hidden;
	block = 3 * hd * hd + hd * hd + 2 * hd * v->ffn;
	f = 2.0 * (double)model_vision_embed_weights(m) * patches;
	/* Full attention within the image: 4 * P^2 * hidden per block. */
	f += v->depth * 2 * block * patches + model_vision_attn_coef(m) * patches * patches;
	in = hd * v->merge * v->merge;
	merged = patches / ((double)v->merge * v->merge);
	f += (1 + v->deepstack) * 2 * (in * in + in * v->out_hidden) * merged;
	return f;
}

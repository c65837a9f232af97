/* plan_args.c: the plan flags shared by memory and predict (see plan_args.h). */
#include "cli/plan_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json.h"

enum {
	O_PLAN = CLI_PLAN_OPT_BASE,
	O_DS, O_TP, O_PP, O_DP, O_EP, O_ETP, O_CP, O_SP, O_MICRO, O_GLOBAL, O_SEQ, O_SCHED, O_VST, O_RC, O_ZERO, O_DISTOPT, O_PREC, O_GDT, O_OFFLOAD, O_FLASH, O_LPS, O_IMAGES, O_ITOK, O_CAP, O_EIMB, O_PAD, O_BUCKET, O_DISP, O_LPVS, O_VOCAB_DIV, O_GGEMM,
	O_NO_SP, O_NO_DISTOPT, O_NO_FLASH, O_NO_PAD, O_NO_GGEMM
};

static const struct option plan_opts[] = {
	{ "plan", required_argument, NULL, O_PLAN },
	{ "deepspeed", required_argument, NULL, O_DS },
	{ "tp", required_argument, NULL, O_TP },
	{ "pp", required_argument, NULL, O_PP },
	{ "dp", required_argument, NULL, O_DP },
	{ "ep", required_argument, NULL, O_EP },
	{ "etp", required_argument, NULL, O_ETP },
	{ "cp", required_argument, NULL, O_CP },
	{ "sequence-parallel", no_argument, NULL, O_SP },
	{ "micro-batch", required_argument, NULL, O_MICRO },
	{ "global-batch", required_argument, NULL, O_GLOBAL },
	{ "seq-len", required_argument, NULL, O_SEQ },
	{ "schedule", required_argument, NULL, O_SCHED },
	{ "virtual-stages", required_argument, NULL, O_VST },
	{ "recompute", required_argument, NULL, O_RC },
	{ "zero", required_argument, NULL, O_ZERO },
	{ "distributed-optimizer", no_argument, NULL, O_DISTOPT },
	{ "precision", required_argument, NULL, O_PREC },
	{ "grad-dtype", required_argument, NULL, O_GDT },
	{ "offload", required_argument, NULL, O_OFFLOAD },
	{ "flash-attention", no_argument, NULL, O_FLASH },
	{ "layers-per-stage", required_argument, NULL, O_LPS },
	{ "images-per-sample", required_argument, NULL, O_IMAGES },
	{ "image-tokens", required_argument, NULL, O_ITOK },
	{ "capacity-factor", required_argument, NULL, O_CAP },
	{ "expert-imbalance", required_argument, NULL, O_EIMB },
	{ "pad-to-capacity", no_argument, NULL, O_PAD },
	{ "bucket-mb", required_argument, NULL, O_BUCKET },
	{ "moe-token-dispatcher", required_argument, NULL, O_DISP },
	{ "layers-per-virtual-stage", required_argument, NULL, O_LPVS },
	{ "make-vocab-size-divisible-by", required_argument, NULL, O_VOCAB_DIV },
	{ "moe-grouped-gemm", no_argument, NULL, O_GGEMM },
	/* switch a plan file's true off */
	{ "no-sequence-parallel", no_argument, NULL, O_NO_SP },
	{ "no-distributed-optimizer", no_argument, NULL, O_NO_DISTOPT },
	{ "no-flash-attention", no_argument, NULL, O_NO_FLASH },
	{ "no-pad-to-capacity", no_argument, NULL, O_NO_PAD },
	{ "no-moe-grouped-gemm", no_argument, NULL, O_NO_GGEMM },
	{ NULL, 0, NULL, 0 }
};

const char cli_plan_help[] =
	"  --plan P             plan JSON (Megatron's vocabulary); flags below override it\n"
	"  --deepspeed F        DeepSpeed ds_config.json: ZeRO stage, offload, batch\n"
	"                       sizes, accumulation, fp16/bf16 (\"auto\" = keep the plan's)\n"
	"  plan flags: --tp --pp --dp --ep --etp 1 --cp --sequence-parallel --micro-batch\n"
	"    --global-batch --seq-len --schedule gpipe|1f1b|interleaved\n"
	"    --virtual-stages --recompute none|selective|full --zero 0-3\n"
	"    --distributed-optimizer --precision bf16|fp16|fp32|fp8\n"
	"    --grad-dtype bf16|fp16|fp32 --offload none|optimizer|params\n"
	"    --flash-attention --layers-per-stage 24,24,23,23\n"
	"    --layers-per-virtual-stage 1,2,2,...,0 --images-per-sample N\n"
	"    --image-tokens N --capacity-factor F --pad-to-capacity --expert-imbalance CV\n"
	"    --bucket-mb MB --moe-token-dispatcher alltoall|allgather --moe-grouped-gemm\n"
	"    --make-vocab-size-divisible-by N (128; the vocabulary padded to N x tp);\n"
	"    --no-sequence-parallel --no-distributed-optimizer\n"
	"    --no-flash-attention --no-pad-to-capacity --no-moe-grouped-gemm switch a\n"
	"    plan's true off;\n"
	"    a flag given again overrides the first (not the two layer lists)\n";

void cli_plan_args_init(struct cli_plan_args *a, const char *cmd)
{
	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
}

void cli_plan_options(const struct option *own, struct option *out, size_t cap)
{
	size_t n = 0;
	for (; own && own->name; own++) {
		TS_ASSERT(n + 1 < cap);
		out[n++] = *own;
	}
	for (const struct option *o = plan_opts; o->name; o++) {
		TS_ASSERT(n + 1 < cap);
		out[n++] = *o;
	}
	memset(&out[n], 0, sizeof(out[n]));
}

int cli_plan_args_take(struct cli_plan_args *a, int c, const char *arg)
{
	if (c < CLI_PLAN_OPT_BASE || c > O_NO_GGEMM)
		return 0;
	/* (one file each: a second would silently replace the first) */
	if (c == O_PLAN) {
		if (a->plan_path)
			return cli_usage(a->cmd, "--plan given twice ('%s', '%s')", a->plan_path, arg);
		a->plan_path = arg;
		return 1;
	}
	if (c == O_DS) {
		if (a->ds_path)
			return cli_usage(a->cmd, "--deepspeed given twice ('%s', '%s')", a->ds_path, arg);
		a->ds_path = arg;
		return 1;
	}
	/* A flag given again overrides the first, as with getopt tools, but
	 * the two layer lists are different answers to one question: refused
	 * together, as in a plan file (found by review: the later one won, so
	 * the result hung on their order) */
	for (int i = 0; i < a->n; i++)
		if ((c == O_LPS && a->flag[i].id == O_LPVS) || (c == O_LPVS && a->flag[i].id == O_LPS))
			return cli_usage(a->cmd, "--layers-per-stage and --layers-per-virtual-stage: "
					 "give one, not both");
	if (a->n >= CLI_PLAN_MAX_FLAGS)
		return cli_usage(a->cmd, "too many plan flags");
	a->flag[a->n].id = c;
	a->flag[a->n].val = arg;
	a->n++;
	return 1;
}

static int set_int(const struct cli_plan_args *a, struct plan *p, enum plan_field f, const char *opt, const char *val,
		   long long lo, long long hi, int *out)
{
	long long v;
	if (cli_parse_long(a->cmd, opt, val, lo, hi, &v))
		return 2;
	*out = (int)v;
	plan_set_src(p, f, opt);
	return 0;
}

static int set_bool(struct plan *p, enum plan_field f, const char *opt, bool v, bool *out)
{
	*out = v;
	plan_set_src(p, f, opt);
	return 0;
}

static int set_word(const struct cli_plan_args *a, struct plan *p, enum plan_field f, const char *opt, const char *val,
		    int (*from)(const char *), int *out)
{
	int v = from(val);
	if (v < 0)
		return cli_usage(a->cmd, "%s: unknown value '%s'", opt, val);
	*out = v;
	plan_set_src(p, f, opt);
	return 0;
}

/* A comma list of at most maxn layer counts >= min for option opt. */
static int set_layer_list(const struct cli_plan_args *a, const char *opt, const char *v, int min,
			  int maxn, const char *example, int *out, int *n)
{
	const char *s = v;
	*n = 0;
	while (*s) {
		char *end;
		long x;
		while (isspace((unsigned char)*s))
			s++;
		errno = 0;
		x = strtol(s, &end, 10);
		const char *num_end = end;
		bool digits = end != s;
		/* white space may stand around an entry, as around a number
		 * (found by review: ' 4,4' was taken and '4,4 ' refused) */
		while (isspace((unsigned char)*end))
			end++;
		if (!digits || (*end && *end != ',') || (*end == ',' && !end[1]))
			return cli_usage(a->cmd, "%s needs a list like %s, got '%s'", opt, example, v);
		/* a well-formed entry out of range is told so, as in a plan
		 * file (found by review: '0,12' had the generic message); past
		 * a long, strtol's clamp is out of range too */
		if (errno || x < min || x > MODEL_MAX_LAYERS)
			return cli_usage(a->cmd, "%s: entry %d must be a layer count from %d to %d "
					 "(got '%.*s')", opt, *n + 1, min, MODEL_MAX_LAYERS,
					 (int)(num_end - s), s);
		if (*n >= maxn)
			return cli_usage(a->cmd, "%s: more than %d entries", opt, maxn);
		out[(*n)++] = (int)x;
		s = *end ? end + 1 : end;
	}
	if (!*n)
		return cli_usage(a->cmd, "%s is empty", opt);
	return 0;
}

static int apply_flag(const struct cli_plan_args *a, struct plan *p, int id, const char *v)
{
	int e;
	double d;
	switch (id) {
	case O_TP: return set_int(a, p, PF_TP, "--tp", v, 1, 1 << 20, &p->tp);
	case O_PP: return set_int(a, p, PF_PP, "--pp", v, 1, PLAN_MAX_STAGES, &p->pp);
	case O_DP: return set_int(a, p, PF_DP, "--dp", v, 1, 1 << 20, &p->dp);
	case O_EP: return set_int(a, p, PF_EP, "--ep", v, 1, 1 << 20, &p->ep);
	case O_ETP: return set_int(a, p, PF_ETP, "--etp", v, 1, 1 << 20, &p->etp);
	case O_CP: return set_int(a, p, PF_CP, "--cp", v, 1, 1 << 20, &p->cp);
	case O_MICRO: return set_int(a, p, PF_MICRO, "--micro-batch", v, 1, 1 << 20, &p->micro_batch);
	case O_GLOBAL:
		return set_int(a, p, PF_GLOBAL, "--global-batch", v, 1, 1 << 30, &p->global_batch);
	case O_SEQ: return set_int(a, p, PF_SEQ, "--seq-len", v, 1, 1 << 24, &p->seq_len);
	case O_VST:
		return set_int(a, p, PF_VSTAGES, "--virtual-stages", v, 1, 1024, &p->virtual_stages);
	case O_VOCAB_DIV:
		return set_int(a, p, PF_VOCAB_DIV, "--make-vocab-size-divisible-by", v, 1, 1 << 20,
			       &p->vocab_divisor);
	case O_ZERO: return set_int(a, p, PF_ZERO, "--zero", v, 0, 3, &p->zero);
	case O_SP: return set_bool(p, PF_SP, "--sequence-parallel", true, &p->sp);
	case O_FLASH: return set_bool(p, PF_FLASH, "--flash-attention", true, &p->flash_attention);
	case O_PAD: return set_bool(p, PF_PAD_CAP, "--pad-to-capacity", true, &p->pad_to_capacity);
	case O_DISTOPT:
		return set_bool(p, PF_DISTOPT, "--distributed-optimizer", true,
				&p->distributed_optimizer);
	case O_NO_SP: return set_bool(p, PF_SP, "--no-sequence-parallel", false, &p->sp);
	case O_NO_FLASH:
		return set_bool(p, PF_FLASH, "--no-flash-attention", false, &p->flash_attention);
	case O_NO_PAD:
		return set_bool(p, PF_PAD_CAP, "--no-pad-to-capacity", false, &p->pad_to_capacity);
	case O_GGEMM:
		return set_bool(p, PF_GROUPED_GEMM, "--moe-grouped-gemm", true, &p->moe_grouped_gemm);
	case O_NO_GGEMM:
		return set_bool(p, PF_GROUPED_GEMM, "--no-moe-grouped-gemm", false,
				&p->moe_grouped_gemm);
	case O_NO_DISTOPT:
		return set_bool(p, PF_DISTOPT, "--no-distributed-optimizer", false,
				&p->distributed_optimizer);
	case O_SCHED:
		e = 0;
		if (set_word(a, p, PF_SCHED, "--schedule", v, plan_schedule_from, &e))
			return 2;
		p->schedule = (enum plan_schedule)e;
		return 0;
	case O_RC:
		e = 0;
		if (set_word(a, p, PF_RECOMPUTE, "--recompute", v, plan_recompute_from, &e))
			return 2;
		p->recompute = (enum plan_recompute)e;
		return 0;
	case O_PREC:
		e = 0;
		if (set_word(a, p, PF_PRECISION, "--precision", v, plan_dtype_from, &e))
			return 2;
		p->precision = (enum plan_dtype)e;
		return 0;
	case O_GDT:
		e = 0;
		if (set_word(a, p, PF_GRAD_DTYPE, "--grad-dtype", v, plan_dtype_from, &e))
			return 2;
		p->grad_dtype = (enum plan_dtype)e;
		return 0;
	case O_DISP:
		e = 0;
		if (set_word(a, p, PF_DISPATCHER, "--moe-token-dispatcher", v, plan_dispatcher_from,
			     &e))
			return 2;
		p->dispatcher = (enum plan_dispatcher)e;
		return 0;
	case O_OFFLOAD:
		e = 0;
		if (set_word(a, p, PF_OFFLOAD, "--offload", v, plan_offload_from, &e))
			return 2;
		p->offload = (enum plan_offload)e;
		return 0;
	case O_IMAGES:
		if (cli_parse_double(a->cmd, "--images-per-sample", v, 0, 1e7, &d))
			return 2;
		p->images_per_sample.kind = PLAN_DIST_FIXED;
		p->images_per_sample.value = d;
		plan_set_src(p, PF_IMAGES, "--images-per-sample");
		return 0;
	case O_ITOK:
		if (cli_parse_double(a->cmd, "--image-tokens", v, 0, 1e7, &d))
			return 2;
		p->image_tokens.kind = PLAN_DIST_FIXED;
		p->image_tokens.value = d;
		plan_set_src(p, PF_IMAGE_TOKENS, "--image-tokens");
		return 0;
	case O_CAP:
		if (cli_parse_double(a->cmd, "--capacity-factor", v, 0, 1000, &p->capacity_factor))
			return 2;
		if (p->capacity_factor > 0 && p->capacity_factor < 1e-3)
			return cli_usage(a->cmd, "--capacity-factor must be 0 (dropless) or between "
					 "0.001 and 1000 (got %g)",
					 p->capacity_factor);
		plan_set_src(p, PF_CAPACITY, "--capacity-factor");
		return 0;
	case O_EIMB:
		if (cli_parse_double(a->cmd, "--expert-imbalance", v, 0, 100, &p->expert_imbalance))
			return 2;
		plan_set_src(p, PF_EXPERT_IMB, "--expert-imbalance");
		return 0;
	case O_BUCKET:
		if (cli_parse_double(a->cmd, "--bucket-mb", v, 1e-3, 1e6, &d))
			return 2;
		p->bucket_bytes = d * 1e6;
		plan_set_src(p, PF_BUCKET, "--bucket-mb");
		return 0;
	case O_LPVS:
		p->nlps = 0; /* (a flag overrides the plan file's other list too;
			      * both flags at once are refused by cli_plan_args_take) */
		if (set_layer_list(a, "--layers-per-virtual-stage", v, 0, PLAN_MAX_VSTAGES,
				   "1,2,2,0", p->layers_per_vstage, &p->nlpvs))
			return 2;
		plan_set_src(p, PF_LPVS, "--layers-per-virtual-stage");
		return 0;
	case O_LPS:
		p->nlpvs = 0;
		if (set_layer_list(a, "--layers-per-stage", v, 1, PLAN_MAX_STAGES, "24,24,23,23",
				   p->layers_per_stage, &p->nlps))
			return 2;
		plan_set_src(p, PF_LPS, "--layers-per-stage");
		return 0;
	}
	return 0;
}

int cli_plan_args_apply(const struct cli_plan_args *a, struct plan *p, struct ts_error *err)
{
	plan_init(p);
	if (a->plan_path && plan_load(p, a->plan_path, err))
		return err->code;
	if (a->ds_path) {
		struct jdoc d = JDOC_INIT;
		int e = jdoc_load(&d, a->ds_path, err);
		if (!e)
			e = plan_apply_deepspeed(p, &d, err);
		jdoc_release(&d);
		if (e)
			return e;
	}
	for (int i = 0; i < a->n; i++)
		if (apply_flag(a, p, a->flag[i].id, a->flag[i].val))
			return 2;
	return 0;
}

int cli_plan_check_gpus(const struct plan *p, long long ngpus, const char *cname,
			struct ts_error *err)
{
	long long need = (long long)p->tp * p->pp * p->cp * (p->dp > 0 ? p->dp : 1);
	/* where the sizes were set, for a plan file's the position (found by
	 * an audit, 2026-12-06: the message named no file or field) */
	static const enum plan_field fs[] = { PF_TP, PF_PP, PF_DP, PF_CP };
	char at[4 * (TS_WHERE_MAX + 4)] = "";
	size_t w = 0;
	if (need <= ngpus)
		return 0;
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if (p->src[fs[i]][0] && w + strlen(p->src[fs[i]]) + 3 < sizeof(at))
			w += (size_t)snprintf(at + w, sizeof(at) - w, "%s%s", w ? "; " : "; from ",
					      p->src[fs[i]]);
	return ts_error_set(err, TS_EINFEASIBLE,
			    "the plan needs %lld GPUs (tp %d x pp %d x dp %d x cp %d%s), more than the "
			    "%lld of %s",
			    need, p->tp, p->pp, p->dp > 0 ? p->dp : 1, p->cp, at, ngpus, cname);
}

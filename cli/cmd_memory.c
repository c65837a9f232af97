/* cmd_memory.c: `trainsim memory`: memory per GPU per pipeline stage of a
 * model under a parallel plan on a cluster; exit 1 when it does not fit.
 * The cluster is read through topo/ and only plain numbers (GPU count, GPU
 * memory) reach models/, which knows nothing of topologies. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/table.h"
#include "common/units.h"
#include "models/models.h"
#include "topo/topo.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: trainsim memory --cluster C [--nodes N] --model M [--plan P]\n"
		"                       [plan flags] [--deepspeed ds_config.json] [--json]\n"
		"\n"
		"Memory per GPU for every pipeline stage: weights, gradients, optimizer\n"
		"state, activations, buffers (DP buckets, ZeRO-3 gathers) and overhead.\n"
		"Exit 1 with the reason when the peak does not fit in GPU memory.\n"
		"\n"
		"  --cluster C          cluster preset or file (GPU memory and count)\n"
		"  --nodes N            override the cluster's node count\n"
		"  --gpus N, --gpu-mem-gib G   instead of / on top of --cluster\n"
		"  --host-mem-gib G     host memory per node for offload (default: not checked)\n"
		"  --model M            built-in name or Hugging Face config.json\n"
		"  --plan P             plan JSON (Megatron's vocabulary); flags below override it\n"
		"  --deepspeed F        DeepSpeed ds_config.json: ZeRO stage, offload, batch\n"
		"                       sizes, accumulation, fp16/bf16 (\"auto\" = keep the plan's)\n"
		"  plan flags: --tp --pp --dp --ep --cp --sequence-parallel --micro-batch\n"
		"    --global-batch --seq-len --schedule gpipe|1f1b|interleaved\n"
		"    --virtual-stages --recompute none|selective|full --zero 0-3\n"
		"    --distributed-optimizer --precision bf16|fp16|fp32|fp8\n"
		"    --grad-dtype bf16|fp16|fp32 --offload none|optimizer|params\n"
		"    --flash-attention --layers-per-stage 24,24,23,23 --images-per-sample N\n"
		"    --image-tokens N --capacity-factor F --bucket-mb MB\n"
		"  --json               JSON: fits, peak_gib, gpu_mem_gib, stages[{stage,\n"
		"                       weights_gib, grads_gib, optimizer_gib, activations_gib,\n"
		"                       buffers_gib, overhead_gib, total_gib, host_gib}]\n");
}

enum {
	O_CLUSTER = 256, O_NODES, O_GPUS, O_GPUMEM, O_HOSTMEM, O_MODEL, O_PLAN, O_DS, O_JSON,
	O_HELP, O_TP, O_PP, O_DP, O_EP, O_CP, O_SP, O_MICRO, O_GLOBAL, O_SEQ, O_SCHED, O_VST,
	O_RC, O_ZERO, O_DISTOPT, O_PREC, O_GDT, O_OFFLOAD, O_FLASH, O_LPS, O_IMAGES, O_ITOK,
	O_CAP, O_BUCKET
};

static const struct option opts[] = {
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "nodes", required_argument, NULL, O_NODES },
	{ "gpus", required_argument, NULL, O_GPUS },
	{ "gpu-mem-gib", required_argument, NULL, O_GPUMEM },
	{ "host-mem-gib", required_argument, NULL, O_HOSTMEM },
	{ "model", required_argument, NULL, O_MODEL },
	{ "plan", required_argument, NULL, O_PLAN },
	{ "deepspeed", required_argument, NULL, O_DS },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ "tp", required_argument, NULL, O_TP },
	{ "pp", required_argument, NULL, O_PP },
	{ "dp", required_argument, NULL, O_DP },
	{ "ep", required_argument, NULL, O_EP },
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
	{ "bucket-mb", required_argument, NULL, O_BUCKET },
	{ NULL, 0, NULL, 0 }
};

/* A plan flag: value and where it came from, applied after --plan and
 * --deepspeed so that flags win whatever their order. */
struct flag {
	int id;
	const char *val;
};

static int set_int(struct plan *p, enum plan_field f, const char *opt, const char *val,
		   long long lo, long long hi, int *out)
{
	long long v;
	if (cli_parse_long("memory", opt, val, lo, hi, &v))
		return 2;
	*out = (int)v;
	plan_set_src(p, f, opt);
	return 0;
}

static int set_word(struct plan *p, enum plan_field f, const char *opt, const char *val,
		    int (*from)(const char *), int *out)
{
	int v = from(val);
	if (v < 0)
		return cli_usage("memory", "%s: unknown value '%s'", opt, val);
	*out = v;
	plan_set_src(p, f, opt);
	return 0;
}

static int apply_flag(struct plan *p, const struct flag *fl)
{
	const char *v = fl->val;
	int e;
	double d;
	switch (fl->id) {
	case O_TP: return set_int(p, PF_TP, "--tp", v, 1, 1 << 20, &p->tp);
	case O_PP: return set_int(p, PF_PP, "--pp", v, 1, PLAN_MAX_STAGES, &p->pp);
	case O_DP: return set_int(p, PF_DP, "--dp", v, 1, 1 << 20, &p->dp);
	case O_EP: return set_int(p, PF_EP, "--ep", v, 1, 1 << 20, &p->ep);
	case O_CP: return set_int(p, PF_CP, "--cp", v, 1, 1 << 20, &p->cp);
	case O_MICRO: return set_int(p, PF_MICRO, "--micro-batch", v, 1, 1 << 20, &p->micro_batch);
	case O_GLOBAL:
		return set_int(p, PF_GLOBAL, "--global-batch", v, 1, 1 << 30, &p->global_batch);
	case O_SEQ: return set_int(p, PF_SEQ, "--seq-len", v, 1, 1 << 24, &p->seq_len);
	case O_VST:
		return set_int(p, PF_VSTAGES, "--virtual-stages", v, 1, 1024, &p->virtual_stages);
	case O_ZERO: return set_int(p, PF_ZERO, "--zero", v, 0, 3, &p->zero);
	case O_SP: p->sp = true; plan_set_src(p, PF_SP, "--sequence-parallel"); return 0;
	case O_FLASH:
		p->flash_attention = true;
		plan_set_src(p, PF_FLASH, "--flash-attention");
		return 0;
	case O_DISTOPT:
		p->distributed_optimizer = true;
		plan_set_src(p, PF_DISTOPT, "--distributed-optimizer");
		return 0;
	case O_SCHED:
		e = 0;
		if (set_word(p, PF_SCHED, "--schedule", v, plan_schedule_from, &e))
			return 2;
		p->schedule = (enum plan_schedule)e;
		return 0;
	case O_RC:
		e = 0;
		if (set_word(p, PF_RECOMPUTE, "--recompute", v, plan_recompute_from, &e))
			return 2;
		p->recompute = (enum plan_recompute)e;
		return 0;
	case O_PREC:
		e = 0;
		if (set_word(p, PF_PRECISION, "--precision", v, plan_dtype_from, &e))
			return 2;
		p->precision = (enum plan_dtype)e;
		return 0;
	case O_GDT:
		e = 0;
		if (set_word(p, PF_GRAD_DTYPE, "--grad-dtype", v, plan_dtype_from, &e))
			return 2;
		p->grad_dtype = (enum plan_dtype)e;
		return 0;
	case O_OFFLOAD:
		e = 0;
		if (set_word(p, PF_OFFLOAD, "--offload", v, plan_offload_from, &e))
			return 2;
		p->offload = (enum plan_offload)e;
		return 0;
	case O_IMAGES:
		if (cli_parse_double("memory", "--images-per-sample", v, 0, 1e7, &d))
			return 2;
		p->images_per_sample.kind = PLAN_DIST_FIXED;
		p->images_per_sample.value = d;
		plan_set_src(p, PF_IMAGES, "--images-per-sample");
		return 0;
	case O_ITOK:
		if (cli_parse_double("memory", "--image-tokens", v, 0, 1e7, &d))
			return 2;
		p->image_tokens.kind = PLAN_DIST_FIXED;
		p->image_tokens.value = d;
		plan_set_src(p, PF_IMAGE_TOKENS, "--image-tokens");
		return 0;
	case O_CAP:
		if (cli_parse_double("memory", "--capacity-factor", v, 1e-3, 1000, &p->capacity_factor))
			return 2;
		plan_set_src(p, PF_CAPACITY, "--capacity-factor");
		return 0;
	case O_BUCKET:
		if (cli_parse_double("memory", "--bucket-mb", v, 1e-3, 1e6, &d))
			return 2;
		p->bucket_bytes = d * 1e6;
		plan_set_src(p, PF_BUCKET, "--bucket-mb");
		return 0;
	case O_LPS: {
		const char *s = v;
		p->nlps = 0;
		while (*s) {
			char *end;
			long n = strtol(s, &end, 10);
			if (end == s || n < 1 || n > MODEL_MAX_LAYERS || (*end && *end != ','))
				return cli_usage("memory",
						 "--layers-per-stage needs a list like 24,24,23,23, "
						 "got '%s'",
						 v);
			if (p->nlps >= PLAN_MAX_STAGES)
				return cli_usage("memory", "--layers-per-stage: more than %d stages",
						 PLAN_MAX_STAGES);
			p->layers_per_stage[p->nlps++] = (int)n;
			s = *end ? end + 1 : end;
		}
		if (!p->nlps)
			return cli_usage("memory", "--layers-per-stage is empty");
		plan_set_src(p, PF_LPS, "--layers-per-stage");
		return 0;
	}
	}
	return 0;
}

static double gib(double b)
{
	return bytes_to_gib(b);
}

static int report(const struct model *m, const struct plan *p, const struct memory_env *env,
		  const struct memory_report *r, const char *cluster, bool json)
{
	int peak = r->peak_stage;
	const struct memory_stage *ps = &r->stage[peak];
	if (json) {
		cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
		cJSON_AddBoolToObject(root, "fits", r->fits);
		cJSON_AddNumberToObject(root, "peak_gib", gib(r->peak_bytes));
		cJSON_AddNumberToObject(root, "peak_stage", peak);
		cJSON_AddNumberToObject(root, "gpu_mem_gib", gib(env->gpu_mem_bytes));
		cJSON_AddNumberToObject(root, "peak_host_gib", gib(r->peak_host_bytes));
		cJSON_AddStringToObject(root, "model", m->name);
		cJSON_AddStringToObject(root, "cluster", cluster);
		cJSON_AddNumberToObject(root, "gpus", env->ngpus);
		cJSON_AddNumberToObject(root, "tp", p->tp);
		cJSON_AddNumberToObject(root, "pp", p->pp);
		cJSON_AddNumberToObject(root, "dp", p->dp);
		cJSON_AddNumberToObject(root, "ep", p->ep);
		cJSON_AddNumberToObject(root, "cp", p->cp);
		cJSON_AddNumberToObject(root, "zero", p->zero);
		cJSON_AddNumberToObject(root, "micro_batch", p->micro_batch);
		cJSON_AddNumberToObject(root, "global_batch", p->global_batch);
		cJSON_AddNumberToObject(root, "micro_batches", plan_microbatches(p));
		cJSON_AddNumberToObject(root, "flops_per_iteration", model_flops_iteration(m, p));
		for (int s = 0; s < r->nstages; s++) {
			const struct memory_stage *st = &r->stage[s];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "stage", s);
			cJSON_AddNumberToObject(o, "layers", st->layers);
			cJSON_AddNumberToObject(o, "weights_gib", gib(st->weights_bytes));
			cJSON_AddNumberToObject(o, "grads_gib", gib(st->grads_bytes));
			cJSON_AddNumberToObject(o, "optimizer_gib", gib(st->optimizer_bytes));
			cJSON_AddNumberToObject(o, "activations_gib", gib(st->activations_bytes));
			cJSON_AddNumberToObject(o, "buffers_gib", gib(st->buffers_bytes));
			cJSON_AddNumberToObject(o, "overhead_gib", gib(st->overhead_bytes));
			cJSON_AddNumberToObject(o, "total_gib", gib(st->total_bytes));
			cJSON_AddNumberToObject(o, "host_gib", gib(st->host_bytes));
			cJSON_AddItemToArray(arr, o);
		}
		cJSON_AddItemToObject(root, "stages", arr);
		if (cli_print_json(root))
			return 2;
	} else {
		static const char *const head[] = { ">stage",  ">layers",  ">weights", ">grads",
						    ">optimizer", ">activations", ">buffers",
						    ">overhead", ">total GiB", ">host GiB" };
		struct table t;
		table_init(&t, 10, head);
		for (int s = 0; s < r->nstages; s++) {
			const struct memory_stage *st = &r->stage[s];
			table_cell(&t, "%d", s);
			table_cell(&t, "%d", st->layers);
			table_cell(&t, "%.2f", gib(st->weights_bytes));
			table_cell(&t, "%.2f", gib(st->grads_bytes));
			table_cell(&t, "%.2f", gib(st->optimizer_bytes));
			table_cell(&t, "%.2f", gib(st->activations_bytes));
			table_cell(&t, "%.2f", gib(st->buffers_bytes));
			table_cell(&t, "%.2f", gib(st->overhead_bytes));
			table_cell(&t, "%.2f", gib(st->total_bytes));
			table_cell(&t, "%.2f", gib(st->host_bytes));
		}
		printf("model %s on %s: %d GPUs of %.1f GiB; tp %d pp %d dp %d ep %d cp %d, "
		       "zero %d, offload %s, recompute %s, micro-batch %d x %d per replica\n\n",
		       m->name, cluster, env->ngpus, gib(env->gpu_mem_bytes), p->tp, p->pp, p->dp,
		       p->ep, p->cp, p->zero, plan_offload_name(p->offload),
		       plan_recompute_name(p->recompute), p->micro_batch, plan_microbatches(p));
		table_print(&t, stdout);
		table_release(&t);
		printf("\npeak %.2f GiB per GPU on stage %d of %.1f GiB: %s\n", gib(r->peak_bytes),
		       peak, gib(env->gpu_mem_bytes), r->fits ? "fits" : "does not fit");
	}
	if (!r->fits) {
		if (r->peak_bytes > env->gpu_mem_bytes)
			fprintf(stderr,
				"trainsim: error: stage %d needs %.1f GiB of %.1f GiB: weights %.1f, "
				"grads %.1f, optimizer %.1f, activations %.1f, buffers %.1f, "
				"overhead %.1f GiB\n",
				peak, gib(r->peak_bytes), gib(env->gpu_mem_bytes),
				gib(ps->weights_bytes), gib(ps->grads_bytes),
				gib(ps->optimizer_bytes), gib(ps->activations_bytes),
				gib(ps->buffers_bytes), gib(ps->overhead_bytes));
		else
			fprintf(stderr,
				"trainsim: error: offloaded state needs %.1f GiB of host memory per "
				"GPU, %.1f GiB available\n",
				gib(r->peak_host_bytes), gib(env->host_mem_bytes));
		return 1;
	}
	return 0;
}

int cmd_memory(int argc, char **argv)
{
	const char *cluster = NULL, *model = NULL, *plan_path = NULL, *ds_path = NULL;
	long long nodes = 0, gpus = 0;
	double gpu_mem_gib = 0, host_gib = 0;
	bool json = false;
	struct flag flags[64];
	int nflags = 0, c, rc = 2, gpus_per_node = 1;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct memory_report *r = NULL;
	struct memory_env env = { 0, 0, 0 };
	struct ts_error err = TS_ERROR_INIT;
	char cname[64] = "command line";

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_CLUSTER: cluster = optarg; break;
		case O_NODES:
			if (cli_parse_long("memory", "--nodes", optarg, 1, 1 << 20, &nodes))
				return 2;
			break;
		case O_GPUS:
			if (cli_parse_long("memory", "--gpus", optarg, 1, 1 << 24, &gpus))
				return 2;
			break;
		case O_GPUMEM:
			if (cli_parse_double("memory", "--gpu-mem-gib", optarg, 1e-3, 1e6, &gpu_mem_gib))
				return 2;
			break;
		case O_HOSTMEM:
			if (cli_parse_double("memory", "--host-mem-gib", optarg, 1e-3, 1e9, &host_gib))
				return 2;
			break;
		case O_MODEL: model = optarg; break;
		case O_PLAN: plan_path = optarg; break;
		case O_DS: ds_path = optarg; break;
		case O_JSON: json = true; break;
		case O_HELP: usage(stdout); return 0;
		case '?':
		case ':': return cli_bad_option("memory", argv);
		default:
			if (nflags >= (int)TS_ARRAY_LEN(flags))
				return cli_usage("memory", "too many plan flags");
			flags[nflags].id = c;
			flags[nflags].val = optarg;
			nflags++;
			break;
		}
	}
	if (optind < argc)
		return cli_usage("memory", "unexpected argument '%s'", argv[optind]);
	if (!model)
		return cli_usage("memory", "needs --model");
	if (!cluster && (!gpus || !gpu_mem_gib))
		return cli_usage("memory", "needs --cluster (or both --gpus and --gpu-mem-gib)");

	m = malloc(sizeof(*m));
	p = malloc(sizeof(*p));
	r = malloc(sizeof(*r));
	if (!m || !p || !r) {
		ts_error_set(&err, TS_ENOMEM, "out of memory");
		goto fail;
	}
	if (cluster) {
		struct topo_cluster cl;
		memset(&cl, 0, sizeof(cl));
		if (topo_cluster_load(&cl, cluster, (int)nodes, &err))
			goto fail;
		env.gpu_mem_bytes = cl.gpu.mem_bytes;
		gpus_per_node = cl.node.gpus;
		env.ngpus = cl.node.gpus * cl.nodes;
		snprintf(cname, sizeof(cname), "%s (%d x %d %s)", cl.name, cl.nodes, cl.node.gpus,
			 cl.gpu.name);
		topo_cluster_release(&cl);
	}
	if (gpus) {
		env.ngpus = (int)gpus;
		if (!cluster)
			snprintf(cname, sizeof(cname), "%lld GPUs", gpus);
	}
	if (gpu_mem_gib > 0)
		env.gpu_mem_bytes = gpu_mem_gib * TS_GiB;
	/* --host-mem-gib is per node; the model checks per GPU. */
	if (host_gib > 0)
		env.host_mem_bytes = host_gib * TS_GiB / (gpus_per_node > 0 ? gpus_per_node : 1);
	if (model_load(m, model, &err))
		goto fail;
	plan_init(p);
	if (plan_path && plan_load(p, plan_path, &err))
		goto fail;
	if (ds_path) {
		struct jdoc d = JDOC_INIT;
		int e = jdoc_load(&d, ds_path, &err);
		if (!e)
			e = plan_apply_deepspeed(p, &d, &err);
		jdoc_release(&d);
		if (e)
			goto fail;
	}
	for (int i = 0; i < nflags; i++)
		if (apply_flag(p, &flags[i])) {
			rc = 2;
			goto out;
		}
	if (plan_resolve(p, m, env.ngpus, &err))
		goto fail;
	memory_eval(m, p, &env, r);
	rc = report(m, p, &env, r, cname, json);
	goto out;
fail:
	rc = cli_fail(&err);
out:
	free(m);
	free(p);
	free(r);
	return rc;
}

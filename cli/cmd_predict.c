/* cmd_predict.c: `trainsim predict`: one training iteration of a model
 * under a parallel plan on a cluster: iteration time, throughput, MFU/HFU,
 * memory and where the time goes; optional Chrome trace and SVG timeline.
 * Exit 1 when the plan needs more GPUs than the cluster has or does not fit
 * in memory (with the reason), 2 on bad input. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/table.h"
#include "common/units.h"
#include "models/models.h"
#include "sim/compute.h"
#include "sim/exec.h"
#include "topo/topo.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: trainsim predict --cluster C [--nodes N] --model M --plan P [plan flags]\n"
		"                        [--deepspeed F] [--fidelity analytic|flow|packet] [--exact]\n"
		"                        [--seed S] [--calibration FILE] [--json] [--trace FILE]\n"
		"                        [--svg FILE]\n"
		"\n"
		"Simulates one training iteration: compute per op (GEMM, attention, element-wise)\n"
		"from the compute model, collectives of every concurrent group on the cluster's\n"
		"network, the pipeline schedule, and per-replica variation (images per sample,\n"
		"image size, expert load) drawn from --seed. Exit 1 with the reason when the plan\n"
		"needs more GPUs than the cluster has or does not fit in GPU memory.\n"
		"\n"
		"  --cluster C          cluster preset or file; --nodes N overrides its node count\n"
		"  --model M            built-in name or Hugging Face config.json\n"
		"  --plan P             plan JSON (Megatron's vocabulary, incl. compression, sync,\n"
		"                       overlap); the flags below override it\n"
		"  --deepspeed F        DeepSpeed ds_config.json (ZeRO stage, offload, batches)\n"
		"  plan flags: --tp --pp --dp --ep --cp --sequence-parallel --micro-batch\n"
		"    --global-batch --seq-len --schedule gpipe|1f1b|interleaved\n"
		"    --virtual-stages --recompute none|selective|full --zero 0-3\n"
		"    --distributed-optimizer --precision bf16|fp16|fp32|fp8\n"
		"    --grad-dtype bf16|fp16|fp32 --offload none|optimizer|params\n"
		"    --flash-attention --layers-per-stage 24,24,23,23 --images-per-sample N\n"
		"    --image-tokens N --capacity-factor F --bucket-mb MB\n"
		"  --fidelity F         analytic (closed forms), flow (default), packet\n"
		"  --exact              simulate every rank instead of one per role\n"
		"  --seed S             RNG seed (default 1)\n"
		"  --calibration FILE   compute-model numbers (JSON) replacing the defaults\n"
		"  --overlap-slowdown X compute slowdown while communication overlaps it (>= 1)\n"
		"  --replicas K         data-parallel units simulated when folded (default 4)\n"
		"  --jitter X           relative sigma of per-op compute time noise (default 0)\n"
		"  --free-comm          what-if: every communication takes no time\n"
		"  --memo 0|1           reuse the measured time of identical collectives\n"
		"                       (default 0: every collective runs on the network)\n"
		"  --trace FILE         Chrome trace-event JSON (open in Perfetto)\n"
		"  --svg FILE           SVG timeline of the iteration\n"
		"  --json               JSON: iteration_time_s, tokens_per_s, tflops_per_gpu, mfu,\n"
		"                       hfu, memory_gib_per_gpu, fits, breakdown {compute_s,\n"
		"                       bubble_s, optimizer_s, exposed_comm_s {tp, pp, dp, ep, cp}},\n"
		"                       comm_bytes_per_gpu {..}, gpus, micro_batches, instances,\n"
		"                       ops, events, flows, wall_s, ...\n");
}

enum {
	O_CLUSTER = 256, O_NODES, O_GPUS, O_GPUMEM, O_HOSTMEM, O_MODEL, O_PLAN, O_DS, O_JSON,
	O_HELP, O_TP, O_PP, O_DP, O_EP, O_CP, O_SP, O_MICRO, O_GLOBAL, O_SEQ, O_SCHED, O_VST,
	O_RC, O_ZERO, O_DISTOPT, O_PREC, O_GDT, O_OFFLOAD, O_FLASH, O_LPS, O_IMAGES, O_ITOK,
	O_CAP, O_BUCKET, O_FID, O_EXACT, O_SEED, O_CAL, O_TRACE, O_SVG, O_SLOW, O_REPL, O_JIT,
	O_FREE, O_MEMO
};

static const struct option opts[] = {
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "nodes", required_argument, NULL, O_NODES },
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
	{ "fidelity", required_argument, NULL, O_FID },
	{ "exact", no_argument, NULL, O_EXACT },
	{ "seed", required_argument, NULL, O_SEED },
	{ "calibration", required_argument, NULL, O_CAL },
	{ "trace", required_argument, NULL, O_TRACE },
	{ "svg", required_argument, NULL, O_SVG },
	{ "overlap-slowdown", required_argument, NULL, O_SLOW },
	{ "replicas", required_argument, NULL, O_REPL },
	{ "jitter", required_argument, NULL, O_JIT },
	{ "free-comm", no_argument, NULL, O_FREE },
	{ "memo", required_argument, NULL, O_MEMO },
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
	if (cli_parse_long("predict", opt, val, lo, hi, &v))
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
		return cli_usage("predict", "%s: unknown value '%s'", opt, val);
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
		if (cli_parse_double("predict", "--images-per-sample", v, 0, 1e7, &d))
			return 2;
		p->images_per_sample.kind = PLAN_DIST_FIXED;
		p->images_per_sample.value = d;
		plan_set_src(p, PF_IMAGES, "--images-per-sample");
		return 0;
	case O_ITOK:
		if (cli_parse_double("predict", "--image-tokens", v, 0, 1e7, &d))
			return 2;
		p->image_tokens.kind = PLAN_DIST_FIXED;
		p->image_tokens.value = d;
		plan_set_src(p, PF_IMAGE_TOKENS, "--image-tokens");
		return 0;
	case O_CAP:
		if (cli_parse_double("predict", "--capacity-factor", v, 1e-3, 1000, &p->capacity_factor))
			return 2;
		plan_set_src(p, PF_CAPACITY, "--capacity-factor");
		return 0;
	case O_BUCKET:
		if (cli_parse_double("predict", "--bucket-mb", v, 1e-3, 1e6, &d))
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
				return cli_usage("predict",
						 "--layers-per-stage needs a list like 24,24,23,23, "
						 "got '%s'",
						 v);
			if (p->nlps >= PLAN_MAX_STAGES)
				return cli_usage("predict", "--layers-per-stage: more than %d stages",
						 PLAN_MAX_STAGES);
			p->layers_per_stage[p->nlps++] = (int)n;
			s = *end ? end + 1 : end;
		}
		if (!p->nlps)
			return cli_usage("predict", "--layers-per-stage is empty");
		plan_set_src(p, PF_LPS, "--layers-per-stage");
		return 0;
	}
	}
	return 0;
}

static int report(const struct model *m, const struct plan *p, const struct sim_prediction *r,
		  const char *cluster, const char *fid, bool exact, bool json)
{
	static const char *const comm[] = { "tp", "pp", "dp", "ep", "cp" };
	if (json) {
		cJSON *root = cJSON_CreateObject(), *bd = cJSON_CreateObject();
		cJSON *ex = cJSON_CreateObject(), *cb = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "model", m->name);
		cJSON_AddStringToObject(root, "cluster", cluster);
		cJSON_AddStringToObject(root, "fidelity", fid);
		cJSON_AddBoolToObject(root, "exact", exact);
		cJSON_AddNumberToObject(root, "iteration_time_s", r->iteration_time_s);
		cJSON_AddNumberToObject(root, "tokens_per_s", r->tokens_per_s);
		cJSON_AddNumberToObject(root, "tflops_per_gpu", r->tflops_per_gpu);
		cJSON_AddNumberToObject(root, "mfu", r->mfu);
		cJSON_AddNumberToObject(root, "hfu", r->hfu);
		cJSON_AddNumberToObject(root, "memory_gib_per_gpu", r->memory_gib_per_gpu);
		cJSON_AddBoolToObject(root, "fits", r->fits);
		cJSON_AddNumberToObject(bd, "compute_s", r->bd.compute_s);
		cJSON_AddNumberToObject(bd, "bubble_s", r->bd.bubble_s);
		cJSON_AddNumberToObject(bd, "optimizer_s", r->bd.optimizer_s);
		for (int k = 0; k < SIM_COMM_COUNT; k++) {
			cJSON_AddNumberToObject(ex, comm[k], r->bd.exposed_comm_s[k]);
			cJSON_AddNumberToObject(cb, comm[k], r->comm_bytes[k]);
		}
		cJSON_AddItemToObject(bd, "exposed_comm_s", ex);
		cJSON_AddItemToObject(root, "breakdown", bd);
		cJSON_AddItemToObject(root, "comm_bytes_per_gpu", cb);
		cJSON_AddNumberToObject(root, "critical_stage", r->critical_stage);
		cJSON_AddNumberToObject(root, "gpus", r->ngpus);
		cJSON_AddNumberToObject(root, "tp", p->tp);
		cJSON_AddNumberToObject(root, "pp", p->pp);
		cJSON_AddNumberToObject(root, "dp", p->dp);
		cJSON_AddNumberToObject(root, "ep", p->ep);
		cJSON_AddNumberToObject(root, "cp", p->cp);
		cJSON_AddNumberToObject(root, "global_batch", p->global_batch);
		cJSON_AddNumberToObject(root, "micro_batches", r->micro_batches);
		cJSON_AddNumberToObject(root, "model_flops", r->model_flops);
		cJSON_AddNumberToObject(root, "hardware_flops", r->hw_flops);
		cJSON_AddNumberToObject(root, "instances", r->instances);
		cJSON_AddNumberToObject(root, "ops", (double)r->ops);
		cJSON_AddNumberToObject(root, "events", (double)r->events);
		cJSON_AddNumberToObject(root, "collectives", (double)r->collectives);
		cJSON_AddNumberToObject(root, "flows", (double)r->flows);
		cJSON_AddNumberToObject(root, "wall_s", r->wall_s);
		return cli_print_json(root) ? 2 : 0;
	}
	{
		static const char *const head[] = { "quantity", ">value" };
		struct table t;
		table_init(&t, 2, head);
		table_cell(&t, "iteration time");
		table_cell(&t, "%.4f s", r->iteration_time_s);
		table_cell(&t, "tokens/s");
		table_cell(&t, "%.0f", r->tokens_per_s);
		table_cell(&t, "TFLOP/s per GPU (model)");
		table_cell(&t, "%.1f", r->tflops_per_gpu);
		table_cell(&t, "MFU");
		table_cell(&t, "%.1f %%", 100 * r->mfu);
		table_cell(&t, "HFU");
		table_cell(&t, "%.1f %%", 100 * r->hfu);
		table_cell(&t, "memory per GPU (worst)");
		table_cell(&t, "%.2f GiB%s", r->memory_gib_per_gpu, r->fits ? "" : " (does not fit)");
		table_cell(&t, "compute");
		table_cell(&t, "%.4f s", r->bd.compute_s);
		table_cell(&t, "pipeline bubble");
		table_cell(&t, "%.4f s", r->bd.bubble_s);
		table_cell(&t, "optimizer");
		table_cell(&t, "%.4f s", r->bd.optimizer_s);
		for (int k = 0; k < SIM_COMM_COUNT; k++) {
			table_cell(&t, "exposed %s communication", comm[k]);
			table_cell(&t, "%.4f s", r->bd.exposed_comm_s[k]);
		}
		printf("model %s on %s: %d GPUs, tp %d pp %d dp %d ep %d cp %d, %d micro-batches of "
		       "%d, %s schedule, fidelity %s%s\n\n",
		       m->name, cluster, r->ngpus, p->tp, p->pp, p->dp, p->ep, p->cp,
		       r->micro_batches, p->micro_batch, plan_schedule_name(p->schedule), fid,
		       exact ? " (exact)" : "");
		table_print(&t, stdout);
		table_release(&t);
		printf("\nbreakdown of stage %d; %d representative ranks, %lld ops, %llu events, "
		       "%.2f s wall\n",
		       r->critical_stage, r->instances, (long long)r->ops,
		       (unsigned long long)r->events, r->wall_s);
	}
	return 0;
}

int cmd_predict(int argc, char **argv)
{
	const char *cluster = NULL, *model = NULL, *plan_path = NULL, *ds_path = NULL;
	const char *cal = NULL, *trace = NULL, *svg = NULL, *fid = "flow";
	long long nodes = 0, seed = 1, repl = 0, memo = 0;
	double slow = 0, jit = 0;
	bool json = false, exact = false, free_comm = false;
	struct flag flags[64];
	int nflags = 0, c, rc = 2;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct topo_cluster cl;
	struct topo t;
	bool have_cl = false, have_t = false;
	struct sim_compute comp;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	char cname[96] = "";

	memset(&r, 0, sizeof(r));
	sim_predict_opts_init(&o);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_CLUSTER: cluster = optarg; break;
		case O_NODES:
			if (cli_parse_long("predict", "--nodes", optarg, 1, 1 << 20, &nodes))
				return 2;
			break;
		case O_MODEL: model = optarg; break;
		case O_PLAN: plan_path = optarg; break;
		case O_DS: ds_path = optarg; break;
		case O_JSON: json = true; break;
		case O_HELP: usage(stdout); return 0;
		case O_FID:
			if (strcmp(optarg, "analytic") && strcmp(optarg, "flow") && strcmp(optarg, "packet"))
				return cli_usage("predict", "--fidelity: unknown value '%s' (analytic, flow, packet)",
						 optarg);
			fid = optarg;
			break;
		case O_EXACT: exact = true; break;
		case O_SEED:
			if (cli_parse_long("predict", "--seed", optarg, 0, (1LL << 62), &seed))
				return 2;
			break;
		case O_CAL: cal = optarg; break;
		case O_TRACE: trace = optarg; break;
		case O_SVG: svg = optarg; break;
		case O_SLOW:
			if (cli_parse_double("predict", "--overlap-slowdown", optarg, 1, 100, &slow))
				return 2;
			break;
		case O_REPL:
			if (cli_parse_long("predict", "--replicas", optarg, 1, 1 << 20, &repl))
				return 2;
			break;
		case O_JIT:
			if (cli_parse_double("predict", "--jitter", optarg, 0, 1, &jit))
				return 2;
			break;
		case O_FREE: free_comm = true; break;
		case O_MEMO:
			if (cli_parse_long("predict", "--memo", optarg, 0, 1, &memo))
				return 2;
			break;
		case O_GPUS:
		case O_GPUMEM:
		case O_HOSTMEM:
		case '?':
		case ':': return cli_bad_option("predict", argv);
		default:
			if (nflags >= (int)TS_ARRAY_LEN(flags))
				return cli_usage("predict", "too many plan flags");
			flags[nflags].id = c;
			flags[nflags].val = optarg;
			nflags++;
			break;
		}
	}
	if (optind < argc)
		return cli_usage("predict", "unexpected argument '%s'", argv[optind]);
	if (!model)
		return cli_usage("predict", "needs --model");
	if (!cluster)
		return cli_usage("predict", "needs --cluster");

	m = malloc(sizeof(*m));
	p = malloc(sizeof(*p));
	if (!m || !p) {
		ts_error_set(&err, TS_ENOMEM, "out of memory");
		goto fail;
	}
	memset(&cl, 0, sizeof(cl));
	if (topo_cluster_load(&cl, cluster, (int)nodes, &err))
		goto fail;
	have_cl = true;
	snprintf(cname, sizeof(cname), "%s (%d x %d %s)", cl.name, cl.nodes, cl.node.gpus, cl.gpu.name);
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
	{
		/* more GPUs than the cluster has: a valid plan that cannot run here */
		long long need = (long long)p->tp * p->pp * p->cp * (p->dp > 0 ? p->dp : 1);
		if (need > (long long)cl.node.gpus * cl.nodes) {
			ts_error_set(&err, TS_EINFEASIBLE,
				     "the plan needs %lld GPUs (tp %d x pp %d x dp %d x cp %d), cluster "
				     "'%s' has %d",
				     need, p->tp, p->pp, p->dp > 0 ? p->dp : 1, p->cp, cl.name,
				     cl.node.gpus * cl.nodes);
			goto fail;
		}
	}
	if (plan_resolve(p, m, cl.node.gpus * cl.nodes, &err))
		goto fail;
	if ((long long)p->tp * p->pp * p->dp * p->cp > (long long)cl.node.gpus * cl.nodes) {
		ts_error_set(&err, TS_EINFEASIBLE, "the plan needs %lld GPUs, cluster '%s' has %d",
			     (long long)p->tp * p->pp * p->dp * p->cp, cl.name, cl.node.gpus * cl.nodes);
		goto fail;
	}
	sim_compute_init(&comp, &cl.gpu);
	if (cal && sim_compute_load(&comp, cal, &err))
		goto fail;
	if (topo_build(&t, &cl, &err))
		goto fail;
	have_t = true;
	o.fidelity = !strcmp(fid, "analytic") ? SIM_ANALYTIC : !strcmp(fid, "packet") ? SIM_PACKET : SIM_FLOW;
	o.exact = exact;
	o.seed = (uint64_t)seed;
	o.compute = &comp;
	o.overlap_slowdown = slow;
	o.replicas = (int)repl;
	o.jitter = jit;
	o.free_comm = free_comm;
	o.memo = (int)memo;
	o.timeline = trace || svg;
	if (sim_predict(&t, m, p, &o, &r, &err))
		goto fail;
	if (trace && sim_trace_write_json(&r, trace, &err))
		goto fail;
	if (svg && sim_trace_write_svg(&r, svg, &err))
		goto fail;
	rc = report(m, p, &r, cname, fid, exact, json);
	if (!rc && !r.fits) {
		fprintf(stderr,
			"trainsim: error: the plan does not fit in GPU memory: %.1f GiB per GPU needed, "
			"%.1f GiB available (see trainsim memory)\n",
			r.memory_gib_per_gpu, bytes_to_gib(cl.gpu.mem_bytes));
		rc = 1;
	}
	goto out;
fail:
	rc = cli_fail(&err);
out:
	sim_prediction_release(&r);
	if (have_t)
		topo_release(&t);
	if (have_cl)
		topo_cluster_release(&cl);
	free(m);
	free(p);
	return rc;
}

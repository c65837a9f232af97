/* cmd_memory.c: `trainsim memory`: memory per GPU per pipeline stage of a
 * model under a parallel plan on a cluster; exit 1 when it does not fit.
 * The cluster is read through topo/ and only plain numbers (GPU count, GPU
 * memory) reach models/, which knows nothing of topologies. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/plan_args.h"
#include "common/table.h"
#include "common/units.h"
#include "models/models.h"
#include "topo/topo.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: trainsim memory --cluster C [--nodes N] --model M [--plan P]\n"
		"                       [plan flags] [--deepspeed ds_config.json]\n"
		"                       [--gpus N] [--gpu-mem-gib G] [--host-mem-gib G] [--json]\n"
		"\n"
		"Memory per GPU for every pipeline stage: weights, gradients, optimizer\n"
		"state, activations, buffers (DP buckets, ZeRO-3 gathers), the fp32 main\n"
		"gradients that 16-bit gradients get only during the optimizer step (step:\n"
		"the total counts the larger of it and activations + buffers) and overhead.\n"
		"Exit 1 with the reason when the peak does not fit in GPU memory.\n"
		"\n"
		"  --cluster C          cluster preset or file (GPU memory and count)\n"
		"  --nodes N            override the cluster's node count\n"
		"  --gpus N, --gpu-mem-gib G   instead of / on top of --cluster\n"
		"  --host-mem-gib G     host memory per node for offload (default: not checked)\n"
		"  --model M            built-in name or Hugging Face config.json\n"
		"%s"
		"  --json               JSON: fits, peak_gib, peak_stage, gpu_mem_gib,\n"
		"                       peak_host_gib, the plan (model, cluster, gpus, tp, pp,\n"
		"                       dp, ep, etp, moe_token_dispatcher (MoE), cp, zero,\n"
		"                       micro_batch, global_batch, micro_batches),\n"
		"                       flops_per_iteration, stages[{stage,\n"
		"                       layers, weights_gib, grads_gib, optimizer_gib,\n"
		"                       step_gib, activations_gib, buffers_gib, overhead_gib,\n"
		"                       total_gib, host_gib}]\n",
		cli_plan_help);
}

enum {
	O_CLUSTER = 256, O_NODES, O_GPUS, O_GPUMEM, O_HOSTMEM, O_MODEL, O_JSON, O_HELP
};

static const struct option opts[] = {
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "nodes", required_argument, NULL, O_NODES },
	{ "gpus", required_argument, NULL, O_GPUS },
	{ "gpu-mem-gib", required_argument, NULL, O_GPUMEM },
	{ "host-mem-gib", required_argument, NULL, O_HOSTMEM },
	{ "model", required_argument, NULL, O_MODEL },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 }
};

static double gib(double b)
{
	return bytes_to_gib(b);
}


static int report(const struct model *m, const struct plan *p, const struct memory_env *env,
		  const struct memory_report *r, const char *cluster, bool json, int gpn)
{
	/* gpn: GPUs per node of the cluster; -1: no cluster (--gpus), one a node */
	int peak = r->peak_stage;
	const struct memory_stage *ps = &r->stage[peak];
	if (json) {
		cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
		cJSON_AddBoolToObject(root, "fits", r->fits);
		cJSON_AddNumberToObject(root, "peak_gib", gib(r->peak_bytes));
		cJSON_AddNumberToObject(root, "peak_stage", peak);
		cJSON_AddNumberToObject(root, "gpu_mem_gib", gib(env->gpu_mem_bytes));
		cJSON_AddNumberToObject(root, "peak_host_gib", gib(r->peak_host_bytes));
		cJSON_AddBoolToObject(root, "images_vary", plan_images_vary(p, m));
		cJSON_AddStringToObject(root, "model", m->name);
		cJSON_AddStringToObject(root, "cluster", cluster);
		cJSON_AddNumberToObject(root, "gpus", env->ngpus);
		cJSON_AddNumberToObject(root, "tp", p->tp);
		cJSON_AddNumberToObject(root, "pp", p->pp);
		cJSON_AddNumberToObject(root, "dp", p->dp);
		cJSON_AddNumberToObject(root, "ep", p->ep);
		cJSON_AddNumberToObject(root, "etp", plan_etp(p));
		if (m->experts > 0) {
			cJSON_AddStringToObject(root, "moe_token_dispatcher",
						plan_dispatcher_name(p->dispatcher));
			cJSON_AddBoolToObject(root, "moe_grouped_gemm", p->moe_grouped_gemm);
		}
		cJSON_AddNumberToObject(root, "cp", p->cp);
		cJSON_AddNumberToObject(root, "zero", p->zero);
		cJSON_AddStringToObject(root, "offload", plan_offload_name(p->offload));
		cJSON_AddStringToObject(root, "recompute", plan_recompute_name(p->recompute));
		cJSON_AddNumberToObject(root, "micro_batch", p->micro_batch);
		cJSON_AddNumberToObject(root, "global_batch", p->global_batch);
		cJSON_AddNumberToObject(root, "micro_batches", plan_microbatches(p));
		cJSON_AddNumberToObject(root, "vocab", plan_vocab(p, m)); /* as trained: padded */
		cJSON_AddNumberToObject(root, "flops_per_iteration", model_flops_iteration(m, p));
		for (int s = 0; s < r->nstages; s++) {
			const struct memory_stage *st = &r->stage[s];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "stage", s);
			cJSON_AddNumberToObject(o, "layers", st->layers);
			cJSON_AddNumberToObject(o, "weights_gib", gib(st->weights_bytes));
			cJSON_AddNumberToObject(o, "grads_gib", gib(st->grads_bytes));
			cJSON_AddNumberToObject(o, "optimizer_gib", gib(st->optimizer_bytes));
			cJSON_AddNumberToObject(o, "step_gib", gib(st->step_bytes));
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
						    ">step", ">overhead", ">total GiB",
						    ">host GiB" };
		struct table t;
		table_init(&t, 11, head);
		for (int s = 0; s < r->nstages; s++) {
			const struct memory_stage *st = &r->stage[s];
			table_cell(&t, "%d", s);
			table_cell(&t, "%d", st->layers);
			table_cell(&t, "%.2f", gib(st->weights_bytes));
			table_cell(&t, "%.2f", gib(st->grads_bytes));
			table_cell(&t, "%.2f", gib(st->optimizer_bytes));
			table_cell(&t, "%.2f", gib(st->activations_bytes));
			table_cell(&t, "%.2f", gib(st->buffers_bytes));
			table_cell(&t, "%.2f", gib(st->step_bytes));
			table_cell(&t, "%.2f", gib(st->overhead_bytes));
			table_cell(&t, "%.2f", gib(st->total_bytes));
			table_cell(&t, "%.2f", gib(st->host_bytes));
		}
		printf("model %s on %s: %d GPUs of %.1f GiB; tp %d pp %d dp %d ep %d%s%s cp %d, "
		       "zero %d, offload %s, recompute %s, micro-batch %d x %d per replica\n\n",
		       m->name, cluster, env->ngpus, gib(env->gpu_mem_bytes), p->tp, p->pp, p->dp,
		       p->ep, plan_etp(p) != p->tp ? " (whole experts, etp 1)" : "",
		       p->dispatcher == PLAN_DISP_ALLGATHER ? " (allgather dispatcher)" : "", p->cp, p->zero, plan_offload_name(p->offload),
		       plan_recompute_name(p->recompute), p->micro_batch, plan_microbatches(p));
		table_print(&t, stdout);
		table_release(&t);
		printf("\npeak %.2f GiB per GPU on stage %d of %.1f GiB: %s\n", gib(r->peak_bytes),
		       peak, gib(env->gpu_mem_bytes),
		       r->fits ? "fits"
		       : r->peak_bytes > env->gpu_mem_bytes ? "does not fit"
							     : "fits, but host memory does not");
		if (plan_images_vary(p, m))
			printf("(images at their mean; predict draws them per sample, and its stage 0 "
			       "holds the heaviest run of micro-batches in flight, which can need more)\n");
	}
	if (!r->fits) {
		/* what the total counts beside the states: the larger of the
		 * activations with the buffers, top-k's gathered gradients
		 * (which take their place) and the step's main gradients, so
		 * that the parts add up to the total (found by an audit: with
		 * top-k the activations and buffers were summed) */
		double live = ps->total_bytes - ps->weights_bytes - ps->grads_bytes -
			      ps->optimizer_bytes - ps->overhead_bytes;
		if (r->peak_bytes > env->gpu_mem_bytes)
			fprintf(stderr,
				"trainsim: error: stage %d needs %.1f GiB of %.1f GiB: weights %.1f, "
				"grads %.1f, optimizer %.1f, %s %.1f, overhead %.1f GiB\n",
				peak, gib(r->peak_bytes), gib(env->gpu_mem_bytes),
				gib(ps->weights_bytes), gib(ps->grads_bytes),
				gib(ps->optimizer_bytes),
				ps->step_bytes >= live ? "fp32 main gradients at the step"
						       : "activations and buffers",
				gib(live), gib(ps->overhead_bytes));
		else
			fprintf(stderr,
				"trainsim: error: offloaded state needs %.1f GiB of host memory per "
				"node (%d GPU%s x %.2f GiB%s), --host-mem-gib gives %.1f GiB\n",
				gib(r->peak_host_bytes) * abs(gpn), abs(gpn), abs(gpn) == 1 ? "" : "s",
				gib(r->peak_host_bytes),
				gpn < 0 ? ": --gpus without a cluster counts a GPU per node" : "",
				gib(env->host_mem_bytes) * abs(gpn));
		return 1;
	}
	return 0;
}

int cmd_memory(int argc, char **argv)
{
	const char *cluster = NULL, *model = NULL;
	long long nodes = 0, gpus = 0;
	double gpu_mem_gib = 0, host_gib = 0;
	bool json = false;
	struct cli_plan_args pa;
	struct option all[96];
	int c, rc = 2, gpus_per_node = 1;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct memory_report *r = NULL;
	struct memory_env env = { .gpu_mem_bytes = 0, .ngpus = 0 };
	struct ts_error err = TS_ERROR_INIT;
	char cname[160] = "command line"; /* a cluster name (63 bytes) and its GPUs */

	cli_plan_args_init(&pa, "memory");
	cli_plan_options(opts, all, TS_ARRAY_LEN(all));
	while ((c = getopt_long(argc, argv, "", all, NULL)) != -1) {
		int taken = cli_plan_args_take(&pa, c, optarg);
		if (taken == 1)
			continue;
		if (taken)
			return 2;
		switch (c) {
		case O_CLUSTER:
			if (cli_once("memory", "--cluster", &cluster, optarg))
				return 2;
			break;
		case O_NODES:
			if (cli_parse_long("memory", "--nodes", optarg, 1, TOPO_MAX_NODES, &nodes))
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
		case O_MODEL:
			if (cli_once("memory", "--model", &model, optarg))
				return 2;
			break;
		case O_JSON: json = true; break;
		case O_HELP: usage(stdout); return 0;
		case '?':
		case ':':
		default: return cli_bad_option("memory", argv);
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
		ts_utf8_trim(cname); /* (a cut could split a character) */
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
	rc = cli_plan_args_apply(&pa, p, &err);
	if (rc == 2)
		goto out;
	if (rc)
		goto fail;
	rc = 2;
	if (plan_check_model(p, m, &err) || cli_plan_check_gpus(p, env.ngpus, cname, &err) ||
	    plan_resolve(p, m, env.ngpus, &err))
		goto fail;
	memory_eval(m, p, &env, r);
	rc = report(m, p, &env, r, cname, json, cluster ? gpus_per_node : -1);
	goto out;
fail:
	rc = cli_fail(&err);
out:
	free(m);
	free(p);
	free(r);
	return rc;
}

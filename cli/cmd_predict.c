/* cmd_predict.c: `trainsim predict`: one training iteration of a model
 * under a parallel plan on a cluster: iteration time, throughput, MFU/HFU,
 * memory and where the time goes; optional Chrome trace and SVG timeline.
 * Exit 1 when the plan needs more GPUs than the cluster has or does not fit
 * in memory (with the reason), 2 on bad input. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/plan_args.h"
#include "common/fileio.h"
#include "common/json.h"
#include "common/rng.h"
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
		"%s"
		"  --fidelity F         analytic (closed forms), flow (default), packet\n"
		"  --exact              simulate every rank instead of one per role\n"
		"  --seed S             RNG seed (default 1)\n"
		"  --calibration FILE   compute-model numbers (JSON) replacing the defaults\n"
		"  --host-dispatch US   the host's time to issue one op of the workload, us\n"
		"                       (replaces the calibration's; default 55, measured with\n"
		"                       eager PyTorch on an H200 machine's host; 0: the host is\n"
		"                       never the bottleneck, e.g. a stack replaying CUDA graphs)\n"
		"  --overlap-slowdown X compute slowdown while communication overlaps it (>= 1)\n"
		"  --replicas K         data-parallel units simulated when folded (default 4; keeps\n"
		"                       the fold where the plan would run every rank)\n"
		"  --jitter X           relative sigma of per-op compute time noise, each op's\n"
		"                       GPU time times a lognormal factor of mean 1 (default 0)\n"
		"  --free-comm          what-if: every communication takes no time\n"
		"  --memo 0|1           reuse the measured time of identical collectives that\n"
		"                       run alone on their hosts' links (what overlaps runs\n"
		"                       live; an EP alltoallv's time scaled to its own loads\n"
		"                       by the analytic model; default 0: every collective\n"
		"                       runs on the network)\n"
		"  --flow-coalesce F    flow: an all-to-all flow's end re-rates the flows it\n"
		"                       leaves up to F of its own time later (ends close\n"
		"                       together share one max-min solve); 0 = exact at every\n"
		"                       instant (default 0.002)\n"
		"  --routing R          ecmp: each connection on one equal-cost path by hash\n"
		"                       (Ethernet/RoCE ECMP); spray: every transfer spread\n"
		"                       evenly over its equal-cost paths (InfiniBand adaptive\n"
		"                       routing, packet spraying); dmodk: each destination's\n"
		"                       static route (InfiniBand's fat-tree routing engine;\n"
		"                       structured fabrics). Default: the cluster's\n"
		"                       \"routing\", else ecmp\n"
		"  --trace FILE         Chrome trace-event JSON (open in Perfetto)\n"
		"  --svg FILE           SVG timeline of the iteration\n"
		"  --json               JSON: routing, iteration_time_s, tokens_per_s,\n"
		"                       tflops_per_gpu, mfu,\n"
		"                       hfu, memory_gib_per_gpu, fits, breakdown {compute_s,\n"
		"                       bubble_s, optimizer_s, host_s (the compute ops' wait\n"
		"                       for the host's dispatch, but the optimizer phase's),\n"
		"                       exposed_comm_s {tp, pp, dp, ep, cp}},\n"
		"                       comm_bytes_per_gpu {..}, expert_load_max and\n"
		"                       expert_load_mean (MoE with ep > 1 or a capacity: the\n"
		"                       busiest and the mean rank's drawn expert load over the\n"
		"                       balanced one),\n"
		"                       gpus, micro_batches, units, units_simulated,\n"
		"                       exact_fallback (exact_fallback_reason), instances,\n"
		"                       ops, events, flows, wall_s, ...\n",
		cli_plan_help);
}

enum {
	O_CLUSTER = 256, O_NODES, O_GPUS, O_GPUMEM, O_HOSTMEM, O_MODEL, O_JSON, O_HELP, O_FID, O_EXACT, O_SEED, O_CAL, O_TRACE, O_SVG, O_SLOW, O_REPL, O_JIT, O_FREE, O_MEMO, O_COAL, O_ROUTING, O_DISP
};

static const struct option opts[] = {
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "nodes", required_argument, NULL, O_NODES },
	{ "model", required_argument, NULL, O_MODEL },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
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
	{ "flow-coalesce", required_argument, NULL, O_COAL },
	{ "routing", required_argument, NULL, O_ROUTING },
	{ "host-dispatch", required_argument, NULL, O_DISP },
	{ NULL, 0, NULL, 0 }
};

/* What ran, two lines: the summary's first and the trace's and SVG's
 * title (found by an audit: a saved SVG did not say what it showed). The
 * second is what a trace or SVG read later also needs to tell one run from
 * another: the settings that move the time, the seed of the draws, the
 * options in use (found by review: neither file said the precision, ZeRO
 * stage, recompute, sequence or seed). Each line printable text (a
 * file name's control bytes or broken UTF-8 as \xNN: the SVG and the
 * trace stay valid); malloc'd, NULL when out of memory. */
static char *run_title(const struct model *m, const struct plan *p, const struct sim_prediction *r,
		       const char *cluster, const char *fid, const char *routing,
		       const struct sim_predict_opts *o, const char *cal, double disp_us)
{
	/* the names are under 300 bytes and the rest under 1,000, so
	 * neither line is cut with the calibration file's name (cleaned
	 * already) beside them; cleaned, a byte takes at most 4 */
	const size_t RAW = 2048 + (cal ? strlen(cal) : 0), OUT = 8 * RAW + 2;
	char *raw = malloc(2 * RAW), *out = malloc(OUT), opt[256];
	size_t at;
	int k = 0;
	if (!raw || !out) {
		free(raw);
		free(out);
		return NULL;
	}
	snprintf(raw, RAW,
		 "model %s on %s: %d GPUs, tp %d pp %d dp %d ep %d%s%s cp %d, %d micro-batches of "
		 "%d, %s schedule, fidelity %s%s, routing %s",
		 m->name, cluster, r->ngpus, p->tp, p->pp, p->dp, p->ep,
		 plan_etp(p) != p->tp ? " (whole experts, etp 1)" : "",
		 p->dispatcher == PLAN_DISP_ALLGATHER ? " (allgather dispatcher)" : "", p->cp,
		 r->micro_batches, p->micro_batch, plan_schedule_name(p->schedule), fid,
		 o->exact ? " (exact)" : "", routing);
	opt[0] = '\0';
	if (o->free_comm)
		k += snprintf(opt + k, sizeof(opt) - (size_t)k, ", communication free");
	if (o->jitter > 0)
		k += snprintf(opt + k, sizeof(opt) - (size_t)k, ", jitter %g", o->jitter);
	if (o->replicas > 0)
		k += snprintf(opt + k, sizeof(opt) - (size_t)k, ", replicas %d", o->replicas);
	if (o->overlap_slowdown > 0)
		k += snprintf(opt + k, sizeof(opt) - (size_t)k, ", overlap slowdown %g",
			      o->overlap_slowdown);
	if (disp_us >= 0)
		k += snprintf(opt + k, sizeof(opt) - (size_t)k, ", host dispatch %g us", disp_us + 0.0);
	if (o->memo)
		snprintf(opt + k, sizeof(opt) - (size_t)k, ", memoised collectives");
	snprintf(raw + RAW, RAW, "seq %d, %s, zero %d%s%s%s, recompute %s%s%s%s%s, seed %llu%s%s%s",
		 p->seq_len, plan_dtype_name(p->precision), p->zero,
		 p->distributed_optimizer ? ", distributed optimizer" : "",
		 p->offload != PLAN_OFF_NONE ? ", offload " : "",
		 p->offload != PLAN_OFF_NONE ? plan_offload_name(p->offload) : "",
		 plan_recompute_name(p->recompute),
		 p->compression != PLAN_CMP_NONE ? ", compression " : "",
		 p->compression != PLAN_CMP_NONE ? plan_compress_name(p->compression) : "",
		 p->sync != PLAN_SYNC_EVERY_STEP ? ", sync " : "",
		 p->sync != PLAN_SYNC_EVERY_STEP ? plan_sync_name(p->sync) : "",
		 (unsigned long long)o->seed, opt, cal ? ", calibration " : "", cal ? cal : "");
	at = json_clean_text(out, OUT, 0, raw, strlen(raw));
	out[at++] = '\n';
	json_clean_text(out, OUT, at, raw + RAW, strlen(raw + RAW));
	free(raw);
	return out;
}

static int report(const struct model *m, const struct plan *p, const struct sim_prediction *r,
		  const char *cluster, const char *fid, bool exact, const char *cal,
		  const struct sim_compute *comp, const char *routing, const char *title, bool json)
{
	static const char *const comm[] = { "tp", "pp", "dp", "ep", "cp" };
	if (json) {
		cJSON *root = cJSON_CreateObject(), *bd = cJSON_CreateObject();
		cJSON *ex = cJSON_CreateObject(), *cb = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "model", m->name);
		cJSON_AddStringToObject(root, "cluster", cluster);
		cJSON_AddStringToObject(root, "fidelity", fid);
		cJSON_AddStringToObject(root, "routing", routing);
		cJSON_AddBoolToObject(root, "exact", exact);
		if (cal)
			cJSON_AddStringToObject(root, "calibration", cal);
		else
			cJSON_AddNullToObject(root, "calibration");
		cJSON_AddStringToObject(root, "compute_model", comp->source);
		cJSON_AddNumberToObject(root, "host_dispatch_us", comp->dispatch_s * 1e6);
		if (m->note[0]) /* what the model config left to a guess */
			cJSON_AddStringToObject(root, "model_note", m->note);
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
		cJSON_AddNumberToObject(bd, "host_s", r->bd.host_s);
		for (int k = 0; k < SIM_COMM_COUNT; k++) {
			cJSON_AddNumberToObject(ex, comm[k], r->bd.exposed_comm_s[k]);
			cJSON_AddNumberToObject(cb, comm[k], r->comm_bytes[k]);
		}
		cJSON_AddItemToObject(bd, "exposed_comm_s", ex);
		cJSON_AddItemToObject(root, "breakdown", bd);
		cJSON_AddItemToObject(root, "comm_bytes_per_gpu", cb);
		cJSON_AddNumberToObject(root, "critical_stage", r->critical_stage);
		if (r->expert_load_max > 0) {
			cJSON_AddNumberToObject(root, "expert_load_max", r->expert_load_max);
			cJSON_AddNumberToObject(root, "expert_load_mean", r->expert_load_mean);
		}
		cJSON_AddNumberToObject(root, "gpus", r->ngpus);
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
		cJSON_AddNumberToObject(root, "global_batch", p->global_batch);
		cJSON_AddNumberToObject(root, "micro_batches", r->micro_batches);
		/* what the table's first line says too (found by review) */
		cJSON_AddNumberToObject(root, "micro_batch", p->micro_batch);
		cJSON_AddNumberToObject(root, "seq_len", p->seq_len);
		cJSON_AddStringToObject(root, "schedule", plan_schedule_name(p->schedule));
		if (p->schedule == PLAN_SCHED_INTERLEAVED)
			cJSON_AddNumberToObject(root, "virtual_stages", p->virtual_stages);
		cJSON_AddNumberToObject(root, "vocab", plan_vocab(p, m)); /* as trained: padded */
		cJSON_AddNumberToObject(root, "model_flops", r->model_flops);
		cJSON_AddNumberToObject(root, "hardware_flops", r->hw_flops);
		cJSON_AddNumberToObject(root, "instances", r->instances);
		cJSON_AddNumberToObject(root, "units", r->units);
		cJSON_AddNumberToObject(root, "units_simulated", r->units_simulated);
		cJSON_AddBoolToObject(root, "exact_fallback", r->exact_fallback);
		if (r->exact_fallback)
			cJSON_AddStringToObject(root, "exact_fallback_reason", r->exact_why);
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
		/* against the BF16 peak, also under fp8, whose GEMMs run at the
		 * FP8 peak: said, since it can pass 100 % there */
		table_cell(&t, p->precision == PLAN_DT_FP8 ? "MFU (of the BF16 peak)" : "MFU");
		table_cell(&t, "%.1f %%", 100 * r->mfu);
		/* HFU on the FLOPs executed: below MFU where flash attention
		 * skips the causal mask's half that MFU's count keeps (found by
		 * an audit: "HFU 50.0 %" under "MFU 53.0 %" looked wrong) */
		table_cell(&t, p->precision == PLAN_DT_FP8 ? "HFU (executed, BF16 peak)"
							 : "HFU (executed FLOPs)");
		table_cell(&t, "%.1f %%", 100 * r->hfu);
		table_cell(&t, "memory per GPU (worst)");
		table_cell(&t, "%.2f GiB%s", r->memory_gib_per_gpu, r->fits ? "" : " (does not fit)");
		table_cell(&t, "compute");
		table_cell(&t, "%.4f s", r->bd.compute_s);
		table_cell(&t, "pipeline bubble");
		table_cell(&t, "%.4f s", r->bd.bubble_s);
		table_cell(&t, "optimizer");
		table_cell(&t, "%.4f s", r->bd.optimizer_s);
		table_cell(&t, "host dispatch wait");
		table_cell(&t, "%.4f s", r->bd.host_s);
		for (int k = 0; k < SIM_COMM_COUNT; k++) {
			table_cell(&t, "exposed %s communication", comm[k]);
			table_cell(&t, "%.4f s", r->bd.exposed_comm_s[k]);
		}
		if (r->expert_load_max > 0) {
			table_cell(&t, "expert load, busiest rank");
			table_cell(&t, "%.3f x balanced", r->expert_load_max);
			if (fabs(r->expert_load_mean - 1) > 5e-4) { /* dropped or padded */
				table_cell(&t, "expert load, mean rank");
				table_cell(&t, "%.3f x balanced", r->expert_load_mean);
			}
		}
		printf("%s\n\n", title);
		table_print(&t, stdout);
		table_release(&t);
		/* (a file without "source" is named in it already: found by
		 * review, the name came twice) */
		bool named = cal && strstr(comp->source, cal);
		printf("\ncompute model: %s%s%s\n", comp->source, cal && !named ? "; file " : "",
		       cal && !named ? cal : "");
		if (m->note[0])
			printf("model: %s\n", m->note);
		if (!cal && comp->measured_defaults) /* README, Accuracy: bench_kernels */
			printf("(kernel efficiencies measured on an H200 with PyTorch's cuBLAS, "
			       "cuDNN and grouped GEMMs; a --calibration file fitted to your own "
			       "stack's iterations replaces them)\n");
		else if (!cal) /* README, Accuracy: --calibration none on the vTrain set */
			printf("(uncalibrated: these defaults predict 14-60 %% short of the measured "
			       "A100 runs in the README's accuracy set; a --calibration file fitted "
			       "to the GPU and software stack removes that)\n");
		/* what a host-bound run is told (found by review: the host's
		 * waits were counted as compute) */
		if (r->bd.host_s > 0.2 * r->iteration_time_s)
			printf("(host-bound: %.0f %% of the iteration waits for the host to issue "
			       "kernels at %.0f us an op; a stack of fused kernels or CUDA graphs "
			       "issues faster: --host-dispatch US)\n",
			       100 * r->bd.host_s / r->iteration_time_s, comp->dispatch_s * 1e6);
		printf("\nbreakdown along the critical path (compute: stage %d); %d representative "
		       "ranks, %lld ops, %llu events, "
		       "%.2f s wall\n",
		       r->critical_stage, r->instances, (long long)r->ops,
		       (unsigned long long)r->events, r->wall_s);
		if (r->exact_fallback)
			printf("%s: every rank simulated (as --exact)\n", r->exact_why);
		else if (r->units_differ)
			printf("the placement puts data-parallel units differently in the fabric: %d "
			       "of %d simulated%s\n",
			       r->units_simulated, r->units,
			       r->units_simulated < r->units ? " (too many to simulate all folded; "
							       "--exact simulates every rank)" :
							       "");
	}
	return 0;
}

/* Packet fidelity: refuse a run estimated past PACKET_MAX_S (found by
 * review: the quick start's plan ran for some 20 minutes). The analytic
 * level gives each simulated rank's traffic; its payload over the fabric's
 * packet size, at the fastest rate the packet model reaches (a bare
 * collective's), bounds the time from below: the quick start's plan on 16
 * nodes with 2 images of 544 tokens and global batch 64 moves 1.8e8
 * packets, 23 s at that rate, and ran 406 s. */
static int packet_too_long(const struct topo *t, const struct model *m, const struct plan *p,
			   const struct sim_predict_opts *o, struct ts_error *err)
{
	struct sim_predict_opts a = *o;
	struct sim_prediction r;
	double mtu = cli_packet_mtu(t), bytes = 0, pk, s_est;
	a.fidelity = SIM_ANALYTIC;
	a.timeline = false;
	int rc = sim_predict(t, m, p, &a, &r, err);
	if (rc)
		return rc;
	for (int k = 0; k < SIM_COMM_COUNT; k++)
		bytes += r.comm_bytes[k];
	pk = bytes * r.instances / mtu;
	sim_prediction_release(&r);
	s_est = cli_packet_s(t, pk);
	if (s_est > PACKET_MAX_S)
		return ts_error_set(err, TS_EINPUT,
				    "--fidelity packet: the iteration's simulated ranks move some %.2g "
				    "packets of %.0f B, at least %.0f minutes of simulation here (the "
				    "bound is %.0f); use --fidelity flow",
				    pk, mtu, s_est / 60, PACKET_MAX_S / 60);
	return 0;
}

/* The plan does not fit: why, on stderr (files: a trace or SVG was asked).
 * Stage 0 holds the encoder activations of the images drawn, which can
 * exceed what `memory` counts at the mean images: then both figures are
 * given, so that `memory` saying the plan fits does not contradict this
 * (found by review: the quick start's plan at --seq-len 14336 needed 83.6
 * GiB here and 73.7 GiB there, with "see trainsim memory"). */
static void not_fit_msg(const struct sim_prediction *r, const struct topo_cluster *cl,
			const struct model *m, const struct plan *p, unsigned long long seed,
			bool files)
{
	struct memory_env env = { .gpu_mem_bytes = cl->gpu.mem_bytes, .ngpus = r->ngpus };
	struct memory_report *mean = malloc(sizeof(*mean));
	char why[200] = "see trainsim memory";
	if (mean) {
		memory_eval(m, p, &env, mean);
		/* (apart as printed) */
		if (floor(10 * bytes_to_gib(mean->peak_bytes) + 0.5) <
		    floor(10 * r->memory_gib_per_gpu + 0.5))
			snprintf(why, sizeof(why),
				 "with the images drawn by --seed %llu on stage 0; %.1f GiB at the "
				 "mean images, as trainsim memory counts them",
				 seed, bytes_to_gib(mean->peak_bytes));
		free(mean);
	}
	fprintf(stderr,
		"trainsim: error: the plan does not fit in GPU memory: %.1f GiB per GPU needed, "
		"%.1f GiB available (%s)%s\n",
		r->memory_gib_per_gpu, bytes_to_gib(cl->gpu.mem_bytes), why,
		files ? "; no trace or SVG written" : "");
}

int cmd_predict(int argc, char **argv)
{
	const char *cluster = NULL, *model = NULL;
	const char *cal = NULL, *trace = NULL, *svg = NULL, *fid = "flow";
	long long nodes = 0, seed = 1, repl = 0, memo = 0;
	double slow = 0, jit = 0, disp_us = -1;
	bool json = false, exact = false, free_comm = false;
	char warn[4 * 4096 + 600] = "", *title = NULL, *calc = NULL;
	struct cli_plan_args pa;
	struct option all[96];
	int c, rc = 2, routing = -1;
	struct model *m = NULL;
	struct plan *p = NULL;
	struct afile trace_file = AFILE_INIT, svg_file = AFILE_INIT;
	struct topo_cluster cl;
	struct topo t;
	bool have_cl = false, have_t = false;
	struct sim_compute comp;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	char cname[160] = ""; /* a cluster name (63 bytes) and its GPUs */

	memset(&r, 0, sizeof(r));
	sim_predict_opts_init(&o);
	cli_plan_args_init(&pa, "predict");
	cli_plan_options(opts, all, TS_ARRAY_LEN(all));
	while ((c = getopt_long(argc, argv, "", all, NULL)) != -1) {
		int taken = cli_plan_args_take(&pa, c, optarg);
		if (taken == 1)
			continue;
		if (taken)
			return 2;
		switch (c) {
		case O_CLUSTER:
			if (cli_once("predict", "--cluster", &cluster, optarg))
				return 2;
			break;
		case O_NODES:
			if (cli_parse_long("predict", "--nodes", optarg, 1, TOPO_MAX_NODES, &nodes))
				return 2;
			break;
		case O_MODEL:
			if (cli_once("predict", "--model", &model, optarg))
				return 2;
			break;
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
			if (cli_parse_long("predict", "--seed", optarg, 0, RNG_SEED_MAX, &seed))
				return 2;
			break;
		case O_CAL:
			if (cli_once("predict", "--calibration", &cal, optarg))
				return 2;
			break;
		case O_TRACE:
			if (cli_once("predict", "--trace", &trace, optarg))
				return 2;
			break;
		case O_SVG:
			if (cli_once("predict", "--svg", &svg, optarg))
				return 2;
			break;
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
		case O_COAL:
			if (cli_parse_double("predict", "--flow-coalesce", optarg, 0, 0.5, &o.coalesce))
				return 2;
			break;
		case O_DISP:
			if (disp_us >= 0)
				return cli_usage("predict", "--host-dispatch given twice");
			if (cli_parse_double("predict", "--host-dispatch", optarg, 0, 999999, &disp_us))
				return 2;
			break;
		case O_ROUTING:
			if (cli_parse_routing("predict", optarg, &routing))
				return 2;
			break;
		case O_GPUS:
		case O_GPUMEM:
		case O_HOSTMEM:
		case '?':
		case ':':
		default: return cli_bad_option("predict", argv);
		}
	}
	if (optind < argc)
		return cli_usage("predict", "unexpected argument '%s'", argv[optind]);
	if (!model)
		return cli_usage("predict", "needs --model");
	if (!cluster)
		return cli_usage("predict", "needs --cluster");
	if (trace && svg && fileio_same_file(trace, svg))
		return cli_usage("predict", "--trace and --svg name the same file '%s'", trace);
	{
		/* (a preset's or built-in's name is no file, even where one of
		 * that name exists: the loaders' own rule) */
		const char *in[] = { topo_cluster_names_file(cluster) ? cluster : NULL,
				     model_names_file(model) ? model : NULL, pa.plan_path, pa.ds_path,
				     cal };
		if (cli_out_not_input("predict", "--trace", trace, in, 5) ||
		    cli_out_not_input("predict", "--svg", svg, in, 5))
			return 2;
	}

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
	ts_utf8_trim(cname); /* (names of whole characters; a cut could split one) */
	if (model_load(m, model, &err))
		goto fail;
	rc = cli_plan_args_apply(&pa, p, &err);
	if (rc == 2)
		goto out;
	if (rc)
		goto fail;
	rc = 2;
	/* more GPUs than the cluster has: a valid plan that cannot run here */
	if (plan_check_model(p, m, &err))
		goto fail;
	if (cli_plan_check_gpus(p, (long long)cl.node.gpus * cl.nodes, cl.name, &err))
		goto fail;
	if (plan_resolve(p, m, cl.node.gpus * cl.nodes, &err))
		goto fail;
	sim_compute_init(&comp, &cl.gpu);
	if (cal && sim_compute_load(&comp, cal, &err))
		goto fail;
	if (disp_us >= 0) { /* (said in the compute model's line, as in --json) */
		size_t n = strlen(comp.source);
		comp.dispatch_s = (disp_us + 0.0) * 1e-6; /* (-0 as 0) */
		snprintf(comp.source + n, sizeof(comp.source) - n, "; --host-dispatch sets it to %g us",
			 disp_us + 0.0);
	}
	/* said once the prediction stands: a failure's stderr is its one
	 * error line (found by review: warning and error made two) */
	/* (GPU names match whatever their case: found by review, a file's
	 * "a100-sxm4-80gb" warned against A100-SXM4-80GB) */
	/* the calibration file's name as the reports show it: printable, a
	 * byte that is not UTF-8 as \xNN (the JSON stays valid UTF-8), as the
	 * compute model's source names it, and whole in the warning, so the
	 * names after it stay (a long one cut the line mid-character: seen in
	 * review) */
	if (cal) {
		size_t n = 4 * strlen(cal) + 1;
		calc = malloc(n);
		if (!calc) {
			ts_error_set(&err, TS_ENOMEM, "out of memory");
			goto fail;
		}
		json_clean_text(calc, n, 0, cal, strlen(cal));
	}
	if (cal && comp.gpu[0] && strcasecmp(comp.gpu, cl.gpu.name)) {
		snprintf(warn, sizeof(warn) - 1,
			 "trainsim: warning: calibration %s is for GPU '%s', the cluster's is '%s'",
			 calc, comp.gpu, cl.gpu.name);
		ts_one_line(warn); /* (the names are the files' strings) */
		size_t n = strlen(warn); /* (one byte was kept for the line end) */
		warn[n] = '\n';
		warn[n + 1] = '\0';
	}
	if (cli_apply_routing(&cl, routing, &err))
		goto fail;
	o.spray = cl.fabric.routing == TOPO_ROUTING_SPRAY;
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
	/* an output that cannot be written is said before the simulation runs
	 * (a temporary file is made beside it and removed) */
	for (int k = 0; k < 2; k++) {
		const char *path = k ? svg : trace;
		struct afile a;
		if (!path)
			continue;
		/* the option named (found by review; blanks alone too, found
		 * by a fuzzer) */
		if (ts_path_blank(path)) {
			ts_error_set(&err, TS_EINPUT, "%s: the file name is empty or blank",
				     k ? "--svg" : "--trace");
			goto fail;
		}
		if (afile_open(&a, path, &err))
			goto fail;
		afile_abort(&a);
	}
	if (o.fidelity == SIM_PACKET && packet_too_long(&t, m, p, &o, &err))
		goto fail;
	if (sim_predict(&t, m, p, &o, &r, &err))
		goto fail;
	title = run_title(m, p, &r, cname, fid, topo_routing_names[t.cl.fabric.routing], &o, calc,
			  disp_us);
	if (!title) {
		ts_error_set(&err, TS_ENOMEM, "out of memory");
		goto fail;
	}
	/* the files written (not yet in place) before the report: one that
	 * cannot be written leaves no report on stdout (found by an audit,
	 * 2026-12-06: a whole --json report came out of a run that failed),
	 * and a report that cannot be written leaves no trace or SVG (found by
	 * review); a plan that does not fit is reported (exit 1) but leaves no
	 * timeline of a run that cannot happen */
	if (r.fits && trace && sim_trace_write_json(&r, trace, title, &trace_file, &err))
		goto fail;
	if (r.fits && svg && sim_trace_write_svg(&r, svg, title, &svg_file, &err))
		goto fail;
	rc = report(m, p, &r, cname, fid, exact, calc, &comp,
		    topo_routing_names[t.cl.fabric.routing], title, json);
	if (!rc)
		rc = cli_flush_stdout();
	/* in place once the report is out (found by review: removing them
	 * after a lost report removed a file the run had replaced, or the
	 * symbolic link to it) */
	if (!rc && r.fits && trace && afile_commit(&trace_file, &err))
		goto fail;
	if (!rc && r.fits && svg && afile_commit(&svg_file, &err))
		goto fail;
	if (rc && !r.fits)
		not_fit_msg(&r, &cl, m, p, (unsigned long long)seed, false); /* (the reason stands; as memory does) */
	if (rc)
		goto out;
	if (r.fits && warn[0])
		fputs(warn, stderr);
	if (!r.fits) {
		not_fit_msg(&r, &cl, m, p, (unsigned long long)seed, trace || svg);
		rc = 1;
	}
	goto out;
fail:
	rc = cli_fail(&err);
out:
	afile_abort(&trace_file); /* (safe after commit, and unopened) */
	afile_abort(&svg_file);
	sim_prediction_release(&r);
	if (have_t)
		topo_release(&t);
	if (have_cl)
		topo_cluster_release(&cl);
	free(title);
	free(calc);
	free(m);
	free(p);
	return rc;
}

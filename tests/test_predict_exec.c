/* test_predict_exec.c: the workload builder and the iteration executor:
 * pipeline bubble closed forms with free communication, folded vs exact,
 * replica variation, the seeds' optimisations, traces. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>

#include "common/fileio.h"
#include "models/workload.h"
#include "sim/exec.h"
#include "testutil.h"

static struct topo topo;
static struct model model;

/* GPT-2-style dense model with a tiny vocabulary so that every pipeline
 * stage does the same work (the closed forms assume equal stages). */
static const char *eq_model = "{\"n_embd\": 4096, \"n_layer\": 16, \"n_head\": 32, "
			      "\"vocab_size\": 16, \"n_positions\": 4096, \"model_type\": \"gpt2\"}";
/* examples/clusters/clos3-pods.json */
static const char *clos3_pods =
	"{\"preset\": \"h100-roce-leafspine\", \"fabric\": {\"type\": \"clos3\", \"switch_ports\": 64, "
	"\"pods\": 4, \"leaves\": 8, \"spines\": 8, \"hosts_per_leaf\": 32, \"uplinks_per_leaf\": 32, "
	"\"super_spines\": 16, \"spine_uplinks\": 8}, \"nodes\": 128}";
static const char *small_model = "{\"n_embd\": 1024, \"n_layer\": 8, \"n_head\": 16, "
				 "\"vocab_size\": 1000, \"n_positions\": 2048, \"model_type\": \"gpt2\"}";

static void load_topo(const char *preset, int nodes)
{
	struct topo_cluster cl;
	struct ts_error err = TS_ERROR_INIT;
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, preset, nodes, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
}

/* nodes DGX H100 nodes with ranks placed by a seeded random shuffle. */
static void load_random_topo(int nodes, uint64_t seed)
{
	struct topo_cluster cl;
	struct ts_error err = TS_ERROR_INIT;
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, "dgx-h100-ndr", nodes, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_placement_parse(&cl, "random", &err) == 0, "%s", err.msg);
	cl.seed = seed;
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
}

static void load_model_json(const char *text)
{
	struct jdoc d = JDOC_INIT;
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_int_eq(jdoc_parse(&d, "model.json", text, strlen(text), &err), 0);
	ck_assert_msg(model_from_json(&model, &d, &err) == 0, "%s", err.msg);
	jdoc_release(&d);
}

static void resolve(struct plan *p)
{
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_msg(plan_resolve(p, &model, topo.ngpus, &err) == 0, "%s", err.msg);
}

/* The plan predicted into r. Most tests check a mechanism against a
 * closed form that leaves the host out: where o gives no compute model they
 * run with the defaults but the host's dispatch at 0 (the default since
 * 2026-12-04 is the host time measured on the H200 machine, 55 us an op,
 * which makes their tiny models host-bound); the host_dispatch_* and
 * default_dispatch_* tests give their own. */
static void run(const struct plan *p, struct sim_predict_opts *o, struct sim_prediction *r)
{
	struct ts_error err = TS_ERROR_INIT;
	struct sim_predict_opts oo = *o;
	struct sim_compute host_free;
	if (!oo.compute) {
		sim_compute_init(&host_free, &topo.cl.gpu);
		host_free.dispatch_s = 0;
		oo.compute = &host_free;
	}
	ck_assert_msg(sim_predict(&topo, &model, p, &oo, r, &err) == 0, "%s", err.msg);
	ck_assert(r->iteration_time_s > 0 && isfinite(r->iteration_time_s));
}

/* The plan at the analytic level into a and at flow level into f, folded,
 * from default options (o: the flow run's, for more runs). */
static void run_levels(const struct plan *p, struct sim_predict_opts *o, struct sim_prediction *a,
		       struct sim_prediction *f)
{
	sim_predict_opts_init(o);
	o->fidelity = SIM_ANALYTIC;
	run(p, o, a);
	o->fidelity = SIM_FLOW;
	run(p, o, f);
}

static double exposed_total(const struct sim_prediction *r)
{
	double s = 0;
	for (int k = 0; k < SIM_COMM_COUNT; k++)
		s += r->bd.exposed_comm_s[k];
	return s;
}

/* ---- bubble ------------------------------------------------------------------ */

START_TEST(bubble_closed_forms)
{
	/* Narayanan SC'21 §2.2: (p-1)/m for 1F1B and GPipe, (p-1)/(v m) interleaved. */
	static const struct { int sched, v; } cases[] = {
		{ PLAN_SCHED_1F1B, 1 }, { PLAN_SCHED_GPIPE, 1 }, { PLAN_SCHED_INTERLEAVED, 2 }
	};
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double want, got;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(eq_model);
	/* at 16 and 8 micro-batches (found by an audit: one point alone) */
	for (int gb = 32; gb >= 16; gb /= 2) {
		plan_init(&p);
		p.tp = 2;
		p.pp = 4;
		p.global_batch = gb;
		p.schedule = (enum plan_schedule)cases[_i].sched;
		p.virtual_stages = cases[_i].v;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.free_comm = true;
		run(&p, &o, &r);
		want = (p.pp - 1.0) / (cases[_i].v * plan_microbatches(&p));
		got = r.bd.bubble_s / r.bd.compute_s;
		ck_assert_msg(fabs(got / want - 1) < 0.01, "schedule %d, %d micro-batches: bubble %.5f, want %.5f",
			      cases[_i].sched, plan_microbatches(&p), got, want);
		ck_assert_double_lt(exposed_total(&r), 1e-12);
		sim_prediction_release(&r);
	}
	topo_release(&topo);
}
END_TEST

/* ---- folded vs exact ------------------------------------------------------------ */

/* Folded against --exact under options o: within 1 % on fewer instances,
 * or, where folded falls back to every rank (fallback), the same instances
 * and time: with fallback this checks only the policy (that folded runs
 * every rank here), as both runs are then the same simulation. */
static void folded_vs_exact_with(struct plan *p, struct sim_predict_opts o, bool fallback)
{
	struct sim_prediction a, b;
	o.exact = false;
	run(p, &o, &a);
	o.exact = true;
	run(p, &o, &b);
	ck_assert_int_eq(a.exact_fallback, fallback);
	if (fallback) {
		ck_assert_int_eq(a.instances, b.instances);
		ck_assert_msg(a.iteration_time_s == b.iteration_time_s, "folded %.9f s vs exact %.9f s",
			      a.iteration_time_s, b.iteration_time_s);
	} else {
		ck_assert_int_gt(b.instances, a.instances);
		ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.01,
			      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
}

/* Folded over every unit (named: it keeps the fold where a MoE plan with
 * overlap.dp would run every rank) against --exact, within 1 %. */
static void folded_all_units_vs_exact(struct plan *p)
{
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	sim_predict_opts_init(&o);
	o.exact = true;
	run(p, &o, &b);
	o.exact = false;
	o.replicas = b.units;
	run(p, &o, &a);
	ck_assert(!a.exact_fallback);
	ck_assert_int_eq(a.units_simulated, a.units);
	ck_assert_int_gt(b.instances, a.instances);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.01,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
}

static void folded_vs_exact_as(struct plan *p, bool fallback)
{
	struct sim_predict_opts o;
	sim_predict_opts_init(&o);
	folded_vs_exact_with(p, o, fallback);
}

static void folded_vs_exact(struct plan *p)
{
	folded_vs_exact_as(p, false);
}

START_TEST(folded_exact_dense_16)
{
	struct plan p;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 4;
	p.global_batch = 32;
	p.seq_len = 1024;
	resolve(&p);
	folded_vs_exact(&p);
	topo_release(&topo);
}
END_TEST

START_TEST(folded_exact_moe_64)
{
	struct plan p;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 8);
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.ep = 8;
	p.sp = true;
	p.distributed_optimizer = true;
	p.global_batch = 32;
	p.seq_len = 2048;
	p.images_per_sample.value = 2;
	p.image_tokens.value = 256;
	resolve(&p);
	ck_assert_int_eq(p.tp * p.pp * p.dp, 64);
	/* folded as by default, and with one unit standing for the others
	 * (found by an audit: the default fold simulates every unit here, so
	 * only the ranks inside a unit were folded): each within 1 % of
	 * every rank */
	{
		struct sim_predict_opts o;
		struct sim_prediction a, one, b;
		sim_predict_opts_init(&o);
		o.exact = true;
		run(&p, &o, &b);
		o.exact = false;
		run(&p, &o, &a);
		o.replicas = 1;
		run(&p, &o, &one);
		ck_assert(!a.exact_fallback && !one.exact_fallback);
		ck_assert_int_gt(b.instances, a.instances);
		ck_assert_int_eq(one.units_simulated, 1);
		ck_assert_int_gt(one.units, 1);
		ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.01,
			      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
		ck_assert_msg(fabs(one.iteration_time_s / b.iteration_time_s - 1) < 0.01,
			      "one unit for %d: %.6f s vs exact %.6f s", (int)one.units,
			      one.iteration_time_s, b.iteration_time_s);
		sim_prediction_release(&a);
		sim_prediction_release(&one);
		sim_prediction_release(&b);
	}
	topo_release(&topo);
}
END_TEST

/* A random placement puts some units' TP groups inside a node and others'
 * across two: folded simulates every unit then (they do not stand for each
 * other; before, the 4 simulated waited at every op for the worst of the 8
 * units they covered: +2.6 % here, +5.7 % on a 2:1 leaf-spine). (Up to
 * 512 GPUs such units, with their ranks' pipeline sends on hashed paths,
 * run as --exact: unalike_units_hashed_exact; replicas keeps the fold.) */
START_TEST(folded_exact_random_placement)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	struct ts_error err = TS_ERROR_INIT;
	load_random_topo(8, 9);
	ck_assert_msg(model_load(&model, "qwen3-vl-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 4;
	p.pp = 2;
	p.sp = true;
	p.distributed_optimizer = true;
	p.global_batch = 32;
	resolve(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	ck_assert(a.exact_fallback);
	sim_prediction_release(&a);
	o.replicas = 8;
	folded_vs_exact_with(&p, o, false);
	run(&p, &o, &a);
	ck_assert(a.units_differ);
	ck_assert_int_eq(a.units_simulated, a.units);
	ck_assert_int_eq(a.units, 8);
	sim_prediction_release(&a);
	topo_release(&topo);
	/* linear placement: units alike, 4 of 8 stand for all (their TP
	 * groups stay in the hosts: no unit's exchange crosses the network) */
	o.replicas = 0;
	load_topo("dgx-h100-ndr", 8);
	for (int f = 0; f < 2; f++) {
		o.fidelity = f ? SIM_FLOW : SIM_ANALYTIC;
		run(&p, &o, &a);
		ck_assert(!a.units_differ);
		ck_assert_int_eq(a.units_simulated, 4);
		sim_prediction_release(&a);
	}
	topo_release(&topo);
}
END_TEST

/* Units of several positions (EP 2 here) whose positions sit differently:
 * every rank is simulated (found by review: the units' fold waited for the
 * worst placed position at each op, +2.1 % over --exact). */
START_TEST(folded_exact_random_placement_ep)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	load_random_topo(8, 9);
	load_model_json("{\"hidden_size\": 1024, \"num_hidden_layers\": 4, "
			"\"num_attention_heads\": 16, \"num_key_value_heads\": 4, "
			"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"intermediate_size\": "
			"2048, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
			"\"moe_intermediate_size\": 256, \"model_type\": \"qwen3_moe\"}");
	plan_init(&p);
	p.tp = 2;
	p.ep = 2;
	p.sp = true;
	p.global_batch = 64;
	p.seq_len = 1024;
	resolve(&p);
	folded_vs_exact_as(&p, true);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	ck_assert(a.exact_fallback);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* A data-parallel ring over more than 64 ranks runs as its steady state
 * (one flow per edge and channel); its time agrees with the analytic
 * model's: NCCL's ring latency (intra-node steps at NVLink's, the 2(nodes
 * - 1) that cross nodes at the network's) and rings that keep to one NIC
 * rail between nodes (before: 14 us on every step and rings across rails
 * through the spine, 9.41 against 3.06 ms here). */
START_TEST(fluid_ring_matches_analytic)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f;
	load_topo("dgx-h100-ndr", 9);
	load_model_json(small_model);
	plan_init(&p);
	p.dp = 72;
	p.global_batch = 72;
	p.seq_len = 1024;
	/* (reduce-scatter and all-gather: rings only, as in NCCL; an
	 * all-reduce this large may take NCCL's tree: big_allreduce_tree) */
	p.distributed_optimizer = true;
	resolve(&p);
	run_levels(&p, &o, &a, &f);
	ck_assert_double_gt(a.bd.exposed_comm_s[SIM_COMM_DP], 0);
	ck_assert_msg(fabs(f.bd.exposed_comm_s[SIM_COMM_DP] / a.bd.exposed_comm_s[SIM_COMM_DP] - 1) <
			      0.1,
		      "flow %.6f vs analytic %.6f s", f.bd.exposed_comm_s[SIM_COMM_DP],
		      a.bd.exposed_comm_s[SIM_COMM_DP]);
	sim_prediction_release(&a);
	sim_prediction_release(&f);
	topo_release(&topo);
}
END_TEST

/* The overlap slowdown slows compute only while the rank's communication
 * runs: hiding the TP input-gradient all-reduce behind the wgrad GEMM is
 * never worse than running them in series, and gains at least c (1 - 1/X)
 * of the hidden time c (found by review: the whole op was slowed when any
 * communication ran at its start, 9 % worse than serial at X = 2). */
START_TEST(overlap_slowdown_only_while_overlapped)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction ov, ser;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 2;
	p.global_batch = 32;
	p.seq_len = 4096;
	p.flash_attention = true;
	p.distributed_optimizer = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.overlap_slowdown = 2;
	p.overlap_tp_grad = true;
	run(&p, &o, &ov);
	p.overlap_tp_grad = false;
	run(&p, &o, &ser);
	ck_assert_msg(ov.iteration_time_s < ser.iteration_time_s, "overlapped %.6f vs serial %.6f s",
		      ov.iteration_time_s, ser.iteration_time_s);
	/* the hidden TP time c: serial's exposed TP less the overlapped's */
	{
		double c = ser.bd.exposed_comm_s[SIM_COMM_TP] - ov.bd.exposed_comm_s[SIM_COMM_TP];
		ck_assert_double_gt(c, 0);
		ck_assert_msg(ser.iteration_time_s - ov.iteration_time_s > 0.99 * c * (1 - 1 / 2.0),
			      "gain %.6f s, hidden %.6f s", ser.iteration_time_s - ov.iteration_time_s, c);
	}
	/* and by how much: processor sharing, a kernel of w s that runs o s
	 * beside its rank's communication moves o/2 of its work then and
	 * takes w + o/2 at a slowdown of 2; one beside none, w (found by an
	 * audit: only the gain's lower bound was checked, and a speed of
	 * 1/sqrt(2) passed) */
	{
		struct sim_prediction x1, x2;
		int beside = 0, alone = 0;
		p.overlap_tp_grad = true;
		o.timeline = true;
		run(&p, &o, &x2);
		o.overlap_slowdown = 1;
		run(&p, &o, &x1);
		ck_assert_int_eq(x1.tl->n, x2.tl->n);
		int32_t *cm = malloc((size_t)x2.tl->n * sizeof(int32_t)), ncm = 0;
		ck_assert_ptr_nonnull(cm);
		for (int32_t j = 0; j < x2.tl->n; j++)
			if (x2.tl->s[j].coll >= 0)
				cm[ncm++] = j;
		for (int32_t i = 0; i < x2.tl->n; i++) {
			const struct sim_slice *a = &x2.tl->s[i], *b = &x1.tl->s[i];
			int inst = a->track / SIM_TL_PER;
			double ov_s = 0, w = b->t1_s - b->t0_s, d = a->t1_s - a->t0_s, reach = a->t0_s;
			if (a->coll >= 0 || a->track % SIM_TL_PER != WL_S_COMPUTE)
				continue; /* compute kernels only */
			ck_assert_str_eq(a->name, b->name);
			/* the union of its rank's communication within the kernel
			 * (the slices come in start order on each track, and the
			 * streams' may overlap one another) */
			for (;;) {
				double nx0 = INFINITY, nx1 = 0;
				for (int32_t j = 0; j < ncm; j++) {
					const struct sim_slice *m = &x2.tl->s[cm[j]];
					double s0, s1;
					if (m->track / SIM_TL_PER != inst)
						continue;
					s0 = fmax(m->t0_s, reach);
					s1 = fmin(m->t1_s, a->t1_s);
					if (s1 > s0 && (s0 < nx0 || (s0 == nx0 && s1 > nx1))) {
						nx0 = s0;
						nx1 = s1;
					}
				}
				if (!(nx1 > nx0))
					break;
				ov_s += nx1 - nx0;
				reach = nx1;
			}
			ck_assert_msg(fabs(d - (w + ov_s / 2)) <= 1e-9 + 1e-6 * w,
				      "%s: %.4f us at a slowdown of 2, %.4f us alone, %.4f us beside "
				      "communication", a->name, d * 1e6, w * 1e6, ov_s * 1e6);
			if (ov_s > 0.5 * w)
				beside++;
			else if (ov_s == 0)
				alone++;
		}
		ck_assert_int_gt(beside, 0);
		ck_assert_int_gt(alone, 0);
		free(cm);
		sim_prediction_release(&x1);
		sim_prediction_release(&x2);
	}
	sim_prediction_release(&ov);
	sim_prediction_release(&ser);
	topo_release(&topo);
}
END_TEST

static void setup_small(struct plan *p, struct sim_predict_opts *o, int nodes, const char *text)
{
	load_topo("dgx-h100-ndr", nodes);
	load_model_json(text);
	plan_init(p);
	p->seq_len = 512;
	sim_predict_opts_init(o);
	o->timeline = true;
}

/* The overlap slowdown is SM contention: it slows a GPU kernel while its
 * rank's communication runs, not the host's dispatch wait before it, the
 * CPU optimizer or the PCIe copies (found by review: a slowdown of 3
 * stretched "offload grads d2h" from 804 to 1402 us and "offload params
 * h2d" from 404 us to the CPU Adam's 5073 us; with a 2 ms dispatch,
 * host-bound ops came out 8 % longer at a slowdown of 4). */
static void same_slices(const struct sim_prediction *a, const struct sim_prediction *b,
			const char *const *names, int nnames, int want_min)
{
	int n = 0;
	ck_assert_int_eq(a->tl->n, b->tl->n);
	for (int32_t i = 0; i < a->tl->n; i++) {
		const struct sim_slice *x = &a->tl->s[i], *y = &b->tl->s[i];
		bool pick = nnames == 0 ? x->coll < 0 : false;
		for (int k = 0; k < nnames; k++)
			pick = pick || !strcmp(x->name, names[k]);
		if (!pick)
			continue;
		ck_assert_str_eq(x->name, y->name);
		ck_assert_msg(fabs((y->t1_s - y->t0_s) - (x->t1_s - x->t0_s)) <= 0.01 * (x->t1_s - x->t0_s),
			      "%s: %.3f us without the slowdown, %.3f us with it", x->name,
			      (x->t1_s - x->t0_s) * 1e6, (y->t1_s - y->t0_s) * 1e6);
		n++;
	}
	ck_assert_int_ge(n, want_min);
}

START_TEST(overlap_slowdown_spares_host_work)
{
	static const char *const host[] = { "offload grads d2h", "cpu adam", "offload params h2d" };
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct sim_compute comp;
	/* ZeRO-Offload with the DP reduction overlapped: the copies and the
	 * CPU Adam run while the reduce-scatters do */
	setup_small(&p, &o, 2, small_model);
	p.pp = 2;
	p.zero = 1;
	p.offload = PLAN_OFF_OPTIMIZER;
	p.overlap_dp = true;
	p.global_batch = 32;
	resolve(&p);
	o.overlap_slowdown = 1;
	run(&p, &o, &a);
	o.overlap_slowdown = 3;
	run(&p, &o, &b);
	same_slices(&a, &b, host, 3, 24);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* host-bound: a 2 ms dispatch per op, far above each op's GPU time;
	 * the DP buckets' all-reduces run beside the backward */
	plan_init(&p);
	p.seq_len = 512;
	p.overlap_dp = true;
	p.bucket_bytes = 1e6;
	p.global_batch = 32;
	resolve(&p);
	sim_compute_init(&comp, &topo.cl.gpu);
	comp.dispatch_s = 2e-3;
	o.compute = &comp;
	o.fidelity = SIM_ANALYTIC;
	o.overlap_slowdown = 1;
	run(&p, &o, &a);
	o.overlap_slowdown = 4;
	run(&p, &o, &b);
	same_slices(&a, &b, NULL, 0, 100);
	ck_assert_msg(fabs(b.bd.compute_s - a.bd.compute_s) < 1e-9 * a.bd.compute_s,
		      "compute %.9f s without the slowdown, %.9f s with it", a.bd.compute_s,
		      b.bd.compute_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The host's dispatch wait is its own part of the breakdown, not compute
 * (found by review: with --free-comm a plan's compute grew 0.44 -> 0.52 s,
 * the vision kernels' waits for the host counted in it). Host-bound, a 2
 * ms dispatch an op, with and without a pipeline: the GPU's compute is the
 * one without a dispatch, the rest of the path the host's wait, and the
 * parts add up to the iteration. */
static double parts(const struct sim_prediction *r);

START_TEST(host_wait_is_its_own_part)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct sim_compute comp;
	for (int pp = 1; pp <= 2; pp++) {
		setup_small(&p, &o, 2, small_model);
		p.pp = pp;
		p.global_batch = 16;
		resolve(&p);
		o.fidelity = SIM_ANALYTIC;
		o.overlap_slowdown = 1;
		run(&p, &o, &a); /* (dispatch 0) */
		ck_assert_double_eq(a.bd.host_s, 0);
		sim_compute_init(&comp, &topo.cl.gpu);
		comp.dispatch_s = 2e-3;
		o.compute = &comp;
		run(&p, &o, &b);
		ck_assert_msg(b.bd.host_s > 0.5 * b.iteration_time_s,
			      "pp %d: host %.6f s of %.6f s, host-bound", pp, b.bd.host_s,
			      b.iteration_time_s);
		ck_assert_msg(fabs(b.bd.compute_s / a.bd.compute_s - 1) < 1e-6,
			      "pp %d: compute %.9f s host-bound, %.9f s without a dispatch", pp,
			      b.bd.compute_s, a.bd.compute_s);
		ck_assert_msg(fabs(parts(&b) / b.iteration_time_s - 1) < 1e-9,
			      "pp %d: parts %.9f s, iteration %.9f s", pp, parts(&b), b.iteration_time_s);
		/* the trace's compute slices carry their wait: none without a
		 * dispatch; host-bound, within each slice, on most of them */
		for (int k = 0; k < 2; k++) {
			const struct sim_prediction *q = k ? &b : &a;
			int nw = 0, nc = 0;
			for (int32_t i = 0; i < q->tl->n; i++) {
				const struct sim_slice *sl = &q->tl->s[i];
				if (sl->coll >= 0)
					continue;
				nc++;
				nw += sl->host_wait_s > 0;
				ck_assert_msg(sl->host_wait_s <= sl->t1_s - sl->t0_s + 1e-15,
					      "%s: wait %.9g s in a slice of %.9g s", sl->name,
					      sl->host_wait_s, sl->t1_s - sl->t0_s);
			}
			ck_assert_msg(k ? nw > nc / 2 : nw == 0, "pp %d, dispatch %d: %d of %d slices wait",
				      pp, k, nw, nc);
		}
		sim_prediction_release(&a);
		sim_prediction_release(&b);
		topo_release(&topo);
	}
}
END_TEST

/* Overlapped DP buckets take the MLP's weight gradients as soon as its
 * backward is done, as Megatron closes a bucket at the parameter that fills
 * it: with a bucket smaller than a layer's MLP gradients the last layer's
 * first reduction starts before its attention's backward, and every layer
 * reduces twice (found by review: buckets closed only at layer ends, so
 * bucket_mb below one layer changed nothing). */
START_TEST(dp_bucket_closes_mid_layer)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double first_dp = INFINITY, proj7 = INFINITY;
	int ndp = 0;
	setup_small(&p, &o, 2, small_model);
	p.overlap_dp = true;
	p.bucket_bytes = 1e6; /* one layer's MLP: 2 x 1024 x 4096 fp32 gradients, 33.6 MB */
	p.global_batch = 16;  /* dp 16, one micro-batch each */
	resolve(&p);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *sl = &r.tl->s[i];
		if (sl->track / SIM_TL_PER != 0)
			continue;
		if (!strcmp(sl->name, "dp grad reduce")) {
			ndp++;
			first_dp = fmin(first_dp, sl->t0_s);
		} else if (!strcmp(sl->name, "proj wgrad") && sl->layer == 7) {
			proj7 = fmin(proj7, sl->t0_s);
		}
	}
	ck_assert_msg(first_dp < proj7, "first DP reduction at %g s, layer 7's proj wgrad at %g s",
		      first_dp, proj7);
	ck_assert_msg(ndp >= 16, "%d DP reductions for 8 layers", ndp);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Memory's top-k all-gather outputs are what the step's all-gathers land
 * on a rank: the sum of its `dp top-k allgather` and `edp top-k allgather`
 * sizes (D x k x (value + 4)), the experts' over their own expert-DP
 * degree (found by review: dp x cp for the experts too, and one bucket's
 * before that). */
START_TEST(topk_memory_is_the_gathered_bytes)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct memory_report *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct memory_env env = { .gpu_mem_bytes = 80e9, .ngpus = 8 };
	double got = 0;
	int nd = 0, ne = 0;
	ck_assert(a && b);
	setup_small(&p, &o, 1,
		    "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 512, \"num_hidden_layers\": 4,"
		    " \"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 64,"
		    " \"intermediate_size\": 1024, \"moe_intermediate_size\": 256, \"num_experts\": 16,"
		    " \"num_experts_per_tok\": 4, \"vocab_size\": 1000}");
	p.tp = 2;
	p.sp = true;
	p.ep = 4; /* expert DP 2 where dp is 4 */
	p.etp = 1;
	p.global_batch = 8;
	p.overlap_dp = true;
	p.bucket_bytes = 1e6;
	resolve(&p);
	memory_eval(&model, &p, &env, a);
	p.compression = PLAN_CMP_TOPK;
	p.compression_ratio = 0.01;
	memory_eval(&model, &p, &env, b);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *sl = &r.tl->s[i];
		if (sl->track / SIM_TL_PER != 0)
			continue;
		if (!strcmp(sl->name, "dp top-k allgather")) {
			nd++;
			got += sl->bytes;
		} else if (!strcmp(sl->name, "edp top-k allgather")) {
			ne++;
			got += sl->bytes;
		}
	}
	ck_assert_msg(nd > 0 && ne > 0, "%d dense and %d expert all-gathers", nd, ne);
	double want = b->stage[0].buffers_bytes - a->stage[0].buffers_bytes;
	/* (the slices' sizes are whole bytes, k an expected value) */
	ck_assert_msg(fabs(want - got) <= 0.5 * (nd + ne), "memory %.1f bytes, all-gathers %.0f bytes",
		      want, got);
	/* they arrive as the backward ends and go before the step, in place
	 * of the activations (here far more), not on top of them */
	ck_assert_double_lt(want, a->stage[0].activations_bytes);
	ck_assert_double_eq(b->stage[0].total_bytes, a->stage[0].total_bytes);
	sim_prediction_release(&r);
	topo_release(&topo);
	free(a);
	free(b);
}
END_TEST

/* Under --routing spray a pipeline send spreads over its equal-cost paths
 * at flow level as at the analytic level, and a sprayed transfer's parts
 * share a link as one connection (found by review: one hashed path, so
 * without PXN on a random placement its slices starved beside the sprayed
 * TP traffic, 5.5x the analytic level's exposed time; with PXN, which keeps
 * a send on one path, the TP ring's parts took a share each at the NICs,
 * 3.4x). */
START_TEST(sprayed_pipeline_sends)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f;
	for (int pxn = 0; pxn < 2; pxn++) {
		load_random_topo(4, 1);
		topo.cl.fabric.no_pxn = !pxn; /* (read per route: sim_pxn_via) */
		load_model_json(small_model);
		plan_init(&p);
		p.seq_len = 512;
		p.tp = 2;
		p.pp = 4;
		p.global_batch = 32;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.spray = true;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &a);
		o.fidelity = SIM_FLOW;
		run(&p, &o, &f);
		ck_assert_msg(f.bd.exposed_comm_s[SIM_COMM_PP] < 2.5 * a.bd.exposed_comm_s[SIM_COMM_PP],
			      "pxn %d: exposed pp %.6f s at flow level, %.6f s analytic", pxn,
			      f.bd.exposed_comm_s[SIM_COMM_PP], a.bd.exposed_comm_s[SIM_COMM_PP]);
		sim_prediction_release(&a);
		sim_prediction_release(&f);
		topo_release(&topo);
	}
}
END_TEST

/* The slice of run b on x's track for x's op and micro-batch (asserted
 * to exist). */
static const struct sim_slice *same_slice(const struct sim_prediction *b, const struct sim_slice *x)
{
	for (int32_t k = 0; k < b->tl->n; k++)
		if (b->tl->s[k].track == x->track && b->tl->s[k].op == x->op &&
		    b->tl->s[k].micro == x->micro)
			return &b->tl->s[k];
	ck_abort_msg("no slice for %s on track %d", x->name, (int)x->track);
	return NULL;
}

/* --memo 1 keeps each pipeline send's own time: stage 1 of tp 4, pp 4 on
 * two DGX H100 nodes sends activations to stage 2 on the other node and
 * gradients to stage 0 on its own (found by review: they shared one memo
 * entry, so the gradient send took the 46.8 us of the network and the
 * activation send of stage 2 the 7.9 us of NVLink). Every send's slice
 * is as long as without the memo. */
START_TEST(memo_keeps_each_send_peer)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	int n = 0, cross = 0;
	setup_small(&p, &o, 2, small_model);
	p.tp = 4;
	p.pp = 4;
	p.global_batch = 16;
	resolve(&p);
	ck_assert_int_eq(p.dp, 1);
	run(&p, &o, &a);
	o.memo = 1;
	run(&p, &o, &b);
	ck_assert_int_eq(a.tl->n, b.tl->n);
	for (int32_t i = 0; i < a.tl->n; i++) {
		const struct sim_slice *x = &a.tl->s[i];
		double dx = x->t1_s - x->t0_s, dy;
		const struct sim_slice *y;
		if (strncmp(x->name, "pp send", 7))
			continue;
		y = same_slice(&b, x); /* (recorded in another order) */
		dy = y->t1_s - y->t0_s;
		ck_assert_msg(fabs(dy - dx) <= 0.01 * dx, "%s on track %d: %.3f us, %.3f us memoised",
			      x->name, (int)x->track, dx * 1e6, dy * 1e6);
		cross += dx > 3 * 7.9e-6; /* (across the nodes) */
		n++;
	}
	ck_assert_int_gt(n, 0);
	ck_assert_int_gt(cross, 0);
	ck_assert_int_lt(cross, n);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* A small MoE model (32 experts, top 4) for the memo's tests. */
static const char *const memo_moe =
	"{\"hidden_size\": 1024, \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
	"\"num_key_value_heads\": 4, \"head_dim\": 128, \"intermediate_size\": 2048, "
	"\"moe_intermediate_size\": 512, \"num_experts\": 32, \"num_experts_per_tok\": 4, "
	"\"vocab_size\": 32000, \"model_type\": \"qwen3_moe\"}";

/* --memo 1 memoises an alltoallv too: the first of a kind on the network,
 * each later one that time scaled by the analytic model's time of its own
 * group at its expert loads over that at the first's. A MoE model with ep
 * 16 on four DGX H100 nodes (two EP groups a stage, each across two nodes)
 * and a strong drawn expert imbalance, flow level: far fewer collectives
 * run, the iteration and each all-to-all's mean slice stay near the live
 * run's, and the memoised slices follow their loads (they differ); before,
 * every alltoallv ran live under the memo, and scaled by the whole stage's
 * groups (the busiest's bottleneck) the mean all-to-all came out 7 % short
 * (407 against 439 us). */
START_TEST(memo_scales_alltoallv)
{
	static const char *names[] = { "ep dispatch", "ep combine", "ep combine bwd",
				       "ep dispatch bwd" };
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	double sa = 0, sb = 0, lo = INFINITY, hi = 0;
	int n = 0;
	setup_small(&p, &o, 4, memo_moe);
	p.ep = 16;
	p.global_batch = 64;
	p.seq_len = 1024;
	p.expert_imbalance = 3;
	resolve(&p);
	run(&p, &o, &a);
	o.memo = 1;
	run(&p, &o, &b);
	ck_assert_int_eq(a.tl->n, b.tl->n);
	for (int32_t i = 0; i < a.tl->n; i++) {
		const struct sim_slice *x = &a.tl->s[i], *y;
		bool ep = false;
		for (size_t k = 0; k < TS_ARRAY_LEN(names); k++)
			ep = ep || !strcmp(x->name, names[k]);
		if (!ep)
			continue;
		y = same_slice(&b, x);
		sa += x->t1_s - x->t0_s;
		sb += y->t1_s - y->t0_s;
		lo = fmin(lo, y->t1_s - y->t0_s);
		hi = fmax(hi, y->t1_s - y->t0_s);
		n++;
	}
	ck_assert_int_gt(n, 16);
	ck_assert_msg(fabs(sb / sa - 1) < 0.05, "mean all-to-all %.3f us live, %.3f us memoised",
		      sa / n * 1e6, sb / n * 1e6);
	ck_assert_msg(hi > 1.01 * lo, "memoised all-to-alls %.3f-%.3f us: not scaled", lo * 1e6,
		      hi * 1e6);
	ck_assert_msg(fabs(b.iteration_time_s / a.iteration_time_s - 1) < 0.01,
		      "iteration %.6f s live, %.6f s memoised", a.iteration_time_s, b.iteration_time_s);
	ck_assert_msg(b.collectives * 4 < a.collectives, "collectives: %llu live, %llu memoised",
		      (unsigned long long)a.collectives, (unsigned long long)b.collectives);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* at packet level they run live (their queues' cost does not follow
	 * the analytic time: scaled, a combine took the dispatch's measured
	 * share, 0.74 % short on an iteration; found by review) */
	topo_release(&topo);
	setup_small(&p, &o, 2, memo_moe);
	p.ep = 16;
	p.global_batch = 16;
	p.seq_len = 1024;
	p.expert_imbalance = 3;
	resolve(&p);
	o.fidelity = SIM_PACKET;
	run(&p, &o, &a);
	o.memo = 1;
	run(&p, &o, &b);
	for (int32_t i = 0; i < a.tl->n; i++) {
		const struct sim_slice *x = &a.tl->s[i], *y;
		if (strncmp(x->name, "ep ", 3))
			continue;
		y = same_slice(&b, x);
		ck_assert_msg(y->t1_s - y->t0_s == x->t1_s - x->t0_s,
			      "packet %s: %.3f us live, %.3f us memoised", x->name,
			      (x->t1_s - x->t0_s) * 1e6, (y->t1_s - y->t0_s) * 1e6);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* --memo 1 keeps a collective's time only where it ran alone, and runs
 * live what overlaps: a memoised collective puts no traffic on the
 * network, so ZeRO-3's parameter traffic beside the EP all-to-alls ran
 * uncontended (the MoE model of memo_scales_alltoallv, ep 16 on four
 * nodes, ZeRO-3, imbalance 0.5, flow level: 0.012471 s memoised against
 * 0.012837 s live before, 2.9 % under; now 0.012842 s). What runs alone
 * is still memoised (282 collectives on the network against 394). */
START_TEST(memo_runs_overlaps_live)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 4, memo_moe);
	p.ep = 16;
	p.zero = 3;
	p.global_batch = 64;
	p.seq_len = 1024;
	p.expert_imbalance = 0.5;
	resolve(&p);
	run(&p, &o, &a);
	o.memo = 1;
	run(&p, &o, &b);
	/* (the parameter traffic counts: exposed, 20 % of the iteration) */
	ck_assert_double_gt(a.bd.exposed_comm_s[SIM_COMM_DP], 0.05 * a.iteration_time_s);
	ck_assert_msg(fabs(b.iteration_time_s / a.iteration_time_s - 1) < 0.005,
		      "iteration %.6f s live, %.6f s memoised", a.iteration_time_s, b.iteration_time_s);
	ck_assert_msg(b.collectives < a.collectives, "collectives: %llu live, %llu memoised",
		      (unsigned long long)a.collectives, (unsigned long long)b.collectives);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* sequences of 4096 at global batch 32: a memoised collective that a
	 * later one overlaps runs the rest of its time live: 0.020789 s
	 * against 0.020796 s live (without that rest 0.020696 s, 0.48 %
	 * under; before, 0.020473 s) */
	p.seq_len = 4096;
	p.global_batch = 32;
	p.micro_batch = 1;
	p.dp = 0;
	resolve(&p);
	o.memo = 0;
	run(&p, &o, &a);
	o.memo = 1;
	run(&p, &o, &b);
	ck_assert_msg(fabs(b.iteration_time_s / a.iteration_time_s - 1) < 0.002,
		      "seq 4096: iteration %.6f s live, %.6f s memoised", a.iteration_time_s,
		      b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* ---- variation and optimisations --------------------------------------------------- */

/* Qwen3-VL-30B-A3B on 2 nodes: TP 2 (with sequence parallelism, as
 * Megatron-core's MoE needs), PP 2, EP 4, sequences of 2048 with 512-token
 * images; the caller sets the image count and resolves. */
static void vl_plan(struct plan *p, int global_batch)
{
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	plan_init(p);
	p->tp = 2;
	p->sp = true;
	p->pp = 2;
	p->ep = 4;
	p->global_batch = global_batch;
	p->seq_len = 2048;
	p->image_tokens.value = 512;
}

/* vl_plan with fixed images per sample and image tokens (0: vl_plan's),
 * resolved, and analytic options into o. */
static void vl_analytic(struct plan *p, struct sim_predict_opts *o, int global_batch,
			double images, double tokens)
{
	vl_plan(p, global_batch);
	p->images_per_sample.value = images;
	if (tokens > 0)
		p->image_tokens.value = tokens;
	resolve(p);
	sim_predict_opts_init(o);
	o->fidelity = SIM_ANALYTIC;
}

/* d becomes uniform over [min, max]. */
static void set_uniform(struct plan_dist *d, double min, double max)
{
	d->kind = PLAN_DIST_UNIFORM;
	d->min = min;
	d->max = max;
}

START_TEST(image_variance_slows)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	vl_plan(&p, 16);
	p.images_per_sample.value = 2;
	resolve(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	/* same mean images per sample (2), now Poisson: replicas differ */
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 2;
	run(&p, &o, &b);
	ck_assert_msg(b.iteration_time_s > a.iteration_time_s * 1.005,
		      "poisson images %.6f s not slower than fixed %.6f s", b.iteration_time_s,
		      a.iteration_time_s);
	/* and stage 0 holds the heaviest drawn micro-batches in flight, more
	 * than the mean's (what `memory` reports, and the fixed draw here) */
	{
		struct memory_report *r = malloc(sizeof(*r));
		struct memory_env env = { .gpu_mem_bytes = 80e9, .ngpus = 16 };
		ck_assert_ptr_nonnull(r);
		memory_eval(&model, &p, &env, r);
		ck_assert_msg(fabs(a.memory_gib_per_gpu - r->peak_bytes / (1 << 30)) < 1e-9,
			      "fixed images: predict %.6f GiB, memory %.6f GiB", a.memory_gib_per_gpu,
			      r->peak_bytes / (1 << 30));
		ck_assert_msg(b.memory_gib_per_gpu > a.memory_gib_per_gpu + 0.01,
			      "poisson images hold %.6f GiB, the mean's %.6f GiB", b.memory_gib_per_gpu,
			      a.memory_gib_per_gpu);
		free(r);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The fold simulates the units whose drawn loads take the longest, the
 * host's dispatch counted: a micro-batch with any image issues the whole
 * encoder, 55 us an op, so a unit whose every micro-batch has images is
 * the slowest even with fewer image tokens. Found by review: scored by
 * vision FLOPs, Qwen3-VL-2B pp 2 ZeRO 1 over 2 DGX H100 nodes with
 * Poisson(1.5) images, seed 1, one or two units folded: 0.285674 s
 * against --exact's 0.317354 s (-9.98 %). */
START_TEST(fold_scores_units_by_time)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.pp = 2;
	p.zero = 1;
	p.global_batch = 32;
	p.seq_len = 2048;
	p.flash_attention = true;
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 1.5;
	set_uniform(&p.image_tokens, 64, 768);
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.seed = 1;
	sim_compute_init(&comp, &topo.cl.gpu); /* the default host dispatch */
	o.compute = &comp;
	ck_assert_double_gt(comp.dispatch_s, 0);
	for (int k = 1; k <= 2; k++) {
		o.replicas = k;
		folded_vs_exact_with(&p, o, false);
	}
	topo_release(&topo);
}
END_TEST

/* A sample's images fit in its sequence: with 2000-token images in 2048
 * tokens, 0, 1 or 2 images per sample (uniform on [0, 2], rounded: 1/4,
 * 1/2, 1/4) do about 3/4 of the vision work of exactly one image, since a
 * second image keeps only the 48 tokens left (uncut, the same mean would
 * do the same work). Vision work: hardware FLOPs over those without
 * images. */
START_TEST(images_fit_in_the_sequence)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c;
	vl_analytic(&p, &o, 64, 1, 2000);
	run(&p, &o, &a);
	set_uniform(&p.images_per_sample, 0, 2);
	run(&p, &o, &b);
	p.images_per_sample.kind = PLAN_DIST_FIXED;
	p.images_per_sample.value = 0;
	run(&p, &o, &c);
	double r = (b.hw_flops - c.hw_flops) / (a.hw_flops - c.hw_flops);
	ck_assert_msg(r > 0.6 && r < 0.9, "vision work %.4f of one image per sample", r);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
	topo_release(&topo);
}
END_TEST

/* Sum of the durations of the slices named `name` of representative 0 by
 * micro-batch, into per[micro]. */
static void slice_sums(const struct sim_prediction *r, const char *name, double *per, int n)
{
	for (int i = 0; i < n; i++)
		per[i] = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *sl = &r->tl->s[i];
		if (!strcmp(sl->name, name) && sl->track / SIM_TL_PER == 0 && sl->micro >= 0 &&
		    sl->micro < n)
			per[sl->micro] += sl->t1_s - sl->t0_s;
	}
}

/* A fractional count of images per sample keeps its mean (found by review:
 * rounding to the nearest gave 0.5 one image per sample and 0.4 none), and
 * whole uniform bounds draw each count alike (rounding a continuous draw
 * gave 0..2 the counts 1/4, 1/2, 1/4). Vision work: hardware FLOPs over
 * those without images; counts: the micro-batches' encoder GEMM time. */
START_TEST(image_counts_keep_their_mean)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c;
	vl_analytic(&p, &o, 256, 1, 0);
	run(&p, &o, &a);
	p.images_per_sample.value = 0;
	run(&p, &o, &c);
	double want[] = { 0.5, 0.4, 0.75 };
	for (int i = 0; i < 3; i++) {
		p.images_per_sample.value = want[i];
		run(&p, &o, &b);
		double r = (b.hw_flops - c.hw_flops) / (a.hw_flops - c.hw_flops);
		ck_assert_msg(fabs(r - want[i]) < 0.12, "%.2f images per sample did the work of %.4f",
			      want[i], r);
		sim_prediction_release(&b);
	}
	/* a Poisson draw keeps its mean too: 1.5 over 256 samples (the mean's
	 * standard error 0.077; found by an audit: drawing at 1.3 x the mean
	 * passed, and image_variance_slows then compared more images with
	 * fewer) */
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 1.5;
	run(&p, &o, &b);
	{
		double r = (b.hw_flops - c.hw_flops) / (a.hw_flops - c.hw_flops);
		ck_assert_msg(fabs(r - 1.5) < 0.18, "Poisson(1.5) images did the work of %.4f", r);
	}
	sim_prediction_release(&b);
	p.images_per_sample.kind = PLAN_DIST_FIXED;
	sim_prediction_release(&a);
	sim_prediction_release(&c);
	/* 0..2 whole: a third of the micro-batches (of one sample) each */
	set_uniform(&p.images_per_sample, 0, 2);
	o.timeline = true;
	run(&p, &o, &b);
	{
		int n = b.micro_batches, cnt[3] = { 0, 0, 0 };
		double g[256], one = 0;
		ck_assert_int_le(n, 256);
		slice_sums(&b, "vit qkv gemm", g, n);
		for (int i = 0; i < n; i++)
			if (g[i] > 0 && (one == 0 || g[i] < one))
				one = g[i];
		ck_assert(one > 0);
		for (int i = 0; i < n; i++) {
			int k = (int)floor(g[i] / one + 0.5);
			ck_assert_msg(k >= 0 && k <= 2, "micro-batch %d: %.3f images", i, g[i] / one);
			cnt[k]++;
		}
		for (int k = 0; k < 3; k++)
			ck_assert_msg(cnt[k] >= 0.22 * n && cnt[k] <= 0.45 * n,
				      "%d of %d micro-batches with %d images", cnt[k], n, k);
	}
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* model FLOPs (and MFU) count the images drawn, as far as they fit in the
 * sequence, each at its own size (found by review: the plan's mean images
 * at the mean size credited images cut at seq_len, here +19 %). One image
 * of uniform 1,024-3,072 tokens in 2,048: half are cut to 2,048; the
 * expectation by quadrature, 256 samples drawn. */
START_TEST(model_flops_count_the_drawn_images)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, c;
	double mg2, want = 0;
	vl_analytic(&p, &o, 256, 1, 2048);
	set_uniform(&p.image_tokens, 1024, 3072);
	run(&p, &o, &a);
	p.images_per_sample.value = 0;
	run(&p, &o, &c);
	mg2 = (double)model.vit.merge * model.vit.merge;
	for (int i = 0; i < 2048; i++) {
		double tok = 1024 + 2048 * (i + 0.5) / 2048;
		want += model_vision_flops_fwd(&model, (tok < 2048 ? tok : 2048) * mg2) / 2048;
	}
	want *= 3.0 * p.global_batch;
	ck_assert_msg(fabs((a.model_flops - c.model_flops) / want - 1) < 0.04,
		      "vision model FLOPs %.6g, the images that fit %.6g", a.model_flops - c.model_flops,
		      want);
	sim_prediction_release(&a);
	sim_prediction_release(&c);
	topo_release(&topo);
}
END_TEST

/* The patch embedding (a convolution) is whole on every TP rank, so each
 * rank runs all of it: what images add to the executed FLOPs grows from
 * tp 1 to tp 2 by the convolution's, 2 x 3 x 2 x 16 x 16 x hidden per
 * patch, three times (forward, data and weight gradients) for each of the
 * 16 images of 1,024 patches (Qwen3-VL-2B; found by an audit: split). */
START_TEST(vision_patch_embedding_whole_on_tp_ranks)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	double hw[2][2], conv;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	for (int t = 0; t < 2; t++)
		for (int im = 0; im < 2; im++) {
			plan_init(&p);
			p.tp = 1 + t;
			p.global_batch = 16;
			p.seq_len = 2048;
			p.images_per_sample.value = im;
			p.image_tokens.value = 256;
			resolve(&p);
			sim_predict_opts_init(&o);
			o.fidelity = SIM_ANALYTIC;
			run(&p, &o, &r);
			hw[t][im] = r.hw_flops;
			sim_prediction_release(&r);
		}
	conv = 2.0 * 3 * 2 * 16 * 16 * model.vit.hidden * 1024;
	ck_assert_msg(fabs((hw[1][1] - hw[1][0]) - (hw[0][1] - hw[0][0]) - 3 * 16 * conv) <
			      1e-6 * 3 * 16 * conv,
		      "tp 2 adds %.6g FLOPs over tp 1, want %.6g",
		      (hw[1][1] - hw[1][0]) - (hw[0][1] - hw[0][0]), 3 * 16 * conv);
	topo_release(&topo);
}
END_TEST

/* What grows with an image's patches (the encoder's TP all-reduces, its
 * GEMMs) follows the drawn tokens, and only attention's FLOPs their square
 * (found by review: the micro-batch's FLOP ratio, P^2 term and all, scaled
 * everything: a 1,024-token image's all-reduces at 2.26x the 544-token
 * mean's instead of 1.88x). One image of 64-1,024 tokens per sample. */
START_TEST(vision_linear_ops_follow_tokens)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double base = 0, lo = 1e300, hi = 0;
	vl_analytic(&p, &o, 64, 1, 544);
	o.timeline = true;
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n && base == 0; i++)
		if (!strcmp(r.tl->s[i].name, "vit tp allreduce"))
			base = r.tl->s[i].bytes;
	ck_assert(base > 0);
	sim_prediction_release(&r);
	set_uniform(&p.image_tokens, 64, 1024);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++)
		if (!strcmp(r.tl->s[i].name, "vit tp allreduce")) {
			double q = r.tl->s[i].bytes / base;
			lo = q < lo ? q : lo;
			hi = q > hi ? q : hi;
		}
	ck_assert_msg(lo > 64.0 / 544 * (1 - 1e-3) && hi < 1024.0 / 544 * (1 + 1e-3),
		      "all-reduce sizes %.4f to %.4f of the mean image's, tokens allow %.4f to %.4f", lo,
		      hi, 64.0 / 544, 1024.0 / 544);
	ck_assert_msg(hi > 1.5 && lo < 0.5, "all-reduce sizes %.4f to %.4f: no spread drawn", lo, hi);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Plan p at analytic level with its compute ops' slices their own time
 * (no host dispatch, no overlap slowdown), traced, into r. */
static void pure_compute_run(const struct plan *p, struct sim_predict_opts *o,
			     struct sim_compute *comp, struct sim_prediction *r)
{
	sim_compute_init(comp, &topo.cl.gpu);
	comp->dispatch_s = 0;
	sim_predict_opts_init(o);
	o->compute = comp;
	o->fidelity = SIM_ANALYTIC;
	o->overlap_slowdown = 1;
	o->timeline = true;
	run(p, o, r);
}

/* A grouped GEMM of batch m x n x k GEMMs on dt-byte operands with a
 * 16-bit output (each read or written once: models/workload.c, gemm_op),
 * its rows spread by m_sd, as the compute model prices it: as the
 * grouped-GEMM kernel (kernel: a rank's experts' 16-bit GEMMs) or as a
 * batched GEMM. */
static double grouped_gemm_dt_s(const struct sim_compute *comp, double m, double n, double k,
				int batch, double m_sd, bool kernel, int dt)
{
	struct sim_op_desc d;
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_GEMM;
	d.m = (int64_t)m;
	d.n = (int64_t)n;
	d.k = (int64_t)k;
	d.batch = batch;
	d.dtype_bytes = dt;
	d.flops = 2 * m * n * k * batch;
	d.bytes = batch * (dt * (m * k + k * n) + 2.0 * m * n);
	d.m_sd = m_sd;
	d.grouped = kernel;
	return sim_compute_time_s(comp, &d);
}

static double grouped_gemm_s(const struct sim_compute *comp, double m, double n, double k,
			     int batch, double m_sd, bool kernel)
{
	return grouped_gemm_dt_s(comp, m, n, k, batch, m_sd, kernel, 2);
}

/* Duration of micro-batch 0's first slice of this name, s (-1: none). */
static double first_slice_s(const struct sim_prediction *r, const char *name)
{
	for (int32_t j = 0; j < r->tl->n; j++)
		if (!strcmp(r->tl->s[j].name, name) && r->tl->s[j].micro == 0)
			return r->tl->s[j].t1_s - r->tl->s[j].t0_s;
	return -1;
}

/* A drawn expert load scales a GEMM's tokens: m of the forward and the
 * data gradient, k of the weight gradient (dW = X^T dY), and the bytes of
 * the operands that hold tokens, not the weights (found by review: m was
 * scaled in every one, pricing expert down wgrad at padded capacity 1.25
 * 13 % slow as (960, 2048, 256) x 16 instead of (768, 2048, 320) x 16).
 * Qwen3-30B-A3B, ep 8, 512 tokens: 256 per expert, 320 padded. */
START_TEST(expert_load_scales_the_token_dimension)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	static const struct {
		const char *name;
		double m, n, k;
		bool kernel; /* the grouped kernel: every expert GEMM in 16 bits */
	} g[] = {
		{ "expert down gemm", 320, 2048, 768, true },
		{ "expert down wgrad", 768, 2048, 320, true },
		{ "expert up wgrad", 2048, 1536, 320, true },
		{ "expert up dgrad", 320, 2048, 1536, true },
	};
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	ck_assert_int_eq(model.moe_ffn, 768);
	ck_assert_int_eq(model.hidden, 2048);
	plan_init(&p);
	p.ep = 8;
	p.global_batch = 8;
	p.seq_len = 512;
	p.capacity_factor = 1.25;
	p.pad_to_capacity = true;
	resolve(&p);
	pure_compute_run(&p, &o, &comp, &r);
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		/* the weights at their size, the tokens' operands at the load */
		double got = first_slice_s(&r, g[i].name);
		double want = grouped_gemm_s(&comp, g[i].m, g[i].n, g[i].k, 16, 0, g[i].kernel);
		ck_assert_msg(fabs(got / want - 1) < 1e-6, "%s: %.4f us, its shape at the load %.4f us",
			      g[i].name, got * 1e6, want * 1e6);
	}
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Qwen3-30B-A3B's plan of the expert-kernel tests: ep 8, 512 tokens a
 * rank padded to capacity 1.25 (16 experts of 320 rows). */
static void padded_expert_plan(struct plan *p)
{
	plan_init(p);
	p->ep = 8;
	p->global_batch = 8;
	p->seq_len = 512;
	p->capacity_factor = 1.25;
	p->pad_to_capacity = true;
}

/* The compute model's default host dispatch (measured on the H200
 * machine: 55 us an op, sim/compute.c) makes a loop over experts
 * host-bound: Qwen3-30B-A3B, ep 8, 512 tokens, SequentialMLP (16 experts a
 * rank, each its own GEMMs) takes at least its GEMM kernels' dispatches
 * and several times its GPU-bound time; with the grouped kernel the same
 * plan has 16 times fewer expert dispatches and gains less. */
START_TEST(default_dispatch_bounds_expert_loop)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r[2][2];
	struct sim_compute comp;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	sim_compute_init(&comp, &topo.cl.gpu);
	ck_assert_msg(fabs(comp.dispatch_s - 55e-6) < 1e-12, "default dispatch %g s", comp.dispatch_s);
	double ngemm = 0;
	for (int loop = 0; loop < 2; loop++) {
		padded_expert_plan(&p);
		p.moe_grouped_gemm = !loop;
		resolve(&p);
		for (int host = 0; host < 2; host++) {
			sim_compute_init(&comp, &topo.cl.gpu);
			if (!host)
				comp.dispatch_s = 0;
			sim_predict_opts_init(&o);
			o.compute = &comp;
			o.fidelity = SIM_ANALYTIC;
			run(&p, &o, &r[loop][host]);
		}
		if (loop) {
			wl_opts_init(&wo);
			ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
			for (int32_t i = 0; i < w.roles[0].nops; i++)
				if (w.roles[0].ops[i].cls == WL_GEMM)
					ngemm += w.roles[0].ops[i].reps > 1 ? w.roles[0].ops[i].reps : 1;
			workload_release(&w);
		}
	}
	double seq = r[1][1].iteration_time_s, seq0 = r[1][0].iteration_time_s;
	double grp = r[0][1].iteration_time_s, grp0 = r[0][0].iteration_time_s;
	ck_assert_msg(ngemm > 1000 && seq >= ngemm * 55e-6 && seq > 3 * seq0,
		      "sequential %.4f s (%.4f s without dispatch) for %.0f GEMM kernels", seq, seq0, ngemm);
	ck_assert_msg(grp > grp0 && grp / grp0 < seq / seq0, "grouped %.4f s (%.4f s without dispatch)",
		      grp, grp0);
	for (int i = 0; i < 4; i++)
		sim_prediction_release(&r[i / 2][i % 2]);
	topo_release(&topo);
}
END_TEST

/* The grouped kernel's scope: an FP8 plan's expert GEMMs run other
 * kernels than the 16-bit torch._grouped_mm the model was fitted to, so
 * they stay batched GEMMs (found by review: they took the bf16 kernel's
 * tiles at twice the peak); in 16 bits the same GEMM takes the kernel.
 * Qwen3-30B-A3B, ep 8, 512 tokens padded: 320 rows an expert. */
START_TEST(expert_gemm_kernel_scope)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	for (int fp8 = 0; fp8 < 2; fp8++) {
		padded_expert_plan(&p);
		if (fp8)
			p.precision = PLAN_DT_FP8;
		resolve(&p);
		pure_compute_run(&p, &o, &comp, &r);
		double want = grouped_gemm_dt_s(&comp, 320, 2048, 768, 16, 0, !fp8, fp8 ? 1 : 2);
		double other = grouped_gemm_dt_s(&comp, 320, 2048, 768, 16, 0, fp8, fp8 ? 1 : 2);
		double got = first_slice_s(&r, "expert down gemm");
		ck_assert_msg(fabs(got / want - 1) < 1e-6 && fabs(other / want - 1) > 0.01,
			      "%s: %.4f us, want %.4f us (the other way %.4f us)", fp8 ? "fp8" : "bf16",
			      got * 1e6, want * 1e6, other * 1e6);
		sim_prediction_release(&r);
	}
	topo_release(&topo);
}
END_TEST

static int32_t find_op(const struct wl_role *r, int32_t from, const char *name, int mi, int l,
		       bool bwd);

/* Without moe_grouped_gemm a rank's experts run as Megatron-core's
 * SequentialMLP: each expert's GEMMs and activation on their own, one
 * after another (one op of e_loc kernels of one expert's shape: reps), as
 * plain GEMMs, not the grouped kernel, with the same FLOPs and bytes; its
 * output concatenation (forward) and its input split's gradient join
 * (backward) copy the rank's routed tokens once each, except with one
 * local expert (found by review). Qwen3-30B-A3B, ep 8, 512 tokens padded
 * to capacity 1.25: 16 experts of 320 rows. */
START_TEST(sequential_experts_one_by_one)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute comp;
	struct workload w[2];
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	for (int loop = 0; loop < 2; loop++) {
		padded_expert_plan(&p);
		p.moe_grouped_gemm = !loop;
		resolve(&p);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w[loop], &model, &p, &wo, &err) == 0, "%s", err.msg);
		if (loop) {
			pure_compute_run(&p, &o, &comp, &r);
			double want = 16 * grouped_gemm_s(&comp, 320, 2048, 768, 1, 0, false);
			double got = first_slice_s(&r, "expert down gemm");
			ck_assert_msg(fabs(got / want - 1) < 1e-6, "%.4f us, want 16 x %.4f us", got * 1e6,
				      want / 16 * 1e6);
			sim_prediction_release(&r);
		}
	}
	static const char *const names[] = { "expert up gemm", "activation", "expert down gemm",
					      "expert down dgrad", "expert down wgrad",
					      "activation bwd", "expert up dgrad", "expert up wgrad" };
	const struct wl_role *g = &w[0].roles[0], *s = &w[1].roles[0];
	int moe_layer = -1;
	for (int l = 0; l < model.layers && moe_layer < 0; l++)
		if (model.moe_layer[l])
			moe_layer = l;
	for (int i = 0; i < 8; i++) {
		bool bwd = i >= 3;
		int32_t a = find_op(g, 0, names[i], 0, moe_layer, bwd);
		int32_t b = find_op(s, 0, names[i], 0, moe_layer, bwd);
		ck_assert_msg(a >= 0 && b >= 0, "%s", names[i]);
		const struct wl_op *x = &g->ops[a], *y = &s->ops[b];
		ck_assert_msg(x->reps <= 1 && !x->expert_loop && y->reps == 16 && y->expert_loop,
			      "%s: reps %d / %d", names[i], x->reps, y->reps);
		ck_assert_msg(x->flops == y->flops && x->bytes == y->bytes && x->bytes_fixed == y->bytes_fixed,
			      "%s: %g / %g FLOP, %g / %g B, fixed %g / %g", names[i], x->flops, y->flops,
			      x->bytes, y->bytes, x->bytes_fixed, y->bytes_fixed);
		if (x->cls == WL_GEMM)
			ck_assert(x->batch == 16 && y->batch == 1 && x->m == y->m && x->n == y->n &&
				  x->k == y->k);
	}
	/* the copies: 16 experts x 256 rows (the balanced load; the executor
	 * scales it to the padded 320) x 2,048 x 2 bytes, read and written */
	double cp = 2.0 * 16 * 256 * 2048 * 2;
	int32_t c = find_op(s, 0, "expert output concat", 0, moe_layer, false);
	int32_t cb = find_op(s, 0, "expert input grad concat", 0, moe_layer, true);
	ck_assert_msg(c >= 0 && cb >= 0 && s->ops[c].bytes == cp && s->ops[cb].bytes == cp,
		      "copies %d %d: %g %g B, want %g", c, cb, c >= 0 ? s->ops[c].bytes : -1,
		      cb >= 0 ? s->ops[cb].bytes : -1, cp);
	ck_assert(find_op(g, 0, "expert output concat", 0, moe_layer, false) < 0 &&
		  find_op(g, 0, "expert input grad concat", 0, moe_layer, true) < 0);
	workload_release(&w[0]);
	workload_release(&w[1]);
	/* one local expert: SequentialMLP calls it directly, no copies */
	{
		static const char *eight =
			"{\"hidden_size\": 512, \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
			"\"num_key_value_heads\": 4, \"head_dim\": 64, \"intermediate_size\": 1024, "
			"\"moe_intermediate_size\": 256, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
			"\"vocab_size\": 1000, \"model_type\": \"qwen3_moe\"}";
		load_model_json(eight);
		plan_init(&p);
		p.ep = 8;
		p.global_batch = 8;
		p.seq_len = 512;
		p.moe_grouped_gemm = false;
		resolve(&p);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w[0], &model, &p, &wo, &err) == 0, "%s", err.msg);
		const struct wl_role *o1 = &w[0].roles[0];
		int32_t up = find_op(o1, 0, "expert up gemm", 0, 0, false);
		ck_assert(up >= 0 && o1->ops[up].expert_loop && o1->ops[up].reps <= 1 &&
			  o1->ops[up].batch == 1);
		ck_assert(find_op(o1, 0, "expert output concat", 0, 0, false) < 0 &&
			  find_op(o1, 0, "expert input grad concat", 0, 0, true) < 0);
		workload_release(&w[0]);
	}
	/* refused for a dense model, at its field */
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.moe_grouped_gemm = false;
	p.global_batch = 8;
	ck_assert_int_eq(plan_resolve(&p, &model, 8, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "moe_grouped_gemm"), "%s", err.msg);
	topo_release(&topo);
}
END_TEST

/* A rank's experts each get their own token count, so a grouped expert
 * GEMM rounds each expert's rows up to its tiles on its own: its row tiles
 * are priced at the counts' spread about the mean (compute.h, m_sd). With
 * ep 1 the rank holds every expert and all the tokens (its load exactly
 * 1): 8 x 4,096 x 8 / 128 = 2,048 rows an expert, spread as a multinomial's
 * (variance mu (1 - 1/e)), or a Dirichlet-multinomial's under an
 * imbalance (concentration a per expert: mu (1 - 1/e) (e mu + e a) /
 * (1 + e a)); the weight gradients, whose tokens are k, and a padded
 * plan's equal rows are not spread (found by review: every expert took
 * the mean, 2,048 rows filling eight 256-row tiles exactly). */
START_TEST(expert_gemm_rows_spread)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	static const struct {
		const char *name;
		double m, n, k;
		bool rows;
	} g[] = {
		{ "expert up gemm", 2048, 1536, 2048, true },
		{ "expert down dgrad", 2048, 768, 2048, true },
		{ "expert up wgrad", 2048, 1536, 2048, false },
	};
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	ck_assert(model.experts == 128 && model.top_k == 8 && model.moe_ffn == 768);
	for (int c = 0; c < 3; c++) {
		double cv = c == 1 ? 0.5 : 0, e = 128, mu = 2048, sd;
		double a = ((e - 1) / (cv * cv) - 1) / e;
		plan_init(&p);
		p.global_batch = 64;
		p.micro_batch = 8;
		p.seq_len = 4096;
		p.expert_imbalance = cv;
		if (c == 2) {
			p.capacity_factor = 1;
			p.pad_to_capacity = true;
		}
		resolve(&p);
		pure_compute_run(&p, &o, &comp, &r);
		sd = c == 2 ? 0 : cv > 0 ? sqrt(mu * (1 - 1 / e) * (e * mu + e * a) / (1 + e * a)) :
					   sqrt(mu * (1 - 1 / e));
		for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
			double got = first_slice_s(&r, g[i].name);
			double equal = grouped_gemm_s(&comp, g[i].m, g[i].n, g[i].k, 128, 0, true);
			double want = grouped_gemm_s(&comp, g[i].m, g[i].n, g[i].k, 128,
						     g[i].rows ? sd : 0, true);
			ck_assert_msg(fabs(got / want - 1) < 1e-6,
				      "case %d %s: %.4f us, want %.4f us (equal rows %.4f us)", c,
				      g[i].name, got * 1e6, want * 1e6, equal * 1e6);
			/* (whole tiles when equal; about half a tile more an
			 * expert on average when spread, a few per cent of
			 * these compute-bound GEMMs) */
			if (g[i].rows && c < 2)
				ck_assert_msg(want > 1.01 * equal, "case %d %s: %.4f us, equal %.4f us",
					      c, g[i].name, want * 1e6, equal * 1e6);
		}
		sim_prediction_release(&r);
	}
	topo_release(&topo);
}
END_TEST

/* overlap.tp: the GEMM chunks that run beside the collective cost a
 * chunk's GEMM each (found by review: (n-1)/n of the rows as one GEMM ran
 * at the whole GEMM's efficiency, 18 % under the pipeline's formula on the
 * MLP up): the ring exchange's n-1 chunks (tp 8) take 7 times its last
 * one, the pipelined reduce-scatter's 3 chunks 3 times its first.
 * llama3-8b, tp 8, SP, one node; no dispatch wait or slowdown. Then the
 * host's issues of a pipeline. */
START_TEST(tp_overlap_chunks_cost_their_kernels)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	static const struct {
		const char *name;
		double ratio; /* first slice over second */
	} c[] = { { "qkv gemm", 7 }, { "proj gemm", 1.0 / 3 } };
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 8;
	p.sp = true;
	p.overlap_tp = true;
	p.flash_attention = true;
	p.global_batch = 1;
	p.seq_len = 4096;
	resolve(&p);
	pure_compute_run(&p, &o, &comp, &r);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double d[2] = { 0, 0 }, t0[2] = { 0, 0 };
		int n = 0;
		for (int32_t j = 0; j < r.tl->n; j++) {
			const struct sim_slice *sl = &r.tl->s[j];
			if (strcmp(sl->name, c[i].name) || sl->layer != 0 || sl->micro != 0 ||
			    sl->track / SIM_TL_PER != 0)
				continue;
			ck_assert_int_lt(n, 2);
			d[n] = sl->t1_s - sl->t0_s;
			t0[n++] = sl->t0_s;
		}
		ck_assert_int_eq(n, 2);
		double first = t0[0] <= t0[1] ? d[0] : d[1], second = t0[0] <= t0[1] ? d[1] : d[0];
		ck_assert_msg(fabs(first / second / c[i].ratio - 1) < 1e-6, /* (ps) */
			      "%s: %.6f us then %.6f us, not %.3g chunks' to one", c[i].name, first * 1e6,
			      second * 1e6, c[i].ratio);
	}
	sim_prediction_release(&r);
	/* host-bound (1 ms an issue): a pipeline is one Linear call of
	 * Transformer Engine, whose C++ launches the chunks, so it costs the
	 * host one issue, as the GEMM does without the overlap, and the
	 * iteration takes as long as without it (the old rule issued each
	 * chunk: 8 issues for an all-gather's GEMM, 4 for a reduce-scatter's,
	 * and llama3-8b tp 8 at the default 55 us came out 47 % slower with
	 * overlap.tp than without) */
	{
		struct sim_prediction r0;
		comp.dispatch_s = 1e-3;
		run(&p, &o, &r);
		p.overlap_tp = false;
		run(&p, &o, &r0);
		ck_assert_msg(r.iteration_time_s > 0.5 && r0.iteration_time_s > 0.5, "not host-bound: %.4f, %.4f s",
			      r.iteration_time_s, r0.iteration_time_s);
		ck_assert_msg(fabs(r.iteration_time_s / r0.iteration_time_s - 1) < 0.01,
			      "host-bound: %.4f s with overlap.tp against %.4f s without", r.iteration_time_s,
			      r0.iteration_time_s);
		sim_prediction_release(&r0);
	}
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* comm_bytes_per_gpu counts the encoder's TP all-reduces at the images
 * drawn, as they ran (found by review: at the plan's mean, counting images
 * cut at seq_len). Two images of uniform 600-1,400 tokens in 2,048: what
 * fits, E[min(T1 + T2, 2048)], against the mean's 2,000; 256 samples. */
START_TEST(vision_comm_bytes_follow_the_draws)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f, c;
	double want = 0;
	vl_analytic(&p, &o, 256, 2, 1000);
	run(&p, &o, &f);
	set_uniform(&p.image_tokens, 600, 1400);
	run(&p, &o, &a);
	p.images_per_sample.value = 0;
	run(&p, &o, &c);
	for (int i = 0; i < 400; i++)
		for (int j = 0; j < 400; j++) {
			double t = 600 + 800 * (i + 0.5) / 400 + 600 + 800 * (j + 0.5) / 400;
			want += (t < 2048 ? t : 2048) / 2000 / (400.0 * 400);
		}
	double got = (a.comm_bytes[SIM_COMM_TP] - c.comm_bytes[SIM_COMM_TP]) /
		     (f.comm_bytes[SIM_COMM_TP] - c.comm_bytes[SIM_COMM_TP]);
	ck_assert_msg(want < 0.95 && fabs(got / want - 1) < 0.03,
		      "encoder all-reduce bytes %.4f of the mean image's, the tokens that fit %.4f", got,
		      want);
	sim_prediction_release(&a);
	sim_prediction_release(&f);
	sim_prediction_release(&c);
	topo_release(&topo);
}
END_TEST

START_TEST(vision_tp_traffic_follows_images)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double g[64], c[64], ratio_g, ratio_c;
	int lo = -1, hi = -1;
	vl_plan(&p, 32);
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 2;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.timeline = true;
	run(&p, &o, &r);
	ck_assert_int_le(r.micro_batches, 64);
	slice_sums(&r, "vit qkv gemm", g, r.micro_batches);
	slice_sums(&r, "vit tp allreduce", c, r.micro_batches);
	for (int i = 0; i < r.micro_batches; i++) {
		if (g[i] <= 0)
			continue; /* a micro-batch without images */
		if (lo < 0 || g[i] < g[lo])
			lo = i;
		if (hi < 0 || g[i] > g[hi])
			hi = i;
	}
	ck_assert(lo >= 0 && hi >= 0 && c[lo] > 0);
	ratio_g = g[hi] / g[lo];
	ratio_c = c[hi] / c[lo];
	/* the drawn loads differ between micro-batches, and the encoder's TP
	 * all-reduces grow with them instead of staying at the mean */
	ck_assert_msg(ratio_g > 1.2, "vision compute ratio %.3f: no variation drawn", ratio_g);
	ck_assert_msg(ratio_c > 1 + 0.5 * (ratio_g - 1),
		      "vision tp all-reduce ratio %.3f does not follow the compute ratio %.3f",
		      ratio_c, ratio_g);
	sim_prediction_release(&r);
	/* each slice's size is whole bytes, also where images of drawn sizes
	 * scale the mean's (found by review: 7342293.45 bytes in the trace) */
	set_uniform(&p.image_tokens, 64, 1024);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++)
		ck_assert_msg(r.tl->s[i].bytes == floor(r.tl->s[i].bytes), "%s: %.6f bytes",
			      r.tl->s[i].name, r.tl->s[i].bytes);
	sim_prediction_release(&r);
	p.image_tokens.kind = PLAN_DIST_FIXED;
	/* a micro-batch without images (half the samples have none) has no
	 * vision slices (found by review: zero-length ones) */
	set_uniform(&p.images_per_sample, 0, 1);
	run(&p, &o, &r);
	slice_sums(&r, "vit qkv gemm", g, r.micro_batches);
	{
		int empty = 0, vit = 0;
		for (int i = 0; i < r.micro_batches; i++)
			empty += g[i] <= 0;
		ck_assert_int_gt(empty, 0);
		for (int32_t i = 0; i < r.tl->n; i++)
			if (!strncmp(r.tl->s[i].name, "vit", 3)) {
				ck_assert_msg(r.tl->s[i].t1_s > r.tl->s[i].t0_s, "'%s' of micro %d: empty",
					      r.tl->s[i].name, r.tl->s[i].micro);
				vit++;
			}
		ck_assert_int_gt(vit, 0);
	}
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* A small model on dgx-h100-ndr with `nodes` nodes: plan defaults with
 * sequences of 512, options with a timeline. */
/* Interleaved with pp not dividing the micro-batches: each stage runs
 * Megatron-core's order (schedules.py: get_schedule_table with micro-batch
 * groups of pp, the last group short; warm-up 2(p - s - 1) + (v - 1)p;
 * then a forward and a backward per step), read back from the timeline.
 * eq_model (16 layers), pp 4, v 2, dp 2, 6 micro-batches: chunk c of stage
 * s holds layers 2(4c + s) and 2(4c + s) + 1. That order run as a list
 * schedule with each task's compute time from the timeline gives the
 * iteration (with the optimizer step) to 0.1 % and the bubble to 1 %: 0.53
 * of compute, where (p - 1)/(v m) would be 0.25. A plan whose order
 * deadlocks (v 4, 5 micro-batches) is refused by plan_resolve; pushed past
 * it, the executor finds the deadlock too. */
START_TEST(interleaved_short_group_order)
{
	enum { P = 4, V = 2, M = 6, T = M * V };
	int tab[T][2], n = 0, want[P][2 * T][3], got[P][2 * T][3], ng[P] = { 0 };
	double t0[P][2 * T];
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	for (int g = 0; g < M; g += P) /* (micro-batch, chunk) of forward k */
		for (int c = 0; c < V; c++)
			for (int mi = g; mi < (g + P >= M ? M : g + P); mi++, n++) {
				tab[n][0] = mi;
				tab[n][1] = c;
			}
	ck_assert_int_eq(n, T);
	for (int s = 0; s < P; s++) {
		int warm = 2 * (P - s - 1) + (V - 1) * P, k = 0;
		for (int i = 0; i < T + warm; i++) {
			if (i < T) /* forward i */
				memcpy(want[s][k++], (int[3]){ 0, tab[i][0], tab[i][1] }, sizeof(want[s][0]));
			if (i >= warm) /* backward i - warm */
				memcpy(want[s][k++],
				       (int[3]){ 1, tab[i - warm][0], V - 1 - tab[i - warm][1] },
				       sizeof(want[s][0]));
		}
		ck_assert_int_eq(k, 2 * T);
	}
	setup_small(&p, &o, 1, eq_model);
	p.pp = P;
	p.schedule = PLAN_SCHED_INTERLEAVED;
	p.virtual_stages = V;
	p.global_batch = 2 * M;
	o.free_comm = true;
	resolve(&p);
	ck_assert_int_eq(plan_microbatches(&p), M);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *sl = &r.tl->s[i];
		int rep, s, bwd = !strcmp(sl->name, "qkv dgrad"), vs = sl->layer / 2;
		if ((strcmp(sl->name, "qkv gemm") && !bwd) || sl->layer % 2 ||
		    sscanf(r.tl->track[sl->track], "rep %d stage %d compute", &rep, &s) != 2 || rep)
			continue;
		ck_assert_int_eq(vs % P, s);
		ck_assert_int_lt(ng[s], 2 * T);
		int j = ng[s]++;
		while (j > 0 && t0[s][j - 1] > sl->t0_s) { /* by start */
			t0[s][j] = t0[s][j - 1];
			memcpy(got[s][j], got[s][j - 1], sizeof(got[s][0]));
			j--;
		}
		t0[s][j] = sl->t0_s;
		memcpy(got[s][j], (int[3]){ bwd, sl->micro, vs / P }, sizeof(got[s][0]));
	}
	for (int s = 0; s < P; s++) {
		ck_assert_int_eq(ng[s], 2 * T);
		for (int k = 0; k < 2 * T; k++)
			ck_assert_msg(!memcmp(got[s][k], want[s][k], sizeof(want[s][k])),
				      "stage %d task %d: %s micro %d chunk %d, want %s %d %d", s, k,
				      got[s][k][0] ? "bwd" : "fwd", got[s][k][1], got[s][k][2],
				      want[s][k][0] ? "bwd" : "fwd", want[s][k][1], want[s][k][2]);
	}
	/* The bubble: that order run as a list schedule (each stage its tasks
	 * in turn, a forward after the previous virtual stage's forward of its
	 * micro-batch, a backward after the next one's backward) with each
	 * task's compute time from the timeline: its layers' ops, and the
	 * embedding's (stage 0, chunk 0) or the head's and loss's (stage 3,
	 * chunk 1) */
	{
		double dur[2][P * V][M] = { { { 0 } } }, done[2][P * V][M], at[P] = { 0 };
		double span = 0, work = 0, want_b, got_b;
		int pos[P] = { 0 }, moved = 1;
		for (int32_t i = 0; i < r.tl->n; i++) {
			const struct sim_slice *sl = &r.tl->s[i];
			int rep, s, bwd = strstr(sl->name, "grad") || strstr(sl->name, "bwd");
			if (sl->coll >= 0 || sl->micro < 0 ||
			    sscanf(r.tl->track[sl->track], "rep %d stage %d compute", &rep, &s) != 2 ||
			    rep)
				continue;
			int vs = sl->layer >= 0 ? sl->layer / 2 : s == 0 ? 0 : P * V - 1;
			ck_assert_int_eq(vs % P, s);
			dur[bwd][vs][sl->micro] += sl->t1_s - sl->t0_s;
			work += sl->t1_s - sl->t0_s;
		}
		for (int d = 0; d < 2; d++)
			for (int vs = 0; vs < P * V; vs++)
				for (int mi = 0; mi < M; mi++) {
					ck_assert_double_gt(dur[d][vs][mi], 0);
					done[d][vs][mi] = -1;
				}
		while (moved) {
			moved = 0;
			for (int s = 0; s < P; s++)
				while (pos[s] < 2 * T) {
					const int *t = want[s][pos[s]];
					int vs = t[2] * P + s, nb = t[0] ? vs + 1 : vs - 1;
					double need = nb < 0 || nb >= P * V ? 0 : done[t[0]][nb][t[1]];
					if (need < 0)
						break;
					at[s] = fmax(at[s], need) + dur[t[0]][vs][t[1]];
					done[t[0]][vs][t[1]] = at[s];
					pos[s]++;
					moved = 1;
				}
		}
		for (int s = 0; s < P; s++) {
			ck_assert_int_eq(pos[s], 2 * T);
			span = fmax(span, at[s]);
		}
		want_b = span - work / P; /* (the stages' compute differs by the head's) */
		got_b = r.bd.bubble_s;
		ck_assert_msg(fabs((span + r.bd.optimizer_s) / r.iteration_time_s - 1) < 1e-3,
			      "iteration %.6g s, list schedule %.6g s + optimizer %.6g s",
			      r.iteration_time_s, span, r.bd.optimizer_s);
		ck_assert_msg(fabs(got_b / want_b - 1) < 0.01, "bubble %.6g s, list schedule %.6g s",
			      got_b, want_b);
		/* the short last group's cost: (p - 1)/(v m) would be 0.25 */
		ck_assert_double_gt(got_b / r.bd.compute_s, 0.5);
		ck_assert_double_gt(want_b / (work / P), 0.5);
	}
	sim_prediction_release(&r);
	/* deadlock: refused, and the executor agrees */
	p.virtual_stages = 4;
	p.global_batch = 10;
	ck_assert_int_eq(plan_resolve(&p, &model, topo.ngpus, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, "deadlocks with 5 micro-batches"), "%s", err.msg);
	p.global_batch = 16;
	resolve(&p);
	p.global_batch = 10;
	o.timeline = false;
	ck_assert_int_ne(sim_predict(&topo, &model, &p, &o, &r, &err), 0);
	ck_assert_msg(strstr(err.msg, "deadlocked"), "%s", err.msg);
	topo_release(&topo);
}
END_TEST

/* The slices named `name` on representative 0: count, total, shortest and
 * longest duration (s). */
struct slice_stats {
	int n;
	double sum, min, max;
};

static struct slice_stats slices(const struct sim_prediction *r, const char *name)
{
	struct slice_stats st = { 0, 0, INFINITY, 0 };
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *sl = &r->tl->s[i];
		double d = sl->t1_s - sl->t0_s;
		if (strcmp(sl->name, name) || sl->track / SIM_TL_PER != 0)
			continue;
		st.n++;
		st.sum += d;
		st.min = fmin(st.min, d);
		st.max = fmax(st.max, d);
	}
	return st;
}

static double slice_time(const struct sim_prediction *r, const char *name)
{
	return slices(r, name).sum;
}

static int slice_count(const struct sim_prediction *r, const char *name)
{
	return slices(r, name).n;
}

/* Flash attention executes FlashAttention's own FLOP count: 4 b s^2 heads d
 * halved for a decoder's causal mask, backward 2.5x the forward; each slice
 * takes what the compute model gives for that many FLOPs and its bytes, at
 * the kernel's shape (16 heads of 64, s queries attending s / 2 keys on
 * average, masked: its tiling; the backward kernel at its own
 * efficiency). */
START_TEST(flash_attention_executes_causal_flops)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct sim_compute c;
	struct sim_op_desc d;
	setup_small(&p, &o, 1, small_model);
	p.flash_attention = true;
	p.seq_len = 2048;
	p.global_batch = 8; /* dp 8, one micro-batch each */
	resolve(&p);
	run(&p, &o, &r);
	sim_compute_init(&c, &topo.cl.gpu);
	double s = 2048, q = 1024, full = 4 * s * s * q, T = s;
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_ATTN;
	d.dtype_bytes = 2;
	d.m = 2048;
	d.n = 1024;
	d.k = 64;
	d.batch = 16;
	d.masked = true;
	d.flops = 0.5 * full;
	d.bytes = 2 * T * (3 * q) * 2;
	double want_f = sim_compute_time_s(&c, &d);
	d.flops = 2.5 * 0.5 * full;
	d.bytes = 4 * T * (3 * q) * 2;
	d.backward = true;
	double want_b = sim_compute_time_s(&c, &d);
	struct slice_stats f = slices(&r, "attention"), b = slices(&r, "attention bwd");
	ck_assert_int_eq(f.n, 8); /* one per layer */
	ck_assert_int_eq(b.n, 8);
	/* times are whole picoseconds */
	ck_assert_msg(fabs(f.max - want_f) < 2e-12 && fabs(f.min - want_f) < 2e-12,
		      "attention %.12g..%.12g s, want %.12g", f.min, f.max, want_f);
	ck_assert_msg(fabs(b.max - want_b) < 2e-12 && fabs(b.min - want_b) < 2e-12,
		      "attention bwd %.12g..%.12g s, want %.12g", b.min, b.max, want_b);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* An all-reduce over more than 64 ranks takes NCCL's tree when its cost
 * model beats the ring's, as `collective` picks for a group it can plan
 * (found by review: such groups always ran as rings, whose 2(nodes - 1)
 * network steps alone cost 3.6 ms at 128 nodes; a small model's gradient
 * all-reduce went 2.3 -> 12.0 ms from 9 to 128 nodes): the time grows with
 * log2(nodes), flow and analytic alike (the model prices it). */
START_TEST(big_allreduce_tree)
{
	static const int nodes[] = { 9, 128 };
	double t[2][2];
	for (int k = 0; k < 2; k++) {
		struct plan p;
		struct sim_predict_opts o;
		struct sim_prediction r;
		load_topo("dgx-h100-ndr", nodes[k]);
		load_model_json("{\"n_embd\": 1024, \"n_layer\": 2, \"n_head\": 16, \"vocab_size\": "
				"50257, \"n_positions\": 2048, \"model_type\": \"gpt2\"}");
		plan_init(&p);
		p.global_batch = nodes[k] * 8;
		p.seq_len = 1024;
		resolve(&p);
		ck_assert_int_eq(p.dp, nodes[k] * 8);
		sim_predict_opts_init(&o);
		o.timeline = true;
		for (int f = 0; f < 2; f++) {
			o.fidelity = f ? SIM_FLOW : SIM_ANALYTIC;
			run(&p, &o, &r);
			struct slice_stats st = slices(&r, "dp grad reduce");
			ck_assert_int_eq(st.n, 1);
			t[k][f] = st.max;
			sim_prediction_release(&r);
		}
		topo_release(&topo);
	}
	ck_assert_msg(t[1][0] < 3.0e-3, "128 nodes: %.6f s (the ring's network steps alone 3.6 ms)",
		      t[1][0]);
	ck_assert_msg(t[1][0] < 1.2 * t[0][0], "9 -> 128 nodes: %.6f -> %.6f s", t[0][0], t[1][0]);
	for (int k = 0; k < 2; k++)
		ck_assert_msg(fabs(t[k][1] / t[k][0] - 1) < 1e-6, "%d nodes: flow %.9f vs analytic %.9f s",
			      nodes[k], t[k][1], t[k][0]);
}
END_TEST

/* Whether this build runs under a sanitizer (whose shadow memory an
 * address-space limit counts). */
static bool sanitized_build(void)
{
	bool sanitized = false;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
	sanitized = true;
#endif
#endif
	return sanitized;
}

/* Address space of this process, bytes (/proc/self/statm's first field). */
static double vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = -1;
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld", &pages), 1);
	fclose(f);
	return (double)pages * (double)sysconf(_SC_PAGESIZE);
}

/* A flow-level run keeps the plans of its collectives in flight only, not
 * of every collective it ran. Found on the vTrain set: the 3.6B model at
 * tp 16 over two DGX A100 nodes, micro-batch 2, ran NCCL's tree (some
 * 0.4 MB of plan per all-reduce), kept them all and passed 3 GB at four
 * of its 30 layers. Here 176 collectives needed 100-150 MB more address
 * space; now about 13 MB. The limit is on the address space, restored
 * before any assertion (so that with CK_FORK=no the tests after it run
 * unlimited); under a sanitizer, whose shadow memory it counts, the test
 * only runs the plan. */
START_TEST(flow_frees_finished_collectives)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct rlimit old, lim;
	struct ts_error err = TS_ERROR_INIT;
	bool sanitized = sanitized_build();
	int rc;
	load_topo("dgx-a100-hdr", 2);
	load_model_json("{\"n_embd\": 3072, \"n_layer\": 1, \"n_head\": 32, \"vocab_size\": "
			"50257, \"n_positions\": 2048, \"model_type\": \"gpt2\"}");
	plan_init(&p);
	p.tp = 16;
	p.micro_batch = 2;
	p.global_batch = 32;
	p.seq_len = 2048;
	p.recompute = PLAN_RC_FULL;
	p.precision = PLAN_DT_FP16;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_FLOW;
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)(vm_bytes() + 64e6);
	if (!sanitized && (old.rlim_cur == RLIM_INFINITY || old.rlim_cur > lim.rlim_cur))
		ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
	rc = sim_predict(&topo, &model, &p, &o, &r, &err);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_msg(r.collectives >= 150, "%llu collectives", (unsigned long long)r.collectives);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* A data-parallel all-reduce over more than 64 ranks runs at flow level as
 * a steady-state ring (fluid_ring), its flows on the network: it counts
 * among the collectives, as the README says of `collectives`. Found on
 * 2026-12-04: ZeRO-3 over 128 GPUs reported 0 collectives beside 64,512
 * flows; here ZeRO-1 over 72 reported 0 beside 1,152. */
START_TEST(fluid_ring_counts_as_collective)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	load_topo("dgx-h100-ndr", 9);
	load_model_json("{\"n_embd\": 256, \"n_layer\": 2, \"n_head\": 4, \"vocab_size\": "
			"1024, \"n_positions\": 512, \"model_type\": \"gpt2\"}");
	plan_init(&p);
	p.global_batch = 72;
	p.seq_len = 512;
	p.zero = 1; /* a reduce-scatter and an all-gather (an all-reduce this
		     * small takes NCCL's tree, priced without flows) */
	resolve(&p);
	ck_assert_int_eq(p.dp, 72);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_FLOW;
	run(&p, &o, &r);
	/* the DP reduction is the run's only communication (no tp, pp) */
	ck_assert(r.comm_bytes[SIM_COMM_DP] > 0 && r.flows > 0);
	ck_assert_msg(r.collectives >= 2, "%llu collectives, %llu flows",
		      (unsigned long long)r.collectives, (unsigned long long)r.flows);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Tied embeddings on pp 2: the two ends' exchange of gradients is an
 * all-reduce, whose data moves once both ends have entered it, after
 * their own DP reductions. Found by review (2026-12-04): the last stage
 * sent as soon as its own reduction was done, into the first stage's NICs
 * while that stage still reduced, so the flow level was 11.4 % above the
 * analytic level (0.2047 against 0.1838 s; exposed DP 47.3 against 27.0
 * ms), where the two shared the NICs, and the analytic level overlapped
 * them for free. Now the two levels agree, as do folded and --exact. */
START_TEST(tied_exchange_waits_for_both_ends)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f, x;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 4);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	ck_assert(model.tie_embeddings);
	plan_init(&p);
	p.pp = 2;
	p.global_batch = 32;
	p.flash_attention = true;
	resolve(&p);
	run_levels(&p, &o, &a, &f);
	o.exact = true;
	run(&p, &o, &x);
	ck_assert_msg(fabs(f.iteration_time_s / a.iteration_time_s - 1) < 0.01,
		      "flow %.6f s, analytic %.6f s", f.iteration_time_s, a.iteration_time_s);
	ck_assert_msg(fabs(f.bd.exposed_comm_s[SIM_COMM_DP] / a.bd.exposed_comm_s[SIM_COMM_DP] - 1) < 0.02,
		      "exposed DP: flow %.6f s, analytic %.6f s", f.bd.exposed_comm_s[SIM_COMM_DP],
		      a.bd.exposed_comm_s[SIM_COMM_DP]);
	ck_assert_msg(fabs(f.bd.exposed_comm_s[SIM_COMM_PP] / a.bd.exposed_comm_s[SIM_COMM_PP] - 1) < 0.05,
		      "exposed PP: flow %.6f s, analytic %.6f s", f.bd.exposed_comm_s[SIM_COMM_PP],
		      a.bd.exposed_comm_s[SIM_COMM_PP]);
	/* folded as --exact: to the picosecond while the DP reductions were
	 * rings; NCCL's NVLSTree (2026-12-06), whose tree leaves each NIC in
	 * chunks beside the last pipeline send, puts the fold's last gradient
	 * receive of stage 0 86 us earlier (0.04 %) */
	ck_assert_msg(fabs(x.iteration_time_s / f.iteration_time_s - 1) < 5e-4,
		      "exact %.9f s, folded %.9f s", x.iteration_time_s, f.iteration_time_s);
	for (int c = 0; c < SIM_COMM_COUNT; c++)
		ck_assert_msg(fabs(x.bd.exposed_comm_s[c] - f.bd.exposed_comm_s[c]) <
				      (c == SIM_COMM_PP ? 1e-4 : 1e-6),
			      "exposed %d: exact %.6f s, folded %.6f s", c, x.bd.exposed_comm_s[c],
			      f.bd.exposed_comm_s[c]);
	sim_prediction_release(&a);
	sim_prediction_release(&f);
	sim_prediction_release(&x);
	topo_release(&topo);
}
END_TEST

/* ZeRO-Offload: the optimizer leaves the GPU; its time is the shard's bytes
 * over PCIe (both ways) and over host memory, as the compute model says. */
START_TEST(zero_offload_costs_host_time)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct model_params mp;
	struct sim_compute c;
	double n, link, want_copy, want_adam, got_copy, got_adam, wb, gb, ob;
	setup_small(&p, &o, 1, small_model);
	p.zero = 3;
	p.global_batch = 8;
	/* (blocking gathers, so that each host fetch adds its time) */
	p.overlap_dp = false;
	plan_set_src(&p, PF_OVERLAP_DP, "overlap.dp");
	resolve(&p);
	ck_assert_int_eq(p.dp, 8);
	run(&p, &o, &a);
	p.offload = PLAN_OFF_OPTIMIZER;
	run(&p, &o, &b);
	model_count_params(&model, &mp);
	sim_compute_init(&c, &topo.cl.gpu);
	link = 0.8 * topo.cl.node.pcie_Bps;
	memory_bytes_per_param(&p, &wb, &gb, &ob); /* weights, gradients, Adam state */
	ck_assert(wb == 2 && ob == 12);
	n = (double)mp.sum_total / p.dp;
	want_copy = n * gb / link + n * wb / link + 2 * c.launch_s;
	/* CPU Adam reads fp32 gradients (the host's, as the memory model
	 * keeps them), reads and writes the fp32 state and writes the 16-bit
	 * weights: 4 + 24 + 2 bytes (found by an audit: it read 2-byte
	 * gradients, 28) */
	want_adam = n * (4 + 2 * ob + wb) / c.host_mem_Bps;
	got_copy = slice_time(&b, "offload grads d2h") + slice_time(&b, "offload params h2d");
	got_adam = slice_time(&b, "cpu adam");
	/* host work on its own track, not drawn as GPU compute (found by review) */
	for (int32_t i = 0; i < b.tl->n; i++) {
		const struct sim_slice *sl = &b.tl->s[i];
		bool host = !strcmp(sl->name, "cpu adam") || !strncmp(sl->name, "offload ", 8);
		ck_assert_msg((sl->track % SIM_TL_PER == SIM_TL_HOST) == host, "'%s' on track %s",
			      sl->name, b.tl->track[sl->track]);
	}
	ck_assert_str_eq(b.tl->track[SIM_TL_HOST], "rep 0 stage 0 host offload");
	ck_assert_msg(fabs(got_copy / want_copy - 1) < 0.01, "copies %.6g s, want %.6g", got_copy,
		      want_copy);
	ck_assert_msg(fabs(got_adam / want_adam - 1) < 0.01, "cpu adam %.6g s, want %.6g", got_adam,
		      want_adam);
	ck_assert_double_eq(slice_time(&b, "optimizer step"), 0);
	/* the step grows by the host time less the GPU optimizer it replaces */
	ck_assert_msg(fabs((b.iteration_time_s - a.iteration_time_s) -
			   (want_copy + want_adam - slice_time(&a, "optimizer step"))) <
			      0.01 * (want_copy + want_adam),
		      "offload adds %.6g s, want %.6g", b.iteration_time_s - a.iteration_time_s,
		      want_copy + want_adam - slice_time(&a, "optimizer step"));
	/* ZeRO-Infinity: each layer gather first copies the rank's shard of the
	 * layer's 16-bit weights from host memory, so every gather takes the
	 * copy plus the bare collective (the shortest gather without offload;
	 * the others also waited for replicas, which the copy now covers). */
	{
		struct sim_prediction c3;
		const char *g = "zero3 param allgather";
		int64_t lt, la, le;
		struct slice_stats sb = slices(&b, g), sc;
		double fetch;
		model_layer_params(&model, 0, &lt, &la, &le);
		fetch = (double)lt * wb / p.dp / link;
		p.offload = PLAN_OFF_PARAMS;
		run(&p, &o, &c3);
		sc = slices(&c3, g);
		ck_assert_int_eq(sc.n, sb.n);
		ck_assert_int_eq(sb.n, 2 * model.layers); /* forward and backward of one micro-batch */
		ck_assert_msg(fabs(sc.min - sb.min - fetch) < 0.01 * fetch &&
				      fabs(sc.max - sb.min - fetch) < 0.01 * fetch,
			      "gathers %.6g..%.6g s, want %.6g + %.6g s fetch", sc.min, sc.max, sb.min,
			      fetch);
		/* the fetches lengthen the gathers the iteration waits for
		 * (those the layer ahead's compute does not hide; the iteration
		 * itself may come out shorter: the weights no longer go back to
		 * the GPU after CPU Adam) */
		ck_assert_double_gt(c3.bd.exposed_comm_s[SIM_COMM_DP],
				    b.bd.exposed_comm_s[SIM_COMM_DP] + fetch);
		/* the updated weights stay in host memory (found by review: they
		 * were copied back after CPU Adam as well) */
		ck_assert_double_eq(slice_time(&c3, "offload params h2d"), 0);
		ck_assert_msg(fabs(slice_time(&c3, "offload grads d2h") / (n * gb / link + c.launch_s) - 1) <
				      0.01,
			      "grads d2h %.6g s", slice_time(&c3, "offload grads d2h"));
		sim_prediction_release(&c3);
	}
	/* Megatron's CPU offload (the distributed optimizer): its Adam reads
	 * the fp32 main gradients, the 12-byte state and writes the weights,
	 * 30 bytes a parameter whether the gradients were bf16 or fp32 (found
	 * by review: with bf16 ones the state counted the main gradients too,
	 * 38 bytes) */
	for (int k = 0; k < 2; k++) {
		struct sim_prediction d;
		plan_init(&p);
		p.seq_len = 512;
		p.global_batch = 8;
		p.distributed_optimizer = true;
		p.offload = PLAN_OFF_OPTIMIZER;
		p.grad_dtype = k ? PLAN_DT_FP32 : PLAN_DT_BF16;
		plan_set_src(&p, PF_GRAD_DTYPE, "grad_dtype");
		resolve(&p);
		ck_assert(p.precision == PLAN_DT_BF16 && p.dp == 8);
		run(&p, &o, &d);
		want_adam = (double)mp.sum_total / p.dp * (4 + 24 + 2) / c.host_mem_Bps;
		ck_assert_msg(fabs(slice_time(&d, "cpu adam") / want_adam - 1) < 0.01,
			      "%s gradients: cpu adam %.6g s, want %.6g", k ? "fp32" : "bf16",
			      slice_time(&d, "cpu adam"), want_adam);
		sim_prediction_release(&d);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* ZeRO-2/3 with offload keep the accumulated gradient shard in host
 * memory: every micro-batch's reduced shard goes down, and from the second
 * on the accumulated one first comes up to take it (DeepSpeed's
 * async_accumulate_grad_in_cpu_via_gpu, stage 3's partition_grads): m
 * copies down and m - 1 up of the shard at the gradients' bytes, where one
 * copy down after the last was made (found by an audit: llama3-8b, tp 8,
 * 8 DGX H100 nodes, 8 micro-batches, 0.6989 -> 0.7676 s). */
START_TEST(zero_offload_moves_the_shard_each_micro_batch)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r[2];
	struct model_params mp;
	struct sim_compute c;
	double n, one, wb, gb, ob;
	setup_small(&p, &o, 1, small_model);
	sim_compute_init(&c, &topo.cl.gpu);
	model_count_params(&model, &mp);
	for (int k = 0; k < 2; k++) {
		plan_init(&p);
		p.seq_len = 512;
		p.zero = 2 + k;
		p.offload = PLAN_OFF_OPTIMIZER;
		p.global_batch = 32;
		resolve(&p);
		ck_assert_int_eq(p.dp, 8);
		ck_assert_int_eq(plan_microbatches(&p), 4);
		run(&p, &o, &r[k]);
		memory_bytes_per_param(&p, &wb, &gb, &ob);
		n = (double)mp.sum_total / p.dp;
		one = n * gb / (0.8 * topo.cl.node.pcie_Bps) + c.launch_s;
		ck_assert_int_eq(slice_count(&r[k], "offload grads d2h"), 4);
		ck_assert_int_eq(slice_count(&r[k], "offload grads h2d"), 3);
		ck_assert_msg(fabs(slice_time(&r[k], "offload grads d2h") / (4 * one) - 1) < 0.01,
			      "zero %d: d2h %.6g s, want 4 x %.6g", p.zero,
			      slice_time(&r[k], "offload grads d2h"), one);
		ck_assert_msg(fabs(slice_time(&r[k], "offload grads h2d") / (3 * one) - 1) < 0.01,
			      "zero %d: h2d %.6g s, want 3 x %.6g", p.zero,
			      slice_time(&r[k], "offload grads h2d"), one);
		/* in the breakdown's optimizer part, as the step's host work */
		ck_assert_double_ge(r[k].bd.optimizer_s, 7 * one + slice_time(&r[k], "cpu adam"));
		sim_prediction_release(&r[k]);
	}
	topo_release(&topo);
}
END_TEST

/* Tied embeddings on pp > 1: the first and last stage exchange their
 * embedding gradients (V h / tp in the gradient type) before the optimizer,
 * here over one 400G NIC per rank between the two nodes. */
START_TEST(tied_embedding_grads_exchanged)
{
	static const char *big_vocab = "{\"n_embd\": 1024, \"n_layer\": 8, \"n_head\": 16, "
				       "\"vocab_size\": 100000, \"n_positions\": 2048, "
				       "\"model_type\": \"gpt2\", \"tie_word_embeddings\": %s}";
	char text[256];
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double wb, gb, ob, bytes, want, got;
	snprintf(text, sizeof(text), big_vocab, "true");
	setup_small(&p, &o, 2, text);
	p.pp = 2;
	p.global_batch = 16;
	resolve(&p);
	ck_assert_int_eq(p.dp, 8);
	run(&p, &o, &r);
	memory_bytes_per_param(&p, &wb, &gb, &ob);
	bytes = 100000.0 * 1024 * gb;
	want = bytes / topo.cl.node.nic_Bps;
	got = slice_time(&r, "embedding grad send");
	/* payload efficiency (MTU headers) and latency make it a little slower */
	ck_assert_msg(got > want && got < 1.1 * want, "exchange %.6g s, want about %.6g s", got, want);
	ck_assert_double_gt(r.comm_bytes[SIM_COMM_DP], 0);
	sim_prediction_release(&r);
	/* untied: no exchange */
	snprintf(text, sizeof(text), big_vocab, "false");
	load_model_json(text);
	resolve(&p);
	run(&p, &o, &r);
	ck_assert_double_eq(slice_time(&r, "embedding grad send"), 0);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

static double parts(const struct sim_prediction *r)
{
	return r->bd.compute_s + r->bd.bubble_s + r->bd.optimizer_s + r->bd.host_s + exposed_total(r);
}

/* The breakdown follows the critical path, so its parts add up to the
 * iteration time. With pp 2 and DP reduced after backward, stage 0 ends the
 * iteration with its DP reduction while its compute stream is idle: that
 * reduction is the exposed DP time, though the stage with the most compute
 * is the last one (its LM head). */
START_TEST(breakdown_follows_critical_path)
{
	static const char *untied = "{\"n_embd\": 1024, \"n_layer\": 8, \"n_head\": 16, "
				    "\"vocab_size\": 50000, \"n_positions\": 2048, "
				    "\"model_type\": \"gpt2\", \"tie_word_embeddings\": false}";
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct slice_stats dp;
	double sum;
	setup_small(&p, &o, 2, untied);
	o.overlap_slowdown = 1;
	p.pp = 2;
	p.tp = 2;
	p.global_batch = 16;
	resolve(&p);
	ck_assert_int_eq(p.dp, 4);
	ck_assert(!p.overlap_dp);
	run(&p, &o, &r);
	sum = r.bd.compute_s + r.bd.bubble_s + r.bd.optimizer_s + r.bd.host_s + exposed_total(&r);
	ck_assert_msg(fabs(sum / r.iteration_time_s - 1) < 1e-9, "parts %.9g s, iteration %.9g s", sum,
		      r.iteration_time_s);
	ck_assert_int_eq(r.critical_stage, 1);
	dp = slices(&r, "dp grad reduce");
	ck_assert_int_gt(dp.n, 0);
	ck_assert_msg(fabs(r.bd.exposed_comm_s[SIM_COMM_DP] / dp.sum - 1) < 1e-6,
		      "exposed dp %.9g s, stage 0's reduction %.9g s", r.bd.exposed_comm_s[SIM_COMM_DP],
		      dp.sum);
	ck_assert_double_gt(r.bd.bubble_s, 0);
	sim_prediction_release(&r);
	/* the same with DP overlapped with backward: less of it exposed, parts
	 * still adding up */
	p.overlap_dp = true;
	p.bucket_bytes = 4e6;
	resolve(&p);
	run(&p, &o, &r);
	sum = r.bd.compute_s + r.bd.bubble_s + r.bd.optimizer_s + r.bd.host_s + exposed_total(&r);
	ck_assert_msg(fabs(sum / r.iteration_time_s - 1) < 1e-9, "parts %.9g s, iteration %.9g s", sum,
		      r.iteration_time_s);
	ck_assert_double_lt(r.bd.exposed_comm_s[SIM_COMM_DP], dp.sum);
	sim_prediction_release(&r);
	/* every rank simulated: the same reduction of stage 0 (rank 0) */
	p.overlap_dp = false;
	resolve(&p);
	o.exact = true;
	run(&p, &o, &r);
	ck_assert_msg(fabs(parts(&r) / r.iteration_time_s - 1) < 1e-9, "exact: parts %.9g s, iteration %.9g s",
		      parts(&r), r.iteration_time_s);
	ck_assert_msg(fabs(r.bd.exposed_comm_s[SIM_COMM_DP] / dp.sum - 1) < 1e-6,
		      "exact: exposed dp %.9g s, stage 0's reduction %.9g s",
		      r.bd.exposed_comm_s[SIM_COMM_DP], dp.sum);
	sim_prediction_release(&r);
	topo_release(&topo);
	/* async with ZeRO-3: the step without reduction still gathers
	 * parameters; the reduction's excess is added to that */
	setup_small(&p, &o, 1, small_model);
	p.zero = 3;
	p.sync = PLAN_SYNC_ASYNC;
	p.global_batch = 16;
	resolve(&p);
	run(&p, &o, &r);
	ck_assert_msg(fabs(parts(&r) / r.iteration_time_s - 1) < 1e-9, "async: parts %.9g s, iteration %.9g s",
		      parts(&r), r.iteration_time_s);
	ck_assert_double_gt(r.bd.exposed_comm_s[SIM_COMM_DP], 0);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* End of rep 0's first slice named `name` of micro-batch j starting at or
 * after t, s (INFINITY none). */
static double end_of(const struct sim_prediction *r, const char *name, int j, double t)
{
	double t0 = INFINITY, t1 = INFINITY;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *x = &r->tl->s[i];
		if (!strcmp(x->name, name) && x->track / SIM_TL_PER == 0 && x->micro == j &&
		    x->t0_s >= t && x->t0_s < t0) {
			t0 = x->t0_s;
			t1 = x->t1_s;
		}
	}
	return t1;
}

/* Start of rep 0's first slice named `name` of micro-batch j at or after
 * t, s (INFINITY none). */
static double start_of(const struct sim_prediction *r, const char *name, int j, double t)
{
	double t0 = INFINITY;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *x = &r->tl->s[i];
		if (!strcmp(x->name, name) && x->track / SIM_TL_PER == 0 && x->micro == j &&
		    x->t0_s >= t)
			t0 = fmin(t0, x->t0_s);
	}
	return t0;
}

/* ZeRO-3 partitions every parameter, not only the layers': the embedding
 * (with the vision encoder) and the LM head are gathered before their
 * forward and backward like a layer, and the ops that use them wait.
 * The DP bytes follow: ZeRO-2 reduce-scatters E gradient elements m times
 * and all-gathers E parameters once; ZeRO-3 reduce-scatters the same and
 * gathers, per micro-batch and direction, E plus the tied head's copy. */
START_TEST(zero3_gathers_every_parameter)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct model_params mp;
	int mm;
	double wb, E, want;
	setup_small(&p, &o, 1, small_model);
	p.global_batch = 16;
	p.zero = 2;
	resolve(&p);
	mm = plan_microbatches(&p);
	ck_assert_int_eq(mm, 2);
	run(&p, &o, &a);
	p.zero = 3;
	resolve(&p);
	run(&p, &o, &b);
	ck_assert_int_eq(slice_count(&b, "zero3 embedding allgather"), 2 * mm);
	ck_assert_int_eq(slice_count(&b, "zero3 lm head allgather"), 2 * mm);
	ck_assert_int_eq(slice_count(&a, "zero3 embedding allgather"), 0);
	for (int j = 0; j < mm; j++) {
		double e0 = end_of(&b, "zero3 embedding allgather", j, 0);
		double h0 = end_of(&b, "zero3 lm head allgather", j, 0);
		double hb = start_of(&b, "loss bwd", j, 0);
		double h1 = end_of(&b, "zero3 lm head allgather", j, h0);
		double eb = start_of(&b, "embedding bwd", j, 0);
		ck_assert(isfinite(e0) && isfinite(h0) && isfinite(h1) && isfinite(hb));
		ck_assert_double_ge(start_of(&b, "embedding", j, 0), e0);
		ck_assert_double_ge(start_of(&b, "lm head gemm", j, 0), h0);
		ck_assert_double_ge(start_of(&b, "lm head dgrad", j, hb), h1);
		/* the backward's embedding gather is the second one */
		ck_assert_double_ge(eb, end_of(&b, "zero3 embedding allgather", j, e0));
	}
	model_count_params(&model, &mp);
	wb = p.precision == PLAN_DT_FP32 ? 4 : 2;
	/* tp 1, pp 1: the whole model, its vocabulary padded to 1,024 rows
	 * (Megatron's multiple of 128) */
	ck_assert_int_eq(model.vocab, 1000);
	E = (double)mp.sum_total + 24.0 * model.hidden;
	want = (2.0 * mm * (E + 1024.0 * model.hidden) - E) * wb;
	ck_assert_msg(fabs((b.comm_bytes[SIM_COMM_DP] - a.comm_bytes[SIM_COMM_DP]) / want - 1) < 1e-9,
		      "zero-3 dp bytes %.9g, zero-2 %.9g: difference %.9g, want %.9g",
		      b.comm_bytes[SIM_COMM_DP], a.comm_bytes[SIM_COMM_DP],
		      b.comm_bytes[SIM_COMM_DP] - a.comm_bytes[SIM_COMM_DP], want);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Rep 0's compute time overlapping its slices named `name` (of micro-batch
 * `micro`, -1 any), s. */
static double compute_during(const struct sim_prediction *r, const char *name, int micro)
{
	double s = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *d = &r->tl->s[i];
		if (strcmp(d->name, name) || d->track / SIM_TL_PER != 0 || (micro >= 0 && d->micro != micro))
			continue;
		for (int32_t k = 0; k < r->tl->n; k++) {
			const struct sim_slice *c = &r->tl->s[k];
			double lo = fmax(c->t0_s, d->t0_s), hi = fmin(c->t1_s, d->t1_s);
			if (c->track == WL_S_COMPUTE && hi > lo)
				s += hi - lo;
		}
	}
	return s;
}

/* Start of rep 0's first compute op of micro-batch j, s. */
static double first_compute(const struct sim_prediction *r, int j)
{
	double t = INFINITY;
	for (int32_t i = 0; i < r->tl->n; i++)
		if (r->tl->s[i].track == WL_S_COMPUTE && r->tl->s[i].micro == j)
			t = fmin(t, r->tl->s[i].t0_s);
	return t;
}

/* End of rep 0's last slice named `name` of micro-batch j, s. */
static double last_end(const struct sim_prediction *r, const char *name, int j)
{
	double t = 0;
	for (int32_t i = 0; i < r->tl->n; i++)
		if (!strcmp(r->tl->s[i].name, name) && r->tl->s[i].track / SIM_TL_PER == 0 &&
		    r->tl->s[i].micro == j)
			t = fmax(t, r->tl->s[i].t1_s);
	return t;
}

/* ZeRO-2/3 keep only a gradient shard, so each micro-batch's gradients are
 * reduce-scattered in its own backward; ZeRO-1 reduces once. Without
 * overlap the reductions sit on the compute stream: m x the traffic, and
 * the iteration grows by the extra reduction time, all of it exposed. */
START_TEST(zero2_reduces_every_micro_batch)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct slice_stats s1, s2;
	int mm;
	double grow, gb, wb, want;
	setup_small(&p, &o, 2, small_model);
	o.overlap_slowdown = 1;
	p.global_batch = 64;
	p.zero = 1;
	/* (fused accumulation, not the DeepSpeed engine's adds: the
	 * difference is the reductions alone) */
	p.grad_accum_fusion = true;
	plan_set_src(&p, PF_GA_FUSION, "grad_accum_fusion");
	resolve(&p);
	mm = plan_microbatches(&p);
	ck_assert_int_eq(p.dp, 16);
	ck_assert_int_eq(mm, 4);
	run(&p, &o, &a);
	p.zero = 2;
	resolve(&p);
	run(&p, &o, &b);
	s1 = slices(&a, "dp grad reduce");
	s2 = slices(&b, "dp grad reduce");
	ck_assert_int_gt(s1.n, 0);
	ck_assert_int_eq(s1.n, 1);
	ck_assert(s2.n >= mm && s2.n % mm == 0); /* buckets per micro-batch */
	/* E gradient elements reduce-scattered (gb bytes each) once or mm
	 * times, then E parameters all-gathered (wb bytes) after the step */
	gb = p.grad_reduce_dtype == PLAN_DT_FP32 ? 4 : 2;
	wb = p.precision == PLAN_DT_FP32 ? 4 : 2;
	want = (mm * gb + wb) / (gb + wb);
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] / want - 1) < 1e-9,
		      "dp bytes %.6g, zero-1 %.6g, want ratio %.4g", b.comm_bytes[SIM_COMM_DP],
		      a.comm_bytes[SIM_COMM_DP], want);
	grow = b.iteration_time_s - a.iteration_time_s;
	ck_assert_msg(fabs(grow / (s2.sum - s1.sum) - 1) < 0.01,
		      "grew %.6g s, reductions %.6g s (zero-1 %.6g s)", grow, s2.sum, s1.sum);
	/* (both also expose the parameter all-gather after the step) */
	ck_assert_msg(fabs((b.bd.exposed_comm_s[SIM_COMM_DP] - a.bd.exposed_comm_s[SIM_COMM_DP]) /
			   (s2.sum - s1.sum) - 1) < 0.01,
		      "exposed dp %.6g s (zero-1 %.6g s), reductions %.6g s (zero-1 %.6g s)",
		      b.bd.exposed_comm_s[SIM_COMM_DP], a.bd.exposed_comm_s[SIM_COMM_DP], s2.sum, s1.sum);
	sim_prediction_release(&a);
	/* with sequence parallelism (a TP all-gather opens each layer's
	 * backward) no compute of rep 0 runs while a reduction does */
	p.tp = 2;
	p.sp = true;
	p.dp = 0;
	/* ZeRO-3's parameter gathers also hold the next op */
	for (int z = 2; z <= 3; z++) {
		p.zero = z;
		resolve(&p);
		run(&p, &o, &a);
		ck_assert_int_gt(slice_count(&a, "dp grad reduce"), 0);
		ck_assert_int_eq(slice_count(&a, "zero3 param allgather") > 0, z == 3);
		ck_assert_msg(compute_during(&a, "dp grad reduce", -1) == 0,
			      "zero-%d: %.6g s of compute during reductions", z,
			      compute_during(&a, "dp grad reduce", -1));
		sim_prediction_release(&a);
	}
	p.zero = 2;
	/* overlapped: reductions run beside the backward, but the next
	 * micro-batch starts after this one's reductions (DeepSpeed's epilogue) */
	p.overlap_dp = true;
	p.bucket_bytes = 4e6;
	resolve(&p);
	run(&p, &o, &a);
	ck_assert_double_gt(compute_during(&a, "dp grad reduce", -1), 0);
	for (int j = 0; j + 1 < mm; j++)
		ck_assert_msg(first_compute(&a, j + 1) >= last_end(&a, "dp grad reduce", j),
			      "micro-batch %d starts at %.9g s, %d's reductions end at %.9g s", j + 1,
			      first_compute(&a, j + 1), j, last_end(&a, "dp grad reduce", j));
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Host dispatch: the host issues every op of the compute stream in turn
 * while the GPU runs; a dispatch time far above the ops' GPU time makes the
 * iteration host-bound (about ops x dispatch), a small one hides behind the
 * GPU (no change). */
START_TEST(host_dispatch_bounds_small_ops)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c;
	struct sim_compute comp;
	int nops = 0;
	setup_small(&p, &o, 1, small_model);
	p.global_batch = 8;
	resolve(&p);
	sim_compute_init(&comp, &topo.cl.gpu);
	comp.dispatch_s = 0; /* GPU-bound */
	o.compute = &comp;
	run(&p, &o, &a);
	for (int32_t i = 0; i < a.tl->n; i++)
		nops += a.tl->s[i].track == WL_S_COMPUTE; /* rep 0's compute stream */
	comp.dispatch_s = 1e-3;
	run(&p, &o, &b);
	comp.dispatch_s = 1e-7;
	run(&p, &o, &c);
	ck_assert_int_gt(nops, 50);
	ck_assert_msg(b.iteration_time_s >= nops * 1e-3 &&
			      b.iteration_time_s <= nops * 1e-3 + a.iteration_time_s,
		      "host-bound %.6f s for %d ops of 1 ms (GPU-bound %.6f s)", b.iteration_time_s,
		      nops, a.iteration_time_s);
	ck_assert_msg(fabs(c.iteration_time_s / a.iteration_time_s - 1) < 0.01,
		      "0.1 us dispatch changed %.6f s to %.6f s", a.iteration_time_s,
		      c.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
	/* the host waits for a pipeline receive, also when an all-gather of
	 * the received slices (scatter-gather) stands between it and the
	 * compute: the next op is dispatched after the receive ends (the
	 * host's wait is inside the op's slice, so its end tells) */
	plan_init(&p);
	p.seq_len = 512;
	p.tp = 2;
	p.pp = 2;
	p.pp_scatter_gather = true;
	p.global_batch = 8;
	resolve(&p);
	comp.dispatch_s = 1e-3;
	run(&p, &o, &b);
	nops = 0;
	for (int32_t i = 0; i < b.tl->n; i++) {
		const struct sim_slice *r = &b.tl->s[i];
		double first = INFINITY;
		if (strcmp(r->name, "pp recv act"))
			continue;
		for (int32_t k = 0; k < b.tl->n; k++) {
			const struct sim_slice *c2 = &b.tl->s[k];
			if (c2->track / SIM_TL_PER == r->track / SIM_TL_PER &&
			    c2->track % SIM_TL_PER == WL_S_COMPUTE && c2->micro == r->micro && c2->layer >= 0)
				first = fmin(first, c2->t1_s);
		}
		ck_assert_msg(first >= r->t1_s + 1e-3 - 1e-9,
			      "first compute of micro-batch %d ends at %.9g s, its receive at %.9g s",
			      r->micro, first, r->t1_s);
		nops++;
	}
	ck_assert_int_gt(nops, 0);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The critical stage is the one the critical path spends its compute on,
 * the host's waits included: Qwen3-VL-2B over pp 4 with communication free
 * has stage 0 (the vision encoder's many small ops) busiest once the
 * host's 55 us dispatch is counted, but the path runs on the last stage's
 * heavier GPU work (the LM head). Found by review: stage 0 was taken and
 * the path's steady state on stage 3 showed as bubble, 0.161 s against
 * 0.092 s without the dispatch (8 micro-batches); now both 0.0918 s, the
 * host's wait its own part, and the bubble still (p-1)/m of compute. */
START_TEST(critical_stage_follows_the_path)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct sim_compute comp;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.pp = 4;
	p.global_batch = 16;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.free_comm = true;
	sim_compute_init(&comp, &topo.cl.gpu);
	o.compute = &comp;
	comp.dispatch_s = 0;
	run(&p, &o, &a);
	comp.dispatch_s = 55e-6;
	run(&p, &o, &b);
	ck_assert_double_gt(b.bd.host_s, 1e-3);
	ck_assert_int_eq(a.critical_stage, 3); /* the LM head's */
	ck_assert_int_eq(b.critical_stage, 3);
	ck_assert_msg(fabs(b.bd.bubble_s / a.bd.bubble_s - 1) < 0.01,
		      "bubble %.6f s with the host's dispatch, %.6f s without", b.bd.bubble_s,
		      a.bd.bubble_s);
	ck_assert_msg(fabs(b.bd.compute_s / a.bd.compute_s - 1) < 0.01,
		      "compute %.6f s with the host's dispatch, %.6f s without", b.bd.compute_s,
		      a.bd.compute_s);
	/* the parts still add up to the iteration */
	ck_assert_double_lt(fabs(b.bd.compute_s + b.bd.bubble_s + b.bd.optimizer_s + b.bd.host_s +
				     exposed_total(&b) - b.iteration_time_s),
			    1e-9);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* With sequence parallelism the plan flag `flag` (a field of p) changes
 * nothing: the iteration takes the same time with it off and on. */
static void same_with_sp(struct plan *p, struct sim_predict_opts *o, bool *flag)
{
	struct sim_prediction a, b;
	p->sp = true;
	*flag = false;
	run(p, o, &a);
	*flag = true;
	run(p, o, &b);
	ck_assert_double_eq(a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
}

/* Megatron's async TP gradient all-reduce (overlap.tp_grad): the input
 * gradient of QKV and MLP-up (and of the LM head) is all-reduced while
 * their weight-gradient GEMM runs, so each backward layer saves
 * min(all-reduce, wgrad) twice, and the head once per micro-batch;
 * the forward all-reduces stay blocking. Contention is set to 1 so the
 * saving is exactly that sum. */
START_TEST(tp_grad_overlap_hides_wgrad)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	double ar, want = 0, got;
	static const char *const wg[] = { "mlp up wgrad", "qkv wgrad" };
	int nar;
	setup_small(&p, &o, 1, eq_model);
	o.overlap_slowdown = 1;
	p.tp = 8;
	p.global_batch = 4;
	ck_assert(p.overlap_tp_grad); /* Megatron-core's default */
	p.overlap_tp_grad = false;
	resolve(&p);
	ck_assert_int_eq(p.dp, 1);
	run(&p, &o, &a);
	nar = slice_count(&a, "tp allreduce");
	ck_assert_int_eq(nar, 4 * model.layers * p.global_batch); /* 2 fwd + 2 bwd per layer */
	ar = slice_time(&a, "tp allreduce") / nar;
	for (int k = 0; k < 2; k++) {
		int n = slice_count(&a, wg[k]);
		ck_assert_int_eq(n, model.layers * p.global_batch);
		want += n * fmin(ar, slice_time(&a, wg[k]) / n);
	}
	/* and the LM head's, a column-parallel linear too (same 2Th bytes) */
	ck_assert_int_eq(slice_count(&a, "lm head tp allreduce"), p.global_batch);
	ck_assert_double_eq_tol(slice_time(&a, "lm head tp allreduce") / p.global_batch, ar, ar * 1e-6);
	want += p.global_batch * fmin(ar, slice_time(&a, "lm head wgrad") / p.global_batch);
	p.overlap_tp_grad = true;
	run(&p, &o, &b);
	got = a.iteration_time_s - b.iteration_time_s;
	ck_assert_msg(want > 0.01 * a.iteration_time_s && fabs(got / want - 1) < 0.01,
		      "saving %.6g s, want %.6g s (iteration %.6g s)", got, want, a.iteration_time_s);
	ck_assert_double_lt(b.bd.exposed_comm_s[SIM_COMM_TP], a.bd.exposed_comm_s[SIM_COMM_TP]);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* sequence parallelism always reduce-scatters behind the wgrad: the
	 * flag changes nothing */
	same_with_sp(&p, &o, &p.overlap_tp_grad);
	topo_release(&topo);
}
END_TEST

/* Two nodes of 8 GPUs whose 4 NICs each serve two GPUs (a DGX A100 with
 * half its HCAs, as the vTrain cluster file assumes), the small model, and
 * a tp-8 plan with the defaults otherwise. */
static void setup_shared_nic(struct plan *p)
{
	load_topo(tu_tmpfile(0, ".json",
			     "{\"name\": \"a100-4nic\", \"preset\": \"dgx-a100-hdr\", \"nodes\": 2, "
			     "\"node\": {\"nics\": 4, \"nic_bandwidth\": \"200Gb/s\"}, "
			     "\"fabric\": {\"type\": \"switch\", \"switch_ports\": 0, "
			     "\"link_bandwidth\": \"200Gb/s\"}}"),
		  2);
	load_model_json(small_model);
	plan_init(p);
	p->tp = 8;
}

/* The plan under the analytic network into a, under the flow network into f. */
static void run_analytic_flow(const struct plan *p, struct sim_predict_opts *o,
			      struct sim_prediction *a, struct sim_prediction *f)
{
	o->fidelity = SIM_ANALYTIC;
	run(p, o, a);
	o->fidelity = SIM_FLOW;
	run(p, o, f);
}

/* The analytic network counts every group of a collective at once: the
 * eight DP groups of a tp-8 stage (one GPU per node each) share the four
 * NICs two by two, so a DP all-reduce takes twice what one group alone
 * would, as the flow model finds it; likewise the pipeline sends of the
 * eight tp ranks. */
START_TEST(analytic_counts_concurrent_groups)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f;
	struct slice_stats sa, sf;
	struct model_params mp;
	double lone, want;
	setup_shared_nic(&p);
	p.seq_len = 512;
	p.global_batch = 4;
	p.bucket_bytes = 1e12; /* one all-reduce of all gradients */
	resolve(&p);
	ck_assert_int_eq(p.dp, 2);
	ck_assert(!p.overlap_dp);
	sim_predict_opts_init(&o);
	o.timeline = true;
	run_analytic_flow(&p, &o, &a, &f);
	sa = slices(&a, "dp grad reduce");
	sf = slices(&f, "dp grad reduce");
	ck_assert_int_eq(sa.n, 1);
	ck_assert_int_eq(sf.n, 1);
	/* a 2-rank ring all-reduce sends S per GPU (fp32 gradients of a tp
	 * shard: the model's 1/8, its vocabulary padded from 1,000 to 1,024
	 * rows, and the 2,048 learned positions whole on every tp rank); two
	 * GPUs per NIC */
	ck_assert_int_eq(p.grad_reduce_dtype, PLAN_DT_FP32);
	model_count_params(&model, &mp);
	ck_assert(model.vocab == 1000 && model.max_pos == 2048 && model.hidden == 1024);
	lone = ((double)mp.sum_total / p.tp + 24.0 * 1024 / p.tp + 2048.0 * 1024 * (1 - 1.0 / p.tp)) *
	       4 / topo.cl.node.nic_Bps;
	ck_assert_msg(sa.sum > 1.9 * lone && sa.sum < 2.3 * lone,
		      "analytic DP all-reduce %.6g s, one group alone %.6g s", sa.sum, lone);
	ck_assert_msg(fabs(sa.sum / sf.sum - 1) < 0.05, "analytic %.6g s vs flow %.6g s", sa.sum,
		      sf.sum);
	sim_prediction_release(&a);
	sim_prediction_release(&f);
	/* two stages, one per node: eight activation sends over four NICs */
	p.pp = 2;
	p.dp = 0;
	resolve(&p);
	ck_assert_int_eq(p.dp, 1);
	run_analytic_flow(&p, &o, &a, &f);
	sa = slices(&a, "pp send act");
	sf = slices(&f, "pp send act");
	want = 2 * (2.0 * p.micro_batch * p.seq_len * model.hidden) / topo.cl.node.nic_Bps;
	ck_assert_int_gt(sa.n, 0);
	/* payload efficiency (MTU headers) and latency: a little slower; one
	 * GPU per NIC would take half */
	ck_assert_msg(sa.max > want && sa.max < 1.2 * want, "analytic send %.6g s, want about %.6g s",
		      sa.max, want);
	ck_assert_msg(sf.max > want && sf.max < 1.2 * want, "flow send %.6g s, want about %.6g s",
		      sf.max, want);
	sim_prediction_release(&a);
	sim_prediction_release(&f);
	topo_release(&topo);
}
END_TEST

/* Pipeline scatter-gather (Megatron SC'21 §3.5): each tp rank sends bsh/t
 * across the stage boundary and the receiver all-gathers bsh over NVLink,
 * once per received tensor; with sequence parallelism nothing changes (the
 * tensor is already split). */
/* On a leaf-spine without rails each connection hashes to a spine. The
 * eight DP groups of a tp-8 stage (one GPU per node each, two leaves) are
 * eight communicators with their own salts: the analytic network once gave
 * them one salt, so every group's k-th ring edge took the same spine and
 * the all-reduce took four times what the flow model finds. One flow run
 * is one draw of the hashes (this small fabric gives 2.1 to 5.6 ms), so
 * the analytic time, itself a mean over draws, is held against the mean
 * of eight seeds. */
START_TEST(analytic_groups_hash_apart)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, f;
	struct slice_stats sa, sf;
	double flow_sum = 0;
	const int seeds = 8;
	load_topo("h100-roce-leafspine", 8);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 8;
	p.seq_len = 512;
	p.global_batch = 8;
	resolve(&p);
	ck_assert_int_eq(p.dp, 8);
	sim_predict_opts_init(&o);
	o.timeline = true;
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &a);
	sa = slices(&a, "dp grad reduce");
	ck_assert_int_gt(sa.n, 0);
	o.fidelity = SIM_FLOW;
	for (int k = 1; k <= seeds; k++) {
		o.seed = (uint64_t)k;
		run(&p, &o, &f);
		sf = slices(&f, "dp grad reduce");
		ck_assert_int_eq(sa.n, sf.n);
		flow_sum += sf.sum / seeds;
		sim_prediction_release(&f);
	}
	ck_assert_msg(fabs(sa.sum / flow_sum - 1) < 0.15, "analytic %.6g s vs flow %.6g s (mean of %d seeds)",
		      sa.sum, flow_sum, seeds);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

START_TEST(pp_scatter_gather_splits_sends)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct slice_stats sa, sb;
	setup_shared_nic(&p);
	p.pp = 2;
	p.seq_len = 2048;
	p.micro_batch = 4; /* 16 MiB per send: bandwidth-bound */
	p.global_batch = 16;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.timeline = true;
	run(&p, &o, &a);
	p.pp_scatter_gather = true;
	run(&p, &o, &b);
	sa = slices(&a, "pp send act");
	sb = slices(&b, "pp send act");
	ck_assert_int_eq(sa.n, plan_microbatches(&p));
	ck_assert_int_eq(sb.n, sa.n);
	/* bandwidth-bound: an eighth of the bytes, an eighth of the time, plus latency */
	ck_assert_msg(sb.max < sa.max / 8 * 1.2 && sb.max > sa.max / 8,
		      "split send %.6g s vs whole %.6g s", sb.max, sa.max);
	ck_assert_int_eq(slice_count(&a, "pp allgather"), 0);
	/* stage 0's tracks come first: it receives each gradient and gathers it */
	ck_assert_int_eq(slice_count(&b, "pp recv grad"), plan_microbatches(&p));
	ck_assert_int_eq(slice_count(&b, "pp allgather"), plan_microbatches(&p));
	ck_assert_double_lt(b.iteration_time_s, a.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	same_with_sp(&p, &o, &p.pp_scatter_gather);
	topo_release(&topo);
}
END_TEST

/* Unfused gradient accumulation (grad_accum_fusion false, PyTorch autograd
 * under DeepSpeed): every micro-batch after the first adds one kernel per
 * parameter tensor of each layer (GPT-2: two LayerNorms, QKV, projection,
 * fc1, fc2, all with biases: 12), reading the accumulated and the new
 * gradient and writing the sum; with one stage and no communication the
 * iteration grows by exactly their time. Fused (the default) adds none. */
START_TEST(unfused_grad_accumulation_adds_per_tensor)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct sim_compute c;
	struct sim_op_desc d;
	struct slice_stats sb;
	int64_t lt, la, le;
	const int tensors = 12;
	load_topo("dgx-h100-ndr", 1);
	load_model_json(small_model);
	plan_init(&p);
	p.seq_len = 512;
	p.global_batch = 32; /* eight replicas, four micro-batches each */
	resolve(&p);
	ck_assert_int_eq(plan_microbatches(&p), 4);
	sim_predict_opts_init(&o);
	o.timeline = true;
	run(&p, &o, &a);
	ck_assert_int_eq(slice_count(&a, "grad accumulate"), 0);
	p.grad_accum_fusion = false;
	run(&p, &o, &b);
	sb = slices(&b, "grad accumulate");
	ck_assert_int_eq(sb.n, (plan_microbatches(&p) - 1) * model.layers * tensors);
	/* one op: a twelfth of the layer's parameters, fp32 accumulated (read,
	 * write) plus the bf16 new gradient (read) */
	sim_compute_init(&c, &topo.cl.gpu);
	model_layer_params(&model, 0, &lt, &la, &le);
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_ELEMENTWISE;
	d.bytes = (double)lt / tensors * (2 * 4 + 2);
	d.dtype_bytes = 2;
	double one = sim_compute_time_s(&c, &d);
	ck_assert_msg(fabs(sb.min - one) < 1e-9 && fabs(sb.max - one) < 1e-9,
		      "accumulate ops %.6g..%.6g s, want %.6g s", sb.min, sb.max, one);
	/* plus the embedding's (word and position tables) and the final
	 * norm's (weight and bias) after each micro-batch */
	sb.sum += slice_time(&b, "embedding grad accumulate");
	ck_assert_int_eq(slice_count(&b, "embedding grad accumulate"), 2 * (plan_microbatches(&p) - 1));
	sb.sum += slice_time(&b, "final norm grad accumulate");
	ck_assert_int_eq(slice_count(&b, "final norm grad accumulate"), 2 * (plan_microbatches(&p) - 1));
	ck_assert_msg(fabs(b.iteration_time_s - a.iteration_time_s - sb.sum) < 1e-6 * sb.sum,
		      "iteration grew by %.6g s, accumulation ops took %.6g s",
		      b.iteration_time_s - a.iteration_time_s, sb.sum);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* A DP-bound plan: small dense model, 16 replicas over 2 nodes, no overlap. */
static void dp_plan(struct plan *p)
{
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(p);
	p->global_batch = 16;
	p->seq_len = 512;
	resolve(p);
}

START_TEST(bf16_compression_halves_dp)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	double ra;
	dp_plan(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	ck_assert_double_gt(a.bd.exposed_comm_s[SIM_COMM_DP], 0.2 * a.iteration_time_s);
	p.compression = PLAN_CMP_BF16; /* fp32 on the wire -> bf16: half the bytes */
	run(&p, &o, &b);
	/* half the bytes exactly (found by an audit: a claimed half checked at
	 * +-10 % on the time let 4 % more bytes pass); the exposed time a
	 * little over half, as the reductions' latencies stay */
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] - 0.5) < 1e-9,
		      "bf16 DP bytes ratio %.6f", b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP]);
	ra = b.bd.exposed_comm_s[SIM_COMM_DP] / a.bd.exposed_comm_s[SIM_COMM_DP];
	ck_assert_msg(ra >= 0.5 && ra < 0.55, "bf16 exposed DP ratio %.4f, want 0.5 and a little",
		      ra);
	ck_assert_double_lt(b.iteration_time_s, a.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

START_TEST(local_sgd_divides_dp)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	double ra;
	dp_plan(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	p.sync = PLAN_SYNC_LOCAL_SGD;
	p.sync_interval = 4;
	run(&p, &o, &b);
	ra = b.bd.exposed_comm_s[SIM_COMM_DP] / a.bd.exposed_comm_s[SIM_COMM_DP];
	/* (a quarter exactly: the synchronous step's reduction every 4th
	 * step, reported per step; found by an audit at +-0.03) */
	ck_assert_msg(fabs(ra - 0.25) < 1e-9, "local SGD H=4 DP ratio %.12f, want 0.25", ra);
	ck_assert_double_lt(b.iteration_time_s, a.iteration_time_s);
	/* traffic per step: a quarter of the DP bytes, the rest unchanged */
	ck_assert_double_gt(a.comm_bytes[SIM_COMM_DP], 0);
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] - 0.25) < 1e-9,
		      "local SGD H=4 DP bytes ratio %.6f", b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP]);
	for (int k = 0; k < SIM_COMM_COUNT; k++)
		if (k != SIM_COMM_DP)
			ck_assert_double_eq(b.comm_bytes[k], a.comm_bytes[k]);
	/* the workload reported is the synchronous step's, with its reduction
	 * (found by review: the run without it gave ops) */
	ck_assert_int_eq(b.ops, a.ops);
	ck_assert_int_eq(b.micro_batches, a.micro_batches);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The relaxed sync modes relax the replicas' reduction; the CP ranks of a
 * replica hold the same parameters and still reduce their gradients every
 * step, over the CP group (found by review: both were dropped, then cp > 1
 * was refused). Local SGD's local steps carry that reduction: at cp 2 every
 * step moves the gradients once (the CP group's all-reduce, or the DP x CP
 * one every H-th step), where at cp 1 a step moves 1/H of them. */
START_TEST(relaxed_sync_keeps_cp_reduction)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction every, local, async, exact;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.global_batch = 16;
	p.seq_len = 1024;
	p.cp = 2;
	p.flash_attention = true;
	resolve(&p);
	ck_assert_int_eq(p.dp, 8);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &every);
	p.sync = PLAN_SYNC_LOCAL_SGD;
	p.sync_interval = 4;
	run(&p, &o, &local);
	ck_assert_double_gt(every.comm_bytes[SIM_COMM_DP], 0);
	ck_assert_msg(fabs(local.comm_bytes[SIM_COMM_DP] / every.comm_bytes[SIM_COMM_DP] - 1) < 1e-9,
		      "local SGD at cp 2 moves %.9g gradient bytes a step, every step %.9g",
		      local.comm_bytes[SIM_COMM_DP], every.comm_bytes[SIM_COMM_DP]);
	ck_assert_double_lt(local.iteration_time_s, every.iteration_time_s);
	/* async: the CP group's reduction stays in the step, exposed after
	 * backward as the replicas' was, only shorter (2 ranks on NVLink
	 * against 16 across the nodes) */
	p.sync = PLAN_SYNC_ASYNC;
	p.sync_interval = 0;
	run(&p, &o, &async);
	ck_assert_double_gt(async.bd.exposed_comm_s[SIM_COMM_DP], 0);
	ck_assert_double_lt(async.bd.exposed_comm_s[SIM_COMM_DP], every.bd.exposed_comm_s[SIM_COMM_DP]);
	ck_assert_double_lt(async.iteration_time_s, every.iteration_time_s);
	/* folded as every rank */
	o.exact = true;
	run(&p, &o, &exact);
	ck_assert_msg(fabs(exact.iteration_time_s / async.iteration_time_s - 1) < 1e-9,
		      "async cp 2: %.9g s exact, %.9g folded", exact.iteration_time_s,
		      async.iteration_time_s);
	/* with cp 1 a local step moves nothing */
	p.cp = 1;
	p.sync = PLAN_SYNC_LOCAL_SGD;
	p.sync_interval = 4;
	p.dp = 0;
	resolve(&p);
	o.exact = false;
	sim_prediction_release(&every);
	sim_prediction_release(&local);
	p.sync = PLAN_SYNC_EVERY_STEP;
	run(&p, &o, &every);
	p.sync = PLAN_SYNC_LOCAL_SGD;
	run(&p, &o, &local);
	ck_assert_msg(fabs(local.comm_bytes[SIM_COMM_DP] / every.comm_bytes[SIM_COMM_DP] - 0.25) < 1e-9,
		      "local SGD at cp 1 moves %.9g gradient bytes a step, every step %.9g",
		      local.comm_bytes[SIM_COMM_DP], every.comm_bytes[SIM_COMM_DP]);
	sim_prediction_release(&every);
	sim_prediction_release(&local);
	sim_prediction_release(&async);
	sim_prediction_release(&exact);
	topo_release(&topo);
}
END_TEST

/* Bytes an element-wise op of time t moves, by the compute model c
 * (bisection: its time grows with its bytes). */
static double elem_bytes_of(const struct sim_compute *c, double t)
{
	struct sim_op_desc d;
	double lo = 1, hi = 1e15;
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_ELEMENTWISE;
	d.dtype_bytes = 4;
	for (int i = 0; i < 200; i++) {
		d.bytes = sqrt(lo * hi);
		if (sim_compute_time_s(c, &d) < t)
			lo = d.bytes;
		else
			hi = d.bytes;
	}
	return sqrt(lo * hi);
}

/* rep 0's slices called name, in time order: their durations into t
 * (at most max), their count returned */
static int slice_durations(const struct sim_prediction *r, const char *name, double *t, int max)
{
	double t0[64];
	int n = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *sl = &r->tl->s[i];
		int j;
		if (strcmp(sl->name, name) || sl->track / SIM_TL_PER != 0)
			continue;
		ck_assert_int_lt(n, max);
		ck_assert_int_le(max, 64);
		for (j = n++; j > 0 && t0[j - 1] > sl->t0_s; j--) {
			t0[j] = t0[j - 1];
			t[j] = t[j - 1];
		}
		t0[j] = sl->t0_s;
		t[j] = sl->t1_s - sl->t0_s;
	}
	return n;
}

START_TEST(topk_and_async_move_time)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c;
	dp_plan(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	/* top-k 1%: 1% of values + int32 indices on an all-gather of 16 ranks */
	p.compression = PLAN_CMP_TOPK;
	p.compression_ratio = 0.01;
	p.error_feedback = true;
	o.timeline = true;
	run(&p, &o, &b);
	o.timeline = false;
	{
		/* each bucket's scatter-add needs its all-gather's output */
		struct slice_stats ag = slices(&b, "dp top-k allgather");
		struct slice_stats ac = slices(&b, "top-k accumulate");
		double ag_end = 0, ac_start = INFINITY;
		for (int32_t i = 0; i < b.tl->n; i++) {
			const struct sim_slice *sl = &b.tl->s[i];
			if (sl->track / SIM_TL_PER)
				continue;
			if (!strcmp(sl->name, "dp top-k allgather"))
				ag_end = fmax(ag_end, sl->t1_s);
			if (!strcmp(sl->name, "top-k accumulate"))
				ac_start = fmin(ac_start, sl->t0_s);
		}
		ck_assert_int_gt(ag.n, 0);
		ck_assert_int_eq(ac.n, ag.n);
		ck_assert_msg(ac_start >= ag_end, "scatter-add at %.9g s before the all-gather ends at %.9g s",
			      ac_start, ag_end);
	}
	ck_assert_double_lt(b.bd.exposed_comm_s[SIM_COMM_DP], a.bd.exposed_comm_s[SIM_COMM_DP]);
	/* each of 16 ranks' 1 % of the gradients as fp32 values (the reduction's
	 * dtype) and int32 indices, against the fp32 all-reduce of them all
	 * (found by review: the values were counted at 2 bytes) */
	ck_assert_int_eq(p.dp, 16);
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] - 16 * 0.01 * 8 / 4) <
			      1e-9,
		      "top-k dp bytes %.9g against %.9g", b.comm_bytes[SIM_COMM_DP],
		      a.comm_bytes[SIM_COMM_DP]);
	ck_assert_double_gt(b.bd.optimizer_s, a.bd.optimizer_s); /* selection + scatter-add */
	ck_assert_double_gt(b.memory_gib_per_gpu, a.memory_gib_per_gpu); /* residual */
	/* top-k's compute by its bytes (found by an audit: the selection at
	 * 10 x its bytes passed): a bucket of e gradient elements is selected
	 * in two passes over fp32 (8e bytes), its residual kept (12e), and the
	 * 16 ranks' k = 0.01 e pairs (fp32 value, int32 index) scattered into
	 * the dense gradient (16 x 0.01 e x 8, read and written, + 4e); each
	 * slice takes the compute model's time of its bytes, e read off the
	 * selection's (no overlap slowdown, so the time is the op's own) */
	{
		struct sim_prediction g;
		struct sim_compute cm;
		struct sim_op_desc d;
		double sel[64], fb[64], acc[64];
		int n;
		o.timeline = true;
		o.overlap_slowdown = 1;
		run(&p, &o, &g);
		o.timeline = false;
		o.overlap_slowdown = 0;
		sim_compute_init(&cm, &topo.cl.gpu);
		n = slice_durations(&g, "top-k select", sel, 64);
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(slice_durations(&g, "error feedback", fb, 64), n);
		ck_assert_int_eq(slice_durations(&g, "top-k accumulate", acc, 64), n);
		memset(&d, 0, sizeof(d));
		d.cls = SIM_OP_ELEMENTWISE;
		d.dtype_bytes = 4;
		for (int i = 0; i < n; i++) {
			double e = elem_bytes_of(&cm, sel[i]) / 8;
			d.bytes = 12 * e;
			ck_assert_msg(fabs(sim_compute_time_s(&cm, &d) / fb[i] - 1) < 1e-6,
				      "bucket %d: error feedback %.9g s, want %.9g s", i, fb[i],
				      sim_compute_time_s(&cm, &d));
			d.bytes = 16 * 0.01 * e * 8 * 2 + 4 * e;
			ck_assert_msg(fabs(sim_compute_time_s(&cm, &d) / acc[i] - 1) < 1e-6,
				      "bucket %d: accumulate %.9g s, want %.9g s", i, acc[i],
				      sim_compute_time_s(&cm, &d));
		}
		sim_prediction_release(&g);
	}
	p.compression = PLAN_CMP_NONE;
	p.sync = PLAN_SYNC_ASYNC;
	run(&p, &o, &c);
	ck_assert_double_lt(c.iteration_time_s, a.iteration_time_s);
	/* top-k under async: the all-gather leaves the step, the selection,
	 * residual and scatter-add stay (found by review: async dropped them
	 * too, 25 % short): the optimizer phase is top-k's every-step one,
	 * and the step is at least every step's less its exposed DP */
	struct sim_prediction d;
	p.compression = PLAN_CMP_TOPK;
	run(&p, &o, &d);
	ck_assert_msg(fabs(d.bd.optimizer_s - b.bd.optimizer_s) <= 1e-9 * b.bd.optimizer_s,
		      "optimizer %.9g s under async, %.9g every step", d.bd.optimizer_s,
		      b.bd.optimizer_s);
	ck_assert_double_ge(d.iteration_time_s,
			    b.iteration_time_s - b.bd.exposed_comm_s[SIM_COMM_DP] - 1e-12);
	ck_assert_double_gt(d.iteration_time_s, c.iteration_time_s);
	/* local SGD's local steps send nothing, with top-k or without: the
	 * same local step (found by review: top-k's compute was charged to
	 * them too, 11 % slower) */
	struct sim_prediction e, f;
	p.sync = PLAN_SYNC_LOCAL_SGD;
	p.sync_interval = 4;
	run(&p, &o, &e); /* top-k */
	p.compression = PLAN_CMP_NONE;
	run(&p, &o, &f);
	double loc_topk = (4 * e.iteration_time_s - b.iteration_time_s) / 3;
	double loc_none = (4 * f.iteration_time_s - a.iteration_time_s) / 3;
	ck_assert_msg(fabs(loc_topk - loc_none) <= 1e-9 * loc_none,
		      "local step %.9g s with top-k, %.9g s without", loc_topk, loc_none);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
	sim_prediction_release(&d);
	sim_prediction_release(&e);
	sim_prediction_release(&f);
	topo_release(&topo);
}
END_TEST

/* SSP and async: every stage's reduction must keep up, so a step lasts at
 * least the busiest DP stream of any rank (found by review: the critical
 * stage's was taken, and a stage with more gradients but less compute
 * made the step short). 4 H100 nodes on TCP, tp 8, pp 2, dp 2: stage 0
 * holds 5 layers and the 256k-row embedding, stage 1 3 layers and the
 * (untied) LM head, whose logits give it the most compute. */
START_TEST(async_waits_for_busiest_reduction)
{
	struct topo_cluster cl;
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	double busy[2] = { 0, 0 };
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, "h100-roce-leafspine-2to1", 4, &err) == 0, "%s", err.msg);
	cl.fabric.transport = TOPO_TRANSPORT_TCP;
	cl.fabric.mtu_bytes = 1500;
	cl.fabric.overhead_bytes = 78;
	cl.fabric.tcp_byte_s = 1.0 / 10e9; /* the host costs a TCP fabric file gets by default */
	cl.fabric.tcp_msg_s = 5e-6;
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
	load_model_json("{\"hidden_size\": 2048, \"num_hidden_layers\": 8, \"num_attention_heads\": 16, "
			"\"vocab_size\": 256000, \"intermediate_size\": 8192, \"hidden_act\": \"silu\", "
			"\"model_type\": \"llama\"}");
	plan_init(&p);
	p.tp = 8;
	p.sp = true;
	p.pp = 2;
	p.nlps = 2;
	p.layers_per_stage[0] = 5;
	p.layers_per_stage[1] = 3;
	p.global_batch = 8;
	p.seq_len = 2048;
	resolve(&p);
	ck_assert_int_eq(p.dp, 2);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.timeline = true;
	run(&p, &o, &a);
	for (int32_t i = 0; i < a.tl->n; i++) {
		const struct sim_slice *sl = &a.tl->s[i];
		const char *tn = a.tl->track[sl->track];
		if (sl->track % SIM_TL_PER == WL_S_DP && !strncmp(tn, "rep 0 stage ", 12))
			busy[tn[12] == '1'] += sl->t1_s - sl->t0_s;
	}
	/* the premise: stage 1 computes most, stage 0 reduces most */
	ck_assert_int_eq(a.critical_stage, 1);
	ck_assert_msg(busy[0] > 1.1 * busy[1], "dp busy %.6g, %.6g", busy[0], busy[1]);
	p.sync = PLAN_SYNC_ASYNC;
	o.timeline = false;
	run(&p, &o, &b);
	ck_assert_msg(b.iteration_time_s >= busy[0] * (1 - 1e-9),
		      "async step %.9g s, stage 0's reduction %.9g s", b.iteration_time_s, busy[0]);
	/* ... and it is exactly max(the step without reduction, that
	 * reduction), the step without reduction read off local SGD (H = 4:
	 * three such steps and a synchronous one; found by an audit: only
	 * the bound was checked, and the step x 1.05 passed); SSP alike */
	{
		struct sim_prediction l, q;
		double loc, want;
		p.sync = PLAN_SYNC_LOCAL_SGD;
		p.sync_interval = 4;
		run(&p, &o, &l);
		loc = (4 * l.iteration_time_s - a.iteration_time_s) / 3;
		want = fmax(loc, busy[0]);
		ck_assert_msg(fabs(b.iteration_time_s / want - 1) < 1e-9,
			      "async step %.12g s, max(local step %.12g, reduction %.12g)",
			      b.iteration_time_s, loc, busy[0]);
		p.sync = PLAN_SYNC_SSP;
		p.staleness = 2;
		run(&p, &o, &q);
		ck_assert_msg(fabs(q.iteration_time_s / want - 1) < 1e-9,
			      "SSP step %.12g s, max(local step %.12g, reduction %.12g)",
			      q.iteration_time_s, loc, busy[0]);
		sim_prediction_release(&l);
		sim_prediction_release(&q);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Top-k compression with overlap.dp and no pipeline: the selection that
 * runs beside the all-gather is optimizer time, and there is no bubble
 * (found by review: counted as compute beside the collective, and its
 * excess over the stage's own compute showed as a bubble). */
START_TEST(topk_overlap_no_bubble)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	struct topo_cluster cl;
	double sum;
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, "pcie-2x2-tcp", 2, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
	load_model_json(small_model);
	plan_init(&p);
	p.global_batch = 4;
	p.seq_len = 1024;
	p.overlap_dp = true;
	p.compression = PLAN_CMP_TOPK;
	p.compression_ratio = 0.01;
	resolve(&p);
	ck_assert_int_eq(p.pp, 1);
	sim_predict_opts_init(&o);
	run(&p, &o, &r);
	ck_assert_msg(r.bd.bubble_s < 1e-9, "bubble %.9g s without a pipeline", r.bd.bubble_s);
	sum = r.bd.compute_s + r.bd.bubble_s + r.bd.optimizer_s + r.bd.host_s + exposed_total(&r);
	ck_assert_double_eq_tol(sum, r.iteration_time_s, 1e-9);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Under async the reduction's busy time runs from each collective's launch:
 * replicas that vary (images per sample) wait for the slowest, which is
 * not reduction time, so a DP-bound step is the same as with every replica
 * alike (found by review: the busiest stream was the one that waited
 * most, 4.53 s against 4.34 s here). */
START_TEST(async_reduction_excludes_waits)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	struct topo_cluster cl;
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, "pcie-2x2-tcp", 2, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.global_batch = 16;
	p.seq_len = 4096;
	p.flash_attention = true;
	p.recompute = PLAN_RC_FULL;
	p.sync = PLAN_SYNC_ASYNC;
	set_uniform(&p.images_per_sample, 0, 16);
	resolve(&p);
	ck_assert_int_eq(p.dp, 4);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.exact = true;
	run(&p, &o, &a);
	p.images_per_sample.kind = PLAN_DIST_FIXED;
	p.images_per_sample.value = 8;
	run(&p, &o, &b);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-9,
		      "async step %.9g s with varying images, %.9g s alike", a.iteration_time_s,
		      b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* --routing spray (adaptive routing: each transfer evenly over its
 * equal-cost paths) on a non-blocking fat tree: twice the nodes at the
 * same work per GPU take the same time, where one ECMP hash per
 * connection collides on the spines (found by review: DeepSeek-V3 grew
 * from 9.8 to 11.6 s going from 256 to 512 nodes). Qwen3-30B-A3B, pp 4,
 * EP 32 across nodes, analytic, PXN off. */
START_TEST(spray_weak_scaling_flat)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r[3];
	struct ts_error err = TS_ERROR_INIT;
	int nodes[3] = { 64, 128, 128 };
	ck_assert_msg(model_load(&model, "qwen3-30b-a3b", &err) == 0, "%s", err.msg);
	for (int i = 0; i < 3; i++) {
		load_topo("dgx-h100-ndr-fat-tree", nodes[i]);
		/* (NCCL_PXN_DISABLE=1: with PXN the all-to-all keeps to its
		 * rails, where ECMP hardly collides: 0.8 % apart) */
		topo.cl.fabric.no_pxn = true;
		plan_init(&p);
		p.pp = 4;
		p.ep = 32;
		p.seq_len = 4096;
		p.global_batch = nodes[i] * 2;
		p.flash_attention = true;
		p.recompute = PLAN_RC_FULL;
		p.distributed_optimizer = true;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.fidelity = SIM_ANALYTIC;
		o.spray = i < 2;
		run(&p, &o, &r[i]);
		topo_release(&topo);
	}
	ck_assert_msg(fabs(r[1].iteration_time_s / r[0].iteration_time_s - 1) < 0.01,
		      "sprayed: %.6g s on 64 nodes, %.6g s on 128", r[0].iteration_time_s,
		      r[1].iteration_time_s);
	ck_assert_msg(r[2].iteration_time_s > 1.1 * r[1].iteration_time_s,
		      "128 nodes: ECMP %.6g s, sprayed %.6g s", r[2].iteration_time_s,
		      r[1].iteration_time_s);
	for (int i = 0; i < 3; i++)
		sim_prediction_release(&r[i]);
}
END_TEST

/* The tied embedding's gradient exchange between the first and last stage
 * is the pipeline's communication: with dp 1 nothing is data-parallel
 * (found by review: the exchange was reported as exposed DP). */
START_TEST(tied_embedding_exchange_is_pp)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	struct topo_cluster cl;
	memset(&cl, 0, sizeof(cl));
	ck_assert_msg(topo_cluster_load(&cl, "pcie-2x2-tcp", 1, &err) == 0, "%s", err.msg);
	ck_assert_msg(topo_build(&topo, &cl, &err) == 0, "%s", err.msg);
	topo_cluster_release(&cl);
	load_model_json(small_model); /* GPT-2: tied embeddings */
	ck_assert(model.tie_embeddings);
	plan_init(&p);
	p.pp = 2;
	p.global_batch = 8;
	p.seq_len = 1024;
	resolve(&p);
	ck_assert_int_eq(p.dp, 1);
	sim_predict_opts_init(&o);
	run(&p, &o, &r);
	ck_assert_double_eq(r.bd.exposed_comm_s[SIM_COMM_DP], 0);
	ck_assert_double_eq(r.comm_bytes[SIM_COMM_DP], 0);
	ck_assert_double_gt(r.bd.exposed_comm_s[SIM_COMM_PP], 0);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Each fused attention op says its mask (workload.h, enum wl_mask): a
 * sliding-window layer whose window is shorter than the sequence is a
 * window, its full neighbours causal, the recompute and backward as their
 * forward; a window as long as the sequence is causal. The compute model
 * shapes the query tiles' work by it (compute.c, attn_waves: a window
 * inferred from the keys' mean turned causal at a threshold, found by
 * review). */
START_TEST(attention_mask_kinds)
{
	static const char *cfg =
		"{\"hidden_size\": 256, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
		"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"intermediate_size\": 512, "
		"\"model_type\": \"llama\", \"sliding_window\": 512, \"layer_types\": "
		"[\"full_attention\", \"sliding_attention\", \"full_attention\", "
		"\"sliding_attention\"]}";
	struct plan p;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	load_model_json(cfg);
	for (int seq = 512; seq <= 2048; seq *= 4) {
		int n[2] = { 0, 0 };
		plan_init(&p);
		p.flash_attention = true;
		p.recompute = PLAN_RC_FULL;
		p.global_batch = 8;
		p.seq_len = seq;
		resolve(&p);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
		for (int32_t i = 0; i < w.roles[0].nops; i++) {
			const struct wl_op *op = &w.roles[0].ops[i];
			if (op->kind != WL_K_COMPUTE || op->cls != WL_ATTN || op->layer < 0)
				continue;
			int want = seq > 512 && op->layer % 2 ? WL_MASK_WINDOW : WL_MASK_CAUSAL;
			ck_assert_msg(op->masked == want, "seq %d, layer %d, %s: mask %d, want %d", seq,
				      op->layer, op->name, op->masked, want);
			n[op->masked == WL_MASK_WINDOW]++;
		}
		ck_assert_int_gt(n[0], 0);
		ck_assert(seq > 512 ? n[1] == n[0] : n[1] == 0);
		workload_release(&w);
	}
	topo_release(&topo);
}
END_TEST

/* Shared experts (Qwen2-MoE, DeepSeek): a dense MLP in every MoE layer,
 * after the routed experts' combine, with Qwen2-MoE's gate. Each layer's
 * forward ops carry model_layer_cost's FLOPs, every GEMM at its own shape
 * (no rescaling: the shared GEMMs are where the count puts them), and the
 * shared expert's TP collectives are there. */
START_TEST(shared_experts_in_workload)
{
	static const char *cfg =
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"vocab_size\": 1000, \"hidden_act\": \"silu\", "
		"\"intermediate_size\": 2048, \"num_experts\": 8, \"num_experts_per_tok\": 2, "
		"\"moe_intermediate_size\": 256, \"shared_expert_intermediate_size\": 1536, "
		"\"model_type\": \"qwen2_moe\"}";
	struct plan p;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	int up = 0, gate = 0, wgrad = 0, tpc = 0;
	double f[4] = { 0 };
	load_topo("dgx-h100-ndr", 1);
	load_model_json(cfg);
	ck_assert_int_eq(model.shared_ffn, 1536);
	ck_assert(model.shared_gate);
	plan_init(&p);
	p.tp = 2;
	p.sp = true;
	p.ep = 2;
	p.global_batch = 8;
	p.seq_len = 1024;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	for (int32_t i = 0; i < w.roles[0].nops; i++) {
		const struct wl_op *op = &w.roles[0].ops[i];
		bool fwd0 = op->micro == 0 && op->phase == WL_P_FWD && op->layer >= 0;
		if (op->kind == WL_K_COMPUTE && fwd0)
			f[op->layer] += op->flops;
		if (op->kind == WL_K_COMPUTE && op->m > 0 && op->layer >= 0)
			ck_assert_msg(fabs(op->flops / (2.0 * op->m * op->n * op->k * op->batch) - 1) < 1e-9,
				      "%s rescaled", op->name);
		if (!strcmp(op->name, "shared expert up gemm") && op->phase == WL_P_FWD) {
			up++;
			ck_assert_double_eq(op->n, 2 * 1536 / 2); /* gate and up, TP-split */
			ck_assert_double_eq(op->k, 1024);
		}
		gate += !strcmp(op->name, "shared expert gate gemm") && op->phase == WL_P_FWD;
		wgrad += !strcmp(op->name, "shared expert up wgrad");
		/* per MoE layer forward: the routed path's gather and scatter of
		 * tokens, and the shared expert's all-gather and reduce-scatter */
		tpc += op->kind == WL_K_COLL && op->dim == WL_D_TP && fwd0;
	}
	ck_assert_int_eq(tpc, 4 * 6); /* attention 2, routed 2, shared 2 */
	ck_assert_int_eq(up, 4 * plan_microbatches(&p));
	ck_assert_int_eq(gate, 4 * plan_microbatches(&p));
	ck_assert_int_eq(wgrad, 4 * plan_microbatches(&p));
	for (int l = 0; l < 4; l++) {
		struct model_layer_cost c;
		model_layer_cost(&model, &p, l, &c);
		ck_assert_msg(fabs(f[l] / c.fwd_flops - 1) < 1e-9, "layer %d: %.6g vs %.6g", l, f[l],
			      c.fwd_flops);
	}
	workload_release(&w);
	topo_release(&topo);
}
END_TEST

/* Bytes of the op of this name in layer 0, micro-batch 0, forward (bwd
 * false) or backward, and how many there are (n). */
static double layer_op_bytes(const struct workload *w, const char *name, bool bwd, int *n)
{
	double by = -1;
	*n = 0;
	for (int32_t i = 0; i < w->roles[0].nops; i++) {
		const struct wl_op *op = &w->roles[0].ops[i];
		if (op->micro != 0 || op->layer != 0 || strcmp(op->name, name) ||
		    (op->phase == WL_P_BWD) != bwd)
			continue;
		ck_assert_msg(by < 0 || op->bytes == by, "%s: %.0f and %.0f bytes", name, by, op->bytes);
		by = op->bytes;
		(*n)++;
	}
	return by;
}

/* The workload of model cfg at tp 2 (sequence parallel if sp),
 * micro-batch 2, seq 1024, 8 GPUs. */
static void tp2_ops_build(struct workload *w, const char *cfg, bool flash, enum plan_dtype prec,
			  bool sp)
{
	struct plan p;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	load_model_json(cfg);
	plan_init(&p);
	p.tp = 2;
	p.sp = sp;
	p.micro_batch = 2;
	p.seq_len = 1024;
	p.global_batch = 8;
	p.flash_attention = flash;
	p.precision = prec;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(w, &model, &p, &wo, &err) == 0, "%s", err.msg);
}

static void dense_ops_build(struct workload *w, const char *cfg, bool flash, enum plan_dtype prec)
{
	tp2_ops_build(w, cfg, flash, prec, false);
}

/* The kernels between the QKV GEMM and attention (found missing against
 * Llama-style layers timed on an H200, measure_step.py): the rotary
 * embedding reads and writes the rank's q and k once (2 B each, forward
 * and backward), Qwen3's q/k norms once forward and as a norm backward
 * (4 x) in backward, between the QKV output and attention, in reverse
 * order in backward; GPT-2 (learned positions) and Falcon with ALiBi have
 * no rotary, Llama no q/k norms. Llama-style, tp 2: 16 heads of 64 and 4
 * K heads, so q 512 and k 128 wide on a rank, 2,048 tokens. */
START_TEST(qk_kernels_before_attention)
{
	static const char *const cfgs[] = {
		"{\"n_embd\": 1024, \"n_layer\": 2, \"n_head\": 16, \"vocab_size\": 1000, "
		"\"n_positions\": 2048, \"model_type\": \"gpt2\"}",
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"intermediate_size\": 2816, \"vocab_size\": 1000, "
		"\"max_position_embeddings\": 2048, \"model_type\": \"llama\"}",
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"head_dim\": 64, \"intermediate_size\": 2816, "
		"\"vocab_size\": 1000, \"max_position_embeddings\": 2048, \"model_type\": \"qwen3\"}",
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_kv_heads\": 4, \"new_decoder_architecture\": true, \"vocab_size\": 1000, "
		"\"alibi\": true, \"model_type\": \"falcon\"}",
		/* a Llama-style config that says ALiBi, or another position
		 * embedding (found by review: every non-GPT-2 type was rotary) */
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"intermediate_size\": 2816, \"vocab_size\": 1000, "
		"\"alibi\": true, \"hidden_act\": \"silu\", \"model_type\": \"baichuan\"}",
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"intermediate_size\": 2816, \"vocab_size\": 1000, "
		"\"position_embedding_type\": \"absolute\", \"model_type\": \"llama\"}",
	};
	const bool rope[] = { false, true, true, false, false, false };
	const bool qkn[] = { false, false, true, false, false, false };
	const double qk = 2 * 2048.0 * (16 * 64 / 2 + 4 * 64 / 2);
	struct workload w;
	int n;
	load_topo("dgx-h100-ndr", 1);
	for (int c = 0; c < 6; c++) {
		dense_ops_build(&w, cfgs[c], true, PLAN_DT_BF16);
		ck_assert_msg(model.rotary == rope[c], "case %d: rotary %d", c, model.rotary);
		double by = layer_op_bytes(&w, "rope", false, &n);
		ck_assert_int_eq(n, rope[c]);
		if (rope[c]) {
			ck_assert_double_eq(by, 2 * qk);
			ck_assert_double_eq(layer_op_bytes(&w, "rope bwd", true, &n), 2 * qk);
		}
		by = layer_op_bytes(&w, "qk norm", false, &n);
		ck_assert_int_eq(n, qkn[c]);
		if (qkn[c]) {
			ck_assert_double_eq(by, 2 * qk);
			ck_assert_double_eq(layer_op_bytes(&w, "qk norm bwd", true, &n), 4 * qk);
		}
		/* in order: QKV GEMM, [q/k norm], [rope], attention; backward
		 * attention, [rope], [q/k norm], the split's concatenation */
		const struct wl_role *r = &w.roles[0];
		int32_t g = find_op(r, 0, "qkv gemm", 0, 0, false);
		int32_t a = find_op(r, g, "attention", 0, 0, false);
		int32_t ab = find_op(r, 0, "attention bwd", 0, 0, true);
		int32_t sb = find_op(r, ab, "qkv split bwd", 0, 0, true);
		ck_assert(g >= 0 && a > g && ab >= 0 && sb > ab);
		if (rope[c]) {
			int32_t f = find_op(r, g, "rope", 0, 0, false), bw = find_op(r, ab, "rope bwd", 0, 0, true);
			ck_assert(f > g && f < a && bw > ab && bw < sb);
			if (qkn[c]) {
				int32_t nf = find_op(r, g, "qk norm", 0, 0, false);
				int32_t nb = find_op(r, ab, "qk norm bwd", 0, 0, true);
				ck_assert(nf > g && nf < f && nb > bw && nb < sb);
			}
		}
		workload_release(&w);
	}
	/* the built-ins: Qwen3 and Llama rotary, GPT-3 learned positions */
	struct ts_error err = TS_ERROR_INIT;
	static const char *const bi[] = { "qwen3-vl-8b", "llama3-8b", "gpt3-175b" };
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(model_load(&model, bi[i], &err) == 0, "%s", err.msg);
		ck_assert_int_eq(model.rotary, i < 2);
	}
	topo_release(&topo);
}
END_TEST

/* MLA's query and key between the up projections and attention (found
 * unpriced: the README said so), as Megatron-core's MLASelfAttention
 * builds them without rope fusion: the rotary embedding on the rank's
 * heads' rotary parts and the token's one rotary key, the concatenations
 * of query and key and value's contiguous copy; backward the rotary's
 * pass, then the concatenations' (q's parts joined, the broadcast key
 * summed over the heads, k_nope's and value's gradients joined), and after
 * the latent norms' backward the join of the latent's and the rotary key's
 * gradients, on the down projection's tokens (found by review: counted on
 * every token under sequence parallelism, and before the up projections'
 * gradients). mla_model at tp 2: 8 heads of 64 + 32, value 48, latent
 * 256; 2,048 tokens of bf16, 1,024 a rank's shard with sequence
 * parallelism. */
static const char *mla_model =
	"{\"hidden_size\": 1024, \"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
	"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"intermediate_size\": 2048, "
	"\"model_type\": \"deepseek_v2\", \"kv_lora_rank\": 256, \"q_lora_rank\": 384, "
	"\"qk_nope_head_dim\": 64, \"qk_rope_head_dim\": 32, \"v_head_dim\": 48}";

START_TEST(mla_qk_kernels_before_attention)
{
	struct workload w;
	int n;
	const double wt = 2 * 2048.0, h = 8, hd = 96, rope = 32, nope = 64, v = 48, kl = 256;
	load_topo("dgx-h100-ndr", 1);
	for (int sp = 0; sp < 2; sp++) {
		tp2_ops_build(&w, mla_model, true, PLAN_DT_BF16, sp);
		ck_assert(model.rotary && model.kv_lora == 256);
		ck_assert_double_eq(layer_op_bytes(&w, "rope", false, &n), 2 * wt * (h * rope + rope));
		ck_assert_int_eq(n, 1);
		ck_assert_double_eq(layer_op_bytes(&w, "rope bwd", true, &n), 2 * wt * (h * rope + rope));
		ck_assert_int_eq(n, 1);
		ck_assert_double_eq(layer_op_bytes(&w, "qkv concat", false, &n),
				    wt * (3 * h * hd + h * nope + rope + 2 * h * v));
		ck_assert_int_eq(n, 1);
		ck_assert_double_eq(layer_op_bytes(&w, "qkv concat bwd", true, &n),
				    wt * (2 * h * hd + h * rope + rope + 2 * h * (nope + v)));
		ck_assert_int_eq(n, 1);
		ck_assert_double_eq(layer_op_bytes(&w, "latent split bwd", true, &n),
				    2 * wt / (sp ? 2 : 1) * (kl + rope));
		ck_assert_int_eq(n, 1);
		/* no q/k norm, no fused QKV split */
		layer_op_bytes(&w, "qk norm", false, &n);
		ck_assert_int_eq(n, 0);
		layer_op_bytes(&w, "qkv split bwd", true, &n);
		ck_assert_int_eq(n, 0);
		/* in order: kv up GEMM, rope, concat, attention; backward
		 * attention, rope, concat, the up projections' data gradients,
		 * the latent norms', the latent split's, the down projection's */
		const struct wl_role *r = &w.roles[0];
		int32_t g = find_op(r, 0, "kv up gemm", 0, 0, false);
		int32_t f = find_op(r, g, "rope", 0, 0, false), c = find_op(r, f, "qkv concat", 0, 0, false);
		int32_t a = find_op(r, c, "attention", 0, 0, false);
		int32_t ab = find_op(r, 0, "attention bwd", 0, 0, true);
		int32_t fb = find_op(r, ab, "rope bwd", 0, 0, true);
		int32_t cb = find_op(r, fb, "qkv concat bwd", 0, 0, true);
		int32_t d = find_op(r, cb, "kv up dgrad", 0, 0, true);
		int32_t nb = find_op(r, d, "latent norms bwd", 0, 0, true);
		int32_t lb = find_op(r, nb, "latent split bwd", 0, 0, true);
		int32_t kd = find_op(r, lb, "kv down dgrad", 0, 0, true);
		ck_assert(g >= 0 && f > g && c > f && a > c && ab >= 0 && fb > ab && cb > fb && d > cb);
		ck_assert(nb > d && lb > nb && kd > lb);
		workload_release(&w);
	}
	/* without a rotary part: no rope op, the concatenations stay */
	static const char *norope =
		"{\"hidden_size\": 1024, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"intermediate_size\": 2048, "
		"\"model_type\": \"deepseek_v2\", \"kv_lora_rank\": 256, \"q_lora_rank\": 384, "
		"\"qk_nope_head_dim\": 64, \"qk_rope_head_dim\": 0, \"v_head_dim\": 48}";
	dense_ops_build(&w, norope, true, PLAN_DT_BF16);
	layer_op_bytes(&w, "rope", false, &n);
	ck_assert_int_eq(n, 0);
	layer_op_bytes(&w, "rope bwd", true, &n);
	ck_assert_int_eq(n, 0);
	ck_assert_double_eq(layer_op_bytes(&w, "qkv concat", false, &n),
			    wt * (3 * h * 64 + h * 64 + 2 * h * v));
	workload_release(&w);
	/* DeepSeek-V3's shipped config takes the rotary path */
	struct ts_error err = TS_ERROR_INIT;
	ck_assert_msg(model_load(&model, TS_SOURCE_DIR "/examples/models/deepseek-v3.json", &err) == 0,
		      "%s", err.msg);
	ck_assert(model.rotary && model.kv_lora > 0 && model.qk_rope == 64);
	topo_release(&topo);
}
END_TEST

/* A dense layer's element-wise ops as Megatron's local layer launches them
 * (found by review, each not priced before): in backward autograd adds the
 * two gradients of each block's input (norm and residual: read two, write
 * one); the row-parallel biases (projection, MLP down), broadcast into
 * the bias-dropout-add, get their gradients from a sum over the tokens
 * (reads the whole h); the column-parallel QKV bias is added after its
 * GEMM (read and write) and reduced in backward, the MLP up bias (fused
 * into the gelu) reduced by a kernel of its own; the gelu's backward reads
 * the gradient and its input and writes one (3 units, not 4); the split of
 * Q, K and V costs a concatenation in backward; the context's permute a
 * copy; the causal softmax reads up to the diagonal (1 + 2 B/E forward, 1
 * + 1 + 2 backward, E the score elements). GPT-2's config defaults give
 * both dropouts; Llama has no biases and no dropout, flash attention no
 * score ops and no context copy. */
START_TEST(dense_layer_element_ops)
{
	static const char *gpt = "{\"n_embd\": 1024, \"n_layer\": 2, \"n_head\": 16, "
				 "\"vocab_size\": 1000, \"n_positions\": 2048, \"model_type\": \"gpt2\"}";
	static const char *llama = "{\"hidden_size\": 1024, \"num_hidden_layers\": 2, "
				   "\"num_attention_heads\": 16, \"num_key_value_heads\": 4, "
				   "\"intermediate_size\": 2816, \"vocab_size\": 1000, "
				   "\"max_position_embeddings\": 2048, \"model_type\": \"llama\"}";
	struct workload w;
	int n;
	const double T = 2 * 1024.0, h = 1024, tp = 2, E = 2 * 16 / tp * 1024.0 * 1024.0;
	load_topo("dgx-h100-ndr", 1);
	for (int c = 0; c < 3; c++) {
		bool gp = c != 1, flash = c == 2;
		dense_ops_build(&w, gp ? gpt : llama, flash, PLAN_DT_BF16);
		ck_assert(model.dropout == gp && model.attn_dropout == gp);
		double qkv = gp ? 3 * h / tp : (h + 2 * 256) / tp, ffn = (gp ? 4096 : 2 * 2816) / tp;
		ck_assert_double_eq(layer_op_bytes(&w, "residual grad add", true, &n), 3 * 2 * T * h);
		ck_assert_int_eq(n, 2);
		ck_assert_double_eq(layer_op_bytes(&w, "qkv split bwd", true, &n), 2 * 2 * T * qkv);
		ck_assert_int_eq(n, 1);
		ck_assert_double_eq(layer_op_bytes(&w, "activation bwd", true, &n),
				    (gp ? 3 : 5) * T * (gp ? ffn : ffn / 2) * 2);
		layer_op_bytes(&w, "bias grad", true, &n);
		ck_assert_int_eq(n, gp ? 2 : 0);
		if (gp) {
			ck_assert_double_eq(layer_op_bytes(&w, "bias grad", true, &n), 2 * T * h);
			ck_assert_double_eq(layer_op_bytes(&w, "qkv bias add", false, &n),
					    2 * 2 * T * qkv);
			ck_assert_double_eq(layer_op_bytes(&w, "qkv bias grad", true, &n), 2 * T * qkv);
			ck_assert_double_eq(layer_op_bytes(&w, "mlp up bias grad", true, &n),
					    2 * T * ffn);
		} else {
			layer_op_bytes(&w, "qkv bias add", false, &n);
			ck_assert_int_eq(n, 0);
			layer_op_bytes(&w, "mlp up bias grad", true, &n);
			ck_assert_int_eq(n, 0);
		}
		if (flash) {
			layer_op_bytes(&w, "attn context copy", false, &n);
			ck_assert_int_eq(n, 0);
			layer_op_bytes(&w, "softmax", false, &n);
			ck_assert_int_eq(n, 0);
		} else {
			ck_assert_double_eq(layer_op_bytes(&w, "attn context copy", false, &n),
					    2 * 2 * T * h / tp);
			ck_assert_double_eq(layer_op_bytes(&w, "softmax", false, &n), 3 * E);
			ck_assert_double_eq(layer_op_bytes(&w, "softmax bwd", true, &n), 4 * E);
			layer_op_bytes(&w, "attn dropout", false, &n);
			ck_assert_int_eq(n, gp);
		}
		workload_release(&w);
	}
	/* fp32 scores take the general masked softmax: whole rows read (found
	 * by review) */
	dense_ops_build(&w, gpt, false, PLAN_DT_FP32);
	ck_assert_double_eq(layer_op_bytes(&w, "softmax", false, &n), 2 * 4 * E);
	ck_assert_double_eq(layer_op_bytes(&w, "softmax bwd", true, &n), 3 * 4 * E);
	workload_release(&w);
	topo_release(&topo);
}
END_TEST

/* Flash attention carries its kernel's shape for the compute model's
 * tiling (compute.c): sq queries of each of mb x heads / tp heads,
 * attending half the causal span each (the FLOPs' average), the head dim,
 * masked; the FLOPs unchanged, 2 b s^2 h d / tp forward, 2.5x backward. */
START_TEST(flash_attention_shape)
{
	static const char *llama = "{\"hidden_size\": 1024, \"num_hidden_layers\": 2, "
				   "\"num_attention_heads\": 16, \"num_key_value_heads\": 4, "
				   "\"intermediate_size\": 2816, \"vocab_size\": 1000, "
				   "\"max_position_embeddings\": 2048, \"model_type\": \"llama\"}";
	struct workload w;
	int nf = 0, nb = 0;
	load_topo("dgx-h100-ndr", 1);
	dense_ops_build(&w, llama, true, PLAN_DT_BF16);
	for (int32_t i = 0; i < w.roles[0].nops; i++) {
		const struct wl_op *op = &w.roles[0].ops[i];
		if (op->micro != 0 || op->layer != 0 || op->cls != WL_ATTN)
			continue;
		bool bwd = op->phase == WL_P_BWD;
		ck_assert_int_eq(op->m, 1024);
		ck_assert_int_eq(op->n, 512);
		ck_assert_int_eq(op->k, 64);
		ck_assert_int_eq(op->batch, 2 * 16 / 2);
		ck_assert(op->masked);
		double f = 2.0 * 2 * 1024 * 1024 * 16 * 64 / 2;
		ck_assert_double_eq_tol(op->flops, bwd ? 2.5 * f : f, f * 1e-12);
		nf += !bwd;
		nb += bwd;
	}
	ck_assert_int_eq(nf, 1);
	ck_assert_int_eq(nb, 1);
	workload_release(&w);
	/* context parallelism 2: each direction runs a step on the rank's own
	 * chunk, masked (the diagonal), and one on the other's, unmasked
	 * (found by review: every step was masked), each with 1/cp of the keys */
	{
		struct plan p;
		struct wl_opts wo;
		struct ts_error err = TS_ERROR_INIT;
		int masked[2] = { 0, 0 }, open[2] = { 0, 0 };
		plan_init(&p);
		p.cp = 2;
		p.micro_batch = 2;
		p.seq_len = 1024;
		p.global_batch = 8;
		p.flash_attention = true;
		resolve(&p);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
		for (int32_t i = 0; i < w.roles[0].nops; i++) {
			const struct wl_op *op = &w.roles[0].ops[i];
			if (op->micro != 0 || op->layer != 0 || op->cls != WL_ATTN)
				continue;
			bool bwd = op->phase == WL_P_BWD;
			int reps = op->reps > 1 ? op->reps : 1;
			ck_assert_int_eq(op->attn_bwd, bwd);
			ck_assert_int_eq(op->m, 512);
			ck_assert_int_eq(op->n, 1024 / 2 / 2);
			*(op->masked ? &masked[bwd] : &open[bwd]) += reps;
		}
		for (int d = 0; d < 2; d++) {
			ck_assert_int_eq(masked[d], 1);
			ck_assert_int_eq(open[d], 1);
		}
		workload_release(&w);
	}
	topo_release(&topo);
}
END_TEST

/* The vision blocks' attention is full (unmasked) within each image, its
 * kernel's shape the patches of the micro-batch attending an image's each,
 * the vision head; the backward op is the backward kernel though the vision
 * pass runs in one phase both ways (found by review: it was priced at the
 * forward's efficiency). */
START_TEST(vision_attention_shape)
{
	struct plan p;
	struct wl_opts wo;
	struct workload w;
	struct ts_error err = TS_ERROR_INIT;
	int nf = 0, nb = 0;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.global_batch = 8;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	double pimg = plan_dist_mean(&p.image_tokens) * model.vit.merge * model.vit.merge;
	for (int32_t i = 0; i < w.roles[0].nops; i++) {
		const struct wl_op *op = &w.roles[0].ops[i];
		if (op->micro != 0 || op->cls != WL_ATTN || strncmp(op->name, "vit ", 4))
			continue;
		bool bwd = !strcmp(op->name, "vit attention bwd");
		ck_assert_int_eq(op->attn_bwd, bwd);
		ck_assert(!op->masked);
		ck_assert_int_eq(op->n, (int64_t)(pimg + 0.5));
		ck_assert_int_eq(op->k, model.vit.hidden / model.vit.heads);
		ck_assert_int_eq(op->batch, model.vit.heads);
		nf += !bwd;
		nb += bwd;
	}
	ck_assert_int_eq(nf, model.vit.depth);
	ck_assert_int_eq(nb, model.vit.depth);
	workload_release(&w);
	topo_release(&topo);
}
END_TEST

/* Forward, backward and recompute FLOPs of one replica's workload under
 * the resolved plan p (the optimizer's excluded). */
static double workload_compute_flops(const struct plan *p)
{
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	double f = 0;
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, p, &wo, &err) == 0, "%s", err.msg);
	for (int s = 0; s < w.nroles; s++)
		for (int32_t i = 0; i < w.roles[s].nops; i++)
			if (w.roles[s].ops[i].kind == WL_K_COMPUTE && w.roles[s].ops[i].phase != WL_P_OPT)
				f += w.roles[s].ops[i].flops;
	workload_release(&w);
	return f;
}

START_TEST(workload_flops_match_model)
{
	/* The sum of forward/backward compute FLOPs of all roles equals
	 * models/' count for the whole iteration divided by the replicas. */
	struct plan p;
	double f, want;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.global_batch = 16;
	p.seq_len = 1024;
	resolve(&p);
	f = workload_compute_flops(&p);
	want = model_flops_iteration(&model, &p) / (p.dp * p.tp);
	ck_assert_msg(fabs(f / want - 1) < 1e-6, "workload %.6g FLOP vs model %.6g", f, want);
	topo_release(&topo);
}
END_TEST

/* Multi-head latent attention (a small DeepSeek-V2-shaped model): the
 * workload's GEMMs add up to models/' FLOPs under sequence parallelism;
 * without it every TP rank also projects the tokens its TP peers project
 * (the down projections are whole on each rank): 3 passes of 2 (h x
 * (q_lora + kv_lora + rope)) FLOPs per token, (tp - 1)/tp of them extra. */

START_TEST(workload_flops_latent_attention)
{
	struct plan p;
	double f, want, T;
	bool sp = _i;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(mla_model);
	plan_init(&p);
	p.tp = 4;
	p.pp = 2;
	p.sp = sp;
	p.global_batch = 16;
	p.seq_len = 1024;
	resolve(&p);
	f = workload_compute_flops(&p);
	want = model_flops_iteration(&model, &p) / (p.dp * p.tp);
	T = (double)p.global_batch / p.dp * p.seq_len; /* tokens per replica */
	if (!sp)
		want += 3 * 2 * 1024.0 * (384 + 256 + 32) * T * model.layers * (p.tp - 1) / p.tp;
	ck_assert_msg(fabs(f / want - 1) < 1e-6, "workload %.6g FLOP vs %.6g", f, want);
	topo_release(&topo);
}
END_TEST

/* Every op of a micro-batch's forward (backward, with its recompute) on a
 * stage that receives its input must wait, directly or through others, for
 * that pipeline receive: compute, and the TP/EP/CP collectives that carry
 * its data. A collective first in the layer (sequence parallelism's
 * all-gather, the MoE combine's backward all-to-all without recompute)
 * once dropped the receive, so a stage computed before its input arrived. */
static void check_recv_feeds(const struct plan *p0, const char *what)
{
	struct plan p = *p0;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	int checked = 0;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	for (int s = 0; s < w.nroles; s++) {
		const struct wl_role *r = &w.roles[s];
		uint8_t *reach = malloc((size_t)r->nops);
		ck_assert_ptr_nonnull(reach);
		for (int32_t q = 0; q < r->nops; q++) {
			const struct wl_op *rv = &r->ops[q];
			bool grad;
			if (rv->kind != WL_K_RECV || rv->dim != WL_D_PP)
				continue;
			grad = rv->phase == WL_P_BWD;
			memset(reach, 0, (size_t)r->nops);
			reach[q] = 1;
			for (int32_t i = q + 1; i < r->nops; i++) {
				const struct wl_op *o = &r->ops[i];
				bool mine = o->micro == rv->micro && o->chunk == rv->chunk;
				for (int d = 0; d < o->ndeps && !reach[i]; d++)
					reach[i] = reach[o->deps[d]];
				if (!mine || (o->kind != WL_K_COMPUTE &&
					      (o->kind != WL_K_COLL || o->dim == WL_D_DP || o->dim == WL_D_EDP)))
					continue;
				if (grad ? (o->phase != WL_P_BWD && o->phase != WL_P_RECOMPUTE) :
					   o->phase != WL_P_FWD)
					continue;
				ck_assert_msg(reach[i], "%s: stage %d op %d '%s' (micro %d) does not wait for '%s'",
					      what, s, i, o->name, o->micro, rv->name);
				checked++;
			}
		}
		free(reach);
	}
	ck_assert_msg(checked > 0, "%s: no op checked", what);
	workload_release(&w);
}

START_TEST(pipeline_receive_feeds_its_micro_batch)
{
	struct plan p;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	for (int sp = 0; sp < 2; sp++)
		for (int rc = PLAN_RC_NONE; rc <= PLAN_RC_FULL; rc++)
			for (int sch = PLAN_SCHED_GPIPE; sch <= PLAN_SCHED_INTERLEAVED; sch++) {
				char what[64];
				plan_init(&p);
				p.tp = 2;
				p.pp = 2;
				p.sp = sp;
				p.recompute = (enum plan_recompute)rc;
				p.schedule = (enum plan_schedule)sch;
				p.virtual_stages = sch == PLAN_SCHED_INTERLEAVED ? 2 : 1;
				p.global_batch = 16;
				p.seq_len = 512;
				p.cp = sp ? 1 : 2;
				p.flash_attention = !sp;
				snprintf(what, sizeof(what), "dense sp %d recompute %d schedule %d", sp, rc,
					 sch);
				check_recv_feeds(&p, what);
			}
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	for (int sp = 1; sp < 2; sp++) /* MoE with TP needs sequence parallelism */
		for (int rc = PLAN_RC_NONE; rc <= PLAN_RC_FULL; rc++) {
			char what[64];
			plan_init(&p);
			p.tp = 2;
			p.pp = 2;
			p.ep = 4;
			p.sp = sp;
			p.recompute = (enum plan_recompute)rc;
			p.global_batch = 8;
			p.seq_len = 1024;
			snprintf(what, sizeof(what), "moe sp %d recompute %d", sp, rc);
			check_recv_feeds(&p, what);
		}
	topo_release(&topo);
}
END_TEST

/* Rep 0: the first compute slice starting at or after t (INFINITY none). */
static const struct sim_slice *compute_from(const struct sim_prediction *r, double t, int micro,
					    int layer, const char *name)
{
	const struct sim_slice *best = NULL;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *c = &r->tl->s[i];
		if (c->track != WL_S_COMPUTE || c->t0_s < t || (name && strcmp(c->name, name)) ||
		    (micro >= 0 && c->micro != micro) || (layer >= 0 && c->layer != layer))
			continue;
		if (!best || c->t0_s < best->t0_s)
			best = c;
	}
	return best;
}

/* What consumes a collective or a blocking send waits for it: a stage's
 * next compute op waits for its pipeline send (Megatron waits on the send
 * and receive requests together); with overlap.tp the residual add after
 * the output projection and MLP waits for their reduce-scatter, which runs
 * beside the GEMM that produces it, and the norm backward for the
 * input-gradient collective, which runs beside the weight-gradient GEMM.
 * Overlap makes the iteration shorter with 8192 tokens per micro-batch
 * (22.21 against 22.93 ms); on this small model with 1024 the second kernel
 * of each pipelined GEMM costs more than the exchange it hides (8.006
 * against 7.894 ms). */
START_TEST(consumers_wait_for_communication)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	int sends = 0, fwd = 0, bwd = 0;
	setup_small(&p, &o, 1, small_model);
	p.tp = 2;
	p.pp = 2;
	p.sp = true;
	p.global_batch = 16;
	p.micro_batch = 4;
	p.seq_len = 2048;
	resolve(&p);
	run(&p, &o, &a);
	p.overlap_tp = true;
	run(&p, &o, &b);
	ck_assert_msg(b.iteration_time_s < a.iteration_time_s, "overlap %.9g s, without %.9g s",
		      b.iteration_time_s, a.iteration_time_s);
	ck_assert_double_lt(b.bd.exposed_comm_s[SIM_COMM_TP], a.bd.exposed_comm_s[SIM_COMM_TP]);
	for (int32_t i = 0; i < b.tl->n; i++) {
		const struct sim_slice *x = &b.tl->s[i], *c;
		if (x->track / SIM_TL_PER != 0 || x->t1_s <= x->t0_s)
			continue;
		if (x->track == WL_S_PP_SEND && !strncmp(x->name, "pp send", 7)) {
			c = compute_from(&b, x->t0_s, -1, -1, NULL);
			if (c) {
				ck_assert_msg(c->t0_s >= x->t1_s - 1e-12, "'%s' at %.9g s before '%s' ends at %.9g s",
					      c->name, c->t0_s, x->name, x->t1_s);
				sends++;
			}
		}
		if (x->track == WL_S_COMM && !strcmp(x->name, "tp reducescatter")) {
			/* the first residual add or norm backward of its layer after it started */
			const struct sim_slice *ra = compute_from(&b, x->t0_s, x->micro, x->layer, "residual add");
			const struct sim_slice *nb = compute_from(&b, x->t0_s, x->micro, x->layer, "norm bwd");
			c = !nb || (ra && ra->t0_s < nb->t0_s) ? ra : nb;
			if (c) {
				ck_assert_msg(c->t0_s >= x->t1_s - 1e-12, "'%s' at %.9g s before '%s' ends at %.9g s",
					      c->name, c->t0_s, x->name, x->t1_s);
				if (c == ra)
					fwd++;
				else
					bwd++;
			}
		}
	}
	ck_assert_int_gt(sends, 0);
	ck_assert_int_gt(fwd, 0);
	ck_assert_int_gt(bwd, 0);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Megatron-core's DDP with overlap.dp buckets only pipeline stage 0's first
 * model chunk: a later stage, and a later chunk of the interleaved
 * schedule, reduces the whole chunk's gradients in one collective once its
 * last backward is done. */
START_TEST(dp_buckets_on_stage_zero_only)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	for (int il = 0; il < 2; il++) {
		int per[2][2] = { { 0, 0 }, { 0, 0 } }; /* [stage][first chunk or later] */
		setup_small(&p, &o, 1, small_model);
		p.pp = 2;
		p.overlap_dp = true;
		p.bucket_bytes = 4e6; /* small: several buckets per chunk */
		p.global_batch = 16;
		if (il) {
			p.schedule = PLAN_SCHED_INTERLEAVED;
			p.virtual_stages = 2;
		}
		resolve(&p);
		run(&p, &o, &r);
		for (int32_t i = 0; i < r.tl->n; i++) {
			const struct sim_slice *x = &r.tl->s[i];
			int stage = strstr(r.tl->track[x->track], "stage 1") ? 1 : 0;
			if (x->track % SIM_TL_PER != WL_S_DP || strcmp(x->name, "dp grad reduce") ||
			    strncmp(r.tl->track[x->track], "rep 0 ", 6)) /* one replica */
				continue;
			/* chunk from the layer it was flushed after (Megatron's
			 * interleaved assignment: stage 0 holds 0-1 and 4-5,
			 * stage 1 2-3 and 6-7; -1: the flush after backward) */
			per[stage][il && x->layer >= 0 && x->layer / 4] += 1;
		}
		ck_assert_msg(per[0][0] > 1, "stage 0 chunk 0: %d reductions", per[0][0]);
		ck_assert_msg(per[1][0] == 1, "stage 1 chunk 0: %d reductions", per[1][0]);
		if (il) {
			ck_assert_msg(per[0][1] == 1, "stage 0 chunk 1: %d reductions", per[0][1]);
			ck_assert_msg(per[1][1] == 1, "stage 1 chunk 1: %d reductions", per[1][1]);
		}
		sim_prediction_release(&r);
		topo_release(&topo);
	}
}
END_TEST

/* FP8 training (Transformer Engine) keeps weights 16-bit: the distributed
 * optimizer's parameter all-gather, and so the DP bytes, are those of BF16,
 * while the linear layers' GEMMs run at the FP8 peak; attention and the LM
 * head stay 16-bit. */
START_TEST(fp8_gathers_16bit_params)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 1, small_model);
	p.flash_attention = true;
	p.distributed_optimizer = true;
	p.global_batch = 8;
	resolve(&p);
	run(&p, &o, &a);
	p.precision = PLAN_DT_FP8;
	resolve(&p);
	run(&p, &o, &b);
	ck_assert_double_gt(a.comm_bytes[SIM_COMM_DP], 0);
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] - 1) < 1e-12,
		      "dp bytes fp8 %.9g, bf16 %.9g", b.comm_bytes[SIM_COMM_DP], a.comm_bytes[SIM_COMM_DP]);
	ck_assert_double_lt(b.bd.compute_s, a.bd.compute_s);
	ck_assert_double_lt(slice_time(&b, "qkv gemm"), slice_time(&a, "qkv gemm"));
	ck_assert_double_lt(slice_time(&b, "mlp down wgrad"), slice_time(&a, "mlp down wgrad"));
	/* the same durations (to the picosecond clock's rounding) */
	ck_assert_double_eq_tol(slice_time(&b, "attention"), slice_time(&a, "attention"), 1e-11);
	ck_assert_double_eq_tol(slice_time(&b, "lm head gemm"), slice_time(&a, "lm head gemm"), 1e-11);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The n-th slice (0-based, by start time) named `name` on representative
 * 0's track `track` in layer 0 of micro-batch 0, or NULL. */
static const struct sim_slice *nth_slice(const struct sim_prediction *r, int track, const char *name,
					 int nth)
{
	const struct sim_slice *got[16];
	int n = 0;
	for (int32_t i = 0; i < r->tl->n && n < 16; i++) {
		const struct sim_slice *c = &r->tl->s[i];
		if (c->track == track && c->micro == 0 && c->layer == 0 && !strcmp(c->name, name))
			got[n++] = c;
	}
	for (int i = 1; i < n; i++) /* insertion sort by start */
		for (int j = i; j > 0 && got[j]->t0_s < got[j - 1]->t0_s; j--) {
			const struct sim_slice *t = got[j];
			got[j] = got[j - 1];
			got[j - 1] = t;
		}
	return nth < n ? got[nth] : NULL;
}

/* Rep 0's slices named `name` on track `track` in layer 0 of micro-batch 0. */
static int count_slices(const struct sim_prediction *r, int track, const char *name)
{
	int n = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *c = &r->tl->s[i];
		n += c->track == track && c->micro == 0 && c->layer == 0 && !strcmp(c->name, name);
	}
	return n;
}

/* Sequence parallelism in backward, as Megatron-core's column-parallel
 * linear does it without any overlap flag: the saved input shard is
 * all-gathered again for the weight gradient beside the dgrad GEMM, and the
 * input gradient is reduce-scattered beside the wgrad GEMM. Per layer: two
 * all-gathers and two reduce-scatters forward; backward the all-gathers of
 * the output gradients of the projection and MLP, the two re-gathers, and
 * the two reduce-scatters. */
START_TEST(sp_backward_regathers_inputs)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	const double eps = 1e-12;
	setup_small(&p, &o, 1, small_model);
	p.tp = 2;
	p.sp = true;
	p.global_batch = 4;
	resolve(&p);
	run(&p, &o, &r);
	ck_assert_int_eq(count_slices(&r, WL_S_COMM, "tp allgather"), 6);
	ck_assert_int_eq(count_slices(&r, WL_S_COMM, "tp reducescatter"), 4);
	/* the vocabulary-parallel cross-entropy: max, predicted logit, sum */
	ck_assert_int_eq(slice_count(&r, "loss tp allreduce"), 3);
	/* the norms' partial gradients, once before the step */
	ck_assert_int_eq(slice_count(&r, "tp replicated grads allreduce"), 1);
	/* the QKV re-gather (the last all-gather of the layer's backward) runs
	 * beside the dgrad, the wgrad waits for it; the reduce-scatter after it
	 * runs beside the wgrad, and the norm backward waits for it */
	const struct sim_slice *ag = nth_slice(&r, WL_S_COMM, "tp allgather", 5);
	const struct sim_slice *rs = nth_slice(&r, WL_S_COMM, "tp reducescatter", 3);
	const struct sim_slice *dg = nth_slice(&r, WL_S_COMPUTE, "qkv dgrad", 0);
	const struct sim_slice *wg = nth_slice(&r, WL_S_COMPUTE, "qkv wgrad", 0);
	ck_assert(ag && rs && dg && wg);
	ck_assert_double_le(fabs(ag->t0_s - dg->t0_s), eps);
	ck_assert_double_le(fabs(wg->t0_s - fmax(dg->t1_s, ag->t1_s)), eps);
	ck_assert_double_lt(rs->t0_s, wg->t1_s);
	const struct sim_slice *nb = compute_from(&r, wg->t1_s, 0, 0, "norm bwd");
	ck_assert(nb);
	ck_assert_double_ge(nb->t0_s, rs->t1_s - eps);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Megatron-core's all-to-all token dispatcher with TP (sequence
 * parallelism): each rank routes and dispatches its 1/tp of the tokens, the
 * TP group all-gathers the routed tokens for its TP-split experts and
 * reduce-scatters their outputs before the combine. Per MoE layer and
 * micro-batch: four all-to-alls (dispatch, combine, their backward) of
 * top-k x T/tp x h x 2 bytes per rank at the balanced load, and in forward
 * the all-gather of the token counts per expert; a recomputed forward adds
 * the attention block's all-gather and reduce-scatter of T x h x 2, the MoE
 * block's of top-k x T x h x 2 and the counts again. Around the exchanges,
 * the dispatcher's permutes and sorts. */
/* A small Qwen3-style MoE: 4 layers, 16 experts, top-4. */
static const char *const small_moe =
	"{\"hidden_size\": 512, \"num_hidden_layers\": 4, "
	"\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 64, "
	"\"intermediate_size\": 1024, \"moe_intermediate_size\": 256, "
	"\"num_experts\": 16, \"num_experts_per_tok\": 4, \"vocab_size\": 1000, "
	"\"max_position_embeddings\": 4096, \"hidden_act\": \"silu\", "
	"\"model_type\": \"qwen3_moe\"}";

/* Without a pipeline there is no bubble: where the critical path hops to
 * the slowest rank of a collective (--jitter) or to the busiest expert
 * rank (expert imbalance), its compute is compute, not bubble beyond one
 * rank's busy time (found by review: tp 8 at jitter 0.2 showed a 2.9 ms
 * "pipeline bubble", and an imbalanced EP plan put 13 % of its compute
 * there under --exact but not folded). */
START_TEST(no_bubble_without_pipeline)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	load_topo("dgx-h100-ndr", 1);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 8;
	p.global_batch = 4;
	p.seq_len = 1024;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.jitter = 0.2;
	run(&p, &o, &a);
	ck_assert_msg(a.bd.bubble_s < 1e-12 * a.iteration_time_s, "bubble %.9g s of %.9g s",
		      a.bd.bubble_s, a.iteration_time_s);
	sim_prediction_release(&a);
	topo_release(&topo);
	setup_small(&p, &o, 1, small_moe);
	o.timeline = false;
	p.ep = 8;
	p.global_batch = 16;
	p.expert_imbalance = 1;
	resolve(&p);
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert_msg(b.bd.bubble_s < 1e-12 * b.iteration_time_s && a.bd.bubble_s < 1e-12 * a.iteration_time_s,
		      "bubble %.9g s folded, %.9g s exact", a.bd.bubble_s, b.bd.bubble_s);
	ck_assert_msg(fabs(a.bd.compute_s - b.bd.compute_s) <= 1e-9 * a.bd.compute_s,
		      "compute %.9g s folded, %.9g s exact", a.bd.compute_s, b.bd.compute_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Sum of the compute slices' GPU time (less the host's waits) on every
 * track, s. */
static double gpu_compute_sum(const struct sim_prediction *r)
{
	double t = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *sl = &r->tl->s[i];
		if (sl->coll < 0 && sl->track % SIM_TL_PER != SIM_TL_HOST)
			t += sl->t1_s - sl->t0_s - sl->host_wait_s;
	}
	return t;
}

/* --jitter is per-op noise of relative sigma X around each op's time: a
 * lognormal factor of mean 1, so the mean op time stays while stragglers
 * slow the iteration (found by an audit: 1 + N(0, X) clipped at 0.5 made
 * the ops 20 % longer on average at X = 1, 4 % at 0.5). */
START_TEST(jitter_keeps_the_mean_op_time)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	load_topo("dgx-h100-ndr", 1);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.global_batch = 32;
	p.seq_len = 1024;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.exact = true;
	o.timeline = true;
	run(&p, &o, &a);
	double base = gpu_compute_sum(&a);
	for (int k = 0; k < 2; k++) {
		o.jitter = k ? 1.0 : 0.5;
		run(&p, &o, &b);
		double r = gpu_compute_sum(&b) / base;
		ck_assert_msg(fabs(r - 1) < 0.02, "jitter %g: mean op time x%.4f", o.jitter, r);
		ck_assert_msg(b.iteration_time_s > a.iteration_time_s, "jitter %g: %.9g s vs %.9g s",
			      o.jitter, b.iteration_time_s, a.iteration_time_s);
		sim_prediction_release(&b);
	}
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* Folded and --exact split the iteration the same way under overlap.dp
 * with replicas that draw their own images: the path starts on the
 * busiest rank that ends the iteration (found by review: --exact started
 * on a light replica, whose idle compute stream exposed the DP buckets the
 * folded heaviest replica hid: 8 % of the iteration moved from compute to
 * exposed DP). */
START_TEST(overlap_dp_breakdown_folded_as_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 2;
	p.global_batch = 32;
	p.seq_len = 1024;
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 1;
	set_uniform(&p.image_tokens, 64, 512);
	p.overlap_dp = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.seed = 3;
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert_msg(fabs(a.iteration_time_s - b.iteration_time_s) <= 1e-9 * a.iteration_time_s,
		      "iteration %.9g s folded, %.9g s exact", a.iteration_time_s, b.iteration_time_s);
	ck_assert_msg(fabs(a.bd.compute_s - b.bd.compute_s) <= 1e-6 * a.iteration_time_s &&
			      fabs(a.bd.exposed_comm_s[SIM_COMM_DP] - b.bd.exposed_comm_s[SIM_COMM_DP]) <=
				      1e-6 * a.iteration_time_s,
		      "compute %.9g / %.9g s, exposed DP %.9g / %.9g s (folded / exact)", a.bd.compute_s,
		      b.bd.compute_s, a.bd.exposed_comm_s[SIM_COMM_DP], b.bd.exposed_comm_s[SIM_COMM_DP]);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Megatron's all-to-all dispatcher copies the split sizes to the host and
 * synchronises the stream: dropless before the EP all-to-all, so however
 * far ahead the host was, the first op after the dispatch (and after the
 * TP all-gather with tp 2) is dispatched a host dispatch time after the
 * permute ends; with a capacity before the permute, which then starts a
 * dispatch after the token-count all-gather ends. A model whose GEMMs
 * outlast the 100 us dispatch, so the host runs ahead elsewhere (without
 * the sync, the permute ends 98.0 us after the counts); the workload
 * marks those ops (sync_after). */
START_TEST(moe_counts_sync_the_host)
{
	static const char *const moe_h2048 =
		"{\"hidden_size\": 2048, \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
		"\"num_key_value_heads\": 4, \"head_dim\": 128, \"intermediate_size\": 8192, "
		"\"moe_intermediate_size\": 4096, \"num_experts\": 8, \"num_experts_per_tok\": 1, "
		"\"vocab_size\": 1000, \"max_position_embeddings\": 8192, \"hidden_act\": \"silu\", "
		"\"model_type\": \"qwen3_moe\"}";
	static const struct {
		int tp;
		double cf;
	} cases[] = { { 1, 0 }, { 2, 0 }, { 1, 1.25 } };
	for (size_t k = 0; k < TS_ARRAY_LEN(cases); k++) {
		struct plan p;
		struct sim_predict_opts o;
		struct sim_prediction a;
		struct sim_compute comp;
		int seen = 0;
		setup_small(&p, &o, 1, moe_h2048);
		p.ep = 2;
		p.tp = cases[k].tp;
		p.sp = p.tp > 1;
		p.capacity_factor = cases[k].cf;
		p.global_batch = 8 / p.tp;
		p.seq_len = 4096;
		p.flash_attention = true;
		resolve(&p);
		sim_compute_init(&comp, &topo.cl.gpu);
		comp.dispatch_s = 100e-6;
		o.compute = &comp;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &a);
		for (int32_t i = 0; i < a.tl->n; i++) {
			const struct sim_slice *d = &a.tl->s[i], *before = NULL, *after = NULL;
			/* the sync point: before the dispatch (dropless) or after the
			 * counts (capacity); the op before it and the op after */
			const char *at = cases[k].cf > 0 ? "moe token counts" : "ep dispatch";
			if (d->track != WL_S_COMM || strcmp(d->name, at))
				continue;
			for (int32_t j = 0; j < a.tl->n; j++) {
				const struct sim_slice *c = &a.tl->s[j];
				if (c->track != WL_S_COMPUTE)
					continue;
				if (c->t1_s <= d->t0_s + 1e-12 && (!before || c->t1_s > before->t1_s))
					before = c;
				if (c->t0_s >= d->t1_s - 1e-12 && (!after || c->t0_s < after->t0_s))
					after = c;
			}
			ck_assert(before && after);
			if (cases[k].cf > 0) { /* the permute, a dispatch after the counts */
				ck_assert_str_eq(after->name, "moe permute");
				ck_assert_msg(after->t1_s - d->t1_s >= 100e-6 - 1e-12,
					      "permute ends %.3f us after the counts",
					      1e6 * (after->t1_s - d->t1_s));
			} else {
				ck_assert_str_eq(before->name, "moe permute");
				ck_assert_msg(after->t1_s - before->t1_s >= 100e-6 - 1e-12,
					      "tp %d: %s ends %.3f us after the permute", p.tp, after->name,
					      1e6 * (after->t1_s - before->t1_s));
			}
			seen++;
		}
		ck_assert_int_eq(seen, 2); /* two layers, one micro-batch */
		sim_prediction_release(&a);
		/* where the workload puts the sync: on the permute, after the
		 * counts (capacity), or on the op after the permute (dropless) */
		{
			struct workload w;
			struct wl_opts wo;
			struct ts_error err = TS_ERROR_INIT;
			int nsync = 0;
			wl_opts_init(&wo);
			ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
			for (int32_t i = 0; i < w.roles[0].nops; i++) {
				const struct wl_op *op = &w.roles[0].ops[i], *at;
				if (op->sync_after < 0)
					continue;
				at = &w.roles[0].ops[op->sync_after];
				if (cases[k].cf > 0)
					ck_assert(!strcmp(op->name, "moe permute") &&
						  !strcmp(at->name, "moe token counts"));
				else
					ck_assert(!strcmp(at->name, "moe permute") &&
						  op->kind == WL_K_COMPUTE && op->sync_after < i);
				nsync++;
			}
			ck_assert_int_eq(nsync, 2);
			workload_release(&w);
		}
		topo_release(&topo);
	}
}
END_TEST

/* overlap.ep (Megatron-core's --overlap-moe-expert-parallel-comm): each
 * steady-state forward runs merged with the backward after it, cut at
 * their EP all-to-alls, so every all-to-all of a merged pair travels while
 * the other micro-batch computes. Qwen3-30B-A3B's layer shape, 4 layers,
 * one node, EP 8, no pipeline, m = 8: the workload holds the same ops
 * (names and counts) with every dependency backwards and every stream
 * threaded in order; the compute time is the same; the all-to-alls run on
 * their own stream beside compute of the other micro-batch; and the time
 * saved is the all-to-all time of the merged tasks: (m - 1)/m of the
 * exposed EP time without overlap less the token-count all-gathers (which
 * stay blocking), as only the first forward and the last backward run
 * alone. */
static const char *const qwen3_moe_4l =
	"{\"hidden_size\": 2048, \"num_hidden_layers\": 4, \"num_attention_heads\": 32, "
	"\"num_key_value_heads\": 4, \"head_dim\": 128, \"intermediate_size\": 6144, "
	"\"moe_intermediate_size\": 768, \"num_experts\": 128, \"num_experts_per_tok\": 8, "
	"\"vocab_size\": 151936, \"max_position_embeddings\": 40960, \"hidden_act\": \"silu\", "
	"\"model_type\": \"qwen3_moe\"}";

static void ep_plan(struct plan *p, int pp, int v, int gb)
{
	plan_init(p);
	p->ep = 8;
	p->pp = pp;
	if (v > 1) {
		p->schedule = PLAN_SCHED_INTERLEAVED;
		p->virtual_stages = v;
	}
	p->global_batch = gb;
	p->seq_len = 4096;
	p->recompute = PLAN_RC_SELECTIVE;
	p->flash_attention = true;
	p->distributed_optimizer = true;
	p->overlap_dp = true;
}

/* Every op's dependencies are earlier ops, each op after the first of
 * its stream depends on the stream's previous op, and the ops by name. */
static void check_threads(const struct workload *w, int *count_a2a, int *on_ep)
{
	*count_a2a = *on_ep = 0;
	for (int s = 0; s < w->nroles; s++) {
		const struct wl_role *r = &w->roles[s];
		int32_t prev[WL_NSTREAMS];
		for (int k = 0; k < WL_NSTREAMS; k++)
			prev[k] = -1;
		for (int32_t i = 0; i < r->nops; i++) {
			const struct wl_op *op = &r->ops[i];
			bool threaded = prev[op->stream] < 0;
			for (int d = 0; d < op->ndeps; d++) {
				ck_assert_int_lt(op->deps[d], i);
				ck_assert_int_ge(op->deps[d], 0);
				threaded |= op->deps[d] == prev[op->stream];
			}
			ck_assert_msg(threaded, "stage %d op %d (%s): not after its stream's previous op",
				      s, i, op->name);
			if (op->sync_after >= 0)
				ck_assert_int_lt(op->sync_after, i);
			if (op->kind == WL_K_COLL && op->dim == WL_D_EP && op->coll == WL_C_ALLTOALL) {
				(*count_a2a)++;
				*on_ep += op->stream == WL_S_EP;
			}
			prev[op->stream] = i;
		}
	}
}

/* Merged pairs, backward first: the forward tasks whose first all-to-all
 * is issued right after a backward task's first (its combine's
 * backward), per stage; and every pipeline send depends on the last
 * compute op of its own task (found by review: neither was tested). */
static void check_pairs(const struct workload *w, const int *want)
{
	for (int s = 0; s < w->nroles; s++) {
		const struct wl_role *r = &w->roles[s];
		int32_t prev = -1;
		int paired = 0;
		uint8_t *first = calloc((size_t)r->nops, 1);
		ck_assert_ptr_nonnull(first);
		for (int32_t i = 0; i < r->nops; i++) {
			const struct wl_op *op = &r->ops[i];
			bool bwd = op->phase == WL_P_BWD || op->phase == WL_P_RECOMPUTE, seen = false;
			if (op->kind == WL_K_SEND && op->dim == WL_D_PP) {
				int32_t last = -1;
				bool dep = false;
				for (int32_t j = 0; j < i; j++) {
					const struct wl_op *c = &r->ops[j];
					if (c->kind == WL_K_COMPUTE && c->micro == op->micro &&
					    c->chunk == op->chunk &&
					    (c->phase == WL_P_BWD || c->phase == WL_P_RECOMPUTE) ==
						    (op->phase == WL_P_BWD))
						last = j;
				}
				for (int d = 0; d < op->ndeps; d++)
					dep |= op->deps[d] == last;
				ck_assert_msg(last >= 0 && dep, "stage %d: %s (micro %d) not after its own compute",
					      s, op->name, op->micro);
			}
			if (op->stream != WL_S_EP)
				continue;
			for (int32_t j = 0; j < i && !seen; j++)
				seen = r->ops[j].stream == WL_S_EP && r->ops[j].micro == op->micro &&
				       r->ops[j].chunk == op->chunk &&
				       (r->ops[j].phase == WL_P_BWD ||
					r->ops[j].phase == WL_P_RECOMPUTE) == bwd;
			first[i] = !seen;
			if (!seen && !bwd && prev >= 0 && first[prev] &&
			    !strcmp(r->ops[prev].name, "ep combine bwd"))
				paired++;
			prev = i;
		}
		ck_assert_msg(paired == want[s], "stage %d: %d forwards paired backward-first, want %d", s,
			      paired, want[s]);
		free(first);
	}
}

static int cmp_names(const void *a, const void *b)
{
	const struct wl_op *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->micro != y->micro ? x->micro - y->micro : x->layer - y->layer;
}

/* Same ops (name, micro-batch, layer) per stage, in any order. */
static void same_ops(const struct workload *a, const struct workload *b)
{
	ck_assert_int_eq(a->nroles, b->nroles);
	for (int s = 0; s < a->nroles; s++) {
		int32_t n = a->roles[s].nops;
		ck_assert_int_eq(n, b->roles[s].nops);
		struct wl_op *x = malloc((size_t)n * sizeof(*x)), *y = malloc((size_t)n * sizeof(*y));
		ck_assert(x && y);
		memcpy(x, a->roles[s].ops, (size_t)n * sizeof(*x));
		memcpy(y, b->roles[s].ops, (size_t)n * sizeof(*y));
		qsort(x, (size_t)n, sizeof(*x), cmp_names);
		qsort(y, (size_t)n, sizeof(*y), cmp_names);
		for (int32_t i = 0; i < n; i++) {
			ck_assert_str_eq(x[i].name, y[i].name);
			ck_assert_int_eq(x[i].micro, y[i].micro);
			ck_assert_int_eq(x[i].layer, y[i].layer);
			ck_assert_double_eq(x[i].flops, y[i].flops);
		}
		free(x);
		free(y);
	}
}

/* Plan p without and with an overlap flag (analytic, no slowdown beside
 * communication): predictions a and b, workloads wa and wb, which hold the
 * same ops. */
static void run_pair(struct plan *p, bool *flag, struct sim_predict_opts *o,
		     struct sim_prediction *a, struct sim_prediction *b, struct workload *wa,
		     struct workload *wb)
{
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	wl_opts_init(&wo);
	o->fidelity = SIM_ANALYTIC;
	o->overlap_slowdown = 1;
	*flag = false;
	resolve(p);
	run(p, o, a);
	ck_assert_msg(workload_build(wa, &model, p, &wo, &err) == 0, "%s", err.msg);
	*flag = true;
	resolve(p);
	run(p, o, b);
	ck_assert_msg(workload_build(wb, &model, p, &wo, &err) == 0, "%s", err.msg);
	same_ops(wa, wb);
}

START_TEST(ep_overlap_hides_alltoalls)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct workload wa, wb;
	int m, na, ea, nb, eb, beside = 0;
	double tc = 0, want;
	setup_small(&p, &o, 1, qwen3_moe_4l);
	ep_plan(&p, 1, 1, 64);
	run_pair(&p, &p.overlap_ep, &o, &a, &b, &wa, &wb);
	m = plan_microbatches(&p);
	ck_assert_int_eq(m, 8);
	check_threads(&wa, &na, &ea);
	check_threads(&wb, &nb, &eb);
	{
		int pairs = m - 1; /* all but the first forward */
		check_pairs(&wb, &pairs);
	}
	ck_assert_int_eq(na, m * 4 * 4); /* dispatch and combine, forward and backward */
	ck_assert_int_eq(nb, na);
	ck_assert_int_eq(ea, 0);
	ck_assert_int_eq(eb, nb);
	workload_release(&wa);
	workload_release(&wb);
	ck_assert_double_eq_tol(b.bd.compute_s, a.bd.compute_s, a.bd.compute_s * 1e-12);
	for (int32_t i = 0; i < a.tl->n; i++)
		if (!strcmp(a.tl->s[i].name, "moe token counts") && a.tl->s[i].track == WL_S_COMM)
			tc += a.tl->s[i].t1_s - a.tl->s[i].t0_s;
	ck_assert(tc > 0);
	want = (m - 1.0) / m * (a.bd.exposed_comm_s[SIM_COMM_EP] - tc);
	ck_assert_msg(fabs(a.iteration_time_s - b.iteration_time_s - want) < 0.01 * want,
		      "saved %.6f s, want %.6f s (exposed ep %.6f s, counts %.6f s)",
		      a.iteration_time_s - b.iteration_time_s, want, a.bd.exposed_comm_s[SIM_COMM_EP],
		      tc);
	/* each all-to-all of a merged pair (micro-batches 1..6 both ways) runs
	 * on the EP stream while compute of another micro-batch does */
	for (int32_t i = 0; i < b.tl->n; i++) {
		const struct sim_slice *x = &b.tl->s[i];
		bool seen = false;
		if (x->track != WL_S_EP || x->micro < 1 || x->micro > 6)
			continue;
		for (int32_t j = 0; j < b.tl->n && !seen; j++) {
			const struct sim_slice *c = &b.tl->s[j];
			seen = c->track == WL_S_COMPUTE && c->micro != x->micro &&
			       c->t0_s < x->t1_s - 1e-12 && c->t1_s > x->t0_s + 1e-12;
		}
		ck_assert_msg(seen, "%s of micro-batch %d layer %d runs alone", x->name, x->micro,
			      x->layer);
		beside++;
	}
	ck_assert_int_eq(beside, 6 * 4 * 4);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The same under the interleaved schedule (pp 2, v 2, two nodes): folded
 * and exact agree within 1 %, and overlapping is faster; with m = p every
 * forward is warm-up, nothing pairs and the time is the same (found in
 * testing: the last warm-up forward and the first cool-down backward were
 * merged, and the pipeline deadlocked). */
START_TEST(ep_overlap_interleaved)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	double t0;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	int n, e;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(qwen3_moe_4l);
	ep_plan(&p, 2, 2, 64);
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &a);
	t0 = a.iteration_time_s;
	sim_prediction_release(&a);
	p.overlap_ep = true;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	check_threads(&w, &n, &e);
	ck_assert_int_eq(e, n);
	{ /* warm-up 2(p - s - 1) + (v - 1)p + 1 of the m v forwards */
		int want[2], mv = plan_microbatches(&p) * 2;
		for (int s = 0; s < 2; s++)
			want[s] = mv - (2 * (1 - s) + 2 + 1);
		check_pairs(&w, want);
	}
	workload_release(&w);
	check_recv_feeds(&p, "overlap.ep interleaved");
	run(&p, &o, &a);
	ck_assert_msg(a.iteration_time_s < 0.95 * t0, "%.6f s with overlap, %.6f s without",
		      a.iteration_time_s, t0);
	sim_prediction_release(&a);
	folded_all_units_vs_exact(&p);
	ep_plan(&p, 2, 2, 16);
	resolve(&p);
	ck_assert_int_eq(plan_microbatches(&p), 2);
	run(&p, &o, &a);
	t0 = a.iteration_time_s;
	sim_prediction_release(&a);
	p.overlap_ep = true;
	resolve(&p);
	run(&p, &o, &a);
	ck_assert_double_eq(a.iteration_time_s, t0);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* overlap.shared_experts (Megatron-core's moe_shared_expert_overlap): the
 * shared experts' halves run beside the all-to-alls: forward, gate, up and
 * activation beside the dispatch and the down projection beside the
 * combine; backward the down projection's gradients beside the combine's
 * and the rest beside the dispatch's. Qwen1.5-MoE's shape (a shared MLP
 * of 5632), 4 layers, one node, EP 4, no TP: the same ops, and each
 * all-to-all hides min(its time, its half's compute) (from the run without
 * it), so the time saved is that sum over layers and micro-batches. */
static const char *const qwen2_moe_4l =
	"{\"model_type\": \"qwen2_moe\", \"hidden_size\": 2048, \"num_hidden_layers\": 4, "
	"\"num_attention_heads\": 16, \"num_key_value_heads\": 16, \"intermediate_size\": 5632, "
	"\"moe_intermediate_size\": 1408, \"shared_expert_intermediate_size\": 5632, "
	"\"num_experts\": 60, \"num_experts_per_tok\": 4, \"vocab_size\": 151936, "
	"\"max_position_embeddings\": 8192, \"hidden_act\": \"silu\"}";

/* Rep 0's time in the slices of micro-batch mi, layer l named in `names`. */
static double part_time(const struct sim_prediction *r, int mi, int l, const char *const *names)
{
	double t = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *c = &r->tl->s[i];
		if (c->track / SIM_TL_PER || c->micro != mi || c->layer != l)
			continue;
		for (int k = 0; names[k]; k++)
			if (!strcmp(c->name, names[k]))
				t += c->t1_s - c->t0_s;
	}
	return t;
}

START_TEST(shared_expert_overlap_hides)
{
	static const char *const disp[] = { "ep dispatch", NULL }, *const comb[] = { "ep combine", NULL },
				 *const combb[] = { "ep combine bwd", NULL },
				 *const dispb[] = { "ep dispatch bwd", NULL },
				 *const fc1[] = { "shared expert gate gemm", "shared expert up gemm",
						  "shared expert activation", NULL },
				 *const fc2[] = { "shared expert down gemm", NULL },
				 *const fc2b[] = { "shared expert down dgrad", "shared expert down wgrad",
						   NULL },
				 *const fc1b[] = { "shared expert activation bwd", "shared expert up dgrad",
						   "shared expert up wgrad", "shared expert gate dgrad",
						   "shared expert gate wgrad", NULL };
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct workload wa, wb;
	int n, e, m;
	double want = 0;
	setup_small(&p, &o, 1, qwen2_moe_4l);
	ck_assert_int_gt(model.shared_ffn, 0);
	ep_plan(&p, 1, 1, 32);
	p.ep = 4;
	run_pair(&p, &p.overlap_shared, &o, &a, &b, &wa, &wb);
	m = plan_microbatches(&p);
	check_threads(&wb, &n, &e);
	ck_assert_int_eq(e, n);
	workload_release(&wa);
	workload_release(&wb);
	for (int mi = 0; mi < m; mi++)
		for (int l = 0; l < 4; l++)
			want += fmin(part_time(&a, mi, l, disp), part_time(&a, mi, l, fc1)) +
				fmin(part_time(&a, mi, l, comb), part_time(&a, mi, l, fc2)) +
				fmin(part_time(&a, mi, l, combb), part_time(&a, mi, l, fc2b)) +
				fmin(part_time(&a, mi, l, dispb), part_time(&a, mi, l, fc1b));
	ck_assert(want > 0.02 * a.iteration_time_s);
	ck_assert_double_eq_tol(b.bd.compute_s, a.bd.compute_s, a.bd.compute_s * 1e-12);
	ck_assert_msg(fabs(a.iteration_time_s - b.iteration_time_s - want) < 0.02 * want,
		      "saved %.6f s, want %.6f s", a.iteration_time_s - b.iteration_time_s, want);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Images drawn per sample with units of several positions (EP 8): the
 * fold's heaviest replica per micro-batch is pessimistic once an EP
 * group's replicas absorb each other's encoder skew (1.6 % over --exact
 * with neither feature at 16 micro-batches under 1F1B, up to 2.0 % with
 * overlap.ep), so such plans simulate every rank when affordable: the same
 * time as --exact. */
START_TEST(ep_overlap_images_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 4);
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.global_batch = 64;
	p.images_per_sample.kind = PLAN_DIST_POISSON; /* the quick start's images */
	p.images_per_sample.mean = 2;
	set_uniform(&p.image_tokens, 64, 1024);
	p.tp = 2;
	p.sp = true;
	p.pp = 2;
	p.ep = 8;
	p.schedule = PLAN_SCHED_INTERLEAVED;
	p.virtual_stages = 2;
	p.recompute = PLAN_RC_SELECTIVE;
	p.flash_attention = true;
	p.seq_len = 4096;
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	/* overlap.ep, then the allgather dispatcher (1.2-1.5 % off before),
	 * then neither, 1F1B, 16 micro-batches (1.6 % off before) */
	for (int k = 0; k < 3; k++) {
		p.overlap_ep = !k;
		p.dispatcher = k == 1 ? PLAN_DISP_ALLGATHER : PLAN_DISP_ALLTOALL;
		if (k == 2) {
			p.schedule = PLAN_SCHED_1F1B;
			p.virtual_stages = 1;
			p.global_batch = 128;
			p.seq_len = 8192;
			p.distributed_optimizer = true;
		}
		resolve(&p);
		o.exact = false;
		run(&p, &o, &a);
		ck_assert(a.exact_fallback);
		ck_assert_ptr_nonnull(strstr(a.exact_why, "images"));
		o.exact = true;
		run(&p, &o, &b);
		ck_assert_double_eq(a.iteration_time_s, b.iteration_time_s);
		sim_prediction_release(&a);
		sim_prediction_release(&b);
	}
	topo_release(&topo);
	/* beyond 512 GPUs the fold stays (576 here, one micro-batch) */
	load_topo("dgx-h100-ndr", 72);
	p.dp = 0; /* (derived from the cluster again) */
	p.global_batch = 288;
	p.seq_len = 4096;
	resolve(&p);
	o.exact = false;
	run(&p, &o, &a);
	ck_assert(!a.exact_fallback);
	ck_assert_int_lt(a.instances, 576);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* ZeRO 2 meets the data-parallel replicas every micro-batch, so each
 * micro-batch waits for its heaviest replica: folded, a representative
 * takes per micro-batch the largest image load of every unit it stands
 * for (found by a fuzzer: the 4 units taken by their total load were 4.6 %
 * under --exact here; ZeRO 1 keeps the heaviest units' own loads). */
START_TEST(zero2_images_fold)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 8);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 2;
	p.sp = true;
	p.zero = 2;
	p.distributed_optimizer = false;
	p.recompute = PLAN_RC_SELECTIVE;
	p.flash_attention = true;
	p.seq_len = 1024;
	p.global_batch = 352;
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 0.5;
	p.image_tokens.value = 256;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.seed = 4;
	/* (K = 4 units, forced: where images vary, 32 units x 1 stage are
	 * all simulated by default, which equals --exact) */
	o.replicas = 4;
	run(&p, &o, &a);
	ck_assert_int_lt(a.units_simulated, a.units);
	o.replicas = 0;
	o.exact = true;
	run(&p, &o, &b);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.002,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	o.exact = false;
	run(&p, &o, &a);
	ck_assert_msg(a.units_simulated == a.units && a.iteration_time_s == b.iteration_time_s,
		      "every unit %d of %d: %.9f s vs exact %.9f s", a.units_simulated, a.units,
		      a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* with the host's dispatch priced each replica's host runs ahead on
	 * its own, which the fold's heaviest replica per micro-batch does not
	 * follow (0.7503 s folded, 0.6443 s --exact at 46 us): every rank.
	 * The fold itself (forced: replicas given) is over 10 % slow there. */
	struct sim_compute comp;
	struct sim_prediction c;
	sim_compute_init(&comp, &topo.cl.gpu);
	comp.dispatch_s = 46e-6;
	o.compute = &comp;
	o.exact = false;
	run(&p, &o, &a);
	o.replicas = 4;
	run(&p, &o, &c);
	o.replicas = 0;
	o.exact = true;
	run(&p, &o, &b);
	ck_assert_msg(a.exact_fallback && fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.002,
		      "folded %.6f s vs exact %.6f s with dispatch", a.iteration_time_s,
		      b.iteration_time_s);
	ck_assert_msg(!c.exact_fallback && c.iteration_time_s > 1.1 * b.iteration_time_s,
		      "forced fold %.6f s vs exact %.6f s with dispatch", c.iteration_time_s,
		      b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
	topo_release(&topo);
}
END_TEST

/* A linear placement whose stages meet the leaves differently from unit
 * to unit (40 nodes, 32 hosts per leaf, pp 4): a unit's positions are
 * alike (EP 8 in one host), so no rank-by-rank fallback (found by review:
 * the positions were compared across units once leaves counted). */
START_TEST(linear_placement_no_fallback)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	load_topo("dgx-h100-ndr", 40);
	load_model_json(qwen3_moe_4l);
	plan_init(&p);
	p.pp = 4;
	p.ep = 8;
	p.global_batch = 320;
	p.seq_len = 2048;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &a);
	ck_assert(!a.exact_fallback);
	ck_assert_int_lt(a.instances, 320);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* Folded on the network: the units a representative stands for send in
 * step with it, but each ends its exchanges on its own. 16 units of 16
 * GPUs (tp 2 x EP 8, two nodes each) on 32 nodes, flow level, PXN off (its
 * all-to-alls cross the spine between rails): every unit is simulated when
 * few (before: 4 stood for 16, 5.8 % over --exact), and with 4 forced the
 * representatives no longer wait at each all-to-all for the slowest unit
 * they cover (5.8 % before at seed 1; now 0.5-4.5 % over seeds 1-4, 2.2 %
 * on average; what is left is that the covered units send in step). Then units that sit unalike at the leaves (3 hosts
 * per leaf on a 2:1 leaf-spine: every other unit straddles two leaves):
 * the representatives wait for those they stand for, as before (found by
 * review: 10 % under --exact otherwise). */
START_TEST(folded_units_on_network)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	load_topo("dgx-h100-ndr", 32);
	topo.cl.fabric.no_pxn = true;
	load_model_json(qwen3_moe_4l);
	plan_init(&p);
	p.tp = 2;
	p.sp = true;
	p.ep = 8;
	p.global_batch = 128;
	p.seq_len = 4096;
	p.recompute = PLAN_RC_SELECTIVE;
	resolve(&p);
	ck_assert_int_eq(p.dp, 128);
	sim_predict_opts_init(&o);
	o.exact = true;
	run(&p, &o, &b);
	o.exact = false;
	run(&p, &o, &a);
	ck_assert_int_eq(a.units, 16);
	ck_assert_int_eq(a.units_simulated, 16);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.01,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* 4 standing for 16: how far the covered units' sending in step
	 * lands from --exact depends on how the drawn expert loads align, so
	 * over seeds 1-4 (found when the q/k kernels moved seed 1 from 2.9 to
	 * 4.5 %, the others 0.3-1.9 % before and after; seeds 1-10 at
	 * d8035d4: +4.46, +1.78, +1.87, +0.54, +3.80, +1.35, -0.43, +2.72,
	 * -0.24, +1.56 %, why seed 1 moved so much not found). Since a
	 * group's collectives keep their ECMP paths all iteration (NCCL's
	 * connections are made once; they were drawn again per op), a unit's
	 * collisions no longer average out over its ops, and the fold takes
	 * the slowest of 4 units' draws where --exact takes the slowest of
	 * 16: seeds 1-10 -3.64, -4.35, -5.97, +1.50, -5.66, -0.23, -1.79,
	 * -2.19, +0.07, -0.65 % (mean |gap| 2.6 %, 2.0 % before). Each
	 * from -7 % to +3 %, their mean |gap| within 4.5 % (3.9 % at seeds
	 * 1-4) */
	double sum = 0;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		o.seed = seed;
		o.exact = true;
		o.replicas = 0;
		run(&p, &o, &b);
		o.exact = false;
		o.replicas = 4;
		run(&p, &o, &a);
		ck_assert_int_eq(a.units_simulated, 4);
		double gap = fabs(a.iteration_time_s / b.iteration_time_s - 1);
		/* (signed: the slowest of fewer draws comes out low) */
		ck_assert_msg(a.iteration_time_s > 0.93 * b.iteration_time_s &&
				      a.iteration_time_s < 1.03 * b.iteration_time_s,
			      "seed %d: 4 of 16 folded %.6f s vs exact %.6f s", (int)seed,
			      a.iteration_time_s, b.iteration_time_s);
		sum += gap;
		sim_prediction_release(&a);
		sim_prediction_release(&b);
	}
	ck_assert_msg(sum / 4 < 0.045, "4 of 16 folded: %.2f %% from --exact on average",
		      100 * sum / 4);
	o.seed = 1;
	o.replicas = 0;
	topo_release(&topo);

	load_topo(tu_tmpfile(0, ".json",
			     "{\"name\": \"straddle\", \"preset\": \"h100-roce-leafspine-2to1\", "
			     "\"fabric\": {\"leaves\": 8, \"spines\": 4, \"hosts_per_leaf\": 24, "
			     "\"uplinks_per_leaf\": 4, \"switch_ports\": 64, \"rails\": false}}"),
		  24);
	p.dp = 0;
	p.global_batch = 192;
	resolve(&p);
	o.replicas = 0;
	o.exact = true;
	run(&p, &o, &b);
	o.exact = false;
	for (int k = 0; k < 2; k++) {
		o.replicas = k ? 2 : 0;
		run(&p, &o, &a);
		ck_assert(a.units_differ);
		ck_assert_int_eq(a.units_simulated, k ? 2 : 12);
		ck_assert_msg(a.iteration_time_s > 0.999 * b.iteration_time_s &&
				      a.iteration_time_s < 1.03 * b.iteration_time_s,
			      "%d of 12 folded %.6f s vs exact %.6f s", a.units_simulated,
			      a.iteration_time_s, b.iteration_time_s);
		sim_prediction_release(&a);
	}
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Folded, the data-parallel groups beside the representatives' own run
 * their buckets in turn from their own members' streams, as --exact's
 * ranks do. On an ECMP leaf-spine each DP ring of a tp-8 stage hashes to
 * its own spines, so the rings take different times: waiting for every
 * ring at each bucket came out up to 12.9 % over --exact (seeds 1-4: 2.9,
 * -0.2, 12.9, 7.1 %). Then pipeline sends on hashed paths: every unit is
 * simulated when few (four of 16 came out -1.5 to +1 % off). Then the
 * distributed optimizer: each group gathers its parameters after its own
 * reduce-scatters and optimizer, not when the slowest ring is done (+1.0,
 * 4.8, 13.3, 10.7 % before; +0.3 to +6.5 % with the ring held back). */
START_TEST(folded_dp_groups_in_turn)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	load_topo("h100-roce-leafspine", 8);
	/* (enough gradients for a dozen buckets) */
	load_model_json("{\"n_embd\": 2048, \"n_layer\": 16, \"n_head\": 16, \"vocab_size\": "
			"1000, \"n_positions\": 2048, \"model_type\": \"gpt2\"}");
	for (int k = 0; k < 3; k++) {
		plan_init(&p);
		p.tp = k == 1 ? 2 : k == 2 ? 4 : 8;
		p.pp = k == 1 ? 2 : 1;
		p.seq_len = 2048;
		p.global_batch = k == 1 ? 64 : 32;
		p.overlap_dp = true;
		p.distributed_optimizer = k == 2;
		resolve(&p);
		for (uint64_t seed = 1; seed <= 4; seed++) {
			sim_predict_opts_init(&o);
			o.seed = seed;
			o.exact = true;
			run(&p, &o, &b);
			o.exact = false;
			/* (the units it would simulate, named: a named count
			 * keeps the fold, which overlap.dp on these hashed
			 * rings otherwise leaves for every rank) */
			o.replicas = k == 1 ? p.dp : 4;
			run(&p, &o, &a);
			ck_assert(!a.exact_fallback);
			ck_assert_int_eq(a.units_simulated, k == 1 ? a.units : 4);
			/* (the distributed optimizer's case, k 2, held to the 1 %
			 * the fold promises: within 1e-3 at the older assumed
			 * compute defaults, but 0.01-0.18 % at the H200-measured
			 * ones, either sign, and 0.53 % at seed 4 with an earlier
			 * fit of them; a timing-sensitive gap in how the fold
			 * orders the other groups' gathers, not explained) */
			ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) <
					      (k == 2 ? 1e-2 : 1e-3),
				      "tp %d pp %d seed %d: folded %.6f s vs exact %.6f s", p.tp, p.pp,
				      (int)seed, a.iteration_time_s, b.iteration_time_s);
			sim_prediction_release(&a);
			sim_prediction_release(&b);
		}
	}
	topo_release(&topo);
}
END_TEST

/* The distributed optimizer on the last stage, which reduces its gradients
 * in one collective after its backward: its optimizer also waits for the
 * backward's last pipeline send, done well before, so each group still
 * gathers its parameters after its own reduction (256 GPUs: +13.2 % over
 * --exact when that send kept the gather behind the slowest ring). */
START_TEST(folded_gather_after_pp_send)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("h100-roce-leafspine", 32);
	ck_assert_msg(model_load(&model, "qwen3-vl-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 4;
	p.pp = 2;
	p.seq_len = 2048;
	p.global_batch = 128;
	p.distributed_optimizer = true;
	p.overlap_dp = true;
	p.images_per_sample.value = 1;
	p.image_tokens.value = 256;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 1;
	o.replicas = p.dp; /* (every unit, as the fold runs it: keeps the fold) */
	run(&p, &o, &a);
	o.replicas = 0;
	o.exact = true;
	run(&p, &o, &b);
	ck_assert(!a.exact_fallback);
	ck_assert_int_eq(a.units_simulated, a.units);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-3,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* examples/clusters/fat-tree-k8.json: one GPU and NIC a node, 3 tiers. */
static const char *const fat_tree_k8_1gpu =
	"{\"name\": \"ft8\", \"preset\": \"dgx-a100-hdr\", \"node\": {\"gpus\": 1, \"nics\": 1}, "
	"\"fabric\": {\"type\": \"fat-tree\", \"k\": 8, \"tiers\": 3, \"link_bandwidth_gbps\": 200}}";

/* Tied embeddings on pp 2: each rank sends its embedding gradient to the
 * other end of the pipeline after its own DP group's last reduction, and
 * each group of the receiving stage gathers its parameters (distributed
 * optimizer) after its own members' slices arrived. Folded, the
 * representatives waited for the slowest group and sent every slice at
 * once (a: +1.6 / +0.45 / +0.52 % over --exact at seeds 1-3), and every
 * group gathered behind the slowest slice (b, one GPU a node: +1.5 % at
 * seed 1, -1.4 % at seed 4). With a CPU optimizer between (c), whose time
 * depends on the host thread's earlier work, the groups keep waiting for
 * the representatives (found by review: -0.63 % at seed 1 when they did
 * not). */
START_TEST(folded_tied_embedding_slices)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	static const uint64_t seeds[3][3] = { { 1, 2, 3 }, { 1, 4, 0 }, { 1, 0, 0 } };
	for (int k = 0; k < 3; k++) {
		if (k != 1)
			load_topo("h100-roce-leafspine", k == 0 ? 8 : 4);
		else
			load_topo(tu_tmpfile(0, ".json", fat_tree_k8_1gpu), 64);
		ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
		ck_assert(model.tie_embeddings);
		plan_init(&p);
		p.tp = k == 2 ? 2 : 8;
		p.pp = 2;
		p.sp = k != 2;
		p.flash_attention = k != 2;
		p.seq_len = 4096;
		p.global_batch = 16;
		if (k == 2) {
			p.distributed_optimizer = true;
			p.offload = PLAN_OFF_OPTIMIZER;
		} else if (k == 0) {
			p.recompute = PLAN_RC_FULL;
			p.bucket_bytes = 10e6;
			p.overlap_dp = true;
			p.images_per_sample.value = 1;
			p.image_tokens.value = 256;
		} else {
			p.schedule = PLAN_SCHED_INTERLEAVED;
			p.virtual_stages = 2;
			p.distributed_optimizer = true;
		}
		resolve(&p);
		for (int i = 0; i < 3 && seeds[k][i]; i++) {
			sim_predict_opts_init(&o);
			o.seed = seeds[k][i];
			run(&p, &o, &a);
			o.exact = true;
			run(&p, &o, &b);
			ck_assert(!a.exact_fallback);
			ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-3,
				      "case %d seed %d: folded %.6f s vs exact %.6f s", k,
				      (int)seeds[k][i], a.iteration_time_s, b.iteration_time_s);
			/* an early slice's send starts before the representative's
			 * reduction ends: the breakdown still adds up (it counted
			 * the overlap twice) */
			ck_assert_msg(fabs(parts(&a) / a.iteration_time_s - 1) < 1e-9,
				      "case %d seed %d: folded parts %.9g s, iteration %.9g s", k,
				      (int)seeds[k][i], parts(&a), a.iteration_time_s);
			ck_assert_msg(fabs(parts(&b) / b.iteration_time_s - 1) < 1e-9,
				      "case %d seed %d: exact parts %.9g s, iteration %.9g s", k,
				      (int)seeds[k][i], parts(&b), b.iteration_time_s);
			/* and splits like --exact's: the representative's send
			 * shows from its own slice, the wait for the last
			 * slice's rank's reduction is DP (it was PP: +1.6 % of
			 * the iteration at seed 1 of case 0) */
			for (int c = 0; c < SIM_COMM_COUNT; c++)
				ck_assert_msg(fabs(a.bd.exposed_comm_s[c] - b.bd.exposed_comm_s[c]) <
						      0.005 * b.iteration_time_s,
					      "case %d seed %d: exposed %d folded %.6f s, exact %.6f s", k,
					      (int)seeds[k][i], c, a.bd.exposed_comm_s[c],
					      b.bd.exposed_comm_s[c]);
			sim_prediction_release(&a);
			sim_prediction_release(&b);
		}
		topo_release(&topo);
	}
}
END_TEST

/* The breakdown of a folded tied-embedding plan at scale: the receiving
 * stage's parameter all-gather (distributed optimizer) waits for the
 * slowest group's embedding slice, which no representative carries; the
 * walk charged that wait to DP as a wait for the gather's last member (dp
 * 0.108 s, pp 0.077 s against --exact's 0.058 s and 0.127 s), where
 * --exact's path goes through the slice's transfer. 1,024 GPUs, --exact
 * in a fraction of a second. */
START_TEST(folded_tied_breakdown_split)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr-fat-tree", 128);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 1;
	p.pp = 2;
	p.distributed_optimizer = true;
	p.overlap_dp = true;
	p.seq_len = 2048;
	p.global_batch = 1024;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 1;
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert(!a.exact_fallback);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-3, "folded %.6f s, exact %.6f s",
		      a.iteration_time_s, b.iteration_time_s);
	ck_assert_msg(fabs(parts(&a) / a.iteration_time_s - 1) < 1e-9, "folded parts %.9g s of %.9g s",
		      parts(&a), a.iteration_time_s);
	for (int k = 0; k < SIM_COMM_COUNT; k++)
		ck_assert_msg(fabs(a.bd.exposed_comm_s[k] - b.bd.exposed_comm_s[k]) <
				      0.01 * b.iteration_time_s,
			      "exposed %d: folded %.6f s, exact %.6f s", k, a.bd.exposed_comm_s[k],
			      b.bd.exposed_comm_s[k]);
	ck_assert_double_gt(b.bd.exposed_comm_s[SIM_COMM_PP], 0.2 * b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* Context-parallel positions whose TP and CP exchanges cross hosts on
 * ECMP-hashed paths (one GPU a node): each position's groups draw paths of
 * their own, and a unit's fold waited at each exchange for its slowest
 * position (+0.8 to +1.1 % over --exact at seeds 1-3, found by a fuzzer):
 * every rank is simulated, up to 512 GPUs. Sprayed, paths do not differ and
 * the fold stays. */
START_TEST(cp_positions_hashed_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	load_topo(tu_tmpfile(0, ".json", fat_tree_k8_1gpu), 32);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 8;
	p.pp = 2;
	p.cp = 2;
	p.sp = true;
	p.flash_attention = true;
	p.seq_len = 2048;
	p.global_batch = 8;
	resolve(&p);
	for (int spray = 0; spray < 2; spray++) {
		sim_predict_opts_init(&o);
		o.spray = spray;
		o.seed = 3;
		folded_vs_exact_with(&p, o, !spray);
	}
	topo_release(&topo);
}
END_TEST

/* layers_per_virtual_stage: an uneven layout with a virtual stage that
 * holds only the LM head (as DeepSeek-V3's 61 layers run under Megatron-
 * core's pipeline layout), with and without overlap.ep: every receive
 * feeds its micro-batch, folded and exact agree within 1 %, and the
 * workload executes the FLOPs of the even split. */
START_TEST(virtual_stage_layout)
{
	struct plan p;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(qwen3_moe_4l);
	for (int ov = 0; ov < 2; ov++) {
		double f, want;
		ep_plan(&p, 2, 2, 64);
		p.overlap_ep = ov;
		resolve(&p);
		want = workload_compute_flops(&p);
		p.nlpvs = 4;
		p.layers_per_vstage[0] = 1;
		p.layers_per_vstage[1] = 2;
		p.layers_per_vstage[2] = 1;
		p.layers_per_vstage[3] = 0;
		p.overlap_ep = ov;
		resolve(&p);
		check_recv_feeds(&p, ov ? "layout, overlap.ep" : "layout");
		f = workload_compute_flops(&p);
		ck_assert_msg(fabs(f / want - 1) < 1e-12, "layout %.9g FLOP vs even %.9g", f, want);
		folded_all_units_vs_exact(&p);
	}
	topo_release(&topo);
}
END_TEST

/* Whether op `to` of role r depends, through any chain, on op `from`. */
static bool reaches(const struct wl_role *r, int32_t from, int32_t to)
{
	uint8_t *reach;
	bool got;
	if (from < 0 || to <= from)
		return false;
	reach = calloc((size_t)(to + 1), 1);
	ck_assert_ptr_nonnull(reach);
	reach[from] = 1;
	for (int32_t i = from + 1; i <= to; i++)
		for (int d = 0; d < r->ops[i].ndeps && !reach[i]; d++)
			reach[i] = reach[r->ops[i].deps[d]];
	got = reach[to];
	free(reach);
	return got;
}

/* The first op of role r at or after `from` named `name` in micro-batch
 * mi, layer l and direction bwd (backward or recompute), -1 none. */
static int32_t find_op(const struct wl_role *r, int32_t from, const char *name, int mi, int l,
		       bool bwd)
{
	for (int32_t i = from < 0 ? 0 : from; i < r->nops; i++) {
		const struct wl_op *op = &r->ops[i];
		if (op->micro == mi && op->layer == l && !strcmp(op->name, name) &&
		    (op->phase == WL_P_BWD || op->phase == WL_P_RECOMPUTE) == bwd)
			return i;
	}
	return -1;
}

/* overlap.shared_experts with TP 2 (sequence parallelism, experts split
 * over TP) and EP 4: in each MoE layer the shared halves do not wait for
 * the all-to-alls, the ops that consume an all-to-all (or the routed
 * all-gather after it) do, the sum after the layer's MoE block waits for
 * the shared experts' reduce-scatter forward and backward, the routed
 * all-gather does not wait for the shared compute emitted before it, and
 * the shared experts' backward gathers no input (kept whole); found by
 * review: a tp 1 timing test could not see any of these. */
START_TEST(shared_expert_overlap_deps)
{
	/* Qwen2-MoE's gated shared expert, and DeepSeek's ungated ones
	 * (n_shared_experts of the expert width), whose sum only the tail
	 * dependency holds back */
	static const char *const ungated =
		"{\"model_type\": \"qwen2_moe\", \"hidden_size\": 2048, \"num_hidden_layers\": 4, "
		"\"num_attention_heads\": 16, \"num_key_value_heads\": 16, \"intermediate_size\": 5632, "
		"\"moe_intermediate_size\": 1408, \"n_shared_experts\": 4, "
		"\"num_experts\": 60, \"num_experts_per_tok\": 4, \"vocab_size\": 151936, "
		"\"max_position_embeddings\": 8192, \"hidden_act\": \"silu\"}";
	struct plan p;
	struct sim_predict_opts o;
	struct workload w;
	struct wl_opts wo;
	struct ts_error err = TS_ERROR_INIT;
	const struct wl_role *r;
	int checked = 0;
	setup_small(&p, &o, 1, _i ? ungated : qwen2_moe_4l);
	ck_assert(model.shared_gate == !_i);
	ep_plan(&p, 1, 1, 8);
	p.tp = 2;
	p.sp = true;
	p.ep = 4;
	p.overlap_shared = true;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	r = &w.roles[0];
	for (int mi = 0; mi < plan_microbatches(&p); mi++)
		for (int l = 0; l < model.layers; l++) {
			int32_t disp = find_op(r, 0, "ep dispatch", mi, l, false);
			/* the routed tokens' (found by review: named like
			 * sequence parallelism's) */
			int32_t ag = find_op(r, disp, "expert tp allgather", mi, l, false);
			ck_assert(ag < 0 || r->ops[ag].vary == WL_V_EXPERT);
			int32_t comb = find_op(r, 0, "ep combine", mi, l, false);
			int32_t down = find_op(r, 0, "shared expert down gemm", mi, l, false);
			int32_t rs = find_op(r, down, "tp reducescatter", mi, l, false);
			int32_t unp = find_op(r, 0, "moe unpermute", mi, l, false);
			int32_t res = find_op(r, unp, "residual add", mi, l, false);
			int32_t combb = find_op(r, 0, "ep combine bwd", mi, l, true);
			int32_t dispb = find_op(r, 0, "ep dispatch bwd", mi, l, true);
			int32_t updg = find_op(r, 0, "shared expert up dgrad", mi, l, true);
			int32_t rsb = find_op(r, updg, "tp reducescatter", mi, l, true);
			int32_t permb = find_op(r, 0, "moe permute bwd", mi, l, true);
			ck_assert(disp >= 0 && ag >= 0 && comb >= 0 && rs >= 0 && res >= 0 && combb >= 0 &&
				  dispb >= 0 && rsb >= 0 && permb >= 0);
			ck_assert_int_eq(r->ops[ag].stream, WL_S_EP);
			ck_assert_int_eq(r->ops[rs].stream, WL_S_COMM);
			ck_assert(!reaches(r, disp, find_op(r, 0, "shared expert up gemm", mi, l, false)));
			ck_assert(!reaches(r, find_op(r, 0, "shared expert activation", mi, l, false), ag));
			ck_assert(reaches(r, ag, find_op(r, 0, "moe sort chunks", mi, l, false)));
			ck_assert(!reaches(r, comb, down));
			ck_assert(reaches(r, comb, unp));
			ck_assert(reaches(r, rs, res));
			ck_assert(!reaches(r, combb,
					   find_op(r, 0, "shared expert down dgrad", mi, l, true)));
			ck_assert(reaches(r, combb, find_op(r, 0, "moe unsort chunks bwd", mi, l, true)));
			ck_assert(!reaches(r, dispb,
					   find_op(r, 0, "shared expert activation bwd", mi, l, true)));
			ck_assert(reaches(r, dispb, permb));
			ck_assert(reaches(r, rsb, permb));
			checked++;
		}
	ck_assert_int_eq(checked, plan_microbatches(&p) * model.layers);
	/* no re-gather of the shared experts' input: per layer and micro-batch
	 * the backward all-gathers the MoE block's output gradient for the
	 * shared down projection and the routed gradients (expert TP), and the
	 * attention block's two, not a fifth */
	for (int mi = 0; mi < plan_microbatches(&p); mi++) {
		int n = 0, ne = 0;
		for (int32_t i = 0; i < r->nops; i++) {
			bool bwd = r->ops[i].micro == mi && r->ops[i].layer == 1 &&
				   r->ops[i].phase == WL_P_BWD;
			n += bwd && !strcmp(r->ops[i].name, "tp allgather");
			ne += bwd && !strcmp(r->ops[i].name, "expert tp allgather");
		}
		ck_assert_int_eq(n, 3);
		ck_assert_int_eq(ne, 1);
	}
	workload_release(&w);
	topo_release(&topo);
}
END_TEST

/* Megatron-core's allgather token dispatcher: per MoE layer and pass the
 * expert-TP x EP group (G = etp x ep ranks) all-gathers the hidden states
 * (G x T/tp x h x 2 B) and the routing map and probabilities (G x T/tp x E
 * x 3 B) and reduce-scatters the results (the hidden states' size);
 * backward an all-gather of that size and reduce-scatters of it and of the
 * probabilities (G x T/tp x E x 2 B); no all-to-alls, token counts or
 * chunk sorts, and the same compute FLOPs as the all-to-all dispatcher.
 * TP 8 without EP (G = 8 on the TP group: the all-to-all dispatcher
 * gathers the top-k routed copies there, k times the bytes), EP 8 (the EP
 * group), TP 2 with EP 4 (the expert-TP x EP group, 8), TP 2 with whole
 * experts and EP 8 (the EP group across TP ranks) and TP 4 with whole
 * experts and no EP (G = 1: nothing to gather; found by review: gathered
 * over TP); folded and exact agree within 1 % across nodes. */
static void coll_bytes(const struct workload *w, int dim, const char *name, int *n, double *sz)
{
	*n = 0;
	*sz = 0;
	for (int32_t i = 0; i < w->roles[0].nops; i++) {
		const struct wl_op *op = &w->roles[0].ops[i];
		if (op->kind != WL_K_COLL || strcmp(op->name, name))
			continue;
		ck_assert_int_eq(op->dim, dim);
		(*n)++;
		*sz = op->size_bytes;
	}
}

START_TEST(allgather_dispatcher_traffic)
{
	static const struct {
		int tp, etp, ep, nodes, dim, G;
	} cases[] = { { 8, 8, 1, 1, WL_D_TP, 8 },   { 1, 1, 8, 2, WL_D_EP, 8 },
		      { 2, 2, 4, 2, WL_D_TPEP, 8 }, { 2, 1, 8, 2, WL_D_EP, 8 },
		      { 4, 1, 1, 1, WL_D_TP, 1 } };
	static const char *const names[] = { "moe tokens allgather", "moe routing allgather",
					     "moe tokens reducescatter", "moe tokens allgather bwd",
					     "moe tokens reducescatter bwd",
					     "moe probs reducescatter bwd" };
	for (size_t k = 0; k < TS_ARRAY_LEN(cases); k++) {
		struct plan p;
		struct workload w;
		struct wl_opts wo;
		struct ts_error err = TS_ERROR_INIT;
		double f_a2a, sz, tl, h, G = cases[k].G, E;
		int n, L, m;
		load_topo("dgx-h100-ndr", cases[k].nodes);
		load_model_json(qwen3_moe_4l);
		ep_plan(&p, 1, 1, 8 * cases[k].nodes * 2 / cases[k].tp);
		p.tp = cases[k].tp;
		p.sp = p.tp > 1;
		p.ep = cases[k].ep;
		p.etp = cases[k].etp;
		resolve(&p);
		f_a2a = workload_compute_flops(&p);
		p.dispatcher = PLAN_DISP_ALLGATHER;
		resolve(&p);
		ck_assert_int_eq(plan_tpep(&p), cases[k].G);
		ck_assert_double_eq_tol(workload_compute_flops(&p), f_a2a, f_a2a * 1e-12);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
		L = model.layers;
		m = plan_microbatches(&p);
		tl = (double)p.micro_batch * p.seq_len / p.tp;
		h = model.hidden;
		E = model.experts;
		for (size_t q = 0; q < TS_ARRAY_LEN(names); q++) {
			const double want[] = { G * tl * h * 2, G * tl * E * 3, G * tl * h * 2,
						G * tl * h * 2, G * tl * h * 2, G * tl * E * 2 };
			coll_bytes(&w, cases[k].dim, names[q], &n, &sz);
			ck_assert_msg(n == (G > 1 ? L * m : 0), "case %zu: %d '%s'", k, n, names[q]);
			if (n)
				ck_assert_double_eq(sz, want[q]);
		}
		for (int32_t i = 0; i < w.roles[0].nops; i++) {
			const char *nm = w.roles[0].ops[i].name;
			ck_assert_msg(strncmp(nm, "ep ", 3) && strcmp(nm, "moe token counts") &&
					      !strstr(nm, "sort chunks"),
				      "%s under the allgather dispatcher", nm);
		}
		workload_release(&w);
		if (cases[k].nodes > 1) {
			/* (with overlap.dp on these hashed rails, MoE plans of
			 * up to 512 GPUs run every rank: dp_rings_hashed) */
			p.overlap_dp = false;
			resolve(&p);
			folded_vs_exact(&p);
		}
		topo_release(&topo);
	}
}
END_TEST

/* MoE with overlap.dp: a unit's positions reach each bucket at their own
 * times (their own expert loads), the fold's representative at the unit's
 * heaviest (Qwen3-VL-30B-A3B tp 4 EP 4 on 8 nodes of the ECMP leaf-spine:
 * -3.9 to +3.1 % over --exact with exact max-min; tp 2 EP 8 interleaved on
 * one leaf of clos3-pods.json, no multipath: +2.04 / -1.22 % at seeds 3-4):
 * every rank is simulated, up to 512 GPUs, sprayed too; without
 * overlap.dp the fold stays. So is every rank of a tied-embedding model on pp 2 whose
 * gradient reaches a CPU optimizer before the distributed optimizer's
 * gather on hashed rings (+1.3 / +1.8 % at seeds 2-3 folded). */
START_TEST(dp_rings_hashed_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	load_topo(tu_tmpfile(0, ".json", fat_tree_k8_1gpu), 64);
	load_model_json("{\"n_embd\": 768, \"n_layer\": 16, \"n_head\": 12, \"vocab_size\": 50257, "
			"\"n_positions\": 8192, \"model_type\": \"gpt2\", \"tie_word_embeddings\": true}");
	plan_init(&p);
	p.tp = 4;
	p.pp = 2;
	p.schedule = PLAN_SCHED_INTERLEAVED;
	p.virtual_stages = 2;
	p.seq_len = 4096;
	p.global_batch = 16;
	p.distributed_optimizer = true;
	p.offload = PLAN_OFF_OPTIMIZER;
	p.overlap_dp = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 2;
	folded_vs_exact_with(&p, o, true);
	topo_release(&topo);
	load_topo("h100-roce-leafspine", 8);
	load_model_json(qwen3_moe_4l);
	for (int k = 0; k < 3; k++) {
		ep_plan(&p, 1, 1, 64);
		p.ep = 4;
		p.overlap_dp = k != 2;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.spray = k == 1;
		o.seed = 2;
		folded_vs_exact_with(&p, o, k != 2);
	}
	topo_release(&topo);
}
END_TEST

/* A group's collectives keep their ECMP paths all iteration, as NCCL's
 * connections (queue pairs, made once per communicator) do: a plan change
 * that adds compute ops before the DP all-reduce (recompute) leaves its
 * paths and so its exposed time alone. Found by a metamorphic audit: the
 * hash took the op's index, so on 8 nodes of the 2:1 leaf-spine llama3-8b
 * tp 8 showed exposed DP 0.4305 s without recompute and 0.2870 s with,
 * selective recompute 27 % faster than none; the steady-state ring of
 * over 64 ranks took the op's index too (asked for by review). */
START_TEST(ecmp_paths_kept_per_group)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r[3];
	struct ts_error err = TS_ERROR_INIT;
	static const enum plan_recompute rc[] = { PLAN_RC_NONE, PLAN_RC_SELECTIVE, PLAN_RC_FULL };
	load_topo("h100-roce-leafspine-2to1", 8);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	sim_predict_opts_init(&o);
	/* dp 8 (a stepped ring) and, on 16 nodes with ZeRO 1, dp 128 (the
	 * steady-state ring of over 64 ranks, fluid_ring) */
	for (int big = 0; big < 2; big++) {
		if (big) {
			topo_release(&topo);
			load_topo("h100-roce-leafspine-2to1", 16);
		}
		for (int k = 0; k < 3; k++) {
			plan_init(&p);
			p.tp = big ? 1 : 8;
			p.zero = big;
			p.seq_len = big ? 4096 : p.seq_len;
			p.flash_attention = big;
			p.global_batch = big ? 128 : 8;
			p.recompute = rc[k];
			resolve(&p);
			ck_assert_int_eq(p.dp, big ? 128 : 8);
			run(&p, &o, &r[k]);
		}
		for (int k = 1; k < 3; k++) {
			double d0 = r[0].bd.exposed_comm_s[SIM_COMM_DP],
			       dk = r[k].bd.exposed_comm_s[SIM_COMM_DP];
			ck_assert_double_gt(d0, 0);
			ck_assert_msg(fabs(dk / d0 - 1) < 1e-9,
				      "dp %d: exposed DP %.6f s against %.6f s without recompute",
				      big ? 128 : 8, dk, d0);
			/* and more recompute is not faster */
			ck_assert_double_gt(r[k].iteration_time_s, r[k - 1].iteration_time_s);
		}
		for (int k = 0; k < 3; k++)
			sim_prediction_release(&r[k]);
	}
	topo_release(&topo);
}
END_TEST

/* A data-parallel ring of over 64 ranks (the flow level's steady-state
 * ring, fluid_ring) follows --routing spray as the analytic level does
 * (found by review, 2026-12-05: its edges kept one hashed path, so sprayed
 * it ran as ECMP). llama3-8b, dp 128 with ZeRO 1 on 16 nodes of the 2:1
 * leaf-spine, where hashed edges collide on the uplinks: sprayed, flow
 * within 0.5 % of analytic in exposed DP, and well under ECMP's. */
START_TEST(sprayed_large_dp_ring)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction f, a, e;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("h100-roce-leafspine-2to1", 16);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.seq_len = 4096;
	p.global_batch = 128;
	p.flash_attention = true;
	p.zero = 1;
	resolve(&p);
	ck_assert_int_eq(p.dp, 128);
	sim_predict_opts_init(&o);
	o.spray = true;
	run(&p, &o, &f);
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &a);
	o.fidelity = SIM_FLOW;
	o.spray = false;
	run(&p, &o, &e);
	double fd = f.bd.exposed_comm_s[SIM_COMM_DP], ad = a.bd.exposed_comm_s[SIM_COMM_DP],
	       ed = e.bd.exposed_comm_s[SIM_COMM_DP];
	ck_assert_double_gt(ad, 0);
	ck_assert_msg(fabs(fd / ad - 1) < 0.005, "sprayed exposed DP: flow %.6f vs analytic %.6f s",
		      fd, ad);
	ck_assert_msg(ed > 1.5 * fd, "ECMP %.6f s against sprayed %.6f s", ed, fd);
	sim_prediction_release(&f);
	sim_prediction_release(&a);
	sim_prediction_release(&e);
	topo_release(&topo);
}
END_TEST

/* The same without multipath: 8 nodes on one leaf of a 3-tier Clos (found
 * by review: Qwen3-VL-30B-A3B tp 2, SP, pp 2 interleaved over 3 virtual
 * stages, EP 8, ZeRO 1, overlap.dp: +2.04 % over --exact at seed 3, the
 * same sprayed). */
START_TEST(moe_overlap_dp_exact_one_leaf)
{
	struct plan p;
	struct sim_predict_opts o;
	struct ts_error err = TS_ERROR_INIT;
	load_topo(tu_tmpfile(0, ".json", clos3_pods), 8);
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 2;
	p.sp = true;
	p.pp = 2;
	p.schedule = PLAN_SCHED_INTERLEAVED;
	p.virtual_stages = 3;
	p.ep = 8;
	p.seq_len = 2048;
	p.global_batch = 32;
	p.zero = 1;
	p.flash_attention = true;
	p.images_per_sample.value = 1;
	p.overlap_dp = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 3;
	folded_vs_exact_with(&p, o, true);
	topo_release(&topo);
}
END_TEST

/* Units placed unalike (5 nodes of 8 GPUs, tp 4 x pp 2 per replica: a
 * stage boundary inside a host) whose representative stands for its TP
 * ranks, each with pipeline sends and DP rings on ECMP-hashed paths of its
 * own: every rank is simulated up to 512 GPUs (found by review: GPT-2 tp 4
 * SP pp 2 on 5 nodes of clos3-pods.json, -3.0 % under --exact; Qwen3-VL-2B
 * tp 4 pp 2 interleaved on 6 nodes of the 2:1 leaf-spine, +5.3 %). At 4
 * nodes the units sit alike and the fold stays, equal. */
START_TEST(unalike_units_hashed_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	const char *cl = tu_tmpfile(0, ".json", clos3_pods);
	for (int nodes = 5; nodes >= 4; nodes--) {
		load_topo(cl, nodes);
		load_model_json("{\"n_embd\": 768, \"n_layer\": 12, \"n_head\": 12, \"vocab_size\": "
				"50257, \"n_positions\": 1024, \"model_type\": \"gpt2\"}");
		plan_init(&p);
		p.tp = 4;
		p.sp = true;
		p.pp = 2;
		p.seq_len = 1024;
		p.global_batch = nodes * 2;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.seed = 3;
		folded_vs_exact_with(&p, o, nodes == 5);
		topo_release(&topo);
	}
}
END_TEST

/* Under SSP and async the step lasts the busiest rank's DP reduction time,
 * which the fold took from its representatives' ops, held until every
 * group's ended: on ECMP-hashed rings, the slowest group's (found by review:
 * +18.9 % over --exact with ZeRO 2 and SSP, +7.5 % with ZeRO 3 and async);
 * ZeRO 3 alone gathers and reduces every micro-batch behind the slowest
 * group (+1.7 %). Every rank is simulated up to 512 GPUs; sprayed, the
 * fold stays. */
START_TEST(sync_zero3_hashed_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	load_topo("h100-roce-leafspine", 8);
	load_model_json(small_model);
	for (int k = 0; k < 4; k++) {
		plan_init(&p);
		p.tp = 4;
		p.seq_len = 1024;
		p.global_batch = 64;
		p.zero = k == 1 ? 2 : 3;
		p.sync = k == 0 ? PLAN_SYNC_ASYNC : k == 1 ? PLAN_SYNC_SSP : PLAN_SYNC_EVERY_STEP;
		p.staleness = k == 1 ? 2 : 0;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.seed = 2;
		o.spray = k == 3;
		folded_vs_exact_with(&p, o, k != 3);
	}
	topo_release(&topo);
}
END_TEST

/* Top-k compression with experts and TP: each bucket's selection runs
 * beside the previous bucket's all-gather, so the expert-DP all-gather
 * after it does not wait for that all-gather's end; the fold's other groups
 * started it the selection's time after their own previous all-gather
 * ended (dp_gated), 2.7 ms after the representatives' (found by review:
 * Qwen3-VL-30B-A3B, tp 2, EP 4, SP, 16 GPUs, +1.27 % over --exact, all in
 * exposed DP, with every unit simulated). */
START_TEST(topk_expert_allgather_not_gated)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(qwen3_moe_4l);
	ep_plan(&p, 1, 1, 8);
	p.tp = 2;
	p.ep = 4;
	p.sp = true;
	p.distributed_optimizer = false;
	p.overlap_dp = false;
	p.compression = PLAN_CMP_TOPK;
	p.compression_ratio = 0.01;
	p.error_feedback = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert(!a.exact_fallback);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-4, "folded %.6f s, exact %.6f s",
		      a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* --jitter folded: the TP ranks (and a unit's positions) a representative
 * stands for draw their own noise, and each collective among them waits
 * for the slowest, as --exact's ranks do; one draw for all of them was
 * 1.0-3.1 % under --exact (found by review: llama3-8b tp 2 pp 2, jitter
 * 0.05: -1.09 %). Up to 512 GPUs such plans run every rank (the fold
 * carries a unit's ranks only approximately: 1.3-2.8 % at jitter 0.2,
 * found by review); replicas keeps the fold to test it. */
START_TEST(jitter_folded_ranks_draw_their_own)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	load_topo("dgx-h100-ndr", 1);
	load_model_json(small_model);
	for (int k = 0; k < 2; k++) {
		plan_init(&p);
		p.tp = k ? 2 : 4;
		p.cp = k ? 2 : 1;
		p.flash_attention = true;
		p.seq_len = 2048;
		p.global_batch = 8;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.fidelity = SIM_ANALYTIC;
		o.jitter = 0.05;
		o.seed = 1;
		run(&p, &o, &a);
		ck_assert(a.exact_fallback);
		sim_prediction_release(&a);
		o.replicas = 2;
		folded_vs_exact_with(&p, o, false);
	}
	topo_release(&topo);
}
END_TEST

/* overlap.dp where a representative stands for more than one DP ring (its
 * TP ranks'): each rank's compute is slowed while its own ring's buckets
 * run, and on ECMP-hashed rings they run for their own times, where the
 * fold slowed its representative by its own ring's (found by review:
 * Qwen3-VL-8B tp 4 SP on 8 leaf-spine nodes, +2.16 % over --exact at seed
 * 2; llama3-8b tp 4 on clos3-pods.json, -1.33 to +1.33 % at seeds 1-4):
 * every rank up to 512 GPUs. Sprayed, or with one ring per representative
 * (tp 1), the fold stays and matches. */
START_TEST(overlap_dp_hashed_rings_exact)
{
	struct plan p;
	struct sim_predict_opts o;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("h100-roce-leafspine", 8);
	ck_assert_msg(model_load(&model, "qwen3-vl-8b", &err) == 0, "%s", err.msg);
	for (int k = 0; k < 2; k++) {
		plan_init(&p);
		p.tp = 4;
		p.sp = true;
		p.flash_attention = true;
		p.seq_len = 2048;
		p.global_batch = 32;
		p.overlap_dp = true;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.seed = 2;
		o.spray = k == 1;
		folded_vs_exact_with(&p, o, k == 0);
	}
	load_model_json(small_model);
	plan_init(&p);
	p.seq_len = 2048;
	p.global_batch = 64;
	p.overlap_dp = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 2;
	folded_vs_exact_with(&p, o, false);
	topo_release(&topo);
}
END_TEST

/* --jitter: each DP replica draws its own noise and a DP collective waits
 * for the slowest of them all, where K = 4 simulated units stood for the
 * slowest of 4 (found by review: llama3-8b on 16 GPUs, local SGD with
 * top-k, jitter 0.05, 1.06 % under --exact; three more plans 1.0-1.31 %
 * under): every unit is simulated when few. */
START_TEST(jitter_every_unit_draws)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("h100-roce-leafspine", 2);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.seq_len = 2048;
	p.global_batch = 64;
	p.recompute = PLAN_RC_SELECTIVE;
	p.flash_attention = true;
	p.sync = PLAN_SYNC_LOCAL_SGD;
	p.sync_interval = 2;
	p.compression = PLAN_CMP_TOPK;
	p.compression_ratio = 0.05;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 3;
	o.jitter = 0.05;
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert(!a.exact_fallback);
	ck_assert_int_eq(a.units, 16);
	ck_assert_int_eq(a.units_simulated, a.units);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.005,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* --jitter: the simulated units (4 of units, or all when few) fold to
 * --exact's iteration, and so do all of them. */
static void jitter_folds_exactly(const struct plan *p, int units, int simulated)
{
	/* every unit simulated by --replicas: exact, but for a unit of several
	 * ranks (TP), whose fold runs one of them and carries the others'
	 * noise in their shared exchanges approximately (the default falls
	 * back to --exact there; sim/exec.c) */
	double tol = p->tp * p->cp * p->ep > 1 ? 1e-4 : 1e-9;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c;
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	o.seed = 1;
	o.jitter = 0.2;
	run(p, &o, &a);
	o.replicas = units;
	run(p, &o, &c);
	o.replicas = 0;
	o.exact = true;
	run(p, &o, &b);
	ck_assert_int_eq(a.units, units);
	ck_assert_int_eq(a.units_simulated, simulated);
	ck_assert_int_eq(c.units_simulated, units);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-9,
		      "folded %.12f s vs exact %.12f s", a.iteration_time_s, b.iteration_time_s);
	ck_assert_msg(fabs(c.iteration_time_s / b.iteration_time_s - 1) < tol,
		      "every unit %.12f s vs exact %.12f s", c.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
}

/* --jitter: the K simulated units carry the noise of the units they stand
 * for beyond FOLD_EVERY_MAX, each rank's keyed by its rank and op as
 * --exact's is (was: K = 4 of 160 units stood for the slowest of 4,
 * -1.58 %; with every unit simulated, the draws' order left them 0.1-0.9 %
 * apart), each at its own unit's image load (without: +0.29 %), and each
 * rank goes on from its own inputs: a send's, a receive's and a
 * collective's own members' times, not its slowest peer's (ZeRO 3's
 * prefetched gathers: +1.61 % when they evened out every rank; tp 2, whose
 * input-gradient all-reduce compute overlaps: +0.45 %). */
START_TEST(jitter_stood_for_units_draw)
{
	struct plan p;
	load_topo("dgx-a100-hdr", 40);
	load_model_json(small_model);
	plan_init(&p);
	p.pp = 2;
	p.seq_len = 1024;
	p.global_batch = 1280;
	resolve(&p);
	jitter_folds_exactly(&p, 160, 4);
	load_model_json(eq_model);
	plan_init(&p);
	p.zero = 3;
	p.seq_len = 1024;
	p.global_batch = 640;
	resolve(&p);
	jitter_folds_exactly(&p, 320, 4);
	{
		struct ts_error err = TS_ERROR_INIT;
		ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	}
	plan_init(&p);
	p.pp = 2;
	p.seq_len = 1024;
	p.global_batch = 640;
	p.images_per_sample.kind = PLAN_DIST_POISSON;
	p.images_per_sample.mean = 2;
	set_uniform(&p.image_tokens, 64, 512);
	p.overlap_dp = true;
	resolve(&p);
	jitter_folds_exactly(&p, 160, 4);
	topo_release(&topo);
	load_topo("dgx-h100-ndr", 1);
	{
		struct ts_error err = TS_ERROR_INIT;
		ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	}
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.seq_len = 2048;
	p.global_batch = 8;
	p.recompute = PLAN_RC_SELECTIVE;
	p.flash_attention = true;
	resolve(&p);
	jitter_folds_exactly(&p, 2, 2);
	topo_release(&topo);
}
END_TEST

/* --jitter with every unit simulated on the network: their DP ops run as
 * their own, not as the DP background's groups, whose start delays come
 * from the representatives' times (found by review: Qwen3-VL-2B pp 2,
 * ZeRO 1, its tied embedding's gradient exchanged, one node, flow, jitter
 * 0.2: -0.63 % under --exact). */
START_TEST(jitter_dp_ops_their_own)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.pp = 2;
	p.zero = 1;
	p.recompute = PLAN_RC_SELECTIVE;
	p.global_batch = 8;
	p.images_per_sample.value = 0;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_FLOW;
	o.seed = 1;
	o.jitter = 0.2;
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert(!a.exact_fallback);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-9,
		      "folded %.12f s vs exact %.12f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* --jitter: at a collective, the members of each of its groups in a unit
 * even out (a TP group's, an EP group's of whole experts: one TP index
 * across positions, a CP group's), not every rank of the unit at any
 * collective but TP's, which held ranks of other groups back (found by
 * review: Qwen3-VL-30B-A3B tp 4 SP, pp 2, CP 2, EP 2 with whole experts,
 * SSP, jitter 0.1: +1.04 % over --exact, +0.71 % after the fix). SSP with
 * CP is refused since, so the test runs every step (+0.47 % at HEAD); it
 * was not re-checked against the old fold without SSP, so it guards the
 * fold's agreement on a CP plan under jitter rather than that bug. */
START_TEST(jitter_meets_by_group)
{
	struct plan p;
	struct sim_predict_opts o;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	ck_assert_msg(model_load(&model, "qwen3-vl-30b-a3b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.tp = 4;
	p.sp = true;
	p.pp = 2;
	p.cp = 2;
	p.ep = 2;
	p.etp = 1;
	p.seq_len = 2048;
	p.global_batch = 2;
	p.zero = 1;
	p.flash_attention = true;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.seed = 2;
	o.jitter = 0.1;
	o.replicas = 2; /* keeps the fold (jitter_folded_ranks_draw_their_own) */
	folded_vs_exact_with(&p, o, false);
	topo_release(&topo);
}
END_TEST

/* ZeRO-2 with unfused accumulation adds each micro-batch's reduced
 * gradients into the rank's shard, one op a layer: the dense parameters'
 * 1/(dp x cp) and the experts' 1/(expert data-parallel size), the group
 * they are partitioned over (here 8 / 4 = 2 against dp 8; found by
 * review: the experts' at 1/(dp x cp) too, 4x short here). */
START_TEST(zero2_shard_add_over_expert_dp)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction b;
	struct sim_compute c;
	struct sim_op_desc d;
	struct slice_stats sb;
	double dn, ex;
	setup_small(&p, &o, 1, small_moe);
	p.ep = 4;
	p.zero = 2;
	p.grad_accum_fusion = false;
	p.global_batch = 32;
	resolve(&p);
	ck_assert_int_eq(plan_microbatches(&p), 4);
	ck_assert_int_eq(plan_expert_dp(&p), 2);
	run(&p, &o, &b);
	model_layer_rank_params(&model, &p, 0, &dn, &ex);
	ck_assert(ex > dn);
	sim_compute_init(&c, &topo.cl.gpu);
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_ELEMENTWISE;
	d.dtype_bytes = 2;
	/* (read and write the accumulated shard, read the reduced gradients:
	 * all in the training precision's 2 bytes on DeepSpeed's engine) */
	ck_assert_int_eq(p.grad_dtype, PLAN_DT_BF16);
	d.bytes = (dn / (p.dp * p.cp) + ex / plan_expert_dp(&p)) * (2 * 2 + 2);
	double one = sim_compute_time_s(&c, &d);
	sb = slices(&b, "grad accumulate");
	ck_assert_int_eq(sb.n, (plan_microbatches(&p) - 1) * model.layers);
	ck_assert_msg(fabs(sb.min - one) < 1e-9 && fabs(sb.max - one) < 1e-9,
		      "shard adds %.6g..%.6g s, want %.6g s", sb.min, sb.max, one);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* A capacity is whole tokens per source and expert (Megatron-core's
 * get_capacity: ceil(tokens x top-k / experts x factor)), and what a source
 * keeps is taken exactly where the capacity is small: with 8,192 experts
 * and 1,024 assignments a source, each expert gets an eighth of a token on
 * average, the capacity is 1 token, and a uniform router keeps P(X >= 1) /
 * E[X] of them (found by fuzzing: the normal approximation of E[min(X, c)]
 * went negative there, an all-to-all weight of -0.008, exit 2). */
START_TEST(capacity_keeps_whole_tokens)
{
	static const char *many =
		"{\"hidden_size\": 512, \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
		"\"num_key_value_heads\": 8, \"head_dim\": 64, \"intermediate_size\": 1024, "
		"\"moe_intermediate_size\": 128, \"num_experts\": 8192, \"num_experts_per_tok\": 2, "
		"\"vocab_size\": 2048, \"model_type\": \"qwen3_moe\"}";
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a;
	setup_small(&p, &o, 1, many);
	o.timeline = false;
	p.ep = 2;
	p.global_batch = 8;
	p.capacity_factor = 1.25;
	p.expert_imbalance = 0;
	resolve(&p);
	run(&p, &o, &a);
	double n = 512.0 * 2, q = 1.0 / 8192, kept = (1 - pow(1 - q, n)) / (n * q);
	/* (the busiest rank: its drawn share of the assignments, kept alike) */
	ck_assert_msg(fabs(a.expert_load_mean - kept) < 1e-9 && a.expert_load_max >= kept &&
			      a.expert_load_max < 1.25,
		      "mean load %.9g, busiest %.9g, want %.9g", a.expert_load_mean, a.expert_load_max,
		      kept);
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

START_TEST(moe_dispatches_the_tp_shard)
{
	const char *moe = small_moe;
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 1, moe);
	o.timeline = false;
	p.tp = 2;
	p.ep = 4;
	p.sp = true;
	p.capacity_factor = 1.25;
	p.global_batch = 4; /* one micro-batch per rank */
	resolve(&p);
	ck_assert_int_eq(model.experts, 16);
	run(&p, &o, &a);
	p.recompute = PLAN_RC_FULL;
	run(&p, &o, &b);
	/* the workload's sizes are the balanced load; the executor scales them
	 * by the drawn load, and the bytes reported are at the mean load over
	 * all ranks: with a uniform router, the fraction of the tokens the
	 * capacity of 1.25 keeps, a little under 1 */
	double T = p.seq_len, h = 512, L = 4, routed = 4 * T * h * 2, ld = a.expert_load_mean;
	ck_assert_msg(ld > 0.97 && ld < 1 && b.expert_load_mean == ld, "mean load %.9g, %.9g", ld,
		      b.expert_load_mean);
	double a2a = L * 4 * routed / p.tp;
	/* and in each forward the all-gather of the tp x ep ranks' 16 int64
	 * token counts per expert */
	double counts = L * 16 * 8 * p.ep * p.tp, want_ep = a2a * ld + counts;
	ck_assert_msg(fabs(a.comm_bytes[SIM_COMM_EP] / want_ep - 1) < 1e-9, "ep bytes %.9g, want %.9g",
		      a.comm_bytes[SIM_COMM_EP], want_ep);
	double d_tp = b.comm_bytes[SIM_COMM_TP] - a.comm_bytes[SIM_COMM_TP];
	double want_tp = L * (2 * (2 * T * h) + 2 * routed * ld);
	ck_assert_msg(fabs(d_tp / want_tp - 1) < 1e-9, "recompute adds %.9g tp bytes, want %.9g", d_tp,
		      want_tp);
	double d_ep = b.comm_bytes[SIM_COMM_EP] - a.comm_bytes[SIM_COMM_EP];
	ck_assert_msg(fabs(d_ep / (a2a / 2 * ld + counts) - 1) < 1e-9,
		      "recompute adds %.9g ep bytes, want %.9g", d_ep, a2a / 2 * ld + counts);
	/* padded to the capacity: every exchange and expert GEMM at 1.25 x
	 * the balanced load, and no count gather (the sizes are fixed); the
	 * hardware FLOPs grow by 0.25 of the experts' (three GEMMs of h x 256
	 * per routed token, forward and twice backward), the model FLOPs not */
	{
		struct sim_prediction c;
		/* without the routed tokens' gather and scatter, forward and backward */
		double tp_a = a.comm_bytes[SIM_COMM_TP] - 4 * L * routed * ld;
		double tok = (double)p.global_batch * T * 4, expert = 3 * 2.0 * 3 * h * 256 * tok * L;
		p.recompute = PLAN_RC_NONE;
		p.pad_to_capacity = true;
		run(&p, &o, &c);
		ck_assert_msg(c.expert_load_mean == 1.25 && c.expert_load_max == 1.25, "padded %g %g",
			      c.expert_load_mean, c.expert_load_max);
		ck_assert_msg(fabs(c.comm_bytes[SIM_COMM_EP] / (1.25 * a2a) - 1) < 1e-9,
			      "padded ep bytes %.9g, want %.9g", c.comm_bytes[SIM_COMM_EP], 1.25 * a2a);
		ck_assert_msg(fabs(c.comm_bytes[SIM_COMM_TP] / (tp_a + 4 * L * routed * 1.25) - 1) < 1e-9,
			      "padded tp bytes %.9g, want %.9g", c.comm_bytes[SIM_COMM_TP],
			      tp_a + 4 * L * routed * 1.25);
		ck_assert(c.model_flops == a.model_flops);
		ck_assert_msg(fabs((c.hw_flops - a.hw_flops) / ((1.25 - ld) * expert) - 1) < 1e-9,
			      "padding adds %.9g FLOP, want %.9g", c.hw_flops - a.hw_flops,
			      (1.25 - ld) * expert);
		sim_prediction_release(&c);
		/* the capacity is whole tokens an expert (Megatron-core's
		 * get_capacity): each rank routes T / tp tokens to 4 of 16
		 * experts, 64 each at balance; 1.01 x 64 = 64.64 is padded to
		 * 65, a load of 65 / 64 (found by an audit: 1.01) */
		double share = T / p.tp * 4 / 16, want = ceil(1.01 * share) / share;
		ck_assert(share == 64 && want == 65.0 / 64);
		p.capacity_factor = 1.01;
		run(&p, &o, &c);
		ck_assert_msg(c.expert_load_mean == want && c.expert_load_max == want, "padded %.9g %.9g",
			      c.expert_load_mean, c.expert_load_max);
		ck_assert_msg(fabs(c.comm_bytes[SIM_COMM_EP] / (want * a2a) - 1) < 1e-9,
			      "padded ep bytes %.9g, want %.9g", c.comm_bytes[SIM_COMM_EP], want * a2a);
		ck_assert_msg(fabs((c.hw_flops - a.hw_flops) / ((want - ld) * expert) - 1) < 1e-9,
			      "padding adds %.9g FLOP, want %.9g", c.hw_flops - a.hw_flops,
			      (want - ld) * expert);
		sim_prediction_release(&c);
		p.capacity_factor = 1.25;
		p.pad_to_capacity = false;
		p.recompute = PLAN_RC_FULL;
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);

	/* the token counts are all-gathered over the TP x EP group
	 * (Megatron-core's tp_ep_group: here all 8 GPUs), not the 4 EP ranks
	 * of one TP rank: in the analytic model each gather takes an 8-rank
	 * all-gather of the 2 x 4 ranks' 16 int64 counts */
	{
		struct sim_coll_spec cs;
		struct sim_prediction g;
		struct ts_error e2 = TS_ERROR_INIT;
		int32_t all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
		double want;
		o.timeline = true;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &g);
		sim_coll_spec_init(&cs);
		cs.op = SIM_OP_ALLGATHER;
		cs.size_bytes = 16 * 8 * p.ep * p.tp;
		cs.nranks = 8;
		cs.ranks = all;
		ck_assert_int_eq(sim_coll_choose(&topo, &cs, &cs.algo, &cs.proto, &e2), 0);
		ck_assert_int_eq(sim_coll_analytic(&topo, &cs, &want, &e2), 0);
		struct slice_stats st = slices(&g, "moe token counts");
		ck_assert_int_gt(st.n, 0);
		ck_assert_msg(fabs(st.min / want - 1) < 1e-6 && fabs(st.max / want - 1) < 1e-6,
			      "count gathers %.12g..%.12g s, want %.12g s", st.min, st.max, want);
		sim_prediction_release(&g);
		o.timeline = false;
		o.fidelity = SIM_FLOW;
	}
	/* the dispatcher's memory passes: permute and unpermute (the rank's
	 * T/tp x h and its routed copies), and with 4 local experts the sort of
	 * the gathered tokens and its reverse (tp x the routed copies, read and
	 * written, at the layer's drawn load: what the capacity of 1.25 keeps
	 * of a uniform router's tokens, a little under the balanced load), each
	 * as the compute model prices those bytes */
	struct sim_compute cm;
	struct sim_op_desc d;
	o.timeline = true;
	o.overlap_slowdown = 1; /* (no slowdown from communication beside the passes) */
	p.recompute = PLAN_RC_NONE;
	run(&p, &o, &a);
	sim_compute_init(&cm, &topo.cl.gpu);
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_ELEMENTWISE;
	d.dtype_bytes = 2;
	d.bytes = routed / p.tp + 2 * T / p.tp * h;
	double want_perm = sim_compute_time_s(&cm, &d);
	d.bytes = 2 * routed * 0.95;
	double sort_lo = sim_compute_time_s(&cm, &d);
	d.bytes = 2 * routed * 1.25;
	double sort_hi = sim_compute_time_s(&cm, &d);
	static const char *const perm[] = { "moe permute", "moe unpermute", "moe unpermute bwd",
					    "moe permute bwd" };
	static const char *const sort[] = { "moe sort chunks", "moe unsort chunks",
					    "moe unsort chunks bwd", "moe sort chunks bwd" };
	for (int k = 0; k < 4; k++) {
		struct slice_stats x = slices(&a, perm[k]), y = slices(&a, sort[k]);
		ck_assert_msg(x.n == 4 && y.n == 4, "%s %d, %s %d", perm[k], x.n, sort[k], y.n);
		ck_assert_msg(fabs(x.max - want_perm) < 2e-12 && fabs(x.min - want_perm) < 2e-12,
			      "%s %.12g s, want %.12g", perm[k], x.max, want_perm);
		ck_assert_msg(y.min > sort_lo - 2e-12 && y.max < sort_hi + 2e-12,
			      "%s %.12g..%.12g s, want %.12g..%.12g", sort[k], y.min, y.max, sort_lo,
			      sort_hi);
	}
	/* one load per layer: its four sorts take the same time */
	for (int l = 0; l < 4; l++) {
		double first = -1;
		for (int32_t i = 0; i < a.tl->n; i++) {
			const struct sim_slice *sl = &a.tl->s[i];
			if (sl->layer != l || sl->track / SIM_TL_PER != 0 || !strstr(sl->name, "sort"))
				continue;
			if (first < 0)
				first = sl->t1_s - sl->t0_s;
			ck_assert_msg(fabs(sl->t1_s - sl->t0_s - first) < 2e-12, "layer %d %s %.12g s, %.12g",
				      l, sl->name, sl->t1_s - sl->t0_s, first);
		}
		ck_assert(first > 0);
	}
	ck_assert_msg(a.expert_load_mean >= 0.95 && a.expert_load_mean < 1 &&
			      a.expert_load_max >= a.expert_load_mean && a.expert_load_max <= 1.25,
		      "load %g, busiest %g", a.expert_load_mean, a.expert_load_max);
	sim_prediction_release(&a);
	/* padded to the capacity (drop-and-pad), the permute writes, and the
	 * unpermute reads, every expert's capacity slots: 1.25 x the routed
	 * copies */
	p.pad_to_capacity = true;
	run(&p, &o, &a);
	d.bytes = 1.25 * routed / p.tp + 2 * T / p.tp * h;
	want_perm = sim_compute_time_s(&cm, &d);
	for (int k = 0; k < 4; k++) {
		struct slice_stats x = slices(&a, perm[k]);
		ck_assert_msg(x.n == 4 && fabs(x.max - want_perm) < 2e-12 &&
				      fabs(x.min - want_perm) < 2e-12,
			      "padded %s %d: %.12g..%.12g s, want %.12g", perm[k], x.n, x.min, x.max,
			      want_perm);
	}
	sim_prediction_release(&a);
	topo_release(&topo);
}
END_TEST

/* Whole experts (expert_tensor_parallel 1, Megatron-core's usual MoE
 * layout): no TP all-gather or reduce-scatter of the routed tokens, the
 * EP group of ep consecutive ranks spans TP ranks, each rank's experts get
 * its own T/tp's share (the same FLOPs as TP-split experts), and the
 * experts' gradients are reduced over tp x dp / ep ranks. */
START_TEST(whole_experts_etp1)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 1, small_moe);
	o.timeline = false;
	p.tp = 2;
	p.ep = 4;
	p.sp = true;
	/* (the sharded optimizer: each rank steps the same share of the
	 * experts, whole or split) */
	p.distributed_optimizer = true;
	p.global_batch = 4; /* one micro-batch per rank */
	resolve(&p);
	ck_assert_int_eq(plan_expert_dp(&p), 1);
	run(&p, &o, &a);
	p.etp = 1;
	resolve(&p);
	ck_assert_int_eq(plan_expert_dp(&p), 2);
	run(&p, &o, &b);
	double T = p.seq_len, h = 512, L = 4, routed = 4 * T * h * 2;
	/* dropless: every routed token arrives (mean load 1) */
	ck_assert_msg(fabs(a.expert_load_mean - 1) < 1e-9 && fabs(b.expert_load_mean - 1) < 1e-9,
		      "mean loads %.9g %.9g", a.expert_load_mean, b.expert_load_mean);
	/* TP: the attention and shared part only (the split experts' gather and
	 * scatter of the group's routed tokens, forward and backward, gone) */
	double d_tp = a.comm_bytes[SIM_COMM_TP] - b.comm_bytes[SIM_COMM_TP];
	ck_assert_msg(fabs(d_tp / (4 * L * routed) - 1) < 1e-9, "tp bytes fall by %.9g, want %.9g",
		      d_tp, 4 * L * routed);
	/* EP: the same all-to-alls of each rank's T/tp tokens; the count gather
	 * over the EP group alone (ep x 16 experts x int64 per forward) */
	double a2a = L * 4 * routed / p.tp;
	double want_a = a2a + L * 16 * 8 * p.ep * p.tp, want_b = a2a + L * 16 * 8 * p.ep;
	ck_assert_msg(fabs(a.comm_bytes[SIM_COMM_EP] / want_a - 1) < 1e-9 &&
			      fabs(b.comm_bytes[SIM_COMM_EP] / want_b - 1) < 1e-9,
		      "ep bytes %.9g %.9g, want %.9g %.9g", a.comm_bytes[SIM_COMM_EP],
		      b.comm_bytes[SIM_COMM_EP], want_a, want_b);
	/* the experts' FLOPs are the same, whole or split (and the optimizer's) */
	ck_assert_msg(fabs(b.hw_flops / a.hw_flops - 1) < 1e-12, "hw flops %.9g vs %.9g", b.hw_flops,
		      a.hw_flops);
	/* their gradients now have a second copy to reduce with (expert DP 2):
	 * 16 / 4 whole experts of 3 x h x 256 per layer, reduce-scattered in
	 * fp32 and the updated bf16 weights all-gathered */
	double e_dp = L * 4 * 3 * h * 256 * (4 + 2);
	double d_dp = b.comm_bytes[SIM_COMM_DP] - a.comm_bytes[SIM_COMM_DP];
	ck_assert_msg(fabs(d_dp / e_dp - 1) < 1e-9, "dp bytes grow by %.9g, want %.9g", d_dp, e_dp);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);

	/* two nodes, tp 2 ep 8: TP-split experts exchange across both nodes,
	 * whole experts inside one (ranks 0-7): EP much faster; folded and
	 * --exact agree */
	setup_small(&p, &o, 2, small_moe);
	o.timeline = false;
	p.tp = 2;
	p.ep = 8;
	p.sp = true;
	p.global_batch = 16;
	resolve(&p);
	run(&p, &o, &a);
	p.etp = 1;
	resolve(&p);
	run(&p, &o, &b);
	ck_assert_msg(b.bd.exposed_comm_s[SIM_COMM_EP] < 0.5 * a.bd.exposed_comm_s[SIM_COMM_EP],
		      "exposed ep %.6f s (whole) vs %.6f s (split)", b.bd.exposed_comm_s[SIM_COMM_EP],
		      a.bd.exposed_comm_s[SIM_COMM_EP]);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	p.capacity_factor = 1.25;
	p.expert_imbalance = 0.5;
	resolve(&p);
	folded_vs_exact(&p);
	topo_release(&topo);

	/* no EP, no TP: the rank holds all 16 experts and still sorts its
	 * routed tokens by local expert (Megatron-core's "Permutation 2" runs
	 * whenever num_local_experts > 1), forward and backward */
	setup_small(&p, &o, 1, small_moe);
	p.global_batch = 8; /* one micro-batch per rank */
	resolve(&p);
	run(&p, &o, &a);
	ck_assert_int_eq(slices(&a, "moe sort chunks").n, 4);
	ck_assert_int_eq(slices(&a, "moe sort chunks bwd").n, 4);
	sim_prediction_release(&a);
	topo_release(&topo);

	/* ep < tp: each TP group holds tp / ep EP groups inside its node, and
	 * the folded representative prices the heaviest of them, as --exact
	 * finds it (found by review: the first stood for all, 0.4-0.7 % under) */
	setup_small(&p, &o, 2, small_moe);
	o.timeline = false;
	p.tp = 4;
	p.ep = 2;
	p.etp = 1;
	p.sp = true;
	p.global_batch = 16;
	p.expert_imbalance = 3;
	for (int f = 0; f < 2; f++) {
		resolve(&p);
		o.fidelity = f ? SIM_FLOW : SIM_ANALYTIC;
		o.exact = false;
		run(&p, &o, &a);
		o.exact = true;
		run(&p, &o, &b);
		ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 1e-6,
			      "folded %.9f s vs exact %.9f s (%s)", a.iteration_time_s,
			      b.iteration_time_s, f ? "flow" : "analytic");
		sim_prediction_release(&a);
		sim_prediction_release(&b);
	}
	topo_release(&topo);
}
END_TEST

/* E|2S - 1| for S ~ Beta(b, b): the busiest of two ranks' load over the
 * mean, 1 + |2S - 1|, when the ranks' shares are Beta (a two-rank EP
 * group's Dirichlet aggregate). */
static double beta_abs_dev(double b)
{
	double sum = 0;
	int n = 200000;
	for (int i = 0; i < n; i++) { /* midpoint rule on (0, 1) */
		double x = (i + 0.5) / n;
		sum += fabs(2 * x - 1) * gsl_ran_beta_pdf(x, b, b) / n;
	}
	return sum;
}

/* Longest minus shortest of representative 0's slices named `name`, s. */
static double slice_spread(const struct sim_prediction *r, const char *name)
{
	struct slice_stats st = slices(r, name);
	ck_assert_msg(st.n > 0, "no %s slices", name);
	return st.max - st.min;
}

/* The router's skew (expert_imbalance: the CV of an expert's expected
 * share) is drawn as a symmetric Dirichlet, so with EP 2 each rank's share
 * of a layer's tokens is Beta(a E/2, a E/2) with a = ((E - 1)/cv^2 - 1)/E,
 * and the busiest rank carries 1 + E|2S - 1| times the mean: the drawn
 * mean over 64 micro-batches x 4 layers matches that within its sampling
 * error (0.005; the multinomial noise of 4096 assignments adds under
 * 0.001). The load reaches the ops on received tokens: with the skew the
 * sorts and the all-to-alls of the busiest rank vary
 * from layer to layer far more than under a uniform router, and the
 * iteration is slower. A capacity of 1.25 drops tokens: the busiest rank
 * then gets less than the balanced load and the iteration is faster. */
START_TEST(expert_imbalance_follows_dirichlet)
{
	/* (the expert GEMMs are too small here to leave one wave of tiles) */
	static const char *const varying[] = { "moe sort chunks", "moe unsort chunks bwd",
					       "ep dispatch", "ep combine bwd" };
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b, c, d;
	double E = 16, cv = 0.5, al = ((E - 1) / (cv * cv) - 1) / E;
	setup_small(&p, &o, 1, small_moe);
	o.fidelity = SIM_ANALYTIC;
	p.tp = 2;
	p.sp = true;
	p.pp = 2;
	p.ep = 2; /* dp 2: one EP group, the representative is its busiest rank */
	p.global_batch = 128;
	resolve(&p);
	ck_assert_int_eq(plan_microbatches(&p), 64);
	run(&p, &o, &a);
	/* cv 0: multinomial noise only (rank sd 1.6 %) */
	ck_assert_msg(a.expert_load_max > 1 && a.expert_load_max < 1.03, "uniform router: %g",
		      a.expert_load_max);
	p.expert_imbalance = cv;
	run(&p, &o, &b);
	double want = 1 + beta_abs_dev(al * E / 2);
	ck_assert_msg(fabs(b.expert_load_max - want) < 0.015,
		      "cv %g: busiest rank %.4f x mean, want %.4f", cv, b.expert_load_max, want);
	for (int k = 0; k < 4; k++)
		ck_assert_msg(slice_spread(&b, varying[k]) > 3 * slice_spread(&a, varying[k]),
			      "%s spread %.3g s skewed, %.3g s uniform", varying[k],
			      slice_spread(&b, varying[k]), slice_spread(&a, varying[k]));
	ck_assert_msg(b.iteration_time_s > a.iteration_time_s &&
			      b.bd.exposed_comm_s[SIM_COMM_EP] > a.bd.exposed_comm_s[SIM_COMM_EP],
		      "skewed %.6f s (ep %.6g) vs uniform %.6f s (ep %.6g)", b.iteration_time_s,
		      b.bd.exposed_comm_s[SIM_COMM_EP], a.iteration_time_s,
		      a.bd.exposed_comm_s[SIM_COMM_EP]);
	o.timeline = false;
	p.expert_imbalance = 1;
	run(&p, &o, &c);
	p.capacity_factor = 1.25;
	run(&p, &o, &d);
	ck_assert_msg(c.expert_load_max > 1.15 && d.expert_load_max < 0.95 &&
			      d.iteration_time_s < c.iteration_time_s,
		      "cv 1: %g x mean, %.6f s; capacity 1.25: %g x mean, %.6f s", c.expert_load_max,
		      c.iteration_time_s, d.expert_load_max, d.iteration_time_s);
	/* padded to the capacity: every rank at 1.25 x the balanced load,
	 * slower than dropping without padding */
	sim_prediction_release(&c);
	p.pad_to_capacity = true;
	run(&p, &o, &c);
	ck_assert_msg(c.expert_load_max == 1.25 && c.iteration_time_s > d.iteration_time_s,
		      "padded: %g x mean, %.6f s vs %.6f s", c.expert_load_max, c.iteration_time_s,
		      d.iteration_time_s);
	/* a capacity of 1.0 drops too (Megatron's 1.0 is not dropless): with a
	 * uniform router each of the 4 sources (2 positions x tp 2) routes 1024
	 * assignments, 64 per expert, and keeps E[min(X, 64)] = 64 - sigma
	 * phi(0) of its X ~ Binomial(1024, 1/16), sigma = sqrt(64 x 15/16): on
	 * average over the ranks (each keeps that fraction of its drawn
	 * tokens, at most its capacity) */
	sim_prediction_release(&c);
	p.pad_to_capacity = false;
	p.expert_imbalance = 0;
	p.capacity_factor = 1;
	run(&p, &o, &c);
	double kept = 1 - sqrt(64 * 15.0 / 16) / sqrt(2 * M_PI) / 64;
	ck_assert_msg(fabs(c.expert_load_mean - kept) < 1e-4 && c.expert_load_max <= 1 &&
			      c.expert_load_max > c.expert_load_mean,
		      "capacity 1: %.7f x mean (busiest %.7f), want %.7f", c.expert_load_mean,
		      c.expert_load_max, kept);
	/* a capacity nothing reaches is dropless: with a uniform router (cv 0
	 * here) the same draws, the same loads and time */
	sim_prediction_release(&c);
	sim_prediction_release(&d);
	p.capacity_factor = 1000;
	run(&p, &o, &c);
	p.capacity_factor = 0;
	run(&p, &o, &d);
	ck_assert_msg(c.expert_load_max == d.expert_load_max && c.expert_load_mean == d.expert_load_mean &&
			      fabs(c.iteration_time_s / d.iteration_time_s - 1) < 1e-12,
		      "capacity 1000: %.9g x mean, %.9g s; dropless %.9g, %.9g s", c.expert_load_max,
		      c.iteration_time_s, d.expert_load_max, d.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	sim_prediction_release(&c);
	sim_prediction_release(&d);
	topo_release(&topo);
}
END_TEST

/* Exact mode: each rank's GEMMs at its own drawn load; folded: the
 * representative at the busiest rank of its unit; both run each all-to-all
 * as an alltoallv at every member's load. Two EP groups of 2 on 2 nodes,
 * skewed router: the two agree within 1 %, and so does the exposed EP
 * time, analytic and flow (where one representative stands for both
 * units). Without EP, a capacity and padding still act on the experts. */
START_TEST(expert_imbalance_exact_matches_folded)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 2, small_moe);
	o.timeline = false;
	o.fidelity = SIM_ANALYTIC;
	p.tp = 2;
	p.sp = true;
	p.pp = 2;
	p.ep = 2;
	p.global_batch = 64;
	p.expert_imbalance = 1;
	resolve(&p);
	ck_assert_int_eq(p.dp, 4);
	run(&p, &o, &a);
	o.exact = true;
	run(&p, &o, &b);
	ck_assert_int_gt(b.instances, a.instances);
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 0.01,
		      "folded %.6f s vs exact %.6f s", a.iteration_time_s, b.iteration_time_s);
	double ea = a.bd.exposed_comm_s[SIM_COMM_EP], eb = b.bd.exposed_comm_s[SIM_COMM_EP];
	ck_assert_msg(fabs(ea / eb - 1) < 0.03, "exposed ep folded %.6g s vs exact %.6g s", ea, eb);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* flow level, one representative for both units: its EP groups sit
	 * inside a node (one stands for all), and the one it runs is its own */
	o.fidelity = SIM_FLOW;
	run(&p, &o, &b);
	o.exact = false;
	o.replicas = 1;
	run(&p, &o, &a);
	/* (the busiest unit sets the pace, and the representative is it: the
	 * two agree to rounding here; another unit's group would be 0.05 %
	 * off) */
	ck_assert_msg(fabs(a.iteration_time_s / b.iteration_time_s - 1) < 2e-4,
		      "flow: folded %.9f s vs exact %.9f s", a.iteration_time_s, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	/* without EP a capacity still drops, and padding still pads */
	p.ep = 1;
	p.capacity_factor = 1.25;
	p.pad_to_capacity = true;
	p.expert_imbalance = 0;
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &a);
	p.pad_to_capacity = false;
	run(&p, &o, &b);
	ck_assert_msg(a.expert_load_max == 1.25 && b.expert_load_max < 1 &&
			      a.iteration_time_s > b.iteration_time_s,
		      "ep 1: padded %g x, %.6f s; dropping %g x, %.6f s", a.expert_load_max,
		      a.iteration_time_s, b.expert_load_max, b.iteration_time_s);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* tp a multiple of the K/V heads: every rank keeps one K/V group, in the
 * QKV GEMM, in the gradients it reduces and in memory alike: the fp32
 * all-reduce moves twice the bf16 weight bytes the memory model counts. */
START_TEST(kv_replicated_consistently)
{
	static const char *gqa = "{\"hidden_size\": 1024, \"num_hidden_layers\": 4, "
				 "\"num_attention_heads\": 16, \"num_key_value_heads\": 2, "
				 "\"intermediate_size\": 2048, \"vocab_size\": 1000, "
				 "\"max_position_embeddings\": 4096, \"hidden_act\": \"silu\", "
				 "\"model_type\": \"llama\"}";
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct memory_env env = { .gpu_mem_bytes = 80e9, .ngpus = 8 };
	struct memory_report mr;
	setup_small(&p, &o, 1, gqa);
	p.tp = 4;
	p.global_batch = 2;
	resolve(&p);
	ck_assert_int_eq(p.dp, 2);
	ck_assert(p.grad_reduce_dtype == PLAN_DT_FP32 && p.precision == PLAN_DT_BF16);
	run(&p, &o, &r);
	memory_eval(&model, &p, &env, &mr);
	ck_assert_msg(fabs(r.comm_bytes[SIM_COMM_DP] / (2 * mr.stage[0].weights_bytes) - 1) < 1e-9,
		      "dp bytes %.9g, 2 x weights %.9g", r.comm_bytes[SIM_COMM_DP],
		      2 * mr.stage[0].weights_bytes);
	/* the QKV GEMM: 16/4 query heads and one K and one V head of 64 */
	const struct sim_slice *qkv = nth_slice(&r, WL_S_COMPUTE, "qkv gemm", 0);
	struct sim_compute cm;
	struct sim_op_desc d;
	double T = p.seq_len, n = 16 / 4 * 64 + 2 * 64, k = 1024;
	ck_assert(qkv);
	sim_compute_init(&cm, &topo.cl.gpu);
	memset(&d, 0, sizeof(d));
	d.cls = SIM_OP_GEMM;
	d.dtype_bytes = 2;
	d.m = (int64_t)T;
	d.n = (int64_t)n;
	d.k = (int64_t)k;
	d.batch = 1;
	d.flops = 2 * T * n * k;
	d.bytes = 2 * (T * k + k * n + T * n);
	ck_assert_msg(fabs(qkv->t1_s - qkv->t0_s - sim_compute_time_s(&cm, &d)) < 2e-12,
		      "qkv gemm %.12g s, want %.12g", qkv->t1_s - qkv->t0_s, sim_compute_time_s(&cm, &d));
	sim_prediction_release(&r);
	p.tp = 2; /* splits the two K/V heads: 8 + 1 + 1 heads of 64 per rank */
	p.dp = 0;
	p.global_batch = 4;
	resolve(&p);
	run(&p, &o, &r);
	memory_eval(&model, &p, &env, &mr);
	ck_assert_msg(fabs(r.comm_bytes[SIM_COMM_DP] / (2 * mr.stage[0].weights_bytes) - 1) < 1e-9,
		      "tp 2: dp bytes %.9g, 2 x weights %.9g", r.comm_bytes[SIM_COMM_DP],
		      2 * mr.stage[0].weights_bytes);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Full recompute covers the vision encoder as the memory model assumes (it
 * stores only each encoder block's input): the encoder's forward runs again
 * before its backward. */
START_TEST(full_recompute_reruns_the_encoder)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	struct ts_error err = TS_ERROR_INIT;
	setup_small(&p, &o, 1, small_model);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	p.seq_len = 1024;
	p.global_batch = 8;
	resolve(&p);
	run(&p, &o, &a);
	p.recompute = PLAN_RC_FULL;
	run(&p, &o, &b);
	int na = slice_count(&a, "vit qkv gemm"), nb = slice_count(&b, "vit qkv gemm");
	ck_assert_int_eq(na, model.vit.depth);
	ck_assert_int_eq(nb, 2 * model.vit.depth);
	ck_assert_int_eq(slice_count(&b, "vit qkv dgrad"), model.vit.depth);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* The encoder's backward all-reduces the input gradients of its
 * column-parallel GEMMs (QKV, MLP up) behind their weight-gradient GEMMs,
 * as Megatron's async all-reduce does: two per block each way. */
START_TEST(vision_backward_hides_allreduce)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	int side_by_side = 0;
	setup_small(&p, &o, 1, small_model);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	p.tp = 2;
	p.seq_len = 1024;
	p.global_batch = 4; /* one micro-batch per rank */
	resolve(&p);
	run(&p, &o, &r);
	ck_assert_int_eq(slice_count(&r, "vit tp allreduce"), 4 * model.vit.depth);
	/* and the mergers' (the main one and DeepStack's): the merged tokens'
	 * output of their row-parallel fc2 forward, the patches' gradient
	 * into their column-parallel fc1 backward (found by an audit: none) */
	{
		int nm = 0, nf = 0;
		double P = p.micro_batch * model.vit.merge * model.vit.merge *
			   plan_dist_mean(&p.image_tokens) * plan_dist_mean(&p.images_per_sample);
		for (int32_t i = 0; i < r.tl->n; i++) {
			const struct sim_slice *a = &r.tl->s[i];
			if (a->track / SIM_TL_PER != 0 || strcmp(a->name, "vit merger tp allreduce"))
				continue;
			nm++;
			if (a->bytes == 2 * P / 4 * model.hidden)
				nf++;
			else
				ck_assert_double_eq(a->bytes, 2 * P * model.vit.hidden);
		}
		ck_assert_int_eq(nm, 2 * (1 + model.vit.deepstack));
		ck_assert_int_eq(nf, 1 + model.vit.deepstack);
	}
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *a = &r.tl->s[i];
		if (a->track != WL_S_COMM || strcmp(a->name, "vit tp allreduce"))
			continue;
		const struct sim_slice *w = compute_from(&r, a->t0_s, -1, -1, NULL);
		if (w && (!strcmp(w->name, "vit qkv wgrad") || !strcmp(w->name, "vit mlp up wgrad")) &&
		    fabs(w->t0_s - a->t0_s) < 1e-12)
			side_by_side++;
	}
	ck_assert_int_eq(side_by_side, 2 * model.vit.depth);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* An encoder block's element-wise ops, as Qwen3-VL's block has them: two
 * norms, two residual adds and the MLP's activation forward, their
 * backward (found by review: only the first norm was priced, which left
 * out about a fifth of the encoder's time on an H100). */
START_TEST(encoder_block_elementwise_ops)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	setup_small(&p, &o, 1, small_model);
	ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
	p.seq_len = 1024;
	p.global_batch = 8; /* one micro-batch per rank */
	resolve(&p);
	run(&p, &o, &r);
	int d = model.vit.depth;
	ck_assert_int_eq(slice_count(&r, "vit norm"), 2 * d);
	ck_assert_int_eq(slice_count(&r, "vit residual add"), 2 * d);
	ck_assert_int_eq(slice_count(&r, "vit activation"), d);
	ck_assert_int_eq(slice_count(&r, "vit norm bwd"), 2 * d);
	ck_assert_int_eq(slice_count(&r, "vit activation bwd"), d);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Activation-sized communication on the timeline, per dimension: every
 * transfer but the DP reductions (gradients), the loss's fp32 all-reduces,
 * the replicated gradients' fp32 all-reduce and the token counts. */
static void activation_bytes(const struct sim_prediction *r, double out[WL_NDIMS])
{
	static const char *const fixed[] = { "loss tp allreduce", "tp replicated grads allreduce",
					     "moe token counts" };
	for (int k = 0; k < WL_NDIMS; k++)
		out[k] = 0;
	for (int32_t i = 0; i < r->tl->n; i++) {
		const struct sim_slice *x = &r->tl->s[i];
		bool skip = x->coll < 0 || x->dim == WL_D_DP || x->dim == WL_D_EDP;
		for (size_t k = 0; k < TS_ARRAY_LEN(fixed) && !skip; k++)
			skip = !strcmp(x->name, fixed[k]);
		if (!skip)
			out[x->dim] += x->bytes;
	}
}

/* Under precision fp32 the activations are fp32, and so is every
 * activation-sized transfer: TP collectives, pipeline sends and EP
 * all-to-alls move twice the bytes of bf16 (found by review: 2 bytes
 * always). */
START_TEST(fp32_activations_move_twice_the_bytes)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	double ba[WL_NDIMS], bb[WL_NDIMS];
	setup_small(&p, &o, 1, small_moe);
	p.tp = 2;
	p.pp = 2;
	p.ep = 2;
	p.sp = true;
	p.global_batch = 4;
	resolve(&p);
	run(&p, &o, &a);
	p.precision = PLAN_DT_FP32;
	resolve(&p);
	run(&p, &o, &b);
	activation_bytes(&a, ba);
	activation_bytes(&b, bb);
	for (int k = WL_D_TP; k <= WL_D_EP; k++) {
		if (k == WL_D_DP)
			continue;
		ck_assert_msg(ba[k] > 0 && fabs(bb[k] / ba[k] - 2) < 1e-9,
			      "%s: bf16 %.6g fp32 %.6g bytes", wl_dim_name((enum wl_dim)k), ba[k], bb[k]);
	}
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* overlap.param_gather: the distributed optimizer's parameter all-gather
 * moves from after the step to beside the first forward, one layer ahead,
 * each layer's forward waiting for its own: the same bytes, a shorter
 * iteration. */
START_TEST(param_gather_overlaps_forward)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction a, b;
	setup_small(&p, &o, 1, small_model);
	o.overlap_slowdown = 1;
	p.distributed_optimizer = true;
	p.overlap_dp = true; /* (Megatron's --overlap-param-gather requires it) */
	p.global_batch = 16; /* dp 8, two micro-batches */
	resolve(&p);
	run(&p, &o, &a);
	p.overlap_param_gather = true;
	resolve(&p);
	run(&p, &o, &b);
	ck_assert_msg(fabs(b.comm_bytes[SIM_COMM_DP] / a.comm_bytes[SIM_COMM_DP] - 1) < 1e-12,
		      "dp bytes %.9g vs %.9g", b.comm_bytes[SIM_COMM_DP], a.comm_bytes[SIM_COMM_DP]);
	ck_assert_int_eq(slice_count(&a, "dp param allgather"), 1);
	/* the 8 layers, the embedding, the head (tied: its final norm) */
	ck_assert_int_eq(slice_count(&b, "dp param allgather"), model.layers + 2);
	ck_assert_msg(b.iteration_time_s < a.iteration_time_s, "overlapped %.9g s, after %.9g s",
		      b.iteration_time_s, a.iteration_time_s);
	/* the first layer's forward starts after its gather ends */
	const struct sim_slice *g = nth_slice(&b, WL_S_DP, "dp param allgather", 0);
	const struct sim_slice *q = nth_slice(&b, WL_S_COMPUTE, "qkv gemm", 0);
	ck_assert(g && q);
	ck_assert_double_ge(q->t0_s, g->t1_s - 1e-12);
	sim_prediction_release(&a);
	sim_prediction_release(&b);
	topo_release(&topo);
}
END_TEST

/* overlap.tp as Transformer Engine's userbuffers pipeline it. The
 * all-gather before the QKV GEMM is a ring exchange in tp chunks: the
 * first (tp-1)/tp of the GEMM runs beside it and only the last 1/tp waits
 * for it. The reduce-scatter after the output projection is pipelined in 4
 * chunks: the GEMM's first quarter, then its other three beside the
 * reduce-scatter of the first three quarters of the data, then the last
 * quarter's reduce-scatter, which the residual add waits for. */
START_TEST(tp_overlap_pipelines_in_chunks)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	const double eps = 1e-12;
	setup_small(&p, &o, 1, small_model);
	p.tp = 4;
	p.sp = true;
	p.overlap_tp = true;
	p.global_batch = 2;
	resolve(&p);
	run(&p, &o, &r);

	const struct sim_slice *ag = nth_slice(&r, WL_S_COMM, "tp allgather", 0);
	const struct sim_slice *qa = nth_slice(&r, WL_S_COMPUTE, "qkv gemm", 0);
	const struct sim_slice *qb = nth_slice(&r, WL_S_COMPUTE, "qkv gemm", 1);
	ck_assert(ag && qa && qb);
	ck_assert_ptr_null(nth_slice(&r, WL_S_COMPUTE, "qkv gemm", 2)); /* no recompute */
	ck_assert_double_le(fabs(qa->t0_s - ag->t0_s), eps); /* side by side */
	ck_assert_double_le(fabs(qb->t0_s - fmax(qa->t1_s, ag->t1_s)), eps);
	ck_assert_double_gt(qa->t1_s - qa->t0_s, qb->t1_s - qb->t0_s); /* 3/4 vs 1/4 of the rows */

	const struct sim_slice *pa = nth_slice(&r, WL_S_COMPUTE, "proj gemm", 0);
	const struct sim_slice *pb = nth_slice(&r, WL_S_COMPUTE, "proj gemm", 1);
	const struct sim_slice *rs1 = nth_slice(&r, WL_S_COMM, "tp reducescatter", 0);
	const struct sim_slice *rs2 = nth_slice(&r, WL_S_COMM, "tp reducescatter", 1);
	ck_assert(pa && pb && rs1 && rs2);
	ck_assert_double_lt(pa->t1_s - pa->t0_s, pb->t1_s - pb->t0_s);
	ck_assert_double_le(fabs(rs1->t0_s - pa->t1_s), eps);
	ck_assert_double_le(fabs(pb->t0_s - pa->t1_s), eps);
	ck_assert_double_le(fabs(rs2->t0_s - fmax(pb->t1_s, rs1->t1_s)), eps);
	ck_assert_double_gt(rs1->t1_s - rs1->t0_s, rs2->t1_s - rs2->t0_s); /* 3/4 vs 1/4 of the data */
	const struct sim_slice *ra = compute_from(&r, pb->t1_s, 0, 0, "residual add");
	ck_assert(ra);
	ck_assert_double_le(fabs(ra->t0_s - rs2->t1_s), eps);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Context parallelism (Transformer Engine's ring attention) keeps only the
 * rank's K/V chunk: the forward gathers the others' K/V, the backward
 * gathers them again and sends dK/dV back, and a recomputed attention
 * (selective or full) gathers once more. Each exchange moves the same
 * bytes, so the CP traffic is 3, 4 and 4 forward exchanges. The attention
 * runs a kernel per ring step: the steps before the last beside the
 * exchange, the last after it (found by review: one kernel after the whole
 * exchange left it exposed, Megatron's default p2p ring hides it). */
START_TEST(cp_exchanges_per_pass)
{
	static const enum plan_recompute rc[3] = { PLAN_RC_NONE, PLAN_RC_SELECTIVE, PLAN_RC_FULL };
	static const int units[3] = { 3, 4, 4 }, gathers[3] = { 2, 3, 3 };
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double unit = 0;
	int mm, waited = 0, beside = 0;
	for (int k = 0; k < 3; k++) {
		setup_small(&p, &o, 1, small_model);
		p.cp = 2;
		p.flash_attention = true;
		p.global_batch = 8;
		p.recompute = rc[k];
		resolve(&p);
		mm = plan_microbatches(&p);
		run(&p, &o, &r);
		ck_assert_int_eq(slice_count(&r, "cp kv exchange"), gathers[k] * model.layers * mm);
		ck_assert_int_eq(slice_count(&r, "cp dkv exchange"), model.layers * mm);
		if (k == 0)
			unit = r.comm_bytes[SIM_COMM_CP] / units[0];
		ck_assert_msg(fabs(r.comm_bytes[SIM_COMM_CP] / (units[k] * unit) - 1) < 1e-9,
			      "recompute %d: cp bytes %.9g, want %d x %.9g", k,
			      r.comm_bytes[SIM_COMM_CP], units[k], unit);
		for (int32_t i = 0; i < r.tl->n; i++) {
			const struct sim_slice *x = &r.tl->s[i];
			if (x->track != WL_S_COMPUTE || strcmp(x->name, "attention bwd"))
				continue;
			/* the latest K/V gather of its layer before it, and
			 * whether it is the layer's last step (none after it) */
			double g = -1;
			bool last = true;
			for (int32_t j = 0; j < r.tl->n; j++) {
				const struct sim_slice *y = &r.tl->s[j];
				if (y->track == WL_S_COMM && !strcmp(y->name, "cp kv exchange") &&
				    y->micro == x->micro && y->layer == x->layer && y->t0_s <= x->t0_s)
					g = fmax(g, y->t1_s);
				if (y->track == WL_S_COMPUTE && !strcmp(y->name, "attention bwd") &&
				    y->micro == x->micro && y->layer == x->layer && y->t0_s > x->t0_s)
					last = false;
			}
			ck_assert(g >= 0);
			if (last) {
				ck_assert_msg(x->t0_s >= g - 1e-12,
					      "attention backward's last step at %.9g s, its K/V gather "
					      "ends at %.9g s",
					      x->t0_s, g);
				waited++;
			} else if (x->t0_s < g) {
				beside++;
			}
		}
		sim_prediction_release(&r);
		topo_release(&topo);
	}
	ck_assert_int_gt(waited, 0);
	ck_assert_int_gt(beside, 0);
}
END_TEST

/* Ring attention hides the K/V exchange behind the steps' attention where
 * a hop takes less than a step (Megatron's default p2p form): only the
 * last step's dK/dV hop is exposed (found by review: llama3-8b at cp 8,
 * seq 16,384 on one node exposed 0.197 s of CP in 1.867, 10.6 %; a hop is
 * 27.5 us beside 70 us of forward attention a step). */
START_TEST(cp_ring_hides_the_exchange)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 1);
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	plan_init(&p);
	p.cp = 8;
	p.flash_attention = true;
	p.zero = 1;
	p.recompute = PLAN_RC_SELECTIVE;
	p.seq_len = 16384;
	p.global_batch = 8;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &r);
	double cp = r.bd.exposed_comm_s[SIM_COMM_CP];
	ck_assert_msg(cp > 0 && cp < 0.02 * r.iteration_time_s, "exposed CP %.4f s of %.4f s", cp,
		      r.iteration_time_s);
	sim_prediction_release(&r);
	topo_release(&topo);
	/* across two nodes (cp 16, seq 32,768) each step's hop over the node
	 * boundary takes one NIC, 192 us for 8.4 MB against 76 us of forward
	 * attention a step: mostly exposed (found by review: priced as
	 * NCCL's all-gather over all 8 NICs, 374 us beside 1,136 us of
	 * attention, hidden) */
	load_topo("dgx-h100-ndr", 2);
	p.cp = 16;
	p.seq_len = 32768;
	p.global_batch = 2;
	p.dp = 0;
	resolve(&p);
	run(&p, &o, &r);
	cp = r.bd.exposed_comm_s[SIM_COMM_CP];
	ck_assert_msg(cp > 0.25 * r.iteration_time_s, "exposed CP %.4f s of %.4f s across nodes", cp,
		      r.iteration_time_s);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* Data is produced before it is moved or added: context parallelism's
 * dK/dV exchange follows the attention backward that computes dK/dV, and
 * under ZeRO-2 without fused accumulation each micro-batch's add into the
 * gradient shard follows that micro-batch's reduce-scatters. */
START_TEST(producers_precede_their_traffic)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	int n = 0;
	setup_small(&p, &o, 1, small_model);
	p.cp = 2;
	p.flash_attention = true;
	p.global_batch = 4;
	resolve(&p);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *x = &r.tl->s[i];
		double att = -1;
		if (x->track != WL_S_COMM || strcmp(x->name, "cp dkv exchange"))
			continue;
		for (int32_t k = 0; k < r.tl->n; k++) {
			const struct sim_slice *c = &r.tl->s[k];
			if (c->track == WL_S_COMPUTE && !strcmp(c->name, "attention bwd") &&
			    c->micro == x->micro && c->layer == x->layer)
				att = c->t1_s;
		}
		ck_assert_msg(att >= 0 && x->t0_s >= att - 1e-12,
			      "dK/dV exchange at %.9g s, attention backward ends at %.9g s", x->t0_s, att);
		n++;
	}
	ck_assert_int_gt(n, 0);
	sim_prediction_release(&r);
	plan_init(&p);
	p.seq_len = 512;
	p.zero = 2;
	p.grad_accum_fusion = false;
	p.overlap_dp = true;
	p.global_batch = 32;
	p.bucket_bytes = 4e6;
	resolve(&p);
	ck_assert_int_gt(p.global_batch / (p.dp * p.micro_batch), 1);
	run(&p, &o, &r);
	n = 0;
	for (int32_t i = 0; i < r.tl->n; i++) {
		const struct sim_slice *x = &r.tl->s[i];
		double red;
		if (x->track != WL_S_COMPUTE || strcmp(x->name, "grad accumulate"))
			continue;
		red = last_end(&r, "dp grad reduce", x->micro);
		ck_assert_msg(red > 0 && x->t0_s >= red - 1e-12,
			      "shard add of micro-batch %d at %.9g s, its reductions end at %.9g s",
			      x->micro, x->t0_s, red);
		n++;
	}
	ck_assert_int_gt(n, 0);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* ---- traces ----------------------------------------------------------------------- */

struct xslice {
	int pid, tid;
	double t0, t1;
};

/* A flow event of the trace: send ("s") or receive ("f") end. */
struct flow_ev {
	bool send;
	double id;
	struct xslice x; /* pid, tid, ts (t0) */
};

/* The pipeline's transfers as arrows (flow events): each send pairs with
 * one receive on the next or previous stage's representative, no earlier,
 * and each end lies in one slice of its send or receive track (xs sorted). */
static void check_flows(const struct flow_ev *fl, int n, const struct xslice *xs, int nxs)
{
	int pairs = 0;
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		int enc = 0, match = 0;
		ck_assert_int_eq(fl[i].x.tid, fl[i].send ? WL_S_PP_SEND : WL_S_PP_RECV);
		for (int k = 0; k < nxs; k++)
			enc += xs[k].pid == fl[i].x.pid && xs[k].tid == fl[i].x.tid &&
			       xs[k].t0 <= fl[i].x.t0 && fl[i].x.t0 <= xs[k].t1;
		ck_assert_int_eq(enc, 1);
		for (int k = 0; k < n; k++) {
			if (k == i || fl[k].id != fl[i].id)
				continue;
			match++;
			ck_assert(fl[k].send != fl[i].send);
			ck_assert_int_ne(fl[k].x.pid, fl[i].x.pid);
			if (fl[i].send)
				ck_assert_double_le(fl[i].x.t0, fl[k].x.t0);
		}
		ck_assert_int_eq(match, 1);
		pairs += fl[i].send;
	}
	ck_assert_int_eq(2 * pairs, n);
}

static int cmp_xslice(const void *a, const void *b)
{
	const struct xslice *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* A trace slice's args: communication says its group, collective and
 * size (found by review: none; the size is nccl-tests', so a TP
 * all-reduce's is the activation, act bytes, and the pipeline's
 * activations are act too: the first send's and receive's into pp). */
/* tp_pick: NCCL's algorithm and protocol for the TP all-reduce (names) */
static void check_trace_args(const cJSON *e, double act, const char *const tp_pick[2], int *ntp,
			     double pp[3])
{
	const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
	const cJSON *args = cJSON_GetObjectItem(e, "args"), *cat = cJSON_GetObjectItem(e, "cat");
	const cJSON *g = cJSON_GetObjectItem(args, "group"), *c = cJSON_GetObjectItem(args, "collective");
	const cJSON *by = cJSON_GetObjectItem(args, "bytes");
	const cJSON *al = cJSON_GetObjectItem(args, "algorithm"), *pr = cJSON_GetObjectItem(args, "protocol");
	ck_assert(cJSON_IsObject(args) && cJSON_IsString(cat));
	if (strcmp(cat->valuestring, "comm")) {
		ck_assert(!g && !c && !by && !al && !pr);
		return;
	}
	ck_assert_msg(cJSON_IsString(g) && cJSON_IsString(c) && cJSON_IsNumber(by), "%s", name);
	ck_assert_msg(by->valuedouble > 0, "%s: %g bytes", name, by->valuedouble);
	/* a collective says what it ran as (NCCL's pick); a send is not one */
	if (strcmp(c->valuestring, "sendrecv")) {
		ck_assert_msg(cJSON_IsString(al) && cJSON_IsString(pr), "%s", name);
		ck_assert_msg(sim_algo_parse(al->valuestring) > 0, "%s: %s", name, al->valuestring);
		ck_assert_msg(sim_proto_parse(pr->valuestring) > 0, "%s: %s", name, pr->valuestring);
	} else {
		ck_assert_msg(!al && !pr, "%s", name);
	}
	if (!strcmp(name, "tp allreduce")) {
		ck_assert_str_eq(g->valuestring, "tp");
		ck_assert_str_eq(c->valuestring, "allreduce");
		ck_assert_double_eq(by->valuedouble, act);
		ck_assert_str_eq(al->valuestring, tp_pick[0]);
		ck_assert_str_eq(pr->valuestring, tp_pick[1]);
		(*ntp)++;
	}
	/* the tied embeddings' exchange is the pipeline's (found by review:
	 * group dp) */
	if (!strncmp(name, "embedding grad s", 16) || !strncmp(name, "embedding grad r", 16)) {
		ck_assert_str_eq(g->valuestring, "pp");
		pp[2]++;
	}
	for (int k = 0; k < 2; k++)
		if (!strcmp(name, k ? "pp recv act" : "pp send act") && !pp[k]) {
			ck_assert_str_eq(g->valuestring, "pp");
			ck_assert_str_eq(c->valuestring, "sendrecv");
			pp[k] = by->valuedouble;
		}
}

/* The bytes of the TP all-reduce of the gradients of weights every TP
 * rank holds whole ("tp replicated grads allreduce"; -1 without one) */
static double replicated_grads_bytes(const char *config, bool sp, enum plan_dtype grad)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	double bytes = -1;
	setup_small(&p, &o, 1, config);
	p.tp = 2;
	p.sp = sp;
	p.global_batch = 4;
	p.grad_dtype = grad;
	resolve(&p);
	run(&p, &o, &r);
	for (int32_t i = 0; i < r.tl->n; i++)
		if (!strcmp(r.tl->s[i].name, "tp replicated grads allreduce")) {
			/* one a rank, coalesced; the same on every rank */
			ck_assert(bytes < 0 || bytes == r.tl->s[i].bytes);
			bytes = r.tl->s[i].bytes;
		}
	sim_prediction_release(&r);
	topo_release(&topo);
	return bytes;
}

/* Under sequence parallelism the weights replicated over TP (norms, and
 * OLMo 2's q_norm/k_norm over all heads) have their gradients all-reduced
 * before the step, in fp32: 4 x (final norm + L x (two norms + q/k norms))
 * bytes (found by review: the q/k norms counted per head, as Qwen3's).
 * Without it only the q/k norms (each rank normalises its own heads:
 * Megatron's finalize_model_grads takes q_layernorm and k_layernorm with
 * qk_layernorm too), and a model without them has none. Under it the
 * row-parallel biases too (added on the sequence shard): GPT-2's o_proj
 * and fc2 biases beside its LayerNorms' weights and biases. The bytes
 * are the main gradients': fp32 by default, 2 bytes a bf16 one. */
START_TEST(replicated_grads_count_qk_norms)
{
	const char *olmo =
		"{\"model_type\": \"olmo2\", \"hidden_size\": 256, \"num_hidden_layers\": 4, "
		"\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 512, "
		"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"rms_norm_eps\": 1e-06}";
	const char *llama =
		"{\"model_type\": \"llama\", \"hidden_size\": 256, \"num_hidden_layers\": 4, "
		"\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 512, "
		"\"vocab_size\": 1000, \"hidden_act\": \"silu\", \"rms_norm_eps\": 1e-06}";
	const char *gpt2 = "{\"model_type\": \"gpt2\", \"n_embd\": 256, \"n_layer\": 4, "
			   "\"n_head\": 4, \"n_positions\": 1024, \"vocab_size\": 1000}";
	const enum plan_dtype f32 = PLAN_DT_FP32;
	ck_assert_double_eq(replicated_grads_bytes(olmo, true, f32),
			    4.0 * (256 + 4 * (2 * 256 + (4 + 2) * 64)));
	ck_assert_double_eq(replicated_grads_bytes(olmo, false, f32), 4.0 * 4 * (4 + 2) * 64);
	ck_assert_double_eq(replicated_grads_bytes(llama, false, f32), -1);
	ck_assert_double_eq(replicated_grads_bytes(llama, true, f32), 4.0 * (256 + 4 * 2 * 256));
	ck_assert_double_eq(replicated_grads_bytes(gpt2, true, f32),
			    4.0 * (2 * 256 + 4 * (2 * 2 * 256 + 256 + 256)));
	/* in the main gradients' dtype: bf16 ones, 2 bytes (found by an
	 * audit: 4 whatever it was) */
	ck_assert_double_eq(replicated_grads_bytes(llama, true, PLAN_DT_BF16),
			    2.0 * (256 + 4 * 2 * 256));
}
END_TEST

/* The slices an SVG timeline draws: a rect each, or "N ops" where a run
 * of slices under a pixel wide is drawn as one rect. st (if given): [0]
 * rects of one slice, [1] merged rects, [2] the widest merged rect, px. */
static int svg_ops(const char *text, double *st)
{
	int n = 0;
	if (st)
		st[0] = st[1] = st[2] = 0;
	for (const char *s = text; (s = strstr(s, "<rect")); s++) {
		const char *t = strstr(s, "<title>"), *w = strstr(s, "width=\"");
		int k, len = 0;
		ck_assert_ptr_nonnull(t);
		ck_assert_ptr_nonnull(w);
		if (sscanf(t, "<title>%d%n", &k, &len) == 1 && !strncmp(t + len, " ops, ", 6)) {
			n += k;
			if (st) {
				st[1]++;
				st[2] = fmax(st[2], atof(w + 7));
			}
		} else {
			n++;
			if (st)
				st[0]++;
		}
	}
	return n;
}

/* Ops of w outside the vision encoder: what a timeline makes slices of,
 * one per simulated rank of the op's stage. */
static double traced_ops(const struct workload *w)
{
	double n = 0;
	for (int s = 0; s < w->nroles; s++)
		for (int32_t i = 0; i < w->roles[s].nops; i++)
			n += w->roles[s].ops[i].vary != WL_V_VISION;
	return n;
}

/* A timeline's slices are bounded before the run. The workload refuses a
 * plan whose ops outside the vision encoder pass wl_opts.max_slices: from
 * its estimate where the plan is large (before building it; exact on
 * these plans, so a bound of the count builds and one less is refused) or
 * while building it; each simulated rank's ops end in one slice each, which
 * the executor checks before it runs. Found 2026-12-04: a GPT of 8 layers
 * at 30,000 micro-batches with --trace ran 6.8 s and 1.5 GB before the
 * executor refused its 4 millionth slice (now 0.01 s). */
START_TEST(timeline_slices_bounded_before_the_run)
{
	struct plan p;
	struct workload w;
	struct wl_opts wo;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	for (int c = 0; c < 4; c++) {
		double n;
		int rc;
		if (c < 3)
			load_model_json(small_model);
		else
			ck_assert_msg(model_load(&model, "qwen3-vl-2b", &err) == 0, "%s", err.msg);
		plan_init(&p);
		p.tp = 2;
		p.pp = 2;
		p.seq_len = 512;
		p.global_batch = c == 2 ? 8 : 256; /* 2 or 64 micro-batches of 4 replicas */
		if (c == 1) {
			p.schedule = PLAN_SCHED_INTERLEAVED;
			p.virtual_stages = 2;
		}
		resolve(&p);
		wl_opts_init(&wo);
		ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
		n = traced_ops(&w);
		workload_release(&w);
		ck_assert_msg(n > 100, "case %d: %.0f ops", c, n);
		wo.max_slices = (int64_t)n;
		ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "case %d at its %.0f: %s",
			      c, n, err.msg);
		ck_assert_double_eq(traced_ops(&w), n);
		workload_release(&w);
		wo.max_slices = (int64_t)n - 1;
		rc = workload_build(&w, &model, &p, &wo, &err);
		ck_assert_msg(rc == TS_EINPUT && strstr(err.msg, "slices a trace Perfetto can open") &&
				      strstr(err.msg, c == 2 ? "would pass" : "would have at least"),
			      "case %d, %.0f ops, bound one less: rc %d, %s", c, n, rc, err.msg);
		err = (struct ts_error)TS_ERROR_INIT;
	}
	/* each rank the executor simulates, folded or exact: one slice per
	 * op of its stage (the small GPT: no vision ops, so equal) */
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.seq_len = 512;
	p.global_batch = 16;
	resolve(&p);
	wl_opts_init(&wo);
	ck_assert_msg(workload_build(&w, &model, &p, &wo, &err) == 0, "%s", err.msg);
	double per_stage[2] = { 0, 0 };
	for (int st = 0; st < 2; st++)
		for (int32_t i = 0; i < w.roles[st].nops; i++)
			per_stage[st]++;
	workload_release(&w);
	for (int exact = 0; exact < 2; exact++) {
		int ranks = 0;
		bool *seen;
		sim_predict_opts_init(&o);
		o.timeline = true;
		o.exact = exact;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &r);
		seen = calloc((size_t)r.tl->ntracks / SIM_TL_PER + 1, sizeof(*seen));
		ck_assert_ptr_nonnull(seen);
		for (int32_t i = 0; i < r.tl->n; i++)
			if (!seen[r.tl->s[i].track / SIM_TL_PER]) {
				seen[r.tl->s[i].track / SIM_TL_PER] = true;
				ranks++;
			}
		free(seen);
		ck_assert_msg(ranks % 2 == 0 && ranks >= 2 && (!exact || ranks == 16),
			      "exact %d: %d ranks", exact, ranks);
		ck_assert_msg(r.tl->n == (int32_t)((per_stage[0] + per_stage[1]) * ranks / 2),
			      "exact %d: %d slices of %d ranks, stages of %.0f and %.0f ops", exact,
			      r.tl->n, ranks, per_stage[0], per_stage[1]);
		sim_prediction_release(&r);
	}
	topo_release(&topo);
}
END_TEST

/* The trace is written event by event: the writer holds one event, not
 * the document (as one cJSON tree, 3.0 M slices took 4.6 GB and 33 s to
 * write; now the timeline's 0.4 GB and 9.9 s). Here some 200 k slices
 * are written under an address space of 48 MB more than the run's (the
 * tree needed about 300 MB), and read back: every slice an "X" event.
 * The limit is restored before any assertion; under a sanitizer, whose
 * shadow memory it counts, the file is only written and read. The SVG of
 * the same run draws runs of sub-pixel slices as one rect each. */
START_TEST(trace_written_as_it_goes)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct rlimit old, lim;
	struct ts_error err = TS_ERROR_INIT;
	char path[] = "/tmp/ts_bigtrace_XXXXXX";
	char *text = NULL;
	size_t len;
	cJSON *root, *ev, *e;
	int fd = mkstemp(path), rc, nx = 0;
	ck_assert(fd >= 0);
	close(fd);
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.seq_len = 512;
	p.global_batch = 512; /* 128 micro-batches of 4 replicas */
	resolve(&p);
	sim_predict_opts_init(&o);
	o.timeline = true;
	o.fidelity = SIM_ANALYTIC;
	run(&p, &o, &r);
	ck_assert_msg(r.tl->n > 150000, "%d slices", r.tl->n);
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)(vm_bytes() + 48e6);
	if (!sanitized_build() && (old.rlim_cur == RLIM_INFINITY || old.rlim_cur > lim.rlim_cur))
		ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
	rc = sim_trace_write_json(&r, path, NULL, NULL, &err);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_int_eq(fileio_read_all(path, (size_t)1 << 31, &text, &len, &err), 0);
	root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	ck_assert(cJSON_IsArray(ev));
	cJSON_ArrayForEach(e, ev)
	{
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		nx += cJSON_IsString(ph) && !strcmp(ph->valuestring, "X");
	}
	ck_assert_int_eq(nx, r.tl->n);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "otherData")));
	cJSON_Delete(root);
	free(text);
	/* the SVG draws a run of slices under a pixel wide as one rect, at
	 * most a pixel wide (0.2 where it is narrower), each slice once;
	 * the slices a pixel wide or more each on its own (a rect each, it
	 * was 200 k rects, some 28 MB) */
	{
		double st[3], span = r.iteration_time_s;
		int wide = 0, n;
		for (int32_t i = 0; i < r.tl->n; i++) /* (the SVG's time axis, 1,370 px) */
			span = fmax(span, r.tl->s[i].t1_s);
		for (int32_t i = 0; i < r.tl->n; i++)
			wide += (r.tl->s[i].t1_s - r.tl->s[i].t0_s) * 1370 / span >= 1;
		ck_assert_int_eq(sim_trace_write_svg(&r, path, NULL, NULL, &err), 0);
		ck_assert_int_eq(fileio_read_all(path, (size_t)1 << 31, &text, &len, &err), 0);
		n = svg_ops(text, st);
		ck_assert_int_eq(n, r.tl->n);
		ck_assert_msg(st[0] + st[1] < r.tl->n / 5 && st[1] > 0 && st[2] <= 1.0 + 1e-9 &&
				      st[0] >= wide,
			      "%.0f single and %.0f merged rects (widest %.3f px) for %d slices, %d "
			      "of them 1 px wide or more",
			      st[0], st[1], st[2], r.tl->n, wide);
		free(text);
	}
	unlink(path);
	sim_prediction_release(&r);
	topo_release(&topo);
}
END_TEST

/* A pipeline receive is posted where Megatron posts it: after the compute
 * before it (1F1B's batched send/receive and device synchronise,
 * DeepSpeed's instructions in order), in the interleaved steady state a
 * backward's before the forward before it, and with overlap.pp
 * (interleaved only) after the previous compute of its direction, so its
 * slice is the wait for the data, not the whole time since the previous
 * receive. Found by an audit: a balanced 1F1B plan's receive tracks were
 * busy all iteration (0.931 of it). Here rep 0's receive slices of a 1F1B
 * plan take under a third of the iteration on each stage (0.098 and
 * 0.056), and interleaved ones more with overlap.pp, posted earlier (0.574
 * against 0.409 on stage 0, whose steady backwards' receives wait from
 * before the forward before them). */
START_TEST(pp_receives_posted_by_the_schedule)
{
	double frac[3][2], host[2];
	struct ts_error err = TS_ERROR_INIT;
	struct sim_compute comp;
	load_topo("dgx-h100-ndr", 1);
	sim_compute_init(&comp, &topo.cl.gpu);
	load_model_json(small_model);
	for (int k = 0; k < 3; k++) {
		struct plan p;
		struct sim_predict_opts o;
		struct sim_prediction r;
		double busy[2] = { 0, 0 };
		plan_init(&p);
		p.tp = 2;
		p.pp = 2;
		p.global_batch = 32;
		p.seq_len = 512;
		if (k > 0) {
			p.schedule = PLAN_SCHED_INTERLEAVED;
			p.virtual_stages = 2;
		}
		p.overlap_pp = k == 2;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.timeline = true;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &r);
		for (int32_t i = 0; i < r.tl->n; i++) {
			const struct sim_slice *sl = &r.tl->s[i];
			int rep = -1, st = -1;
			if (sl->track % SIM_TL_PER == WL_S_PP_RECV &&
			    sscanf(r.tl->track[sl->track], "rep %d stage %d", &rep, &st) == 2 &&
			    rep == 0 && st >= 0 && st < 2)
				busy[st] += sl->t1_s - sl->t0_s;
		}
		for (int st = 0; st < 2; st++) {
			frac[k][st] = busy[st] / r.iteration_time_s;
			ck_assert_msg(k > 0 || frac[k][st] < 1.0 / 3,
				      "case %d, stage %d: receives %.3f of the iteration", k, st,
				      frac[k][st]);
		}
		sim_prediction_release(&r);
	}
	/* stage 0's, whose receives wait the longest: a steady backward's
	 * from before the forward before it (0.077 when posted after it),
	 * with overlap.pp from the compute of its direction before (0.945
	 * when posted as soon as the one before it was in) */
	ck_assert_msg(frac[1][0] > 0.3 && frac[2][0] < 0.8 && frac[2][0] > frac[1][0],
		      "stage 0: interleaved %.3f, with overlap.pp %.3f", frac[1][0], frac[2][0]);
	/* with overlap.pp the host does not wait for the receives: a
	 * host-bound plan (llama3-8b, pp 8, v 2, sequences of 512) waits
	 * 0.0067 s for its host against 0.0438 without the overlap (0.0311
	 * while the host waited for each receive) */
	ck_assert_msg(model_load(&model, "llama3-8b", &err) == 0, "%s", err.msg);
	for (int k = 0; k < 2; k++) {
		struct plan p;
		struct sim_predict_opts o;
		struct sim_prediction r;
		plan_init(&p);
		p.pp = 8;
		p.schedule = PLAN_SCHED_INTERLEAVED;
		p.virtual_stages = 2;
		p.seq_len = 512;
		p.global_batch = 16;
		p.overlap_pp = k;
		resolve(&p);
		sim_predict_opts_init(&o);
		o.fidelity = SIM_ANALYTIC;
		o.compute = &comp; /* the defaults: the host's 55 us an op */
		run(&p, &o, &r);
		host[k] = r.bd.host_s;
		sim_prediction_release(&r);
	}
	ck_assert_msg(host[0] > 0.01 && host[1] < 0.3 * host[0],
		      "host waits %.4f s, %.4f s with overlap.pp", host[0], host[1]);
}
END_TEST

START_TEST(traces_are_valid)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	char jpath[] = "/tmp/ts_trace_XXXXXX", spath[] = "/tmp/ts_svg_XXXXXX";
	char *text = NULL;
	size_t len;
	cJSON *root, *ev, *e;
	int n = 0, slices = 0, nmeta = 0, nproc = 0, ntp = 0, nflows = 0;
	struct flow_ev *fl;
	int fd1 = mkstemp(jpath), fd2 = mkstemp(spath);
	struct xslice *xs;
	double act, pp_bytes[3] = { 0, 0, 0 };
	const char *tp_pick[2];
	ck_assert(fd1 >= 0 && fd2 >= 0);
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.global_batch = 8;
	p.seq_len = 512;
	p.overlap_dp = true; /* DP buckets beside the backward */
	p.bucket_bytes = 4e6;
	resolve(&p);
	sim_predict_opts_init(&o);
	o.timeline = true;
	run(&p, &o, &r);
	act = (double)p.micro_batch * p.seq_len * model.hidden * 2; /* a bf16 activation */
	{ /* NCCL's pick for the TP pair (GPUs 0 and 1) at that size */
		int32_t pair[2] = { 0, 1 };
		struct sim_coll_spec cs;
		enum sim_algo a;
		enum sim_proto pr;
		sim_coll_spec_init(&cs);
		cs.op = SIM_OP_ALLREDUCE;
		cs.size_bytes = act;
		cs.nranks = 2;
		cs.ranks = pair;
		ck_assert_int_eq(sim_coll_choose(&topo, &cs, &a, &pr, &err), 0);
		tp_pick[0] = sim_algo_name(a);
		tp_pick[1] = sim_proto_name(pr);
	}
	xs = malloc((size_t)r.tl->n * sizeof(*xs));
	fl = malloc(2 * (size_t)r.tl->n * sizeof(*fl));
	ck_assert_ptr_nonnull(xs);
	ck_assert_ptr_nonnull(fl);
	ck_assert_msg(sim_trace_write_json(&r, jpath, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(sim_trace_write_svg(&r, spath, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(fileio_read_all(jpath, 1 << 28, &text, &len, &err), 0);
	root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	ev = cJSON_GetObjectItem(root, "traceEvents");
	ck_assert(cJSON_IsArray(ev));
	cJSON_ArrayForEach(e, ev) {
		const cJSON *ph = cJSON_GetObjectItem(e, "ph");
		n++;
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "name")));
		ck_assert(cJSON_IsString(ph));
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "pid")));
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "tid")));
		if (!strcmp(ph->valuestring, "X")) {
			const cJSON *ts = cJSON_GetObjectItem(e, "ts"), *dur = cJSON_GetObjectItem(e, "dur");
			ck_assert(cJSON_IsNumber(ts) && cJSON_IsNumber(dur));
			ck_assert(ts->valuedouble >= 0 && dur->valuedouble >= 0);
			/* (times in whole nanoseconds) */
			ck_assert(ts->valuedouble + dur->valuedouble <= r.iteration_time_s * 1e6 + 1e-3);
			ck_assert(fabs(ts->valuedouble * 1e3 - round(ts->valuedouble * 1e3)) < 1e-3);
			ck_assert_int_lt(slices, r.tl->n);
			xs[slices].pid = cJSON_GetObjectItem(e, "pid")->valueint;
			xs[slices].tid = cJSON_GetObjectItem(e, "tid")->valueint;
			xs[slices].t0 = ts->valuedouble;
			xs[slices].t1 = ts->valuedouble + dur->valuedouble;
			slices++;
			check_trace_args(e, act, tp_pick, &ntp, pp_bytes);
		} else if (!strcmp(ph->valuestring, "s") || !strcmp(ph->valuestring, "f")) {
			ck_assert_int_lt(nflows, 2 * r.tl->n);
			fl[nflows].send = ph->valuestring[0] == 's';
			fl[nflows].id = cJSON_GetObjectItem(e, "id")->valuedouble;
			fl[nflows].x.pid = cJSON_GetObjectItem(e, "pid")->valueint;
			fl[nflows].x.tid = cJSON_GetObjectItem(e, "tid")->valueint;
			fl[nflows].x.t0 = cJSON_GetObjectItem(e, "ts")->valuedouble;
			nflows++;
		} else {
			ck_assert_str_eq(ph->valuestring, "M");
			if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "process_name"))
				nproc++;
			else
				nmeta++;
		}
	}
	/* the format's metadata: the iteration (found by review: under the
	 * sync modes the timeline is longer and the trace did not say) */
	{
		const cJSON *od = cJSON_GetObjectItem(root, "otherData");
		ck_assert(cJSON_IsObject(od));
		ck_assert_double_eq_tol(cJSON_GetObjectItem(od, "iteration_time_s")->valuedouble,
					r.iteration_time_s, 1e-12);
	}
	ck_assert_int_gt(slices, 100);
	ck_assert_int_gt(ntp, 0);
	/* a receive carries what its send sends */
	ck_assert_double_eq(pp_bytes[0], act);
	ck_assert_double_eq(pp_bytes[1], act);
	ck_assert_double_gt(pp_bytes[2], 0); /* (slices of the tied embeddings' exchange seen) */
	/* a named thread per track with work, none for a stream the plan
	 * never uses (a dense model's MoE dispatch stream; found by review:
	 * an empty row per rank) */
	{
		int used = 0;
		for (int32_t t = 0; t < r.tl->ntracks; t++) {
			bool any = false;
			for (int32_t i = 0; i < r.tl->n && !any; i++)
				any = r.tl->s[i].track == t;
			used += any;
		}
		ck_assert_int_lt(used, r.tl->ntracks);
		ck_assert_int_eq(nmeta, used);
		/* a named process per representative (found by review: none) */
		ck_assert_int_eq(nproc, r.tl->ntracks / SIM_TL_PER);
	}
	/* one op at a time per track: Perfetto nests the X slices of a thread
	 * and rejects partial overlaps */
	qsort(xs, (size_t)slices, sizeof(*xs), cmp_xslice);
	for (int i = 1; i < slices; i++)
		if (xs[i].pid == xs[i - 1].pid && xs[i].tid == xs[i - 1].tid)
			ck_assert_msg(xs[i].t0 >= xs[i - 1].t1 - 1e-9, /* (ends meet exactly) */
				      "track %d/%d: slice at %.6f us starts before %.6f us", xs[i].pid,
				      xs[i].tid, xs[i].t0, xs[i - 1].t1);
	check_flows(fl, nflows, xs, slices);
	free(fl);
	free(xs);
	cJSON_Delete(root);
	free(text);
	ck_assert_int_eq(fileio_read_all(spath, 1 << 28, &text, &len, &err), 0);
	ck_assert_ptr_nonnull(strstr(text, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	ck_assert_ptr_nonnull(strstr(text, "viewBox=\"0 0 "));
	ck_assert_ptr_null(strstr(text, "micro -1")); /* (not of a micro-batch: said by none) */
	ck_assert_ptr_nonnull(strstr(text, "</svg>\n"));
	{ /* well-formed enough: every <rect ...> is closed */
		int open = 0, close = 0;
		for (const char *s = text; (s = strstr(s, "<rect")); s++)
			open++;
		for (const char *s = text; (s = strstr(s, "</rect>")); s++)
			close++;
		ck_assert_int_eq(open, close);
		ck_assert_int_eq(svg_ops(text, NULL), r.tl->n);
		ck_assert_ptr_null(strstr(text, "moe dispatch"));
		/* an arrow per pipeline transfer, as the JSON's flow events */
		open = 0;
		for (const char *s = text; (s = strstr(s, "<line ")); s++)
			open++;
		ck_assert_int_eq(open, nflows / 2);
		ck_assert_ptr_nonnull(strstr(text, tp_pick[1])); /* (the pick, in the titles) */
	}
	free(text);
	{
		/* the analytic level runs each collective as NCCL's same pick (per
		 * group, op and size, as the flow level) */
		struct sim_prediction ra;
		int same = 0;
		o.fidelity = SIM_ANALYTIC;
		run(&p, &o, &ra);
		for (int32_t i = 0; i < ra.tl->n; i++) {
			const struct sim_slice *a = &ra.tl->s[i];
			if (a->coll < 0 || a->coll == WL_C_P2P)
				continue;
			ck_assert_int_gt(a->algo, 0);
			for (int32_t j = 0; j < r.tl->n; j++) {
				const struct sim_slice *f = &r.tl->s[j];
				if (strcmp(f->name, a->name) || f->bytes != a->bytes)
					continue;
				ck_assert_msg(f->algo == a->algo && f->proto == a->proto, "%s", a->name);
				same++;
				break;
			}
		}
		ck_assert_int_gt(same, ntp);
		sim_prediction_release(&ra);
		o.fidelity = SIM_FLOW;
	}
	sim_prediction_release(&r);
	/* every send takes no time under --free-comm: no arrow there (found
	 * by review: midpoints put "f" 1 ns before "s"), and nothing runs as
	 * any algorithm; but the tied embedding's sends, which wait for
	 * their receivers to enter the exchange (a rendezvous, not
	 * communication) */
	o.free_comm = true;
	run(&p, &o, &r);
	ck_assert_msg(sim_trace_write_json(&r, jpath, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(fileio_read_all(jpath, 1 << 28, &text, &len, &err), 0);
	root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	nflows = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "traceEvents")) {
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
		bool tied = false;
		if (strcmp(ph, "s") && strcmp(ph, "f")) {
			ck_assert(!cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "algorithm"));
			continue;
		}
		for (int32_t i = 0; i < r.tl->n && !tied; i++)
			tied = r.tl->s[i].flow == (int64_t)cJSON_GetObjectItem(e, "id")->valuedouble &&
			       strstr(r.tl->s[i].name, "embedding grad");
		ck_assert_msg(tied, "an arrow under --free-comm");
		nflows++;
	}
	ck_assert_int_le(nflows, 8); /* both ends' sends of the units simulated */
	cJSON_Delete(root);
	free(text);
	sim_prediction_release(&r);
	topo_release(&topo);
	remove(jpath);
	remove(spath);
}
END_TEST

/* dp 72 (one DP group over more than 64 ranks) on 9 nodes of cluster with
 * DP buckets of `bucket` bytes, overlapped: flow, memoised and analytic
 * into r[0..2], with their timelines, which have the same slices. */
static void run_large_dp(const char *cluster, double bucket, struct sim_prediction r[3])
{
	struct plan p;
	struct sim_predict_opts o;
	load_topo(cluster, 9);
	load_model_json(small_model);
	plan_init(&p);
	p.global_batch = 72;
	p.seq_len = 256;
	p.overlap_dp = true;
	p.bucket_bytes = bucket;
	resolve(&p);
	for (int k = 0; k < 3; k++) {
		sim_predict_opts_init(&o);
		o.timeline = true;
		o.memo = k == 1;
		o.fidelity = k == 2 ? SIM_ANALYTIC : SIM_FLOW;
		run(&p, &o, &r[k]);
		ck_assert_int_eq(r[k].tl->n, r[0].tl->n);
	}
}

/* A collective's pick in the trace over more than 64 ranks (the
 * steady-state ring, or NCCL's tree where its model wins: small overlapped
 * buckets) and under --memo 1 and the analytic level, alike: each slice
 * says what its time was priced as. */
START_TEST(trace_picks_large_groups)
{
	struct sim_prediction r[3];
	int algos[SIM_ALGO_COUNT] = { 0 };
	run_large_dp("dgx-h100-ndr", 1e6, r); /* small buckets, where the tree wins */
	for (int32_t i = 0; i < r[0].tl->n; i++) {
		const struct sim_slice *a = &r[0].tl->s[i];
		if (a->coll < 0 || a->coll == WL_C_P2P)
			continue;
		ck_assert_int_eq(a->dim, WL_D_DP);
		ck_assert_msg(a->algo == SIM_ALGO_RING || a->algo == SIM_ALGO_TREE, "%d", a->algo);
		if (a->algo == SIM_ALGO_RING)
			ck_assert_int_eq(a->proto, SIM_PROTO_SIMPLE);
		algos[a->algo]++;
		for (int k = 1; k < 3; k++) {
			ck_assert_int_eq(r[k].tl->s[i].algo, a->algo);
			ck_assert_int_eq(r[k].tl->s[i].proto, a->proto);
		}
	}
	ck_assert_int_gt(algos[SIM_ALGO_TREE], 0);
	for (int k = 0; k < 3; k++)
		sim_prediction_release(&r[k]);
	topo_release(&topo);
}
END_TEST

/* Over more than 64 ranks of H100 nodes (NVLink SHARP), large buckets
 * take NCCL's NVLSTree, priced by its model (sim_nvls_tree_model): the
 * ring's bandwidth time, its latency of log2(nodes) tree hops; alike at
 * flow level, memoised and analytic (2026-12-06: only the ring or the
 * tree were considered there). A100 nodes have no NVLS. */
START_TEST(large_groups_take_nvls_tree)
{
	struct sim_prediction r[3];
	int nv = 0;
	run_large_dp("dgx-h100-ndr", 200e6, r);
	for (int32_t i = 0; i < r[0].tl->n; i++) {
		const struct sim_slice *a = &r[0].tl->s[i];
		if (a->coll < 0 || a->coll == WL_C_P2P)
			continue;
		nv += a->algo == SIM_ALGO_NVLSTREE;
		for (int k = 1; k < 3; k++)
			ck_assert_int_eq(r[k].tl->s[i].algo, a->algo);
	}
	ck_assert_int_gt(nv, 0);
	for (int k = 0; k < 3; k++)
		sim_prediction_release(&r[k]);
	topo_release(&topo);
	run_large_dp("dgx-a100-hdr", 200e6, r);
	for (int k = 0; k < 3; k++) {
		for (int32_t i = 0; i < r[k].tl->n; i++)
			ck_assert_int_ne(r[k].tl->s[i].algo, SIM_ALGO_NVLSTREE);
		sim_prediction_release(&r[k]);
	}
	topo_release(&topo);
}
END_TEST

START_TEST(too_many_gpus_infeasible)
{
	struct plan p;
	struct sim_predict_opts o;
	struct sim_prediction r;
	struct ts_error err = TS_ERROR_INIT;
	load_topo("dgx-h100-ndr", 2);
	load_model_json(small_model);
	plan_init(&p);
	p.tp = 2;
	p.pp = 2;
	p.dp = 8;
	p.global_batch = 16;
	p.seq_len = 512;
	sim_predict_opts_init(&o);
	ck_assert_int_eq(sim_predict(&topo, &model, &p, &o, &r, &err), TS_EINFEASIBLE);
	ck_assert_ptr_nonnull(strstr(err.msg, "32 GPUs"));
	topo_release(&topo);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("predict_exec");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300); /* the sanitizer build, two tests at a time on 2 cores */
	tcase_add_loop_test(tc, bubble_closed_forms, 0, 3);
	tcase_add_test(tc, interleaved_short_group_order);
	tcase_add_test(tc, folded_exact_dense_16);
	tcase_add_test(tc, folded_exact_moe_64);
	tcase_add_test(tc, folded_exact_random_placement);
	tcase_add_test(tc, folded_exact_random_placement_ep);
	tcase_add_test(tc, fluid_ring_matches_analytic);
	tcase_add_test(tc, big_allreduce_tree);
	tcase_add_test(tc, flow_frees_finished_collectives);
	tcase_add_test(tc, fluid_ring_counts_as_collective);
	tcase_add_test(tc, tied_exchange_waits_for_both_ends);
	tcase_add_test(tc, overlap_slowdown_only_while_overlapped);
	tcase_add_test(tc, overlap_slowdown_spares_host_work);
	tcase_add_test(tc, host_wait_is_its_own_part);
	tcase_add_test(tc, memo_keeps_each_send_peer);
	tcase_add_test(tc, memo_scales_alltoallv);
	tcase_add_test(tc, memo_runs_overlaps_live);
	tcase_add_test(tc, dp_bucket_closes_mid_layer);
	tcase_add_test(tc, topk_memory_is_the_gathered_bytes);
	tcase_add_test(tc, sprayed_pipeline_sends);
	tcase_add_test(tc, image_variance_slows);
	tcase_add_test(tc, images_fit_in_the_sequence);
	tcase_add_test(tc, fold_scores_units_by_time);
	tcase_add_test(tc, vision_tp_traffic_follows_images);
	tcase_add_test(tc, image_counts_keep_their_mean);
	tcase_add_test(tc, model_flops_count_the_drawn_images);
	tcase_add_test(tc, vision_linear_ops_follow_tokens);
	tcase_add_test(tc, vision_patch_embedding_whole_on_tp_ranks);
	tcase_add_test(tc, expert_load_scales_the_token_dimension);
	tcase_add_test(tc, expert_gemm_rows_spread);
	tcase_add_test(tc, expert_gemm_kernel_scope);
	tcase_add_test(tc, sequential_experts_one_by_one);
	tcase_add_test(tc, default_dispatch_bounds_expert_loop);
	tcase_add_test(tc, dense_layer_element_ops);
	tcase_add_test(tc, qk_kernels_before_attention);
	tcase_add_test(tc, mla_qk_kernels_before_attention);
	tcase_add_test(tc, flash_attention_shape);
	tcase_add_test(tc, vision_attention_shape);
	tcase_add_test(tc, tp_overlap_chunks_cost_their_kernels);
	tcase_add_test(tc, sprayed_large_dp_ring);
	tcase_add_test(tc, vision_comm_bytes_follow_the_draws);
	tcase_add_test(tc, flash_attention_executes_causal_flops);
	tcase_add_test(tc, attention_mask_kinds);
	tcase_add_test(tc, zero_offload_costs_host_time);
	tcase_add_test(tc, zero_offload_moves_the_shard_each_micro_batch);
	tcase_add_test(tc, tied_embedding_grads_exchanged);
	tcase_add_test(tc, breakdown_follows_critical_path);
	tcase_add_test(tc, zero2_reduces_every_micro_batch);
	tcase_add_test(tc, zero3_gathers_every_parameter);
	tcase_add_test(tc, host_dispatch_bounds_small_ops);
	tcase_add_test(tc, critical_stage_follows_the_path);
	tcase_add_test(tc, tp_grad_overlap_hides_wgrad);
	tcase_add_test(tc, analytic_counts_concurrent_groups);
	tcase_add_test(tc, analytic_groups_hash_apart);
	tcase_add_test(tc, pp_scatter_gather_splits_sends);
	tcase_add_test(tc, unfused_grad_accumulation_adds_per_tensor);
	tcase_add_test(tc, bf16_compression_halves_dp);
	tcase_add_test(tc, local_sgd_divides_dp);
	tcase_add_test(tc, relaxed_sync_keeps_cp_reduction);
	tcase_add_test(tc, topk_and_async_move_time);
	tcase_add_test(tc, no_bubble_without_pipeline);
	tcase_add_test(tc, overlap_dp_breakdown_folded_as_exact);
	tcase_add_test(tc, workload_flops_match_model);
	tcase_add_test(tc, async_waits_for_busiest_reduction);
	tcase_add_test(tc, tied_embedding_exchange_is_pp);
	tcase_add_test(tc, topk_overlap_no_bubble);
	tcase_add_test(tc, async_reduction_excludes_waits);
	tcase_add_test(tc, spray_weak_scaling_flat);
	tcase_add_loop_test(tc, workload_flops_latent_attention, 0, 2);
	tcase_add_test(tc, shared_experts_in_workload);
	tcase_add_test(tc, pipeline_receive_feeds_its_micro_batch);
	tcase_add_test(tc, consumers_wait_for_communication);
	tcase_add_test(tc, tp_overlap_pipelines_in_chunks);
	tcase_add_test(tc, moe_counts_sync_the_host);
	tcase_add_test(tc, ep_overlap_hides_alltoalls);
	tcase_add_test(tc, ep_overlap_interleaved);
	tcase_add_test(tc, shared_expert_overlap_hides);
	tcase_add_test(tc, allgather_dispatcher_traffic);
	tcase_add_loop_test(tc, shared_expert_overlap_deps, 0, 2);
	tcase_add_test(tc, virtual_stage_layout);
	tcase_add_test(tc, ep_overlap_images_exact);
	tcase_add_test(tc, folded_units_on_network);
	tcase_add_test(tc, ecmp_paths_kept_per_group);
	tcase_add_test(tc, folded_dp_groups_in_turn);
	tcase_add_test(tc, cp_positions_hashed_exact);
	tcase_add_test(tc, folded_gather_after_pp_send);
	tcase_add_test(tc, folded_tied_embedding_slices);
	tcase_add_test(tc, folded_tied_breakdown_split);
	tcase_add_test(tc, sync_zero3_hashed_exact);
	tcase_add_test(tc, topk_expert_allgather_not_gated);
	tcase_add_test(tc, jitter_folded_ranks_draw_their_own);
	tcase_add_test(tc, jitter_every_unit_draws);
	tcase_add_test(tc, jitter_stood_for_units_draw);
	tcase_add_test(tc, jitter_dp_ops_their_own);
	tcase_add_test(tc, jitter_meets_by_group);
	tcase_add_test(tc, overlap_dp_hashed_rings_exact);
	tcase_add_test(tc, dp_rings_hashed_exact);
	tcase_add_test(tc, moe_overlap_dp_exact_one_leaf);
	tcase_add_test(tc, unalike_units_hashed_exact);
	tcase_add_test(tc, zero2_images_fold);
	tcase_add_test(tc, linear_placement_no_fallback);
	tcase_add_test(tc, moe_dispatches_the_tp_shard);
	tcase_add_test(tc, jitter_keeps_the_mean_op_time);
	tcase_add_test(tc, capacity_keeps_whole_tokens);
	tcase_add_test(tc, zero2_shard_add_over_expert_dp);
	tcase_add_test(tc, whole_experts_etp1);
	tcase_add_test(tc, expert_imbalance_follows_dirichlet);
	tcase_add_test(tc, expert_imbalance_exact_matches_folded);
	tcase_add_test(tc, sp_backward_regathers_inputs);
	tcase_add_test(tc, dp_buckets_on_stage_zero_only);
	tcase_add_test(tc, fp8_gathers_16bit_params);
	tcase_add_test(tc, kv_replicated_consistently);
	tcase_add_test(tc, full_recompute_reruns_the_encoder);
	tcase_add_test(tc, param_gather_overlaps_forward);
	tcase_add_test(tc, vision_backward_hides_allreduce);
	tcase_add_test(tc, encoder_block_elementwise_ops);
	tcase_add_test(tc, fp32_activations_move_twice_the_bytes);
	tcase_add_test(tc, producers_precede_their_traffic);
	tcase_add_test(tc, cp_exchanges_per_pass);
	tcase_add_test(tc, cp_ring_hides_the_exchange);
	tcase_add_test(tc, replicated_grads_count_qk_norms);
	tcase_add_test(tc, timeline_slices_bounded_before_the_run);
	tcase_add_test(tc, trace_written_as_it_goes);
	tcase_add_test(tc, pp_receives_posted_by_the_schedule);
	tcase_add_test(tc, traces_are_valid);
	tcase_add_test(tc, trace_picks_large_groups);
	tcase_add_test(tc, large_groups_take_nvls_tree);
	tcase_add_test(tc, too_many_gpus_infeasible);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}

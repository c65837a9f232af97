/* bench_kernels.c: the compute model (sim/compute.c) against kernels timed
 * on a real GPU.
 *
 * Reads the CSV that validate/kernels/measure_kernels.py writes on a GPU
 * machine (one row per kernel: GEMMs of transformer shapes in the three
 * orientations of training, batched and grouped expert GEMMs, element-wise
 * kernels from 16 KB to 1 GB, fused attention of three backends, the fused
 * AdamW step, the per-kernel cost in a CUDA graph), predicts each kernel
 * with sim_compute_time_s for the GPU of a cluster preset, and prints the
 * error by kind. --fit fits the compute model's efficiency parameters to
 * the rows (GSL gsl_multifit_nlinear, Huber loss on log time ratios) and
 * --write saves them as a calibration file (`--calibration FILE`).
 *
 *   bench_kernels [--gpu PRESET] [--calibration FILE|none] [--fit]
 *                 [--write FILE] [--rows] [CSV...]
 *
 * Defaults: the h200-ndr preset's GPU and the two H200 runs in
 * validate/data/ (2026-12-04). */
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "common/error.h"
#include "common/fileio.h"
#include "common/json.h"
#include "sim/compute.h"
#include "topo/topo.h"

#define MAX_ROWS 8192
#define NPAR 13
#define HUBER 0.05 /* on ln(pred / meas): about 5 % */

enum kind {
	K_GEMM,      /* bf16 GEMMs and batched GEMMs (cuBLAS) */
	K_TF32,      /* fp32 GEMMs on TF32 tensor cores */
	K_GROUPED,   /* grouped expert GEMMs (torch._grouped_mm), equal or ragged rows */
	K_GROUPED_WG,/* their weight gradients: tokens ragged in k (reported, not fitted) */
	K_BW,        /* copy and add: the bandwidth-bound reference kernels */
	K_ELEM,      /* other element-wise kernels (reported, not fitted: kernel-specific passes) */
	K_OPT,       /* fused AdamW step */
	K_LAUNCH,    /* a tiny kernel in a CUDA graph: the per-kernel cost */
	K_ATTN_FWD,  /* fused attention forward, the backend that Transformer Engine uses on Hopper (cuDNN) */
	K_ATTN_BWD,  /* its backward (forward+backward less forward) */
	K_ATTN_OTHER,/* the other backends (reported, not fitted) */
	K_DISPATCH,  /* eager host dispatch per op (reported against dispatch_us) */
	K_COUNT
};

static const char *const kind_name[K_COUNT] = {
	"gemm bf16", "gemm tf32", "grouped gemm", "grouped gemm wgrad", "copy/add", "other element-wise", "adamw step",
	"launch (graph)",
	"attention fwd (cudnn)", "attention bwd (cudnn)", "attention (other)", "host dispatch",
};

struct krow {
	enum kind kind;
	char section[24], op[48], extra[48];
	struct sim_op_desc d;
	double meas_s, pred_s;
	int file, line;
};

struct set {
	int n;
	struct krow r[MAX_ROWS];
};

static const char *src_rel(const char *rel, char *buf, size_t n)
{
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s", __FILE__);
	snprintf(buf, n, "%s/%s", dirname(tmp), rel);
	return buf;
}

static int fail(const char *path, int line, const char *what)
{
	fprintf(stderr, "bench_kernels: %s:%d: %s\n", path, line, what);
	return 2;
}

/* Split a CSV line into at most max fields; the last takes the rest. */
static int split(char *s, char **f, int max)
{
	int n = 0;
	f[n++] = s;
	for (char *p = s; *p && n < max; p++)
		if (*p == ',') {
			*p = 0;
			f[n++] = p + 1;
		}
	char *nl = strpbrk(f[n - 1], "\r\n");
	if (nl)
		*nl = 0;
	return n;
}

static bool num(const char *s, double *v)
{
	char *end;
	*v = strtod(s, &end);
	return end != s && *end == 0 && isfinite(*v);
}

static const char *const columns =
	"section,op,dtype,m,n,k,batch,m_sd,flops,bytes,reps,sets,t_med_us,t_min_us,t_max_us,extra";

/* Bounds on the CSV's numbers (found by review: shapes past int64 were
 * cast undefined, 1e18-element GEMMs accepted): no kernel timed on one GPU
 * comes near them. */
#define MAX_DIM 1e9     /* m, n, k, elements */
#define MAX_BATCH 1e7   /* batch, count */
#define MAX_WORK 1e16   /* flops, bytes */
#define MIN_TIME_US 1e-3
#define MAX_TIME_US 1e9

/* Read one measure_kernels.py CSV into s (file: its index for messages). */
static int load(struct set *s, const char *path, int file)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int ln = 0, first = s->n;
	if (!f) {
		fprintf(stderr, "bench_kernels: %s: cannot open\n", path);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *fl[16] = { NULL };
		double v[16];
		ln++;
		if (!strchr(line, '\n') && !feof(f)) {
			fclose(f);
			return fail(path, ln, "line longer than 1023 characters");
		}
		if (ln == 1) {
			if (strncmp(line, columns, strlen(columns))) {
				fclose(f);
				return fail(path, 1, "not a measure_kernels.py CSV (header differs)");
			}
			continue;
		}
		if (split(line, fl, 16) < 15) {
			fclose(f);
			return fail(path, ln, "fewer than 15 columns");
		}
		for (int i = 3; i < 15; i++)
			if (!num(fl[i], &v[i]) || v[i] < 0) {
				fclose(f);
				return fail(path, ln, "a numeric column is not a number >= 0");
			}
		if (v[3] > MAX_DIM || v[4] > MAX_DIM || v[5] > MAX_DIM || v[6] > MAX_BATCH ||
		    v[7] > MAX_DIM || v[8] > MAX_WORK || v[9] > MAX_WORK) {
			fclose(f);
			return fail(path, ln, "a shape above 1e9, a batch above 1e7 or work above 1e16");
		}
		if (v[12] < MIN_TIME_US || v[12] > MAX_TIME_US) {
			fclose(f);
			return fail(path, ln, "t_med_us must be in [0.001, 1e9]");
		}
		if (s->n >= MAX_ROWS) {
			fclose(f);
			return fail(path, ln, "more rows than the bench holds");
		}
		struct krow *r = &s->r[s->n];
		memset(r, 0, sizeof(*r));
		snprintf(r->section, sizeof(r->section), "%s", fl[0]);
		snprintf(r->op, sizeof(r->op), "%s", fl[1]);
		snprintf(r->extra, sizeof(r->extra), "%s", fl[15] ? fl[15] : "");
		r->file = file;
		r->line = ln;
		r->meas_s = v[12] * 1e-6;
		struct sim_op_desc *d = &r->d;
		d->dtype_bytes = strcmp(fl[2], "tf32") && strcmp(fl[2], "fp32") ? 2 : 4;
		d->m = (int64_t)v[3];
		d->n = (int64_t)v[4];
		d->k = (int64_t)v[5];
		d->batch = v[6] >= 1 ? (int64_t)v[6] : 1;
		const char *sec = r->section;
		if (!strncmp(sec, "gemm", 4) || !strcmp(sec, "bmm") || !strcmp(sec, "grouped") ||
		    !strcmp(sec, "grouped_wgrad")) {
			d->cls = SIM_OP_GEMM;
			r->kind = !strcmp(sec, "gemm_tf32")     ? K_TF32 :
				  !strcmp(sec, "grouped")       ? K_GROUPED :
				  !strcmp(sec, "grouped_wgrad") ? K_GROUPED_WG :
								  K_GEMM;
			if (r->kind == K_GROUPED_WG) {
				/* the weight's m x n an expert, k the tokens an
				 * expert on average (from the FLOPs: the CSV's k is
				 * rounded down); their spread is in k, which no
				 * tile rounds */
				double mean = v[8] / (2.0 * (double)d->m * (double)d->n * (double)d->batch);
				d->k = (int64_t)llround(mean);
				d->grouped = true;
			}
			if (r->kind == K_GROUPED) {
				/* the CSV's m is total / groups rounded down: the
				 * mean from the FLOPs instead */
				double mean = v[8] / (2.0 * (double)d->n * (double)d->k * (double)d->batch);
				d->m = (int64_t)llround(mean);
				d->m_sd = v[7];
				d->grouped = true;
			}
			if (d->m < 1 || d->n < 1 || d->k < 1) {
				fclose(f);
				return fail(path, ln, "a GEMM needs m, n, k >= 1");
			}
		} else if (!strcmp(sec, "elementwise")) {
			d->cls = SIM_OP_ELEMENTWISE;
			d->bytes = v[9];
			r->kind = !strcmp(r->op, "copy") || !strcmp(r->op, "add") ? K_BW : K_ELEM;
		} else if (!strcmp(sec, "optimizer")) {
			d->cls = SIM_OP_OPTIMIZER;
			d->bytes = v[9];
			d->flops = 10.0 * v[3]; /* as the workload's Adam op: 10 FLOP a parameter */
			r->kind = K_OPT;
		} else if (!strcmp(sec, "launch")) {
			d->cls = SIM_OP_ELEMENTWISE;
			d->bytes = v[9];
			r->kind = strstr(r->op, "graph") ? K_LAUNCH : K_DISPATCH;
		} else if (!strcmp(sec, "attention")) {
			bool cudnn = !strncmp(r->op, "cudnn.", 6);
			/* the CSV's m, n, k, batch: sequence, head dim, heads,
			 * sequences; the model's: queries, keys a query attends
			 * (the FLOPs' average: half a causal span), head dim,
			 * heads x sequences */
			d->cls = SIM_OP_ATTN;
			d->flops = v[8];
			d->bytes = v[9];
			d->masked = !strncmp(r->extra, "causal", 6); /* "causal kv8": GQA */
			d->m = (int64_t)v[3];
			d->n = d->masked ? (int64_t)v[3] / 2 : (int64_t)v[3];
			d->k = (int64_t)v[4];
			d->batch = (int64_t)(v[5] * v[6]);
			if (strstr(r->op, ".fwdbwd")) {
				/* backward = forward+backward less the forward of the
				 * same case, the row before it in the file */
				char fwd_op[sizeof(r->op)];
				snprintf(fwd_op, sizeof(fwd_op), "%.*s.fwd",
					 (int)(strstr(r->op, ".fwdbwd") - r->op), r->op);
				if (s->n == first || strcmp(s->r[s->n - 1].section, "attention") ||
				    s->r[s->n - 1].d.m != d->m || s->r[s->n - 1].d.batch != d->batch ||
				    s->r[s->n - 1].d.k != d->k || s->r[s->n - 1].d.n != d->n ||
				    strcmp(s->r[s->n - 1].op, fwd_op) || strcmp(s->r[s->n - 1].extra, r->extra)) {
					fclose(f);
					return fail(path, ln, "forward+backward row without its forward row before it");
				}
				const struct krow *fw = &s->r[s->n - 1];
				r->meas_s -= fw->meas_s;
				d->flops -= fw->d.flops;
				d->bytes -= fw->d.bytes;
				if (!(r->meas_s > 0) || !(d->flops > 0) || !(d->bytes >= 0)) {
					fclose(f);
					return fail(path, ln, "forward+backward not above its forward (time, "
							      "FLOPs or bytes)");
				}
				d->backward = true;
				r->kind = cudnn ? K_ATTN_BWD : K_ATTN_OTHER;
			} else {
				r->kind = cudnn ? K_ATTN_FWD : K_ATTN_OTHER;
			}
		} else {
			fclose(f);
			return fail(path, ln, "unknown section");
		}
		s->n++;
	}
	bool rerr = ferror(f);
	fclose(f);
	if (rerr)
		return fail(path, ln, "cannot read (a directory?)");
	if (ln == 0)
		return fail(path, 1, "empty file");
	if (s->n == first)
		return fail(path, ln, "no rows");
	return 0;
}

/* ---- prediction and statistics --------------------------------------------------- */

static void predict(struct set *s, const struct sim_compute *c)
{
	for (int i = 0; i < s->n; i++) {
		struct krow *r = &s->r[i];
		r->pred_s = r->kind == K_DISPATCH ? c->dispatch_s : sim_compute_time_s(c, &r->d);
	}
}

/* The kernels each parameter is fitted to, in two stages: first GEMMs
 * (gemm_eff_max, gemm_half_flops, gemm_bound_mix), TF32 GEMMs
 * (fp32_gemm_ratio), copy and add (hbm_eff, hbm_half_bytes) and cuDNN's
 * fused attention (attn_eff, attn_tile_overhead, attn_bwd_ratio,
 * attn_fixed_s); then,
 * with those held, the grouped GEMMs (grouped_gemm_eff, grouped_tile_k):
 * another kernel, which must not pull cuBLAS's numbers (fitted together,
 * they moved gemm_bound_mix 0.36 -> 0.43 and hbm_eff 0.88 -> 0.85).
 * launch_us is the graph's tiny kernel, measured directly. The rest are
 * predicted with those numbers: other element-wise kernels, the AdamW
 * step, the other attention backends. -1: not fitted. */
#define NSTAGE 2
static int kind_stage(enum kind k)
{
	if (k == K_GEMM || k == K_TF32 || k == K_BW || k == K_ATTN_FWD || k == K_ATTN_BWD)
		return 0;
	return k == K_GROUPED ? 1 : -1;
}

static bool fitted_kind(enum kind k)
{
	return kind_stage(k) >= 0;
}

static void report(const struct set *s, const char *title)
{
	printf("# %s\n", title);
	printf("%-24s %5s %10s %10s %10s %10s\n", "kind", "rows", "mean|err|", "signed", "median|e|",
	       "max|err|");
	double all = 0;
	int nall = 0;
	for (int k = 0; k < K_COUNT; k++) {
		double sum = 0, sgn = 0, mx = 0, e[MAX_ROWS];
		int n = 0;
		for (int i = 0; i < s->n; i++) {
			const struct krow *r = &s->r[i];
			if ((int)r->kind != k)
				continue;
			double x = r->pred_s / r->meas_s - 1;
			e[n++] = fabs(x);
			sum += fabs(x);
			sgn += x;
			mx = fmax(mx, fabs(x));
		}
		if (!n)
			continue;
		/* median by insertion sort: at most a few thousand rows */
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && e[j - 1] > e[j]; j--) {
				double t = e[j];
				e[j] = e[j - 1];
				e[j - 1] = t;
			}
		printf("%-24s %5d %9.2f%% %+9.2f%% %9.2f%% %9.2f%%\n", kind_name[k], n, 100 * sum / n,
		       100 * sgn / n, 100 * (n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2])),
		       100 * mx);
		if (fitted_kind((enum kind)k)) {
			all += sum;
			nall += n;
		}
	}
	printf("%-24s %5d %9.2f%%\n", "all fitted kinds", nall, 100 * all / (nall ? nall : 1));
	printf("# host dispatch: one eager torch op's host time against dispatch_us, which is per op "
	       "of the workload (1.6-2.1 eager kernels and their Python in the whole steps it was "
	       "measured on: README, MoE layers and the host on an H200); not fitted here\n");
}

static void print_rows(const struct set *s)
{
	printf("%-12s %-28s %8s %7s %7s %5s %9s %11s %11s %8s\n", "section", "op", "m", "n", "k", "batch",
	       "m_sd", "meas_us", "pred_us", "err_%");
	for (int i = 0; i < s->n; i++) {
		const struct krow *r = &s->r[i];
		printf("%-12s %-28s %8lld %7lld %7lld %5lld %9.1f %11.2f %11.2f %+8.2f %s\n", r->section,
		       r->op, (long long)r->d.m, (long long)r->d.n, (long long)r->d.k,
		       (long long)r->d.batch, r->d.m_sd, r->meas_s * 1e6, r->pred_s * 1e6,
		       100 * (r->pred_s / r->meas_s - 1), r->extra);
	}
}

/* ---- fit ----------------------------------------------------------------------------- */

/* Fitted parameters. Efficiencies (gemm_eff_max, hbm_eff, attn_eff,
 * fp32_gemm_ratio) and gemm_bound_mix as logits, 1 / (1 + exp(-x)),
 * smooth up to 1 (found by review: fmin(1, exp(x)) left a parameter past 1
 * with no gradient, and the fit stuck there reporting success); the rest
 * as logs. Each is fitted
 * only where its kernels are among the rows (held otherwise). launch_s is
 * not fitted: the tiny graph kernel's time less its HBM time (set_launch). */
static const char *const par_names[NPAR] = {
	"gemm_eff_max", "gemm_half_flops", "hbm_eff", "hbm_half_bytes", "attn_eff",
	"fp32_gemm_ratio", "attn_tile_overhead", "attn_bwd_ratio", "gemm_bound_mix",
	"grouped_gemm_eff", "grouped_tile_k", "grouped_small_eff", "attn_fixed_s",
};
static const bool par_logit[NPAR] = { true, false, true, false, true, true, false,
				       false, true, true, false, true, false };
static const int par_stage[NPAR] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0 };

struct fctx {
	struct set *s;
	struct sim_compute base;
	double x0[NPAR];  /* every parameter's value (the held ones stay) */
	int stage;        /* the stage being fitted: its parameters and rows */
	/* the free parameters and their rows: the stage's in the copy fit()
	 * solves each stage with, all stages' in fit_plan's (which the
	 * written file lists) */
	int free_par[NPAR], nfree;
	int nuse;
	int sfree[NSTAGE][NPAR], snfree[NSTAGE], snuse[NSTAGE]; /* each stage's */
};

/* Where each parameter lives in the compute model, in par_names' order. */
static const size_t par_off[NPAR] = {
	offsetof(struct sim_compute, gemm_eff_max),   offsetof(struct sim_compute, gemm_half_flops),
	offsetof(struct sim_compute, hbm_eff),        offsetof(struct sim_compute, hbm_half_bytes),
	offsetof(struct sim_compute, attn_eff),       offsetof(struct sim_compute, fp32_gemm_ratio),
	offsetof(struct sim_compute, attn_tile_overhead), offsetof(struct sim_compute, attn_bwd_ratio),
	offsetof(struct sim_compute, gemm_bound_mix), offsetof(struct sim_compute, grouped_gemm_eff),
	offsetof(struct sim_compute, grouped_tile_k), offsetof(struct sim_compute, grouped_small_eff),
	offsetof(struct sim_compute, attn_fixed_s),
};

static double *par_ref(struct sim_compute *c, int j)
{
	return (double *)((char *)c + par_off[j]);
}

/* The compute model with the free parameters (free, nfree) at x, the rest
 * as in base (found by review: writing every parameter back put the start
 * values below into held ones, so a fit without grouped rows switched the
 * grouped kernel's model on at 0.5). */
static void x_to_compute(const double *x, const struct sim_compute *base, const int *free,
			 int nfree, struct sim_compute *c)
{
	*c = *base;
	for (int k = 0; k < nfree; k++) {
		int j = free[k];
		*par_ref(c, j) = par_logit[j] ? 1 / (1 + exp(-x[j])) : exp(x[j]);
	}
}

/* Where a free parameter starts: its value, or a start inside its range
 * where the value is one the transform cannot reach (0: no tiling cost,
 * the plain roofline, no grouped kernel model). */
static double start_value(int j, double v)
{
	if (j == 6) /* (from 0.5 where it starts below) */
		return fmax(v, 0.5);
	if (j == 8) /* (from 0.25 where it starts at 0, max) */
		return v > 0 ? v : 0.25;
	if (j == 9 || j == 11) /* (from 0.5 where no grouped kernel was modelled) */
		return v > 0 ? v : 0.5;
	if (j == 10) /* (from one 64-deep k-step where it starts at 0) */
		return v > 0 ? v : 64;
	if (j == 12) /* (from a launch's 1 us where it starts at 0) */
		return v > 0 ? v : 1e-6;
	return v;
}

/* The free parameters' transformed start values into x. */
static void compute_to_x(const struct sim_compute *c, const int *free, int nfree, double *x)
{
	struct sim_compute t = *c;
	for (int k = 0; k < nfree; k++) {
		int j = free[k];
		double v = start_value(j, *par_ref(&t, j));
		x[j] = par_logit[j] ? log(fmin(v, 1 - 1e-9) / (1 - fmin(v, 1 - 1e-9))) : log(v);
	}
}

/* Grouped GEMM rows the small (ping-pong) kernel runs, or the large one:
 * grouped_small_eff's rows, or grouped_gemm_eff's (found by review:
 * grouped_gemm_eff counted as fitted on small rows alone, which it does
 * not price). */
static int n_grouped(const struct set *s, bool small)
{
	int n = 0;
	for (int i = 0; i < s->n; i++)
		n += s->r[i].kind == K_GROUPED &&
		     sim_compute_grouped_small(s->r[i].d.m, s->r[i].d.n) == small;
	return n;
}

/* Whether the rows hold kernels that determine parameter j. */
static bool par_has_rows(const struct set *s, int j)
{
	int n[K_COUNT] = { 0 };
	for (int i = 0; i < s->n; i++)
		n[s->r[i].kind]++;
	switch (j) {
	case 0:
	case 1:
	case 8: return n[K_GEMM] >= 2;
	case 2:
	case 3: return n[K_BW] >= 2;
	case 4:
	case 6: return n[K_ATTN_FWD] >= 2;
	case 5: return n[K_TF32] >= 1;
	case 7: return n[K_ATTN_BWD] >= 1 && n[K_ATTN_FWD] >= 2;
	case 9: return n_grouped(s, false) >= 1;
	case 10: return n[K_GROUPED] >= 2;
	case 11: return n_grouped(s, true) >= 1;
	case 12: return n[K_ATTN_FWD] >= 3;
	default: return false;
	}
}

/* launch_s: the tiny graph kernel's time. Its 1.5 KB stay in L2, so it
 * times the launch alone; the model charges every op hbm_half's fixed HBM
 * cost besides, which this kernel's residual shows (its data never leaves
 * L2; taking that off, as a review suggested, left launch at 0 once
 * hbm_half was fitted to cold small copies). */
static bool set_launch(const struct set *s, struct sim_compute *c)
{
	double sum = 0;
	int n = 0;
	for (int i = 0; i < s->n; i++)
		if (s->r[i].kind == K_LAUNCH) {
			sum += s->r[i].meas_s;
			n++;
		}
	if (n)
		c->launch_s = sum / n;
	return n > 0;
}

static int residuals(const gsl_vector *xv, void *data, gsl_vector *f)
{
	struct fctx *cx = data;
	struct sim_compute c;
	double x[NPAR];
	memcpy(x, cx->x0, sizeof(x));
	for (int k = 0; k < cx->nfree; k++)
		x[cx->free_par[k]] = gsl_vector_get(xv, (size_t)k);
	x_to_compute(x, &cx->base, cx->free_par, cx->nfree, &c);
	predict(cx->s, &c);
	size_t k = 0;
	for (int i = 0; i < cx->s->n; i++) {
		const struct krow *r = &cx->s->r[i];
		if (kind_stage(r->kind) != cx->stage)
			continue;
		double e = log(r->pred_s / r->meas_s);
		/* Huber on the log ratio: a few odd kernels (a 1 GB copy at 2.8
		 * TB/s where 512 MB runs at 4.2) do not pull the fit as squares
		 * would */
		if (fabs(e) > HUBER)
			e = copysign(sqrt(2 * HUBER * fabs(e) - HUBER * HUBER), e);
		gsl_vector_set(f, k++, e);
	}
	return GSL_SUCCESS;
}

/* One GSL solve from c over the free parameters; c gets the result. */
static int fit_once(struct fctx *cx, struct sim_compute *c, bool verbose)
{
	double xf[NPAR];
	cx->base = *c;
	memset(cx->x0, 0, sizeof(cx->x0));
	compute_to_x(c, cx->free_par, cx->nfree, cx->x0);
	for (int k = 0; k < cx->nfree; k++)
		xf[k] = cx->x0[cx->free_par[k]];
	gsl_vector_view xv = gsl_vector_view_array(xf, (size_t)cx->nfree);
	gsl_multifit_nlinear_fdf fdf;
	memset(&fdf, 0, sizeof(fdf));
	fdf.f = residuals;
	fdf.df = NULL; /* GSL's finite differences: the model is smooth in these but for tile choices */
	fdf.n = (size_t)cx->nuse;
	fdf.p = (size_t)cx->nfree;
	fdf.params = cx;
	gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
	fp.trs = gsl_multifit_nlinear_trs_lm;
	fp.h_df = 1e-4;
	gsl_multifit_nlinear_workspace *w =
		gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, fdf.n, fdf.p);
	if (!w) {
		fprintf(stderr, "bench_kernels: out of memory\n");
		return 1;
	}
	int info = 0;
	int rc = gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
	if (rc == GSL_SUCCESS)
		rc = gsl_multifit_nlinear_driver(200, 1e-8, 1e-8, 1e-8, NULL, NULL, &info, w);
	if (verbose)
		fprintf(stderr, "bench_kernels: fit: %s after %zu iterations (info %d), %d rows\n",
			gsl_strerror(rc), gsl_multifit_nlinear_niter(w), info, cx->nuse);
	double x[NPAR];
	memcpy(x, cx->x0, sizeof(x));
	for (int k = 0; k < cx->nfree; k++)
		x[cx->free_par[k]] = gsl_vector_get(gsl_multifit_nlinear_position(w), (size_t)k);
	x_to_compute(x, &cx->base, cx->free_par, cx->nfree, c);
	gsl_multifit_nlinear_free(w);
	/* GSL_EMAXITER / GSL_ENOPROG still leave the best position found */
	return rc == GSL_SUCCESS || rc == GSL_EMAXITER || rc == GSL_ENOPROG ? 0 : 2;
}

/* Which parameters the rows can fit; 2 (said in one line) when too few. */
static int fit_plan(struct set *s, struct fctx *cx)
{
	static const char *const stage_rows[NSTAGE] = { "GEMM, copy and attention", "grouped GEMM" };
	memset(cx, 0, sizeof(*cx));
	cx->s = s;
	for (int j = 0; j < NPAR; j++)
		if (par_has_rows(s, j))
			cx->sfree[par_stage[j]][cx->snfree[par_stage[j]]++] = j;
	for (int i = 0; i < s->n; i++)
		if (fitted_kind(s->r[i].kind))
			cx->snuse[kind_stage(s->r[i].kind)]++;
	/* a stage with fewer rows than parameters is held, said in one line
	 * (found by review: two grouped rows refused the whole fit) */
	for (int g = 0; g < NSTAGE; g++) {
		if (cx->snfree[g] && cx->snuse[g] < cx->snfree[g]) {
			fprintf(stderr, "bench_kernels: %d %s rows for %d parameters: held\n",
				cx->snuse[g], stage_rows[g], cx->snfree[g]);
			cx->snfree[g] = 0;
		}
		for (int k = 0; k < cx->snfree[g]; k++)
			cx->free_par[cx->nfree++] = cx->sfree[g][k];
		if (cx->snfree[g])
			cx->nuse += cx->snuse[g];
	}
	if (cx->nfree == 0) {
		fprintf(stderr, "bench_kernels: too few rows to fit: %d %s rows and %d %s rows\n",
			cx->snuse[0], stage_rows[0], cx->snuse[1], stage_rows[1]);
		return 2;
	}
	return 0;
}

/* The fit (after fit_plan): launch from the tiny kernel, then the free
 * parameters from c. */
static int fit(struct set *s, struct sim_compute *c, struct fctx *cx)
{
	fprintf(stderr, "bench_kernels: fitting");
	for (int k = 0; k < cx->nfree; k++)
		fprintf(stderr, "%s %s", k ? "," : "", par_names[cx->free_par[k]]);
	fprintf(stderr, "\n");
	if (!set_launch(s, c))
		fprintf(stderr, "bench_kernels: no launch row: launch_us stays %.3f\n", c->launch_s * 1e6);
	/* each stage in turn, the earlier ones' parameters held */
	struct fctx st = *cx;
	for (int g = 0; g < NSTAGE; g++) {
		if (!cx->snfree[g])
			continue;
		st.stage = g;
		st.nfree = cx->snfree[g];
		memcpy(st.free_par, cx->sfree[g], sizeof(st.free_par));
		st.nuse = cx->snuse[g];
		if (fit_once(&st, c, true)) {
			fprintf(stderr, "bench_kernels: the fit failed\n");
			return 2;
		}
	}
	predict(s, c);
	return 0;
}

static int write_calibration(const char *path, const struct sim_compute *c, const struct fctx *cx,
			     int nfiles, char **files, struct ts_error *err)
{
	char text[4096];
	size_t at = 0;
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	cJSON_AddStringToObject(root, "gpu", c->gpu);
	at += (size_t)snprintf(text, sizeof(text),
			       "%s by bench/bench_kernels (GSL gsl_multifit_nlinear, Huber loss on log "
			       "time ratios, delta %g) to kernels timed by "
			       "validate/kernels/measure_kernels.py:",
			       cx ? "fitted" : "evaluated", HUBER);
	for (int i = 0; i < nfiles && at + 2 < sizeof(text); i++) {
		text[at++] = ' '; /* the names printable, whole characters */
		at = json_clean_text(text, sizeof(text), at, files[i], strlen(files[i]));
	}
	/* as long as a calibration's source may be (sim_compute_apply_json
	 * refuses a longer one; found by review: a long or non-UTF-8 path
	 * made a file predict refused) */
	json_shorten_text(text, sizeof(c->source));
	cJSON_AddStringToObject(root, "source", text);
	cJSON_AddNumberToObject(root, "launch_us", c->launch_s * 1e6);
	struct sim_compute t = *c;
	for (int j = 0; j < NPAR; j++)
		cJSON_AddNumberToObject(root, par_names[j], *par_ref(&t, j));
	if (cx) {
		const char *fitted[NPAR], *held[NPAR];
		int nf = 0, nh = 0;
		for (int j = 0; j < NPAR; j++) {
			bool f = false;
			for (int k = 0; k < cx->nfree; k++)
				f = f || cx->free_par[k] == j;
			if (f)
				fitted[nf++] = par_names[j];
			else
				held[nh++] = par_names[j];
		}
		cJSON *fit = cJSON_AddObjectToObject(root, "fit");
		if (fit) {
			cJSON_AddItemToObject(fit, "parameters", cJSON_CreateStringArray(fitted, nf));
			cJSON_AddItemToObject(fit, "held (no rows of their kernels)",
					      cJSON_CreateStringArray(held, nh));
			cJSON_AddNumberToObject(fit, "rows", cx->nuse);
		}
	}
	char *out = cJSON_Print(root);
	cJSON_Delete(root);
	if (!out)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	size_t n = strlen(out);
	char *buf = realloc(out, n + 2);
	if (!buf) {
		cJSON_free(out);
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	}
	buf[n] = '\n';
	buf[n + 1] = '\0';
	int rc = fileio_write_atomic(path, buf, n + 1, err);
	free(buf);
	return rc ? 2 : 0;
}

static void print_params(const struct sim_compute *c, const char *title)
{
	printf("# %s: gemm_eff_max %.4f, gemm_half_flops %.4g, launch %.3f us, hbm_eff %.4f, "
	       "hbm_half %.4g B, attn_eff %.4f, attn_tile_overhead %.3f, attn_bwd_ratio %.4f, "
	       "attn_fixed %.2f us, attn_head_pad %d, fp32_gemm_ratio %.4f, gemm_bound_mix %.4f, "
	       "grouped_gemm_eff %.4f, grouped_tile_k %.1f, grouped_small_eff %.4f, dispatch %.2f "
	       "us\n",
	       title, c->gemm_eff_max, c->gemm_half_flops, c->launch_s * 1e6, c->hbm_eff,
	       c->hbm_half_bytes, c->attn_eff, c->attn_tile_overhead, c->attn_bwd_ratio,
	       c->attn_fixed_s * 1e6, c->attn_head_pad, c->fp32_gemm_ratio, c->gemm_bound_mix,
	       c->grouped_gemm_eff, c->grouped_tile_k, c->grouped_small_eff, c->dispatch_s * 1e6);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_kernels [--gpu PRESET] [--calibration FILE|none] [--fit] [--write FILE]\n"
		"                     [--rows] [CSV...]\n"
		"Predicts kernels timed on a GPU (validate/kernels/measure_kernels.py) with the\n"
		"compute model and prints the error by kind.\n"
		"  CSV              default: validate/data/h200-kernels-1.csv, -2.csv and\n"
		"                   h200-attention-fit.csv\n"
		"  --gpu PRESET     cluster preset whose GPU is modelled (default h200-ndr)\n"
		"  --calibration F  compute calibration applied first ('none': the defaults)\n"
		"  --fit            launch_us from the tiny kernel in a CUDA graph; gemm_eff_max,\n"
		"                   gemm_half_flops, gemm_bound_mix, hbm_eff, hbm_half_bytes,\n"
		"                   attn_eff, attn_tile_overhead, attn_bwd_ratio, attn_fixed_s\n"
		"                   and fp32_gemm_ratio fitted to GEMMs, copy/add, cuDNN\n"
		"                   attention and TF32 GEMMs; then, those held,\n"
		"                   grouped_gemm_eff, grouped_tile_k and grouped_small_eff to\n"
		"                   grouped GEMMs\n"
		"  --write F        write the (fitted) parameters as a calibration file\n"
		"  --rows           print every row\n");
}

int main(int argc, char **argv)
{
	static struct set s;
	const char *gpu = "h200-ndr", *calib = NULL, *out = NULL;
	bool do_fit = false, rows = false;
	static const struct option opts[] = {
		{ "gpu", required_argument, NULL, 'g' },   { "calibration", required_argument, NULL, 'c' },
		{ "fit", no_argument, NULL, 'f' },         { "write", required_argument, NULL, 'w' },
		{ "rows", no_argument, NULL, 'r' },        { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	opterr = 0; /* one line of our own instead of getopt's and the usage */
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'g': gpu = optarg; break;
		case 'c': calib = optarg; break;
		case 'f': do_fit = true; break;
		case 'w': out = optarg; break;
		case 'r': rows = true; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "bench_kernels: unknown option or missing value '%s' (see --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	char d1[1024], d2[1024], d3[1024];
	char *deflt[3] = { (char *)src_rel("../validate/data/h200-kernels-1.csv", d1, sizeof(d1)),
			   (char *)src_rel("../validate/data/h200-kernels-2.csv", d2, sizeof(d2)),
			   (char *)src_rel("../validate/data/h200-attention-fit.csv", d3, sizeof(d3)) };
	char **files = optind < argc ? argv + optind : deflt;
	int nfiles = optind < argc ? argc - optind : 3;
	for (int i = 0; i < nfiles; i++) {
		int rc = load(&s, files[i], i);
		if (rc)
			return rc;
	}

	struct topo_cluster cl;
	struct ts_error err = TS_ERROR_INIT;
	memset(&cl, 0, sizeof(cl));
	if (topo_cluster_load(&cl, gpu, 1, &err)) {
		fprintf(stderr, "bench_kernels: %s\n", err.msg);
		return 2;
	}
	struct sim_compute c;
	sim_compute_init(&c, &cl.gpu);
	topo_cluster_release(&cl);
	if (calib && strcmp(calib, "none") && sim_compute_load(&c, calib, &err)) {
		fprintf(stderr, "bench_kernels: %s\n", err.msg);
		return 2;
	}
	static struct fctx cx;
	if (do_fit && fit_plan(&s, &cx))
		return 2;
	printf("# %d kernels from %d file(s), GPU %s (%s)\n", s.n, nfiles, c.gpu,
	       calib ? calib : "compute-model defaults");
	print_params(&c, "parameters");
	predict(&s, &c);
	if (rows && !do_fit)
		print_rows(&s);
	report(&s, "predicted / measured - 1, by kind");
	if (do_fit) {
		gsl_set_error_handler_off(); /* GSL's errors come back as codes, said in one line */
		int rc = fit(&s, &c, &cx);
		if (rc)
			return rc;
		print_params(&c, "fitted");
		if (rows)
			print_rows(&s);
		report(&s, "after the fit");
	}
	if (out) {
		if (write_calibration(out, &c, do_fit ? &cx : NULL, nfiles, files, &err)) {
			fprintf(stderr, "bench_kernels: %s\n", err.msg);
			return 2;
		}
		printf("# wrote %s\n", out);
	}
	return 0;
}

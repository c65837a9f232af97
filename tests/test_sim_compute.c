/* test_sim_compute.c: the compute model (sim/compute.c): defaults, GEMM
 * efficiency (size curve, tile and wave quantisation), roofline time, and
 * calibration files with positioned errors. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "common/fileio.h"
#include "sim/compute.h"
#include "testutil.h"

static void a100(struct topo_gpu_spec *g)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "A100-SXM4-80GB");
	g->bf16_flops = 312e12;
	g->hbm_Bps = 2039e9;
	g->mem_bytes = 80e9;
	g->sm_arch = 80;
}

static void h100(struct topo_gpu_spec *g)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "H100-SXM5-80GB");
	g->bf16_flops = 989e12;
	g->fp8_flops = 1979e12;
	g->hbm_Bps = 3.35e12;
	g->mem_bytes = 80e9;
	g->sm_arch = 90;
}

static void init_a100(struct sim_compute *c)
{
	struct topo_gpu_spec g;
	a100(&g);
	sim_compute_init(c, &g);
}

/* ---- defaults ------------------------------------------------------------ */

START_TEST(defaults_from_gpu)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	struct ts_error err = TS_ERROR_INIT;
	init_a100(&c);
	ck_assert_double_eq(c.peak_flops, 312e12);
	ck_assert_double_eq(c.hbm_Bps, 2039e9);
	ck_assert_int_eq(c.sm_count, 108);
	ck_assert_str_eq(c.gpu, "A100-SXM4-80GB");
	ck_assert_int_eq(sim_compute_check(&c, &err), 0);
	h100(&g);
	sim_compute_init(&c, &g);
	ck_assert_double_eq(c.peak_flops, 989e12);
	ck_assert_double_eq(c.peak_fp8_flops, 1979e12);
	ck_assert_int_eq(c.sm_count, 132);
	/* non-tensor FP16: 78 of 312 on an A100 (Calculon), 133.8 of 989 on an
	 * H100 (NVIDIA's whitepaper) */
	ck_assert_double_eq_tol(c.vector_flops, 133.8e12, 1e3);
	ck_assert_int_eq(sim_compute_check(&c, &err), 0);
}
END_TEST

/* ---- GEMM efficiency --------------------------------------------------------- */

START_TEST(gemm_eff_monotone_in_size)
{
	struct sim_compute c;
	init_a100(&c);
	double prev = 0;
	/* square GEMMs from 128 to 32768: efficiency never falls as they grow */
	for (int64_t n = 128; n <= 32768; n *= 2) {
		double e = sim_compute_gemm_eff(&c, n, n, n);
		ck_assert_msg(e >= prev - 1e-12, "n=%lld eff %g < %g", (long long)n, e, prev);
		ck_assert(e > 0 && e <= c.gemm_eff_max);
		prev = e;
	}
	ck_assert_double_gt(prev, 0.9 * c.gemm_eff_max);
	/* token dimension (m = micro_batch x seq) growing, fixed weights */
	prev = 0;
	for (int64_t m = 2048; m <= 65536; m *= 2) {
		double e = sim_compute_gemm_eff(&c, m, 3072, 3072);
		ck_assert_msg(e >= prev - 1e-12, "m=%lld eff %g < %g", (long long)m, e, prev);
		prev = e;
	}
	/* the size curve alone (no shape): monotone and half of max at half_flops */
	struct sim_op_desc op = { .cls = SIM_OP_GEMM, .dtype_bytes = 2 };
	op.flops = c.gemm_half_flops;
	double t = sim_compute_time_s(&c, &op) - c.launch_s;
	ck_assert_double_eq_tol(t, op.flops / (c.peak_flops * c.gemm_eff_max * 0.5), 1e-15);
}
END_TEST

START_TEST(gemm_wave_quantisation)
{
	struct sim_compute c;
	init_a100(&c);
	c.gemm_half_flops = 0; /* isolate quantisation from the size curve */
	/* 54 x 2 = 108 tiles of 256 x 128 fill one wave of 108 SMs exactly;
	 * k = 128 is too shallow for split-K. Half a tile row more needs a
	 * second wave: util = useful / (2 waves x 108 x 256 x 128) (NVIDIA's
	 * Matrix Multiplication Background guide, wave quantisation). */
	double full = sim_compute_gemm_eff(&c, 256 * 54, 256, 128);
	double over = sim_compute_gemm_eff(&c, 256 * 54 + 128, 256, 128);
	ck_assert_double_eq_tol(full, c.gemm_eff_max, 1e-12);
	ck_assert_double_eq_tol(over,
				c.gemm_eff_max * (256.0 * 54 + 128) * 256 / (2.0 * 108 * 256 * 128),
				1e-12);
	/* deep k: split-K fills the idle SMs of a two-tile GEMM (up to 16 slices) */
	double shallow = sim_compute_gemm_eff(&c, 256, 256, 256);
	double deep = sim_compute_gemm_eff(&c, 256, 256, 16 * 256);
	ck_assert_double_eq_tol(shallow, c.gemm_eff_max * 2.0 / 108.0, 1e-12);
	ck_assert_double_eq_tol(deep, c.gemm_eff_max * 32.0 / 108.0, 1e-12);
	/* batched: 108 GEMMs of one tile each fill one wave */
	double b = sim_compute_gemm_eff_batched(&c, 256, 128, 128, 108);
	ck_assert_double_eq_tol(b, c.gemm_eff_max, 1e-12);
}
END_TEST

START_TEST(gemm_tile_quantisation)
{
	struct sim_compute c;
	init_a100(&c);
	c.gemm_half_flops = 0;
	c.sm_count = 1; /* one SM: only tile quantisation is left */
	double e128 = sim_compute_gemm_eff(&c, 256, 128, 64);
	double e129 = sim_compute_gemm_eff(&c, 256, 129, 64);
	ck_assert_double_eq_tol(e128, c.gemm_eff_max, 1e-12);
	/* 129 columns need two 128-wide tiles (or, transposed, 256-wide ones):
	 * the best orientation covers 256 x 256 with 256 x 129 useful. */
	ck_assert_double_eq_tol(e129, c.gemm_eff_max * 129.0 / 256.0, 1e-12);
}
END_TEST

/* ---- roofline time --------------------------------------------------------------- */

START_TEST(time_is_max_of_bounds_plus_launch)
{
	struct sim_compute c;
	init_a100(&c);
	/* FLOP-bound GEMM: 8192^3 */
	struct sim_op_desc g = { .cls = SIM_OP_GEMM, .m = 8192, .n = 8192, .k = 8192,
				 .batch = 1, .dtype_bytes = 2 };
	double flops = 2.0 * 8192 * 8192 * 8192;
	double eff = sim_compute_gemm_eff(&c, 8192, 8192, 8192);
	double want = flops / (c.peak_flops * eff) + c.launch_s;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &g), want, want * 1e-12);
	/* giving the FLOPs and bytes explicitly changes nothing here */
	g.flops = flops;
	g.bytes = 2.0 * 3 * 8192.0 * 8192.0;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &g), want, want * 1e-12);
	/* memory-bound GEMM (matrix-vector): bytes dominate */
	struct sim_op_desc mv = { .cls = SIM_OP_GEMM, .m = 1, .n = 16384, .k = 16384,
				  .batch = 1, .dtype_bytes = 2 };
	double bytes = 2.0 * (16384.0 + 16384.0 * 16384.0 + 16384.0);
	double tm = (bytes + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff);
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &mv), tm + c.launch_s, tm * 1e-12);
	/* element-wise: memory-bound at HBM speed */
	struct sim_op_desc ew = { .cls = SIM_OP_ELEMENTWISE, .flops = 1e9, .bytes = 4e9 };
	tm = (4e9 + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff);
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &ew), tm + c.launch_s, tm * 1e-12);
	/* element-wise with heavy math: vector-unit bound */
	ew.flops = 1e15;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &ew), 1e15 / c.vector_flops + c.launch_s,
				1e-9);
	/* attention: attn_eff of peak when FLOP-bound */
	struct sim_op_desc at = { .cls = SIM_OP_ATTN, .flops = 1e13, .bytes = 1e6 };
	want = 1e13 / (c.peak_flops * c.attn_eff) + c.launch_s;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &at), want, want * 1e-12);
	/* optimizer: memory-bound */
	struct sim_op_desc opt = { .cls = SIM_OP_OPTIMIZER, .flops = 1e9, .bytes = 16e9 };
	tm = (16e9 + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff);
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &opt), tm + c.launch_s, tm * 1e-12);
	/* an empty op costs one launch */
	struct sim_op_desc z = { .cls = SIM_OP_ELEMENTWISE };
	ck_assert_double_eq(sim_compute_time_s(&c, &z), c.launch_s);
}
END_TEST

/* Fused attention's tiling (compute.c, attn_tiling): a query tile of 128
 * walks its key tiles plus attn_tile_overhead, the masked edge tile half
 * more, the head dim padded to attn_head_pad. Closed form against the
 * model at sm_count 1 (where the grid's waves, attn_waves, price nothing:
 * the CTAs end to end), and the measured shape of it: a longer causal
 * sequence runs nearer the peak. */
START_TEST(attention_tiling)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	h100(&g);
	sim_compute_init(&c, &g);
	ck_assert(c.attn_tile_overhead > 0); /* measured on Hopper */
	ck_assert(c.attn_fixed_s > 0);
	double fix = c.launch_s + c.attn_fixed_s;
	c.sm_count = 1;
	/* causal 4,096 tokens, head 128: 2,048 keys a query on average */
	double f = 4.0 * 32 * 4096 * 4096 * 128 * 0.5;
	struct sim_op_desc at = { .cls = SIM_OP_ATTN, .flops = f, .bytes = 1e6, .m = 4096,
				  .n = 2048, .k = 128, .batch = 32, .masked = true };
	double kt = 2048 / 128.0;
	double want = f * (kt + 0.5 + c.attn_tile_overhead) / kt / (c.peak_flops * c.attn_eff) + fix;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &at), want, want * 1e-12);
	/* unmasked: no edge tile */
	at.masked = false;
	want = f * (kt + c.attn_tile_overhead) / kt / (c.peak_flops * c.attn_eff) + fix;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &at), want, want * 1e-12);
	/* a head of 72 runs as 128 on Hopper (cuDNN's), as 96 at a pad of 32
	 * (FlashAttention-2's kernels) */
	ck_assert_int_eq(c.attn_head_pad, 64);
	at.k = 72;
	double t72 = sim_compute_time_s(&c, &at) - fix;
	ck_assert_double_eq_tol(t72, (want - fix) * 128 / 72, t72 * 1e-12);
	c.attn_head_pad = 32;
	t72 = sim_compute_time_s(&c, &at) - fix;
	ck_assert_double_eq_tol(t72, (want - fix) * 96 / 72, t72 * 1e-12);
	c.attn_head_pad = 64;
	/* the backward: attn_bwd_ratio of the forward's efficiency, its three
	 * kernels' launches, and its two small kernels' HBM traffic (4 and 6
	 * bytes a query element) */
	ck_assert(c.attn_bwd_ratio > 0 && c.attn_bwd_ratio < 1); /* measured on Hopper */
	at.k = 128;
	double tf = sim_compute_time_s(&c, &at) - fix;
	at.backward = true;
	double e = 4096.0 * 128 * 32;
	double aux = (4 * e + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff) +
		     (6 * e + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff);
	want = tf / c.attn_bwd_ratio + 3 * c.launch_s + c.attn_fixed_s + aux;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &at), want, want * 1e-12);
	/* the FLOP rate rises with the sequence at the same FLOPs per key,
	 * on the whole GPU too */
	c.sm_count = 132;
	at.backward = false;
	at.masked = true;
	double prev = 0;
	for (int64_t s = 1024; s <= 16384; s *= 2) {
		at.m = s;
		at.n = s / 2;
		at.flops = 4.0 * 32 * (double)s * (double)s * 128 * 0.5;
		double rate = at.flops / (sim_compute_time_s(&c, &at) - fix);
		ck_assert_msg(rate > prev, "s %lld: %.4g FLOP/s after %.4g", (long long)s, rate, prev);
		ck_assert(rate < c.peak_flops * c.attn_eff);
		prev = rate;
	}
	/* no shape: the FLOPs at attn_eff alone, one launch */
	struct sim_op_desc bare = { .cls = SIM_OP_ATTN, .flops = f, .bytes = 1e6 };
	want = f / (c.peak_flops * c.attn_eff) + c.launch_s;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &bare), want, want * 1e-12);
	/* the A100's defaults keep one efficiency (not measured there) */
	init_a100(&c);
	ck_assert_double_eq(c.attn_tile_overhead, 0);
	ck_assert_double_eq(c.attn_bwd_ratio, 1);
	ck_assert_double_eq(c.attn_fixed_s, 0);
	ck_assert_int_eq(c.attn_head_pad, 32);
}
END_TEST

/* The fused attention kernel's grid in waves (compute.c, attn_waves): one
 * CTA per query tile of each head runs on an SM, so a grid no larger
 * than the SMs lasts its longest CTA whatever its count (measured on the
 * H200: 4, 8 and 16 heads of 1,024 causal tokens take the same 18.6-19.4
 * us, validate/data/h200-attention-*.csv), a grid of equal CTAs one more
 * than the SMs takes two waves, a causal one's schedule lies between the
 * average and Graham's bound, and a large grid comes near the average. */
START_TEST(attention_waves)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	h100(&g);
	sim_compute_init(&c, &g);
	ck_assert_int_eq(c.sm_count, 132);
	double fix = c.launch_s + c.attn_fixed_s;
	/* full attention of 512 tokens: 4 query tiles a head */
	struct sim_op_desc at = { .cls = SIM_OP_ATTN, .bytes = 1e3, .m = 512, .n = 512, .k = 128 };
	double t1 = 0;
	for (int64_t h = 1; h <= 33; h++) { /* up to 132 CTAs: one wave */
		at.batch = h;
		at.flops = 4.0 * (double)h * 512 * 512 * 128;
		double t = sim_compute_time_s(&c, &at);
		if (h == 1)
			t1 = t;
		ck_assert_double_eq_tol(t, t1, t1 * 1e-12);
	}
	/* 136 CTAs: two waves of the same CTAs */
	at.batch = 34;
	at.flops = 4.0 * 34 * 512 * 512 * 128;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &at) - fix, 2 * (t1 - fix), t1 * 1e-12);
	/* the average SM's share alone (what a grid of whole waves takes):
	 * 132 heads of one tile each */
	struct sim_op_desc one = at;
	one.m = one.n = 128;
	one.batch = 132;
	one.flops = 4.0 * 132 * 128 * 128 * 128;
	double t_one = sim_compute_time_s(&c, &one);
	one.batch = 264;
	one.flops *= 2;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &one) - fix, 2 * (t_one - fix), t_one * 1e-12);
	/* causal 2,048 tokens (16 query tiles a head): 1 to 8 heads fit one
	 * wave and last the last tile's CTA; more heads never take less; the
	 * schedule is at least the average and at most Graham's bound (the
	 * average plus the longest CTA) */
	at.masked = true;
	at.m = 2048;
	at.n = 1024;
	double prev = 0, t8 = 0;
	for (int64_t h = 1; h <= 600; h++) {
		at.batch = h;
		at.flops = 4.0 * (double)h * 2048 * 1024 * 128;
		double t = sim_compute_time_s(&c, &at) - fix;
		if (h == 1)
			t8 = t;
		if (h <= 8)
			ck_assert_double_eq_tol(t, t8, t8 * 1e-12);
		ck_assert_msg(t >= prev * (1 - 1e-12), "%lld heads: %.6g s after %.6g", (long long)h,
			      t, prev);
		prev = t;
		/* the average's time: at sm_count 1 the waves price nothing */
		c.sm_count = 1;
		double avg = sim_compute_time_s(&c, &at) - fix;
		c.sm_count = 132;
		double w_max = (15.5 * 2 * 8 / 16 + 0.5 + c.attn_tile_overhead) /
			       (8 + 0.5 + c.attn_tile_overhead); /* over the mean CTA's work */
		double mean_cta = avg * 132 / (double)(16 * h);
		ck_assert_msg(t >= avg * (1 - 1e-12) && t <= avg + w_max * mean_cta * (1 + 1e-12),
			      "%lld heads: %.6g s, average %.6g", (long long)h, t, avg);
		if (h == 600) /* 9,600 CTAs, 73 waves: the tail, 0.62 of a CTA
			       * 1.76 times the mean, within 2 % of the average */
			ck_assert_msg(t > avg * 1.01 && t < avg * 1.02, "%.6g against %.6g", t, avg);
	}
}
END_TEST

/* Attention's time as its sequence grows token by token (n rounded to
 * whole keys, as the workload gives it): unmasked it never falls (found
 * by review: a last partial tile counted as a whole CTA took 129 queries
 * below 128, 0.66 x at worst); causal, it falls by at most 0.25 %, under a
 * window 0.4 % (the list schedule's anomalies). A sliding window has no step where a mean
 * of keys near half the span turned it causal (found by review: +77 %
 * for 0.6 % more work at 4,096 tokens, 2 heads). */
START_TEST(attention_time_by_sequence)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	h100(&g);
	sim_compute_init(&c, &g);
	static const int64_t heads[] = { 1, 16, 64 };
	for (int mask = 0; mask < 2; mask++)
		for (int hi = 0; hi < 3; hi++) {
			double prev = 0;
			for (int64_t m = 16; m <= 6000; m++) {
				struct sim_op_desc at = { .cls = SIM_OP_ATTN, .m = m,
							  .n = mask ? m / 2 : m, .k = 128,
							  .batch = heads[hi], .masked = mask };
				if (at.n < 1)
					at.n = 1;
				at.flops = 4.0 * (double)(m * at.n * heads[hi]) * 128;
				at.bytes = 8.0 * (double)(m * heads[hi]) * 128;
				double t = sim_compute_time_s(&c, &at);
				ck_assert_msg(t >= prev * (mask ? 0.9975 : 1), "mask %d, %lld heads, m %lld: %.6g after %.6g",
					      mask, (long long)heads[hi], (long long)m, t, prev);
				prev = t;
			}
		}
	/* a window of 512 and 2,048 tokens as the sequence grows (n rounded
	 * to whole keys): at most 0.4 % less a token */
	for (double w = 512; w <= 2048; w *= 4) {
		double prev = 0;
		for (int64_t m = (int64_t)w + 1; m <= 6000; m++) {
			double mean = w - w * w / (2.0 * (double)m);
			struct sim_op_desc at = { .cls = SIM_OP_ATTN, .m = m, .n = (int64_t)(mean + 0.5),
						  .k = 128, .batch = 1, .masked = true, .window = true };
			at.flops = 4.0 * (double)m * (double)at.n * 128;
			at.bytes = 8.0 * (double)m * 128;
			double t = sim_compute_time_s(&c, &at);
			ck_assert_msg(t >= prev * 0.996, "window %.0f, m %lld: %.6g after %.6g", w,
				      (long long)m, t, prev);
			prev = t;
		}
	}
	/* unmasked, 11 heads across a tile boundary: the 11 CTAs of one
	 * query each join the first wave's free SMs (found by review:
	 * counted by their share of a wave, they doubled the time) */
	{
		struct sim_op_desc at = { .cls = SIM_OP_ATTN, .m = 1536, .n = 4096, .k = 128,
					  .batch = 11 };
		at.flops = 4.0 * 1536 * 4096 * 11 * 128;
		double t0 = sim_compute_time_s(&c, &at);
		at.m = 1537;
		at.flops = 4.0 * 1537 * 4096 * 11 * 128;
		double t1 = sim_compute_time_s(&c, &at);
		ck_assert_msg(t1 >= t0 && t1 < t0 * 1.01, "1,537 tokens %.6g against %.6g", t1, t0);
	}
	/* a window of 2,700-2,900 of 4,096 tokens, 2 heads */
	double prev = 0;
	for (double w = 2700; w <= 2900; w += 4) {
		double s = 4096, mean = w - w * w / (2 * s);
		struct sim_op_desc at = { .cls = SIM_OP_ATTN, .m = 4096, .n = (int64_t)(mean + 0.5),
					  .k = 128, .batch = 2, .masked = true, .window = true };
		at.flops = 4.0 * 4096 * (double)at.n * 2 * 128;
		at.bytes = 8.0 * 4096 * 2 * 128;
		double t = sim_compute_time_s(&c, &at);
		ck_assert_msg(prev == 0 || (t >= prev * 0.9975 && t <= prev * 1.02),
			      "window %.0f: %.6g after %.6g",
			      w, t, prev);
		prev = t;
	}
}
END_TEST

/* A GEMM's compute and HBM times combine as a p-norm, p = 1 /
 * gemm_bound_mix, where that is set (measured on Hopper): at the ridge
 * 2^(1/p) times either; far from it the larger; 0 is the plain roofline
 * (max), 1 their sum. */
START_TEST(gemm_bound_mix_norm)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	h100(&g);
	sim_compute_init(&c, &g);
	ck_assert(c.gemm_bound_mix > 0 && c.gemm_bound_mix < 1); /* measured on Hopper */
	double p = 1 / c.gemm_bound_mix;
	/* a GEMM whose given FLOPs and bytes put both bounds at 1 ms */
	struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = 8192, .n = 8192, .k = 8192, .batch = 1,
				  .dtype_bytes = 2 };
	double eff = sim_compute_gemm_eff(&c, 8192, 8192, 8192);
	op.flops = 1e-3 * c.peak_flops * eff;
	op.bytes = 1e-3 * c.hbm_Bps * c.hbm_eff - c.hbm_half_bytes;
	double want = 1e-3 * pow(2, 1 / p) + c.launch_s;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &op), want, want * 1e-9);
	/* compute-bound by far: about the compute time */
	op.bytes = 1e-5 * c.hbm_Bps * c.hbm_eff - c.hbm_half_bytes;
	double tm = 1e-5, t = sim_compute_time_s(&c, &op) - c.launch_s;
	ck_assert_double_eq_tol(t, 1e-3 * pow(1 + pow(tm / 1e-3, p), 1 / p), 1e-15);
	ck_assert(t > 1e-3 && t < 1e-3 * 1.001);
	/* 1: the sum */
	c.gemm_bound_mix = 1;
	op.bytes = 1e-3 * c.hbm_Bps * c.hbm_eff - c.hbm_half_bytes;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &op), 2e-3 + c.launch_s, 1e-12);
	/* 0: the larger alone */
	c.gemm_bound_mix = 0;
	op.bytes = 1e-3 * c.hbm_Bps * c.hbm_eff - c.hbm_half_bytes;
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &op), 1e-3 + c.launch_s, 1e-12);
	/* element-wise ops keep the max */
	h100(&g);
	sim_compute_init(&c, &g);
	struct sim_op_desc ew = { .cls = SIM_OP_ELEMENTWISE, .flops = 1e-3 * c.vector_flops,
				  .bytes = 1e-3 * c.hbm_Bps * c.hbm_eff - c.hbm_half_bytes };
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &ew), 1e-3 + c.launch_s, 1e-12);
	/* not measured elsewhere: the plain roofline */
	init_a100(&c);
	ck_assert_double_eq(c.gemm_bound_mix, 0);
}
END_TEST

START_TEST(time_monotone_in_work)
{
	struct sim_compute c;
	init_a100(&c);
	for (int cls = 0; cls < SIM_OP_CLASS_COUNT; cls++) {
		double prev = 0;
		for (double w = 1e3; w <= 1e15; w *= 10) {
			struct sim_op_desc op = { .cls = (enum sim_op_class)cls, .flops = w,
						  .bytes = w / 100, .dtype_bytes = 2 };
			double t = sim_compute_time_s(&c, &op);
			ck_assert_msg(t > prev, "%s: %g FLOP -> %g s not > %g",
				      sim_op_class_name(op.cls), w, t, prev);
			prev = t;
		}
	}
}
END_TEST

/* A shaped GEMM never gets faster as a dimension grows, down to one row:
 * the size curve's fixed cost is per kernel, not scaled by the tile
 * fill (a 1 x 1 score GEMM per head once cost more than a 16 x 16 one).
 * The time of a tiny GEMM is its one wave of tiles plus that fixed cost. */
START_TEST(gemm_time_monotone_in_shape)
{
	struct sim_compute c;
	double prev = 0, t1;
	init_a100(&c);
	for (int64_t s = 1; s <= 8192; s *= 2) {
		/* attention scores of one micro-batch: s x s x 128 per head, 32 heads */
		struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = s, .n = s, .k = 128,
					  .batch = 32, .dtype_bytes = 2 };
		double t = sim_compute_time_s(&c, &op);
		ck_assert_msg(t >= prev, "s=%lld: %.6g s < %.6g s at s/2", (long long)s, t, prev);
		prev = t;
	}
	struct sim_op_desc one = { .cls = SIM_OP_GEMM, .m = 1, .n = 1, .k = 128, .batch = 32,
				   .dtype_bytes = 2 };
	t1 = sim_compute_time_s(&c, &one);
	/* 32 tiles of 8 x 8 x 128 (the skinny tile) in one wave: the time of
	 * one tile on one of the 108 SMs */
	double want = (108 * 2.0 * 8 * 8 * 128 + c.gemm_half_flops) / (c.peak_flops * c.gemm_eff_max);
	double mem = (2.0 * (128 + 128 + 1) * 32 + c.hbm_half_bytes) / (c.hbm_Bps * c.hbm_eff);
	ck_assert_double_eq_tol(t1 - c.launch_s, fmax(want, mem), 1e-15);
}
END_TEST

/* A grouped GEMM whose groups' rows spread (m_sd: experts' token counts)
 * covers each group with whole row tiles on its own: on one SM (no wave
 * quantisation) and a compute-bound shape whose columns fill the tiles,
 * its time is that of 128 x E[ceil(X / 128)] rows a group (the 128-row
 * orientation wastes least), X ~ N(m, m_sd) rounded up where X > 0 with
 * the mean kept, against a million draws each;
 * without spread, or for one GEMM, m_sd changes nothing. */
START_TEST(grouped_gemm_rows_spread)
{
	struct sim_compute c;
	const double m = 1000, sd = 40, n = 1024, k = 4096, b = 16;
	init_a100(&c);
	c.sm_count = 1;
	struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = (int64_t)m, .n = (int64_t)n,
				  .k = (int64_t)k, .batch = (int64_t)b, .dtype_bytes = 2,
				  .flops = 2 * m * n * k * b, .bytes = 1 };
	double even = sim_compute_time_s(&c, &op);
	op.m_sd = sd;
	double spread = sim_compute_time_s(&c, &op);
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	const int draws = 1000000;
	gsl_rng_set(r, 7);
	/* and wider spreads, whose normal reaches below zero: each group's
	 * round-up to its tiles (none without rows) on top of the mean's
	 * m / 128 (found by review: the tails below zero counted as rows,
	 * +29 % at a coefficient of variation of 2) */
	const double sds[] = { sd, 120, 500, 2000 };
	for (int j = 0; j < 4; j++) {
		double up = 0;
		for (int i = 0; i < draws; i++) {
			double x = m + gsl_ran_gaussian_ziggurat(r, sds[j]);
			up += x > 0 ? ceil(x / 128) - x / 128 : 0;
		}
		double tiles = m / 128 + up / draws;
		double rows = 128 * tiles, E = op.flops * rows / m;
		double want = (E + c.gemm_half_flops) / (c.peak_flops * c.gemm_eff_max) + c.launch_s;
		op.m_sd = sds[j];
		double got = sim_compute_time_s(&c, &op);
		ck_assert_msg(fabs(got / want - 1) < 2e-4, "sd %g: %.6g s, want %.6g s (%.4f tiles)",
			      sds[j], got, want, tiles);
		if (j == 0)
			ck_assert_double_eq(got, spread);
	}
	gsl_rng_free(r);
	op.m_sd = sd;
	/* (equal rows: 8 tiles, 1,024 rows a group) */
	double want = (op.flops * 1024 / m + c.gemm_half_flops) / (c.peak_flops * c.gemm_eff_max) + c.launch_s;
	ck_assert_double_eq_tol(even, want, 1e-12 * want);
	op.batch = 1;
	op.flops = 2 * m * n * k;
	even = sim_compute_time_s(&c, &op);
	op.m_sd = 0;
	ck_assert_double_eq(sim_compute_time_s(&c, &op), even);
	/* at the default 108 SMs, rows filling their tiles exactly get
	 * slower spread, rows just past a tile boundary faster */
	init_a100(&c);
	op.batch = 16;
	for (int64_t rows = 1024; rows <= 1030; rows += 6) {
		op.m = rows;
		op.flops = 2.0 * (double)rows * n * k * b;
		op.m_sd = 0;
		even = sim_compute_time_s(&c, &op);
		op.m_sd = sd;
		double t = sim_compute_time_s(&c, &op);
		ck_assert_msg(rows == 1024 ? t > even : t < even, "%lld rows: %.6g s spread, %.6g s equal",
			      (long long)rows, t, even);
	}
}
END_TEST

/* A grouped-GEMM kernel (sim_op_desc.grouped; Hopper's defaults measure
 * one): each group's rows in cluster rows of 256 (of 128 when the groups
 * average 128 rows or fewer, at grouped_small_eff), columns likewise, the
 * clusters in waves over SM pairs, no split-K, each tile grouped_tile_k
 * deeper than its k, and a second kernel's launch (the groups' pointers).
 * With HBM out of the way and the plain roofline the time is exactly
 * that; the steps fall where the measured ones do (h200-kernels-probe.csv:
 * flat to 128 rows, up at 144, flat to 256, about double at 272); without
 * grouped_gemm_eff the flag changes nothing (A100: no such kernel
 * measured). */
START_TEST(grouped_kernel_tiles)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	const double n = 1024, k = 4096, b = 8;
	h100(&g);
	sim_compute_init(&c, &g);
	ck_assert(c.grouped_gemm_eff > 0 && c.grouped_small_eff > 0 && c.grouped_tile_k > 0);
	c.hbm_Bps = 1e15;
	c.hbm_half_bytes = 0;
	c.gemm_bound_mix = 0;
	c.sm_count = 2; /* one cluster slot: every tile a wave */
	struct sim_op_desc op = { .cls = SIM_OP_GEMM, .n = (int64_t)n, .k = (int64_t)k,
				  .batch = (int64_t)b, .dtype_bytes = 2, .bytes = 1, .grouped = true };
	const struct {
		int64_t m;
		double tile, rows, eff; /* cluster tile, its rows a group, efficiency */
	} cs[] = {
		{ 16, 128, 1, c.grouped_small_eff },   { 128, 128, 1, c.grouped_small_eff },
		{ 129, 256, 1, c.grouped_gemm_eff },   { 256, 256, 1, c.grouped_gemm_eff },
		{ 272, 256, 2, c.grouped_gemm_eff },   { 1000, 256, 4, c.grouped_gemm_eff },
	};
	/* (n stays 1,024: the large kernel from 129 rows on) */
	double prev = 0;
	for (size_t i = 0; i < TS_ARRAY_LEN(cs); i++) {
		op.m = cs[i].m;
		op.flops = 2.0 * (double)op.m * n * k * b;
		double tiles = cs[i].rows * ceil(n / cs[i].tile) * b;
		double E = tiles * cs[i].tile * cs[i].tile * 2 * k;
		double want = E / (c.peak_flops * cs[i].eff * k / (k + c.grouped_tile_k)) +
			      2 * c.launch_s;
		double got = sim_compute_time_s(&c, &op);
		ck_assert_msg(fabs(got / want - 1) < 1e-12, "m %lld: %.6g s, want %.6g s",
			      (long long)op.m, got, want);
		ck_assert_msg(got >= prev, "m %lld: %.6g s < %.6g s", (long long)op.m, got, prev);
		prev = got;
	}
	/* flat within a cluster row, double past it */
	op.m = 144;
	op.flops = 2.0 * 144 * n * k * b;
	double t144 = sim_compute_time_s(&c, &op);
	op.m = 256;
	op.flops = 2.0 * 256 * n * k * b;
	double t256 = sim_compute_time_s(&c, &op);
	op.m = 272;
	op.flops = 2.0 * 272 * n * k * b;
	double t272 = sim_compute_time_s(&c, &op);
	ck_assert_double_eq_tol(t144, t256, 1e-15);
	ck_assert(t272 > 1.9 * t256);
	/* 128 columns or fewer take the small kernel too (PyTorch's dispatch):
	 * 300 rows in three cluster rows of 128, one column */
	op.m = 300;
	op.n = 96;
	op.flops = 2.0 * 300 * 96 * k * b;
	double E = 3 * 1 * b * 128 * 128 * 2 * k;
	double want = E / (c.peak_flops * c.grouped_small_eff * k / (k + c.grouped_tile_k)) +
		      2 * c.launch_s;
	ck_assert(sim_compute_grouped_small(300, 96) && !sim_compute_grouped_small(300, 129));
	ck_assert_double_eq_tol(sim_compute_time_s(&c, &op), want, 1e-12 * want);
	op.n = (int64_t)n;
	/* where the mean crosses 128 rows the kernel changes and ragged rows
	 * get cheaper, as measured (376.6 us at a multinomial mean of 128 rows,
	 * 323.1 us at 144 equal ones): at the defaults, 128 experts of 2,048 x
	 * 1,536 with a multinomial's spread */
	sim_compute_init(&c, &g);
	op.n = 1536;
	op.k = 2048;
	op.batch = 128;
	double t[2];
	for (int i = 0; i < 2; i++) {
		op.m = 128 + i;
		op.m_sd = sqrt((double)op.m * (1 - 1.0 / 128));
		op.flops = 2.0 * (double)op.m * 1536 * 2048 * 128;
		op.bytes = 2.0 * 128 * ((double)op.m * 2048 + 2048.0 * 1536 + (double)op.m * 1536);
		t[i] = sim_compute_time_s(&c, &op);
	}
	ck_assert_msg(t[1] < 0.95 * t[0], "129 rows %.4g s, 128 rows %.4g s", t[1], t[0]);
	op.n = (int64_t)n;
	op.k = (int64_t)k;
	op.batch = (int64_t)b;
	op.m_sd = 0;
	op.flops = 2.0 * (double)op.m * n * k * b;
	/* the model off: as a batched GEMM */
	c.grouped_gemm_eff = 0;
	double on = sim_compute_time_s(&c, &op);
	op.grouped = false;
	ck_assert_double_eq(on, sim_compute_time_s(&c, &op));
	/* and on an A100, whose defaults have none */
	init_a100(&c);
	ck_assert_double_eq(c.grouped_gemm_eff, 0);
	op.grouped = true;
	on = sim_compute_time_s(&c, &op);
	op.grouped = false;
	ck_assert_double_eq(on, sim_compute_time_s(&c, &op));
}
END_TEST

/* Nor with a calibrated tile that is not a power of two or is below 8:
 * a dimension short of the tile takes a smaller kernel, never a larger one
 * (found by review: a 192 x 96 tile gave m = 150 a 256-row tile, 90.3 us
 * against 105.1 us at m = 192 for 28 % more work; a 4 x 4 tile made m = 3
 * twice as slow as m = 4). */
START_TEST(gemm_time_monotone_calibrated_tile)
{
	static const double tiles[][2] = { { 192, 96 }, { 4, 4 }, { 96, 48 } };
	/* (fp32 GEMMs of 1-400 rows against 1-177 columns) */
	for (size_t t = 0; t < sizeof(tiles) / sizeof(tiles[0]); t++) {
		struct sim_compute c;
		double prev = 0;
		init_a100(&c);
		c.tile_m = tiles[t][0];
		c.tile_n = tiles[t][1];
		static const int64_t ns[] = { 1, 3, 96, 177 }, ks[] = { 8192, 89059 };
		for (size_t i = 0; i < 8; i++) {
			prev = 0;
			for (int64_t m = 1; m <= 400; m++) {
				struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = m, .n = ns[i % 4],
							  .k = ks[i / 4], .batch = 1, .dtype_bytes = 4 };
				double tm = sim_compute_time_s(&c, &op);
				ck_assert_msg(tm >= prev * (1 - 1e-12),
					      "tile %g x %g, %lld x %lld x %lld: %.6g s < %.6g s at m - 1",
					      tiles[t][0], tiles[t][1], (long long)m, (long long)op.n,
					      (long long)op.k, tm, prev);
				prev = tm;
			}
		}
	}
}
END_TEST

/* Nor as k grows: where k is short of split x 256, the split-K slices run
 * padded (found by review: the split was refused below that depth, so on
 * an H100 1024 x 1024 x 1023 took 9.35 us and x 1024 7.00 us). */
START_TEST(gemm_time_monotone_in_k)
{
	static const int64_t mn[][2] = { { 1024, 1024 }, { 256, 256 }, { 4096, 1024 }, { 128, 3072 } };
	struct sim_compute c;
	struct topo_gpu_spec g;
	for (int gi = 0; gi < 2; gi++) {
		if (gi)
			h100(&g);
		else
			a100(&g);
		sim_compute_init(&c, &g);
		for (size_t i = 0; i < sizeof(mn) / sizeof(mn[0]); i++) {
			double prev = 0;
			for (int64_t k = 1; k <= 4200; k++) {
				struct sim_op_desc op = { .cls = SIM_OP_GEMM, .m = mn[i][0], .n = mn[i][1],
							  .k = k, .batch = 1, .dtype_bytes = 2 };
				double t = sim_compute_time_s(&c, &op);
				/* equal up to rounding where padded slices cost the same */
				ck_assert_msg(t >= prev * (1 - 1e-12),
					      "%s %lld x %lld x %lld: %.9g s < %.9g s at k - 1",
					      g.name, (long long)mn[i][0], (long long)mn[i][1],
					      (long long)k, t, prev);
				prev = t;
			}
		}
	}
}
END_TEST

START_TEST(time_by_dtype)
{
	struct sim_compute c;
	struct topo_gpu_spec g;
	h100(&g);
	sim_compute_init(&c, &g);
	struct sim_op_desc op = { .cls = SIM_OP_ATTN, .flops = 1e14, .bytes = 0, .dtype_bytes = 2 };
	double t16 = sim_compute_time_s(&c, &op) - c.launch_s;
	op.dtype_bytes = 1;
	double t8 = sim_compute_time_s(&c, &op) - c.launch_s;
	op.dtype_bytes = 4;
	double t32 = sim_compute_time_s(&c, &op) - c.launch_s;
	ck_assert_double_eq_tol(t16 / t8, 1979.0 / 989.0, 1e-9);
	ck_assert_double_eq_tol(t32 / t16, 1.0 / c.fp32_gemm_ratio, 1e-9);
	/* no FP8 units (A100): FP8 runs at the BF16 rate */
	init_a100(&c);
	op.dtype_bytes = 1;
	t8 = sim_compute_time_s(&c, &op);
	op.dtype_bytes = 2;
	ck_assert_double_eq(t8, sim_compute_time_s(&c, &op));
}
END_TEST

/* ---- calibration files ---------------------------------------------------------------- */

/* Every key of the format, each at a value unlike the defaults, lands in
 * its field (found by an audit: hbm_eff, dispatch, the peaks and the host
 * bandwidths were never given, so a loader that dropped them passed). */
START_TEST(load_good_file)
{
	struct sim_compute c;
	struct ts_error err = TS_ERROR_INIT;
	init_a100(&c);
	const char *p = tu_tmpfile(0, ".json",
				   "{\n"
				   "  \"gpu\": \"A100-test\",\n"
				   "  \"peak_flops\": 300e12,\n"
				   "  \"peak_fp8_flops\": 600e12,\n"
				   "  \"gemm_eff_max\": 0.8,\n"
				   "  \"gemm_half_flops\": 2e9,\n"
				   "  \"launch\": \"6us\",\n"
				   "  \"dispatch\": \"7us\",\n"
				   "  \"hbm_bandwidth_GBps\": 1555,\n"
				   "  \"hbm_eff\": 0.66,\n"
				   "  \"hbm_half\": \"1MiB\",\n"
				   "  \"attn_eff\": 0.4,\n"
				   "  \"attn_tile_overhead\": 2.5,\n"
				   "  \"attn_bwd_ratio\": 0.75,\n"
				   "  \"attn_fixed\": \"3us\",\n"
				   "  \"attn_head_pad\": 64,\n"
				   "  \"gemm_bound_mix\": 0.3,\n"
				   "  \"grouped_gemm_eff\": 0.7,\n"
				   "  \"grouped_small_eff\": 0.5,\n"
				   "  \"grouped_tile_k\": 256,\n"
				   "  \"sm_count\": 100,\n"
				   "  \"overlap_slowdown\": 1.2,\n"
				   "  \"tile_m\": 128,\n"
				   "  \"tile_n\": 64,\n"
				   "  \"vector_flops\": 70e12,\n"
				   "  \"fp32_gemm_ratio\": 0.25,\n"
				   "  \"host_link_bandwidth\": \"20GB/s\",\n"
				   "  \"host_memory_bandwidth\": \"30GB/s\",\n"
				   "  \"comment\": \"every key\",\n"
				   "  \"fit\": { \"method\": \"test\" }\n"
				   "}\n");
	ck_assert_int_eq(sim_compute_load(&c, p, &err), 0);
	ck_assert_str_eq(c.gpu, "A100-test");
	ck_assert_double_eq(c.peak_flops, 300e12);
	ck_assert_double_eq(c.peak_fp8_flops, 600e12);
	ck_assert_double_eq(c.gemm_eff_max, 0.8);
	ck_assert_double_eq(c.gemm_half_flops, 2e9);
	ck_assert_double_eq_tol(c.launch_s, 6e-6, 1e-18);
	ck_assert_double_eq_tol(c.dispatch_s, 7e-6, 1e-18);
	ck_assert_double_eq_tol(c.hbm_Bps, 1555e9, 1);
	ck_assert_double_eq(c.hbm_eff, 0.66);
	ck_assert_double_eq(c.hbm_half_bytes, 1048576.0);
	ck_assert_double_eq(c.attn_eff, 0.4);
	ck_assert_double_eq(c.attn_tile_overhead, 2.5);
	ck_assert_double_eq(c.attn_bwd_ratio, 0.75);
	ck_assert_double_eq_tol(c.attn_fixed_s, 3e-6, 1e-18);
	ck_assert_int_eq(c.attn_head_pad, 64);
	ck_assert_double_eq(c.gemm_bound_mix, 0.3);
	ck_assert_double_eq(c.grouped_gemm_eff, 0.7);
	ck_assert_double_eq(c.grouped_small_eff, 0.5);
	ck_assert_double_eq(c.grouped_tile_k, 256);
	ck_assert_int_eq(c.sm_count, 100);
	ck_assert_double_eq(c.overlap_slowdown, 1.2);
	ck_assert_int_eq(c.tile_m, 128);
	ck_assert_int_eq(c.tile_n, 64);
	ck_assert_double_eq(c.vector_flops, 70e12);
	ck_assert_double_eq(c.fp32_gemm_ratio, 0.25);
	ck_assert_double_eq_tol(c.host_link_Bps, 20e9, 1);
	ck_assert_double_eq_tol(c.host_mem_Bps, 30e9, 1);
	/* no "source": the file is named */
	ck_assert_ptr_nonnull(strstr(c.source, "calibration file"));
	ck_assert_ptr_nonnull(strstr(c.source, p));
	/* a "source" given is kept */
	p = tu_tmpfile(1, ".json", "{ \"source\": \"fitted to my runs\", \"hbm_eff\": 0.7 }");
	ck_assert_int_eq(sim_compute_load(&c, p, &err), 0);
	ck_assert_ptr_nonnull(strstr(c.source, "fitted to my runs"));
	ck_assert_double_eq(c.hbm_eff, 0.7);
	ck_assert_double_eq(c.gemm_eff_max, 0.8); /* keys not given stay */
}
END_TEST

/* The shipped A100 file: each of its numbers lands where the compute
 * model reads it (read here with cJSON, independently of the loader). */
START_TEST(load_shipped_calibration)
{
	static const struct {
		const char *key;
		size_t off;
		double unit; /* the field's value per unit of the key */
	} keys[] = {
		{ "gemm_eff_max", offsetof(struct sim_compute, gemm_eff_max), 1 },
		{ "gemm_half_flops", offsetof(struct sim_compute, gemm_half_flops), 1 },
		{ "hbm_eff", offsetof(struct sim_compute, hbm_eff), 1 },
		{ "launch_us", offsetof(struct sim_compute, launch_s), 1e-6 },
		{ "dispatch_us", offsetof(struct sim_compute, dispatch_s), 1e-6 },
	};
	struct sim_compute c, d;
	struct ts_error err = TS_ERROR_INIT;
	const char *path = tu_src(0, "examples/calibration/a100-vtrain.json");
	char *text = NULL;
	size_t n;
	cJSON *j;
	ck_assert_msg(fileio_read_all(path, 1 << 20, &text, &n, &err) == 0, "%s", err.msg);
	j = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(j);
	init_a100(&c);
	d = c;
	int rc = sim_compute_load(&c, path, &err);
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_int_eq(sim_compute_check(&c, &err), 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[i].key);
		double got = *(const double *)((const char *)&c + keys[i].off);
		ck_assert_msg(cJSON_IsNumber(v), "%s", keys[i].key);
		ck_assert_msg(fabs(got - v->valuedouble * keys[i].unit) <=
				      1e-12 * fabs(v->valuedouble * keys[i].unit),
			      "%s: %g, the file %g", keys[i].key, got, v->valuedouble);
	}
	ck_assert_double_eq(c.peak_flops, d.peak_flops); /* not in the file */
	ck_assert_str_eq(c.source, cJSON_GetObjectItemCaseSensitive(j, "source")->valuestring);
	cJSON_Delete(j);
}
END_TEST

static const struct {
	const char *text;
	const char *want; /* substring of the one-line message */
} bad_files[] = {
	{ "{\n  \"gemm_eff_max\": 0.8,\n  \"gemm_eff_mx\": 0.9\n}\n", ":3:" },
	{ "{\n  \"gemm_eff_max\": 0.8,\n  \"gemm_eff_mx\": 0.9\n}\n", "unknown field 'gemm_eff_mx'" },
	{ "{\n  \"gemm_eff_max\": 1.5\n}\n", "gemm_eff_max" },
	{ "{\n  \"gemm_eff_max\": 1.5\n}\n", ":2:" },
	{ "{\n  \"gemm_eff_max\": 0\n}\n", "must be in [0.001, 1]" },
	{ "{\n  \"attn_eff\": 1e-12\n}\n", ":2:" },
	{ "{\n  \"attn_tile_overhead\": -1\n}\n", "attn_tile_overhead" },
	{ "{\n  \"attn_tile_overhead\": -1\n}\n", ":2:" },
	{ "{\n  \"attn_bwd_ratio\": 0\n}\n", "attn_bwd_ratio" },
	{ "{\n  \"gemm_bound_mix\": 1.5\n}\n", "gemm_bound_mix" },
	{ "{\n  \"grouped_gemm_eff\": 1.5\n}\n", ":2:" },
	{ "{\n  \"grouped_gemm_eff\": 1.5\n}\n", "grouped_gemm_eff: must be 0 (none) or in [0.001, 1]" },
	{ "{\n  \"grouped_small_eff\": 1e-4\n}\n", "grouped_small_eff: must be 0 (none) or in [0.001, 1]" },
	{ "{\n  \"grouped_small_eff\": 1e-4\n}\n", ":2:" },
	{ "{\n  \"grouped_tile_k\": -1\n}\n", "grouped_tile_k" },
	{ "{\n  \"peak_flops\": 1\n}\n", "peak_flops" },
	{ "{\n  \"hbm_bandwidth\": \"1B/s\"\n}\n", ":2:" },
	{ "{\n  \"attn_eff\": \"high\"\n}\n", "expected a number" },
	{ "{\n  \"sm_count\": 10.5\n}\n", "sm_count" },
	{ "{\n  \"sm_count\": -3\n}\n", "sm_count" },
	{ "{\n  \"launch\": 5\n}\n", "needs a unit" },
	{ "{\n  \"launch_usec\": 5\n}\n", "unknown field 'launch_usec'" },
	{ "{\n  \"launch\": \"5 parsecs\"\n}\n", "bad quantity" },
	{ "{\n  \"launch\": \"2s\"\n}\n", "under 1 s" },
	{ "{\n  \"launch\": \"5us\", \"launch_us\": 5\n}\n", "given twice" },
	{ "{\n  \"hbm_bandwidth\": \"-5GB/s\"\n}\n", "hbm_bandwidth" },
	{ "{\n  \"overlap_slowdown\": 0.5\n}\n", "overlap_slowdown" },
	{ "{\n  \"peak_flops\": -1\n}\n", "peak_flops" },
	{ "{\n  \"fit\": 3\n}\n", "fit" },
	{ "{\n  \"gpu\": 3\n}\n", "gpu" },
	{ "[1, 2]\n", "object" },
	{ "{\n  \"gemm_eff_max\": 0.8,\n", "malformed JSON" },
	{ "{\n  \"tile_m\": 0\n}\n", "tile_m" },
	{ "{\n  \"host_memory_bandwidth\": \"0.5MB/s\"\n}\n", "host_memory_bandwidth" },
	{ "{\n  \"host_link_bandwidth_furlongs\": 3\n}\n", "host_link_bandwidth" },
	{ "{\n  \"dispatch\": \"2s\"\n}\n", "dispatch" },
	/* 0 is a valid launch cost: a negative one is "not negative" */
	{ "{\n  \"launch_us\": -1\n}\n", "launch_us: must not be negative (got -1)" },
	/* no hardware: past 1 PB/s, a fixed cost of seconds, FP8 below 1 GFLOP/s */
	{ "{\n  \"hbm_bandwidth\": \"1e30GB/s\"\n}\n", "hbm_bandwidth: must be between 1 MB/s and 1 PB/s" },
	{ "{\n  \"host_memory_bandwidth\": \"1e30GB/s\"\n}\n", "host_memory_bandwidth: must be between" },
	{ "{\n  \"hbm_half\": \"2GB\"\n}\n", "hbm_half: must be at most 1 GB" },
	{ "{\n  \"gemm_half_flops\": 1e18\n}\n", "gemm_half_flops: must be in [0, 1e+14]" },
	{ "{\n  \"peak_fp8_flops\": 1\n}\n", "peak_fp8_flops: must be 0 (no FP8) or at least 1e9" },
	/* enough digits to show why a value just past a bound fails */
	{ "{\n  \"hbm_eff\": 1.0000001\n}\n", "(got 1.0000001)" },
};

START_TEST(load_bad_file)
{
	struct sim_compute c, before;
	struct ts_error err = TS_ERROR_INIT;
	init_a100(&c);
	before = c;
	const char *p = tu_tmpfile(1, ".json", bad_files[_i].text);
	ck_assert_int_eq(sim_compute_load(&c, p, &err), TS_EINPUT);
	ck_assert_msg(strstr(err.msg, bad_files[_i].want) != NULL, "case %d: '%s' lacks '%s'", _i,
		      err.msg, bad_files[_i].want);
	ck_assert_msg(strchr(err.msg, '\n') == NULL, "message is one line");
	/* the file name is in the message, and nothing was changed */
	ck_assert_ptr_nonnull(strstr(err.msg, "trainsim_test_"));
	ck_assert(memcmp(&c, &before, sizeof(c)) == 0);
}
END_TEST

START_TEST(load_missing_file)
{
	struct sim_compute c;
	struct ts_error err = TS_ERROR_INIT;
	init_a100(&c);
	ck_assert_int_lt(sim_compute_load(&c, "/nonexistent/calib.json", &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/calib.json"));
}
END_TEST

START_TEST(check_refuses_impossible)
{
	struct sim_compute c;
	struct ts_error err = TS_ERROR_INIT;
	init_a100(&c);
	c.hbm_eff = 1.2;
	ck_assert_int_eq(sim_compute_check(&c, &err), TS_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "hbm_eff"));
	init_a100(&c);
	c.peak_flops = NAN;
	ck_assert_int_eq(sim_compute_check(&c, &err), TS_EINPUT);
	init_a100(&c);
	c.sm_count = 0;
	ck_assert_int_eq(sim_compute_check(&c, &err), TS_EINPUT);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sim_compute");
	TCase *tc = tcase_create("defaults");
	tcase_add_test(tc, defaults_from_gpu);
	suite_add_tcase(s, tc);
	tc = tcase_create("gemm");
	tcase_add_test(tc, gemm_eff_monotone_in_size);
	tcase_add_test(tc, gemm_wave_quantisation);
	tcase_add_test(tc, gemm_tile_quantisation);
	suite_add_tcase(s, tc);
	tc = tcase_create("time");
	tcase_add_test(tc, time_is_max_of_bounds_plus_launch);
	tcase_add_test(tc, attention_tiling);
	tcase_add_test(tc, attention_waves);
	tcase_add_test(tc, attention_time_by_sequence);
	tcase_add_test(tc, gemm_bound_mix_norm);
	tcase_add_test(tc, time_monotone_in_work);
	tcase_add_test(tc, gemm_time_monotone_in_shape);
	tcase_add_test(tc, grouped_gemm_rows_spread);
	tcase_add_test(tc, grouped_kernel_tiles);
	tcase_add_test(tc, gemm_time_monotone_calibrated_tile);
	tcase_add_test(tc, gemm_time_monotone_in_k);
	tcase_add_test(tc, time_by_dtype);
	suite_add_tcase(s, tc);
	tc = tcase_create("calibration");
	tcase_add_test(tc, load_good_file);
	tcase_add_test(tc, load_shipped_calibration);
	tcase_add_loop_test(tc, load_bad_file, 0, (int)TS_ARRAY_LEN(bad_files));
	tcase_add_test(tc, load_missing_file);
	tcase_add_test(tc, check_refuses_impossible);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(suite());
}

/* compute.c: the compute model: time of one kernel on one GPU (compute.h).
 *
 *   t = max(FLOPs / (peak x eff(op)), bytes / (HBM x hbm_eff(bytes))) + launch
 *
 * (a GEMM's two times combine as a p-norm where gemm_bound_mix is set,
 * p = 1 / gemm_bound_mix: slower than the larger near the ridge)
 *
 * Roofline (max of the two bounds) as Calculon's `processing_mode:
 * roofline` (reference/formulas.md, Calculon system JSON). For GEMMs
 *   eff = gemm_eff_max x E / (E + gemm_half_flops) x util(m, n, k, batch),
 *   E = F / util
 * where F is the kernel's FLOPs, E the FLOPs its tile slots execute
 * (padding included), the size curve a saturating one (the smooth form of
 * Calculon's step table), so t = (E + gemm_half_flops) / (peak x
 * gemm_eff_max): whole waves of tiles plus a fixed cost per kernel (a
 * curve on F alone would scale that cost by 1 / util, and a tiny GEMM
 * that fills 1/64 of its tile would cost more than a large one), and util
 * is the fraction of the SMs' tile
 * slots doing useful work: tile quantisation (the output is covered by
 * whole tile_m x tile_n tiles) times wave quantisation (tiles run in waves
 * of sm_count), NVIDIA "Matrix Multiplication Background User's Guide",
 * sections "Tile Quantization" and "Wave Quantization". The better of the
 * two orientations (C or C^T) and a split-K of 1..16 (whichever fills the
 * waves best, its reduction of partial sums not priced: an assumption
 * that cuBLAS's heuristics and stream-K kernels remove most wave
 * quantisation) are taken, as cuBLAS's heuristics would; a
 * dimension smaller than the tile shrinks the tile (skinny kernels).
 * A grouped-GEMM kernel (sim_op_desc.grouped, where grouped_gemm_eff is
 * set) takes its own tiles instead: gemm_eff_grouped_kernel.
 *
 * Invariants: every time is >= launch_s > 0 and finite for finite input;
 * efficiency is in (0, gemm_eff_max]; time never decreases when FLOPs or
 * bytes grow (for a fixed shape class). Nothing here allocates. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/compute.h"

/* ---- defaults ---------------------------------------------------------- */

/* SMs per GPU by architecture. A100: 108 SMs, H100 SXM5 / H200: 132 SMs
 * (NVIDIA A100 and H100 architecture whitepapers, as quoted in the task of
 * issue 5). V100: 80 and B200: 148 are assumptions from NVIDIA's V100 and
 * Blackwell product pages (not in reference/). */
static int sm_count_for_arch(int sm_arch)
{
	if (sm_arch >= 100)
		return 148; /* assumption: B200 */
	if (sm_arch >= 90)
		return 132; /* H100 SXM5, H200 SXM */
	if (sm_arch >= 80)
		return 108; /* A100 SXM4 */
	return 80;          /* assumption: V100 SXM2 */
}

void sim_compute_init(struct sim_compute *c, const struct topo_gpu_spec *gpu)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->gpu, sizeof(c->gpu), "%s", gpu->name);
	/* Peaks and HBM bandwidth: the cluster's GPU spec, which cites
	 * reference/hardware.md (A100 312 TFLOP/s 2039 GB/s; H100 989 3.35 TB/s;
	 * H200 989 4.8 TB/s). */
	c->peak_flops = gpu->bf16_flops;
	c->peak_fp8_flops = gpu->fp8_flops;
	c->hbm_Bps = gpu->hbm_Bps;
	c->sm_count = sm_count_for_arch(gpu->sm_arch);
	/* HBM: Calculon's A100-80G mem1 MB_efficiency reaches 0.9 for >= 100 MB
	 * (formulas.md, Calculon system JSON); half of that at 0.5 MB is an
	 * assumption that follows its step table (1 MB -> 0.6, i.e. 2/3 of 0.9). */
	c->hbm_eff = 0.9;
	c->hbm_half_bytes = 0.5e6;
	/* GEMM size curve: Calculon's A100 float16 table [[128 GF, .95], [16,
	 * .9], [1, .6]] (formulas.md) is matched within 0.02 by
	 * 0.95 F / (F + 0.6 GFLOP) (F at full tile use: the curve applies to
	 * the FLOPs the tiles execute); labelled an assumption for other GPUs. */
	c->gemm_eff_max = 0.95;
	c->gemm_half_flops = 0.6e9;
	/* CTA tile 256 x 128: the largest cuBLAS tile in NVIDIA's "Matrix
	 * Multiplication Background User's Guide" (tile quantisation section). */
	c->tile_m = 256;
	c->tile_n = 128;
	/* Fused (flash) attention kernel, FLOPs at this fraction of peak:
	 * assumption 0.5 until calibrated. Non-flash attention is built from
	 * batched GEMMs and element-wise ops instead (models/workload.c). */
	c->attn_eff = 0.5;
	/* Its cost per query tile beyond the key tiles: 0 (the single
	 * efficiency above) until measured; Hopper's below. */
	c->attn_tile_overhead = 0;
	/* The backward kernel at the forward's efficiency until measured. */
	c->attn_bwd_ratio = 1;
	/* No fixed cost per attention kernel beyond its launches until
	 * measured (an assumption); Hopper's below. */
	c->attn_fixed_s = 0;
	/* FlashAttention-2 has kernels for head dimensions 32, 64, 96,
	 * 128...: a head of 72 runs as 96 (its source's kernel list; not in
	 * reference/); cuDNN's on Hopper below. */
	c->attn_head_pad = 32;
	/* GEMMs at the larger of their compute and HBM times (Calculon's
	 * roofline) until measured. */
	c->gemm_bound_mix = 0;
	/* Grouped GEMMs as batched cuBLAS ones (their ragged rows' tiles
	 * counted, row_tiles) until a grouped kernel is measured; Hopper's
	 * below. */
	c->grouped_gemm_eff = 0;
	c->grouped_small_eff = 0;
	c->grouped_tile_k = 0;
	/* TF32 tensor-core rate is half the BF16 rate on A100 (156 vs 312) and
	 * H100 (495 vs 989): assumption from NVIDIA datasheets, not in reference/. */
	c->fp32_gemm_ratio = 0.5;
	/* Per-kernel launch and tail: assumption 4 us (a few us per kernel on a
	 * busy stream) until calibrated. */
	c->launch_s = 4e-6;
	if (gpu->sm_arch >= 90 && gpu->sm_arch < 100) {
		/* Hopper (H100 SXM5, H200 SXM: the same 132 SMs, clocks and 700 W):
		 * measured, not assumed. 1,634 kernels timed on one H200 SXM on
		 * 2026-12-04 by validate/kernels/measure_kernels.py (PyTorch 2.11,
		 * CUDA 13.0, cuDNN 9.19; two runs of 817, validate/data/
		 * h200-kernels-1.csv and -2.csv, a third held out) and fitted by
		 * `bench_kernels --fit`: bf16 cuBLAS GEMMs of transformer shapes
		 * in the three orientations of training (573 shapes; 8192^3 runs
		 * at 733-772 TFLOP/s, the clock falling to 1650-1830 MHz under
		 * sustained GEMMs), copy and add from 16 KB to 1 GB with their operands out
		 * of L2, cuDNN's fused attention (the backend Transformer Engine
		 * takes on Hopper), TF32 GEMMs. The per-kernel cost is a tiny
		 * kernel's time in a CUDA graph (1.06 us): launches queued ahead of
		 * the GPU, as a training step's are. HBM efficiency is a fraction
		 * of the datasheet's bandwidth, taken for the H100's 3.35 TB/s too
		 * (an assumption). Attention's efficiency rises with the sequence
		 * (0.44 of peak at 1,024 causal keys, 0.61 at 8,192, forward): a
		 * cost per query tile of 1.40 key tiles follows it (attn_tiling),
		 * and the backward kernel runs at 0.88 of the forward's
		 * efficiency; its grid's waves (attn_waves), a fixed 2.3 us a
		 * kernel and the backward's two small kernels are priced besides.
		 * With them the fit (bench_kernels --fit, 2026-12-04) takes 36
		 * rows of one sequence at 4, 16 and 64 heads besides
		 * (validate/data/h200-attention-fit.csv, another machine); held
		 * out, h200-attention-heldout.csv (8 and 32 heads of the same
		 * sweep, which interpolate; GQA, full attention, batched rows):
		 * forward 2.8 % mean error (23.1 % before the waves), backward 4.3
		 * % (26.4 %); run 3: 2.8 % and 4.7 %. Near the ridge a GEMM runs
		 * slower than the larger of its compute and HBM times (19 % at
		 * 0.6-0.9 of it): they combine as a p-norm, p 1 / 0.360 = 2.77.
		 * After the fit: GEMMs 5.0 % mean error (run-to-run noise 2.6-2.9
		 * %; 13 % on random shapes, validate/data/h200-kernels-heldout.csv),
		 * copy/add 3.8 %, attention 2.0 % forward and 5.1 % backward (5.9
		 * and 7.5 % on the batched rows before the waves). The GEMM and
		 * HBM numbers moved by 0.1-0.2 % with the refit (the backward's
		 * small kernels are HBM-bound). */
		c->gemm_eff_max = 0.7251;
		c->gemm_half_flops = 6.506e8;
		c->launch_s = 1.063e-6;
		c->hbm_eff = 0.8759;
		c->hbm_half_bytes = 3.013e6;
		c->attn_eff = 0.6939;
		c->attn_tile_overhead = 1.400;
		c->attn_bwd_ratio = 0.8765;
		c->attn_fixed_s = 2.28e-6;
		/* cuDNN runs a head of 72 or 80 as 128 (h200-attention-*.csv:
		 * with 32 the fit left those rows 17-22 % fast) */
		c->attn_head_pad = 64;
		c->fp32_gemm_ratio = 0.5315;
		c->gemm_bound_mix = 0.3604;
		/* Grouped expert GEMMs (torch._grouped_mm's CUTLASS kernels,
		 * gemm_eff_grouped_kernel), fitted to the 144 of the same two
		 * runs with the numbers above held (128 experts of 2,048 x 1,536
		 * and 768 x 2,048, 16 of 4,096 x 3,072 and 1,536 x 4,096, 64-2,048
		 * rows an expert, equal, multinomial and Dirichlet): the 128 x 256
		 * kernel's tiles at 0.78 of peak less a fixed cost of 301 of k
		 * each (0.68 at k = 2,048, 0.56 at 768), the 64 x 128 kernel's at
		 * 0.49. 19.8 % mean error before (as batched cuBLAS GEMMs), 5.6 %
		 * after; held out: run 3 5.2 %, 160 equal-row counts in 16-row
		 * steps 5.3 % (validate/data/h200-kernels-probe.csv). */
		c->grouped_gemm_eff = 0.7775;
		c->grouped_tile_k = 300.7;
		c->grouped_small_eff = 0.4939;
		c->measured_defaults = true;
	}
	/* Non-tensor-core math: Calculon's A100 vector.float16 is 78 TFLOP/s,
	 * 1/4 of the 312 matrix peak (formulas.md); Hopper's FP16 non-tensor
	 * rate is 133.8 of 989 dense on an H100 SXM5 (NVIDIA H100 Tensor Core
	 * GPU Architecture whitepaper, table 2; not in reference/; found by
	 * review: 1/4 gave 247), the same ratio taken for every SM90 part; 1/4
	 * is an assumption for other GPUs. */
	c->vector_flops = gpu->sm_arch >= 90 && gpu->sm_arch < 100 ? c->peak_flops * (133.8 / 989.0) :
								  c->peak_flops / 4.0;
	/* NCCL kernels occupy SMs while they overlap compute: Calculon's
	 * processor_usage is 0.15 for NVLink and 0.02 for IB (formulas.md);
	 * 1.1 (about 1/(1-0.09)) is an assumption between the two. */
	c->overlap_slowdown = 1.1;
	/* ZeRO-Offload's CPU optimizer is bound by host memory bandwidth.
	 * Assumption: about 75 % of one GPU's share of the node's DDR
	 * bandwidth: DGX A100, 2 x EPYC 7742 with 8 DDR4-3200 channels each
	 * (409.6 GB/s / 8 GPUs = 51 GB/s) -> 40 GB/s; DGX H100, 2 x Xeon 8480C
	 * with 8 DDR5-4800 channels each (614 GB/s / 8 = 77 GB/s) -> 60 GB/s
	 * (NVIDIA DGX user guides; not in reference/). The PCIe copy rate comes
	 * from the cluster (sim_compute_set_host_link). */
	c->host_mem_Bps = gpu->sm_arch >= 90 ? 60e9 : 40e9;
	c->host_link_Bps = 0;
	/* Host dispatch per op (the executor overlaps it with the GPU): a
	 * property of the host and the framework, not of the GPU, so one value
	 * for every preset. Measured on the H200 machine's host (a 16-vCPU
	 * Xeon VM, eager PyTorch 2.11): four Qwen3-MoE layers with their
	 * experts as SequentialMLP (validate/data/h200-moe-step.csv,
	 * -repeats.csv, h200-host-probe*.csv) are host-bound (the host returns
	 * from the step within 0.1-1 % of the GPU's end), so each step's time
	 * is the host's: 171-313 ms over twelve steps of five shapes on five
	 * machines (the same shape 171-305 ms). compare_step.py --moe
	 * --calibration F (F: {"dispatch_us": 54.7}) predicts the twelve and
	 * puts the median of their errors at zero (mean absolute error 13 %):
	 * 55 us per workload op (about 1.6 kernels; PyTorch's host time for a
	 * tiny op there is 11-13 us, 13-17 us with autograd).
	 * Before 2026-12-04 it was 0, the host never the bottleneck, which put
	 * those steps at 29-102 ms. A calibration's dispatch_us replaces it. */
	c->dispatch_s = 55e-6;
	if (c->measured_defaults)
		snprintf(c->source, sizeof(c->source),
			 "defaults: %s datasheet peaks (hardware.md), efficiencies fitted to kernels "
			 "timed on an H200 (validate/data/h200-kernels-*.csv, bench_kernels --fit), "
			 "host dispatch %g us an op measured there (h200-moe-step.csv)",
			 gpu->name, c->dispatch_s * 1e6);
	else
		snprintf(c->source, sizeof(c->source),
			 "defaults: %s datasheet peaks (hardware.md), Calculon A100 efficiency tables "
			 "(formulas.md), host dispatch %g us an op measured on an H200's host "
			 "(h200-moe-step.csv), assumptions in sim/compute.c",
			 gpu->name, c->dispatch_s * 1e6);
}

void sim_compute_set_host_link(struct sim_compute *c, double pcie_Bps)
{
	/* Assumption: pinned-memory cudaMemcpy reaches about 80 % of the PCIe
	 * per-direction rate (hardware.md: Gen4 x16 ~32 GB/s, Gen5 ~64). */
	if (c->host_link_Bps <= 0 && pcie_Bps > 0)
		c->host_link_Bps = 0.8 * pcie_Bps;
}

/* ---- checks ------------------------------------------------------------------ */

static int bad(struct ts_error *err, const char *field, const char *what, double v)
{
	return ts_error_set(err, TS_EINPUT, "compute model: %s: %s (got %.9g)", field, what, v);
}

/* Upper bounds of the size curves' fixed costs: 1e14 FLOP is 0.1 s of an
 * H100's peak per GEMM and 1 GB a millisecond of its HBM per op, both far
 * beyond any fit (0.6-4e9 FLOP, 0.5 MB), short of times past the
 * engine's range. */
#define COMPUTE_MAX_GEMM_HALF 1e14
#define COMPUTE_MAX_HBM_HALF 1e9

int sim_compute_check(const struct sim_compute *c, struct ts_error *err)
{
	/* Lower bounds keep every op time far below the engine's integer
	 * picosecond range (about 1e7 s): a GPU under 1 GFLOP/s, 1 MB/s of HBM
	 * or 0.1 % efficiency is no GPU. */
	if (!(c->peak_flops >= 1e9) || !isfinite(c->peak_flops))
		return bad(err, "peak_flops", "must be at least 1e9 FLOP/s", c->peak_flops);
	if (!(c->peak_fp8_flops == 0 || (c->peak_fp8_flops >= 1e9 && c->peak_fp8_flops <= 1e18)))
		return bad(err, "peak_fp8_flops", "must be 0 or in [1e9, 1e18]", c->peak_fp8_flops);
	if (!(c->hbm_Bps >= TS_MIN_BPS && c->hbm_Bps <= TS_MAX_BPS))
		return bad(err, "hbm_bandwidth", "must be between 1 MB/s and 1 PB/s", c->hbm_Bps);
	if (!(c->hbm_eff >= 1e-3 && c->hbm_eff <= 1))
		return bad(err, "hbm_eff", "must be in [0.001, 1]", c->hbm_eff);
	if (!(c->hbm_half_bytes >= 0 && c->hbm_half_bytes <= COMPUTE_MAX_HBM_HALF))
		return bad(err, "hbm_half", "must be in [0, 1 GB]", c->hbm_half_bytes);
	if (!(c->launch_s >= 0 && c->launch_s < 1))
		return bad(err, "launch", "must be in [0, 1 s)", c->launch_s);
	if (!(c->gemm_eff_max >= 1e-3 && c->gemm_eff_max <= 1))
		return bad(err, "gemm_eff_max", "must be in [0.001, 1]", c->gemm_eff_max);
	if (!(c->gemm_half_flops >= 0 && c->gemm_half_flops <= COMPUTE_MAX_GEMM_HALF))
		return bad(err, "gemm_half_flops", "must be in [0, 1e14]", c->gemm_half_flops);
	if (!(c->attn_eff >= 1e-3 && c->attn_eff <= 1))
		return bad(err, "attn_eff", "must be in [0.001, 1]", c->attn_eff);
	if (!(c->attn_tile_overhead >= 0 && c->attn_tile_overhead <= 1000))
		return bad(err, "attn_tile_overhead", "must be in [0, 1000]", c->attn_tile_overhead);
	if (!(c->attn_bwd_ratio >= 0.01 && c->attn_bwd_ratio <= 10))
		return bad(err, "attn_bwd_ratio", "must be in [0.01, 10]", c->attn_bwd_ratio);
	if (!(c->attn_fixed_s >= 0 && c->attn_fixed_s < 1))
		return bad(err, "attn_fixed", "must be in [0, 1 s)", c->attn_fixed_s);
	if (c->attn_head_pad < 1 || c->attn_head_pad > 1024)
		return bad(err, "attn_head_pad", "must be in [1, 1024]", c->attn_head_pad);
	if (!(c->gemm_bound_mix >= 0 && c->gemm_bound_mix <= 1))
		return bad(err, "gemm_bound_mix", "must be in [0, 1]", c->gemm_bound_mix);
	if (!(c->grouped_gemm_eff == 0 || (c->grouped_gemm_eff >= 1e-3 && c->grouped_gemm_eff <= 1)))
		return bad(err, "grouped_gemm_eff", "must be 0 or in [0.001, 1]", c->grouped_gemm_eff);
	if (!(c->grouped_small_eff == 0 || (c->grouped_small_eff >= 1e-3 && c->grouped_small_eff <= 1)))
		return bad(err, "grouped_small_eff", "must be 0 or in [0.001, 1]", c->grouped_small_eff);
	if (!(c->grouped_tile_k >= 0 && c->grouped_tile_k <= 1e6))
		return bad(err, "grouped_tile_k", "must be in [0, 1e6]", c->grouped_tile_k);
	if (c->sm_count < 1 || c->sm_count > 100000)
		return bad(err, "sm_count", "must be in [1, 100000]", c->sm_count);
	if (!(c->overlap_slowdown >= 1 && c->overlap_slowdown <= 100))
		return bad(err, "overlap_slowdown", "must be in [1, 100]", c->overlap_slowdown);
	if (c->tile_m < 1 || c->tile_m > 4096)
		return bad(err, "tile_m", "must be in [1, 4096]", c->tile_m);
	if (c->tile_n < 1 || c->tile_n > 4096)
		return bad(err, "tile_n", "must be in [1, 4096]", c->tile_n);
	if (!(c->vector_flops >= 1e9) || !isfinite(c->vector_flops))
		return bad(err, "vector_flops", "must be at least 1e9 FLOP/s", c->vector_flops);
	if (!(c->fp32_gemm_ratio >= 1e-3 && c->fp32_gemm_ratio <= 1))
		return bad(err, "fp32_gemm_ratio", "must be in [0.001, 1]", c->fp32_gemm_ratio);
	if (!(c->host_link_Bps == 0 || (c->host_link_Bps >= TS_MIN_BPS && c->host_link_Bps <= TS_MAX_BPS)))
		return bad(err, "host_link_bandwidth", "must be between 1 MB/s and 1 PB/s",
			   c->host_link_Bps);
	if (!(c->dispatch_s >= 0 && c->dispatch_s < 1))
		return bad(err, "dispatch", "must be in [0, 1 s)", c->dispatch_s);
	if (!(c->host_mem_Bps >= TS_MIN_BPS && c->host_mem_Bps <= TS_MAX_BPS))
		return bad(err, "host_memory_bandwidth", "must be between 1 MB/s and 1 PB/s",
			   c->host_mem_Bps);
	return 0;
}

/* ---- calibration files ------------------------------------------------------- */

static const char *const calib_keys[] = {
	"gpu", "source", "peak_flops", "peak_fp8_flops", "hbm_bandwidth*B", "hbm_eff", "hbm_half*S",
	"launch*T", "gemm_eff_max", "gemm_half_flops", "attn_eff", "attn_tile_overhead",
	"attn_bwd_ratio", "attn_fixed*T", "attn_head_pad", "gemm_bound_mix", "grouped_gemm_eff",
	"grouped_small_eff", "grouped_tile_k",
	"sm_count", "overlap_slowdown",
	"tile_m", "tile_n", "vector_flops", "fp32_gemm_ratio",
	"host_link_bandwidth*B", "host_memory_bandwidth*B", "dispatch*T", "fit", "comment", NULL
};

/* A number in [lo, hi] (hi may be INFINITY); absent leaves *out alone. */
static int get_range(const struct jval *o, const char *key, double lo, double hi, bool lo_open,
		     double *out, struct ts_error *err)
{
	struct jval c;
	double v = 0;
	if (!jval_child(o, key, &c))
		return 0;
	if (jval_get_number(o, key, false, &v, err))
		return TS_EINPUT;
	if ((lo_open ? !(v > lo) : !(v >= lo)) || v > hi) {
		if (isinf(hi))
			return jval_error(&c, err, "must be %s %g (got %.9g)", lo_open ? ">" : ">=",
					  lo, v);
		return jval_error(&c, err, "must be in %s%g, %g] (got %.9g)", lo_open ? "(" : "[",
				  lo, hi, v);
	}
	*out = v;
	return 0;
}

static int get_int_field(const struct jval *o, const char *key, long long lo, long long hi,
			 int *out, struct ts_error *err)
{
	long long v = *out;
	if (jval_get_int(o, key, false, lo, hi, &v, err))
		return TS_EINPUT;
	*out = (int)v;
	return 0;
}

/* A bandwidth quantity given in o outside 1 MB/s..1 PB/s (the cluster
 * file's bounds): error at its position. Absent keys (defaults) are not
 * checked here. */
static int bw_out_of_range(const struct jval *o, const char *key, double v, struct ts_error *err)
{
	struct jval c;
	if (v >= TS_MIN_BPS && v <= TS_MAX_BPS)
		return 0;
	return jval_quantity_node(o, key, TS_QTY_BANDWIDTH, &c)
		       ? jval_error(&c, err, "must be between 1 MB/s and 1 PB/s (got %g B/s)", v)
		       : 0;
}

/* A time quantity given in o of 1 s or more: error at its position. */
static int time_too_long(const struct jval *o, const char *key, double v, struct ts_error *err)
{
	struct jval c;
	if (v < 1)
		return 0;
	return jval_quantity_node(o, key, TS_QTY_TIME, &c)
		       ? jval_error(&c, err, "must be under 1 s (got %g s)", v)
		       : 0;
}

int sim_compute_apply_json(struct sim_compute *c, const struct jval *o, struct ts_error *err)
{
	const char *s = NULL;
	struct jval sub;
	struct sim_compute t = *c; /* edits land on a copy: c unchanged on error */

	if (jval_check_keys(o, calib_keys, err))
		return TS_EINPUT;
	if (jval_get_string(o, "gpu", false, &s, err))
		return TS_EINPUT;
	if (s) {
		if (strlen(s) >= sizeof(t.gpu)) {
			struct jval at;
			jval_child(o, "gpu", &at);
			return jval_error(&at, err, "at most %zu bytes (got %zu)", sizeof(t.gpu) - 1,
					  strlen(s));
		}
		snprintf(t.gpu, sizeof(t.gpu), "%s", s);
		ts_one_line(t.gpu); /* (printed by the reports) */
	}
	s = NULL;
	if (jval_get_string(o, "source", false, &s, err))
		return TS_EINPUT;
	if (s) {
		/* kept whole or refused: a cut could split a UTF-8 character */
		if (strlen(s) >= sizeof(t.source)) {
			struct jval at;
			jval_child(o, "source", &at);
			return jval_error(&at, err, "at most %zu bytes (got %zu)",
					  sizeof(t.source) - 1, strlen(s));
		}
		snprintf(t.source, sizeof(t.source), "%s", s);
		ts_one_line(t.source); /* (printed by the reports) */
	}
	/* "fit" (how the numbers were obtained) and "comment" are free-form
	 * documentation; only their presence as objects/strings is checked. */
	if (jval_child(o, "fit", &sub) && jval_expect_object(&sub, err))
		return TS_EINPUT;
	if (jval_get_string(o, "comment", false, &s, err))
		return TS_EINPUT;

	if (get_range(o, "peak_flops", 1e9, 1e18, false, &t.peak_flops, err) ||
	    get_range(o, "peak_fp8_flops", 0, 1e18, false, &t.peak_fp8_flops, err) ||
	    jval_get_quantity(o, "hbm_bandwidth", TS_QTY_BANDWIDTH, false, false, &t.hbm_Bps, err) ||
	    get_range(o, "hbm_eff", 1e-3, 1, false, &t.hbm_eff, err) ||
	    jval_get_quantity(o, "hbm_half", TS_QTY_SIZE, false, true, &t.hbm_half_bytes, err) ||
	    jval_get_quantity(o, "launch", TS_QTY_TIME, false, true, &t.launch_s, err) ||
	    get_range(o, "gemm_eff_max", 1e-3, 1, false, &t.gemm_eff_max, err) ||
	    get_range(o, "gemm_half_flops", 0, COMPUTE_MAX_GEMM_HALF, false, &t.gemm_half_flops,
		      err) ||
	    get_range(o, "attn_eff", 1e-3, 1, false, &t.attn_eff, err) ||
	    get_range(o, "attn_tile_overhead", 0, 1000, false, &t.attn_tile_overhead, err) ||
	    get_range(o, "attn_bwd_ratio", 0.01, 10, false, &t.attn_bwd_ratio, err) ||
	    jval_get_quantity(o, "attn_fixed", TS_QTY_TIME, false, true, &t.attn_fixed_s, err) ||
	    get_int_field(o, "attn_head_pad", 1, 1024, &t.attn_head_pad, err) ||
	    get_range(o, "gemm_bound_mix", 0, 1, false, &t.gemm_bound_mix, err) ||
	    get_range(o, "grouped_gemm_eff", 0, INFINITY, false, &t.grouped_gemm_eff, err) ||
	    get_range(o, "grouped_small_eff", 0, INFINITY, false, &t.grouped_small_eff, err) ||
	    get_range(o, "grouped_tile_k", 0, 1e6, false, &t.grouped_tile_k, err) ||
	    get_int_field(o, "sm_count", 1, 100000, &t.sm_count, err) ||
	    get_range(o, "overlap_slowdown", 1, 100, false, &t.overlap_slowdown, err) ||
	    get_int_field(o, "tile_m", 1, 4096, &t.tile_m, err) ||
	    get_int_field(o, "tile_n", 1, 4096, &t.tile_n, err) ||
	    get_range(o, "vector_flops", 1e9, 1e18, false, &t.vector_flops, err) ||
	    get_range(o, "fp32_gemm_ratio", 1e-3, 1, false, &t.fp32_gemm_ratio, err) ||
	    jval_get_quantity(o, "host_link_bandwidth", TS_QTY_BANDWIDTH, false, false,
			      &t.host_link_Bps, err) ||
	    jval_get_quantity(o, "host_memory_bandwidth", TS_QTY_BANDWIDTH, false, false,
			      &t.host_mem_Bps, err) ||
	    jval_get_quantity(o, "dispatch", TS_QTY_TIME, false, true, &t.dispatch_s, err))
		return TS_EINPUT;
	if (bw_out_of_range(o, "hbm_bandwidth", t.hbm_Bps, err) ||
	    bw_out_of_range(o, "host_link_bandwidth", t.host_link_Bps, err) ||
	    bw_out_of_range(o, "host_memory_bandwidth", t.host_mem_Bps, err))
		return TS_EINPUT;
	if (t.hbm_half_bytes > COMPUTE_MAX_HBM_HALF) {
		struct jval at;
		if (jval_quantity_node(o, "hbm_half", TS_QTY_SIZE, &at))
			return jval_error(&at, err, "must be at most 1 GB (got %g bytes)",
					  t.hbm_half_bytes);
	}
	if (t.peak_fp8_flops > 0 && t.peak_fp8_flops < 1e9) {
		struct jval at;
		jval_child(o, "peak_fp8_flops", &at);
		return jval_error(&at, err, "must be 0 (no FP8) or at least 1e9 FLOP/s (got %.9g)",
				  t.peak_fp8_flops);
	}
	/* 0 turns the grouped kernel's model off; a positive value is an
	 * efficiency like the others */
	static const char *const eff0[] = { "grouped_gemm_eff", "grouped_small_eff" };
	for (int i = 0; i < 2; i++) {
		double v = i ? t.grouped_small_eff : t.grouped_gemm_eff;
		struct jval at;
		if (((v > 0 && v < 1e-3) || v > 1) && jval_child(o, eff0[i], &at))
			return jval_error(&at, err, "must be 0 (none) or in [0.001, 1] (got %.9g)", v);
	}
	if (time_too_long(o, "dispatch", t.dispatch_s, err) ||
	    time_too_long(o, "launch", t.launch_s, err) ||
	    time_too_long(o, "attn_fixed", t.attn_fixed_s, err))
		return TS_EINPUT;
	if (sim_compute_check(&t, err))
		return TS_EINPUT;
	*c = t;
	return 0;
}

int sim_compute_load(struct sim_compute *c, const char *path, struct ts_error *err)
{
	struct jdoc d = JDOC_INIT;
	struct jval root, src;
	int rc;

	rc = jdoc_load(&d, path, err);
	if (rc)
		goto fail;
	root = jdoc_root(&d);
	rc = sim_compute_apply_json(c, &root, err);
	if (rc)
		goto fail;
	if (!jval_child(&root, "source", &src)) {
		/* No "source" given: name the file, so reports say where numbers came from. */
		static const char lead[] = "calibration file ";
		memcpy(c->source, lead, sizeof(lead));
		/* printable, whole characters where a long path is cut */
		json_clean_text(c->source, sizeof(c->source), sizeof(lead) - 1, path, strlen(path));
	}
fail:
	jdoc_release(&d);
	return rc;
}

/* ---- the model ------------------------------------------------------------------ */

/* GPU<->host rate when neither a calibration nor the cluster set one:
 * 80 % of PCIe Gen4 x16 (hardware.md: ~32 GB/s per direction). */
#define HOST_LINK_FALLBACK_BPS (0.8 * 32e9)

const char *sim_op_class_name(enum sim_op_class cls)
{
	switch (cls) {
	case SIM_OP_GEMM: return "gemm";
	case SIM_OP_ATTN: return "attention";
	case SIM_OP_ELEMENTWISE: return "elementwise";
	case SIM_OP_OPTIMIZER: return "optimizer";
	case SIM_OP_HOST_COPY: return "host copy";
	case SIM_OP_HOST_OPT: return "host optimizer";
	case SIM_OP_CLASS_COUNT: break;
	}
	return "?";
}

static double ceil_div(double a, double b) { return ceil(a / b); }

#define M_PI_VAL 3.14159265358979323846

/* Row tiles of tm that cover m rows: ceil(m / tm); for a grouped GEMM
 * whose groups' rows spread about m with standard deviation sd (the
 * experts' token counts), per group their m / tm plus the expected round-up
 * of each group's rows to whole tiles on its own (found by review: every
 * expert took the rank's mean, so a balanced 2,048 tokens an expert filled
 * 8 tiles of 256 exactly). The round-up, ceil(X / tm) - X / tm for X > 0
 * and 0 for a group without rows, is taken under a normal X (an
 * approximation of the counts): sum over k >= 0 of P(X > k tm), less
 * E[X+] / tm; the mean stays m / tm, whatever part of the normal falls
 * below zero (found by review: counting those tails as rows added tiles,
 * +29 % at a coefficient of variation of 2). Terms more than 8 sd below m
 * are 1, above it 0; from sd >= tm on, the rows' residue in a tile is
 * close to uniform (its Fourier terms exp(-2 pi^2 sd^2 / tm^2); the cut at
 * zero aside), so the round-up is half a tile for the groups with rows,
 * and the sum is not walked (its terms grow with sd / tm). */
static double row_tiles(double m, double sd, double tm)
{
	if (!(sd > 0))
		return ceil_div(m, tm);
	double z = m / sd, pos = 0.5 * erfc(-z / sqrt(2.0)); /* P(X > 0) */
	if (sd >= tm)
		return m / tm + 0.5 * pos;
	double lo = floor((m - 8 * sd) / tm), s;
	lo = lo > 0 ? lo : 0;
	s = lo;
	for (double k = lo; k * tm < m + 8 * sd; k++)
		s += 0.5 * erfc((k * tm - m) / (sd * sqrt(2.0)));
	/* E[X+] = m P(X > 0) + sd phi(m / sd) */
	double xpos = m * pos + sd * exp(-0.5 * z * z) / sqrt(2 * M_PI_VAL);
	return m / tm + (s - xpos / tm);
}

/* Fraction of tile slots doing useful work for tiles tm x tn over sm SMs,
 * with split-K s: tile quantisation x wave quantisation (NVIDIA "Matrix
 * Multiplication Background User's Guide", Tile/Wave Quantization); rt row
 * tiles a GEMM of the batch (row_tiles). */
static double tile_util(double m, double n, double batch, double tm, double tn, double sm,
			double split, double rt)
{
	double tiles = rt * ceil_div(n, tn) * batch * split;
	double waves = ceil_div(tiles, sm);
	return (m * n * batch * split) / (waves * sm * tm * tn);
}

/* Split-K slices keep a useful depth: at least 256 elements of k each, an
 * assumption (4 k-steps of a 64-deep tile); a k shorter than split x 256
 * runs its slices that deep anyway (padded), so the split costs what it
 * does at k = split x 256 and a GEMM never gets faster as k grows (found
 * by review: refusing the split instead made 1024 x 1024 x 1023 on an H100
 * 34 % slower than x 1024). */
#define SPLITK_MIN_K 256.0

static double pow2_at_least(double x)
{
	double p = 8;
	while (p < x)
		p *= 2;
	return p;
}

static double gemm_util(const struct sim_compute *c, int64_t m, int64_t n, int64_t k,
			int64_t batch, double m_sd)
{
	double best = 0, sm = c->sm_count;
	double dm = (double)m, dn = (double)n, dk = (double)k, db = (double)batch;
	for (int orient = 0; orient < 2; orient++) {
		double tm = orient ? c->tile_n : c->tile_m;
		double tn = orient ? c->tile_m : c->tile_n;
		/* A dimension smaller than the tile gets a kernel whose tile fits
		 * it (cuBLAS's skinny/GEMV kernels: the next power of two, at
		 * least 8, an assumption, and never above the full tile, which a
		 * calibration may set to any size: found by review, a 192-row tile
		 * made m = 150 take a 256-row one, slower than m = 192) instead
		 * of the full tile: such GEMMs are memory-bound, and the HBM bound
		 * of the caller prices them. */
		if (dm < tm)
			tm = fmin(tm, pow2_at_least(dm));
		if (dn < tn)
			tn = fmin(tn, pow2_at_least(dn));
		double rt = row_tiles(dm, m_sd, tm); /* (the same for every split) */
		for (double split = 1; split <= 16; split *= 2) {
			double u = tile_util(dm, dn, db, tm, tn, sm, split, rt);
			if (split > 1 && dk < split * SPLITK_MIN_K)
				u *= dk / (split * SPLITK_MIN_K);
			if (u > best)
				best = u;
		}
	}
	return best > 1 ? 1 : best;
}

/* Saturating size curve: Calculon-style efficiency by op size, smooth. */
static double size_eff(const struct sim_compute *c, double flops)
{
	if (flops <= 0)
		return c->gemm_eff_max;
	return c->gemm_eff_max * flops / (flops + c->gemm_half_flops);
}

/* GEMM efficiency of a grouped GEMM of batch groups whose m spread by m_sd
 * (0: a batched GEMM of one shape). */
static double gemm_eff_grouped(const struct sim_compute *c, int64_t m, int64_t n, int64_t k,
			       int64_t batch, double m_sd)
{
	if (batch < 1)
		batch = 1;
	if (m <= 0 || n <= 0 || k <= 0)
		return c->gemm_eff_max;
	double flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
	double u = gemm_util(c, m, n, k, batch, batch > 1 ? m_sd : 0);
	return size_eff(c, flops / u) * u;
}

double sim_compute_gemm_eff_batched(const struct sim_compute *c, int64_t m, int64_t n, int64_t k,
				    int64_t batch)
{
	return gemm_eff_grouped(c, m, n, k, batch, 0);
}

double sim_compute_gemm_eff(const struct sim_compute *c, int64_t m, int64_t n, int64_t k)
{
	return sim_compute_gemm_eff_batched(c, m, n, k, 1);
}

/* A grouped-GEMM kernel's efficiency (sim_op_desc.grouped, where
 * grouped_gemm_eff is set): the kernels torch._grouped_mm launches on
 * Hopper, as torch.profiler named them (validate/data/h200-kernel-names.jsonl:
 * CUTLASS 3 ptr-array kernels with 2 x 1 x 1 clusters), take 64 x 128
 * tiles (ping-pong) when the groups have 128 rows or fewer on average,
 * else 128 x 256 (cooperative); a cluster of two covers 128 x 128 or 256
 * x 256 of one group, with one load of the group's weight tile shared by
 * both (TMA multicast). The time steps where a group's rows need one more
 * cluster row: measured flat from 16 to 128 rows an expert, up 21 % at
 * 144, flat again to 256 and nearly doubled at 272, again at 576 and 832
 * (equal rows, 128 experts, 2,048 x 1,536; h200-kernels-probe.csv). So
 * each group's rows are cut into cluster rows (row_tiles: with the groups'
 * spread), the columns into cluster columns, and the clusters run in
 * waves over the GPU's SMs in pairs; no split-K (the kernel has none). The
 * full tiles' efficiency is grouped_gemm_eff (grouped_small_eff for the
 * ping-pong kernel), less each tile's fixed cost of grouped_tile_k more k.
 * Where the mean crosses 128 rows the kernel changes and the time can
 * fall: ragged rows about a mean of 128 take about 1.5 cluster rows of 128
 * at the ping-pong kernel's efficiency, 129 one of 256 at the cooperative
 * kernel's (measured: 376.6 us at a multinomial mean of 128 rows, 323.1
 * us at 144 equal ones). */
bool sim_compute_grouped_small(int64_t m, int64_t n)
{
	/* PyTorch's dispatch as recalled (GroupMM.cu: small when the rows per
	 * group or the columns are 128 or fewer); only the rows' side was
	 * seen, in the profiles (every measured n >= 1,536) */
	return m <= 128 || n <= 128;
}

static double gemm_eff_grouped_kernel(const struct sim_compute *c, int64_t m, int64_t n,
				      int64_t k, int64_t batch, double m_sd)
{
	bool small = sim_compute_grouped_small(m, n);
	double dm = (double)m, tm = small ? 128 : 256, tn = tm;
	double slots = c->sm_count >= 2 ? (double)(c->sm_count / 2) : 1;
	double eff = small && c->grouped_small_eff > 0 ? c->grouped_small_eff : c->grouped_gemm_eff;
	double rt = row_tiles(dm, batch > 1 ? m_sd : 0, tm);
	return eff * tile_util(dm, (double)n, (double)batch, tm, tn, slots, 1, rt) *
	       (double)k / ((double)k + c->grouped_tile_k);
}

static double peak_for(const struct sim_compute *c, int dtype_bytes)
{
	if (dtype_bytes == 1 && c->peak_fp8_flops > 0)
		return c->peak_fp8_flops;
	if (dtype_bytes >= 4)
		return c->peak_flops * c->fp32_gemm_ratio;
	return c->peak_flops;
}

/* HBM time: bytes / (bandwidth x hbm_eff x B / (B + half)) = a bandwidth
 * term plus a fixed hbm_half / (bandwidth x hbm_eff) per op (Calculon's
 * mem1 MB_efficiency table, smooth form). */
static double hbm_time_s(const struct sim_compute *c, double bytes)
{
	if (bytes <= 0)
		return 0;
	return (bytes + c->hbm_half_bytes) / (c->hbm_Bps * c->hbm_eff);
}

/* Fused attention's tiling (FlashAttention-style kernels, and cuDNN's):
 * each query tile of ATTN_TILE rows walks the key tiles its queries attend
 * and pays a fixed cost besides (loading Q, the softmax rescale, writing
 * O: attn_tile_overhead, in key tiles); under a causal or window mask the
 * tile on the edge runs whole though half of it is masked (half a tile
 * more than the FLOPs count). The head dimension runs padded to a
 * multiple of attn_head_pad (FlashAttention-2's kernels: 32; cuDNN's on
 * Hopper run a head of 72 as 128: validate/data/h200-attention-*.csv).
 * Factor on the op's FLOPs, 1 when the op carries no shape. Measured
 * (validate/data/h200-kernels-*.csv, cuDNN): the forward at 0.44 of peak
 * at 1,024 causal keys and 0.61 at 8,192. */
#define ATTN_TILE 128.0

static double attn_waves(const struct sim_compute *c, const struct sim_op_desc *op, double q,
			 double kt, double fix);

/* (times the grid's waves, attn_waves, from the same tiles) */
static double attn_tiling(const struct sim_compute *c, const struct sim_op_desc *op)
{
	if (op->m <= 0 || op->n <= 0 || op->k <= 0)
		return 1;
	/* a sequence shorter than the tile runs a tile its size */
	double tile = fmin(ATTN_TILE, fmax(16.0, (double)op->m));
	double kt = (double)op->n / tile; /* key tiles of FLOPs a query tile does */
	double fix = (op->masked ? 0.5 : 0) + c->attn_tile_overhead;
	double d = (double)op->k, pad = c->attn_head_pad, dpad = ceil(d / pad) * pad;
	return (kt + fix) / kt * (dpad / d) * attn_waves(c, op, (double)op->m / tile, kt, fix);
}

/* The query tiles' CTAs run on the SMs, one at a time each (the fused
 * kernels' shared memory), taken in launch order (head by head, each
 * head's tiles in order) by whichever SM frees first. attn_tiling prices
 * the average SM's share of the work; a kernel lasts as long as its
 * busiest SM: a grid of fewer CTAs than SMs lasts its longest CTA, a
 * causal grid of a few waves its heavy last tiles. Measured on the H200
 * (validate/data/h200-attention-*.csv, cuDNN, one sequence): at 1,024
 * causal tokens 4, 8 and 16 heads take the same 18.6-19.4 us (8 tiles a
 * head, up to 128 CTAs on 132 SMs), 32 and 64 heads 31.7 and 49.4 us;
 * the average alone gave 47 % less there. attn_waves returns the busiest
 * SM's work over the average's (>= 1), each from the same list of CTAs.
 *
 * A CTA's work, in key tiles: the keys its queries attend plus fix (the
 * masked edge's half tile and attn_tile_overhead). Unmasked, every tile
 * walks kt (the op's n / tile); under a mask, query tile j walks
 * min(j + 0.5, W) x r: causal, W past the end and r = 2 kt / q (1 at
 * the FLOPs' half span); a sliding window (sim_op_desc.window, which the
 * workload sets: inferred from kt, a rounded n put causal masks on either
 * side of a rule and moved the last tile's work, found by review), r = 1
 * and W the window in tiles that gives the op's mean of kt, kt = W - W^2
 * / (2 q); so that the work sums to what the FLOPs count. A last tile of
 * f < 1 of a tile's queries does f of a tile's work (as attn_tiling
 * prices fractional tiles), so that the time does not fall as the
 * sequence grows past a tile boundary (found by review: counted whole,
 * 129 queries took less than 128). */
#define ATTN_SIM_WAVES 64.0
#define ATTN_SIM_MAX_SM 1024
#define ATTN_TAIL 0.62
#define ATTN_CACHE 64

struct attn_grid {
	int S, nh, nq;          /* SMs, heads x sequences, query tiles (the last f of one) */
	double f, kt, W, r, fix;/* W < 0: unmasked, every tile kt */
};

/* The work of query tile j (from 0) of a head, in key tiles. */
static double attn_tile_work(const struct attn_grid *g, int j)
{
	double keys = g->W < 0 ? g->kt : g->r * fmin(j + (j == g->nq - 1 ? g->f / 2 : 0.5), g->W);
	return (j == g->nq - 1 ? g->f : 1) * (keys + g->fix);
}

/* A head's work: its tiles' sum, in closed form (the tiles before the
 * window's cap walk j + 0.5, the rest W). */
static double attn_head_work(const struct attn_grid *g)
{
	int full = g->nq - 1;
	double sum;
	if (g->W < 0)
		sum = full * (g->kt + g->fix);
	else {
		double J = fmin(full, fmax(0, ceil(g->W - 0.5)));
		sum = g->r * (J * J / 2 + (full - J) * g->W) + full * g->fix;
	}
	return sum + attn_tile_work(g, g->nq - 1);
}

/* The grid list-scheduled on its SMs in launch order: the last SM's
 * finish, in key tiles. A binary min-heap of the SMs' finish times, its
 * root the SM that frees first. The same grids recur op after op (every
 * layer's, every micro-batch's) and a schedule of 1,000 CTAs costs 10-40
 * us (64 waves of 132 SMs about 0.4 ms): a small cache of recent grids,
 * one per thread, keeps it off the executor's path (without it the quick
 * start took 2.1 s of CPU against 1.4 s). An entry of S 0 is empty. */
static double attn_schedule(const struct attn_grid *g)
{
	static _Thread_local struct {
		struct attn_grid g;
		double span;
	} cache[ATTN_CACHE];
	unsigned slot = ((unsigned)g->nh * 2654435761u + (unsigned)g->nq * 40503u +
			 (unsigned)g->S + (unsigned)fmod(g->kt * 64, 65536.0)) %
			ATTN_CACHE;
	const struct attn_grid *k = &cache[slot].g;
	if (k->S == g->S && k->nh == g->nh && k->nq == g->nq && k->f == g->f &&
	    k->kt == g->kt && k->W == g->W && k->r == g->r && k->fix == g->fix)
		return cache[slot].span;
	double h[ATTN_SIM_MAX_SM], span = 0;
	int n = g->S < g->nh * g->nq ? g->S : g->nh * g->nq;
	for (int i = 0; i < n; i++)
		h[i] = 0;
	for (int b = 0; b < g->nh; b++)
		for (int j = 0; j < g->nq; j++) {
			double t = h[0] + attn_tile_work(g, j);
			int i = 0; /* the root's new finish time sifts down */
			for (;;) {
				int l = 2 * i + 1, r = l + 1, m = i;
				if (l < n && h[l] < t)
					m = l;
				if (r < n && h[r] < (m == i ? t : h[m]))
					m = r;
				if (m == i)
					break;
				h[i] = h[m];
				i = m;
			}
			h[i] = t;
		}
	for (int i = 0; i < n; i++)
		span = fmax(span, h[i]);
	cache[slot].g = *g;
	cache[slot].span = span;
	return span;
}

/* The grid's busiest SM over its average SM (>= 1), q query tiles a head
 * (the last partial), kt key tiles a tile walks on average, fix each
 * tile's cost besides (attn_tiling's). A grid of equal CTAs
 * takes whole waves. Any other (masked, or a last partial tile: found by
 * review, counting partial tiles by their share of a wave put 11 heads of
 * 1,537 tokens at twice 1,536's) is scheduled CTA by CTA up to
 * ATTN_SIM_WAVES waves (64: its first schedule costs up to 0.4 ms, then
 * the cache's); beyond, the average plus the tail the schedule left at
 * the largest grid of whole heads within those waves, a share of the
 * longest CTA that stays (0.58-0.65 of it from 8 to 1,024 waves of
 * causal heads), so that a head more never takes less; on more SMs than
 * the heap holds, 0.62 of it less the share of one SM (Graham's bound: 1
 * x; past 1,024 SMs the waves factor steps by up to -4 %, a GPU that does
 * not exist). As the sequence grows by a token the time can still fall by
 * up to 0.25 % causal, 0.4 % under a window (a list schedule's anomalies, n
 * rounded to whole keys, the window solved from them; 1.2 % at 8 waves,
 * found by review). */
static double attn_waves(const struct sim_compute *c, const struct sim_op_desc *op, double q,
			 double kt, double fix)
{
	double heads = op->batch > 0 ? (double)op->batch : 1, S = c->sm_count;
	struct attn_grid g = { .S = c->sm_count, .nq = (int)fmin(ceil(q), 1e9), .kt = kt,
			       .fix = fix, .W = -1, .r = 1 };
	g.f = q - (g.nq - 1);
	if (op->masked) {
		if (!op->window || kt >= q / 2) { /* causal */
			g.W = q;
			g.r = 2 * kt / q;
		} else { /* a window: kt = W - W^2 / (2 q) */
			g.W = q - sqrt(q * q - 2 * q * kt);
		}
	}
	double head = attn_head_work(&g), ncta = heads * g.nq, avg = heads * head / S;
	double w_max = attn_tile_work(&g, g.nq - 1);
	if (g.nq > 1)
		w_max = fmax(w_max, attn_tile_work(&g, g.nq - 2));
	double span;
	if (g.W < 0 && g.f == 1) /* equal CTAs: whole waves */
		span = ceil(ncta / S) * w_max;
	else if (ncta <= S)
		span = w_max;
	else if (c->sm_count > ATTN_SIM_MAX_SM)
		span = avg + ATTN_TAIL * w_max * (1 - 1 / S);
	else if (ncta <= ATTN_SIM_WAVES * S) {
		g.nh = (int)heads;
		span = attn_schedule(&g);
	} else {
		/* the tail of the largest grid of whole heads within the waves */
		g.nh = (int)floor(ATTN_SIM_WAVES * S / g.nq);
		double tail = ATTN_TAIL * w_max * (1 - 1 / S);
		if (g.nh >= 1)
			tail = attn_schedule(&g) - g.nh * head / S;
		span = avg + tail;
	}
	return fmax(1, span / avg);
}

/* Fused attention's kernels besides the main one, in its backward: the
 * row sums of dO x O and the conversion of dQ, accumulated in fp32, to 16
 * bits (FlashAttention-2's flash_bwd_dot_do_o and flash_bwd_convert_dq,
 * cuDNN's compute_dot_do_o and convert_dq_to_16bits: torch.profiler's
 * kernel names, validate/data/h200-step-stacks-kernels.jsonl). The first
 * reads O and dO (2 + 2 bytes a query element), the second reads dQ and
 * writes it (4 + 2); their launches are counted with the main kernel's. */
#define ATTN_BWD_KERNELS 3
#define ATTN_DOT_DO_O_BYTES 4.0
#define ATTN_CONVERT_DQ_BYTES 6.0

double sim_compute_time_s(const struct sim_compute *c, const struct sim_op_desc *op)
{
	double flops = op->flops, bytes = op->bytes, t_flop = 0, launches = 1, extra = 0;
	int64_t batch = op->batch > 0 ? op->batch : 1;
	int dt = op->dtype_bytes > 0 ? op->dtype_bytes : 2;

	TS_ASSERT(flops >= 0 && bytes >= 0 && isfinite(flops) && isfinite(bytes));
	switch (op->cls) {
	case SIM_OP_GEMM: {
		bool shaped = op->m > 0 && op->n > 0 && op->k > 0;
		double dm = (double)op->m, dn = (double)op->n, dk = (double)op->k;
		if (flops == 0 && shaped)
			flops = 2.0 * dm * dn * dk * (double)batch;
		if (bytes == 0 && shaped)
			bytes = (double)dt * (dm * dk + dk * dn + dm * dn) * (double)batch;
		bool kernel = op->grouped && c->grouped_gemm_eff > 0 && shaped;
		double eff = kernel   ? gemm_eff_grouped_kernel(c, op->m, op->n, op->k, batch, op->m_sd)
			     : shaped ? gemm_eff_grouped(c, op->m, op->n, op->k, batch, op->m_sd)
				      : size_eff(c, flops);
		if (kernel) /* and the kernel that writes the groups' pointers
			     * and shapes first (1.5-1.7 us measured) */
			launches = 2;
		if (flops > 0)
			t_flop = flops / (peak_for(c, dt) * eff);
		break;
	}
	case SIM_OP_ATTN: {
		bool shaped = op->m > 0 && op->n > 0 && op->k > 0;
		if (flops > 0)
			t_flop = flops * attn_tiling(c, op) /
				 (peak_for(c, dt) *
				  fmin(1, c->attn_eff * (op->backward ? c->attn_bwd_ratio : 1)));
		if (shaped && flops > 0) {
			/* one sequence's worth of query elements, each head */
			double e = (double)op->m * (double)op->k * (double)batch;
			extra = c->attn_fixed_s;
			if (op->backward) {
				launches = ATTN_BWD_KERNELS;
				extra += hbm_time_s(c, ATTN_DOT_DO_O_BYTES * e) +
					 hbm_time_s(c, ATTN_CONVERT_DQ_BYTES * e);
			}
		}
		break;
	}
	case SIM_OP_ELEMENTWISE:
	case SIM_OP_OPTIMIZER:
		if (flops > 0)
			t_flop = flops / c->vector_flops;
		break;
	case SIM_OP_HOST_COPY: /* PCIe, not HBM, bounds it */
		return bytes / (c->host_link_Bps > 0 ? c->host_link_Bps : HOST_LINK_FALLBACK_BPS) +
		       c->launch_s;
	case SIM_OP_HOST_OPT: /* on the CPU: no kernel launch */
		return bytes / c->host_mem_Bps;
	case SIM_OP_CLASS_COUNT:
		TS_BUG("op class %d", (int)op->cls);
	}
	double t_mem = hbm_time_s(c, bytes);
	/* a GEMM near the ridge runs slower than either bound alone: its
	 * operand traffic and its tiles' math overlap imperfectly (measured on
	 * the H200, validate/data: near the ridge the roofline was 19 % short
	 * on GEMMs and 28-33 % on grouped ones) */
	if (op->cls == SIM_OP_GEMM && c->gemm_bound_mix > 0 && t_flop > 0 && t_mem > 0) {
		double hi = fmax(t_flop, t_mem), lo = fmin(t_flop, t_mem), p = 1 / c->gemm_bound_mix;
		return hi * pow(1 + pow(lo / hi, p), c->gemm_bound_mix) + launches * c->launch_s;
	}
	return (t_flop > t_mem ? t_flop : t_mem) + launches * c->launch_s + extra;
}

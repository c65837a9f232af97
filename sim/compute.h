/* compute.h: the compute model: how long one kernel (GEMM, attention,
 * element-wise, optimizer step) takes on one GPU.
 *
 *   t = max(FLOPs / (peak x efficiency(op)), bytes / (HBM bandwidth x hbm_eff)) + launch
 *
 * Efficiency curves are per GPU (GEMM efficiency by shape, attention and
 * vector-op efficiencies); every default number is sourced or labelled an
 * assumption, and a calibration file (`--calibration FILE`, JSON) replaces
 * them. Contract between the iteration executor (sim/exec*) and the compute
 * model (sim/compute.c): extend freely, do not rename. */
#ifndef TS_SIM_COMPUTE_H
#define TS_SIM_COMPUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/json.h"
#include "topo/topo.h"

enum sim_op_class {
	SIM_OP_GEMM,        /* dense matrix multiply, shape m x n x k */
	SIM_OP_ATTN,        /* attention core (scores, softmax, values) */
	SIM_OP_ELEMENTWISE, /* norms, activations, residual adds, dropout: memory-bound */
	SIM_OP_OPTIMIZER,   /* optimizer step over parameters: memory-bound */
	SIM_OP_HOST_COPY,   /* copy between GPU and host memory over PCIe (ZeRO-Offload): bytes */
	SIM_OP_HOST_OPT,    /* optimizer step on the host CPU (ZeRO-Offload): host memory bytes */
	SIM_OP_CLASS_COUNT  /* number of classes (named so: sim.h's enum sim_op has SIM_OP_COUNT) */
};

struct sim_op_desc {
	enum sim_op_class cls;  /* which curve applies */
	double flops;           /* FLOP (2 per multiply-accumulate) */
	double bytes;           /* bytes moved to/from HBM */
	int64_t m, n, k;        /* GEMM shape (SIM_OP_GEMM), elements; 0 if unknown */
	int64_t batch;          /* independent GEMMs of that shape (e.g. experts), count */
	double m_sd;            /* grouped GEMM whose groups' m differ (experts' token
	                         * counts): their standard deviation about m, elements;
	                         * 0: every group m */
	int dtype_bytes;        /* 2 bf16/fp16, 1 fp8, 4 fp32 */
	bool masked;            /* fused attention (SIM_OP_ATTN) whose m queries attend n keys
	                         * each on average under a causal or window mask: the tiles on
	                         * its edge run partly masked (with m, n, k = head dim, batch =
	                         * heads x sequences; 0 shape: no tiling cost) */
	bool window;            /* fused attention, masked: the mask is a sliding window
	                         * shorter than the sequence, not a causal one */
	bool backward;          /* fused attention: the backward kernel (attn_bwd_ratio) */
	bool grouped;           /* GEMM run by a grouped-GEMM kernel (MoE experts: CUTLASS's,
	                         * as torch._grouped_mm runs them), batch groups: its own
	                         * tiles on each group's rows, no split-K (grouped_gemm_eff;
	                         * where that is 0: priced as a batched GEMM) */
};

struct sim_compute {
	char gpu[48];           /* GPU name the numbers are for */
	char source[512];       /* where the numbers come from (datasheet, calibration file) */
	double peak_flops;      /* dense BF16/FP16 peak, FLOP/s */
	double peak_fp8_flops;  /* dense FP8 peak, FLOP/s (0 if none) */
	double hbm_Bps;         /* HBM bandwidth, bytes/s */
	double hbm_eff;         /* achievable fraction of HBM bandwidth, dimensionless */
	double launch_s;        /* per-kernel launch/tail overhead, seconds */
	double gemm_eff_max;    /* GEMM efficiency of large, well-shaped GEMMs, dimensionless */
	double gemm_half_flops; /* GEMM size at which efficiency is half of max, FLOP */
	double attn_eff;        /* attention core efficiency vs peak, dimensionless */
	double attn_tile_overhead; /* fused attention: cost of each query tile beyond its key
	                            * tiles (loading Q, the softmax rescale, writing O), in key
	                            * tiles of ATTN_TILE keys */
	double attn_bwd_ratio;  /* fused attention: the backward kernel's efficiency over the
	                         * forward's (its FLOPs 2.5x the forward's), dimensionless */
	double attn_fixed_s;    /* fused attention: each forward's and backward's fixed cost
	                         * beyond its kernels' launches (prologue, epilogue, the
	                         * kernel's ramp), s */
	int attn_head_pad;      /* fused attention: the head dimension runs padded to a
	                         * multiple of this (the kernels' head sizes), elements */
	double gemm_bound_mix;  /* GEMMs: their compute and HBM times combine as a p-norm of
	                         * p = 1 / mix, (t_flop^p + t_mem^p)^(1/p): near the ridge
	                         * slower than the larger alone; 0: max (the plain roofline),
	                         * 1: their sum, dimensionless */
	double grouped_gemm_eff;/* grouped GEMM kernels (sim_op_desc.grouped): efficiency of their
	                         * full tiles, fraction of peak; 0: no model of such a kernel,
	                         * grouped GEMMs priced as batched ones, dimensionless */
	double grouped_small_eff;/* the grouped GEMM kernel of groups of 128 rows or fewer on
	                         * average (64 x 128 tiles, ping-pong): its full tiles'
	                         * efficiency, fraction of peak; 0: grouped_gemm_eff */
	double grouped_tile_k;  /* grouped GEMM kernels: each tile's fixed cost (its pipeline's
	                         * fill, its output's store) as this much more depth of k,
	                         * elements */
	int sm_count;           /* SMs, for wave quantisation, count */
	double overlap_slowdown;/* compute slowdown while communication overlaps it, factor >= 1 */
	/* Added by the compute model (compute.c); sim_compute_init sets them. */
	int tile_m, tile_n;     /* GEMM output tile (cuBLAS/CUTLASS CTA tile), elements */
	double vector_flops;    /* non-tensor-core FP16 peak for element-wise math, FLOP/s */
	double hbm_half_bytes;  /* transfer size at which HBM efficiency is half of hbm_eff, bytes */
	double fp32_gemm_ratio; /* fp32 (TF32) GEMM peak / BF16 peak, dimensionless */
	double host_link_Bps;   /* achieved GPU<->host copy rate per direction, bytes/s (0: from the node's PCIe) */
	double host_mem_Bps;    /* host memory bandwidth one GPU's CPU optimizer gets, bytes/s */
	double dispatch_s;      /* host time to issue one op (framework + launch), s; overlaps the GPU */
	bool measured_defaults; /* sim_compute_init's efficiencies were fitted to kernels timed on
	                         * this GPU's architecture (Hopper), not assumed */
};

/* Defaults for a GPU from the cluster's GPU spec (peak, HBM, SMs by
 * sm_arch), each default sourced or labelled an assumption. */
void sim_compute_init(struct sim_compute *c, const struct topo_gpu_spec *gpu);
/* Replace numbers from a calibration JSON file; unknown keys are errors. */
int sim_compute_load(struct sim_compute *c, const char *path, struct ts_error *err);
/* Time of one op, seconds. */
double sim_compute_time_s(const struct sim_compute *c, const struct sim_op_desc *op);
/* GEMM efficiency (fraction of peak) for a shape; for reports and tests. */
double sim_compute_gemm_eff(const struct sim_compute *c, int64_t m, int64_t n, int64_t k);

/* ---- added by compute.c ---------------------------------------------------- */

/* GEMM efficiency of `batch` independent m x n x k GEMMs run as one kernel
 * (grouped/batched GEMM, e.g. MoE experts or attention heads). */
double sim_compute_gemm_eff_batched(const struct sim_compute *c, int64_t m, int64_t n, int64_t k,
				    int64_t batch);
/* Whether a grouped GEMM of m rows a group on average and n columns takes
 * the small (ping-pong, 64 x 128) grouped kernel: grouped_small_eff. */
bool sim_compute_grouped_small(int64_t m, int64_t n);
/* Fill host_link_Bps from the node's PCIe rate per direction when no
 * calibration set it (pinned copies at an assumed 80 % of the link). */
void sim_compute_set_host_link(struct sim_compute *c, double pcie_Bps);
/* Refuse impossible numbers (efficiency outside (0,1], non-positive peak...);
 * the message names the field. Called by sim_compute_load. */
int sim_compute_check(const struct sim_compute *c, struct ts_error *err);
/* Apply a calibration already parsed into a document (for tests and for
 * callers that embed a "compute" object in a larger file): obj must be an
 * object with the keys of sim_compute_load. */
int sim_compute_apply_json(struct sim_compute *c, const struct jval *obj, struct ts_error *err);
const char *sim_op_class_name(enum sim_op_class cls);

#endif

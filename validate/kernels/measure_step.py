#!/usr/bin/env python3
"""measure_step.py: time whole Llama-style decoder layers, forward and backward,
on one GPU, to check the sum of trainsim's per-op predictions against.

Run on a machine with an NVIDIA GPU and PyTorch (not part of the build).
bench_kernels checks the compute model kernel by kernel; this checks what a
layer of the workload adds up to: the ops trainsim's workload builds
(models/workload.c) and the ones it may miss, run back to back as a
training step runs them (eager, the host ahead of the GPU).

Each layer: RMSNorm (F.rms_norm), one QKV GEMM (GQA), rotary embedding on q
and k, causal attention (scaled_dot_product_attention, cuDNN backend), the
output projection, a residual add, RMSNorm, one gate+up GEMM, SiLU(gate) x
up, the down GEMM, a residual add. bf16 weights and activations, no bias,
no dropout, no recompute. Timed: L layers' forward and backward from a
hidden-state input (requires_grad), the weights' gradients cleared before
each step (outside the timing), CUDA events around 10 steps after 3
warm-up ones, the median kept; then one step under torch.profiler, whose
kernels are written per step.

Writes OUTDIR/step.csv:
  config,hidden,heads,kv_heads,head_dim,ffn,layers,micro,seq,part,t_med_us,t_min_us,t_max_us
and OUTDIR/step_kernels.jsonl: {"config", "kernel", "calls", "us"} per kernel
name and step (all L layers).

With --sustain S, instead: the first configuration's step run back to back
for S seconds (a training run's sustained load, at the GPU's power limit),
its step time and the GPU's clock and power every 2 s in
OUTDIR/sustain.csv, then one profiled step (step_kernels.jsonl, config
suffixed ".sustained").

With --gemm-probe, instead: the MLP up projection of Llama-3-8B (4,096 x
28,672 x 4,096, as F.linear) timed three ways, each call between its own
CUDA events, medians of 20: back to back on one operand set; cycling over 8
operand sets (2.1 GB: out of L2, as measure_kernels.py times GEMMs); and
each call after a 1 GB copy (a memory-bound kernel, as in a step), with
the kernel each way ran (torch.profiler), in OUTDIR/gemm_probe.csv.

With --clock-probe, instead: nvidia-smi samples the SM clock and power
every 20 ms (OUTDIR/clock_samples.csv) while four phases of 4 s run, each
timed per call after a warm-up: the up projection alone back to back, the
first configuration's step, and both again; their
boundaries and median call times in OUTDIR/clock_phases.csv. Whether the
step's GEMMs run at another clock than GEMMs alone.

With --moe, instead: four Qwen3-MoE decoder layers (q/k RMSNorm, a
router, 128 experts, top-8) forward and backward as Megatron-core runs
them on one GPU (expert parallelism 1, the alltoall dispatcher's local
path): the router GEMM, a float32 softmax, top-k and the top-k
probabilities renormalised; the permutation (routing map, masked_select
of token indices, index_select of the tokens), the tokens an expert copied
to the host (Megatron's .cpu() of the counts) and the chunks re-sorted by
local expert (a split and cat, the identity order at EP 1); the experts as
one grouped GEMM each way (torch._grouped_mm, the weights' gradients with
the tokens as the reduction dimension, as GroupedMLP runs them), SiLU(gate)
x up; the reverse sort, the probabilities multiplied in and the
scatter_add back to token order. The router's auxiliary loss is not run.
At Qwen3-30B-A3B's dimensions (micro-batch 1 and 2) and Qwen3-235B-A22B's
(micro-batch 1), and at both with the experts as SequentialMLP (each
expert its own GEMMs, one after another: moe_grouped_gemm false; 30B-A3B's
at micro-batch 1, 2 and 4, 235B-A22B's at 1 and 2: where the host's
dispatch of the loop meets the GPU's time); then Hugging Face's
Qwen3MoeModel with its default experts implementation and its eager loop.
`--moe-configs 3,4` runs only those entries of MOE_CONFIGS (from 0), and
not Hugging Face's. Writes
OUTDIR/moe_step.csv (the columns above plus experts, top_k, moe_ffn and
experts_as), OUTDIR/moe_step_kernels.jsonl and OUTDIR/moe_counts.csv (each
layer's tokens per expert in its last forward, the profiled step's: mean,
sd, min, max; the routing is the same every step).

With --dense-small, the dense layers at sequences of 256-2,048 tokens
(DENSE_SMALL), where the host's dispatch meets the GPU's time, in
OUTDIR/step_small.csv (with a part fwdbwd_issue: the time until step()
returns on the host) and step_small_kernels.jsonl.

With --host-probe, instead: the host's side (host_probe() says what),
in OUTDIR/host_probe.csv.

With --stacks, instead: the DENSE_SMALL layers run by three other stacks
than eager PyTorch, to price the host's dispatch of each: "compiled" (each
layer through torch.compile, inductor's default mode: the element-wise ops
fused into Triton kernels, as Megatron's and Transformer Engine's fused
kernels fuse them, the host still issuing each kernel), "graph" (the eager
step captured once in a CUDA graph and replayed: the host's cost one
launch) and "compiled-graph" (the compiled step captured). Each step's
median of 10 (CUDA events around the step, and the time until the step
returns on the host as part fwdbwd_issue), and its kernels in one profiled
step, in OUTDIR/step_stacks.csv (the columns above plus stack) and
step_stacks_kernels.jsonl (config suffixed with the sequence and stack).

Usage: measure_step.py OUTDIR [--sustain SECONDS | --gemm-probe | --clock-probe |
                               --moe [--moe-configs I,J] | --host-probe |
                               --dense-small | --stacks]
"""
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = "cuda"
BF16 = torch.bfloat16
T0 = time.time()

CONFIGS = (
    # name, hidden, heads, kv heads, head dim, ffn, layers, micro, seq
    ("llama3-8b-dims", 4096, 32, 8, 128, 14336, 4, 1, 4096),
    ("llama3-8b-dims", 4096, 32, 8, 128, 14336, 4, 2, 4096),
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 1, 4096),
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 4, 4096),
)


def log(*a):
    print("[%6.1f s]" % (time.time() - T0), *a, flush=True)


def rope_tables(seq, d):
    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
    f = torch.outer(torch.arange(seq, device=DEV, dtype=torch.float32), inv)
    e = torch.cat((f, f), dim=-1)
    return e.cos().to(BF16), e.sin().to(BF16)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def attention_residual(l, x, cos, sin, eps):
    """x plus layer l's attention block: RMSNorm, the QKV GEMM, q/k RMSNorm
    per head where l has them (qn, kn: Qwen3), the rotary embedding, causal
    GQA attention and the output projection."""
    b, s, h = x.shape
    y = F.rms_norm(x, (h,), l.n1, eps)
    qkv = F.linear(y, l.qkv).view(b, s, l.nh + 2 * l.nkv, l.d)
    q, k, v = qkv.split((l.nh, l.nkv, l.nkv), dim=2)
    if getattr(l, "qn", None) is not None:
        q = F.rms_norm(q, (l.d,), l.qn, eps)
        k = F.rms_norm(k, (l.d,), l.kn, eps)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    a = a.transpose(1, 2).reshape(b, s, l.nh * l.d)
    return x + F.linear(a, l.o)


class Layer(torch.nn.Module):
    def __init__(self, h, nh, nkv, d, ffn):
        super().__init__()
        self.nh, self.nkv, self.d = nh, nkv, d
        self.n1 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))
        self.n2 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))
        s = 0.02
        self.qkv = torch.nn.Parameter(torch.randn((nh + 2 * nkv) * d, h, device=DEV, dtype=BF16) * s)
        self.o = torch.nn.Parameter(torch.randn(h, nh * d, device=DEV, dtype=BF16) * s)
        self.up = torch.nn.Parameter(torch.randn(2 * ffn, h, device=DEV, dtype=BF16) * s)
        self.down = torch.nn.Parameter(torch.randn(h, ffn, device=DEV, dtype=BF16) * s)

    def forward(self, x, cos, sin):
        h = x.shape[-1]
        x = attention_residual(self, x, cos, sin, 1e-5)
        y = F.rms_norm(x, (h,), self.n2, 1e-5)
        g, u = F.linear(y, self.up).chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, self.down)


# short sequences, where the host's dispatch of a layer's ops meets the
# GPU's time (--dense-small)
DENSE_SMALL = (
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 1, 256),
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 1, 512),
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 1, 1024),
    ("llama-2b-dims", 2048, 16, 8, 128, 6144, 4, 1, 2048),
    ("llama3-8b-dims", 4096, 32, 8, 128, 14336, 4, 1, 256),
    ("llama3-8b-dims", 4096, 32, 8, 128, 14336, 4, 1, 1024),
)

MOE_CONFIGS = (
    # name, hidden, heads, kv heads, head dim, experts, top-k, expert ffn,
    # layers, micro, seq, experts as
    ("qwen3-30b-a3b-dims", 2048, 32, 4, 128, 128, 8, 768, 4, 1, 4096, "grouped"),
    ("qwen3-30b-a3b-dims", 2048, 32, 4, 128, 128, 8, 768, 4, 2, 4096, "grouped"),
    ("qwen3-235b-a22b-dims", 4096, 64, 4, 128, 128, 8, 1536, 4, 1, 4096, "grouped"),
    ("qwen3-30b-a3b-dims", 2048, 32, 4, 128, 128, 8, 768, 4, 1, 4096, "sequential"),
    # where the host's dispatch of SequentialMLP's loop meets the GPU's time
    ("qwen3-30b-a3b-dims", 2048, 32, 4, 128, 128, 8, 768, 4, 2, 4096, "sequential"),
    ("qwen3-30b-a3b-dims", 2048, 32, 4, 128, 128, 8, 768, 4, 4, 4096, "sequential"),
    ("qwen3-235b-a22b-dims", 4096, 64, 4, 128, 128, 8, 1536, 4, 1, 4096, "sequential"),
    ("qwen3-235b-a22b-dims", 4096, 64, 4, 128, 128, 8, 1536, 4, 2, 4096, "sequential"),
)


class GroupedMM(torch.autograd.Function):
    """The experts' GEMM as one grouped kernel each way: y = x W_e^T per
    expert e over its rows (offs: the experts' cumulative row counts);
    backward dx = dy W_e and dW_e = dy_e^T x_e, the tokens the reduction
    dimension (2-D x 2-D with offsets)."""

    @staticmethod
    def forward(ctx, x, w, offs):  # x (M, k), w (E, n, k) -> (M, n)
        ctx.save_for_backward(x, w, offs)
        return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs, out_dtype=BF16)

    @staticmethod
    def backward(ctx, dy):
        x, w, offs = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch._grouped_mm(dy, w, offs=offs, out_dtype=BF16)
        dw = torch._grouped_mm(dy.t(), x, offs=offs, out_dtype=BF16)  # (E, n, k)
        return dx, dw, None


class MoELayer(torch.nn.Module):
    def __init__(self, h, nh, nkv, d, ne, topk, f, experts_as):
        super().__init__()
        self.nh, self.nkv, self.d, self.ne, self.topk = nh, nkv, d, ne, topk
        self.seq_experts = experts_as == "sequential"
        s = 0.02
        self.n1 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))
        self.n2 = torch.nn.Parameter(torch.ones(h, device=DEV, dtype=BF16))
        self.qn = torch.nn.Parameter(torch.ones(d, device=DEV, dtype=BF16))
        self.kn = torch.nn.Parameter(torch.ones(d, device=DEV, dtype=BF16))
        self.qkv = torch.nn.Parameter(torch.randn((nh + 2 * nkv) * d, h, device=DEV, dtype=BF16) * s)
        self.o = torch.nn.Parameter(torch.randn(h, nh * d, device=DEV, dtype=BF16) * s)
        self.router = torch.nn.Parameter(torch.randn(ne, h, device=DEV, dtype=BF16) * s)
        if self.seq_experts:  # SequentialMLP: each expert its own parameters
            self.ups = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(2 * f, h, device=DEV, dtype=BF16) * s) for _ in range(ne)])
            self.downs = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.randn(h, f, device=DEV, dtype=BF16) * s) for _ in range(ne)])
        else:
            self.up = torch.nn.Parameter(torch.randn(ne, 2 * f, h, device=DEV, dtype=BF16) * s)
            self.down = torch.nn.Parameter(torch.randn(ne, h, f, device=DEV, dtype=BF16) * s)
        self.counts = None  # the last forward's tokens per expert (host)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        x = attention_residual(self, x, cos, sin, 1e-6)
        t = b * s
        y = F.rms_norm(x, (h,), self.n2, 1e-6).view(t, h)
        # router: Megatron-core's TopKRouter (softmax before top-k, the
        # top-k probabilities renormalised: Qwen3's norm_topk_prob)
        probs = torch.softmax(F.linear(y, self.router), dim=-1, dtype=torch.float32)
        top_p, top_i = torch.topk(probs, self.topk, dim=-1)
        top_p = top_p / top_p.sum(dim=-1, keepdim=True)
        rmap = torch.zeros(t, self.ne, device=DEV, dtype=torch.bool).scatter(1, top_i, True)
        pmap = torch.zeros(t, self.ne, device=DEV, dtype=top_p.dtype).scatter(1, top_i, top_p)
        counts = rmap.sum(dim=0)
        # permute (moe_utils.permute): token indices expert by expert
        rmt = rmap.t().contiguous()
        idx = torch.arange(t, device=DEV).unsqueeze(0).expand(self.ne, -1).masked_select(rmt)
        pp = pmap.t().contiguous().masked_select(rmt)
        xp = y.index_select(0, idx)
        sizes = counts.tolist()  # the dispatcher's tokens per expert on the host
        self.counts = sizes
        xp = torch.cat(torch.split(xp, sizes), dim=0)  # sort_chunks_by_idxs (EP 1: same order)
        if self.seq_experts:
            outs = []
            for xe, wu, wd in zip(torch.split(xp, sizes), self.ups, self.downs):
                g, u = F.linear(xe, wu).chunk(2, dim=-1)
                outs.append(F.linear(F.silu(g) * u, wd))
            out = torch.cat(outs, dim=0)
        else:
            offs = torch.cumsum(counts, 0).to(torch.int32)
            g, u = GroupedMM.apply(xp, self.up, offs).chunk(2, dim=-1)
            out = GroupedMM.apply((F.silu(g) * u).contiguous(), self.down, offs)
        out = torch.cat(torch.split(out, sizes), dim=0)  # the reverse sort
        out = out * pp.to(BF16).unsqueeze(-1)
        z = torch.zeros(t, h, device=DEV, dtype=BF16).scatter_add(0, idx.unsqueeze(1).expand(-1, h), out)
        return x + z.view(b, s, h)


def build_moe(cfg):
    """As build(), for a MOE_CONFIGS entry; its layers too."""
    name, h, nh, nkv, d, ne, topk, f, L, mb, seq, how = cfg
    torch.manual_seed(0)
    layers = [MoELayer(h, nh, nkv, d, ne, topk, f, how) for _ in range(L)]
    return layer_closures(layers, mb, seq, h, d) + (layers,)


def time_parts(step, fwd, clear, warm=3, n=10):
    """(part, sorted times us) of the forward alone and the step, each
    timed n times between CUDA events after warm runs."""
    for part, fn in (("fwd", fwd), ("fwdbwd", step)):
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        yield part, sorted(event_us(fn, clear) for _ in range(n))


def issue_wall_us(step, clear, n=10):
    """The step's time until step() returns on the host (issue) and until
    the GPU ends (wall), each sorted, us, over n steps after 3 warm-up."""
    for _ in range(3):
        clear()
        step()
    iss, wall = [], []
    for _ in range(n):
        clear()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        iss.append((t1 - t0) * 1e6)
        wall.append((t2 - t0) * 1e6)
    return sorted(iss), sorted(wall)


def run_hf_moe(csv, kj, impl):
    """Hugging Face's Qwen3-MoE decoder (transformers' Qwen3MoeModel, four
    layers at 30B-A3B's dimensions, sdpa attention, fed hidden states):
    forward and backward as a Hugging Face training loop runs it, with its
    experts implementation `impl` (None: the library's default)."""
    import transformers
    from transformers import Qwen3MoeConfig, Qwen3MoeModel
    kw = dict(hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_experts=128,
              num_experts_per_tok=8, norm_topk_prob=True, num_attention_heads=32, num_key_value_heads=4,
              head_dim=128, num_hidden_layers=4, vocab_size=1024, max_position_embeddings=8192,
              rms_norm_eps=1e-6, rope_theta=1e6, attn_implementation="sdpa")
    if impl:
        kw["experts_implementation"] = impl
    torch.manual_seed(0)
    model = Qwen3MoeModel(Qwen3MoeConfig(**kw)).to(device=DEV, dtype=BF16)
    model.train()
    used = getattr(model.config, "_experts_implementation", None) or (impl + "?" if impl else "default")
    mlp = model.layers[0].mlp
    log("hf experts:", type(mlp).__name__, type(getattr(mlp, "experts", None)).__name__, used)
    x0 = torch.randn(1, 4096, 2048, device=DEV, dtype=BF16)
    gy = torch.randn_like(x0)

    def step():
        y = model(inputs_embeds=x0.detach().requires_grad_(True), use_cache=False).last_hidden_state
        y.backward(gy)

    def clear():
        model.zero_grad(set_to_none=True)

    def fwd():
        with torch.no_grad():
            model(inputs_embeds=x0, use_cache=False)

    tag = "hf-qwen3-30b-a3b-dims"
    for part, ts in time_parts(step, fwd, clear, warm=2, n=5):
        csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f,%d,%d,%d,%s\n" % (
            tag, 2048, 32, 4, 128, 0, 4, 1, 4096, part, ts[len(ts) // 2], ts[0], ts[-1], 128, 8, 768,
            "hf-" + str(used)))
        csv.flush()
        log(tag, "transformers", transformers.__version__, used, part, "%.1f us" % ts[len(ts) // 2])
    write_profile(step, clear, "%s.mb1.hf-%s" % (tag, used), kj)


def host_probe():
    """The host's side: the machine's kernel and CPU; PyTorch's host time
    per op for a stream of tiny adds (no autograd, then recorded by
    autograd and its backward run); and for MoE steps (MOE_CONFIGS 0, 3,
    5) the time until step() returns on the host (issue) against the time
    until the GPU finishes (wall), and the host's time in CUDA runtime
    calls that block (synchronize, copies to the host) in one profiled step."""
    from torch.profiler import ProfilerActivity, profile
    rows = []
    rows.append(("uname_r", os.uname().release, ""))
    cpu = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")]
    rows.append(("cpu", (cpu[0] if cpu else "?").replace(",", " "), str(len(cpu))))
    x = torch.ones(16, device=DEV)
    for n in (1000, 20000):  # the first a warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            for _ in range(n):
                x = x + 1
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
    rows.append(("tiny_add_nograd_us_per_op", "%.2f" % ((t1 - t0) / n * 1e6), "%.2f" % ((t2 - t0) / n * 1e6)))
    for n in (200, 2000):
        y0 = torch.ones(16, device=DEV, requires_grad=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = y0
        for _ in range(n):
            y = y * 1.0001
        t1 = time.perf_counter()
        y.sum().backward()
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
    rows.append(("tiny_mul_autograd_fwd_us_per_op", "%.2f" % ((t1 - t0) / n * 1e6), ""))
    rows.append(("tiny_mul_autograd_bwd_us_per_op", "%.2f" % ((t2 - t1) / n * 1e6), "%.2f" % ((t3 - t1) / n * 1e6)))
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for i in (0, 3, 5):
        cfg = MOE_CONFIGS[i]
        step, _, clear, _ = build_moe(cfg)
        tag = "%s.mb%d.%s" % (cfg[0], cfg[9], cfg[11])
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            iss, wall = issue_wall_us(step, clear)
            rows.append((tag + ".issue_us", "%.0f" % iss[5], "%.0f-%.0f" % (iss[0], iss[-1])))
            rows.append((tag + ".wall_us", "%.0f" % wall[5], "%.0f-%.0f" % (wall[0], wall[-1])))
            clear()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            blk = {}
            for ev in prof.key_averages():
                k = ev.key
                if ("Synchronize" in k or "cudaMemcpy" in k or "item" in k or "_local_scalar" in k
                        or "cudaLaunchKernel" in k or "cuLaunchKernel" in k):
                    blk[k] = (ev.count, ev.cpu_time_total)
            for k, (c, t) in sorted(blk.items()):
                rows.append((tag + ".cpu." + k.replace(",", " "), "%.0f" % t, str(c)))
        del step, clear
        torch.cuda.empty_cache()
    with open(os.path.join(OUT, "host_probe.csv"), "w") as f:
        f.write("what,value,extra\n")
        for r in rows:
            f.write("%s,%s,%s\n" % r)
            log(*r)


def run_moe(cfg, csv, kj, cnt):
    name, h, nh, nkv, d, ne, topk, f, L, mb, seq, how = cfg
    step, fwd, clear, layers = build_moe(cfg)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for part, ts in time_parts(step, fwd, clear):
            csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f,%d,%d,%d,%s\n" % (
                name, h, nh, nkv, d, 0, L, mb, seq, part, ts[len(ts) // 2], ts[0], ts[-1],
                ne, topk, f, how))
            csv.flush()
            log(name, how, "mb", mb, part, "%.1f us" % ts[len(ts) // 2])
        for i, l in enumerate(layers):
            c = torch.tensor(l.counts, dtype=torch.float64)
            cnt.write("%s,%d,%s,%d,%.3f,%.3f,%d,%d\n" % (name, mb, how, i, float(c.mean()),
                      float(c.std(unbiased=False)), int(c.min()), int(c.max())))
        cnt.flush()
        write_profile(step, clear, "%s.mb%d.%s" % (name, mb, how), kj)


def build(cfg):
    """The configuration's L layers: (step, fwd), a forward and backward
    from the hidden-state input, and a forward alone."""
    name, h, nh, nkv, d, ffn, L, mb, seq = cfg
    torch.manual_seed(0)
    return layer_closures([Layer(h, nh, nkv, d, ffn) for _ in range(L)], mb, seq, h, d)


def layer_closures(layers, mb, seq, h, d):
    """(step, fwd, clear) over the layers from a seeded hidden-state input."""
    cos, sin = rope_tables(seq, d)
    x0 = torch.randn(mb, seq, h, device=DEV, dtype=BF16)
    gy = torch.randn_like(x0)

    def step():
        y = x0.detach().requires_grad_(True)
        for l in layers:
            y = l(y, cos, sin)
        y.backward(gy)

    def clear():
        """The weights' gradients dropped, so that a step's backward
        writes them rather than adding to the last step's (found by
        review: 24 accumulation adds a step, about 1.2 ms of the 8B
        step, were in the data of 2026-12-04)."""
        for l in layers:
            for q in l.parameters():
                q.grad = None

    def fwd():
        with torch.no_grad():
            y = x0
            for l in layers:
                y = l(y, cos, sin)

    return step, fwd, clear


def event_us(fn, before=None):
    """fn's time between two CUDA events, us (before() runs first, outside
    them)."""
    if before:
        before()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3


def write_profile(step, clear, tag, kj):
    """One step under torch.profiler: its kernels' GPU time by name."""
    from torch.profiler import ProfilerActivity, profile
    clear()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None)
        if t is None:
            t = getattr(ev, "cuda_time_total", 0)
        if t:
            kj.write(json.dumps({"config": tag, "kernel": ev.key, "calls": ev.count, "us": t}) + "\n")
    kj.flush()


def sustain(cfg, secs, kj):
    step, _, clear = build(cfg)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]), \
            open(os.path.join(OUT, "sustain.csv"), "w") as f:
        f.write("t_s,steps,step_med_us,sm_mhz,power_w,temp_c\n")
        t_start = time.time()
        while time.time() - t_start < secs:
            ts = []
            t_win = time.time()
            while time.time() - t_win < 2.0:
                ts.append(event_us(step, clear))
            ts.sort()
            q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True,
                               timeout=20).stdout.strip().replace(" ", "")
            f.write("%.1f,%d,%.1f,%s\n" % (time.time() - t_start, len(ts), ts[len(ts) // 2], q))
            f.flush()
            log("sustain", "%.1f us" % ts[len(ts) // 2], q)
        for _ in range(20):
            step()
        write_profile(step, clear, "%s.mb%d.sustained" % (cfg[0], cfg[7]), kj)


def gemm_probe():
    from torch.profiler import ProfilerActivity, profile
    m, n, k = 4096, 28672, 4096
    sets = [(torch.randn(m, k, device=DEV, dtype=BF16), torch.randn(n, k, device=DEV, dtype=BF16))
            for _ in range(8)]
    big = torch.empty(1 << 29, device=DEV, dtype=BF16)
    big2 = torch.empty_like(big)

    def timed(pre, i):
        if pre:
            big2.copy_(big)
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        x, w = sets[i]
        a.record()
        F.linear(x, w)
        b.record()
        return a, b

    with open(os.path.join(OUT, "gemm_probe.csv"), "w") as f:
        f.write("way,t_med_us,t_min_us,t_max_us,kernel\n")
        for way, pre, cyc in (("same_operands", False, False), ("cycled_sets", False, True),
                              ("after_1GB_copy", True, True), ("same_operands_again", False, False)):
            for i in range(5):
                timed(pre, i % 8 if cyc else 0)
            torch.cuda.synchronize()
            evs = [timed(pre, i % 8 if cyc else 0) for i in range(20)]
            torch.cuda.synchronize()
            ts = sorted(a.elapsed_time(b) * 1e3 for a, b in evs)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                timed(pre, 1 if cyc else 0)
                torch.cuda.synchronize()
            names = [e.key for e in prof.key_averages() if "copy" not in e.key.lower()
                     and "memcpy" not in e.key.lower() and "elementwise" not in e.key.lower()]
            f.write("%s,%.2f,%.2f,%.2f,%s\n" % (way, ts[10], ts[0], ts[-1], "|".join(names)[:200]))
            log("gemm_probe", way, "%.1f us" % ts[10], names[:2])


def clock_probe(cfg):
    step, _, clear = build(cfg)
    x = torch.randn(4096, 4096, device=DEV, dtype=BF16)
    w = torch.randn(28672, 4096, device=DEV, dtype=BF16)
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                            "--format=csv,noheader,nounits", "-lms", "20"],
                           stdout=open(os.path.join(OUT, "clock_samples.csv"), "w"),
                           stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for _ in range(3):  # warm-up: cuDNN's plans, cuBLAS's handles (found: the
            clear()         # first step took most of a 4 s phase)
            step()
            F.linear(x, w)
        torch.cuda.synchronize()
        for phase, fn, before in (("gemm_alone", lambda: F.linear(x, w), None), ("step", step, clear),
                                  ("gemm_alone_again", lambda: F.linear(x, w), None),
                                  ("step_again", step, clear)):
            t0 = time.time()
            ts = []
            while time.time() - t0 < 4.0:
                ts.append(event_us(fn, before))
            t1 = time.time()
            ts.sort()
            rows.append((phase, t0, t1, len(ts), ts[len(ts) // 2]))
            log("clock_probe", phase, "%.1f us" % ts[len(ts) // 2], len(ts))
    time.sleep(0.5)
    smi.terminate()
    smi.wait()
    with open(os.path.join(OUT, "clock_phases.csv"), "w") as f:
        f.write("phase,t0_local,t1_local,calls,call_med_us\n")
        for ph, t0, t1, n, med in rows:
            def loc(t):  # nvidia-smi's timestamp form, local time
                return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(t)) + (".%03d" % int((t % 1) * 1000))
            f.write("%s,%s,%s,%d,%.1f\n" % (ph, loc(t0), loc(t1), n, med))


def run(cfg, csv, kj):
    name, h, nh, nkv, d, ffn, L, mb, seq = cfg
    step, fwd, clear = build(cfg)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        if "--dense-small" in sys.argv:  # the host's issue time of a step too
            iss, _ = issue_wall_us(step, clear)
            csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f\n" % (
                name, h, nh, nkv, d, ffn, L, mb, seq, "fwdbwd_issue", iss[5], iss[0], iss[-1]))
        for part, ts in time_parts(step, fwd, clear):
            csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f\n" % (
                name, h, nh, nkv, d, ffn, L, mb, seq, part, ts[len(ts) // 2], ts[0], ts[-1]))
            csv.flush()
            log(name, "mb", mb, part, "%.1f us" % ts[len(ts) // 2])
        write_profile(step, clear, "%s.mb%d" % (name, mb) + (".seq%d" % seq if "--dense-small" in sys.argv
                                                            else ""), kj)


def graphed(step, clear):
    """step captured once in a CUDA graph (after warm-up on a side stream,
    as PyTorch's docs do it): (replay, nothing to clear). The weights'
    gradients are the graph's own tensors, written anew by each replay."""
    clear()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            clear()
            step()
    torch.cuda.current_stream().wait_stream(s)
    clear()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    torch.cuda.synchronize()
    return g.replay, lambda: None


def run_stacks(cfg, csv, kj):
    """One DENSE_SMALL configuration under the compiled, graph and
    compiled-graph stacks (--stacks)."""
    name, h, nh, nkv, d, ffn, L, mb, seq = cfg
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch._dynamo.reset()
    torch.manual_seed(0)
    layers = [Layer(h, nh, nkv, d, ffn) for _ in range(L)]
    eager = layer_closures(layers, mb, seq, h, d)
    compiled = layer_closures([torch.compile(l, dynamic=False) for l in layers], mb, seq, h, d)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for stack in ("graph", "compiled", "compiled-graph"):
            guarded(("config", cfg, stack), one_stack, cfg, stack, eager, compiled, csv, kj)


def one_stack(cfg, stack, eager, compiled, csv, kj):
    """The configuration's step under one stack: its times and kernels."""
    name, h, nh, nkv, d, ffn, L, mb, seq = cfg
    t0 = time.time()
    step, _, clear = compiled if stack.startswith("compiled") else eager
    if stack.endswith("graph"):
        step, clear = graphed(step, clear)
    iss, _ = issue_wall_us(step, clear)
    _, ts = next((p, t) for p, t in time_parts(step, step, clear) if p == "fwdbwd")
    for part, t in (("fwdbwd_issue", iss), ("fwdbwd", ts)):
        csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f,%s\n" % (
            name, h, nh, nkv, d, ffn, L, mb, seq, part, t[len(t) // 2], t[0], t[-1], stack))
    csv.flush()
    log(name, "seq", seq, stack, "fwdbwd %.1f us, issue %.1f us" % (ts[len(ts) // 2],
        iss[len(iss) // 2]), "(%.0f s with compile/capture)" % (time.time() - t0))
    write_profile(step, clear, "%s.mb%d.seq%d.%s" % (name, mb, seq, stack), kj)


def guarded(what, fn, *a):
    """fn(*a), a failure logged so that the next configuration still runs;
    then PyTorch's cached memory freed."""
    try:
        fn(*a)
    except Exception as ex:  # noqa: BLE001
        log(*what, "failed:", repr(ex)[:600])
    torch.cuda.empty_cache()


def main():
    p = torch.cuda.get_device_properties(0)
    log("device", p.name, "torch", torch.__version__)
    if "--clock-probe" in sys.argv:
        clock_probe(CONFIGS[0])
        log("done")
        return
    if "--gemm-probe" in sys.argv:
        gemm_probe()
        log("done")
        return
    if "--host-probe" in sys.argv:
        host_probe()
        log("done")
        return
    if "--stacks" in sys.argv:
        with open(os.path.join(OUT, "step_stacks.csv"), "w") as csv, \
                open(os.path.join(OUT, "step_stacks_kernels.jsonl"), "w") as kj:
            csv.write("config,hidden,heads,kv_heads,head_dim,ffn,layers,micro,seq,part,"
                      "t_med_us,t_min_us,t_max_us,stack\n")
            for cfg in sorted(DENSE_SMALL, key=lambda c: c[8]):  # the shortest first
                guarded(("config", cfg), run_stacks, cfg, csv, kj)
        log("done")
        return
    if "--moe" in sys.argv:
        with open(os.path.join(OUT, "moe_step.csv"), "w") as csv, \
                open(os.path.join(OUT, "moe_step_kernels.jsonl"), "w") as kj, \
                open(os.path.join(OUT, "moe_counts.csv"), "w") as cnt:
            csv.write("config,hidden,heads,kv_heads,head_dim,ffn,layers,micro,seq,part,"
                      "t_med_us,t_min_us,t_max_us,experts,top_k,moe_ffn,experts_as\n")
            cnt.write("config,micro,experts_as,layer,mean,sd,min,max\n")
            pick = sys.argv[sys.argv.index("--moe-configs") + 1] if "--moe-configs" in sys.argv else None
            for i, cfg in enumerate(MOE_CONFIGS):
                if pick is not None and str(i) not in pick.split(","):
                    continue
                guarded(("config", cfg), run_moe, cfg, csv, kj, cnt)
            for impl in (None, "eager") if pick is None else ():
                guarded(("hf", impl), run_hf_moe, csv, kj, impl)
        log("done")
        return
    if "--sustain" in sys.argv:
        with open(os.path.join(OUT, "step_kernels.jsonl"), "w") as kj:
            sustain(CONFIGS[0], float(sys.argv[sys.argv.index("--sustain") + 1]), kj)
        log("done")
        return
    small = "--dense-small" in sys.argv
    with open(os.path.join(OUT, "step_small.csv" if small else "step.csv"), "w") as csv, \
            open(os.path.join(OUT, "step_small_kernels.jsonl" if small else "step_kernels.jsonl"),
                 "w") as kj:
        csv.write("config,hidden,heads,kv_heads,head_dim,ffn,layers,micro,seq,part,"
                  "t_med_us,t_min_us,t_max_us\n")
        for cfg in DENSE_SMALL if small else CONFIGS:
            guarded(("config", cfg), run, cfg, csv, kj)
    log("done")


if __name__ == "__main__":
    main()

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

Usage: measure_step.py OUTDIR [--sustain SECONDS | --gemm-probe | --clock-probe]
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
        b, s, h = x.shape
        y = F.rms_norm(x, (h,), self.n1, 1e-5)
        qkv = F.linear(y, self.qkv).view(b, s, self.nh + 2 * self.nkv, self.d)
        q, k, v = qkv.split((self.nh, self.nkv, self.nkv), dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = a.transpose(1, 2).reshape(b, s, self.nh * self.d)
        x = x + F.linear(a, self.o)
        y = F.rms_norm(x, (h,), self.n2, 1e-5)
        g, u = F.linear(y, self.up).chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, self.down)


def build(cfg):
    """The configuration's L layers: (step, fwd), a forward and backward
    from the hidden-state input, and a forward alone."""
    name, h, nh, nkv, d, ffn, L, mb, seq = cfg
    torch.manual_seed(0)
    layers = [Layer(h, nh, nkv, d, ffn) for _ in range(L)]
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
        for part, fn in (("fwd", fwd), ("fwdbwd", step)):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            ts = sorted(event_us(fn, clear) for _ in range(10))
            csv.write("%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.2f,%.2f,%.2f\n" % (
                name, h, nh, nkv, d, ffn, L, mb, seq, part, ts[len(ts) // 2], ts[0], ts[-1]))
            csv.flush()
            log(name, "mb", mb, part, "%.1f us" % ts[len(ts) // 2])
        write_profile(step, clear, "%s.mb%d" % (name, mb), kj)


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
    if "--sustain" in sys.argv:
        with open(os.path.join(OUT, "step_kernels.jsonl"), "w") as kj:
            sustain(CONFIGS[0], float(sys.argv[sys.argv.index("--sustain") + 1]), kj)
        log("done")
        return
    with open(os.path.join(OUT, "step.csv"), "w") as csv, \
            open(os.path.join(OUT, "step_kernels.jsonl"), "w") as kj:
        csv.write("config,hidden,heads,kv_heads,head_dim,ffn,layers,micro,seq,part,"
                  "t_med_us,t_min_us,t_max_us\n")
        for cfg in CONFIGS:
            try:
                run(cfg, csv, kj)
            except Exception as ex:  # noqa: BLE001
                log("config", cfg, "failed:", repr(ex)[:300])
            torch.cuda.empty_cache()
    log("done")


if __name__ == "__main__":
    main()

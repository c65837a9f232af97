#!/usr/bin/env python3
"""measure_kernels.py: time the kernels trainsim's compute model prices, on one GPU.

Run on a machine with an NVIDIA GPU and PyTorch (not part of the build; the
simulator never imports it). Writes one CSV row per measured kernel:

  section,op,dtype,m,n,k,batch,m_sd,flops,bytes,reps,sets,t_med_us,t_min_us,t_max_us,extra

and env.txt (GPU, driver, torch, clocks). bench/bench_kernels reads the CSV,
predicts each row with sim/compute.c and fits the compute model to it.

How each time is taken:
- GEMMs, batched GEMMs and element-wise ops: R launches of the op captured
  in one CUDA graph (so the host's dispatch cost is not in the time), cycling
  over `sets` distinct operand sets whose bytes together exceed the 60 MB L2
  (operands in training come from HBM, not L2): 384 MB of sets, at most
  1,024 of them for a GEMM (128^3: 96 MB) and 8,192 for an element-wise op
  (16 KB: 128 MB). One warm-up replay, then 7 timed replays (CUDA events);
  t = replay time / R. R is chosen so that one replay takes about 2 ms, and
  is at least the sets.
- Attention (scaled_dot_product_attention, each backend), grouped GEMMs and
  the AdamW step: n eager calls issued back to back between CUDA events, so
  that the host runs ahead of the GPU (one call between two events, as a
  first version did, put 20-27 us of host dispatch into each time: found
  by review), n about 2 ms of calls, at least 3; 7 timed batches after 2
  warm-up calls. The AdamW step's host time exceeds its GPU time below
  about 64 M parameters: those rows measure the host.
- launch: a graph of 2000 tiny adds (GPU time per kernel) and an eager loop
  of 2000 (host dispatch per op, wall clock).

Usage: measure_kernels.py OUTDIR [--budget SECONDS] [--quick] [--sections A,B,...]
  sections: launch, gemms, elementwise, attention, grouped, optimizer (the
  default set); heldout (shapes outside it, to check a fit out of sample);
  grouped_sweep, splitk, kernelnames and grouped_wgrad (probes: equal expert
  rows in 16-row steps, small outputs with deep k, the kernels
  torch.profiler sees each op launch, written to kernel_names.jsonl, and the
  experts' weight gradients, tokens ragged in k); attention_b1 (cuDNN
  attention of one sequence, where a kernel's query tiles fill part of the
  GPU: causal, head dim 128, 4-64 heads, 256-8,192 tokens, some of them
  with 8 KV heads, and full attention at head dims 72 and 128; timed as R
  calls in a CUDA graph, forward and forward+backward, as the GEMMs are);
  attention_d (the same across head dimensions 32-256, and 32 heads
  sharing 32 to 1 KV heads)
"""
import math
import os
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
BUDGET = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 300.0
QUICK = "--quick" in sys.argv
T0 = time.time()
DEV = "cuda"
BF16 = torch.bfloat16
L2_FLUSH_BYTES = 384 << 20  # sets together exceed H200's 60 MB L2 several times
TARGET_REPLAY_S = 2e-3
TIMED = 7

csv = open(os.path.join(OUT, "kernels.csv"), "w", buffering=1)
csv.write("section,op,dtype,m,n,k,batch,m_sd,flops,bytes,reps,sets,t_med_us,t_min_us,t_max_us,extra\n")


def log(*a):
    print("[%6.1f s]" % (time.time() - T0), *a, flush=True)


def left():
    return BUDGET - (time.time() - T0)


def row(section, op, dtype, m, n, k, batch, m_sd, flops, nbytes, reps, sets, ts, extra=""):
    ts = sorted(ts)
    med = ts[len(ts) // 2]
    csv.write("%s,%s,%s,%d,%d,%d,%d,%.3f,%.6g,%.6g,%d,%d,%.4f,%.4f,%.4f,%s\n" % (
        section, op, dtype, m, n, k, batch, m_sd, flops, nbytes, reps, sets,
        med * 1e6, ts[0] * 1e6, ts[-1] * 1e6, extra))


def timed(fn, per):
    """TIMED calls of fn between CUDA events: seconds per call / per."""
    ts = []
    for _ in range(TIMED):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3 / per)
    return ts


def time_graph(step, nsets, est_s):
    """step(i) launches the op on operand set i. Returns per-op times (s)."""
    reps = max(nsets, int(math.ceil(TARGET_REPLAY_S / max(est_s, 1e-7))))
    reps = min(reps, 2000)
    reps = int(math.ceil(reps / nsets) * nsets)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(nsets):  # warm-up outside the graph (cuBLAS handles, workspaces)
            step(i)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for r in range(reps):
            step(r % nsets)
    g.replay()
    torch.cuda.synchronize()
    ts = timed(g.replay, reps)
    del g
    return ts, reps


def time_eager(fn, warm=2):
    """n calls of fn back to back between CUDA events. Returns per-call
    times (s) and n."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    est = time.perf_counter() - t  # an upper bound: the host's time is in it
    n = int(min(64, max(3, math.ceil(TARGET_REPLAY_S / max(est, 1e-6)))))

    def batch():
        for _ in range(n):
            fn()

    batch()
    torch.cuda.synchronize()
    return timed(batch, n), n


def nsets_for(set_bytes, cap=1024):
    return int(max(1, min(cap, math.ceil(L2_FLUSH_BYTES / max(set_bytes, 1)))))


# ---- environment --------------------------------------------------------------
def env():
    with open(os.path.join(OUT, "env.txt"), "w") as f:
        p = torch.cuda.get_device_properties(0)
        f.write("device %s, %d SMs, %.1f GiB, cc %d.%d\n" % (
            p.name, p.multi_processor_count, p.total_memory / 2**30, p.major, p.minor))
        f.write("torch %s, cuda %s, cudnn %s\n" % (
            torch.__version__, torch.version.cuda, torch.backends.cudnn.version()))
        for q in ("name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",):
            try:
                f.write(subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv"],
                                       capture_output=True, text=True, timeout=20).stdout)
            except Exception as e:  # noqa: BLE001
                f.write("nvidia-smi: %s\n" % e)


def clocks(tag):
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        with open(os.path.join(OUT, "env.txt"), "a") as f:
            f.write("clocks %s: %s" % (tag, r.stdout))
    except Exception:  # noqa: BLE001
        pass


# ---- launch overhead ----------------------------------------------------------
def launch():
    a = torch.randn(256, device=DEV, dtype=BF16)
    b = torch.randn(256, device=DEV, dtype=BF16)
    c = torch.empty_like(a)
    ts, reps = time_graph(lambda i: torch.add(a, b, out=c), 1, 1e-9)
    row("launch", "graph_tiny_add", "bf16", 256, 0, 0, 1, 0, 256, 3 * 512, reps, 1, ts, "gpu time per kernel in a graph")
    n = 2000
    ts = []
    for _ in range(TIMED):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            torch.add(a, b, out=c)
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / n)
    row("launch", "eager_tiny_add", "bf16", 256, 0, 0, 1, 0, 256, 3 * 512, n, 1, ts, "host dispatch per op, eager")


# ---- GEMMs ----------------------------------------------------------------------
def gemm(section, op, m, n, k, batch=1, dtype=BF16, form="nt"):
    """form nt: C[m,n] = A[m,k] B[n,k]^T (nn.Linear forward); nn: A[m,k] B[k,n]
    (input gradient); tn: A[k,m]^T B[k,n] (weight gradient)."""
    es = torch.tensor([], dtype=dtype).element_size()
    set_bytes = (m * k + k * n + m * n) * es * batch
    nsets = nsets_for(set_bytes)
    while nsets > 1 and nsets * set_bytes > 8 << 30:
        nsets -= 1
    sets = []
    for _ in range(nsets):
        if batch > 1:
            A = torch.randn(batch, m, k, device=DEV, dtype=dtype)
            if form == "nt":  # Q K^T, x W^T: B stored [batch, n, k]
                B = torch.randn(batch, n, k, device=DEV, dtype=dtype).transpose(1, 2)
            else:
                B = torch.randn(batch, k, n, device=DEV, dtype=dtype)
            C = torch.empty(batch, m, n, device=DEV, dtype=dtype)
        elif form == "nt":
            A = torch.randn(m, k, device=DEV, dtype=dtype)
            B = torch.randn(n, k, device=DEV, dtype=dtype).t()
            C = torch.empty(m, n, device=DEV, dtype=dtype)
        elif form == "tn":
            A = torch.randn(k, m, device=DEV, dtype=dtype).t()
            B = torch.randn(k, n, device=DEV, dtype=dtype)
            C = torch.empty(m, n, device=DEV, dtype=dtype)
        else:
            A = torch.randn(m, k, device=DEV, dtype=dtype)
            B = torch.randn(k, n, device=DEV, dtype=dtype)
            C = torch.empty(m, n, device=DEV, dtype=dtype)
        sets.append((A, B, C))
    flops = 2.0 * m * n * k * batch
    peak = 790e12 if dtype != torch.float32 else 380e12
    est = flops / peak + 3e-6

    def step(i):
        A, B, C = sets[i]
        if batch > 1:
            torch.bmm(A, B, out=C)
        else:
            torch.mm(A, B, out=C)

    ts, reps = time_graph(step, nsets, est)
    dt = {BF16: "bf16", torch.float16: "fp16", torch.float32: "tf32"}[dtype]
    row(section, op, dt, m, n, k, batch, 0, flops, set_bytes, reps, nsets, ts, form)
    del sets


def layer_gemms(section, name, h, n_qkv, n_attn_out_k, n_up, k_down, tps, ms):
    for tp in tps:
        for m in ms:
            shapes = (("qkv", n_qkv // tp, h), ("proj", h, n_attn_out_k // tp),
                      ("up", n_up // tp, h), ("down", h, k_down // tp))
            for lin, n_out, k_in in shapes:
                if left() < 0:
                    return
                tag = "%s.%s.tp%d" % (name, lin, tp)
                gemm(section, tag + ".fwd", m, n_out, k_in, form="nt")
                gemm(section, tag + ".dgrad", m, k_in, n_out, form="nn")
                gemm(section, tag + ".wgrad", n_out, k_in, m, form="tn")


def gemms():
    # vTrain's GPT shapes (hidden 3072 / 6144 / 8192 / 12288, 4h MLP,
    # sequence 2048, micro-batch 1 and 4).
    ms = (2048,) if QUICK else (2048, 8192)
    tps = (1, 8) if QUICK else (1, 2, 4, 8)
    for h in (3072, 6144, 8192, 12288):
        layer_gemms("gemm_gpt", "gpt-h%d" % h, h, 3 * h, h, 4 * h, 4 * h, tps, ms)
        if left() < BUDGET * 0.55:
            log("gemm: budget, skipping the rest of the GPT shapes")
            break
    # Hopper-era models at sequence 4096 (Qwen3-VL 2B / 32B text, Llama-3 8B):
    # GQA QKV, gated MLP (up is gate+up).
    for name, h, heads, kv, d, ffn in (("qwen3-vl-2b", 2048, 16, 8, 128, 6144),
                                       ("llama3-8b", 4096, 32, 8, 128, 14336),
                                       ("qwen3-vl-32b", 5120, 64, 8, 128, 25600)):
        if left() < BUDGET * 0.45:
            log("gemm: budget, skipping the rest of the Hopper-era shapes")
            break
        layer_gemms("gemm_llm", name, h, (heads + 2 * kv) * d, heads * d, 2 * ffn, ffn,
                    (1, 8) if QUICK else (1, 2, 4, 8), (4096,))
    # Size and shape sweep.
    for s in (128, 256, 512, 1000, 1024, 2048, 3000, 4096, 6000, 8192, 12000, 16384):
        gemm("gemm_sweep", "square", s, s, s)
    for m in (1, 8, 32, 128, 512):
        for nk in (4096, 8192):
            gemm("gemm_sweep", "skinny", m, nk, nk)
    for m, n, k in ((4096, 151936 // 8, 2048), (4096, 151936, 5120), (8192, 50304 // 8, 6144)):
        gemm("gemm_sweep", "lm_head", m, n, k)
    # Batched (non-flash attention scores and context): batch = micro x heads / tp.
    for b, s, d in ((8, 2048, 128), (32, 2048, 128), (96, 2048, 128), (48, 2048, 64)):
        gemm("bmm", "scores", s, s, d, batch=b, form="nt")
        gemm("bmm", "context", s, d, s, batch=b, form="nn")
    # Equal-row expert GEMMs as one batched kernel (Qwen3 30B-A3B / 235B-A22B experts).
    for e, h, f in ((128, 2048, 768), (16, 4096, 1536)):
        for rows in (128, 512, 2048):
            gemm("bmm", "experts_up", rows, 2 * f, h, batch=e, form="nt")
            gemm("bmm", "experts_down", rows, h, f, batch=e, form="nt")
    # TF32.
    torch.backends.cuda.matmul.allow_tf32 = True
    for s in (1024, 4096, 8192):
        gemm("gemm_tf32", "square", s, s, s, dtype=torch.float32)
    gemm("gemm_tf32", "lm_head", 8192, 50304 // 8, 3072, dtype=torch.float32)


# ---- element-wise -------------------------------------------------------------
def elementwise():
    h = 4096
    sizes = [1 << p for p in range(12, 29)]
    if QUICK:
        sizes = sizes[::4]
    for op in ("copy", "add", "gelu", "softmax", "layernorm", "fp32_acc"):
        for N in sizes:
            if left() < BUDGET * 0.25:
                log("elementwise: budget")
                return
            if op == "copy":
                nbytes = 4 * N
                mk = lambda: (torch.randn(N, device=DEV, dtype=BF16), torch.empty(N, device=DEV, dtype=BF16))
                fn = lambda t: t[1].copy_(t[0])
            elif op == "add":
                nbytes = 6 * N
                mk = lambda: (torch.randn(N, device=DEV, dtype=BF16), torch.randn(N, device=DEV, dtype=BF16),
                              torch.empty(N, device=DEV, dtype=BF16))
                fn = lambda t: torch.add(t[0], t[1], out=t[2])
            elif op == "gelu":
                nbytes = 4 * N
                mk = lambda: (torch.randn(N, device=DEV, dtype=BF16),)
                fn = lambda t: F.gelu(t[0], approximate="tanh")
            elif op == "softmax":
                if N < 2048:
                    continue
                nbytes = 4 * N
                mk = lambda: (torch.randn(N // 2048, 2048, device=DEV, dtype=BF16),)
                fn = lambda t: torch.softmax(t[0], dim=-1)
            elif op == "layernorm":
                if N < h:
                    continue
                nbytes = 4 * N
                w = torch.ones(h, device=DEV, dtype=BF16)
                bb = torch.zeros(h, device=DEV, dtype=BF16)
                mk = lambda: (torch.randn(N // h, h, device=DEV, dtype=BF16),)
                fn = lambda t, w=w, bb=bb: F.layer_norm(t[0], (h,), w, bb)
            else:
                nbytes = 10 * N
                mk = lambda: (torch.randn(N, device=DEV, dtype=BF16), torch.zeros(N, device=DEV, dtype=torch.float32))
                fn = lambda t: t[1].add_(t[0])
            nsets = nsets_for(nbytes, cap=8192)
            sets = [mk() for _ in range(nsets)]
            ts, reps = time_graph(lambda i: fn(sets[i]), nsets, nbytes / 4.0e12 + 2e-6)
            row("elementwise", op, "bf16", N, 0, 0, 1, 0, 0, nbytes, reps, nsets, ts)
            del sets
        torch.cuda.empty_cache()


# ---- attention ------------------------------------------------------------------
def attn_operands(b, hds, kv, s, d):
    """q (b, hds, s, d), k and v with kv heads, and the output's gradient."""
    q = torch.randn(b, hds, s, d, device=DEV, dtype=BF16, requires_grad=True)
    k = torch.randn(b, kv, s, d, device=DEV, dtype=BF16, requires_grad=True)
    v = torch.randn(b, kv, s, d, device=DEV, dtype=BF16, requires_grad=True)
    return q, k, v, torch.randn(b, hds, s, d, device=DEV, dtype=BF16)


def attention(cases=None, section="attention", only=None):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION))
    if cases is None:
        cases = []
        for s in (1024, 2048, 4096, 8192):
            for hds in (16, 32):
                cases.append((16384 // s, hds, s, 128, True))
        for s in (1024, 4096):
            cases.append((16384 // s, 16, s, 72, False))  # Qwen3-VL vision blocks: full attention, head 72
    for bname, be in backends:
        if only and bname not in only:
            continue
        for b, hds, s, d, causal in cases:
            if left() < BUDGET * 0.12:
                log("attention: budget")
                return
            try:
                q, k, v, do = attn_operands(b, hds, hds, s, d)
                with sdpa_kernel([be]):
                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    def fwdbwd():
                        q.grad = k.grad = v.grad = None
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        o.backward(do)

                    tf, nf = time_eager(fwd)
                    tfb, nfb = time_eager(fwdbwd)
                # FLOPs executed by a causal-aware kernel: QK^T and PV, 4 b h s^2 d,
                # half under a causal mask; backward 2.5x forward.
                ff = 4.0 * b * hds * s * s * d * (0.5 if causal else 1.0)
                nb = 4 * b * hds * s * d * 2
                extra = "causal" if causal else "full"
                row(section, bname + ".fwd", "bf16", s, d, hds, b, 0, ff, nb, nf, 1, tf, extra)
                row(section, bname + ".fwdbwd", "bf16", s, d, hds, b, 0, 3.5 * ff, 3 * nb, nfb, 1, tfb,
                    extra)
                del q, k, v, do
            except Exception as e:  # noqa: BLE001
                log("attention %s b%d h%d s%d d%d: %s" % (bname, b, hds, s, d, str(e).splitlines()[0][:200]))
                continue


def attention_b1():
    """cuDNN attention of one sequence (batch 1), where the grid of query
    tiles (heads x tiles of 128) fills part of the GPU's SMs or a few
    waves of them: the forward and the forward+backward, each R calls in
    one CUDA graph (the host out of the time; operands stay in L2, which
    attention, compute-bound, barely reads). Rows as attention()'s, with
    the KV heads in the extra column ("causal kv8") where they are fewer
    than the heads (GQA: the backward reduces dK and dV over the group)."""
    cases = [(1, h, h, s, 128, True) for s in (256, 512, 1024, 2048, 4096, 8192) for h in (4, 8, 16, 32, 64)]
    cases += [(1, 32, 8, s, 128, True) for s in (512, 2048, 8192)]
    cases += [(1, 16, 16, s, 72, False) for s in (256, 1024, 4096)] + [(1, 16, 16, 2048, 128, False)]
    attention_graphed(cases, "attention_b1")


def attention_d():
    """cuDNN attention across head dimensions (32-256), as attention_b1
    times it: causal 4,096 tokens x 4 sequences x 16 heads (many waves),
    full 1,024 x 16 x 16 (vision blocks' shape), causal 2,048 tokens of
    one sequence x 16 heads (a few waves)."""
    cases = []
    for d in (32, 64, 72, 80, 96, 128, 160, 192, 256):
        cases += [(4, 16, 16, 4096, d, True), (16, 16, 16, 1024, d, False), (1, 16, 16, 2048, d, True)]
    # and the KV heads a query head shares (GQA's backward reduces dK, dV)
    cases += [(4, 32, kv, 4096, 128, True) for kv in (32, 16, 8, 4, 2, 1)]
    attention_graphed(cases, "attention_d")


def attention_graphed(cases, tag):
    """cases (batch, heads, kv heads, sequence, head dim, causal): the
    forward and forward+backward of cuDNN attention, each R calls in one
    CUDA graph."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for b, hds, kv, s, d, causal in cases:
        if left() < BUDGET * 0.1:
            log(tag + ": budget")
            return
        try:
            q, k, v, do = attn_operands(b, hds, kv, s, d)
            gqa = kv != hds
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                def fwd(i):
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

                def fwdbwd(i):
                    q.grad = k.grad = v.grad = None
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
                    o.backward(do)

                ff = 4.0 * b * hds * s * s * d * (0.5 if causal else 1.0)
                est = ff / 4e14 + 5e-6
                tf, nf = time_graph(fwd, 1, est)
                tfb, nfb = time_graph(fwdbwd, 1, 3.5 * est)
            nb = 2 * b * s * d * (2 * hds + 2 * kv)  # q and o, k and v: 16 bits each
            extra = ("causal" if causal else "full") + (" kv%d" % kv if gqa else "")
            row("attention", "cudnn.fwd", "bf16", s, d, hds, b, 0, ff, nb, nf, 1, tf, extra)
            row("attention", "cudnn.fwdbwd", "bf16", s, d, hds, b, 0, 3.5 * ff, 3 * nb, nfb, 1, tfb, extra)
            log("%s b%d h%d kv%d s%d d%d %s: fwd %.1f us, fwdbwd %.1f us" % (
                tag, b, hds, kv, s, d, extra, sorted(tf)[len(tf) // 2] * 1e6,
                sorted(tfb)[len(tfb) // 2] * 1e6))
            del q, k, v, do
        except Exception as e:  # noqa: BLE001
            log("%s b%d h%d s%d d%d: %s" % (tag, b, hds, s, d, str(e).splitlines()[0][:200]))


# ---- grouped GEMMs (MoE experts) ----------------------------------------------
def grouped():
    if not hasattr(torch, "_grouped_mm"):
        log("grouped: torch._grouped_mm missing")
        return
    g = torch.Generator(device="cpu").manual_seed(1234)
    for e, h, f in ((128, 2048, 768), (16, 4096, 1536)):
        for mean_rows in (64, 128, 256, 512, 1024, 2048):
            for spread in ("equal", "multinomial", "dirichlet1"):
                if left() < BUDGET * 0.03:
                    log("grouped: budget")
                    return
                total = e * mean_rows
                if spread == "equal":
                    counts = torch.full((e,), mean_rows, dtype=torch.int64)
                else:
                    p = torch.ones(e) / e
                    if spread == "dirichlet1":
                        p = torch.distributions.Dirichlet(torch.ones(e)).sample()
                    counts = torch.bincount(torch.multinomial(p, total, replacement=True, generator=g),
                                            minlength=e)
                for align in (1, 16):
                    c = counts.clone()
                    if align > 1:
                        c = (c + align - 1) // align * align
                    offs = torch.cumsum(c, 0).to(torch.int32).to(DEV)
                    M = int(c.sum())
                    sd = float(c.double().std(unbiased=False))
                    for op, n, k in (("experts_up", 2 * f, h), ("experts_down", h, f)):
                        try:
                            a = torch.randn(M, k, device=DEV, dtype=BF16)
                            w = torch.randn(e, n, k, device=DEV, dtype=BF16).transpose(-2, -1)
                            ts, ng = time_eager(lambda: torch._grouped_mm(a, w, offs=offs, out_dtype=BF16))
                        except Exception as ex:  # noqa: BLE001
                            log("grouped %s align %d: %s" % (spread, align, str(ex).splitlines()[0][:200]))
                            if align == 1:
                                break
                            return
                        row("grouped", op, "bf16", M // e, n, k, e, sd, 2.0 * M * n * k,
                            (M * k + e * k * n + M * n) * 2, ng, 1, ts, "%s.align%d" % (spread, align))
                        del a, w
                    else:
                        break  # align 1 worked: no need for the aligned variant


# ---- optimizer step ---------------------------------------------------------------
def optimizer():
    """torch.optim.AdamW(fused=True) over 16 fp32 tensors: reads parameter,
    gradient and both moments, writes parameter and moments: 28 B a parameter."""
    for total in (1 << 22, 1 << 24, 1 << 26, 1 << 28):
        if left() < 0:
            return
        ntens = 16
        ps = [torch.randn(total // ntens, device=DEV, dtype=torch.float32, requires_grad=True)
              for _ in range(ntens)]
        for p in ps:
            p.grad = torch.randn_like(p)
        opt = torch.optim.AdamW(ps, lr=1e-4, fused=True)
        ts, no = time_eager(opt.step, warm=3)
        row("optimizer", "adamw_fused", "fp32", total, 0, 0, ntens, 0, 0, 28.0 * total, no, 1, ts,
            "28 B a parameter")
        del opt, ps


# ---- held-out shapes --------------------------------------------------------------
def heldout():
    """Shapes none of the other sections has, for checking a fit out of
    sample: 120 GEMMs of seeded log-uniform sizes (256-16,384 each side, in
    multiples of 8) in the three orientations, and cuDNN attention at other
    batches, heads, head dims and sequences. Run alone (--sections heldout)
    into a file of its own."""
    import random
    rng = random.Random(20261204)
    for _ in range(120):
        if left() < BUDGET * 0.3:
            log("heldout: budget")
            break
        m, n, k = (max(8, int(2 ** rng.uniform(8, 14)) // 8 * 8) for _ in range(3))
        gemm("gemm_heldout", "random", m, n, k, form=rng.choice(("nt", "nn", "tn")))
    attention(cases=[(1, 40, 16384, 128, True), (8, 8, 2048, 64, True), (4, 16, 4096, 64, True),
                     (32, 16, 512, 128, True), (2, 32, 8192, 128, False), (16, 12, 1024, 80, False)],
              section="attention", only=("cudnn",))


# ---- probes: tile and split-K evidence ------------------------------------------
def grouped_sweep():
    """Equal rows per expert swept finely (16-row steps to 512, then 64),
    for the steps tile quantisation puts in the time: the row tile of
    torch._grouped_mm's kernel and its cost at each step."""
    if not hasattr(torch, "_grouped_mm"):
        log("grouped_sweep: torch._grouped_mm missing")
        return
    rows = list(range(16, 513, 16)) + list(range(576, 1025, 64))
    for e, h, f in ((128, 2048, 768), (16, 4096, 1536)):
        for op, n, k in (("experts_up", 2 * f, h), ("experts_down", h, f)):
            w = torch.randn(e, n, k, device=DEV, dtype=BF16).transpose(-2, -1)
            for r in rows:
                if left() < BUDGET * 0.3:
                    log("grouped_sweep: budget")
                    return
                M = e * r
                offs = torch.arange(1, e + 1, device=DEV, dtype=torch.int32) * r
                a = torch.randn(M, k, device=DEV, dtype=BF16)
                ts, ng = time_eager(lambda: torch._grouped_mm(a, w, offs=offs, out_dtype=BF16))
                row("grouped", op, "bf16", r, n, k, e, 0.0, 2.0 * M * n * k,
                    (M * k + e * k * n + M * n) * 2, ng, 1, ts, "equal.sweep")
                del a
            del w


def grouped_wgrad():
    """The experts' weight gradients as torch._grouped_mm runs them: each
    expert's dW = X_e^T dY_e over its own tokens, the tokens (ragged) the
    reduction dimension, 2-D x 2-D with offsets: (e, h, 2f) for the up
    projection, (e, f, h) for the down. Rows: m and n the weight's, k the
    tokens an expert on average, m_sd the tokens' spread."""
    if not hasattr(torch, "_grouped_mm"):
        log("grouped_wgrad: torch._grouped_mm missing")
        return
    g = torch.Generator(device="cpu").manual_seed(4321)
    for e, h, f in ((128, 2048, 768), (16, 4096, 1536)):
        for mean_rows in (128, 256, 512, 1024, 2048):
            for spread in ("equal", "multinomial"):
                if left() < BUDGET * 0.3:
                    log("grouped_wgrad: budget")
                    return
                if spread == "equal":
                    c = torch.full((e,), mean_rows, dtype=torch.int64)
                else:
                    c = torch.bincount(torch.multinomial(torch.ones(e) / e, e * mean_rows,
                                                         replacement=True, generator=g), minlength=e)
                offs = torch.cumsum(c, 0).to(torch.int32).to(DEV)
                M = int(c.sum())
                sd = float(c.double().std(unbiased=False))
                for op, m, n in (("experts_up_wgrad", h, 2 * f), ("experts_down_wgrad", f, h)):
                    x = torch.randn(M, m, device=DEV, dtype=BF16)
                    dy = torch.randn(M, n, device=DEV, dtype=BF16)
                    try:
                        ts, ng = time_eager(lambda: torch._grouped_mm(x.t(), dy, offs=offs, out_dtype=BF16))
                    except Exception as ex:  # noqa: BLE001
                        log("grouped_wgrad %s: %s" % (op, str(ex).splitlines()[0][:200]))
                        return
                    row("grouped_wgrad", op, "bf16", m, n, M // e, e, sd, 2.0 * M * m * n,
                        (M * m + M * n + e * m * n) * 2, ng, 1, ts, spread)
                    del x, dy


def splitk():
    """Small outputs with a deep k, where split-K decides the time: m = n
    in 128-1,024 (and two held-out shapes), k from 512 to 16,384."""
    for mn in (128, 256, 384, 512, 768, 1024):
        for k in (512, 1024, 2048, 4096, 8192, 16384):
            if left() < BUDGET * 0.3:
                log("splitk: budget")
                return
            gemm("gemm_splitk", "square_out", mn, mn, k, form="nt")
    for m, n, k, form in ((312, 920, 5488, "tn"), (368, 320, 4144, "nt"), (416, 816, 5768, "tn")):
        gemm("gemm_splitk", "heldout_shape", m, n, k, form=form)


def kernelnames():
    """The kernels each op launches and their GPU time, from torch.profiler:
    which tile, split-K or stream-K a cuBLAS or CUTLASS kernel runs.
    Written to kernel_names.jsonl, one object a (case, kernel)."""
    import json
    from torch.profiler import ProfilerActivity, profile
    cases = []
    for m, n, k, form in ((312, 920, 5488, "tn"), (368, 320, 4144, "nt"), (416, 816, 5768, "tn"),
                          (840, 7224, 14080, "tn"), (256, 256, 4096, "nt"), (512, 512, 8192, "nt"),
                          (1024, 1024, 16384, "nt"), (4096, 3072, 4096, "nt"), (4096, 4096, 3072, "nn"),
                          (3072, 4096, 4096, "tn"), (8192, 8192, 8192, "nt"), (2048, 1536, 1024, "nt")):
        if form == "nt":
            A = torch.randn(m, k, device=DEV, dtype=BF16)
            B = torch.randn(n, k, device=DEV, dtype=BF16).t()
        elif form == "tn":
            A = torch.randn(k, m, device=DEV, dtype=BF16).t()
            B = torch.randn(k, n, device=DEV, dtype=BF16)
        else:
            A = torch.randn(m, k, device=DEV, dtype=BF16)
            B = torch.randn(k, n, device=DEV, dtype=BF16)
        cases.append(("mm %dx%dx%d %s" % (m, n, k, form), (lambda A=A, B=B: torch.mm(A, B))))
    if hasattr(torch, "_grouped_mm"):
        g = torch.Generator(device="cpu").manual_seed(99)
        for e, n, k, r, spread in ((128, 1536, 2048, 64, "equal"), (128, 1536, 2048, 128, "equal"),
                                   (128, 1536, 2048, 512, "equal"), (128, 1536, 2048, 2048, "equal"),
                                   (128, 2048, 768, 512, "equal"), (128, 2048, 768, 2048, "equal"),
                                   (16, 3072, 4096, 512, "equal"), (16, 4096, 1536, 512, "equal"),
                                   (128, 1536, 2048, 128, "multinomial"), (16, 3072, 4096, 128, "multinomial")):
            if spread == "equal":
                c = torch.full((e,), r, dtype=torch.int64)
            else:
                c = torch.bincount(torch.multinomial(torch.ones(e) / e, e * r, replacement=True,
                                                     generator=g), minlength=e)
            offs = torch.cumsum(c, 0).to(torch.int32).to(DEV)
            a = torch.randn(int(c.sum()), k, device=DEV, dtype=BF16)
            w = torch.randn(e, n, k, device=DEV, dtype=BF16).transpose(-2, -1)
            cases.append(("grouped e%d %dx%dx%d %s" % (e, r, n, k, spread),
                          (lambda a=a, w=w, offs=offs: torch._grouped_mm(a, w, offs=offs, out_dtype=BF16))))
        for e, m, n, r in ((128, 2048, 1536, 512), (16, 4096, 3072, 512)):
            offs = (torch.arange(1, e + 1, dtype=torch.int32) * r).to(DEV)
            xw = torch.randn(e * r, m, device=DEV, dtype=BF16)
            dyw = torch.randn(e * r, n, device=DEV, dtype=BF16)
            cases.append(("grouped wgrad e%d %dx%dx%d" % (e, m, n, r),
                          (lambda xw=xw, dyw=dyw, offs=offs:
                           torch._grouped_mm(xw.t(), dyw, offs=offs, out_dtype=BF16))))
        ea = torch.randn(128, 512, 2048, device=DEV, dtype=BF16)
        eb = torch.randn(128, 1536, 2048, device=DEV, dtype=BF16).transpose(1, 2)
        cases.append(("bmm e128 512x1536x2048", lambda: torch.bmm(ea, eb)))
    with open(os.path.join(OUT, "kernel_names.jsonl"), "w") as f:
        for name, fn in cases:
            if left() < BUDGET * 0.05:
                log("kernelnames: budget")
                break
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                t = getattr(ev, "device_time_total", None)
                if t is None:
                    t = getattr(ev, "cuda_time_total", 0)
                if not t:
                    continue
                f.write(json.dumps({"case": name, "kernel": ev.key, "count": ev.count,
                                    "us_per_call": t / 5.0}) + "\n")
            f.flush()
        del cases


SECTIONS = (("launch", lambda: launch()), ("gemms", lambda: gemms()),
            ("elementwise", lambda: elementwise()), ("attention", lambda: attention()),
            ("grouped", lambda: grouped()), ("optimizer", lambda: optimizer()),
            ("heldout", lambda: heldout()), ("grouped_sweep", lambda: grouped_sweep()),
            ("splitk", lambda: splitk()), ("kernelnames", lambda: kernelnames()),
            ("grouped_wgrad", lambda: grouped_wgrad()), ("attention_b1", lambda: attention_b1()),
            ("attention_d", lambda: attention_d()))


def main():
    torch.manual_seed(0)
    env()
    clocks("start")
    want = sys.argv[sys.argv.index("--sections") + 1].split(",") if "--sections" in sys.argv else \
        [n for n, _ in SECTIONS if n not in ("heldout", "grouped_sweep", "splitk", "kernelnames",
                                              "grouped_wgrad", "attention_b1", "attention_d")]
    for name, fn in SECTIONS:
        if name not in want:
            continue
        log("section", name)
        try:
            fn()
        except Exception:  # noqa: BLE001
            log("section %s failed:\n%s" % (name, traceback.format_exc()))
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        clocks("after " + name)
    log("done")
    csv.close()


if __name__ == "__main__":
    main()

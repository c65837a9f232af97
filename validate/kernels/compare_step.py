#!/usr/bin/env python3
"""compare_step.py: trainsim's per-op predictions of whole decoder layers
against the layers measure_step.py timed on a GPU.

For each configuration in the step CSV, writes a Llama-style Hugging Face
config of those dimensions, runs `trainsim predict` of one micro-batch on a
one-GPU cluster of the measured GPU's preset (tp, pp, dp 1, no recompute,
bf16, flash attention, analytic) with --trace, and sums the trace's slices
of the decoder layers; the measured step's kernels (torch.profiler) are
summed in the same three classes by name: cuBLAS GEMMs (nvjet), cuDNN
attention (cudnn, fmha, sdpa), and the rest (element-wise, norms, copies).
Prints predicted / measured - 1 for the forward, the forward and backward
(trainsim's slices, each with its op's wait for the host's dispatch), and
the kernels by class (trainsim run again with dispatch_us 0: the GPU's time
alone, as the profiler's kernels are). Needs only python3 and a built trainsim.

With --small, the same for the dense layers at short sequences
(measure_step.py --dense-small: h200-step-small.csv and -kernels.jsonl),
where the host's dispatch meets the GPU's time. --calibration FILE is
passed to trainsim predict (e.g. a file with only dispatch_us).

With --stacks, the dense layers at short sequences run by four stacks
(measure_step.py --stacks and --dense-small: h200-step-stacks.csv, eager
from h200-step-small.csv): eager PyTorch, the eager step replayed as a CUDA
graph, each layer through torch.compile, and the compiled step as a CUDA
graph. For each: the measured step and its kernels, trainsim's step with
the host's dispatch at 0 and at the default, the number of workload ops,
the dispatch_us at which trainsim's step equals the measured one where
the host sets the pace (its issue time at least 0.8 of the step's; by
bisection on --host-dispatch, 0 where the step at 0 is already as slow;
"-" where the GPU sets it: a CUDA graph's step, whose gap at 0 is the
GPU's), and the host's issue time per workload op. --calibration FILE
applies here too, its dispatch_us replaced by each of those.

With --moe, the same for the MoE layers measure_step.py --moe timed
(h200-moe-step.csv, h200-moe-step-kernels.jsonl, h200-moe-counts.csv): a
Qwen3-MoE config of those dimensions, expert parallelism 1; the router's
spread from the measured tokens per expert: each layer's squared
coefficient of variation less the multinomial's 1/mean, averaged over the
layers, as --expert-imbalance; a vocabulary of 128 (the timed layers have
no embedding or LM head, whose long kernels would let the host run ahead
of the layers after them where dispatch is priced); SequentialMLP and
Hugging Face's eager
loop as --no-moe-grouped-gemm, Hugging Face's grouped_mm as the grouped
kernel.

Usage: compare_step.py [--trainsim build/trainsim] [--data validate/data]
                       [--preset h200-ndr] [--moe | --small | --stacks]
                       [--calibration FILE]
"""
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
B = arg("--trainsim", os.path.join(ROOT, "build", "trainsim"))
D = arg("--data", os.path.join(ROOT, "validate", "data"))
PRESET = arg("--preset", "h200-ndr")
CAL = arg("--calibration", None)


def kind_measured(k):
    if "nvjet" in k or "gemm" in k.lower():
        return "gemm"
    if "cudnn" in k or "fmha" in k or "sdpa" in k:
        return "attention"
    return "element-wise"


def kind_predicted(n):
    if "gemm" in n or "dgrad" in n or "wgrad" in n:
        return "gemm"
    if n.startswith("attention"):
        return "attention"
    return "element-wise"


def backward(n):
    return "bwd" in n or "grad" in n


MOE = "--moe" in sys.argv
SMALL = "--small" in sys.argv
STACKS = "--stacks" in sys.argv


def moe_imbalance():
    """(config, micro, experts_as) -> the router's spread, from the measured
    tokens per expert: sqrt(mean over layers of max(0, cv^2 - 1/mean))."""
    acc = {}
    for r in csv.DictReader(open(os.path.join(D, "h200-moe-counts.csv"))):
        mu, sd = float(r["mean"]), float(r["sd"])
        acc.setdefault((r["config"], int(r["micro"]), r["experts_as"]), []).append(
            max(0.0, (sd / mu) ** 2 - 1.0 / mu))
    return {k: (sum(v) / len(v)) ** 0.5 for k, v in acc.items()}


def model_of(r):
    if not MOE:
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": int(r["hidden"]), "intermediate_size": int(r["ffn"]),
                "num_attention_heads": int(r["heads"]), "num_key_value_heads": int(r["kv_heads"]),
                "head_dim": int(r["head_dim"]), "num_hidden_layers": int(r["layers"]),
                "vocab_size": 32000, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0, "tie_word_embeddings": False, "hidden_act": "silu"}
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "hidden_size": int(r["hidden"]), "intermediate_size": 4 * int(r["hidden"]),
            "moe_intermediate_size": int(r["moe_ffn"]), "num_experts": int(r["experts"]),
            "num_experts_per_tok": int(r["top_k"]), "norm_topk_prob": True, "decoder_sparse_step": 1,
            "mlp_only_layers": [], "num_attention_heads": int(r["heads"]),
            "num_key_value_heads": int(r["kv_heads"]), "head_dim": int(r["head_dim"]),
            "num_hidden_layers": int(r["layers"]), "vocab_size": 128,
            "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
            "tie_word_embeddings": False, "hidden_act": "silu"}


def predict_layers(tmp, cluster, mpath, r, mb, extra):
    """The decoder layers' slices of trainsim's prediction of one
    micro-batch of row r's shape: (time by class, the forward's time, the
    number of slices: the workload's ops), us."""
    tpath = os.path.join(tmp, "trace.json")
    subprocess.run([B, "predict", "--cluster", cluster, "--model", mpath, "--tp", "1", "--pp",
                    "1", "--dp", "1", "--global-batch", str(mb), "--micro-batch", str(mb),
                    "--seq-len", r["seq"], "--recompute", "none", "--precision", "bf16",
                    "--flash-attention", "--fidelity", "analytic", "--trace", tpath] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    t = json.load(open(tpath))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    by = {"gemm": 0.0, "attention": 0.0, "element-wise": 0.0}
    fw, n = 0.0, 0
    for e in ev:
        if e.get("ph") == "X" and e.get("args", {}).get("layer", -1) >= 0:
            by[kind_predicted(e["name"])] += e["dur"]
            fw += 0 if backward(e["name"]) else e["dur"]
            n += 1
    return by, fw, n


def stacks():
    """--stacks: the host's cost per workload op, stack by stack."""
    rows = {}
    for f, fixed in (("h200-step-small.csv", "eager"), ("h200-step-stacks.csv", None)):
        for r in csv.DictReader(open(os.path.join(D, f))):
            if r["part"] in ("fwdbwd", "fwdbwd_issue"):
                key = (r["config"], int(r["seq"]), fixed or r["stack"])
                rows.setdefault(key, {"r": r})[r["part"]] = float(r["t_med_us"])
    kern = {}
    for f, fixed in (("h200-step-small-kernels.jsonl", "eager"), ("h200-step-stacks-kernels.jsonl", None)):
        for line in open(os.path.join(D, f)):
            d = json.loads(line)
            c = d["config"].split(".")
            key = (c[0], int(c[2][3:]), fixed or c[3])
            n, us = kern.get(key, (0, 0.0))
            kern[key] = (n + d["calls"], us + d["us"])
    tmp = tempfile.mkdtemp(prefix="compare_step_")
    cluster = os.path.join(tmp, "one.json")
    json.dump({"preset": PRESET, "nodes": 1, "node": {"gpus": 1, "nics": 1}}, open(cluster, "w"))
    mpath = os.path.join(tmp, "model.json")
    order = {"eager": 0, "graph": 1, "compiled": 2, "compiled-graph": 3}
    print("config          seq  stack           measured  issue  kernels (n, us)   ops  "
          "pred@0   err@0  pred@55  err@55  fit_us  issue/op_us")
    fits, gpu = {}, {}
    for key in sorted(rows, key=lambda k: (k[0], k[1], order[k[2]])):
        d = rows[key]
        r, m = d["r"], d["fwdbwd"]
        json.dump(model_of(r), open(mpath, "w"))

        def whole(us):
            by, _, n = predict_layers(tmp, cluster, mpath, r, 1, (["--calibration", CAL] if CAL else [])
                                      + ["--host-dispatch", "%.4f" % us])
            return sum(by.values()), n
        p0, nops = whole(0)
        p55, _ = whole(55)
        lo, hi = 0.0, 1000.0
        host = d.get("fwdbwd_issue", 0) >= 0.8 * m
        if p0 >= m or not host:
            hi = 0.0
        else:
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                if whole(mid)[0] < m:
                    lo = mid
                else:
                    hi = mid
        if host:
            fits.setdefault(key[2], []).append(hi)
        gpu.setdefault(key[2], []).append(p0 / m - 1)
        kn, kus = kern.get(key, (0, 0.0))
        print("%-14s %5d  %-14s %9.0f %6.0f %6d %8.0f %6d %8.0f %+6.1f%% %8.0f %+6.1f%% %7s %8.1f" % (
            key[0], key[1], key[2], m, d.get("fwdbwd_issue", 0), kn, kus, nops, p0,
            100 * (p0 / m - 1), p55, 100 * (p55 / m - 1), "%.1f" % hi if host else "-",
            d.get("fwdbwd_issue", 0) / nops))
    for st in sorted(gpu, key=lambda k: order[k]):
        v = sorted(fits.get(st, []))
        n = len(v)
        print("# %-14s %s; error at dispatch 0: %+.1f to %+.1f %%" % (
            st, "dispatch_us fitted: median %.1f, %.1f-%.1f over %d host-bound shapes" % (
                v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]), v[0], v[-1], n)
            if n else "GPU-bound (no fit)", 100 * min(gpu[st]), 100 * max(gpu[st])))
    print("# measured: validate/data/h200-step-stacks.csv and h200-step-small.csv (CUDA events, "
          "median of 10 steps), kernels of one profiled step (-kernels.jsonl)")


def main():
    steps, cfgs = {}, []
    stem = "h200-moe-step" if MOE else "h200-step-small" if SMALL else "h200-step"
    imb = moe_imbalance() if MOE else {}
    for r in csv.DictReader(open(os.path.join(D, stem + ".csv"))):
        if r["part"] not in ("fwd", "fwdbwd"):
            continue
        key = (r["config"], int(r["micro"])) + ((r["experts_as"],) if MOE else
                                                ("seq%s" % r["seq"],) if SMALL else ())
        steps[key + (r["part"],)] = float(r["t_med_us"])
        if key not in [c[0] for c in cfgs]:
            cfgs.append((key, r))
    kern = {}
    for line in open(os.path.join(D, stem + "-kernels.jsonl")):
        d = json.loads(line)
        kern.setdefault(d["config"], []).append(d)
    tmp = tempfile.mkdtemp(prefix="compare_step_")
    cluster = os.path.join(tmp, "one.json")
    one = {"preset": PRESET, "nodes": 1, "node": {"gpus": 1, "nics": 1}}
    if MOE:  # the optimizer's state, which the timed layers lack, would not fit 235B-A22B's
        one["gpu"] = {"memory": "1TB"}  # embedding and experts in the preset's memory
    json.dump(one, open(cluster, "w"))
    cal = {k: v for k, v in (json.load(open(CAL)) if CAL else {}).items()
           if k not in ("dispatch", "dispatch_us")}  # (either spelling: one only)
    cal["dispatch_us"] = 0
    no_host = os.path.join(tmp, "no_host.json")
    json.dump(cal, open(no_host, "w"))
    print("config                 part      measured_us  predicted_us   pred/meas-1")
    whole_of = {}
    for key, r in cfgs:
        name, mb = key[0], key[1]
        mpath = os.path.join(tmp, "model.json")
        json.dump(model_of(r), open(mpath, "w"))
        extra = []
        if MOE:
            how = key[2]
            cv = imb.get(key, imb.get((name.replace("hf-", ""), mb, "grouped"), 0.0))
            extra = ["--expert-imbalance", "%.4f" % cv]
            if how in ("sequential", "hf-eager"):
                extra.append("--no-moe-grouped-gemm")
        def predict(cal):
            return predict_layers(tmp, cluster, mpath, r, mb, extra + (["--calibration", cal] if cal
                                                                      else []))[:2]

        # the step as trainsim runs it (a slice holds its op's wait for
        # the host's dispatch), then its kernels alone: the host at 0
        whole, pred_fwd = predict(CAL)
        pred, _ = predict(no_host)
        whole_of[key] = sum(whole.values())
        meas = {"gemm": 0.0, "attention": 0.0, "element-wise": 0.0}
        for k in kern.get(".".join(["%s.mb%d" % (name, mb)] + list(key[2:])), []):
            meas[kind_measured(k["kernel"])] += k["us"]
        tag = " ".join(["%s mb %d" % (name, mb)] + list(key[2:]))
        rows = [("forward", steps[key + ("fwd",)], pred_fwd),
                ("fwd+bwd", steps[key + ("fwdbwd",)], sum(whole.values())),
                ("kernels", sum(meas.values()), sum(pred.values()))]
        rows += [("  " + c, meas[c], pred[c]) for c in pred]
        for part, m, p in rows:
            print("%-22s %-9s %11.0f %13.0f %+12.1f%%" % (tag, part, m, p, 100 * (p / m - 1)))
        if MOE:
            print("%-22s (--expert-imbalance %.3f)" % (tag, cv))
    print("# measured: validate/data/%s.csv (CUDA events, median of 10 steps; 5 for Hugging Face's) "
          "and the kernels of one profiled step (%s-kernels.jsonl)" % (stem, stem))
    if MOE:
        host_bound(whole_of)


def host_bound(whole_of):
    """The host-bound steps (SequentialMLP's, each the host's time): every
    measurement of them, from the main file, the repeats and the host
    probe's wall times, against the prediction of its shape, and the
    median error (what the default dispatch_us was chosen by)."""
    seen = []
    for f in ("h200-moe-step.csv", "h200-moe-step-repeats.csv"):
        for r in csv.DictReader(open(os.path.join(D, f))):
            if r["experts_as"] == "sequential" and r["part"] == "fwdbwd":
                seen.append(((r["config"], int(r["micro"]), "sequential"), float(r["t_med_us"]),
                             f + (" run " + r["run"] if "run" in r else "")))
    for f in sorted(glob.glob(os.path.join(D, "h200-host-probe*.csv"))):
        for r in csv.DictReader(open(f)):
            w = r["what"].split(".")
            if len(w) == 4 and w[2] == "sequential" and w[3] == "wall_us":
                seen.append(((w[0], int(w[1][2:]), "sequential"), float(r["value"]),
                             os.path.basename(f)))
    errs = []
    print("# host-bound steps (SequentialMLP), every measurement:")
    for key, m, src in seen:
        p = whole_of[key]
        errs.append(p / m - 1)
        print("%-40s %11.0f %13.0f %+12.1f%%  (%s)" % (" ".join([key[0], "mb %d" % key[1], key[2]]), m, p,
                                                      100 * errs[-1], src))
    errs.sort()
    n = len(errs)
    print("# %d steps: median error %+.1f%%, mean |error| %.1f%%" % (
        n, 100 * (errs[n // 2] if n % 2 else 0.5 * (errs[n // 2 - 1] + errs[n // 2])),
        100 * sum(abs(e) for e in errs) / n))


if __name__ == "__main__":
    stacks() if STACKS else main()

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
Prints predicted / measured - 1 for the forward, the forward and backward,
and each class. Needs only python3 and a built trainsim.

Usage: compare_step.py [--trainsim build/trainsim] [--data validate/data]
                       [--preset h200-ndr]
"""
import csv
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


def main():
    steps, cfgs = {}, []
    for r in csv.DictReader(open(os.path.join(D, "h200-step.csv"))):
        key = (r["config"], int(r["micro"]))
        steps[key + (r["part"],)] = float(r["t_med_us"])
        if key not in [c[0] for c in cfgs]:
            cfgs.append((key, r))
    kern = {}
    for line in open(os.path.join(D, "h200-step-kernels.jsonl")):
        d = json.loads(line)
        kern.setdefault(d["config"], []).append(d)
    tmp = tempfile.mkdtemp(prefix="compare_step_")
    cluster = os.path.join(tmp, "one.json")
    json.dump({"preset": PRESET, "nodes": 1, "node": {"gpus": 1, "nics": 1}}, open(cluster, "w"))
    print("config                 part      measured_us  predicted_us   pred/meas-1")
    for (name, mb), r in cfgs:
        model = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                 "hidden_size": int(r["hidden"]), "intermediate_size": int(r["ffn"]),
                 "num_attention_heads": int(r["heads"]), "num_key_value_heads": int(r["kv_heads"]),
                 "head_dim": int(r["head_dim"]), "num_hidden_layers": int(r["layers"]),
                 "vocab_size": 32000, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                 "rope_theta": 500000.0, "tie_word_embeddings": False, "hidden_act": "silu"}
        mpath, tpath = os.path.join(tmp, "model.json"), os.path.join(tmp, "trace.json")
        json.dump(model, open(mpath, "w"))
        subprocess.run([B, "predict", "--cluster", cluster, "--model", mpath, "--tp", "1", "--pp", "1",
                        "--dp", "1", "--global-batch", str(mb), "--micro-batch", str(mb), "--seq-len",
                        r["seq"], "--recompute", "none", "--precision", "bf16", "--flash-attention",
                        "--fidelity", "analytic", "--trace", tpath], check=True,
                       stdout=subprocess.DEVNULL)
        t = json.load(open(tpath))
        ev = t["traceEvents"] if isinstance(t, dict) else t
        pred = {"gemm": 0.0, "attention": 0.0, "element-wise": 0.0}
        pred_fwd = 0.0
        for e in ev:
            if e.get("ph") == "X" and e.get("args", {}).get("layer", -1) >= 0:
                pred[kind_predicted(e["name"])] += e["dur"]
                pred_fwd += 0 if backward(e["name"]) else e["dur"]
        meas = {"gemm": 0.0, "attention": 0.0, "element-wise": 0.0}
        for k in kern.get("%s.mb%d" % (name, mb), []):
            meas[kind_measured(k["kernel"])] += k["us"]
        tag = "%s mb %d" % (name, mb)
        rows = [("forward", steps[(name, mb, "fwd")], pred_fwd),
                ("fwd+bwd", steps[(name, mb, "fwdbwd")], sum(pred.values())),
                ("kernels", sum(meas.values()), sum(pred.values()))]
        rows += [("  " + c, meas[c], pred[c]) for c in pred]
        for part, m, p in rows:
            print("%-22s %-9s %11.0f %13.0f %+12.1f%%" % (tag, part, m, p, 100 * (p / m - 1)))
    print("# measured: validate/data/h200-step.csv (CUDA events, median of 10 steps) and the "
          "kernels of one profiled step (h200-step-kernels.jsonl)")


if __name__ == "__main__":
    main()

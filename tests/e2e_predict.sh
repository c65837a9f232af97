#!/usr/bin/env bash
# e2e_predict.sh: `trainsim predict` on real files: summary, JSON keys,
# traces, and bad inputs (one line on stderr; exit 1 infeasible, 2 bad input).
set -u
. "$(dirname "$0")/e2e-lib.bash"
cat >"$TMP/tiny.json" <<'J'
{"n_embd": 1024, "n_layer": 8, "n_head": 16, "vocab_size": 1000, "n_positions": 2048, "model_type": "gpt2"}
J
SMALL="--cluster dgx-h100-ndr --nodes 2 --model $TMP/tiny.json --tp 2 --pp 2 --global-batch 16 --seq-len 1024"

check "predict --help" 0 "$TRAINSIM" predict --help
expect "help names --trace" "--trace FILE" "$TMP/out"
check "predict table" 0 "$TRAINSIM" predict $SMALL
expect "table has iteration time" "^iteration time" "$TMP/out"
expect "table has bubble" "^pipeline bubble" "$TMP/out"
expect "table has the host's wait" "^host dispatch wait" "$TMP/out"
check "predict json" 0 "$TRAINSIM" predict $SMALL --json
for k in iteration_time_s tokens_per_s tflops_per_gpu mfu hfu memory_gib_per_gpu fits breakdown \
	compute_s bubble_s optimizer_s host_s exposed_comm_s '"tp"' '"pp"' '"dp"' '"ep"' '"cp"'; do
	expect "json key $k" "$k" "$TMP/out"
done
check "predict analytic" 0 "$TRAINSIM" predict $SMALL --fidelity analytic --json
# the throughput figures from their definitions (found by an audit: only
# their keys were checked, and tokens/s x 2 or MFU on the executed FLOPs
# passed): model FLOPs are Megatron's 72 B s L h^2 (1 + s/(6h) + V/(12 h L)),
# the vocabulary padded to 128 x tp (1000 -> 1024); tokens/s = B s / t;
# TFLOP/s per GPU = model FLOPs / t / GPUs; MFU and HFU against the H100's
# 989 TFLOP/s BF16 peak; full recompute runs each layer's forward again, so
# HFU / MFU is about 4/3; the table prints the same figures
check "predict full recompute" 0 "$TRAINSIM" predict $SMALL --recompute full --fidelity analytic --json
cp "$TMP/out" "$TMP/thr.json"
check "predict full recompute table" 0 "$TRAINSIM" predict $SMALL --recompute full --fidelity analytic
if python3 - "$TMP/thr.json" "$TMP/out" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
B, s, L, h, V, gpus, peak = 16, 1024, 8, 1024, 1024, 16, 989e12
t = d["iteration_time_s"]
mf = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))
close = lambda a, b: abs(a / b - 1) < 1e-9
ok = d["vocab"] == V and d["gpus"] == gpus and close(d["model_flops"], mf)
ok = ok and close(d["tokens_per_s"], B * s / t)
ok = ok and close(d["tflops_per_gpu"], mf / t / gpus / 1e12)
ok = ok and close(d["mfu"], mf / t / gpus / peak)
ok = ok and close(d["hfu"], d["hardware_flops"] / t / gpus / peak)
ok = ok and 1.25 < d["hfu"] / d["mfu"] < 1.40 and d["tflops_per_gpu"] < 989
m = re.search(r"^MFU[^0-9]*([0-9.]+) %", table, re.M)
ok = ok and m is not None and abs(float(m.group(1)) - 100 * d["mfu"]) < 0.051
# HFU's label says it counts the FLOPs executed (with flash attention it
# can be below MFU; found by an audit)
m = re.search(r"^HFU \(executed FLOPs\) +([0-9.]+) %", table, re.M)
ok = ok and m is not None and abs(float(m.group(1)) - 100 * d["hfu"]) < 0.051
sys.exit(0 if ok else 1)
PY
then ok "tokens/s, TFLOP/s per GPU, MFU and HFU from their definitions"
else bad "throughput figures: $(tr -d '\n\t' <"$TMP/thr.json" | head -c 600)"; fi
# --routing dmodk: llama3-8b, dp 128 with ZeRO 1 on 16 nodes of the 2:1
# leaf-spine. Its DP rings' steps are shifts, which D-mod-K routes as
# spraying does (one route a link), where ECMP's hashes collide on the
# uplinks; the header and JSON say the routing.
DP="--cluster h100-roce-leafspine-2to1 --nodes 16 --model llama3-8b --zero 1 --global-batch 128 --seq-len 4096 --flash-attention"
for r in ecmp spray dmodk; do
	"$TRAINSIM" predict $DP --routing $r --json >"$TMP/dp_$r.json" 2>"$TMP/err" || bad "predict --routing $r: $(cat "$TMP/err")"
done
if "$TRAINSIM" predict $DP --routing dmodk | grep -q 'fidelity flow, routing dmodk$' &&
   python3 - "$TMP/dp_ecmp.json" "$TMP/dp_spray.json" "$TMP/dp_dmodk.json" <<'PY'
import json, sys
e, s, d = (json.load(open(f)) for f in sys.argv[1:4])
x = lambda j: j["breakdown"]["exposed_comm_s"]["dp"]
ok = d["routing"] == "dmodk" and e["routing"] == "ecmp" and abs(x(d) / x(s) - 1) < 1e-3
sys.exit(0 if ok and x(e) > 1.5 * x(d) else 1)
PY
then ok "predict --routing dmodk: DP rings as sprayed, well under ECMP"
else bad "predict --routing dmodk: $(head -c 300 "$TMP/dp_dmodk.json")"; fi
expect_err "predict --routing dmodk on an explicit fabric" "--routing dmodk needs a structured fabric.*explicit" \
	"$TRAINSIM" predict --cluster "$TS_SOURCE_DIR/examples/clusters/explicit-two-switches.json" --model llama3-8b --routing dmodk
check "predict exact" 0 "$TRAINSIM" predict $SMALL --exact --json
expect "exact simulates every rank" '"instances":[[:space:]]*16' "$TMP/out"
check "predict with traces" 0 "$TRAINSIM" predict $SMALL --trace "$TMP/t.json" --svg "$TMP/t.svg"
expect "trace has traceEvents" '"traceEvents"' "$TMP/t.json"
# times in whole nanoseconds: at most three decimals of a microsecond
# (found by review: durations printed as 6.99600000000001)
if grep -Eo '"(ts|dur)":-?[0-9.eE+-]+' "$TMP/t.json" | grep -q . &&
   ! grep -Eo '"(ts|dur)":-?[0-9.eE+-]+' "$TMP/t.json" | grep -Eq '\.[0-9]{4,}|[eE]'; then
	ok "trace times in whole nanoseconds"
else bad "trace times: $(grep -Eo '"(ts|dur)":-?[0-9.eE+-]+' "$TMP/t.json" | grep -E '\.[0-9]{4,}|[eE]' | head -3)"; fi
expect "svg root" '<svg xmlns="http://www.w3.org/2000/svg"' "$TMP/t.svg"
# the tiny model is host-bound at the default dispatch: its compute slices
# say how long they waited for the host
expect "trace slices carry the host's wait" '"host_wait_us":[0-9]' "$TMP/t.json"
expect "svg titles say it" 'us waiting for the host</title>' "$TMP/t.svg"
expect "the summary says it is host-bound" '^\(host-bound: [0-9]+ % of the iteration waits for the host to issue kernels at 55 us an op' "$TMP/out"
check "not host-bound without a dispatch" 0 "$TRAINSIM" predict $SMALL --host-dispatch 0 --fidelity analytic
if grep -q "host-bound" "$TMP/out"; then bad "no host-bound note at dispatch 0"; else ok "no host-bound note at dispatch 0"; fi
# an output that is an input file would replace it (found by review: the
# model config became the SVG); through another spelling of the path too
cp "$TMP/tiny.json" "$TMP/tiny-copy.json"
expect_err "--svg over the model" "--svg '.*' is an input file" "$TRAINSIM" predict \
	--cluster dgx-h100-ndr --nodes 2 --model "$TMP/tiny-copy.json" --tp 2 --seq-len 1024 \
	--fidelity analytic --svg "$TMP/./tiny-copy.json"
cmp -s "$TMP/tiny.json" "$TMP/tiny-copy.json" && ok "the model file is untouched" || bad "the model file changed"
# a real SVG renderer (librsvg, from setup.sh) parses and draws it
check "svg renders with rsvg-convert" 0 rsvg-convert -o "$TMP/t.png" "$TMP/t.svg"
expect "svg header: one iteration" '>one iteration: [0-9.]+ s \(time axis' "$TMP/t.svg"
# what ran, as the summary's first line (found by an audit: neither file
# named the model, cluster or plan)
expect "svg header: the run" '<text x="4" y="16">model [^ ]+ on [^:]+: [0-9]+ GPUs, tp ' "$TMP/t.svg"
expect "trace metadata: the run" '"run":"model [^ ]+ on [^:]+: [0-9]+ GPUs, tp ' "$TMP/t.json"
# and its settings and seed, a second line (found by review: neither file
# said the precision, ZeRO stage, recompute, sequence or seed)
expect "svg header: the settings" '<text x="4" y="32">seq [0-9]+, (bf16|fp16|fp32|fp8), zero [0-3][^,]*, recompute [a-z]+.*, seed [0-9]+' "$TMP/t.svg"
expect "trace metadata: the settings" '"run":"model [^"]*; seq [0-9]+, (bf16|fp16|fp32|fp8), zero [0-3][^"]*, seed [0-9]+' "$TMP/t.json"
check "predict with a seed and memo" 0 "$TRAINSIM" predict $SMALL --seed 7 --memo 1 --trace "$TMP/t7.json"
expect "trace metadata: seed and memo" '"run":"[^"]*, seed 7, memoised collectives"' "$TMP/t7.json"
# a calibration file under a long name with a control byte and broken
# UTF-8 (found by review: the title was cut mid-character at 1 KB, and
# the SVG and the trace were not valid XML and JSON)
e100=$(printf 'e%.0s' $(seq 100)); cdir="$TMP/$(printf 'cal\001\303x')/$e100/$e100/$e100/$e100/$e100/$e100/$e100/$e100/$e100"
mkdir -p "$cdir" && cp "$EX/calibration/a100-vtrain.json" "$cdir/cal.json"
check "predict with an odd calibration path" 0 "$TRAINSIM" predict $SMALL --fidelity analytic \
	--calibration "$cdir/cal.json" --svg "$TMP/odd.svg" --trace "$TMP/odd.json" --free-comm
expect "warning: the path printable, the GPUs after it" "calibration .*/cal\\\\x01\\\\xc3x/e+/.*/cal\\.json is for GPU 'A100-SXM4-80GB', the cluster's is 'H100" "$TMP/err"
expect "summary: the path printable, whole" 'seed 1, communication free, calibration .*/cal\\x01\\xc3x/e+/.*/cal\.json$' "$TMP/out"
if python3 -c 'import json, sys, xml.dom.minidom as m; m.parse(sys.argv[1]); json.load(open(sys.argv[2]))' \
	"$TMP/odd.svg" "$TMP/odd.json" 2>"$TMP/err"; then ok "odd path: the SVG and the trace parse"
else bad "odd path: $(tail -1 "$TMP/err")"; fi
# and the summary and --json, with a file that has no "source" (the
# compute model's line names the file) and one that has
printf '{"gpu": "H100-SXM5-80GB", "launch": "4us"}' >"$cdir/nosrc.json"
for f in nosrc.json cal.json; do
	"$TRAINSIM" predict $SMALL --fidelity analytic --calibration "$cdir/$f" >"$TMP/odd-$f.txt" 2>/dev/null &&
	"$TRAINSIM" predict $SMALL --fidelity analytic --calibration "$cdir/$f" --json >"$TMP/odd-j.json" 2>/dev/null &&
	python3 -c 'import json, sys; open(sys.argv[1], "rb").read().decode("utf-8"); d = json.load(open(sys.argv[2], "rb")); sys.exit(0 if "\\x01\\xc3x/" in d["calibration"] else 1)' \
		"$TMP/odd-$f.txt" "$TMP/odd-j.json" && ok "odd path, $f: summary UTF-8, --json parses" ||
	bad "odd path, $f: $(grep -a 'compute model' "$TMP/odd-$f.txt" | head -c 200)"
done
expect "odd path: the compute model names the file" '^compute model: calibration file .*/cal\\x01\\xc3x/e+/.*nosrc\.json$' "$TMP/odd-nosrc.json.txt"
expect "svg slices give whole bytes" ', [0-9]+ bytes' "$TMP/t.svg"
if grep -Eq 'e\+[0-9]+ bytes' "$TMP/t.svg"; then bad "svg bytes in exponent form (found by review: 1.60563e+06 bytes)"
else ok "svg bytes without exponent"; fi
# local SGD: the mean step, over a timeline of the step that synchronises,
# said so (found by review)
printf '{"global_batch": 4, "seq_len": 1024, "sync": {"mode": "local_sgd", "interval": 4}}' \
	>"$TMP/lsgd.json"
check "local SGD with --svg" 0 "$TRAINSIM" predict --cluster pcie-2x2-tcp \
	--model "$EX/models/gpt2.json" --plan "$TMP/lsgd.json" --svg "$TMP/l.svg" --trace "$TMP/l.json"
expect "trace metadata: the step that synchronises" '"timeline":"the step that synchronises' "$TMP/l.json"
expect "svg header: mean step, synchronising step shown" \
	'per step on average; the timeline shows the step that synchronises' "$TMP/l.svg"
check "rendered png is not empty" 0 test -s "$TMP/t.png"
check "qwen3-vl-30b plan file" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --json
if python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["breakdown"]["exposed_comm_s"]["ep"] > 0 else 1)' "$TMP/out"; then
	ok "qwen3 exposed ep reported"
else bad "qwen3 exposed ep reported"; fi
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if (d["micro_batch"], d["seq_len"], d["schedule"]) == (1, 8192, "1f1b") and "virtual_stages" not in d else 1)' "$TMP/out"; then
	ok "predict --json: micro_batch, seq_len, schedule"
else bad "predict --json plan keys"; fi
expect "qwen3 expert load reported" '"expert_load_max":[[:space:]]*[01]\.[0-9]' "$TMP/out"
expect "its mean kept load too" '"expert_load_mean":[[:space:]]*0\.9[0-9]' "$TMP/out"
check "--flow-coalesce out of range" 2 "$TRAINSIM" predict $SMALL --flow-coalesce 0.7
expect "says the range" "--flow-coalesce must be between 0 and 0.5" "$TMP/err"
check "exact max-min (--flow-coalesce 0)" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --flow-coalesce 0
check "the plan's flash attention" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --json
on=$(sed -n 's/^[[:space:]]*"iteration_time_s":[[:space:]]*\([0-9.e+-]*\),*$/\1/p' "$TMP/out")
check "--no-flash-attention" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --json \
	--no-flash-attention
off=$(sed -n 's/^[[:space:]]*"iteration_time_s":[[:space:]]*\([0-9.e+-]*\),*$/\1/p' "$TMP/out")
if [ -n "$on" ] && awk -v a="$on" -v b="$off" 'BEGIN { exit !(b > a * 1.2) }'; then ok "unfused attention is slower ($on -> $off s)"
else bad "no-flash time '$off' not above '$on'"; fi
check "padded to the capacity" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 \
	--pad-to-capacity
expect "every rank at the capacity" '^expert load, mean rank +1\.250 x balanced' "$TMP/out"
check "the plan's grouped expert GEMM" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --json
expect "json says so" '"moe_grouped_gemm":[[:space:]]*true,' "$TMP/out"
on=$(sed -n 's/^[[:space:]]*"iteration_time_s":[[:space:]]*\([0-9.e+-]*\),*$/\1/p' "$TMP/out")
check "--no-moe-grouped-gemm" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --json \
	--no-moe-grouped-gemm
expect "json says false" '"moe_grouped_gemm":[[:space:]]*false,' "$TMP/out"
off=$(sed -n 's/^[[:space:]]*"iteration_time_s":[[:space:]]*\([0-9.e+-]*\),*$/\1/p' "$TMP/out")
if [ -n "$on" ] && awk -v a="$on" -v b="$off" 'BEGIN { exit !(b > a) }'; then ok "one expert after another is slower ($on -> $off s)"
else bad "sequential experts' time '$off' not above '$on'"; fi
check "--no-moe-grouped-gemm on a dense model" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model llama3-8b --tp 8 --no-moe-grouped-gemm
expect "names the flag" "^trainsim: error: --no-moe-grouped-gemm: moe_grouped_gemm false given for a dense model" "$TMP/err"
check "whole experts (--etp 1)" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --etp 1 --json
expect "json says etp 1" '"etp":[[:space:]]*1,' "$TMP/out"
check "whole experts in the summary" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 --etp 1
expect "summary names them" "ep 8 \(whole experts, etp 1\)" "$TMP/out"
check "the allgather token dispatcher" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 \
	--capacity-factor 0 --moe-token-dispatcher allgather
expect "it predicts" "^iteration time" "$TMP/out"
expect_err "an unknown token dispatcher" "--moe-token-dispatcher: unknown value 'all2all'" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --model qwen3-vl-30b-a3b \
	--plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --moe-token-dispatcher all2all
expect_err "allgather beside a capacity (the plan's, named with its position)" \
	"a capacity_factor needs the alltoall token dispatcher, not 'allgather' \(from [^ ]*qwen3-vl-30b-a3b-moe.json:[0-9]+:[0-9]+: capacity_factor\)" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --model qwen3-vl-30b-a3b \
	--plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --moe-token-dispatcher allgather
check "a virtual-stage layout" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --fidelity analytic \
	--model "$TMP/tiny.json" --tp 2 --pp 2 --schedule interleaved --virtual-stages 2 \
	--global-batch 16 --seq-len 1024 --layers-per-virtual-stage 1,3,4,0 --json
expect "it predicts (layout)" '"iteration_time_s"' "$TMP/out"
expect_err "a layout of the wrong length" \
	"--layers-per-virtual-stage: lists 3 virtual stages but pp 2 x virtual_stages 2 is 4" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --model "$TMP/tiny.json" --tp 2 --pp 2 \
	--schedule interleaved --virtual-stages 2 --global-batch 16 --seq-len 1024 --layers-per-virtual-stage 4,4,0
printf '{"layers_per_virtual_stage": [1, 3, 4, 0]}' >"$TMP/layout.json"
check "--layers-per-stage drops the plan file's layout" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr \
	--nodes 2 --fidelity analytic --model "$TMP/tiny.json" --tp 2 --pp 2 --schedule interleaved \
	--virtual-stages 2 --global-batch 16 --seq-len 1024 --plan "$TMP/layout.json" \
	--layers-per-stage 4,4
expect_err "a malformed layout" "--layers-per-virtual-stage needs a list like 1,2,2,0" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --model "$TMP/tiny.json" --tp 2 --pp 2 \
	--schedule interleaved --virtual-stages 2 --global-batch 16 --layers-per-virtual-stage 4,x
expect_err "a layout entry out of range" "--layers-per-virtual-stage: entry 2 must be a layer count from 0 to" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --model "$TMP/tiny.json" --tp 2 --pp 2 \
	--schedule interleaved --virtual-stages 2 --global-batch 16 --layers-per-virtual-stage 4,-1
check "etp neither 1 nor tp" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --tp 4 --etp 2
expect "says which" "--etp: etp 2: experts are split over the whole TP group" "$TMP/err"
check "a skewed router" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --fidelity analytic \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 \
	--capacity-factor 0 --expert-imbalance 1
expect "its busiest rank in the summary" '^expert load, busiest rank +1\.[1-9][0-9]* x balanced' "$TMP/out"
check "a calibration for another GPU" 0 "$TRAINSIM" predict $SMALL --fidelity analytic --json \
	--calibration "$EX/calibration/a100-vtrain.json"
expect "warns of the GPU mismatch" "warning: calibration .*a100-vtrain.json is for GPU 'A100-SXM4-80GB', the cluster's is 'H100" "$TMP/err"
expect "json names the calibration" '"calibration":[[:space:]]*".*a100-vtrain.json"' "$TMP/out"
sed 's/"A100-SXM4-80GB"/"a100-sxm4-80gb"/' "$EX/calibration/a100-vtrain.json" >"$TMP/a100-lower.json"
check "a calibration naming the cluster's GPU in lower case" 0 "$TRAINSIM" predict --cluster dgx-a100-hdr \
	--nodes 1 --model "$TMP/tiny.json" --global-batch 8 --seq-len 1024 --fidelity analytic \
	--calibration "$TMP/a100-lower.json"
if [ -s "$TMP/err" ]; then bad "no GPU mismatch warning: $(cat "$TMP/err")"; else ok "no GPU mismatch warning"; fi
# a plan that does not fit: its one error line, not the warning too (check
# counts the stderr lines of a failure)
check "mismatched calibration, plan does not fit" 1 "$TRAINSIM" predict --cluster dgx-h100-ndr \
	--nodes 1 --model llama3-70b --global-batch 8 --seq-len 4096 --fidelity analytic \
	--calibration "$EX/calibration/a100-vtrain.json"
check "default compute model" 0 "$TRAINSIM" predict $SMALL --fidelity analytic
expect "summary names the compute model" "^compute model: defaults: H100" "$TMP/out"
printf '{"gpu": "H100-SXM5-80GB", "hbm_eff": 0.8}\n' >"$TMP/cal_nosrc.json"
check "a calibration without a source" 0 "$TRAINSIM" predict $SMALL --fidelity analytic --calibration "$TMP/cal_nosrc.json"
expect "names its file once" "^compute model: calibration file [^;]*cal_nosrc\.json$" "$TMP/out"

# ---- bad input ----
check "more GPUs than the cluster" 1 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model "$TMP/tiny.json" --tp 4 --pp 4 --dp 2 --global-batch 16 --seq-len 1024
expect "names the GPU count" "needs 32 GPUs" "$TMP/err"
# and where the sizes were set, a plan file's at its position (found by an
# audit, 2026-12-06: no file or field)
printf '{\n  "tp": 4,\n  "pp": 4\n}\n' >"$TMP/big_plan.json"
check "more GPUs than the cluster, from a plan file" 1 "$TRAINSIM" predict --cluster dgx-h100-ndr \
	--nodes 1 --model "$TMP/tiny.json" --plan "$TMP/big_plan.json" --dp 2 --global-batch 16 --seq-len 1024
expect "names where they were set" "from .*big_plan.json:2:9: tp; .*big_plan.json:3:9: pp; --dp\)" "$TMP/err"
check "bad input said before the GPU count" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model "$TMP/tiny.json" --tp 4 --pp 4 --dp 2 --global-batch 16 --seq-len 4096
expect "names the learned positions" "seq_len 4096 exceeds the 2048 learned positions" "$TMP/err"
check "does not fit in memory" 1 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model qwen3-vl-235b-a22b --tp 1 --pp 1 --global-batch 8 --seq-len 1024
expect "says it does not fit" "does not fit|GiB" "$TMP/err"
expect "points to memory, which agrees at fixed images" "\\(see trainsim memory\\)$" "$TMP/err"
# drawn images: stage 0 holds the heaviest run drawn, more than memory's
# mean; both figures are given, and memory says its figure is the mean's
# (found by review: "see trainsim memory" sent the user to "fits")
QS="--cluster dgx-h100-ndr --nodes 4 --model qwen3-vl-30b-a3b --plan $EX/plans/qwen3-vl-30b-a3b-moe.json --seq-len 14336"
check "drawn images do not fit" 1 "$TRAINSIM" predict $QS --fidelity analytic
expect "gives the drawn and the mean figures" \
	"84\\.0 GiB per GPU needed, 79\\.6 GiB available \\(with the images drawn by --seed 1 on stage 0; 73\\.8 GiB at the mean images, as trainsim memory counts them\\)" "$TMP/err"
check "memory at the mean images fits" 0 "$TRAINSIM" memory $QS
expect "memory says its images are the mean" "^peak 73\\.83 GiB .*: fits" "$TMP/out"
expect "and that predict can need more" "^\\(images at their mean; predict draws them per sample" "$TMP/out"
check "memory of fixed images" 0 "$TRAINSIM" memory $QS --images-per-sample 2 --image-tokens 300
if grep -q "images at their mean" "$TMP/out"; then bad "no images note at fixed images"; else ok "no images note at fixed images"; fi
check "memory json of fixed images" 0 "$TRAINSIM" memory $QS --images-per-sample 2 --image-tokens 300 --json
expect "says the images do not vary" '"images_vary":[[:space:]]*false' "$TMP/out"
check "memory json of drawn images" 0 "$TRAINSIM" memory $QS --json
expect "says they vary" '"images_vary":[[:space:]]*true' "$TMP/out"
check "does not fit, with --trace and --svg" 1 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model qwen3-vl-235b-a22b --tp 1 --pp 1 --global-batch 8 --seq-len 1024 --fidelity analytic \
	--trace "$TMP/nofit.json" --svg "$TMP/nofit.svg"
expect "says nothing was written" "no trace or SVG written" "$TMP/err"
check "no trace of a run that cannot happen" 0 test ! -e "$TMP/nofit.json"
check "nor an SVG" 0 test ! -e "$TMP/nofit.svg"
printf '{\n  "tp": "two",\n  "pp": 1\n}\n' >"$TMP/bad_plan.json"
check "plan with a wrong type" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --model "$TMP/tiny.json" \
	--plan "$TMP/bad_plan.json"
expect "position of the bad field" "bad_plan.json:2:[0-9]+" "$TMP/err"
printf '{"n_embd": 1024, "n_layer": 8, "n_head": 7, "vocab_size": 100}\n' >"$TMP/bad_model.json"
check "inconsistent model" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --model "$TMP/bad_model.json"
printf '{"preset": "dgx-h100-ndr", "nodes": "x"}\n' >"$TMP/bad_cluster.json"
check "cluster with a wrong type" 2 "$TRAINSIM" predict --cluster "$TMP/bad_cluster.json" --model "$TMP/tiny.json"
expect "cluster position" "bad_cluster.json:1:[0-9]+" "$TMP/err"
check "unknown fidelity" 2 "$TRAINSIM" predict $SMALL --fidelity quantum
check "missing model" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr
check "trace into a missing directory" 2 "$TRAINSIM" predict $SMALL --trace /nonexistent/dir/t.json
check "trace and svg into one file" 2 "$TRAINSIM" predict $SMALL --trace "$TMP/same" --svg "$TMP/same"
check "one file spelled two ways" 2 "$TRAINSIM" predict $SMALL --trace "$TMP/same" --svg "$TMP/./same"
check "nothing written for it" 0 test ! -e "$TMP/same"
# /dev/stdout with stdout redirected to a file: the trace would be renamed
# over the summary (found by review)
"$TRAINSIM" predict $SMALL --fidelity analytic --trace /dev/stdout >"$TMP/so.txt" 2>"$TMP/err"
st=$?
if [ $st = 2 ] && grep -q "is where standard output goes" "$TMP/err" && [ "$(wc -l <"$TMP/err")" = 1 ]; then
	ok "trace onto standard output's file refused"
else bad "trace onto /dev/stdout: exit $st, $(cat "$TMP/err")"; fi
# ... and with standard output a pipe, for that reason (found by an audit:
# "cannot create '/dev/stdout': No such file or directory")
"$TRAINSIM" predict $SMALL --fidelity analytic --trace /dev/stdout 2>"$TMP/err" | cat >/dev/null
if grep -q "^trainsim: error: '/dev/stdout' is where standard output goes" "$TMP/err"; then
	ok "trace onto standard output's pipe refused"
else bad "trace onto /dev/stdout as a pipe: $(cat "$TMP/err")"; fi
check "fp8 on a GPU without FP8" 2 "$TRAINSIM" predict --cluster dgx-a100-hdr --nodes 1 \
	--model "$TMP/tiny.json" --global-batch 8 --seq-len 1024 --precision fp8 --fidelity analytic
expect "names the missing FP8 rate, at the flag" "^trainsim: error: --precision: fp8: .*no FP8 rate" "$TMP/err"
# under fp8 the utilisations are of the BF16 peak and say so (they can
# pass 100 %; found by a fuzzer run: 110.6 % shown as plain "MFU")
check "fp8 on H100" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model "$TMP/tiny.json" --global-batch 8 --seq-len 1024 --precision fp8 --fidelity analytic
expect "fp8 MFU says its peak" "^MFU \(of the BF16 peak\) +[0-9.]+ %" "$TMP/out"
expect "fp8 HFU says its peak" "^HFU \(executed, BF16 peak\) +[0-9.]+ %" "$TMP/out"
# packet level: a run estimated past 10 minutes is refused up front (found
# by review: the quick start's plan ran for some 20 minutes)
expect_err "packet level, too long" "^trainsim: error: --fidelity packet: .* packets of 4096 B, at least [0-9]+ minutes .*use --fidelity flow" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 --model qwen3-vl-30b-a3b \
	--plan "$TS_SOURCE_DIR/examples/plans/qwen3-vl-30b-a3b-moe.json" --fidelity packet
# an empty output name is refused before the run (found by review: the
# report was printed first)
expect_err "empty --trace name" "--trace: the file name is empty" "$TRAINSIM" predict $SMALL --fidelity analytic --trace ''
expect_err "empty --svg name" "--svg: the file name is empty" "$TRAINSIM" predict $SMALL --fidelity analytic --json --svg ''
# a name of blanks alone too, and no file by that name (found by a fuzzer)
cd "$TMP" || exit 1
expect_err "blank --svg name" "--svg: the file name is empty or blank" "$TRAINSIM" predict $SMALL --fidelity analytic --svg ' '
cd - >/dev/null || exit 1
if [ -e "$TMP/ " ]; then bad "blank --svg name left a file"; else ok "blank --svg name leaves no file"; fi
expect_err "blank --dot name" "an output file name is empty or blank" "$TRAINSIM" topo --cluster dgx-h100-ndr --nodes 1 --dot "$(printf '\t')"
mkfifo "$TMP/fifo"
check "trace onto a FIFO is refused" 2 "$TRAINSIM" predict $SMALL --fidelity analytic --trace "$TMP/fifo"
check "the FIFO is still a FIFO" 0 test -p "$TMP/fifo"
# the relaxed sync modes change nothing at dp 1, so nothing there is refused
# (found by review: cp 2 with ZeRO 1 and async was refused on one node)
printf '{"tp": 4, "cp": 2, "zero": 1, "micro_batch": 1, "global_batch": 8, "seq_len": 8192, "flash_attention": true, "sync": {"mode": "async"}}' >"$TMP/dp1sync.json"
check "async with cp 2 and ZeRO at dp 1" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 --model llama3-8b \
	--plan "$TMP/dp1sync.json" --fidelity analytic
expect_err "expert imbalance for a dense model" \
	"--expert-imbalance: expert_imbalance 0.5 given for a dense model" \
	"$TRAINSIM" predict $SMALL --expert-imbalance 0.5
# the host's dispatch: 55 us an op by default (measured), --host-dispatch
# replaces it and the calibration's; 0 gives what a calibration of 0 gives,
# and a host-bound plan (small ops) is faster without it
printf '{"dispatch_us": 0}' >"$TMP/nohost.json"
HD="--cluster dgx-h100-ndr --nodes 1 --model qwen3-vl-2b --global-batch 8 --seq-len 1024 --fidelity analytic --json"
check "host dispatch default" 0 "$TRAINSIM" predict $HD
cp "$TMP/out" "$TMP/hd55.json"
check "--host-dispatch 0" 0 "$TRAINSIM" predict $HD --host-dispatch 0
cp "$TMP/out" "$TMP/hd0.json"
check "calibration dispatch_us 0, --host-dispatch 55" 0 "$TRAINSIM" predict $HD --calibration "$TMP/nohost.json" \
	--host-dispatch 55
cp "$TMP/out" "$TMP/hd55c.json"
check "calibration dispatch_us 0" 0 "$TRAINSIM" predict $HD --calibration "$TMP/nohost.json"
if python3 -c 'import json, sys
d = [json.load(open(f)) for f in sys.argv[1:]]
t = [x["iteration_time_s"] for x in d]
sys.exit(0 if [x["host_dispatch_us"] for x in d] == [55, 0, 55, 0] and t[1] == t[3] and t[0] == t[2]
         and t[1] < t[0] else 1)' "$TMP/hd55.json" "$TMP/hd0.json" "$TMP/hd55c.json" "$TMP/out"; then
	ok "--host-dispatch: default 55 us, replaces the calibration's, 0 faster"
else bad "--host-dispatch: default 55 us, replaces the calibration's, 0 faster"; fi
expect "--host-dispatch 0 said in the compute model's line" '"compute_model":.*; --host-dispatch sets it to 0 us' \
	"$TMP/hd0.json"
expect_err "--host-dispatch below 0" "--host-dispatch must be between 0 and 999999" \
	"$TRAINSIM" predict $HD --host-dispatch -1
expect_err "--host-dispatch with a unit" "--host-dispatch needs a number, got '5us'" \
	"$TRAINSIM" predict $HD --host-dispatch 5us
expect_err "--host-dispatch nan" "--host-dispatch" "$TRAINSIM" predict $HD --host-dispatch nan
expect_err "--host-dispatch twice" "--host-dispatch given twice" \
	"$TRAINSIM" predict $HD --host-dispatch 5 --host-dispatch 6
# a workload beyond what the simulator holds is refused before it is built
# (found by review: a 1,024-layer model at 16,384 micro-batches grew to
# some 100 GB)
printf '{"n_embd": 64, "n_layer": 1024, "n_head": 1, "vocab_size": 1000, "n_positions": 1024, "model_type": "gpt2"}' >"$TMP/deep.json"
expect_err "more ops than the simulator holds" \
	"the iteration would have at least 2.68e\+08 ops \(16384 micro-batches x 1024 layers .*beyond the 33554432" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 --model "$TMP/deep.json" --dp 8 \
	--global-batch 131072 --seq-len 512 --fidelity analytic
# ... and one whose layers have many ops each (TP, recompute, a vision
# encoder), which the 16-a-layer count lets through: refused from the ops of
# its first micro-batches, before it is built (before: 19 s and 4.5 GB)
expect_err "more ops than the simulator holds, counted" \
	"the iteration would have about 5.7e\+07 ops \(16384 micro-batches x 36 layers .*beyond the 33554432" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --model qwen3-vl-8b --tp 2 \
	--sequence-parallel --recompute full --global-batch 131072 --fidelity analytic
# every rank's op states beyond what the simulator holds: refused before
# they are allocated (found by review: --exact on 2,048 nodes ran out of
# memory)
expect_err "more op states than the simulator holds" \
	"simulating 16384 ranks would keep 1.86e\+09 op states .*drop --exact" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr-fat-tree --nodes 2048 --model llama3-70b --tp 8 \
	--pp 4 --global-batch 65536 --sequence-parallel --exact --fidelity analytic
expect_err "more expert-load draws than the simulator holds" "expert loads .* exceed the 2.68e\+08" \
	"$TRAINSIM" predict --cluster dgx-h100-ndr-fat-tree --nodes 2048 --model qwen3-30b-a3b --ep 8 \
	--global-batch 8388608 --seq-len 512 --fidelity analytic
expect_err "capacity factor between 0 and 0.001" "must be 0 \(dropless\) or between 0.001 and 1000" \
	"$TRAINSIM" predict $SMALL --capacity-factor 1e-4
check "tp does not divide heads" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 2 --model "$TMP/tiny.json" --tp 3
printf '{"peak_flops": 1e9}\n' >"$TMP/slow_gpu.json"
check "an op beyond the simulated-time horizon" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 \
	--model qwen3-vl-2b --tp 1 --pp 1 --dp 8 --global-batch 8 --seq-len 16000000 --flash-attention \
	--fidelity analytic --calibration "$TMP/slow_gpu.json"
expect "names the horizon" "horizon" "$TMP/err"
check "a trace of more than 4 million slices" 2 "$TRAINSIM" predict $SMALL --fidelity analytic \
	--global-batch 60000 --trace "$TMP/big.json"
expect "names the slice limit" "4000000 slices" "$TMP/err"
expect "refused from the workload's estimate, before it is built" "would have at least" "$TMP/err"
check "no trace left behind" 0 test ! -e "$TMP/big.json"
# under the limit per stage, over it with the four simulated units (the
# executor's check before the run; it was refused at the 4 millionth slice)
check "a trace of more slices than the simulated ranks may have" 2 "$TRAINSIM" predict $SMALL \
	--fidelity analytic --global-batch 20000 --trace "$TMP/big.json"
expect "counts the simulated ranks' slices" "at least .* slices \(8 simulated ranks" "$TMP/err"
check "no trace left behind" 0 test ! -e "$TMP/big.json"
# the vision encoder's slices, counted once the images are drawn (found by
# review: its 37 % of the slices were left to the run's 4 millionth)
check "a trace of more slices with the encoder's" 2 "$TRAINSIM" predict --cluster dgx-h100-ndr \
	--nodes 2 --model qwen3-vl-2b --tp 2 --pp 2 --global-batch 2400 --seq-len 2048 \
	--fidelity analytic --trace "$TMP/big.json"
expect "counts the encoder's at the drawn images" "at least 4.36e\+06 slices .*the vision encoder's at the drawn images" "$TMP/err"
check "no trace left behind" 0 test ! -e "$TMP/big.json"
# the two layer lists together, in either order (found by review: the later
# one won); a repeated flag overrides the first, as with getopt tools
# (each list alone is a valid split of the 8 layers)
check "both layer lists" 2 "$TRAINSIM" predict $SMALL --fidelity analytic \
	--layers-per-virtual-stage 4,4 --layers-per-stage 4,4
expect "says give one" "layers-per-stage and --layers-per-virtual-stage: give one" "$TMP/err"
check "both layer lists, the other order" 2 "$TRAINSIM" predict $SMALL --fidelity analytic \
	--layers-per-stage 4,4 --layers-per-virtual-stage 4,4
expect "says give one, the other order" "layers-per-stage and --layers-per-virtual-stage: give one" "$TMP/err"
check "more micro-batches than the simulator holds" 2 "$TRAINSIM" predict $SMALL --global-batch 1048576
expect "names the micro-batch limit" "global-batch.*micro-batches per replica" "$TMP/err"
# a 1 b/s NIC is no hardware (a transfer would end past the engine's
# largest time): refused at its position when the cluster is read
printf '{"preset": "dgx-h100-ndr", "nodes": 2, "node": {"nic_bandwidth": "1b/s"}}\n' >"$TMP/slow_nic.json"
check "a 1 b/s NIC" 2 "$TRAINSIM" predict --cluster "$TMP/slow_nic.json" --model "$TMP/tiny.json" \
	--tp 2 --pp 1 --global-batch 16 --seq-len 1024
expect "names the NIC bandwidth" "slow_nic.json:1:[0-9]+: node.nic_bandwidth: must be between 1 MB/s" "$TMP/err"
# the slowest NIC accepted (1 MB/s) still gives a prediction
printf '{"preset": "dgx-h100-ndr", "nodes": 2, "node": {"nic_bandwidth": "1MB/s"}}\n' >"$TMP/slowest_nic.json"
check "a 1 MB/s NIC" 0 "$TRAINSIM" predict --cluster "$TMP/slowest_nic.json" --model "$TMP/tiny.json" \
	--tp 2 --pp 1 --global-batch 16 --seq-len 1024 --fidelity analytic

# images that vary between replicas, one GPU a unit: the fold simulates
# every unit where they are few, so it equals --exact (found by an audit:
# K = 4 units scored by their summed loads came out 0.73 % under)
printf '{ "pp": 2, "zero": 1, "global_batch": 128, "images_per_sample": {"dist": "poisson", "mean": 1.5},\n  "image_tokens": {"dist": "uniform", "min": 64, "max": 768} }\n' >"$TMP/img8.json"
check "varying images, folded" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 8 --model qwen3-vl-2b \
	--plan "$TMP/img8.json" --fidelity analytic --seed 4 --json
cp "$TMP/out" "$TMP/img8_fold.json"
check "varying images, --exact" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 8 --model qwen3-vl-2b \
	--plan "$TMP/img8.json" --fidelity analytic --seed 4 --exact --json
if python3 -c 'import json, sys
f, e = (json.load(open(a)) for a in sys.argv[1:])
print(f["iteration_time_s"], e["iteration_time_s"], f["units_simulated"], f["units"])
sys.exit(0 if f["iteration_time_s"] == e["iteration_time_s"] and f["units_simulated"] == f["units"] > 4 else 1)' "$TMP/img8_fold.json" "$TMP/out"; then
	ok "varying images: folded equals --exact"
else bad "varying images: folded equals --exact"; fi
# and a fractional fixed count, whose samples round it up or down (found
# by a reread: taken as fixed, the fold was 3.4 % under --exact at seed 4)
check "half an image a sample, folded" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 8 \
	--model qwen3-vl-2b --pp 2 --zero 1 --global-batch 128 --images-per-sample 0.5 --image-tokens 512 \
	--fidelity analytic --seed 4 --json
cp "$TMP/out" "$TMP/half_fold.json"
check "half an image a sample, --exact" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 8 \
	--model qwen3-vl-2b --pp 2 --zero 1 --global-batch 128 --images-per-sample 0.5 --image-tokens 512 \
	--fidelity analytic --seed 4 --exact --json
if python3 -c 'import json, sys
f, e = (json.load(open(a)) for a in sys.argv[1:])
print(f["iteration_time_s"], e["iteration_time_s"])
sys.exit(0 if f["iteration_time_s"] == e["iteration_time_s"] else 1)' "$TMP/half_fold.json" "$TMP/out"; then
	ok "half an image a sample: folded equals --exact"
else bad "half an image a sample: folded equals --exact"; fi

# every collective slice names its algorithm and protocol, also where a
# drawn image load makes its size fractional (found by an audit: at the
# analytic level the encoder's all-reduces showed none)
check "quick start trace, analytic" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 4 \
	--model qwen3-vl-30b-a3b --plan "$EX/plans/qwen3-vl-30b-a3b-moe.json" --global-batch 32 \
	--fidelity analytic --trace "$TMP/qa.json"
if python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); ev = d["traceEvents"] if isinstance(d, dict) else d
c = [e["args"] for e in ev if e.get("ph") == "X" and e.get("args", {}).get("collective", "sendrecv") != "sendrecv"]
bad = [a for a in c if "algorithm" not in a or "protocol" not in a]
print(len(c), "collective slices,", len(bad), "without an algorithm")
sys.exit(0 if c and not bad else 1)' "$TMP/qa.json"; then
	ok "trace: every collective names its algorithm"
else bad "trace: every collective names its algorithm"; fi

# the activation recompute's ops are marked (found by an audit: they
# repeated the forward's names and args)
check "full recompute trace" 0 "$TRAINSIM" predict --cluster dgx-h100-ndr --nodes 1 --model llama3-8b \
	--tp 4 --pp 2 --global-batch 8 --recompute full --fidelity analytic --trace "$TMP/rc.json" --svg "$TMP/rc.svg"
if python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
q = [e["args"].get("recompute", False) for e in ev if e.get("ph") == "X" and e["name"] == "qkv gemm"
     and e["pid"] == 0 and e["args"].get("micro") == 0 and e["args"].get("layer") == 3]
sys.exit(0 if sorted(q) == [False, True] else 1)' "$TMP/rc.json"; then
	ok "trace: a recomputed op says so, the forward's not"
else bad "trace: a recomputed op says so, the forward's not"; fi
expect "svg: recomputed ops titled" "tp allreduce micro 0 layer [0-9]+ \(recompute\)" "$TMP/rc.svg"

echo "$((n - fail))/$n passed"
[ "$fail" = 0 ]

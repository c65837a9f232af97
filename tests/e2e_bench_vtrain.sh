#!/usr/bin/env bash
# e2e_bench_vtrain.sh: the accuracy program on a few rows of the vTrain set,
# and its refusal of bad rows, options and outputs (one line, exit 2,
# nothing written).
set -u
. "$(dirname "$0")/e2e-lib.bash"
B=${TS_BINARY_DIR:?TS_BINARY_DIR must point at the build}/bench/bench_vtrain
CSV=$TS_SOURCE_DIR/../shared/reference/measured/vtrain_megatron_deepspeed_a100.csv
[ -x "$B" ] || { echo "skip: $B not built"; exit 77; }
[ -r "$CSV" ] || { echo "skip: $CSV not present"; exit 77; }
row() { sed -n 2p "$CSV"; }
hdr() { head -1 "$CSV"; }

check "three rows" 0 "$B" --limit 3 "$CSV"
expect "prints the mean error of 3 rows" "^# rows 3  mean \|err\| [0-9.]+%" "$TMP/out"
# a header-less file would lose its first row: refused
row >"$TMP/nohdr.csv"
check "no header" 2 "$B" "$TMP/nohdr.csv"
expect "says line 1 is data" "nohdr.csv:1: expected a header row" "$TMP/err"
# each column is a decimal number in range, named when it is not
for bad in "inf:12:time" "0x10:12:time" "nan:1:model size" "-3:1:model size"; do
	v=${bad%%:*} rest=${bad#*:} col=${rest%%:*} what=${rest#*:}
	{ hdr; row | awk -F, -v c="$col" -v v="$v" 'BEGIN{OFS=","}{$c=v; print}'; } >"$TMP/bad.csv"
	check "column $col = $v" 2 "$B" "$TMP/bad.csv"
	expect "names column $col" "bad.csv:2: column $col \\($what" "$TMP/err"
done
# tp x dp x pp must equal the GPUs without wrapping around
{ hdr; echo "3.6,131073,512,8,3072,32,30,2048,65537,65537,1,3566.5"; } >"$TMP/wrap.csv"
check "product past 2^31" 2 "$B" "$TMP/wrap.csv"
expect "inconsistent row" "wrap.csv:2: inconsistent row" "$TMP/err"
# a file cut short mid-number (no final newline) would still parse
{ hdr; row | head -c -4; } >"$TMP/cut.csv" # 3566.5 -> 356
check "truncated last line" 2 "$B" "$TMP/cut.csv"
expect "says so" "cut.csv:2: the last line has no newline \\(a truncated file\\?\\)" "$TMP/err"
{ hdr; row | awk -F, 'BEGIN{OFS=","}{$3=513; print}'; } >"$TMP/gb.csv"
check "global batch not divisible" 2 "$B" "$TMP/gb.csv"
expect "the CSV's line" "gb.csv:2: global_batch" "$TMP/err"
check "--limit abc" 2 "$B" --limit abc "$CSV"
check "--rounds -3" 2 "$B" --rounds -3 "$CSV"
check "--fix an unknown parameter" 2 "$B" --fix bogus "$CSV"
# a held parameter keeps its start value through a fit (8 rows, one round)
printf '{"gpu": "A100-SXM4-80GB", "gemm_half_flops": 7.5e8}\n' >"$TMP/h.json"
check "fit with a held parameter" 0 "$B" --limit 8 --fit --rounds 1 --jobs 1 --fix gemm_half_flops \
	--calibration "$TMP/h.json" --write "$TMP/h_out.json" "$CSV"
expect "held at its value" '"gemm_half_flops":[[:space:]]*750000000' "$TMP/h_out.json"
expect "listed as held" '"held_at_start_values \(--fix\)":[[:space:]]*\["gemm_half_flops"\]' "$TMP/h_out.json"
check "unknown option" 2 "$B" --bogus
expect "names it" "'--bogus'" "$TMP/err"
check "unknown short option in a cluster" 2 "$B" -qF
expect "names the letter" "'-q'" "$TMP/err"
# --write: valid JSON whatever the strings, that predict reads back
printf '{"gpu": "A\\"B", "gemm_eff_max": 0.8}\n' >"$TMP/q.json"
check "write a calibration" 0 "$B" --limit 3 --calibration "$TMP/q.json" --write "$TMP/w.json" "$CSV"
check "predict reads it" 0 "$TRAINSIM" predict --cluster dgx-a100-hdr --nodes 1 \
	--model "$EX/models/gpt2.json" --seq-len 1024 --fidelity analytic --calibration "$TMP/w.json"
expect "it says evaluated, not fitted" '"method":.*evaluated by bench/bench_vtrain on these rows, not fitted' "$TMP/w.json"
# the written file is the whole compute model: read back, the same errors
printf '{"gpu": "A100-SXM4-80GB", "gemm_eff_max": 0.8, "peak_flops": 2e14, "overlap_slowdown": 1.5, "hbm_bandwidth": "1000GB/s"}\n' >"$TMP/c2.json"
check "evaluate a calibration" 0 "$B" --limit 3 --calibration "$TMP/c2.json" --write "$TMP/w3.json" "$CSV"
grep "^# rows" "$TMP/out" >"$TMP/rows1"
check "evaluate what it wrote" 0 "$B" --limit 3 --calibration "$TMP/w3.json" "$CSV"
grep "^# rows" "$TMP/out" >"$TMP/rows2"
check "the rows line is there" 0 test -s "$TMP/rows1"
check "the same errors" 0 cmp "$TMP/rows1" "$TMP/rows2"
check "a bad CSV with --write" 2 "$B" --write "$TMP/w2.json" "$TMP/wrap.csv"
check "writes nothing" 0 test ! -e "$TMP/w2.json"
# the header names the set's 12 columns in order: another header is refused
{ printf 'nan_params,rest\n'; row; } >"$TMP/nanhdr.csv"
check "a header of other columns" 2 "$B" "$TMP/nanhdr.csv"
expect "says how many columns" "nanhdr.csv:1: the header names 2 columns" "$TMP/err"
{ hdr | awk -F, 'BEGIN{OFS=","}{t=$10; $10=$11; $11=t; print}'; row | awk -F, 'BEGIN{OFS=","}{t=$10; $10=$11; $11=t; print}'; } >"$TMP/swap.csv"
check "dp and pp swapped" 2 "$B" "$TMP/swap.csv"
expect "names the column" "swap.csv:1: header column 10 is 'pipeline parallelism', expected 'data parallelism'" "$TMP/err"
# the figures the README quotes beside the mean are printed
check "twelve rows" 0 "$B" --limit 12 "$CSV"
expect "median and within counts" "^# median \|err\| [0-9.]+%  within 5% [0-9]+, within 10% [0-9]+ of 12 rows" "$TMP/out"
expect "by model" "^# by model \(mean \|err\| / mean signed\): 3.6B [0-9.]+% / [-+][0-9.]+% \(12 rows\)$" "$TMP/out"
expect "unflagged rows" "^# the [0-9]+ rows --audit does not flag: mean \|err\| [0-9.]+%; the [0-9]+ it flags" "$TMP/out"
# the shipped calibration still predicts them: under 6 % mean on these 12
# rows (3.74 % on 2026-12-06; found by an audit: with hbm_eff dropped
# from the loaded file they went to 18.81 % and every test passed)
m12=$(sed -n 's/^# rows 12  mean |err| \([0-9.]*\)%.*/\1/p' "$TMP/out")
if [ -n "$m12" ] && awk -v m="$m12" 'BEGIN { exit !(m > 0 && m < 6) }'; then
	ok "twelve rows within 6 % mean ($m12 %)"
else
	bad "twelve rows' mean error: '$m12' ($(grep '^# rows' "$TMP/out"))"
fi
check "cv over 3 rows of one size" 0 "$B" --limit 3 --cv "$CSV"
expect "no fold" "^# cv: no fold had rows to hold out" "$TMP/out"
# every measured row ran, so the memory model must fit each in its GPUs
# (counting the optimizer step's fp32 main gradients with the activations
# put three of them over 80 GiB)
check "memory of every row" 0 "$B" --memory "$CSV"
expect "none over" "^# memory: 0 of 109 rows over 80.0 GiB per GPU" "$TMP/out"
printf '{"preset": "dgx-a100-hdr", "nodes": 8, "gpu": {"memory": "40GB"}, "node": {"nics": 4}}\n' >"$TMP/a40.json"
check "memory on 40 GB GPUs" 1 "$B" --memory --cluster "$TMP/a40.json" "$CSV"
expect "counts the rows over" "^# memory: [1-9][0-9]* of 109 rows over 37.3 GiB per GPU" "$TMP/out"

echo "e2e_bench_vtrain: $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]

#!/usr/bin/env bash
# e2e_valgrind.sh: every subcommand on a small input under valgrind's
# memcheck: no invalid reads or writes, no uninitialised values, no leaks
# (definite or indirect). Skipped (exit 77) only when valgrind is missing.
set -u
: "${TRAINSIM:?TRAINSIM must point at the trainsim binary}"
if ! command -v valgrind >/dev/null; then
	echo "e2e_valgrind: valgrind not installed (./setup.sh installs it): skipped"
	exit 77
fi
src=${TS_SOURCE_DIR:-$(dirname "$0")/..}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
run() { # run NAME STATUS ARGS...: memcheck clean and trainsim's own exit status
	# STATUS (found by review: any status passed, so a renamed option's usage
	# error, or a crash, would have checked nothing)
	local name=$1 want=$2 rc; shift 2
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
		"$TRAINSIM" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 99 ]; then
		echo "FAIL $name"; sed -n 1,40p "$tmp/err"; fail=$((fail+1))
	elif [ $rc != "$want" ]; then
		echo "FAIL $name: exit $rc, expected $want"; sed -n 1,5p "$tmp/err"; fail=$((fail+1))
	else
		echo "ok   $name"; pass=$((pass+1))
	fi
}
run "topo preset" 0 topo --cluster dgx-h100-ndr --nodes 4 --json
run "topo explicit file" 0 topo --cluster "$src/examples/clusters/explicit-two-switches.json"
run "topo bad file" 2 topo --cluster "$src/README.md"
run "model" 0 model --model qwen3-vl-30b-a3b --json
run "memory" 1 memory --cluster dgx-a100-hdr --nodes 2 --model gpt3-175b --tp 8 --pp 2
run "collective flow" 0 collective --cluster dgx-h100-ndr --nodes 2 --op allreduce -b 1M -e 4M -f 2
run "collective packet" 0 collective --cluster dgx-h100-ndr --nodes 2 --op allreduce -b 64K -e 64K --fidelity packet
run "predict" 0 predict --cluster dgx-h100-ndr --nodes 2 --model qwen3-vl-2b --tp 2 --pp 2 \
	--micro-batch 1 --global-batch 16 --seq-len 1024 --trace "$tmp/t.json" --svg "$tmp/t.svg"
run "predict moe, skewed router, capacity" 0 predict --cluster dgx-h100-ndr --nodes 2 \
	--model qwen3-30b-a3b --tp 2 --sequence-parallel --ep 8 --global-batch 8 --seq-len 1024 \
	--expert-imbalance 0.5 --capacity-factor 1.25
run "predict moe exact, alltoallv across nodes" 0 predict --cluster dgx-h100-ndr --nodes 2 \
	--model qwen3-30b-a3b --tp 2 --sequence-parallel --ep 8 --global-batch 8 --seq-len 512 \
	--expert-imbalance 3 --exact
run "predict jitter, 4 units carrying 160" 0 predict --cluster dgx-a100-hdr --nodes 40 \
	--model "$src/examples/models/gpt2.json" --pp 2 --global-batch 1280 --seq-len 1024 \
	--fidelity analytic --jitter 0.2
run "predict moe jitter, one unit carrying 2" 0 predict --cluster dgx-h100-ndr --nodes 2 \
	--model qwen3-30b-a3b --tp 2 --sequence-parallel --ep 8 --global-batch 8 --seq-len 512 \
	--expert-imbalance 0.5 --jitter 0.1 --replicas 1
run "predict bad plan" 2 predict --cluster dgx-h100-ndr --nodes 2 --model qwen3-vl-2b --tp 3
echo "e2e_valgrind: $pass passed, $fail failed"
[ $fail = 0 ]

# e2e-lib.bash: the harness shared by end-to-end scripts (sourced, not a test:
# the CMake glob runs e2e_*.sh only). Sets TMP (removed on exit), EX, and the
# counters n and fail; check/expect print one "ok"/"FAIL" line each.
: "${TRAINSIM:?TRAINSIM must point at the trainsim binary}"
: "${TS_SOURCE_DIR:?TS_SOURCE_DIR must point at the source tree}"
EX=$TS_SOURCE_DIR/examples
TMP=$(mktemp -d "/tmp/$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0 n=0
check() { # check NAME WANT_STATUS CMD...  (stdout in $TMP/out, stderr in $TMP/err)
	local name=$1 want=$2; shift 2
	local st
	n=$((n + 1))
	"$@" >"$TMP/out" 2>"$TMP/err"; st=$?
	if [ "$st" != "$want" ]; then
		echo "FAIL $name: exit $st, want $want (stderr: $(cat "$TMP/err"))"; fail=$((fail + 1)); return 1
	fi
	if [ "$want" != 0 ] && [ "$(wc -l <"$TMP/err")" != 1 ]; then
		echo "FAIL $name: want one line on stderr, got: $(cat "$TMP/err")"; fail=$((fail + 1)); return 1
	fi
	echo "ok   $name"
}
expect() { # expect NAME PATTERN FILE: grep -E must match
	n=$((n + 1))
	if grep -Eq -- "$2" "$3"; then echo "ok   $1"; else
		echo "FAIL $1: '$2' not in $3: $(head -c 400 "$3")"; fail=$((fail + 1)); fi
}
ok() { echo "ok   $1"; n=$((n + 1)); }
bad() { echo "FAIL $1"; n=$((n + 1)); fail=$((fail + 1)); }
# expect_err NAME REGEX CMD...: exit 2, exactly one stderr line matching REGEX,
# nothing on stdout (SHOW=1 prints the message).
expect_err() {
	local name=$1 re=$2; shift 2
	local st
	"$@" >"$TMP/out" 2>"$TMP/err"; st=$?
	if [ "$st" != 2 ]; then bad "$name: exit $st, want 2 ($(cat "$TMP/err"))"; return; fi
	if [ "$(wc -l <"$TMP/err")" != 1 ]; then bad "$name: want one line on stderr, got: $(cat "$TMP/err")"; return; fi
	[ -n "${SHOW:-}" ] && cat "$TMP/err"
	if ! grep -Eq -- "$re" "$TMP/err"; then bad "$name: stderr '$(cat "$TMP/err")' does not match '$re'"; return; fi
	if [ -s "$TMP/out" ]; then bad "$name: wrote to stdout"; return; fi
	ok "$name"
}

# Sourced by the CLI tests (not a test itself: tests/run-checks.sh runs
# only tests/cli/test_*.sh). expect_usage DESCRIPTION ARGS...: dlcachectl
# ($ctl) with ARGS must print exactly one line on stderr, starting with
# $usage_prefix (default "dlcachectl"), and exit 2; otherwise it calls the
# test's fail().
expect_usage() {	# description, args...
	local what=$1 err rc lines prefix=${usage_prefix:-dlcachectl}
	shift
	err=$("$ctl" "$@" 2>&1 >/dev/null)
	rc=$?
	lines=$(printf '%s' "$err" | grep -c '')
	[ $rc -eq 2 ] || fail "$what: exit $rc, want 2 ($*)"
	[ "$lines" -eq 1 ] || fail "$what: $lines lines on stderr, want 1: $err"
	case "$err" in "$prefix"*) ;; *) fail "$what: message does not start with '$prefix': $err" ;; esac
}

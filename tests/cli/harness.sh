# Sourced by the CLI tests (not a test itself: tests/run-checks.sh runs
# only tests/cli/test_*.sh): sub-checks that print "ok NAME", "FAIL NAME"
# or "skip NAME: why" (counted by tests/run-checks.sh), with "FAIL: ..."
# lines saying what went wrong. Set test_name before sourcing.
#   begin NAME; ...fail "what"...; end
#   skip NAME WHY: a FAIL under CI=true, where make deps builds the tool
#   finish: the verdict line and the exit status
# end's FAIL line repeats the sub-check's first reason: tests/run-checks.sh
# lists it with the failures at the end of make check, where CI's tail
# shows it.
fails=0 cur= cur_fails=0 cur_why=
fail() {
	echo "FAIL: ${cur:+$cur: }$*"
	[ $fails -gt $cur_fails ] || cur_why=${*//$'\n'/ }
	fails=$((fails + 1))
}
begin() { cur=$1; cur_fails=$fails; cur_why=; }
end() {
	if [ $fails -gt $cur_fails ]; then
		echo "FAIL $cur: $cur_why"
	else
		echo "ok $cur"
	fi
	cur=
}
skip() {
	case "${CI:-}" in
	true|1) echo "FAIL $1: $2 (CI=true)"; fails=$((fails + 1)) ;;
	*) echo "skip $1: $2" ;;
	esac
}
finish() {
	[ $fails -eq 0 ] && echo "$test_name: ok" && exit 0
	echo "$test_name: $fails failures"
	exit 1
}

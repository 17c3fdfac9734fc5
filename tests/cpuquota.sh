# Sourced by the cluster test (tests/cli/test_cluster.sh): a slow node, as
# a CPU quota. A cgroup of its own whose tasks get QUOTA microseconds of
# CPU time in each PERIOD (v1 cpu.cfs_quota_us and cpu.cfs_period_us, or
# v2 cpu.max); a process that writes its pid to $cpuquota_procs is
# limited. Root only.
#   cpuquota_up QUOTA PERIOD  0, or 1 with the reason in $cpuquota_why
#   cpuquota_down             moves its tasks out, removes the cgroup
. "$(dirname "${BASH_SOURCE[0]}")/cglimit.sh"
cpuquota_cg="" cpuquota_procs="" cpuquota_why=""

cpuquota_up() {
	local quota=$1 period=$2
	cglimit_make dlcslowcpu /sys/fs/cgroup/cpu/cpu.cfs_quota_us cpu ||
		{ cpuquota_why=$cglimit_why; return 1; }
	cpuquota_cg=$cglimit_dir cpuquota_procs=$cglimit_procs
	if [ "$cglimit_v" = 1 ]; then
		echo "$period" > "$cpuquota_cg/cpu.cfs_period_us" &&
		echo "$quota" > "$cpuquota_cg/cpu.cfs_quota_us"
	else
		echo "$quota $period" > "$cpuquota_cg/cpu.max"
	fi || { cpuquota_why="a quota in $cpuquota_cg"; return 1; }
}

cpuquota_down() {
	[ -n "$cpuquota_cg" ] || return 0
	cglimit_remove "$cpuquota_cg"
	cpuquota_cg=""
	return 0
}

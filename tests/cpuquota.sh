# Sourced by the cluster test (tests/cli/test_cluster.sh): a slow node, as
# a CPU quota. A cgroup of its own whose tasks get QUOTA microseconds of
# CPU time in each PERIOD (v1 cpu.cfs_quota_us and cpu.cfs_period_us, or
# v2 cpu.max); a process that writes its pid to $cpuquota_procs is
# limited. Root only.
#   cpuquota_up QUOTA PERIOD  0, or 1 with the reason in $cpuquota_why
#   cpuquota_down             moves its tasks out, removes the cgroup
cpuquota_cg="" cpuquota_procs="" cpuquota_why=""

cpuquota_up() {
	local quota=$1 period=$2
	if [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
		cpuquota_cg=/sys/fs/cgroup/cpu/dlcslowcpu.$$
		mkdir "$cpuquota_cg" &&
		echo "$period" > "$cpuquota_cg/cpu.cfs_period_us" &&
		echo "$quota" > "$cpuquota_cg/cpu.cfs_quota_us" ||
			{ cpuquota_why="cpu cgroup (v1) at $cpuquota_cg"; return 1; }
	elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
		echo +cpu > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
		cpuquota_cg=/sys/fs/cgroup/dlcslowcpu.$$
		mkdir "$cpuquota_cg" && echo "$quota $period" > "$cpuquota_cg/cpu.max" ||
			{ cpuquota_why="cpu cgroup (v2) at $cpuquota_cg"; return 1; }
	else
		cpuquota_why="no cpu cgroup controller to set a quota with"
		return 1
	fi
	cpuquota_procs=$cpuquota_cg/cgroup.procs
	[ -e "$cpuquota_procs" ] || cpuquota_procs=$cpuquota_cg/tasks
}

cpuquota_down() {
	local p
	[ -n "$cpuquota_cg" ] || return 0
	# A task left in it (a rank that outlived its kill) goes back to the root.
	for p in $(cat "$cpuquota_procs" 2> /dev/null); do
		echo "$p" > "$(dirname "$cpuquota_cg")/cgroup.procs" 2> /dev/null
	done
	rmdir "$cpuquota_cg" 2> /dev/null
	cpuquota_cg=""
	return 0
}

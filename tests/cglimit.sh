# Sourced by tests/slowdisk.sh and tests/cpuquota.sh: a cgroup of its own
# for one limit, on cgroup v1 (the controller's own hierarchy) or v2 (the
# controller enabled at the root). Root only.
#   cglimit_make NAME V1FILE V2CTL  the cgroup NAME.$$ beside V1FILE when
#       that exists (v1), else under v2's root with controller V2CTL: its
#       directory in $cglimit_dir, its version in $cglimit_v (1 or 2),
#       the file a pid is written to in $cglimit_procs; 0, or 1 with the
#       reason in $cglimit_why
#   cglimit_remove DIR  its tasks moved to its parent, and it removed
cglimit_dir="" cglimit_v="" cglimit_procs="" cglimit_why=""

cglimit_make() {
	local name=$1 v1file=$2 v2=$3
	if [ -e "$v1file" ]; then
		cglimit_v=1 cglimit_dir=$(dirname "$v1file")/$name.$$
	elif grep -qw "$v2" /sys/fs/cgroup/cgroup.controllers 2> /dev/null; then
		echo "+$v2" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
		cglimit_v=2 cglimit_dir=/sys/fs/cgroup/$name.$$
	else
		cglimit_why="no $v2 cgroup controller (v1 $v1file, or v2)"
		return 1
	fi
	mkdir "$cglimit_dir" ||
		{ cglimit_why="$v2 cgroup (v$cglimit_v) at $cglimit_dir"; return 1; }
	cglimit_procs=$cglimit_dir/cgroup.procs
	[ -e "$cglimit_procs" ] || cglimit_procs=$cglimit_dir/tasks
}

cglimit_remove() {
	local p procs=$1/cgroup.procs
	[ -e "$procs" ] || procs=$1/tasks
	# A task left in it (a rank that outlived its kill) goes to the parent.
	for p in $(cat "$procs" 2> /dev/null); do
		echo "$p" > "$(dirname "$1")/cgroup.procs" 2> /dev/null
	done
	rmdir "$1" 2> /dev/null
}

# Sourced by the cluster test and bench (tests/cli/test_cluster.sh,
# tests/perf/cluster.sh): nodes as network namespaces of this run's, on a
# bridge, each link limited by tbf both ways; Open MPI told to use those
# links only. Root only.
#   netns_up TAG WORLD RATE   namespaces TAG-0 .. TAG-(WORLD-1) at
#                             10.77.0.1 .., the bridge at 10.77.0.254;
#                             RATE as tc says it (200mbit)
#   netns_rate R RATE         rank R's link at RATE from now on
#   netns_down                removes what netns_up made
#   netns_mpi_env             exports what mpirun and the ranks need
#   netns_name R              rank R's namespace
netns_net=10.77.0
netns_tag="" netns_world=0

netns_name() { echo "$netns_tag-$1"; }

netns_up() {
	local tag=$1 world=$2 rate=$3 r ns h
	netns_tag=$tag netns_world=$world
	ip link add "${tag}br" type bridge || return 1
	ip addr add "$netns_net.254/24" dev "${tag}br" || return 1
	ip link set "${tag}br" up || return 1
	for r in $(seq 0 $((world - 1))); do
		ns=$(netns_name "$r") h=${tag}h$r
		ip netns add "$ns" &&
		ip link add "$h" type veth peer name eth0 netns "$ns" &&
		ip link set "$h" master "${tag}br" up &&
		ip -n "$ns" addr add "$netns_net.$((r + 1))/24" dev eth0 &&
		ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up &&
		tc qdisc add dev "$h" root tbf rate "$rate" burst 64kb latency 50ms &&
		ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" \
			burst 64kb latency 50ms || return 1
	done
}

netns_rate() {	# R RATE: rank R's link, both ways, at RATE from now on
	local h=${netns_tag}h$1
	tc qdisc change dev "$h" root tbf rate "$2" burst 64kb latency 50ms &&
	ip netns exec "$(netns_name "$1")" tc qdisc change dev eth0 root tbf \
		rate "$2" burst 64kb latency 50ms
}

netns_down() {
	local r
	[ -n "$netns_tag" ] || return 0
	for r in $(seq 0 $((netns_world - 1))); do
		ip netns del "$(netns_name "$r")" 2> /dev/null
		ip link del "${netns_tag}h$r" 2> /dev/null
	done
	ip link del "${netns_tag}br" 2> /dev/null
	netns_tag=""
}

# mpirun's PMIx server listens on the bridge; the ranks reach it, and each
# other, over TCP on the namespaces' links only.
netns_mpi_env() {
	export PMIX_MCA_ptl_tcp_remote_connections=1
	export PMIX_MCA_ptl_tcp_if_include=$netns_net.0/24
	export OMPI_MCA_btl_tcp_if_include=$netns_net.0/24
	export OMPI_MCA_oob_tcp_if_include=$netns_net.0/24
	export OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self
}

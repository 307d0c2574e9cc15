# machine.sh - sourced by the benchmark scripts: what else the machine is
# doing while they measure (it may be shared: figures taken while
# something else runs are not comparable).

# busy_pct: percent of all CPUs' time spent outside idle over 1 s.
busy_pct() {
	local a b
	a=$(awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $5+$6; exit }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $5+$6; exit }' /proc/stat)
	echo "$a $b" | awk '{ busy = $3 - $1; idle = $4 - $2; pct = 0
		if (busy + idle > 0) pct = 100 * busy / (busy + idle)
		printf "%.0f", pct }'
}

# top_procs: the processes using 5% of a CPU or more now.
top_procs() {
	ps -eo pcpu=,comm= --sort=-pcpu 2>/dev/null | awk '$1 >= 5 { printf "%s%s %s%%", n++ ? ", " : "", $2, $1 }'
}

# steal_ms: CPU time the hypervisor took from this VM's CPUs so far (ms).
steal_ms() {
	awk -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" '/^cpu / { printf "%d", $9 * 1000 / hz; exit }' /proc/stat
}

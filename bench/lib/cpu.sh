# CPU accounting for the benchmarks (sourced; bench/planning.sh uses its readers): CPU seconds (user + system) of the service
# under test, the broker, every PostgreSQL process and wrk, over one wrk run, so a reader sees
# which process bounds the rate even on a machine that other work shares.
#
#   cpu_begin SERVICE_PID          before the run
#   WRK_CPU=$(cpu_wrk ...)         run wrk under GNU time instead of directly (see cpu_run_wrk)
#   cpu_end REQUESTS LABEL         after the run: prints one table row per process
HZ=$(getconf CLK_TCK)
cpu_of_pid() { awk -v hz="$HZ" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_of_name() {
    local total=0 f line
    for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        [[ "$line" == *"($1)"* ]] || continue
        total=$(awk -v t="$total" -v hz="$HZ" '{ sub(/^.*\) /, ""); printf "%.2f", t + ($12 + $13) / hz }' <<<"$line")
    done
    echo "$total"
}
machine_busy() { awk '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8) / '"$HZ"' }' /proc/stat; }
TANSU_PID="$(cat "${PUSH_STACK_ROOT:-.local}/tansu.pid" 2>/dev/null || pgrep -o -x tansu || echo 0)"

cpu_begin() {
    CPU_PID=$1
    CPU0_SERVICE=$(cpu_of_pid "$CPU_PID") CPU0_TANSU=$(cpu_of_pid "$TANSU_PID") CPU0_PG=$(cpu_of_name postgres)
    CPU0_MACHINE=$(machine_busy) CPU0_AT=$(date +%s.%N)
}

# cpu_end REQUESTS WRK_CPU_SECONDS: the table of CPU over the run, per process: seconds, cores
# (seconds over the wall time), and microseconds per request (the same figure as milliseconds
# per 1,000 requests), then the ledger's total: the channel's own processes (service, broker,
# PostgreSQL), without the load generator, as bench/e2e.py counts a notification's.
cpu_end() {
    local requests=$1 wrk_cpu=$2
    local wall service tansu pg machine
    wall=$(awk -v a="$CPU0_AT" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    service=$(awk -v a="$CPU0_SERVICE" -v b="$(cpu_of_pid "$CPU_PID")" 'BEGIN { printf "%.2f", b - a }')
    tansu=$(awk -v a="$CPU0_TANSU" -v b="$(cpu_of_pid "$TANSU_PID")" 'BEGIN { printf "%.2f", b - a }')
    pg=$(awk -v a="$CPU0_PG" -v b="$(cpu_of_name postgres)" 'BEGIN { printf "%.2f", b - a }')
    machine=$(awk -v a="$CPU0_MACHINE" -v b="$(machine_busy)" 'BEGIN { printf "%.2f", b - a }')
    printf '  %-28s %9s %7s %16s\n' "CPU over the run (${wall} s)" "seconds" "cores" "µs / request"
    local name value channel
    channel=$(awk -v a="$service" -v b="$tansu" -v c="$pg" 'BEGIN { printf "%.2f", a + b + c }')
    for name in service tansu postgresql wrk machine channel; do
        case $name in
            service) value=$service ;; tansu) value=$tansu ;; postgresql) value=$pg ;; wrk) value=$wrk_cpu ;; machine) value=$machine ;;
            channel) value=$channel ;;
        esac
        awk -v n="$name" -v v="$value" -v w="$wall" -v r="$requests" \
            'BEGIN { printf "  %-28s %9.2f %7.2f %16.1f\n", n, v, v / w, (r > 0 ? 1000000 * v / r : 0) }'
    done
}

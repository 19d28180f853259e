#!/usr/bin/env bash
# Tracking hits per second: wrk sending the SDKs' tracking URL (GET /r/?id=h<uuid>,<delivery>,<1|2>)
# with distinct message ids to the tracking-ingestion service (each answered 200 only once its
# TrackingHitRecorded event is stored by the broker), against a bare Hummingbird GET route
# (bench/MinimalRoute), in the same run, same wrk settings. Also measures how long the
# tracking_log projection takes to catch up afterwards. Prints the CPU each process used during
# each run (the service, Tansu, PostgreSQL, wrk) per 1,000 requests; --perf records the service's
# profile during its run (perf, call graphs) and prints where its time goes.
#
#   bench/tracking.sh [--duration 15] [--connections 32] [--threads 1] [--perf]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
DURATION=15 CONNECTIONS=32 THREADS=1 PERF=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
        --perf) PERF=1; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
command -v bc >/dev/null || apt-get install -y -qq bc >/dev/null

scripts/stack up
# shellcheck disable=SC1091
source .local/stack.env
echo "bench: building release binaries (.build-bench)" >&2
for product in tracking-ingestion pushctl minimal-route; do
    swift build -c release --scratch-path .build-bench --product "$product" >&2
done
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)"
"$BIN/pushctl" migrate >/dev/null

SUFFIX="$(date +%s)"
TRACKING_PORT="${BENCH_TRACKING_PORT:-18191}" MINIMAL_PORT="${BENCH_MINIMAL_PORT:-18192}"
export TRACKING_PORT TRACKING_HOST=127.0.0.1 PUSH_OPS_PORT="${BENCH_OPS_PORT:-19191}" PUSH_OPS_HOST=127.0.0.1 LOG_LEVEL=warning
export TRACKING_LOG_GROUP="bench-tracking-log-$SUFFIX"
# A delivery id as the planner issues one (a positive 32-bit integer, in push.delivery_plans):
# the endpoint stores hits only for those (docs/tracking.md), so the benchmark's are.
DELIVERY="$((1500000000 + SUFFIX % 600000000))"
psql "$POSTGRES_URL" -q -c "INSERT INTO push.delivery_plans (delivery_id, request_id, accepted, status, send_at)
    VALUES ('$DELIVERY', 'bench-tracking-$SUFFIX', '{}', 'planned', now()) ON CONFLICT DO NOTHING" >/dev/null
"$BIN/tracking-ingestion" >.local/bench-tracking.log 2>&1 &
TRK_PID=$!
"$BIN/minimal-route" "$MINIMAL_PORT" >.local/bench-minimal.log 2>&1 &
MIN_PID=$!
trap 'kill $TRK_PID $MIN_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$PUSH_OPS_PORT/health/ready" >/dev/null 2>&1 && break; sleep 0.2; done

count_rows() { psql "$POSTGRES_URL" -tAc "SELECT count(*) FROM push.tracking_log WHERE delivery_id = '$DELIVERY'"; }
# Warm up, and wait until the projection owns its partitions, so the catch-up figure is fair.
DELIVERY="$DELIVERY" wrk -t1 -c1 -d2s -s bench/track.lua "http://127.0.0.1:$TRACKING_PORT/r/" >/dev/null
for _ in $(seq 1 150); do [[ "$(count_rows)" -gt 0 ]] && break; sleep 0.2; done
BEFORE="$(count_rows)"

# shellcheck source=bench/lib/cpu.sh
source bench/lib/cpu.sh
run_wrk() {  # url -> "requests non2xx rate p50 p99 wrk-cpu-seconds"
    DELIVERY="$DELIVERY" /usr/bin/time -f "cpu %U %S" -o .local/bench-wrk-time wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/track.lua "$1" | awk '
        /^Requests\/sec:/ { rate = $2 }
        /^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%s %s %s %s %s ", v["requests"], v["non2xx"], rate, v["p50_ms"], v["p99_ms"] }'
    awk '/^cpu / { printf "%.2f\n", $2 + $3 }' .local/bench-wrk-time
}
PERF_PID=""
if ((PERF)); then
    perf record -F 499 -g -p "$TRK_PID" -o .local/bench-tracking-perf.data >/dev/null 2>.local/bench-tracking-perf.err &
    PERF_PID=$!
    sleep 1
fi
# The warm-up may still be landing: wait until BEFORE is stable.
sleep 1; BEFORE="$(count_rows)"
cpu_begin "$TRK_PID"
read -r TRK_REQ TRK_BAD TRK_RATE TRK_P50 TRK_P99 TRK_WRK < <(run_wrk "http://127.0.0.1:$TRACKING_PORT/r/")
TRK_CPU="$(cpu_end "$TRK_REQ" "$TRK_WRK")"
if [[ -n "$PERF_PID" ]]; then kill -INT "$PERF_PID" 2>/dev/null || true; wait "$PERF_PID" 2>/dev/null || true; fi
START=$(date +%s.%N)
EXPECTED=$((BEFORE + TRK_REQ - TRK_BAD))
for _ in $(seq 1 600); do
    NOW_COUNT="$(count_rows)"
    [[ "$NOW_COUNT" -ge "$EXPECTED" ]] && break
    sleep 0.1
done
CATCHUP=$(echo "$(date +%s.%N) - $START" | bc)
cpu_begin "$MIN_PID"
read -r MIN_REQ MIN_BAD MIN_RATE MIN_P50 MIN_P99 MIN_WRK < <(run_wrk "http://127.0.0.1:$MINIMAL_PORT/r/")
MIN_CPU="$(cpu_end "$MIN_REQ" "$MIN_WRK")"

echo
echo "command: bench/tracking.sh --duration $DURATION --connections $CONNECTIONS --threads $THREADS"
printf '%-34s %12s %10s %9s %9s\n' "target (wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s)" "requests/s" "non-2xx" "p50 ms" "p99 ms"
printf '%-34s %12s %10s %9s %9s\n' "tracking (event stored)" "$TRK_RATE" "$TRK_BAD" "$TRK_P50" "$TRK_P99"
printf '%-34s %12s %10s %9s %9s\n' "bare Hummingbird route" "$MIN_RATE" "$MIN_BAD" "$MIN_P50" "$MIN_P99"
echo "ratio tracking / bare route: $(echo "scale=3; $TRK_RATE / $MIN_RATE" | bc)"
echo "projection: $NOW_COUNT of $EXPECTED rows in push.tracking_log, caught up ${CATCHUP}s after the load ended"
echo "tracking run ($TRK_REQ requests; service = tracking-ingestion):"
echo "$TRK_CPU"
echo "bare route run ($MIN_REQ requests; service = minimal-route):"
echo "$MIN_CPU"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((PERF)); then
    echo "profile of tracking-ingestion during its run (perf report, self time, top 40):"
    perf report -i .local/bench-tracking-perf.data --no-children --sort symbol --stdio 2>/dev/null |
        grep -E '^ +[0-9.]+%' | head -n 40 | swift demangle --simplified | cut -c1-200
fi

#!/usr/bin/env bash
# Tracking hits per second: wrk sending the SDKs' tracking URL (GET /r/?id=h<uuid>,<delivery>,<1|2>)
# with distinct message ids to the tracking-ingestion service (each answered 200 only once its
# TrackingHitRecorded event is stored by the broker), against a bare Hummingbird GET route
# (bench/MinimalRoute), in the same run, same wrk settings. Also measures how long the
# tracking_log projection takes to catch up afterwards.
#
#   bench/tracking.sh [--duration 15] [--connections 32] [--threads 1]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
DURATION=15 CONNECTIONS=32 THREADS=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --threads) THREADS="$2"; shift 2 ;;
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
DELIVERY="bench-$SUFFIX"
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

run_wrk() {  # url -> "requests non2xx rate p50 p99"
    DELIVERY="$DELIVERY" wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/track.lua "$1" | awk '
        /^Requests\/sec:/ { rate = $2 }
        /^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%s %s %s %s %s\n", v["requests"], v["non2xx"], rate, v["p50_ms"], v["p99_ms"] }'
}
# The warm-up may still be landing: wait until BEFORE is stable.
sleep 1; BEFORE="$(count_rows)"
read -r TRK_REQ TRK_BAD TRK_RATE TRK_P50 TRK_P99 < <(run_wrk "http://127.0.0.1:$TRACKING_PORT/r/")
START=$(date +%s.%N)
EXPECTED=$((BEFORE + TRK_REQ - TRK_BAD))
for _ in $(seq 1 600); do
    NOW_COUNT="$(count_rows)"
    [[ "$NOW_COUNT" -ge "$EXPECTED" ]] && break
    sleep 0.1
done
CATCHUP=$(echo "$(date +%s.%N) - $START" | bc)
read -r MIN_REQ MIN_BAD MIN_RATE MIN_P50 MIN_P99 < <(run_wrk "http://127.0.0.1:$MINIMAL_PORT/r/")

echo
echo "command: bench/tracking.sh --duration $DURATION --connections $CONNECTIONS --threads $THREADS"
printf '%-34s %12s %10s %9s %9s\n' "target (wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s)" "requests/s" "non-2xx" "p50 ms" "p99 ms"
printf '%-34s %12s %10s %9s %9s\n' "tracking (event stored)" "$TRK_RATE" "$TRK_BAD" "$TRK_P50" "$TRK_P99"
printf '%-34s %12s %10s %9s %9s\n' "bare Hummingbird route" "$MIN_RATE" "$MIN_BAD" "$MIN_P50" "$MIN_P99"
echo "ratio tracking / bare route: $(echo "scale=3; $TRK_RATE / $MIN_RATE" | bc)"
echo "projection: $NOW_COUNT of $EXPECTED rows in push.tracking_log, caught up ${CATCHUP}s after the load ended"

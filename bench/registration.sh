#!/usr/bin/env bash
# Registrations per second: wrk posting iOS SDK registrations with distinct tokens to the
# registration service (each answered once its event is stored by the broker), against a bare
# Hummingbird route that only reads the body (bench/MinimalRoute), in the same run, same wrk
# settings. Also measures how long the subscription projection takes to catch up afterwards.
# Prints the CPU each process used during each run (the service, Tansu, PostgreSQL, wrk) per
# 1,000 requests; --perf records the service's profile during its run and prints where its time goes.
#
#   bench/registration.sh [--duration 15] [--connections 32] [--threads 1] [--perf]
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
for product in registration pushctl minimal-route; do
    swift build -c release --scratch-path .build-bench --product "$product" >&2
done
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)"

SUFFIX="$(date +%s)"
export PUSH_ADMIN_TOKEN="bench-token-$SUFFIX-0123456789" REGISTRATION_PORT=18181 REGISTRATION_HOST=127.0.0.1
export PUSH_OPS_PORT=19181 PUSH_OPS_HOST=127.0.0.1 LOG_LEVEL=warning
export REGISTRATION_RATE_PER_KEY=0 REGISTRATION_RATE_PER_ADDRESS=0
export REGISTRATION_CATALOG_GROUP="bench-catalog-$SUFFIX" REGISTRATION_SUBSCRIPTIONS_GROUP="bench-subscriptions-$SUFFIX"
export PUSH_ADMIN_URL="http://127.0.0.1:$REGISTRATION_PORT"
"$BIN/registration" >.local/bench-registration.log 2>&1 &
REG_PID=$!
"$BIN/minimal-route" 18182 >.local/bench-minimal.log 2>&1 &
MIN_PID=$!
trap 'kill $REG_PID $MIN_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$PUSH_OPS_PORT/health/ready" >/dev/null 2>&1 && break; sleep 0.2; done

"$BIN/pushctl" services create --name "bench-$SUFFIX" --label Bench >/dev/null
KEY="$("$BIN/pushctl" apps create --service "bench-$SUFFIX" --platform ios --label "Bench iOS" --bundle-id com.example.bench \
    | sed -n 's/.*"integrationKey" : "\(.*\)".*/\1/p')"
APP_ID="$(psql "$POSTGRES_URL" -tAc "SELECT app_id FROM push.apps WHERE integration_key = '$KEY'")"
# Wait until the subscription projection owns its partitions, so the catch-up figure is fair.
KEY="$KEY" wrk -t1 -c1 -d2s -s bench/register.lua "http://127.0.0.1:$REGISTRATION_PORT/nms/mobile/1/registerIOS.jssp" >/dev/null
for _ in $(seq 1 100); do
    [[ "$(psql "$POSTGRES_URL" -tAc "SELECT count(*) > 0 FROM push.subscriptions WHERE app_id = '$APP_ID'")" == "t" ]] && break
    sleep 0.2
done
BEFORE="$(psql "$POSTGRES_URL" -tAc "SELECT count(*) FROM push.subscriptions WHERE app_id = '$APP_ID'")"

# shellcheck source=bench/lib/cpu.sh
source bench/lib/cpu.sh
run_wrk() {  # url -> "requests non2xx rate p50 p99 wrk-cpu-seconds"
    KEY="$KEY" /usr/bin/time -f "cpu %U %S" -o .local/bench-wrk-time wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" -s bench/register.lua "$1" | awk '
        /^Requests\/sec:/ { rate = $2 }
        /^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%s %s %s %s %s ", v["requests"], v["non2xx"], rate, v["p50_ms"], v["p99_ms"] }'
    awk '/^cpu / { printf "%.2f\n", $2 + $3 }' .local/bench-wrk-time
}
PERF_PID=""
if ((PERF)); then
    perf record -F 499 -g -p "$REG_PID" -o .local/bench-registration-perf.data >/dev/null 2>.local/bench-registration-perf.err &
    PERF_PID=$!
    sleep 1
fi
cpu_begin "$REG_PID"
read -r REG_REQ REG_BAD REG_RATE REG_P50 REG_P99 REG_WRK < <(run_wrk "http://127.0.0.1:$REGISTRATION_PORT/nms/mobile/1/registerIOS.jssp")
REG_CPU="$(cpu_end "$REG_REQ" "$REG_WRK")"
if [[ -n "$PERF_PID" ]]; then kill -INT "$PERF_PID" 2>/dev/null || true; wait "$PERF_PID" 2>/dev/null || true; fi
START=$(date +%s.%N)
EXPECTED=$((BEFORE + REG_REQ - REG_BAD))
for _ in $(seq 1 600); do
    NOW_COUNT="$(psql "$POSTGRES_URL" -tAc "SELECT count(*) FROM push.subscriptions WHERE app_id = '$APP_ID'")"
    [[ "$NOW_COUNT" -ge "$EXPECTED" ]] && break
    sleep 0.1
done
CATCHUP=$(echo "$(date +%s.%N) - $START" | bc)
cpu_begin "$MIN_PID"
read -r MIN_REQ MIN_BAD MIN_RATE MIN_P50 MIN_P99 MIN_WRK < <(run_wrk "http://127.0.0.1:18182/nms/mobile/1/registerIOS.jssp")
MIN_CPU="$(cpu_end "$MIN_REQ" "$MIN_WRK")"

printf '\n%-34s %12s %10s %9s %9s\n' "target (wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s)" "requests/s" "non-2xx" "p50 ms" "p99 ms"
printf '%-34s %12s %10s %9s %9s\n' "registration (event stored)" "$REG_RATE" "$REG_BAD" "$REG_P50" "$REG_P99"
printf '%-34s %12s %10s %9s %9s\n' "bare Hummingbird route" "$MIN_RATE" "$MIN_BAD" "$MIN_P50" "$MIN_P99"
echo "ratio registration / bare route: $(echo "scale=3; $REG_RATE / $MIN_RATE" | bc)"
echo "projection: $NOW_COUNT of $EXPECTED rows in push.subscriptions, caught up ${CATCHUP}s after the load ended"
echo "registration run ($REG_REQ requests; service = registration):"
echo "$REG_CPU"
echo "bare route run ($MIN_REQ requests; service = minimal-route):"
echo "$MIN_CPU"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((PERF)); then
    echo "profile of registration during its run (perf report, self time, top 40):"
    perf report -i .local/bench-registration-perf.data --no-children --sort symbol --stdio 2>/dev/null |
        grep -E '^ +[0-9.]+%' | head -n 40 | swift demangle --simplified | cut -c1-200
fi

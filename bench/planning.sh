#!/usr/bin/env bash
# Delivery planning benchmark: the release-built delivery-planning service fans one request
# ({"audience": {"all": true}}) out to N subscriptions (half iOS, half Android), one message
# record per device on the APNs and FCM message topics; then, in the same run on the same broker,
# kcat produces N records of the same size (the planner's own records, replayed) to a fresh
# topic with the same producer settings. Prints both rates, their ratio and the planner's memory.
#
#   bench/planning.sh [--devices N] [--chunk N] [--instances N] [--shard N] [--filter] [--no-build] [--keep] [--perf]
#
#   --devices N   subscriptions targeted, half iOS (64 hex-digit tokens), half Android
#                 (151-character FCM-like tokens) (default 1000000)
#   --chunk N     PLANNER_CHUNK_SIZE: subscriptions read and messages published per step (default 5000)
#   --instances N planner processes sharing the delivery (its shards), each with its own ops port;
#                 the CPU and messages of each are printed (default 1)
#   --shard N     PLANNER_SHARD_SIZE: subscriptions per shard (default 50000)
#   --filter      target with a three-condition audience.filter that every subscription matches
#                 (city = Lisbon, tier in gold/silver, registered in the last 30 days), so the
#                 same messages go out as with {"all": true} and the ratios compare: what the
#                 filter's per-row evaluation costs the fan-out
#   --no-build    use the existing .build-bench/release/{delivery-planning,pushctl}
#   --keep        keep the run's database and topics (their names are printed)
#   --perf        also sample the planner with `perf record --call-graph dwarf` during the fan-out,
#                 print the top symbols and keep the data in .local/planning-perf.data for
#                 `perf report -i` (perturbs the figures: use it for a separate run)
#
# What runs:
#   1. scripts/stack up (skipped with BENCH_STACK_UP=0, for a stack already up); release build of delivery-planning and pushctl (--scratch-path .build-bench).
#   2. Not timed: a database of its own for the run (push_bench_<run>, on the stack's PostgreSQL,
#      migrated with pushctl: the planner plans every due delivery of its database, so sharing
#      one with a test suite or another planner would mix their deliveries), the run's topics
#      (message topics 24 partitions as in production), one service, an iOS app (bundle_id) and
#      an Android app (fcm_project_id), N subscriptions inserted with generate_series, VACUUM (ANALYZE).
#   3. The planner starts with its own topics and consumer groups (PUSH_TOPIC_*, PLANNER_*_GROUP);
#      a warm-up request for an unknown service must come back as a rejection (the intake, the
#      outbox and the deliveries projection are running) before the measured request is sent.
#   4. One DeliveryRequested record. Figures: the planner's own clock (delivery_plans.started_at
#      to planned_at) and the wall time from publishing the request to planned_at; the planner's
#      VmRSS sampled every 200 ms (peak) and VmHWM at the end; CPU seconds of the planner,
#      Tansu and PostgreSQL over the same window. (No push.broad_log figure: since migration 30
#      a message's row is written by its result, and no sender runs here; bench/e2e.py measures
#      the broad log projection.)
#   5. The message topics are read back with kcat: exactly N records, N distinct message ids,
#      all of this delivery, or the script fails.
#   6. Ceiling: the planner's records (key, value) are shuffled and kcat -P sends them to a fresh
#      24-partition topic with the planner's three headers (same names, values of the same
#      length) and the project's producer settings (idempotent, lz4, linger.ms=5,
#      murmur2_random); clock as in bench/kafka.sh (from when the input starts flowing, 1 s after
#      kcat started, to kcat's exit). kcat's topic is counted too.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

DEVICES=1000000
CHUNK=5000
INSTANCES=1
SHARD=50000
BUILD=1
KEEP=0
PERF=0
AUDIENCE='{"all":true}'
COMMAND_LINE="bench/planning.sh $*"

usage() { sed -n '2,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "planning.sh: error: $*" >&2; exit 1; }
log() { echo "planning.sh: $*" >&2; }

while (($#)); do
    case "$1" in
        --devices) DEVICES="${2:?}"; shift 2 ;;
        --chunk) CHUNK="${2:?}"; shift 2 ;;
        --instances) INSTANCES="${2:?}"; shift 2 ;;
        --shard) SHARD="${2:?}"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --keep) KEEP=1; shift ;;
        --perf) PERF=1; shift ;;
        --filter)
            AUDIENCE='{"filter":{"all":[{"param":"city","op":"=","value":"Lisbon"},{"param":"tier","op":"in","values":["gold","silver"]},{"device":"registeredAt","op":"in the last","value":"30 days"}]}}'
            shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
[[ "$DEVICES" =~ ^[1-9][0-9]*$ ]] && ((DEVICES >= 2)) || die "--devices must be an integer >= 2"
[[ "$CHUNK" =~ ^[1-9][0-9]*$ ]] || die "--chunk must be a positive integer"
[[ "$INSTANCES" =~ ^[1-9][0-9]*$ ]] && ((INSTANCES <= 16)) || die "--instances must be an integer from 1 to 16"
[[ "$SHARD" =~ ^[1-9][0-9]*$ ]] && ((SHARD >= 100)) || die "--shard must be an integer >= 100"
IOS=$((DEVICES / 2))
ANDROID=$((DEVICES - IOS))

# ------------------------------------------------------------------ setup ---

# BENCH_STACK_UP=0: the stack is already up and this user may not start it (e.g. a shared one).
if [[ "${BENCH_STACK_UP:-1}" != 0 ]]; then
    STACK_LOG="$(mktemp)"
    scripts/stack up 2>"$STACK_LOG" || { cat "$STACK_LOG" >&2; die "scripts/stack up failed"; }
    rm -f "$STACK_LOG"
fi
eval "$(scripts/stack env)"
TANSU="$PUSH_STACK_ROOT/bin/tansu"
command -v kcat >/dev/null || die "kcat is not installed (scripts/stack install installs it)"
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed"
command -v psql >/dev/null || die "psql is needed"

BIN="$ROOT/.build-bench/release"
if ((BUILD)); then
    for product in delivery-planning pushctl; do
        log "building $product (release, --scratch-path .build-bench)"
        BUILD_LOG="$(mktemp)"
        if ! nice -n 10 swift build -c release --scratch-path .build-bench --product "$product" >"$BUILD_LOG" 2>&1; then
            tail -n 40 "$BUILD_LOG" >&2
            die "swift build failed"
        fi
        rm -f "$BUILD_LOG"
    done
fi
for product in delivery-planning pushctl; do [[ -x "$BIN/$product" ]] || die "$BIN/$product is missing (run without --no-build)"; done

RUN_ID="$(date +%m%d%H%M%S)$((RANDOM % 100))"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/planning-bench.XXXXXX")"
DB="push_bench_$RUN_ID"
ADMIN_URL="$POSTGRES_URL"
DB_URL="${POSTGRES_URL%/*}/$DB"
PLANNER_PID=""
# Every planner process (the first is PLANNER_PID: memory, threads and readiness are its).
PLANNER_PIDS=()
SAMPLER_PID=""
PERF_PID=""
TOPICS=()
DB_CREATED=0

cleanup() {
    local topic
    [[ -n "$PERF_PID" ]] && kill -INT "$PERF_PID" 2>/dev/null || true
    [[ -n "$SAMPLER_PID" ]] && kill "$SAMPLER_PID" 2>/dev/null || true
    local pid
    for pid in "${PLANNER_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || continue
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    if ((KEEP)); then
        echo "kept: database $DB_URL, topics ${TOPICS[*]}, planner log $WORK/planner.log" >&2
        return
    fi
    for topic in "${TOPICS[@]}"; do
        "$TANSU" topic delete "$topic" --broker "tcp://$KAFKA_BROKERS" >/dev/null 2>&1 || true
    done
    if ((DB_CREATED)); then
        psql "$ADMIN_URL" -qtAc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || log "could not drop database $DB"
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

sql() { psql "$DB_URL" -X -qtA -v ON_ERROR_STOP=1 -c "$1"; }
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

new_topic() {  # name partitions
    "$TANSU" topic create "$1" --partitions "$2" --broker "tcp://$KAFKA_BROKERS" >/dev/null || die "could not create topic $1"
    TOPICS+=("$1")
}

echo "delivery planning: $DEVICES devices ($IOS iOS, $ANDROID Android), chunk $CHUNK, $INSTANCES planner instance(s), shard size $SHARD"
echo "broker: Tansu $("$TANSU" --version | awk '{print $2}') at $KAFKA_BROKERS; PostgreSQL $(psql "$ADMIN_URL" -XtAc 'SHOW server_version' | cut -d' ' -f1); kcat $(kcat -V 2>&1 | sed -n 's/^Version \([0-9.]*\).*/\1/p' | head -n 1), librdkafka $(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9.]*\).*/\1/p' | head -n 1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "code: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Shared Services Package.swift 2>/dev/null || echo ' + uncommitted changes in Shared/Services')"

log "database $DB (migrated with pushctl)"
psql "$ADMIN_URL" -XqtAc "CREATE DATABASE $DB" >/dev/null || die "could not create database $DB"
DB_CREATED=1
POSTGRES_URL="$DB_URL" "$BIN/pushctl" migrate >/dev/null 2>"$WORK/migrate.err" || { cat "$WORK/migrate.err" >&2; die "pushctl migrate failed"; }

P="bench.planning.$RUN_ID"
declare -A TOPIC=(
    [DELIVERY_REQUESTS]="$P.requests:6" [DELIVERY_REQUESTS_DLQ]="$P.requests.dlq:1" [DELIVERY_EVENTS]="$P.delivery-events:6"
    [APNS_MESSAGES]="$P.apns:24" [FCM_MESSAGES]="$P.fcm:24" [MESSAGE_RESULTS]="$P.results:12"
)
PLANNER_ENV=(
    "POSTGRES_URL=$DB_URL" "KAFKA_BROKERS=$KAFKA_BROKERS" "PUSH_OPS_HOST=127.0.0.1" "PUSH_OPS_PORT=${BENCH_OPS_PORT:-19202}" "PLANNER_ADMIN_HOST=127.0.0.1" "PLANNER_ADMIN_PORT=0"
    "LOG_LEVEL=${BENCH_LOG_LEVEL:-info}" "PLANNER_CHUNK_SIZE=$CHUNK" "PLANNER_SHARD_SIZE=$SHARD" "KAFKA_SESSION_TIMEOUT_MS=6000"
    "PLANNER_INTAKE_GROUP=$P.intake" "PLANNER_DELIVERIES_GROUP=$P.deliveries" "PLANNER_BROAD_LOG_GROUP=$P.broad-log"
)
for id in "${!TOPIC[@]}"; do
    name="${TOPIC[$id]%:*}" partitions="${TOPIC[$id]#*:}"
    new_topic "$name" "$partitions"
    PLANNER_ENV+=("PUSH_TOPIC_$id=$name" "PUSH_TOPIC_${id}_PARTITIONS=$partitions")
done
for source in DELIVERY_EVENTS APNS_MESSAGES FCM_MESSAGES MESSAGE_RESULTS; do new_topic "${TOPIC[$source]%:*}.dlq" 1; done
REQUESTS="${TOPIC[DELIVERY_REQUESTS]%:*}" APNS="${TOPIC[APNS_MESSAGES]%:*}" FCM="${TOPIC[FCM_MESSAGES]%:*}"

SERVICE="bench-planning-$RUN_ID"
log "inserting the catalog and $DEVICES subscriptions (not timed)"
setup_start=$(now)
psql "$DB_URL" -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
INSERT INTO push.services (service_id, name, label, created_at, updated_at)
VALUES ('00000000-0000-4000-8000-00000000b001', '$SERVICE', 'Planning benchmark', now(), now());
INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, fcm_project_id, created_at, updated_at) VALUES
  ('00000000-0000-4000-8000-00000000a105', '00000000-0000-4000-8000-00000000b001', 'bench-ios-$RUN_ID', 'ios', 'production', 'Bench iOS', 'com.example.trips', NULL, now(), now()),
  ('00000000-0000-4000-8000-00000000a2d0', '00000000-0000-4000-8000-00000000b001', 'bench-android-$RUN_ID', 'android', 'production', 'Bench Android', NULL, 'example-project', now(), now());
-- iOS: 64 hex digits (APNs device token); Android: 151 characters shaped like an FCM token.
INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at)
SELECT '00000000-0000-4000-8000-00000000a105', md5('i' || g) || md5('j' || g), 'ios', 'user' || g,
       jsonb_build_object('tier', CASE WHEN g % 2 = 0 THEN 'gold' ELSE 'silver' END, 'city', 'Lisbon'), now(), now()
FROM generate_series(1, $IOS) AS g;
INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at)
SELECT '00000000-0000-4000-8000-00000000a2d0',
       'c' || substr(md5('f' || g), 1, 10) || ':APA91b'
           || left(translate(encode(sha512(('a' || g)::bytea) || sha512(('b' || g)::bytea), 'base64'), E'+/\n', '-_'), 133),
       'android', 'user' || g,
       jsonb_build_object('tier', CASE WHEN g % 2 = 0 THEN 'gold' ELSE 'silver' END, 'city', 'Lisbon'), now(), now()
FROM generate_series(1, $ANDROID) AS g;
-- Each user's data key, as the registration service creates it at the first registration (the
-- planner seals every message under it; without a row it would create the keys during the
-- fan-out, a one-time cost of a first delivery to subscriptions older than the keys).
INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
SELECT gen_random_uuid(), '00000000-0000-4000-8000-00000000b001', 'user:user' || g, decode(md5('k' || g) || md5('l' || g), 'hex')
FROM generate_series(1, greatest($IOS, $ANDROID)) AS g;
-- Vacuumed as autovacuum leaves a table of long-lived subscriptions (all-visible pages: index-only
-- probes read no table page), not as a table filled a second ago.
VACUUM (ANALYZE) push.subscriptions;
VACUUM (ANALYZE) push.subject_keys;
SQL
echo "setup: $DEVICES subscriptions inserted in $(minus "$(now)" "$setup_start") s (token length iOS $(sql "SELECT max(length(registration_token)) FROM push.subscriptions WHERE platform = 'ios'"), Android $(sql "SELECT max(length(registration_token)) FROM push.subscriptions WHERE platform = 'android'"))"

# --------------------------------------------------------------- planner ---

log "starting delivery-planning"
env "${PLANNER_ENV[@]}" "$BIN/delivery-planning" >"$WORK/planner.log" 2>&1 &
PLANNER_PID=$!
PLANNER_PIDS+=("$PLANNER_PID")
OPS_PORT="${BENCH_OPS_PORT:-19202}"

# VmRSS every 200 ms (pure bash: no process started per sample); the peak is rewritten each time.
(
    peak=0
    while [[ -r /proc/$PLANNER_PID/status ]]; do
        while read -r key value _; do
            if [[ "$key" == VmRSS: ]]; then ((value > peak)) && peak=$value; break; fi
        done </proc/"$PLANNER_PID"/status 2>/dev/null || true
        echo "$peak" >"$WORK/rss-peak.tmp" && mv "$WORK/rss-peak.tmp" "$WORK/rss-peak"
        sleep 0.2
    done
) &
SAMPLER_PID=$!

for _ in $(seq 1 150); do
    curl -fs "http://127.0.0.1:$OPS_PORT/health/ready" >/dev/null 2>&1 && break
    kill -0 "$PLANNER_PID" 2>/dev/null || { cat "$WORK/planner.log" >&2; die "the planner exited"; }
    sleep 0.2
done
curl -fs "http://127.0.0.1:$OPS_PORT/health/ready" >/dev/null || { tail -n 20 "$WORK/planner.log" >&2; die "the planner is not ready"; }
# Further instances: the same environment, ops ports OPS_PORT + 1, + 2, …
for ((i = 2; i <= INSTANCES; i++)); do
    log "starting delivery-planning instance $i"
    env "${PLANNER_ENV[@]}" "PUSH_OPS_PORT=$((OPS_PORT + i - 1))" "$BIN/delivery-planning" >"$WORK/planner-$i.log" 2>&1 &
    PLANNER_PIDS+=("$!")
    for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$((OPS_PORT + i - 1))/health/ready" >/dev/null 2>&1 && break; sleep 0.2; done
    curl -fs "http://127.0.0.1:$((OPS_PORT + i - 1))/health/ready" >/dev/null || { tail -n 20 "$WORK/planner-$i.log" >&2; die "planner instance $i is not ready"; }
done

# Warm-up: a request for an unknown service must be rejected and projected (intake joined).
WARMUP="warmup-$RUN_ID"
printf '{"type":"DeliveryRequested","version":1,"requestId":"%s","service":"no-such-service","audience":{"all":true},"content":{"body":"x"}}\n' "$WARMUP" |
    kcat -P -b "$KAFKA_BROKERS" -t "$REQUESTS" -k "$WARMUP" 2>"$WORK/kcat-request.err" || { cat "$WORK/kcat-request.err" >&2; die "could not publish the warm-up request"; }
for _ in $(seq 1 300); do
    [[ "$(sql "SELECT count(*) FROM push.delivery_rejections WHERE request_id = '$WARMUP'")" -ge 1 ]] && break
    kill -0 "$PLANNER_PID" 2>/dev/null || { tail -n 40 "$WORK/planner.log" >&2; die "the planner exited"; }
    sleep 0.2
done
[[ "$(sql "SELECT count(*) FROM push.delivery_rejections WHERE request_id = '$WARMUP'")" -ge 1 ]] \
    || { tail -n 40 "$WORK/planner.log" >&2; die "the warm-up request was not rejected within 60 s"; }

# CPU seconds (user + system): cpu_of_pid, cpu_of_name, machine_busy, HZ and TANSU_PID.
# shellcheck source=bench/lib/cpu.sh
source bench/lib/cpu.sh
# The planners' CPU: all instances together, then each one's (a comma-separated list).
planners_cpu() {
    local pid total=0 each=()
    for pid in "${PLANNER_PIDS[@]}"; do
        each+=("$(cpu_of_pid "$pid")")
        total=$(awk -v t="$total" -v c="${each[-1]}" 'BEGIN { printf "%.2f", t + c }')
    done
    echo "$total $(IFS=,; echo "${each[*]}")"
}
snapshot() { echo "$(planners_cpu) $(cpu_of_pid "$TANSU_PID") $(cpu_of_name postgres) $(machine_busy)"; }
# push_planner_messages_total{outcome="published"} of each instance (comma-separated).
planners_published() {
    local i each=()
    for ((i = 1; i <= INSTANCES; i++)); do
        each+=("$(curl -fs "http://127.0.0.1:$((OPS_PORT + i - 1))/metrics" 2>/dev/null |
            awk '/^push_planner_messages_total/ && /outcome="published"/ { v = $NF } END { printf "%d", v }')")
    done
    (IFS=,; echo "${each[*]}")
}

REQUEST_ID="bench-planning-$RUN_ID"
DELIVERY_ID=""
if ((PERF)); then
    PERF_DATA="$PUSH_STACK_ROOT/planning-perf.data"
    perf record -F 199 --call-graph dwarf,16384 -p "$PLANNER_PID" -o "$PERF_DATA" >/dev/null 2>"$WORK/perf.err" &
    PERF_PID=$!
    sleep 1
fi
read -r cpu0_planner cpu0_each cpu0_tansu cpu0_pg cpu0_machine < <(snapshot)
log "publishing the request $REQUEST_ID"
published_at=$(now)
printf '{"type":"DeliveryRequested","version":1,"requestId":"%s","service":"%s","audience":%s,"content":{"title":"Lisbon is waiting","body":"Hello {{userKey}}"}}\n' "$REQUEST_ID" "$SERVICE" "$AUDIENCE" |
    kcat -P -b "$KAFKA_BROKERS" -t "$REQUESTS" -k "$REQUEST_ID" 2>"$WORK/kcat-request.err" || { cat "$WORK/kcat-request.err" >&2; die "could not publish the request"; }

deadline=$(($(date +%s) + ${BENCH_TIMEOUT_S:-3600}))
status=""
rss_of() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
echo "0 0 $cpu0_planner $cpu0_tansu $cpu0_pg $(rss_of "$PLANNER_PID")" >"$WORK/progress"
next_progress=15
while :; do
    IFS='|' read -r status so_far < <(sql "SELECT status, targeted FROM push.delivery_plans WHERE request_id = '$REQUEST_ID'") || true
    [[ "$status" == planned ]] && break
    elapsed=$(minus "$(now)" "$published_at")
    if awk -v e="$elapsed" -v n="$next_progress" 'BEGIN { exit !(e >= n) }'; then
        read -r c_planner _ c_tansu c_pg _ < <(snapshot)
        echo "$elapsed ${so_far:-0} $c_planner $c_tansu $c_pg $(rss_of "$PLANNER_PID")" >>"$WORK/progress"
        next_progress=$((next_progress + 15))
    fi
    for pid in "${PLANNER_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || { tail -n 40 "$WORK"/planner*.log >&2; die "a planner exited during the fan-out"; }
    done
    (($(date +%s) < deadline)) || die "not planned after ${BENCH_TIMEOUT_S:-3600} s (status '$status', targeted $(sql "SELECT targeted FROM push.delivery_plans WHERE request_id = '$REQUEST_ID'"))"
    sleep 0.5
done
read -r cpu1_planner cpu1_each cpu1_tansu cpu1_pg cpu1_machine < <(snapshot)
published_each=$(planners_published)
if [[ -n "$PERF_PID" ]]; then kill -INT "$PERF_PID" 2>/dev/null || true; wait "$PERF_PID" 2>/dev/null || true; PERF_PID=""; fi
IFS='|' read -r DELIVERY_ID started planned targeted excluded failed < <(sql "
    SELECT delivery_id, extract(epoch FROM started_at), extract(epoch FROM planned_at), targeted, excluded, failed
    FROM push.delivery_plans WHERE request_id = '$REQUEST_ID'")
planner_seconds=$(minus "$planned" "$started")
wall_seconds=$(minus "$planned" "$published_at")
planner_rate=$(awk -v n="$targeted" -v s="$planner_seconds" 'BEGIN { printf "%.0f", n / s }')
echo "planner: delivery $DELIVERY_ID targeted=$targeted excluded=$excluded failed=$failed"
echo "planner: fan-out ${planner_seconds} s (started_at to planned_at) = $planner_rate messages/s; request published to planned: ${wall_seconds} s"
# Progress every 15 s: messages (counted at each committed chunk), the rate and CPU (percent of
# one core) over the interval, the planner's RSS; to see whether the rate holds.
if (($(wc -l <"$WORK/progress") > 1)); then
    echo "progress:      s  messages  messages/s  CPU% planner  PostgreSQL  Tansu  RSS MiB"
    awk 'NR > 1 { d = $1 - t; printf "  %13.0f  %8d  %10.0f  %12.0f  %10.0f  %5.0f  %7.0f\n", $1, $2, ($2 - m) / d,
                  100 * ($3 - cp) / d, 100 * ($5 - cg) / d, 100 * ($4 - ct) / d, $6 / 1024 }
         { t = $1; m = $2; cp = $3; ct = $4; cg = $5 }' "$WORK/progress"
fi
[[ "$targeted" == "$DEVICES" && "$excluded" == 0 && "$failed" == 0 ]] || die "expected targeted=$DEVICES excluded=0 failed=0"

# Memory and per-thread CPU, before stopping the planner.
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PLANNER_PID/status")
rss_now=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PLANNER_PID/status")
sleep 0.3
peak=$(cat "$WORK/rss-peak" 2>/dev/null || echo 0)
echo "planner memory: peak VmRSS (200 ms samples) $((peak / 1024)) MiB, VmHWM $((hwm / 1024)) MiB, VmRSS now $((rss_now / 1024)) MiB"
cpu_planner=$(minus "$cpu1_planner" "$cpu0_planner") cpu_tansu=$(minus "$cpu1_tansu" "$cpu0_tansu")
cpu_pg=$(minus "$cpu1_pg" "$cpu0_pg") cpu_machine=$(minus "$cpu1_machine" "$cpu0_machine")
cpu_each=$(awk -v a="$cpu0_each" -v b="$cpu1_each" 'BEGIN { n = split(a, x, ","); split(b, y, ","); for (i = 1; i <= n; i++) printf "%s%.2f", (i > 1 ? "," : ""), y[i] - x[i] }')
echo "CPU seconds from the request to planned (${wall_seconds} s wall, $(nproc) cores): planner $cpu_planner (per instance $cpu_each), Tansu $cpu_tansu, PostgreSQL (all its processes) $cpu_pg, whole machine $cpu_machine"
echo "messages published per planner instance: $published_each; planner CPU per message $(awk -v c="$cpu_planner" -v n="$targeted" 'BEGIN { printf "%.1f", 1e6 * c / n }') µs, PostgreSQL $(awk -v c="$cpu_pg" -v n="$targeted" 'BEGIN { printf "%.1f", 1e6 * c / n }') µs"
echo "planner CPU by thread name (digits folded; whole life of the process, seconds):"
for task in /proc/"$PLANNER_PID"/task/*; do
    { read -r line <"$task/stat"; } 2>/dev/null || continue
    name="${line#*(}"; name="${name%)*}"
    awk -v n="$name" -v hz="$HZ" '{ sub(/^.*\) /, ""); gsub(/[0-9]+/, "N", n); printf "%.2f\t%s\n", ($12 + $13) / hz, n }' <<<"$line"
done | awk -F'\t' '{ s[$2] += $1; c[$2]++ } END { for (k in s) printf "%.2f\t%s\t%d\n", s[k], k, c[k] }' | sort -nr |
    awk -F'\t' '$1 > 0 { printf "  %-20s %3d thread(s) %8.2f\n", $2, $3, $1 }'

planner_exit=0
for pid in "${PLANNER_PIDS[@]}"; do kill -TERM "$pid"; done
for pid in "${PLANNER_PIDS[@]}"; do wait "$pid" || planner_exit=$?; done
PLANNER_PIDS=()
PLANNER_PID=""
kill "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=""
echo "planner: SIGTERM, exit status $planner_exit"
if cat "$WORK"/planner*.log | grep -v 'PUSH_ADMIN_TOKEN is not set' | grep -qiE '\b(warning|error|critical)\b'; then
    echo "planner logs: $(cat "$WORK"/planner*.log | grep -v 'PUSH_ADMIN_TOKEN is not set' | grep -ciE '\b(warning|error|critical)\b') warning/error lines, first ones:"
    cat "$WORK"/planner*.log | grep -v 'PUSH_ADMIN_TOKEN is not set' | grep -iE '\b(warning|error|critical)\b' | head -n 5 | cut -c1-400 | sed 's/^/  /'
else
    echo "planner logs: no warning or error lines ($(cat "$WORK"/planner*.log | wc -l) lines)"
fi

if ((PERF)); then
    echo "perf: top symbols of the planner during the fan-out (self time; data in $PERF_DATA)"
    perf report -i "$PERF_DATA" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | awk 'NR <= 30' |
        { if command -v swift >/dev/null; then swift demangle --simplified; else cat; fi; } | cut -c1-200
    echo "perf: by library (self time)"
    perf report -i "$PERF_DATA" --no-children --sort dso --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | awk 'NR <= 12'
fi

# ------------------------------------------------------ records on topics ---

log "reading the message topics back"
CONSUME=(-C -b "$KAFKA_BROKERS" -o beginning -e -q -X fetch.queue.backoff.ms=10)
: >"$WORK/meta"
: >"$WORK/replay"
for topic in "$APNS" "$FCM"; do
    kcat "${CONSUME[@]}" -t "$topic" -f '%K %S %h\n' >>"$WORK/meta" 2>"$WORK/kcat-consume.err" || { cat "$WORK/kcat-consume.err" >&2; die "kcat could not read $topic"; }
    kcat "${CONSUME[@]}" -t "$topic" -f '%k\t%s\n' >>"$WORK/replay" 2>"$WORK/kcat-consume.err" || { cat "$WORK/kcat-consume.err" >&2; die "kcat could not read $topic"; }
done
on_topics=$(wc -l <"$WORK/meta")
echo "records on the message topics: $on_topics (apns + fcm), expected $DEVICES"
[[ "$on_topics" == "$DEVICES" ]] || die "the message topics hold $on_topics records, expected $DEVICES"
# Sizes (key, value, header names + values) and the headers' delivery and message ids.
read -r avg_key avg_value avg_headers avg_total ours distinct < <(awk -v d="$DELIVERY_ID" '
    { key += $1; value += $2; n = split($3, h, ","); for (i = 1; i <= n; i++) { hb += length(h[i]) - 1
          if (h[i] ~ /^push-delivery-id=/ && substr(h[i], 18) == d) ours++
          if (h[i] ~ /^push-message-id=/) print substr(h[i], 17) > "/dev/stderr" } }
    END { printf "%.1f %.1f %.1f %.1f %d ", key / NR, value / NR, hb / NR, (key + value + hb) / NR, ours }' "$WORK/meta" 2>"$WORK/ids"
    sort -u "$WORK/ids" | wc -l)
echo "records: key $avg_key + value $avg_value + headers $avg_headers = $avg_total bytes on average; $ours of this delivery, $distinct distinct message ids"
[[ "$ours" == "$DEVICES" && "$distinct" == "$DEVICES" ]] || die "expected $DEVICES records of this delivery with distinct message ids"
replay_lines=$(wc -l <"$WORK/replay")
[[ "$replay_lines" == "$DEVICES" ]] || die "the replay file has $replay_lines lines (a value with a newline?), expected $DEVICES"
rm -f "$WORK/ids" "$WORK/meta"

# ---------------------------------------------------------------- ceiling ---

log "kcat ceiling: $DEVICES records of the planner's size to a fresh 24-partition topic"
shuf "$WORK/replay" -o "$WORK/input"
rm -f "$WORK/replay"
KCAT_TOPIC="$P.kcat"
new_topic "$KCAT_TOPIC" 24
# The planner's three headers: same names, values of the same length (ce_type of the APNs records).
KCAT_HEADERS=(-H "ce_type=APNSMessagePlanned" -H "push-delivery-id=$DELIVERY_ID" -H "push-message-id=00000000-0000-4000-8000-000000000000")
KCAT_PRODUCER=(-X enable.idempotence=true -z lz4 -X linger.ms=5 -X partitioner=murmur2_random -X message.timeout.ms=10000)
({ sleep 1; now >"$WORK/kcat-start"; cat "$WORK/input"; } |
    /usr/bin/time -f '%U %S %M' -o "$WORK/kcat-time" kcat -P -b "$KAFKA_BROKERS" -t "$KCAT_TOPIC" -K $'\t' "${KCAT_HEADERS[@]}" "${KCAT_PRODUCER[@]}" 2>"$WORK/kcat.err") \
    || { tail "$WORK/kcat.err" >&2; die "kcat produce failed"; }
kcat_end=$(now)
kcat_seconds=$(minus "$kcat_end" "$(cat "$WORK/kcat-start")")
kcat_failures=$(grep -c "Delivery failed" "$WORK/kcat.err" || true)
read -r kcat_user kcat_sys kcat_maxrss <"$WORK/kcat-time"
kcat_rate=$(awk -v n="$DEVICES" -v s="$kcat_seconds" 'BEGIN { printf "%.0f", n / s }')
kcat_count=$(kcat "${CONSUME[@]}" -t "$KCAT_TOPIC" -f '\n' 2>"$WORK/kcat-consume.err" | wc -l)
echo "kcat produce: $DEVICES records in $kcat_seconds s = $kcat_rate records/s; failures $kcat_failures; CPU $(awk -v u="$kcat_user" -v s="$kcat_sys" 'BEGIN { printf "%.2f", u + s }') s; max RSS $((kcat_maxrss / 1024)) MiB; $kcat_count records on its topic"
[[ "$kcat_count" == "$DEVICES" && "$kcat_failures" == 0 ]] || die "kcat: $kcat_count records on its topic, $kcat_failures failures"
rm -f "$WORK/input"

ratio=$(awk -v p="$planner_rate" -v k="$kcat_rate" 'BEGIN { printf "%.3f", p / k }')
tansu_rss=$(awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$TANSU_PID/status" 2>/dev/null || echo "?")
echo
echo "command: $COMMAND_LINE"
printf '%-44s %s\n' "devices (iOS + Android)" "$DEVICES ($IOS + $ANDROID), chunk $CHUNK, shard $SHARD"
printf '%-44s %s\n' "planner instances" "$INSTANCES (messages published by each: $published_each)"
printf '%-44s %s\n' "record size (key + value + headers)" "$avg_total bytes ($avg_key + $avg_value + $avg_headers)"
printf '%-44s %s\n' "planner messages/s (started_at..planned_at)" "$planner_rate ($targeted in $planner_seconds s; request to planned $wall_seconds s)"
printf '%-44s %s\n' "kcat records/s (same records, same broker)" "$kcat_rate ($DEVICES in $kcat_seconds s)"
printf '%-44s %s\n' "ratio planner / kcat" "$ratio"
printf '%-44s %s\n' "planner peak RSS" "$((peak / 1024)) MiB (VmHWM $((hwm / 1024)) MiB); kcat max RSS $((kcat_maxrss / 1024)) MiB"
printf '%-44s %s\n' "CPU s during the fan-out" "planner $cpu_planner (per instance $cpu_each), Tansu $cpu_tansu, PostgreSQL $cpu_pg, machine $cpu_machine of $(awk -v w="$wall_seconds" -v c="$(nproc)" 'BEGIN { printf "%.1f", w * c }')"
echo "Tansu RSS at the end: $tansu_rss MiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"

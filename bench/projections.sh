#!/usr/bin/env bash
# Projection throughput: events per second into push.broad_log, push.tracking_log and
# push.subscriptions, against a plain bulk insert (psql \copy) of the same rows into a copy of
# each table, in the same run.
#
#   bench/projections.sh [--results 200000] [--hits 200000] [--registrations 200000] [--no-build]
#
# Steps:
#   1. scripts/stack up (skipped with BENCH_STACK_UP=0, for a stack already up); release build of
#      pushctl (--scratch-path .build-bench).
#   2. Two fresh topics of this run (12 partitions each, as push.message-results and
#      push.tracking): N MessageSent events (one delivery, distinct messages; a result alone
#      writes its broad_log row) and M TrackingHitRecorded events (received and opened hits of
#      those messages), produced with kcat from lines written by Python.
#   3. A scratch database (push_bench_projections_<run>, migrated, dropped at the end), and
#      `pushctl projections replay --only broad-log`, then `--only tracking-log`: the services'
#      own projections (with the delivery indicator counters) read the topics from the
#      beginning. The rate is pushctl's own: records from the first position stored to the last.
#      Registrations as the registration service writes them (version 2, sealed under each
#      person's data key): K version-1 registrations of one app (a service and app inserted in
#      the scratch database; one person per 2 devices, 5 params each) produced with kcat, then
#      sealed by `pushctl topics upgrade-history` into a second topic, which
#      `pushctl projections replay --only subscriptions` reads (opening each with its key).
#   4. Ceiling: the rows the projections wrote are exported (\copy (SELECT ...) TO: both tables
#      are partitioned) and loaded with `\copy FROM` into an empty table created LIKE the
#      projection's table (same columns, indexes and constraints; one plain table, not
#      partitioned), timed by psql.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
RESULTS=200000 HITS=200000 REGISTRATIONS=200000 BUILD=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --results) RESULTS="$2"; shift 2 ;;
        --hits) HITS="$2"; shift 2 ;;
        --registrations) REGISTRATIONS="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
log() { echo "bench: $*" >&2; }

# BENCH_STACK_UP=0: the stack is already up and this user may not start it (e.g. a shared one).
if [[ "${BENCH_STACK_UP:-1}" != 0 ]]; then
    scripts/stack up >&2
fi
# shellcheck disable=SC1091
source .local/stack.env
BIN="$ROOT/.build-bench/release"
if [[ "$BUILD" == 1 ]]; then
    log "building pushctl (release, --scratch-path .build-bench)"
    nice -n 10 swift build -c release --scratch-path .build-bench --product pushctl >&2
fi
[[ -x "$BIN/pushctl" ]] || { echo "bench: $BIN/pushctl is missing (run without --no-build)" >&2; exit 1; }

RUN="$(date +%s)"
RESULTS_TOPIC="bench.results.$RUN" TRACKING_TOPIC="bench.tracking.$RUN"
SUBS_V1_TOPIC="bench.subscriptions-v1.$RUN" SUBS_TOPIC="bench.subscriptions.$RUN"
DB=push_bench_projections_$RUN
BASE="${POSTGRES_URL%/*}"
psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
WORK="$(mktemp -d)"
trap 'psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
export POSTGRES_URL="$BASE/$DB"
"$BIN/pushctl" migrate >/dev/null
export PUSH_TOPIC_MESSAGE_RESULTS="$RESULTS_TOPIC" PUSH_TOPIC_MESSAGE_RESULTS_PARTITIONS=12
export PUSH_TOPIC_TRACKING="$TRACKING_TOPIC" PUSH_TOPIC_TRACKING_PARTITIONS=12
# The version-1 source first (upgrade-history reads the topic PUSH_TOPIC_SUBSCRIPTIONS names);
# the catalog topic the subscriptions projection also reads is empty here.
export PUSH_TOPIC_SUBSCRIPTIONS="$SUBS_V1_TOPIC" PUSH_TOPIC_SUBSCRIPTIONS_PARTITIONS=12 PUSH_TOPIC_CATALOG="bench.catalog.$RUN"
# Topics the broad-log projection also reads; empty here.
export PUSH_TOPIC_APNS_MESSAGES="bench.apns.$RUN" PUSH_TOPIC_FCM_MESSAGES="bench.fcm.$RUN"
"$BIN/pushctl" topics create >/dev/null

SERVICE="$(.local/venv/bin/python -c 'import uuid; print(uuid.uuid4())')" APP="$(.local/venv/bin/python -c 'import uuid; print(uuid.uuid4())')"
psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_URL" \
    -c "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES ('$SERVICE', 'bench-$RUN', 'bench', now(), now())" \
    -c "INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, variables, sounds, subscription_parameters, created_at, updated_at)
        VALUES ('$APP', '$SERVICE', 'bench-$RUN', 'ios', 'production', 'bench', '[]', '[]', '[]', now(), now())"

log "producing $RESULTS results, $HITS hits and $REGISTRATIONS registrations"
.local/venv/bin/python - "$RESULTS" "$HITS" "$WORK" "$REGISTRATIONS" "$APP" <<'PY'
import json, sys, uuid, random
from datetime import datetime, timezone, timedelta
results, hits, work, registrations, app = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
delivery = "bench-delivery"
base = datetime(2026, 11, 23, 10, 0, 0, tzinfo=timezone.utc)
def iso(t): return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
messages = [str(uuid.uuid4()) for _ in range(results)]
with open(f"{work}/results", "w") as out:
    for n, m in enumerate(messages):
        at = iso(base + timedelta(milliseconds=n))
        platform = "ios" if n % 2 == 0 else "android"
        data = {"message": {"messageId": m, "deliveryId": delivery, "appId": app, "registrationToken": f"{n:064x}", "platform": platform},
                "providerMessageId": str(uuid.uuid4()).upper(), "attempts": 1, "sentAt": at}
        event = {"id": str(uuid.uuid4()), "type": "MessageSent", "version": 1, "occurredAt": at, "key": m,
                 "correlationId": "bench", "causationId": None, "data": data}
        out.write(m + "\t" + json.dumps(event, separators=(",", ":")) + "\n")
random.seed(7)
with open(f"{work}/hits", "w") as out:
    for n in range(hits):
        m = messages[n % results] if n < results else random.choice(messages)
        tag = 1 if n % 4 else 2
        at = iso(base + timedelta(seconds=5, milliseconds=n))
        tracking = str(uuid.uuid4())
        data = {"trackingId": tracking, "messageId": m, "messageIdForm": "uuid", "deliveryId": delivery, "tagId": tag,
                "kind": "received" if tag == 1 else "opened", "occurredAt": at}
        event = {"id": tracking, "type": "TrackingHitRecorded", "version": 1, "occurredAt": at, "key": m,
                 "correlationId": None, "causationId": None, "data": data}
        out.write(m + "\t" + json.dumps(event, separators=(",", ":")) + "\n")
with open(f"{work}/registrations", "w") as out:
    for n in range(registrations):
        at = iso(base + timedelta(milliseconds=n))
        token = f"{n:064x}"
        key = f"{app}:{token}"
        data = {"appId": app, "integrationKey": "bench", "platform": "ios", "registrationToken": token,
                "userKey": f"person-{n // 2}@example.com", "deviceImei": None, "deviceName": f"iPhone {n}",
                "deviceModel": "iPhone16,1", "deviceBrand": "Apple", "deviceManufacturer": "Apple", "osName": "iOS",
                "osVersion": "18.1", "osLanguage": "fr-FR",
                "params": {"city": "Lyon", "points": str(n % 1000), "vip": "true" if n % 7 == 0 else "false",
                           "segment": f"s{n % 13}", "born": "1990-04-01"},
                "registeredAt": at}
        event = {"id": str(uuid.uuid4()), "type": "SubscriptionRegistered", "version": 1, "occurredAt": at, "key": key,
                 "correlationId": "bench", "causationId": None, "data": data}
        out.write(key + "\t" + json.dumps(event, separators=(",", ":")) + "\n")
PY
kcat -P -b "$KAFKA_BROKERS" -t "$RESULTS_TOPIC" -K $'\t' -z lz4 <"$WORK/results"
kcat -P -b "$KAFKA_BROKERS" -t "$TRACKING_TOPIC" -K $'\t' -z lz4 <"$WORK/hits"
kcat -P -b "$KAFKA_BROKERS" -t "$SUBS_V1_TOPIC" -K $'\t' -z lz4 <"$WORK/registrations"
log "sealing the registrations (pushctl topics upgrade-history)"
"$BIN/pushctl" topics upgrade-history --from "$SUBS_V1_TOPIC" --to "$SUBS_TOPIC" | sed -n 's/^/bench: /p' >&2
export PUSH_TOPIC_SUBSCRIPTIONS="$SUBS_TOPIC"

# CPU seconds (user + system): cpu_of_pid, cpu_of_name, machine_busy and TANSU_PID.
# shellcheck source=bench/lib/cpu.sh
source bench/lib/cpu.sh
command -v /usr/bin/time >/dev/null || apt-get install -y -qq time >/dev/null
# Runs one projection's replay; prints "<records> <seconds> <records/s> <CPU s>" from pushctl's
# line and /proc. The CPU (whole replay: group joins and the quiet wait included) is pushctl's
# (GNU time), Tansu's, and the rest of the machine's: PostgreSQL's backend serving pushctl ends
# with it, so its seconds cannot be read from /proc afterwards and are in that rest.
replay() {
    local output before after
    before="$(cpu_of_pid "$TANSU_PID") $(machine_busy)"
    output="$(/usr/bin/time -f "cpu %U %S" -o "$WORK/time" "$BIN/pushctl" projections replay --only "$1" --quiet-ms 3000 --timeout 1800)"
    after="$(cpu_of_pid "$TANSU_PID") $(machine_busy)"
    printf '%s\n' "$output" >&2
    printf '%s\n' "$output" | sed -n 's/^replay: \([0-9]*\) records projected in \([0-9.]*\) s, \([0-9]*\) records\/s$/\1 \2 \3/p' | tr -d '\n'
    awk -v b="$before" -v a="$after" '/^cpu / { split(b, x, " "); split(a, y, " "); p = $2 + $3; t = y[1] - x[1]; m = y[2] - x[2];
        printf " pushctl=%.2f,Tansu=%.2f,rest=%.2f,machine=%.2f\n", p, t, m - p - t, m }' "$WORK/time"
}
# Loads the projection's rows into an empty copy of its table; prints the seconds psql took.
# Generated columns (push.subscriptions.token_digest) are left to the copy to compute, as the
# projection leaves them to PostgreSQL.
copy_rows() {
    local table="$1" columns
    columns="$(psql -X -tA "$POSTGRES_URL" -c "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns
        WHERE table_schema = 'push' AND table_name = '$table' AND is_generated = 'NEVER'")"
    psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_URL" -c "\\copy (SELECT $columns FROM push.$table) TO '$WORK/$table.copy'" \
        -c "CREATE TABLE push.bench_$table (LIKE push.$table INCLUDING ALL)" >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_URL" -c "\\timing on" -c "\\copy push.bench_$table ($columns) FROM '$WORK/$table.copy'" |
        awk '/^Time:/ { printf "%.3f\n", $2 / 1000 }'
}

log "replaying broad-log"
read -r BL_RECORDS BL_SECONDS BL_RATE BL_CPU < <(replay broad-log)
log "replaying tracking-log"
read -r TL_RECORDS TL_SECONDS TL_RATE TL_CPU < <(replay tracking-log)
BL_ROWS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT count(*) FROM push.broad_log")"
log "replaying subscriptions"
read -r SU_RECORDS SU_SECONDS SU_RATE SU_CPU < <(replay subscriptions)
TL_ROWS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT count(*) FROM push.tracking_log")"
SU_ROWS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT count(*) FROM push.subscriptions")"
[[ "$BL_ROWS" == "$RESULTS" ]] || { echo "bench: broad_log has $BL_ROWS rows, expected $RESULTS" >&2; exit 1; }
[[ "$TL_ROWS" == "$HITS" ]] || { echo "bench: tracking_log has $TL_ROWS rows, expected $HITS" >&2; exit 1; }
[[ "$SU_ROWS" == "$REGISTRATIONS" ]] || { echo "bench: subscriptions has $SU_ROWS rows, expected $REGISTRATIONS" >&2; exit 1; }
INDICATORS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT sent || ' sent, ' || impressions || ' impressions, ' || opens || ' opens' FROM push.delivery_indicators WHERE delivery_id = 'bench-delivery'")"
log "copying the same rows with psql"
BL_COPY="$(copy_rows broad_log)"
TL_COPY="$(copy_rows tracking_log)"
SU_COPY="$(copy_rows subscriptions)"

echo
echo "bench: $RESULTS MessageSent, $HITS TrackingHitRecorded and $REGISTRATIONS SubscriptionRegistered (sealed) events, 12 partitions each; indicators: $INDICATORS"
printf '%-14s %10s %10s %12s %12s %10s %8s\n' table rows "replay s" "events/s" "\\copy s" "rows/s" ratio
awk -v t=broad_log -v n="$BL_ROWS" -v s="$BL_SECONDS" -v r="$BL_RATE" -v c="$BL_COPY" 'BEGIN { printf "%-14s %10d %10.2f %12d %12.3f %10d %8.3f\n", t, n, s, r, c, n / c, r / (n / c) }'
awk -v t=tracking_log -v n="$TL_ROWS" -v s="$TL_SECONDS" -v r="$TL_RATE" -v c="$TL_COPY" 'BEGIN { printf "%-14s %10d %10.2f %12d %12.3f %10d %8.3f\n", t, n, s, r, c, n / c, r / (n / c) }'
awk -v t=subscriptions -v n="$SU_ROWS" -v s="$SU_SECONDS" -v r="$SU_RATE" -v c="$SU_COPY" 'BEGIN { printf "%-14s %10d %10.2f %12d %12.3f %10d %8.3f\n", t, n, s, r, c, n / c, r / (n / c) }'
echo "CPU seconds over each whole replay ($(nproc) cores; rest: PostgreSQL and whatever else ran): broad_log $BL_CPU; tracking_log $TL_CPU; subscriptions $SU_CPU"

#!/usr/bin/env bash
# Projection throughput: events per second into push.broad_log and push.tracking_log, against a
# plain bulk insert (psql \copy) of the same rows into a copy of each table, in the same run.
#
#   bench/projections.sh [--results 200000] [--hits 200000] [--no-build]
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
#   4. Ceiling: the rows the projections wrote are exported (\copy (SELECT ...) TO: both tables
#      are partitioned) and loaded with `\copy FROM` into an empty table created LIKE the
#      projection's table (same columns, indexes and constraints; one plain table, not
#      partitioned), timed by psql.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
RESULTS=200000 HITS=200000 BUILD=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --results) RESULTS="$2"; shift 2 ;;
        --hits) HITS="$2"; shift 2 ;;
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
DB=push_bench_projections_$RUN
BASE="${POSTGRES_URL%/*}"
psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
WORK="$(mktemp -d)"
trap 'psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
export POSTGRES_URL="$BASE/$DB"
"$BIN/pushctl" migrate >/dev/null
export PUSH_TOPIC_MESSAGE_RESULTS="$RESULTS_TOPIC" PUSH_TOPIC_MESSAGE_RESULTS_PARTITIONS=12
export PUSH_TOPIC_TRACKING="$TRACKING_TOPIC" PUSH_TOPIC_TRACKING_PARTITIONS=12
# Topics the broad-log projection also reads; empty here.
export PUSH_TOPIC_APNS_MESSAGES="bench.apns.$RUN" PUSH_TOPIC_FCM_MESSAGES="bench.fcm.$RUN"
"$BIN/pushctl" topics create >/dev/null

log "producing $RESULTS results and $HITS hits"
.local/venv/bin/python - "$RESULTS" "$HITS" "$WORK" <<'PY'
import json, sys, uuid, random
from datetime import datetime, timezone, timedelta
results, hits, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
delivery = "bench-delivery"
app = str(uuid.uuid4())
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
PY
kcat -P -b "$KAFKA_BROKERS" -t "$RESULTS_TOPIC" -K $'\t' -z lz4 <"$WORK/results"
kcat -P -b "$KAFKA_BROKERS" -t "$TRACKING_TOPIC" -K $'\t' -z lz4 <"$WORK/hits"

# Runs one projection's replay; prints "<records> <seconds> <records/s>" from pushctl's line.
replay() {
    local output
    output="$("$BIN/pushctl" projections replay --only "$1" --quiet-ms 3000 --timeout 1800)"
    printf '%s\n' "$output" >&2
    printf '%s\n' "$output" | sed -n 's/^replay: \([0-9]*\) records projected in \([0-9.]*\) s, \([0-9]*\) records\/s$/\1 \2 \3/p'
}
# Loads the projection's rows into an empty copy of its table; prints the seconds psql took.
copy_rows() {
    local table="$1"
    psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_URL" -c "\\copy (SELECT * FROM push.$table) TO '$WORK/$table.copy'" \
        -c "CREATE TABLE push.bench_$table (LIKE push.$table INCLUDING ALL)" >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_URL" -c "\\timing on" -c "\\copy push.bench_$table FROM '$WORK/$table.copy'" |
        awk '/^Time:/ { printf "%.3f\n", $2 / 1000 }'
}

log "replaying broad-log"
read -r BL_RECORDS BL_SECONDS BL_RATE < <(replay broad-log)
log "replaying tracking-log"
read -r TL_RECORDS TL_SECONDS TL_RATE < <(replay tracking-log)
BL_ROWS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT count(*) FROM push.broad_log")"
TL_ROWS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT count(*) FROM push.tracking_log")"
[[ "$BL_ROWS" == "$RESULTS" ]] || { echo "bench: broad_log has $BL_ROWS rows, expected $RESULTS" >&2; exit 1; }
[[ "$TL_ROWS" == "$HITS" ]] || { echo "bench: tracking_log has $TL_ROWS rows, expected $HITS" >&2; exit 1; }
INDICATORS="$(psql -X -tA "$POSTGRES_URL" -c "SELECT sent || ' sent, ' || impressions || ' impressions, ' || opens || ' opens' FROM push.delivery_indicators WHERE delivery_id = 'bench-delivery'")"
log "copying the same rows with psql"
BL_COPY="$(copy_rows broad_log)"
TL_COPY="$(copy_rows tracking_log)"

echo
echo "bench: $RESULTS MessageSent and $HITS TrackingHitRecorded events, 12 partitions each; indicators: $INDICATORS"
printf '%-14s %10s %10s %12s %12s %10s %8s\n' table rows "replay s" "events/s" "\\copy s" "rows/s" ratio
awk -v t=broad_log -v n="$BL_ROWS" -v s="$BL_SECONDS" -v r="$BL_RATE" -v c="$BL_COPY" 'BEGIN { printf "%-14s %10d %10.2f %12d %12.3f %10d %8.3f\n", t, n, s, r, c, n / c, r / (n / c) }'
awk -v t=tracking_log -v n="$TL_ROWS" -v s="$TL_SECONDS" -v r="$TL_RATE" -v c="$TL_COPY" 'BEGIN { printf "%-14s %10d %10.2f %12d %12.3f %10d %8.3f\n", t, n, s, r, c, n / c, r / (n / c) }'

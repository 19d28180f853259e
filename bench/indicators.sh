#!/usr/bin/env bash
# What the incremental delivery indicators cost and save, in PostgreSQL alone (a scratch
# database on the local stack's server, dropped at the end):
#   - a broad_log result batch (N messages of one delivery moving from pending to sent), with the
#     statement as it was before migration 6 and with the indicator counters in the same
#     statement (the CTE of BroadLogProjection);
#   - reading one delivery's indicators (key lookup on the view) against recounting them from
#     broad_log (what a view over the logs would do at every query).
# The statements mirror Services/DeliveryPlanning/PushPlanning/BroadLogProjection.swift, with the batch selected
# from the table instead of bound as arrays.
#
#   bench/indicators.sh [--messages 1000000] [--batch 10000] [--batches 5]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
MESSAGES=1000000 BATCH=10000 BATCHES=5
while [[ $# -gt 0 ]]; do
    case "$1" in
        --messages) MESSAGES="$2"; shift 2 ;;
        --batch) BATCH="$2"; shift 2 ;;
        --batches) BATCHES="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

scripts/stack up >&2
# shellcheck disable=SC1091
source .local/stack.env
swift build --product pushctl >&2
BIN="$(swift build --show-bin-path)"
DB=push_bench_indicators
BASE="${POSTGRES_URL%/*}"
psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
trap 'psql -X -q "$POSTGRES_URL" -c "DROP DATABASE IF EXISTS $DB"' EXIT
POSTGRES_URL="$BASE/$DB" "$BIN/pushctl" migrate >/dev/null
run() { psql -X -q -v ON_ERROR_STOP=1 "$BASE/$DB" "$@"; }

echo "bench: loading $MESSAGES pending messages of one delivery" >&2
run -c "INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, platform, status, attempts, created_at, updated_at)
        SELECT gen_random_uuid(), 'bench', gen_random_uuid(), 't' || g, 'ios', 'pending', 0, now(), now() FROM generate_series(1, $MESSAGES) g" \
    -c "VACUUM ANALYZE push.broad_log"

BATCH_SOURCE="SELECT message_id, delivery_id, app_id, registration_token, platform, 'sent', NULL, NULL, 'p', 1, now(), now(), now()
    FROM (SELECT * FROM push.broad_log WHERE delivery_id = 'bench' AND status = 'pending' LIMIT $BATCH) x"
UPSERT="INSERT INTO push.broad_log AS b (message_id, delivery_id, app_id, registration_token, platform, status, failure_type,
                                    failure_reason, provider_message_id, attempts, created_at, updated_at, sent_at)
    $BATCH_SOURCE
    ON CONFLICT (message_id) DO UPDATE SET status = excluded.status, failure_type = excluded.failure_type,
        failure_reason = excluded.failure_reason, provider_message_id = excluded.provider_message_id,
        attempts = excluded.attempts, updated_at = excluded.updated_at, sent_at = excluded.sent_at
    WHERE b.status = 'pending'"
PLAIN="$UPSERT;"
COUNTED="WITH changed AS ($UPSERT RETURNING b.delivery_id, b.status, b.failure_type)
    INSERT INTO push.delivery_indicator_counts AS c (delivery_id, sent, failed, failed_hard, failed_soft, failed_ignored, expired, updated_at)
    SELECT delivery_id, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
           count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
           count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired'), now()
    FROM changed GROUP BY delivery_id ORDER BY delivery_id
    ON CONFLICT (delivery_id) DO UPDATE SET sent = c.sent + excluded.sent, failed = c.failed + excluded.failed,
        failed_hard = c.failed_hard + excluded.failed_hard, failed_soft = c.failed_soft + excluded.failed_soft,
        failed_ignored = c.failed_ignored + excluded.failed_ignored, expired = c.expired + excluded.expired,
        updated_at = excluded.updated_at;"
LOOKUP="SELECT * FROM push.delivery_indicators WHERE delivery_id = 'bench';"
RECOUNT="SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
           count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
           count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired')
    FROM push.broad_log WHERE delivery_id = 'bench';"

# Runs a statement BATCHES times in one session; prints the median and the max in ms.
measure() {
    local label="$1" sql="$2" script
    script="\\timing on"$'\n'
    for _ in $(seq "$BATCHES"); do script+="$sql"$'\n'; done
    printf '%s\n' "$script" | run -o /dev/null | awk '/^Time:/ { print $2 }' | sort -n | awk -v label="$label" '{ t[NR] = $1 } END {
        printf "%-48s median %8.2f ms   max %8.2f ms   (%d runs)\n", label, t[int((NR + 1) / 2)], t[NR], NR }'
}

echo "bench: $BATCHES batches of $BATCH results each, $MESSAGES messages in the delivery"
measure "result batch, broad_log only (before)" "$PLAIN"
measure "result batch, broad_log + indicator counters" "$COUNTED"
measure "indicators: key lookup on the view" "$LOOKUP"
measure "indicators: recount from broad_log" "$RECOUNT"
run -c "SELECT sent AS counted_sent_expect_batch_times_batches FROM push.delivery_indicators WHERE delivery_id = 'bench'"

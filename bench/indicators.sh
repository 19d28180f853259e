#!/usr/bin/env bash
# What the incremental delivery indicators cost and save, in PostgreSQL alone (a scratch
# database on the local stack's server, dropped at the end):
#   - a broad_log result batch (N messages of one delivery moving from pending to sent), on an
#     unpartitioned copy of the table without the counters (the table and statement as they were
#     before migrations 6 and 18), and on the partitioned table with the indicator counters in the
#     same statement (the CTE of BroadLogProjection), plus the per-batch statement that fixes the
#     deliveries' partition keys;
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
# broad_log is partitioned by the delivery's month (migration 18): the delivery's key row, then
# its messages; broad_log_flat is an unpartitioned copy (primary key message_id, the same
# indexes), the table as it was before migration 18, for the comparison.
run -c "INSERT INTO push.broad_log_deliveries (delivery_id, log_month) VALUES ('bench', date_trunc('month', now() AT TIME ZONE 'UTC')::date)" \
    -c "INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, token_digest, platform, status, attempts, created_at, updated_at, log_month)
        SELECT gen_random_uuid(), 'bench', gen_random_uuid(), 't' || g, push.token_digest('t' || g), 'ios', 'pending', 0, now(), now(), date_trunc('month', now() AT TIME ZONE 'UTC')::date
        FROM generate_series(1, $MESSAGES) g" \
    -c "CREATE TABLE push.broad_log_flat (LIKE push.broad_log INCLUDING DEFAULTS INCLUDING CONSTRAINTS)" \
    -c "INSERT INTO push.broad_log_flat SELECT * FROM push.broad_log" \
    -c "ALTER TABLE push.broad_log_flat ADD PRIMARY KEY (message_id)" \
    -c "CREATE INDEX ON push.broad_log_flat (delivery_id, status)" -c "CREATE INDEX ON push.broad_log_flat (app_id, registration_token)" \
    -c "CREATE INDEX ON push.broad_log_flat (broad_log_id)" \
    -c "VACUUM ANALYZE push.broad_log" -c "VACUUM ANALYZE push.broad_log_flat" -c "VACUUM ANALYZE push.broad_log_deliveries"

# upsert TABLE SOURCE CONFLICT: the result upsert of BroadLogProjection on TABLE.
upsert() {
    echo "INSERT INTO push.$1 AS b (message_id, delivery_id, app_id, registration_token, platform, status, failure_type,
                                    failure_reason, provider_message_id, attempts, created_at, updated_at, sent_at, log_month)
    $2
    ON CONFLICT ($3) DO UPDATE SET status = excluded.status, failure_type = excluded.failure_type,
        failure_reason = excluded.failure_reason, provider_message_id = excluded.provider_message_id,
        attempts = excluded.attempts, updated_at = excluded.updated_at, sent_at = excluded.sent_at
    WHERE b.status = 'pending'"
}
# The partitioned table's batch takes its key from broad_log_deliveries, as the projection does.
PART_SOURCE="SELECT x.message_id, x.delivery_id, x.app_id, x.registration_token, x.platform, 'sent', NULL, NULL, 'p', 1, now(), now(), now(), k.log_month
    FROM (SELECT * FROM push.broad_log WHERE delivery_id = 'bench' AND status = 'pending' LIMIT $BATCH) x
    JOIN push.broad_log_deliveries k ON k.delivery_id = x.delivery_id"
FLAT_SOURCE="SELECT message_id, delivery_id, app_id, registration_token, platform, 'sent', NULL, NULL, 'p', 1, now(), now(), now(), log_month
    FROM (SELECT * FROM push.broad_log_flat WHERE delivery_id = 'bench' AND status = 'pending' LIMIT $BATCH) x"
UPSERT="$(upsert broad_log "$PART_SOURCE" "message_id, log_month")"
PLAIN="$(upsert broad_log_flat "$FLAT_SOURCE" "message_id");"
# The statement that fixes the batch's deliveries' keys (one per batch; a conflict here).
KEYS="INSERT INTO push.broad_log_deliveries (delivery_id, log_month)
    SELECT x.d, date_trunc('month', coalesce(dl.send_at, x.at) AT TIME ZONE 'UTC')::date
    FROM unnest(ARRAY['bench'], ARRAY[now()]) AS x(d, at) LEFT JOIN push.deliveries dl ON dl.delivery_id = x.d
    ORDER BY x.d ON CONFLICT (delivery_id) DO NOTHING;"
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
FLAT_COUNTED="WITH changed AS ($(upsert broad_log_flat "$FLAT_SOURCE" "message_id") RETURNING b.delivery_id, b.status, b.failure_type)
    INSERT INTO push.delivery_indicator_counts AS c (delivery_id, sent, failed, failed_hard, failed_soft, failed_ignored, expired, updated_at)
    SELECT delivery_id, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
           count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
           count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired'), now()
    FROM changed GROUP BY delivery_id ORDER BY delivery_id
    ON CONFLICT (delivery_id) DO UPDATE SET sent = c.sent + excluded.sent, failed = c.failed + excluded.failed,
        failed_hard = c.failed_hard + excluded.failed_hard, failed_soft = c.failed_soft + excluded.failed_soft,
        failed_ignored = c.failed_ignored + excluded.failed_ignored, expired = c.expired + excluded.expired,
        updated_at = excluded.updated_at;"
PART_PLAIN="$UPSERT;"
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
measure "result batch, unpartitioned, no counters" "$PLAIN"
measure "result batch, unpartitioned + indicator counters" "$FLAT_COUNTED"
measure "result batch, partitioned, no counters" "$PART_PLAIN"
measure "result batch, partitioned + indicator counters" "$COUNTED"
measure "the batch's delivery keys (broad_log_deliveries)" "$KEYS"
measure "indicators: key lookup on the view" "$LOOKUP"
measure "indicators: recount from broad_log" "$RECOUNT"
run -c "SELECT sent AS counted_sent_expect_2_times_batch_times_batches FROM push.delivery_indicators WHERE delivery_id = 'bench'"

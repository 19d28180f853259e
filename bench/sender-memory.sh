#!/usr/bin/env bash
# Sender memory benchmark: the release-built apns-sender / fcm-sender draining a backlog of N
# message records (default 1,000,000) from its message topic to the project's simulator, its
# resident memory sampled while it drains. Prints the peak RSS against the 64 MiB goal (issue 24)
# and the messages/s it reached, so the speed cost of a memory setting is visible in the same run.
#
#   bench/sender-memory.sh [--provider apns|fcm|both] [--messages N] [--latency-ms L]
#                          [--set VAR=VALUE]... [--no-build]
#
#   --provider     which sender (default both, one after the other)
#   --messages N   records on the message topic before the sender starts (default 1000000)
#   --latency-ms L added by the simulator to every answer (default 0: as fast as the sender goes)
#   --set VAR=VAL  an environment variable for the sender (repeatable), e.g.
#                  --set APNS_SENDER_FETCH_QUEUE_KB=8192 --set MALLOC_ARENA_MAX=8: the trade-off
#                  of a memory knob, measured in the same run's terms
#   --no-build     use the existing .build-bench/release binaries
#   --postgres-url the database of the run's app and credential (default the stack's)
#
# What runs, per provider:
#   1. Not timed: a fresh key, the simulator (release, TLS, a log of the newest 10,000), the run's topics (message topic 24
#      partitions, retry topic 12), then `sender-bench setup` publishes the N records with the
#      project's producer and event types, the planner's record shape (APNs about 600 bytes,
#      FCM about 800 bytes per record; kcat cannot make these, they need the app and its sealed
#      credential in PostgreSQL): the whole backlog is on the broker before the sender starts.
#   2. The sender starts with its defaults (plus --set) and drains the backlog. Every 200 ms:
#      VmRSS from /proc/PID/status (its peak is printed), push_sender_messages_total{outcome=
#      "sent"} from /metrics (counted once the outcome events are stored) and the bulk lane's
#      push_sender_held_records (its peak is printed: what MAX_HELD let it hold). Messages/s from the
#      first sample above 0 to the sample reaching N (the group join is not measured). At the
#      sample of the highest RSS, where the resident memory is (/proc/PID/smaps: the main heap,
#      the other anonymous mappings: jemalloc's arenas and the thread stacks, and the mapped
#      files: code); at the end VmHWM, the kernel's own peak (it catches what falls between
#      samples), which is the figure held against the goal.
#   3. The simulator's counters are checked: N notifications accepted (FCM's counter adds its
#      OAuth token requests; the newest 10,000 in its log all distinct).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

PROVIDERS="apns fcm"
MESSAGES=1000000
LATENCY=0
BUILD=1
SETTINGS=()
DATABASE=""
GOAL_MIB=64
COMMAND_LINE="bench/sender-memory.sh $*"
die() { echo "sender-memory.sh: error: $*" >&2; exit 1; }
log() { echo "sender-memory.sh: $*" >&2; }

while (($#)); do
    case "$1" in
        --provider) case "${2:?}" in apns|fcm) PROVIDERS="$2" ;; both) PROVIDERS="apns fcm" ;; *) die "--provider apns|fcm|both" ;; esac; shift 2 ;;
        --messages) MESSAGES="${2:?}"; shift 2 ;;
        --latency-ms) LATENCY="${2:?}"; shift 2 ;;
        --set) [[ ${2:?} == *=* ]] || die "--set takes VAR=VALUE, got $2"; SETTINGS+=("$2"); shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --postgres-url) DATABASE="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,35p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
done
[[ $MESSAGES =~ ^[1-9][0-9]*$ ]] || die "--messages must be a positive integer, got $MESSAGES"

command -v openssl >/dev/null || die "openssl is missing"
command -v bc >/dev/null || apt-get install -y -qq bc >/dev/null
# A stack already up (its broker answering) is used as it is; otherwise it is started.
# shellcheck disable=SC1091
if ! { [[ -f .local/stack.env ]] && source .local/stack.env && (exec 3<>"/dev/tcp/${KAFKA_BROKERS%:*}/${KAFKA_BROKERS##*:}") 2>/dev/null; }; then
    scripts/stack up >&2
    source .local/stack.env
fi
[[ -n $DATABASE ]] && export POSTGRES_URL="$DATABASE"

if ((BUILD)); then
    for product in apns-sender fcm-sender apns-simulator fcm-simulator sender-bench pushctl; do
        log "building $product (release, --scratch-path .build-bench)"
        swift build -c release --scratch-path .build-bench --product "$product" >&2
    done
fi
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)"

RUN="$(date +%d%H%M%S)"
WORK="$ROOT/.local/bench-sender-memory-$RUN"
mkdir -p "$WORK"
export PUSH_CREDENTIALS_KEY; PUSH_CREDENTIALS_KEY="$(openssl rand -base64 32)"
export LOG_LEVEL=warning KAFKA_SESSION_TIMEOUT_MS=6000
PIDS=()
# The run's topics are deleted after each provider and on exit (Tansu keeps every record in memory).
delete_run_topics() {
    "$ROOT/.local/venv/bin/python" - "$KAFKA_BROKERS" "$RUN" <<'EOF' >&2 || log "could not delete the run's topics"
import sys
from confluent_kafka.admin import AdminClient
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
mine = [t for t in admin.list_topics(timeout=10).topics if t.startswith("bench.") and f".{sys.argv[2]}" in t]
for topic, future in (admin.delete_topics(mine, operation_timeout=30).items() if mine else []):
    future.result()
EOF
}
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; delete_run_topics; }
trap cleanup EXIT

rss_mib() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
hwm_mib() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# Messages sent (both lanes) and records held by the bulk lane, from /metrics.
sent_and_held() {
    curl -fs "http://127.0.0.1:$1/metrics" 2>/dev/null \
        | awk '/^push_sender_messages_total/ && /outcome="sent"/ { sum += $NF }
               /^push_sender_held_records/ && /lane="bulk"/ { held = $NF }
               END { printf "%d %d", sum, held }' || true
}
# Resident MiB of the main heap, of the other anonymous mappings (the allocator's arenas: the
# services link jemalloc; thread stacks) and of the mapped files (code, libraries), and how many
# anonymous mappings hold more than 1 MiB.
where_mib() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6 ? $6 : "") }
         /^Rss:/ { if (name == "[heap]") heap += $2; else if (name == "" || name ~ /^\[anon/) { anon += $2; if ($2 > 1024) big++ } else files += $2 }
         END { printf "%d %d %d %d", heap / 1024, anon / 1024, files / 1024, big }' "/proc/$1/smaps" 2>/dev/null || echo "0 0 0 0"
}

declare -A RESULT
echo "sender memory benchmark: $MESSAGES messages of backlog per provider, simulator latency ${LATENCY} ms, goal <= $GOAL_MIB MiB"
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "code: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- Shared Services bench 2>/dev/null || echo ' + uncommitted changes')"
((${#SETTINGS[@]})) && echo "settings: ${SETTINGS[*]}"

for provider in $PROVIDERS; do
    log "== $provider"
    dir="$WORK/$provider"; mkdir -p "$dir"
    CA="$dir/ca.pem"
    upper="$(echo "$provider" | tr a-z A-Z)"
    # 1. key, simulator, topics, app and the backlog
    if [[ $provider == apns ]]; then
        openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$dir/key.p8"
        credential="$dir/key.p8"
        "$BIN/apns-simulator" --port 0 --port-file "$dir/port" --ca-out "$CA" --log-capacity 10000 \
            --latency-ms "$LATENCY" --log-level warning >"$dir/simulator.log" 2>&1 &
    else
        openssl genrsa 2048 2>/dev/null >"$dir/rsa.pem"
        python3 - "$dir/rsa.pem" "$dir/service-account.json" <<'EOF'
import json, sys
key = open(sys.argv[1]).read()
json.dump({"type": "service_account", "project_id": "bench-project", "private_key_id": "bench1",
           "private_key": key, "client_email": "sender@bench-project.iam.gserviceaccount.com",
           "token_uri": "https://oauth2.googleapis.com/token"}, open(sys.argv[2], "w"))
EOF
        credential="$dir/service-account.json"
        "$BIN/fcm-simulator" --port 0 --port-file "$dir/port" --ca-out "$CA" --log-capacity 10000 \
            --service-account "$credential" --latency-ms "$LATENCY" --log-level warning >"$dir/simulator.log" 2>&1 &
    fi
    SIM_PID=$!; PIDS+=("$SIM_PID")
    for _ in $(seq 1 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
    [[ -s "$dir/port" ]] || die "the $provider simulator did not start; see $dir/simulator.log"
    PORT="$(cat "$dir/port")"

    export PUSH_TOPIC_${upper}_MESSAGES="bench.$provider.$RUN" PUSH_TOPIC_${upper}_RETRIES="bench.$provider-retries.$RUN"
    export PUSH_TOPIC_MESSAGE_RESULTS="bench.results.$provider.$RUN" PUSH_TOPIC_SUBSCRIPTIONS="bench.subscriptions.$provider.$RUN"
    "$BIN/pushctl" topics create >/dev/null
    log "publishing $MESSAGES records"
    "$BIN/sender-bench" setup --provider "$provider" --messages "$MESSAGES" --credential "$credential" --out "$dir" >&2

    # 2. the sender drains the backlog
    OPS_PORT=$((19500 + RANDOM % 400))
    if [[ $provider == apns ]]; then
        env APNS_PRODUCTION_URL="https://127.0.0.1:$PORT" APNS_CA_FILE="$CA" APNS_SENDER_GROUP="bench-apns-$RUN" PUSH_OPS_PORT=$OPS_PORT \
            "${SETTINGS[@]}" "$BIN/apns-sender" >"$dir/sender.log" 2>&1 &
    else
        env FCM_BASE_URL="https://127.0.0.1:$PORT" FCM_TOKEN_URL="https://127.0.0.1:$PORT/token" FCM_CA_FILE="$CA" \
            FCM_SENDER_GROUP="bench-fcm-$RUN" PUSH_OPS_PORT=$OPS_PORT "${SETTINGS[@]}" "$BIN/fcm-sender" >"$dir/sender.log" 2>&1 &
    fi
    SENDER_PID=$!; PIDS+=("$SENDER_PID")
    peak=0; peak_where="0 0 0 0"; start=""; start_count=0; last=0; end=""; peak_held=0
    deadline=$((SECONDS + 1800))
    while ((SECONDS < deadline)); do
        kill -0 "$SENDER_PID" 2>/dev/null || die "the $provider sender exited; see $dir/sender.log"
        now="$(date +%s.%N)"; read -r count held <<<"$(sent_and_held "$OPS_PORT")"; count="${count:-0}"; held="${held:-0}"
        ((held > peak_held)) && peak_held=$held
        rss="$(rss_mib "$SENDER_PID")"
        if ((rss > peak)); then peak=$rss; peak_where="$(where_mib "$SENDER_PID")"; fi
        if [[ -z $start ]] && ((count > 0)); then start=$now; start_count=$count; fi
        if ((count >= MESSAGES)); then end=$now; break; fi
        if [[ -n $start ]] && ((count / 50000 != last / 50000)); then
            printf '  %6.1f s  %8d sent  RSS %d MiB\n' "$(echo "$now - $start" | bc)" "$count" "$rss" >&2
        fi
        last=$count
        sleep 0.2
    done
    [[ -n $end ]] || die "the $provider sender did not send $MESSAGES messages within 1800 s (sent $last); see $dir/sender.log"
    hwm="$(hwm_mib "$SENDER_PID")"
    read -r heap anon files bigmaps <<<"$peak_where"
    kill -TERM "$SENDER_PID"; wait "$SENDER_PID" 2>/dev/null || true
    seconds="$(echo "$end - $start" | bc)"
    rate="$(echo "($MESSAGES - $start_count) / $seconds" | bc)"
    verdict=$([[ $hwm -le $GOAL_MIB ]] && echo "met" || echo "missed")

    # 3. what reached the simulator: its counters (its log of a million entries takes it
    #    gigabytes to serialize; it keeps the newest 10,000, checked for duplicates)
    counters="$(curl -fsS --http2 --cacert "$CA" "https://127.0.0.1:$PORT/_control/counters")"
    accepted="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["accepted"])' "$counters")"
    curl -fsS --http2 --cacert "$CA" "https://127.0.0.1:$PORT/_control/log?limit=10000" >"$dir/log.json"
    distinct="$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["entries"]; print(len(e) == len({x.get("mId") for x in e}))' "$dir/log.json")"
    echo "simulator: $accepted notifications accepted; the newest 10,000 distinct: $distinct" >&2
    RESULT[$provider]="$(printf '%-5s %9d %10d %8d %6s %9d %10d %9d %9d %7d' "$provider" "$rate" "$peak" "$hwm" "$verdict" "$peak_held" "$heap" "$anon" "$files" "$bigmaps")"
    printf '%s: %d messages/s; peak RSS %d MiB, VmHWM %d MiB (goal %d: %s); most records held %d; at the peak: heap %d MiB, other anonymous %d MiB (%d mappings > 1 MiB), files %d MiB\n' \
        "$provider" "$rate" "$peak" "$hwm" "$GOAL_MIB" "$verdict" "$peak_held" "$heap" "$anon" "$bigmaps" "$files"
    # (FCM's counter also counts the OAuth token requests: one, or a few if a token expired)
    [[ $accepted -ge $MESSAGES && $accepted -le $((MESSAGES + 10)) && $distinct == True ]] || die "the $provider simulator accepted $accepted notifications of $MESSAGES (newest distinct: $distinct)"
    kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true
    delete_run_topics
done

echo
echo "command: $COMMAND_LINE"
printf '%-5s %9s %10s %8s %6s %9s %10s %9s %9s %7s\n' provider "sent/s" "peak MiB" "HWM MiB" "goal" "held" "heap MiB" "anon MiB" "files MiB" "maps>1MiB"
for provider in $PROVIDERS; do echo "${RESULT[$provider]}"; done

#!/usr/bin/env bash
# Sender benchmark: the release-built apns-sender / fcm-sender sending N message records from the
# topic to the project's simulator (records on the topic -> HTTP/2 over TLS -> result events
# stored by the broker), against h2load sending the same requests (same payload, same headers,
# same connections and streams) to the same simulator in the same run. Prints both rates, their
# ratio and the sender's memory.
#
#   bench/senders.sh [--provider apns|fcm|both] [--messages N] [--latency-ms L] [--no-build]
#
#   --provider     which sender (default both, one after the other)
#   --messages N   records per provider (default 100000)
#   --latency-ms L added by the simulator to every answer (default 0: the sender's own cost;
#                  with latency, throughput is bounded by streams / latency on both sides)
#   --no-build     use the existing .build-bench/release binaries
#   --perf         also sample the sender with `perf record` while it sends and print its top
#                  symbols (data kept in the run's directory; perturbs the figures);
#                  PERF_FREQUENCY sets its sampling rate in Hz (default 199)
#
# What runs, per provider:
#   1. Not timed: a fresh key (.p8 with openssl, or an RSA service account), the simulator
#      (release, TLS with a generated CA, log of every accepted notification, APNs token auth off
#      so h2load needs no JWT; FCM with the service account so both sides fetch an OAuth token),
#      topics of the run (message topic 24 partitions, retry topic 12), then `sender-bench setup`:
#      an app whose active credential is the key (sealed with PUSH_CREDENTIALS_KEY as the admin
#      API does) and N message records published with the project's producer and event types.
#   2. The sender starts (its settings' defaults: APNs 2 connections and 1000 requests in flight,
#      FCM 2 connections and 200) and sends the backlog. Clock: push_sender_messages_total
#      {outcome="sent"} on its /metrics, counted once the outcome events are stored by the broker,
#      sampled every 200 ms: from the first sample above 0 to the sample reaching N (the group
#      join, about 3 s on Tansu, is not measured). VmRSS sampled at the same time (peak) and
#      VmHWM at the end; CPU seconds of the sender and the simulator over the window.
#   3. The simulator's log is checked: N notifications, N distinct _mId.
#   4. Ceiling: the simulator's log and counters are reset, then h2load -n N -c <connections>
#      -m <in flight / connections> -t 1 with the first record's payload and the sender's headers
#      (APNs: apns-topic, apns-push-type, apns-priority, apns-expiration, authorization of a JWT's
#      length; FCM: content-type and the bearer access token from the simulator's token endpoint).
#      Its own "req/s" figure; all 2xx or the script fails.
#   5. The project's HTTP/2 client alone (`sender-bench client`): h2load's request, connections and
#      streams, through PushHTTP2 (callbacks, as the senders send), after another reset.
#   6. Time per request (ms): the sender's mean send time (push_sender_send_duration_seconds in
#      its /metrics, kept as metrics.txt) and h2load's mean "time for request". With
#      --latency-ms, equal times and rates mean the sender keeps its streams as full as h2load.
#   7. CPU per message (µs): the sender, the simulator and the Tansu broker over the sender's
#      window; h2load (GNU time) and the simulator over h2load's run; the HTTP/2 client (its own
#      getrusage) and the simulator over its run. "client" is h2load's CPU per
#      request over the sender's per message: the cost of the sender against nghttp2's client,
#      whatever the two shared cores let through. The rates' ratio also carries the broker,
#      which only the sender's run pays for (docs/benchmarks.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

PROVIDERS="apns fcm"
MESSAGES=100000
LATENCY=0
BUILD=1
PERF=0
COMMAND_LINE="bench/senders.sh $*"
die() { echo "senders.sh: error: $*" >&2; exit 1; }
log() { echo "senders.sh: $*" >&2; }

while (($#)); do
    case "$1" in
        --provider) case "${2:?}" in apns|fcm) PROVIDERS="$2" ;; both) PROVIDERS="apns fcm" ;; *) die "--provider apns|fcm|both" ;; esac; shift 2 ;;
        --messages) MESSAGES="${2:?}"; shift 2 ;;
        --latency-ms) LATENCY="${2:?}"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --perf) PERF=1; shift ;;
        -h|--help) sed -n '2,45p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1" ;;
    esac
done

command -v h2load >/dev/null || { log "installing nghttp2-client (h2load)"; apt-get install -y -qq nghttp2-client >/dev/null; }
command -v openssl >/dev/null || die "openssl is missing"
command -v bc >/dev/null || apt-get install -y -qq bc >/dev/null
[[ -x /usr/bin/time ]] || { log "installing time (GNU time, h2load's CPU)"; apt-get install -y -qq time >/dev/null; }
scripts/stack up >&2
# shellcheck disable=SC1091
source .local/stack.env

if ((BUILD)); then
    for product in apns-sender fcm-sender apns-simulator fcm-simulator sender-bench pushctl; do
        log "building $product (release, --scratch-path .build-bench)"
        swift build -c release --scratch-path .build-bench --product "$product" >&2
    done
fi
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)"

RUN="$(date +%d%H%M%S)"
WORK="$ROOT/.local/bench-senders-$RUN"
mkdir -p "$WORK"
export PUSH_CREDENTIALS_KEY; PUSH_CREDENTIALS_KEY="$(openssl rand -base64 32)"
export LOG_LEVEL=warning KAFKA_SESSION_TIMEOUT_MS=6000
PIDS=()
# The run's topics (and their dead-letter topics) are deleted after each provider and on exit:
# Tansu keeps every record in memory, and its CPU per message grew with what earlier runs left
# (755 MiB resident after twenty runs; broker µs per APNs message 8.5 fresh, 16 to 19 then).
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

cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mib() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
hwm_mib() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
sent_count() {
    curl -fs "http://127.0.0.1:$1/metrics" 2>/dev/null \
        | awk '/^push_sender_messages_total/ && /outcome="sent"/ { sum += $NF } END { printf "%d", sum }' || echo 0
}
control() { curl -fsS --http2 --cacert "$CA" "$@"; }

declare -A RESULT COST TIME
BROKER_PID="$(pgrep -f "tansu broker --listener-url tcp://${KAFKA_BROKERS}" | head -n 1)"
[[ -n $BROKER_PID ]] || die "no Tansu broker listening on $KAFKA_BROKERS"
echo "sender benchmark: $MESSAGES messages per provider, simulator latency ${LATENCY} ms"
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); h2load $(h2load --version | head -1 | awk '{print $2}')"
echo "code: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Shared Services bench || echo ' + uncommitted changes')"

for provider in $PROVIDERS; do
    log "== $provider"
    dir="$WORK/$provider"; mkdir -p "$dir"
    CA="$dir/ca.pem"
    upper="$(echo "$provider" | tr a-z A-Z)"
    # 1. key, simulator, topics, app and records
    if [[ $provider == apns ]]; then
        openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$dir/key.p8"
        credential="$dir/key.p8"
        "$BIN/apns-simulator" --port 0 --port-file "$dir/port" --ca-out "$CA" --log-capacity $((MESSAGES + 1000)) \
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
        "$BIN/fcm-simulator" --port 0 --port-file "$dir/port" --ca-out "$CA" --log-capacity $((MESSAGES + 1000)) \
            --service-account "$credential" --latency-ms "$LATENCY" --log-level warning >"$dir/simulator.log" 2>&1 &
    fi
    SIM_PID=$!; PIDS+=("$SIM_PID")
    for _ in $(seq 1 100); do [[ -s "$dir/port" ]] && break; sleep 0.1; done
    [[ -s "$dir/port" ]] || die "the $provider simulator did not start; see $dir/simulator.log"
    PORT="$(cat "$dir/port")"

    export PUSH_TOPIC_${upper}_MESSAGES="bench.$provider.$RUN" PUSH_TOPIC_${upper}_RETRIES="bench.$provider-retries.$RUN"
    export PUSH_TOPIC_MESSAGE_RESULTS="bench.results.$provider.$RUN" PUSH_TOPIC_SUBSCRIPTIONS="bench.subscriptions.$provider.$RUN"
    "$BIN/pushctl" topics create >/dev/null
    "$BIN/sender-bench" setup --provider "$provider" --messages "$MESSAGES" --credential "$credential" --out "$dir" >&2

    # 2. the sender
    OPS_PORT=$((19500 + RANDOM % 400))
    if [[ $provider == apns ]]; then
        env APNS_PRODUCTION_URL="https://127.0.0.1:$PORT" APNS_CA_FILE="$CA" APNS_SENDER_GROUP="bench-apns-$RUN" PUSH_OPS_PORT=$OPS_PORT \
            "$BIN/apns-sender" >"$dir/sender.log" 2>&1 &
        connections=2; inflight=1000
    else
        env FCM_BASE_URL="https://127.0.0.1:$PORT" FCM_TOKEN_URL="https://127.0.0.1:$PORT/token" FCM_CA_FILE="$CA" \
            FCM_SENDER_GROUP="bench-fcm-$RUN" PUSH_OPS_PORT=$OPS_PORT "$BIN/fcm-sender" >"$dir/sender.log" 2>&1 &
        connections=2; inflight=200
    fi
    SENDER_PID=$!; PIDS+=("$SENDER_PID")
    if ((PERF)); then
        perf record -F ${PERF_FREQUENCY:-199} --call-graph dwarf,16384 -p "$SENDER_PID" -o "$dir/perf.data" >/dev/null 2>"$dir/perf.err" &
        PERF_PID=$!
    fi
    peak=0; start=""; start_count=0; last=0
    deadline=$((SECONDS + 600))
    while ((SECONDS < deadline)); do
        kill -0 "$SENDER_PID" 2>/dev/null || die "the $provider sender exited; see $dir/sender.log"
        now="$(date +%s.%N)"; count="$(sent_count "$OPS_PORT")"; count="${count:-0}"
        rss="$(rss_mib "$SENDER_PID")"; ((rss > peak)) && peak=$rss
        if [[ -z $start ]] && ((count > 0)); then
            start=$now; start_count=$count
            cpu_sender0="$(cpu_seconds "$SENDER_PID")"; cpu_sim0="$(cpu_seconds "$SIM_PID")"; cpu_broker0="$(cpu_seconds "$BROKER_PID")"
        fi
        if ((count >= MESSAGES)); then end=$now; break; fi
        if [[ -n $start ]] && (( $(echo "$now - $start > 0" | bc) )) && ((count != last)); then
            printf '  %6.1f s  %8d sent  RSS %d MiB\n' "$(echo "$now - $start" | bc)" "$count" "$rss" >&2
        fi
        last=$count
        sleep 0.2
    done
    [[ -n ${end:-} ]] || die "the $provider sender did not send $MESSAGES messages within 600 s (sent $last); see $dir/sender.log"
    cpu_sender="$(echo "$(cpu_seconds "$SENDER_PID") - $cpu_sender0" | bc)"; cpu_sim="$(echo "$(cpu_seconds "$SIM_PID") - $cpu_sim0" | bc)"
    cpu_broker="$(echo "$(cpu_seconds "$BROKER_PID") - $cpu_broker0" | bc)"
    hwm="$(hwm_mib "$SENDER_PID")"
    if ((PERF)); then kill -INT "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true; fi
    curl -fs "http://127.0.0.1:$OPS_PORT/metrics" >"$dir/metrics.txt" 2>/dev/null || true
    kill -TERM "$SENDER_PID"; wait "$SENDER_PID" 2>/dev/null || true
    if ((PERF)); then
        echo "perf: top symbols of the $provider sender (self time; data in $dir/perf.data)"
        perf report -i "$dir/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | awk 'NR <= 25'
        perf report -i "$dir/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | awk 'NR <= 10'
    fi
    seconds="$(echo "$end - $start" | bc)"
    rate="$(echo "($MESSAGES - $start_count) / $seconds" | bc)"

    # 3. what reached the simulator
    control "https://127.0.0.1:$PORT/_control/log?limit=$((MESSAGES + 1000))" >"$dir/log.json"
    python3 - "$dir/log.json" "$MESSAGES" <<'EOF' >&2 || die "the $provider simulator's log does not hold exactly $MESSAGES distinct messages"
import json, sys
log = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
ids = [e.get("mId") for e in log["entries"]]
print(f"simulator log: {log['count']} notifications, {len(set(ids))} distinct _mId")
sys.exit(0 if len(ids) == n and len(set(ids)) == n else 1)
EOF

    # 4. the ceiling: h2load, same requests, same connections and streams
    # (a reset returns the faults to the command line's: the latency stays)
    control -X POST "https://127.0.0.1:$PORT/_control/reset" >/dev/null
    streams=$((inflight / connections))
    headers=()
    while IFS= read -r line; do [[ -n $line ]] && headers+=(-H "$line"); done <"$dir/headers.txt"
    if [[ $provider == apns ]]; then
        # token auth is off in the simulator: a bearer of a real JWT's length (the sender's is ~200 bytes)
        headers+=(-H "authorization: bearer $(head -c 150 /dev/urandom | base64 -w0 | tr '+/' '-_' | cut -c1-200)")
        url="https://127.0.0.1:$PORT/3/device/f$(printf 'ab%.0s' {1..31})a"
    else
        token="$(curl -fsS --http2 --cacert "$CA" "https://127.0.0.1:$PORT/token" \
            -d "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=$(cat "$dir/assertion.txt")" \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"
        headers+=(-H "authorization: Bearer $token")
        url="https://127.0.0.1:$PORT/v1/projects/bench-project/messages:send"
    fi
    cpu_sim_h2load0="$(cpu_seconds "$SIM_PID")"
    /usr/bin/time -f '%U %S' -o "$dir/h2load.time" \
        h2load -n "$MESSAGES" -c "$connections" -m "$streams" -t 1 "${headers[@]}" -d "$dir/payload.json" "$url" >"$dir/h2load.txt" 2>&1 \
        || die "h2load failed; see $dir/h2load.txt"
    cpu_sim_h2load="$(echo "$(cpu_seconds "$SIM_PID") - $cpu_sim_h2load0" | bc)"
    cpu_h2load="$(awk 'END { print $1 + $2 }' "$dir/h2load.time")"
    h2rate="$(awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($i == "req/s,") print int($(i-1)) }' "$dir/h2load.txt")"
    h2ok="$(awk '/^status codes:/ { gsub(",", "", $3); print $3 }' "$dir/h2load.txt")"
    [[ $h2ok == "$MESSAGES" ]] || die "h2load: $h2ok of $MESSAGES answers were 2xx; see $dir/h2load.txt"
    payload_bytes="$(wc -c <"$dir/payload.json")"
    ratio="$(echo "scale=3; $rate / $h2rate" | bc)"

    # 5. the project's HTTP/2 client alone (sender-bench client): the same requests, connections
    #    and streams as h2load, through PushHTTP2 with callbacks as the senders send.
    control -X POST "https://127.0.0.1:$PORT/_control/reset" >/dev/null
    client_headers=()
    for ((i = 1; i < ${#headers[@]}; i += 2)); do client_headers+=(--header "${headers[i]}"); done
    cpu_sim_client0="$(cpu_seconds "$SIM_PID")"
    "$BIN/sender-bench" client --url "$url" --ca "$CA" "${client_headers[@]}" --payload "$dir/payload.json" \
        --requests "$MESSAGES" --connections "$connections" --streams "$streams" >"$dir/client.txt" 2>&1 \
        || die "sender-bench client failed; see $dir/client.txt"
    cpu_sim_client="$(echo "$(cpu_seconds "$SIM_PID") - $cpu_sim_client0" | bc)"
    client_rate="$(awk '/^client:/ { print $7 }' "$dir/client.txt")"
    cpu_client="$(awk '/^client:/ { print $10 }' "$dir/client.txt")"
    client_ratio="$(echo "scale=3; $client_rate / $h2rate" | bc)"

    send_mean="$(awk '/^push_sender_send_duration_seconds_sum/ { s = $NF } /^push_sender_send_duration_seconds_count/ { c = $NF }
        END { if (c > 0) printf "%.1f", 1000 * s / c; else print "-" }' "$dir/metrics.txt")"
    h2_mean="$(awk '/^time for request:/ { v = $6; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        printf "%.1f", v * (u == "s" ? 1000 : u == "us" ? 0.001 : 1) }' "$dir/h2load.txt")"
    TIME[$provider]="$(printf '%-5s %16s %16s' "$provider" "$send_mean" "$h2_mean")"
    RESULT[$provider]="$(printf '%-5s %9d %9d %7s %9d %7s %10d %8d %10s %12s %8s' "$provider" "$rate" "$h2rate" "$ratio" "$client_rate" "$client_ratio" "$peak" "$hwm" "$cpu_sender" "$cpu_sim" "$payload_bytes")"
    # CPU per message in microseconds: what each process spent during the sender's window and
    # during h2load's run. The sender's run also pays the broker (consuming the records,
    # storing the results); h2load's does not.
    # (the sender's window covers the messages after the first sample, h2load's all of them).
    window=$((MESSAGES - start_count))
    per() { echo "scale=1; $1 * 1000000 / $2" | bc; }
    COST[$provider]="$(printf '%-5s %12s %14s %12s %12s %20s %10s %18s %10s' "$provider" "$(per "$cpu_sender" $window)" "$(per "$cpu_sim" $window)" "$(per "$cpu_broker" $window)" \
        "$(per "$cpu_h2load" "$MESSAGES")" "$(per "$cpu_sim_h2load" "$MESSAGES")" "$(per "$cpu_client" "$MESSAGES")" "$(per "$cpu_sim_client" "$MESSAGES")" "$(echo "scale=3; ($cpu_h2load * $window) / ($cpu_sender * $MESSAGES)" | bc)")"
    printf '%s: sender %d messages/s (%d in %.3f s after the first result), h2load %d req/s, ratio %s; PushHTTP2 alone %d req/s (ratio %s); sender peak RSS %d MiB (VmHWM %d); CPU s sender %s, simulator %s; -c %d -m %d\n' \
        "$provider" "$rate" $((MESSAGES - start_count)) "$seconds" "$h2rate" "$ratio" "$client_rate" "$client_ratio" "$peak" "$hwm" "$cpu_sender" "$cpu_sim" "$connections" "$streams"
    kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true
    delete_run_topics
    unset end
done

echo
echo "command: $COMMAND_LINE"
printf '%-5s %9s %9s %7s %9s %7s %10s %8s %10s %12s %8s\n' provider "sender/s" "h2load/s" ratio "http2/s" ratio "peak MiB" "HWM MiB" "CPU sender" "CPU simulator" "payload"
for provider in $PROVIDERS; do echo "${RESULT[$provider]}"; done
echo
echo "time per request, ms (the sender's mean send; h2load's mean time for request)"
printf '%-5s %16s %16s\n' provider "sender" "h2load"
for provider in $PROVIDERS; do echo "${TIME[$provider]}"; done
echo
echo "CPU µs per message (sender's window | h2load's run); client ratio = h2load's CPU / the sender's"
printf '%-5s %12s %14s %12s %12s %20s %10s %18s %10s\n' provider sender "simulator" broker h2load "simulator (h2load)" http2 "simulator (http2)" "client"
for provider in $PROVIDERS; do echo "${COST[$provider]}"; done

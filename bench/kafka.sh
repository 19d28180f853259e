#!/usr/bin/env bash
# Kafka client benchmark: the project's Swift producer and consumer (Shared/Kafka, run through
# kafka-bench) against kcat doing the same work on the same broker in the same run.
#
#   bench/kafka.sh [--records N] [--size BYTES] [--repeat R] [--partitions P]
#                  [--payload random|repeated] [--consumer-property name=value]... [--no-build]
#
#   --records N        records per operation (default 200000)
#   --size BYTES       value size (default 100)
#   --repeat R         repetitions; the table shows the median and the range (default 3)
#   --partitions P     partitions of every topic (default 6)
#   --payload KIND     random: printable random bytes, which lz4 barely compresses (default);
#                      repeated: the same byte repeated, which lz4 compresses to almost nothing
#   --consumer-property name=value
#                      extra librdkafka property for BOTH consumers (repeatable), for example
#                      fetch.queue.backoff.ms=1000 (see docs/benchmarks.md)
#   --no-build         use the existing .build-bench/release/kafka-bench
#
# Each repetition, on fresh topics:
#   1. kcat produces the input file to topic K; the clock starts when the input starts flowing,
#      1 s after kcat started (so connecting and getting the idempotent producer id are not
#      measured), and stops when kcat has exited (all delivery reports in).
#   2. kafka-bench produce sends the same file to topic S; same 1 s head start, clock from the
#      first send to the last delivery report.
#   3. kcat -G reads topic K in a new group; clock from the first record to the N-th.
#   4. kafka-bench consume reads topic K in a new group; clock from the first batch to the N-th record.
# Rates are records over those windows. CPU time: kafka-bench measures its own process over its
# window (getrusage), kcat's whole process is measured with GNU time (/usr/bin/time, if present).
# Producers: enable.idempotence=true, compression lz4, linger.ms=5, partitioner murmur2_random,
# key = index % 1000. Consumers: new group, cooperative-sticky, auto.offset.reset=earliest,
# session.timeout.ms=6000, heartbeat.interval.ms=1000, max.poll.interval.ms=60000,
# fetch.queue.backoff.ms=10 (the project's consumer default).
# docs/benchmarks.md has the figures and what they mean.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"

RECORDS=200000
SIZE=100
REPEAT=3
PARTITIONS=6
PAYLOAD=random
BUILD=1
CONSUMER_PROPERTIES=()

usage() { sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "kafka.sh: error: $*" >&2; exit 1; }

while (($#)); do
    case "$1" in
        --records) RECORDS="${2:?}"; shift 2 ;;
        --size) SIZE="${2:?}"; shift 2 ;;
        --repeat) REPEAT="${2:?}"; shift 2 ;;
        --partitions) PARTITIONS="${2:?}"; shift 2 ;;
        --payload) PAYLOAD="${2:?}"; shift 2 ;;
        --consumer-property) CONSUMER_PROPERTIES+=("${2:?}"); shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
[[ "$RECORDS" =~ ^[1-9][0-9]*$ ]] || die "--records must be a positive integer"
[[ "$SIZE" =~ ^[0-9]+$ ]] || die "--size must be a non-negative integer"
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer"
[[ "$PARTITIONS" =~ ^[1-9][0-9]*$ ]] || die "--partitions must be a positive integer"
[[ "$PAYLOAD" == random || "$PAYLOAD" == repeated ]] || die "--payload is random or repeated"
for p in "${CONSUMER_PROPERTIES[@]}"; do [[ "$p" == *=* ]] || die "--consumer-property takes name=value"; done

log() { echo "kafka.sh: $*" >&2; }

# ------------------------------------------------------------------ setup ---

STACK_LOG="$(mktemp)"
scripts/stack up 2>"$STACK_LOG" || { cat "$STACK_LOG" >&2; die "scripts/stack up failed"; }
rm -f "$STACK_LOG"
eval "$(scripts/stack env)"
TANSU="$PUSH_STACK_ROOT/bin/tansu"
PYTHON="$PUSH_STACK_ROOT/venv/bin/python"
command -v kcat >/dev/null || die "kcat is not installed (scripts/stack install installs it)"

BENCH="$ROOT/.build-bench/release/kafka-bench"
if ((BUILD)); then
    log "building kafka-bench (release, --scratch-path .build-bench)"
    BUILD_LOG="$(mktemp)"
    if ! swift build -c release --scratch-path .build-bench --product kafka-bench >"$BUILD_LOG" 2>&1; then
        tail -n 40 "$BUILD_LOG" >&2
        die "swift build failed"
    fi
    rm -f "$BUILD_LOG"
fi
[[ -x "$BENCH" ]] || die "$BENCH is missing (run without --no-build)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kafka-bench.XXXXXX")"
RUN_ID="$(date +%H%M%S)-$RANDOM"
TOPICS=()
cleanup() {
    local topic
    for topic in "${TOPICS[@]}"; do
        "$TANSU" topic delete "$topic" --broker "tcp://$KAFKA_BROKERS" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

new_topic() {
    local name="bench.$1.$RUN_ID.$2"
    "$TANSU" topic create "$name" --partitions "$PARTITIONS" --broker "tcp://$KAFKA_BROKERS" >/dev/null \
        || die "could not create topic $name"
    TOPICS+=("$name")
    echo "$name"
}

# The input both producers send: one record a line, "key<TAB>value", key = index % 1000.
INPUT="$WORK/input.txt"
"$PYTHON" - "$RECORDS" "$SIZE" "$PAYLOAD" "$INPUT" <<'PY'
import base64, os, sys
records, size, payload, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path, "wb", buffering=1 << 20) as out:
    for start in range(0, records, 10000):
        count = min(10000, records - start)
        if payload == "random":
            # base64 of random bytes: printable, no tab or newline, and lz4 finds little to compress.
            blob = base64.b64encode(os.urandom(count * size * 3 // 4 + 3))
        else:
            blob = b"x" * (count * size)
        lines = [b"%d\t%s\n" % (i % 1000, blob[(i - start) * size:(i - start + 1) * size]) for i in range(start, start + count)]
        out.write(b"".join(lines))
PY

# Reads kcat's output (one line per record) and prints the seconds from the first line to the
# N-th, so that the group join before the first record is left out, as kafka-bench does.
LINE_TIMER='
import sys, time
want = int(sys.argv[1]); lines = 0; first = last = None
while True:
    chunk = sys.stdin.buffer.read1(1 << 20)
    if not chunk:
        break
    if first is None:
        first = time.monotonic()
    lines += chunk.count(b"\n")
    if last is None and lines >= want:
        last = time.monotonic()
if last is None:
    sys.exit("kcat delivered %d of %d records" % (lines, want))
print("%.6f" % (last - first))
'

now_ns() { date +%s%N; }
# CPU time (user + system seconds) of one kcat process, through GNU time when it is installed.
TIME_BIN=""
[[ -x /usr/bin/time ]] && TIME_BIN=/usr/bin/time
timed_kcat() {
    local out="$1"; shift
    if [[ -n "$TIME_BIN" ]]; then "$TIME_BIN" -f '%U %S' -o "$out" kcat "$@"; else echo "nan" >"$out"; kcat "$@"; fi
}
cpu_of() { if [[ -n "$TIME_BIN" ]]; then awk '{ printf "%.3f", $1 + $2 }' "$1"; else echo nan; fi; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

KCAT_PRODUCER=(-X enable.idempotence=true -z lz4 -X linger.ms=5 -X partitioner=murmur2_random)
# fetch.queue.backoff.ms=10 is KafkaConsumerConfiguration's own setting (librdkafka's default is
# 1000); --consumer-property comes after and overrides it on both sides.
KCAT_CONSUMER=(-X auto.offset.reset=earliest -X partition.assignment.strategy=cooperative-sticky
    -X session.timeout.ms=6000 -X heartbeat.interval.ms=1000 -X max.poll.interval.ms=60000
    -X fetch.queue.backoff.ms=10)
SWIFT_CONSUMER=()
for p in "${CONSUMER_PROPERTIES[@]}"; do
    KCAT_CONSUMER+=(-X "$p")
    SWIFT_CONSUMER+=(--property "$p")
done

# Counts the records of a topic (not timed): each producer's output is checked, not trusted.
count_records() {
    kcat -C -b "$KAFKA_BROKERS" -t "$1" -o beginning -e -q -f '\n' -X fetch.queue.backoff.ms=10 | wc -l
}

echo "kafka-bench vs kcat: $RECORDS records x $SIZE bytes ($PAYLOAD payload), $PARTITIONS partitions, $REPEAT run(s)"
echo "broker: Tansu $("$TANSU" --version | awk '{print $2}') at $KAFKA_BROKERS; librdkafka $(kcat -V 2>&1 | sed -n 's/.*librdkafka \([0-9.]*\).*/\1/p' | head -n 1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ ${#CONSUMER_PROPERTIES[@]} -gt 0 ]]; then echo "consumer properties: ${CONSUMER_PROPERTIES[*]}"; fi

RESULTS="$WORK/results.txt"
: >"$RESULTS"
for ((run = 1; run <= REPEAT; run++)); do
    kcat_topic="$(new_topic kcat "$run")"
    swift_topic="$(new_topic swift "$run")"

    # (a) kcat produce.
    start_file="$WORK/kcat-start"
    kcat_err="$WORK/kcat-produce.err"
    ({ sleep 1; now_ns >"$start_file"; cat "$INPUT"; } |
        timed_kcat "$WORK/cpu-produce" -P -b "$KAFKA_BROKERS" -t "$kcat_topic" -K '\t' "${KCAT_PRODUCER[@]}" 2>"$kcat_err") \
        || { cat "$kcat_err" >&2; die "kcat produce failed"; }
    end=$(now_ns)
    kcat_failures=$(grep -c "Delivery failed" "$kcat_err" || true)
    kcat_produce=$(awk -v s="$(cat "$start_file")" -v e="$end" 'BEGIN { printf "%.6f", (e - s) / 1e9 }')
    kcat_produce_cpu=$(cpu_of "$WORK/cpu-produce")
    echo "kcat produce records=$RECORDS bytes=$SIZE seconds=$kcat_produce failures=$kcat_failures cpu_seconds=$kcat_produce_cpu (whole process)"

    # (b) Swift produce.
    line=$("$BENCH" produce --topic "$swift_topic" --records "$RECORDS" --size "$SIZE" --input "$INPUT" --start-delay-ms 1000)
    echo "$line"
    swift_produce=$(field seconds "$line")
    swift_failures=$(field failures "$line")
    swift_produce_cpu=$(field cpu_seconds "$line")

    # (c) kcat consume, new group.
    kcat_consume=$(timed_kcat "$WORK/cpu-consume" -b "$KAFKA_BROKERS" -G "bench-kcat-$RUN_ID-$run" "${KCAT_CONSUMER[@]}" -c "$RECORDS" -q "$kcat_topic" |
        "$PYTHON" -c "$LINE_TIMER" "$RECORDS") || die "kcat consume failed"
    kcat_consume_cpu=$(cpu_of "$WORK/cpu-consume")
    echo "kcat consume records=$RECORDS bytes=$SIZE seconds=$kcat_consume cpu_seconds=$kcat_consume_cpu (whole process)"

    # (d) Swift consume, new group, same topic.
    line=$("$BENCH" consume --topic "$kcat_topic" --records "$RECORDS" --size "$SIZE" --group "bench-swift-$RUN_ID-$run" "${SWIFT_CONSUMER[@]}")
    echo "$line"
    swift_consume=$(field seconds "$line")
    swift_consume_cpu=$(field cpu_seconds "$line")

    kcat_count=$(count_records "$kcat_topic")
    swift_count=$(count_records "$swift_topic")
    [[ "$kcat_count" == "$RECORDS" && "$swift_count" == "$RECORDS" ]] \
        || die "topic record counts: kcat $kcat_count, swift $swift_count, expected $RECORDS"
    [[ "$kcat_failures" == 0 && "$swift_failures" == 0 ]] \
        || die "delivery failures: kcat $kcat_failures, swift $swift_failures"

    echo "produce $kcat_produce $swift_produce $kcat_produce_cpu $swift_produce_cpu" >>"$RESULTS"
    echo "consume $kcat_consume $swift_consume $kcat_consume_cpu $swift_consume_cpu" >>"$RESULTS"
    for topic in "$kcat_topic" "$swift_topic"; do
        "$TANSU" topic delete "$topic" --broker "tcp://$KAFKA_BROKERS" >/dev/null 2>&1 || true
    done
done

echo
"$PYTHON" - "$RESULTS" "$RECORDS" "$SIZE" <<'PY'
import math, statistics, sys
path, records, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = {}
for line in open(path):
    operation, *numbers = line.split()
    rows.setdefault(operation, []).append(tuple(float(n) for n in numbers))

def spread(values, fmt):
    values = sorted(values)
    text = fmt % statistics.median(values)
    if len(values) > 1:
        text += (" [" + fmt + ".." + fmt + "]") % (values[0], values[-1])
    return text

def rate_cell(seconds):
    rates = [records / s for s in seconds]
    return spread(rates, "%.0f") + " (%.1f MB/s)" % (statistics.median(rates) * size / 1e6)

print("throughput, records/s: median [min..max]")
print("%-9s %-40s %-40s %s" % ("operation", "kcat", "swift", "swift/kcat"))
for operation in ("produce", "consume"):
    runs = rows.get(operation, [])
    if runs:
        # Each run's two measurements share the machine's state at that moment: compare pairwise.
        ratios = [k / s for k, s, _, _ in runs]
        print("%-9s %-40s %-40s %s" % (operation, rate_cell([r[0] for r in runs]), rate_cell([r[1] for r in runs]), spread(ratios, "%.2f")))
print()
print("CPU time per record, microseconds (user + system, all threads): median [min..max]")
print("%-9s %-40s %-40s %s" % ("operation", "kcat", "swift", "swift/kcat"))
for operation in ("produce", "consume"):
    runs = [r for r in rows.get(operation, []) if not math.isnan(r[2])]
    if runs:
        ratios = [s / k for _, _, k, s in runs]
        print("%-9s %-40s %-40s %s" % (operation, spread([r[2] * 1e6 / records for r in runs], "%.2f"),
                                      spread([r[3] * 1e6 / records for r in runs], "%.2f"), spread(ratios, "%.2f")))
print()
print("MB = 10^6 bytes of values. Every run: 0 delivery failures, record counts checked.")
PY
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Micro-benchmarks of one notification's hot paths (bench/MicroBench): the planner's payload
# builder, the seal, the message record's writing; the sender's reading of it, the box's opening
# and the result's record. Each case prints time per operation (median of the rounds), heap
# allocations and bytes per operation (ordo-one's malloc interposer), and where one exists a
# reference measured in the same run (AES-GCM alone, Foundation's JSONSerialization) with the
# ratio reference / ours. Then the allocations are checked against bench/micro-thresholds.json
# ("release"): a case over its threshold fails (exit 1). scripts/test checks the debug build's
# thresholds ("debug") on every run of the suite.
#
#   bench/micro.sh [--rounds N] [--no-build]
#
#   --rounds N   timed rounds per case (default 9)
#   --no-build   use the existing .build-bench/release/micro-bench
#
# Release build in .build-bench, as the other benchmarks. docs/benchmarks.md, "Micro-benchmarks".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT"
ROUNDS=9 BUILD=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        *) echo "bench/micro.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
if [[ "$BUILD" == 1 ]]; then
    swift build -c release --build-path .build-bench --product micro-bench >&2
fi
BIN="$(swift build -c release --build-path .build-bench --show-bin-path)/micro-bench"
[[ -x "$BIN" ]] || { echo "bench/micro.sh: $BIN is missing (run without --no-build)" >&2; exit 1; }
echo "micro: $(git rev-parse --short HEAD), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" --rounds "$ROUNDS" --check bench/micro-thresholds.json --configuration release

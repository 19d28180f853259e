#!/usr/bin/env python3
"""End-to-end benchmark: one delivery to N devices (half iOS, half Android) through the whole
channel, from the request on Kafka to every message's final status in push.broad_log.

  bench/e2e.py [--devices N] [--latency-ms MS] [--no-build] [--perf] [--set SERVICE:NAME=VALUE ...]

  --devices N      subscriptions targeted (default 1,000,000)
  --latency-ms MS  the simulators' answer latency (default 30: a provider a few tens of ms away)
  --no-build       use the release binaries already in .build-bench
  --perf           also sample every CPU with `perf record` (cpu-clock, 499 Hz, no call graph)
                   from the request to the last final status, and print each process's top
                   symbols by self time (data kept in the run's folder for `perf report -i`;
                   it costs a few per cent: use it for a separate run, not the record); with
                   call graphs (dwarf, 99 Hz) of the planner and both senders in perf-calls.data
                   for `perf report -i ... --children` (who calls what the flat profile shows)
  --set S:N=V      one more environment setting N=V for service S (e.g. fcm-sender:FCM_MAX_IN_FLIGHT=1000);
                   repeatable; printed with the command, so a run records what it changed

What runs (docs/benchmarks.md, "End to end"):
  1. scripts/stack up; a release build (--scratch-path .build-bench) of the five services, both
     simulators and pushctl; the services and simulators start as chaos/run starts them
     (scripts/pushlab.py), with the senders' default settings (and any --set).
  2. Not timed: a service with an iOS and an Android app and their credentials (pushctl), N
     subscriptions inserted with generate_series and each user's data key (as the registration
     service creates it, and as bench/planning.sh does), both tables vacuumed.
  3. Timed: a DeliveryRequested record published with kcat; then every second the delivery's
     indicators, each service's resident memory (VmRSS) and the broad_log projection's lag
     (push_consumer_lag of its group, from the planner's /metrics, which hosts it).
  4. Figures: time to planned, time to the last final status, notifications per second
     (messages sent / time to the last final status), peak resident memory per service and per
     simulator, projection lag p50/p99 in records and in seconds (records / the run's average
     notifications per second), and the CPU seconds (user + system) of every service, simulator,
     Tansu and all PostgreSQL processes from the request to planned and from planned to the last
     final status, beside the machine's busy CPU and its cores x wall time: which process bounds
     each phase; checks: N rows in broad_log all final, and the simulators' logs hold every sent
     message.
  5. The cost ledger: each process's CPU over the whole run in microseconds per notification
     (the senders also per message of their own provider), the simulators and the benchmark
     itself apart, and the total without the simulators and the benchmark: what a platform
     team pays per notification.
"""

import argparse
import os
import random
import resource
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "scripts"))
from pushlab import LOCAL, ROOT, SERVICES, Channel, Secrets, build, fail, log, run, stack_up  # noqa: E402

BROAD_LOG_GROUP = "push-broad-log-projection"


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def projection_lag(planner):
    """Records of push.message-results the broad_log projection has not applied yet."""
    try:
        with urllib.request.urlopen(planner.url("/metrics"), timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    total = 0
    for line in text.splitlines():
        if line.startswith("push_consumer_lag{") and f'group="{BROAD_LOG_GROUP}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path):
    """utime + stime of one /proc/<pid>/stat, in seconds (0 for a process gone)."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / HZ
    except (OSError, IndexError, ValueError):
        return 0.0


def cpu_snapshot(channel, stack):
    """CPU seconds so far of each service and simulator, Tansu, every postgres process (a
    backend that ended meanwhile takes its seconds with it: a lower bound) and the machine."""
    snapshot = {name: cpu_seconds(f"/proc/{process.popen.pid}/stat") for name, process in channel.processes.items()}
    snapshot["tansu"] = cpu_seconds(f"/proc/{stack.tansu_pid()}/stat")
    postgres = 0.0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if "(postgres)" not in f.read(64):
                        continue
            except OSError:
                continue
            postgres += cpu_seconds(f"/proc/{entry}/stat")
    snapshot["postgresql"] = postgres
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    snapshot["benchmark"] = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    with open("/proc/stat") as f:
        fields = f.readline().split()
    snapshot["machine"] = sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / HZ
    snapshot["at"] = time.monotonic()
    return snapshot


def cpu_table(phases):
    """One line per process: CPU seconds of each phase (between consecutive snapshots)."""
    names = [name for name in phases[0][1] if name != "at"]
    lines = []
    spans = []
    for (label, start), (_, end) in zip(phases, phases[1:]):
        wall = end["at"] - start["at"]
        spans.append(f"{label} ({wall:.1f} s wall, {os.cpu_count()} cores: {wall * os.cpu_count():.1f} CPU s)")
    lines.append("  CPU seconds                 " + "; ".join(spans))
    for name in names:
        values = [f"{max(0.0, end[1][name] - start[1][name]):8.1f}" for start, end in zip(phases, phases[1:])]
        lines.append(f"    {name:<26}" + " ".join(values))
    return lines


SIMULATORS = ("apns-simulator", "fcm-simulator")


def cost_ledger(first, last, notifications, per_provider):
    """CPU microseconds per notification of each process over the run (first to last snapshot).

    `per_provider` maps a sender to the messages of its own provider. "other" is the machine's
    busy CPU that no listed process accounts for (the kernel's own threads, psql, a PostgreSQL
    backend that ended before the last snapshot)."""
    spent = {name: max(0.0, last[name] - first[name]) for name in first if name != "at"}
    if notifications <= 0:
        return ["  cost ledger                 no notification sent"]
    us = lambda seconds, count=notifications: seconds * 1e6 / max(1, count)  # noqa: E731
    listed = [name for name in spent if name not in ("machine", "benchmark")]
    channel = [name for name in listed if name not in SIMULATORS]
    lines = [f"  cost ledger                 CPU µs per notification over the run ({notifications:,} notifications)"]
    for name in channel:
        extra = f"  ({us(spent[name], per_provider[name]):.1f} per message of its provider)" if name in per_provider else ""
        lines.append(f"    {name:<26}{us(spent[name]):8.1f}{extra}")
    channel_total = sum(spent[name] for name in channel)
    simulators = sum(spent[name] for name in SIMULATORS if name in spent)
    other = max(0.0, spent["machine"] - channel_total - simulators - spent["benchmark"])
    lines.append(f"    {'channel total':<26}{us(channel_total):8.1f}  (without the simulators and the benchmark)")
    for name in SIMULATORS:
        if name in spent:
            lines.append(f"    {name:<26}{us(spent[name]):8.1f}  (not the channel's)")
    lines.append(f"    {'benchmark':<26}{us(spent['benchmark']):8.1f}  (this script, psql and kcat)")
    lines.append(f"    {'other':<26}{us(other):8.1f}  (busy CPU no listed process accounts for)")
    lines.append(f"    {'machine':<26}{us(spent['machine']):8.1f}")
    return lines


def perf_start(run_dir, call_graph_pids):
    """System-wide `perf record` (software cpu-clock: hardware counters are not offered on
    these machines), and a second one with call graphs of `call_graph_pids`; None when perf is
    missing or refuses."""
    data = os.path.join(run_dir, "perf.data")
    calls = os.path.join(run_dir, "perf-calls.data")
    commands = [["perf", "record", "-a", "-F", "499", "-e", "cpu-clock", "-o", data],
                ["perf", "record", "-F", "99", "-e", "cpu-clock", "--call-graph", "dwarf,8192",
                 "-p", ",".join(str(pid) for pid in call_graph_pids), "-o", calls]]
    processes = []
    for index, command in enumerate(commands):
        try:
            processes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                              stderr=open(os.path.join(run_dir, f"perf-{index}.err"), "w")))
        except OSError as error:
            log(f"perf: not started ({error})")
            return None
    time.sleep(1)
    if any(process.poll() is not None for process in processes):
        log(f"perf: exited at once (see {run_dir}/perf-*.err)")
        return None
    return processes, data


def perf_report(perf, filters, top=15):
    """Each process's top symbols by self time, from the system-wide samples; `filters` maps a
    name to perf report's selection (["--pid", PID], or ["--comm", "postgres"] for every backend)."""
    processes, data = perf
    for process in processes:
        process.send_signal(2)
    for process in processes:
        process.wait(timeout=300)
    print(f"  perf                        system-wide cpu-clock samples, top symbols by self time per process, in per cent of "
          f"the process's samples (data {data})")
    for name, selection in filters.items():
        try:
            out = subprocess.run(["perf", "report", "-i", data, *selection, "--percentage", "relative", "--no-children", "--sort", "dso,sym",
                                  "--stdio", "--percent-limit", "0.7"],
                                 capture_output=True, text=True, timeout=600).stdout
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"    {name}: perf report failed ({error})")
            continue
        rows = [line.rstrip() for line in out.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        print(f"    {name} ({' '.join(selection)}):")
        for line in rows[:top]:
            print(f"      {line.strip()[:150]}")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--latency-ms", type=int, default=30)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--perf", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="SERVICE:NAME=VALUE")
    args = parser.parse_args()
    settings = {}
    for item in args.set:
        service, _, assignment = item.partition(":")
        name, equals, value = assignment.partition("=")
        if service not in SERVICES or not name or not equals:
            parser.error(f"--set {item}: expected SERVICE:NAME=VALUE with SERVICE one of {', '.join(SERVICES)}")
        settings.setdefault(service, {})[name] = value
    devices = args.devices
    ios, android = devices // 2, devices - devices // 2
    command = "bench/e2e.py " + " ".join(sys.argv[1:])

    env, stack = stack_up()
    products = SERVICES + ["apns-simulator", "fcm-simulator", "pushctl"]
    scratch = os.path.join(ROOT, ".build-bench")
    if args.no_build:
        bin_dir = os.path.join(scratch, "release")
    else:
        bin_dir = build(products, release=True, scratch=scratch)
    for product in products:
        if not os.access(os.path.join(bin_dir, product), os.X_OK):
            fail(f"{bin_dir}/{product} is missing (run without --no-build)", "e2e")
    run_dir = os.path.join(LOCAL, "e2e", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(run_dir, mode=0o700)
    commit = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).strip()
    print(f"end to end: {devices} devices ({ios} iOS, {android} Android), simulators answering after {args.latency_ms} ms; "
          f"commit {commit}; {os.cpu_count()} cores; load average {open('/proc/loadavg').read().split()[:3]}", flush=True)

    channel = Channel("e2e", env, stack, bin_dir, run_dir, Secrets("e2e", run_dir, random.Random()), devices, args.latency_ms, settings=settings, program="e2e")
    try:
        return measure(args, channel, stack, devices, ios, android, command, commit)
    finally:
        channel.close()


def measure(args, channel, stack, devices, ios, android, command, commit):
    service = f"e2e-{time.strftime('%Y%m%d-%H%M%S')}"
    ios_app, android_app = channel.create_service(service, "End-to-end benchmark")
    # 64 hex digits starting with 0, so that none starts with a prefix the simulator answers
    # with an error (dead, bad0, e503..., docs/simulators.md); FCM-like tokens start with c.
    log(f"inserting {devices} subscriptions (not timed)")
    started = time.monotonic()
    stack.sql(f"""
        INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at)
        SELECT '{ios_app["appId"]}', '0' || substr(md5('i{service}' || g) || md5('j' || g), 2), 'ios', 'user' || g, '{{}}'::jsonb, now(), now()
        FROM generate_series(1, {ios}) AS g;
        INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at)
        SELECT '{android_app["appId"]}',
               'c' || substr(md5('f{service}' || g), 1, 10) || ':APA91b'
                   || left(translate(encode(sha512(('a' || g)::bytea) || sha512(('b' || g)::bytea), 'base64'), E'+/\\n', '-_'), 133),
               'android', 'user' || g, '{{}}'::jsonb, now(), now()
        FROM generate_series(1, {android}) AS g;
        -- Each user's data key, as the registration service creates it at the first registration
        -- (as bench/planning.sh does): without it the planner creates every key during the timed
        -- fan-out, a one-time cost of a first delivery to subscriptions older than the keys.
        INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
        SELECT gen_random_uuid(), a.service_id, 'user:user' || g, decode(md5('k' || g) || md5('l' || g), 'hex')
        FROM push.apps a, generate_series(1, greatest({ios}, {android})) AS g
        WHERE a.app_id = '{ios_app["appId"]}';""", patience=0)
    # Vacuumed as autovacuum leaves long-lived tables (all-visible pages); one statement a call
    # (VACUUM runs outside a transaction block).
    stack.sql("VACUUM (ANALYZE) push.subscriptions", patience=0)
    stack.sql("VACUUM (ANALYZE) push.subject_keys", patience=0)
    log(f"{devices} subscriptions inserted in {time.monotonic() - started:.0f} s")

    # Samplers: memory of every process, and the broad_log projection's lag.
    samples = {"rss": {name: 0 for name in channel.processes}, "lag": []}
    stop = threading.Event()

    def sample():
        while not stop.wait(1.0):
            for name, process in channel.processes.items():
                samples["rss"][name] = max(samples["rss"][name], rss_kib(process.popen.pid))
            lag = projection_lag(channel.services["delivery-planning"])
            if lag is not None:
                samples["lag"].append((time.monotonic(), lag))
    threading.Thread(target=sample, daemon=True).start()

    perf = perf_start(channel.run_dir, [channel.processes[name].popen.pid for name in ("delivery-planning", "apns-sender", "fcm-sender")]) if args.perf else None
    request_id = f"bench-{service}"
    valid_until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 4 * 3600))
    cpu = [("request to planned", cpu_snapshot(channel, stack))]
    published = time.monotonic()
    channel.publish({"type": "DeliveryRequested", "version": 1, "requestId": request_id, "service": service,
                     "audience": {"all": True}, "content": {"title": "Lisbon is waiting", "body": "Hello {{userKey}}"},
                     "validUntil": valid_until})
    log(f"request {request_id} published")
    state = {"planned": None, "delivery": None, "last_print": 0}

    def done():
        rows = stack.sql_rows(f"SELECT d.delivery_id, d.status, coalesce(i.to_deliver, 0), coalesce(i.processed, 0), coalesce(i.sent, 0) "
                              f"FROM push.deliveries d LEFT JOIN push.delivery_indicators i USING (delivery_id) WHERE d.request_id = '{request_id}'")
        if not rows:
            return False
        delivery_id, status, to_deliver, processed, sent = rows[0][0], rows[0][1], *map(int, rows[0][2:])
        now = time.monotonic()
        state["delivery"] = delivery_id
        if status == "planned" and state["planned"] is None:
            state["planned"] = now - published
            cpu.append(("planned to last final status", cpu_snapshot(channel, stack)))
            log(f"planned: {to_deliver} messages, {state['planned']:.1f} s after the request")
        if now - state["last_print"] >= 15:
            state["last_print"] = now
            lag = samples["lag"][-1][1] if samples["lag"] else "?"
            # What the providers took so far: tells a sender pause from a projection pause.
            try:
                took = ", ".join(f"{name} {sim.call('GET', '/_control/counters', timeout=10)['accepted']}"
                                 for name, sim in channel.simulators.items())
            except Exception as error:  # a slow answer must not end the run
                took = f"? ({error})"
            log(f"{status}: {processed} of {to_deliver or '?'} final ({sent} sent; simulators accepted {took}), "
                f"broad_log projection lag {lag} records")
        return status == "planned" and to_deliver > 0 and processed == to_deliver
    channel.wait_until(4 * 3600, "every message with a final status", done, every=1.0)
    last_result = time.monotonic() - published
    cpu.append(("end", cpu_snapshot(channel, stack)))
    stop.set()
    delivery_id = state["delivery"]

    # Checks.
    rows, final, sent, failed, expired = map(int, stack.sql_rows(
        f"SELECT count(*), count(*) FILTER (WHERE status IN ('sent', 'failed', 'expired')), count(*) FILTER (WHERE status = 'sent'), "
        f"count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'expired') "
        f"FROM push.broad_log WHERE delivery_id = '{delivery_id}'")[0])
    if rows != devices or final != devices:
        fail(f"broad_log holds {rows} rows for {devices} devices, {final} of them final", "e2e")
    arrived = {name: sim.call("GET", "/_control/counters", timeout=60)["accepted"] for name, sim in channel.simulators.items()}
    # The FCM simulator's accepted count includes the OAuth token answers (a handful).
    if arrived["apns"] + arrived["fcm"] < sent:
        fail(f"the simulators accepted {arrived} for {sent} sent", "e2e")

    # Projection lag in seconds: records behind / the rate results were produced at (the run's
    # average notifications per second).
    rate = sent / last_result
    lags = [lag for _, lag in samples["lag"]]
    lag_seconds = [lag / rate for lag in lags]
    print()
    print(f"end to end, {devices} devices ({ios} iOS, {android} Android), simulators at {args.latency_ms} ms; commit {commit}")
    print(f"  command                     {command}")
    print(f"  planned                     {state['planned']:.1f} s after the request")
    print(f"  last final status           {last_result:.1f} s after the request ({sent} sent, {failed} failed, {expired} expired)")
    print(f"  notifications per second    {sent / last_result:,.0f}")
    print("  peak resident memory        " + ", ".join(f"{name} {kib / 1024:.0f} MiB" for name, kib in samples["rss"].items()))
    print(f"  broad_log projection lag    p50 {percentile(lags, 50):,.0f} records, p99 {percentile(lags, 99):,.0f} records"
          + (f" (p50 {percentile(lag_seconds, 50):.1f} s, p99 {percentile(lag_seconds, 99):.1f} s at the run's rate)" if lag_seconds else "")
          + f"; {len(lags)} samples, one per second")
    print(f"  simulators                  accepted {arrived['apns']:,} (APNs), {arrived['fcm']:,} (FCM, with the OAuth token answers)")
    for line in cpu_table(cpu):
        print(line)
    for line in cost_ledger(cpu[0][1], cpu[-1][1], sent + failed + expired, {"apns-sender": ios, "fcm-sender": android}):
        print(line)
    if perf:
        filters = {name: ["--pid", str(process.popen.pid)] for name, process in channel.processes.items()}
        filters["tansu"] = ["--pid", str(stack.tansu_pid())]
        filters["postgresql"] = ["--comm", "postgres"]
        perf_report(perf, filters)
    print(f"  load average after          {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

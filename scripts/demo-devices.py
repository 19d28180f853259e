#!/usr/bin/env python3
"""Simulated devices for scripts/demo (Python 3 standard library only).

  demo-devices.py register --url URL --ios-key K --android-key K --devices N --out FILE
      Registers N devices (half iOS, half Android) with the exact requests the Campaign SDKs
      send (POST /nms/mobile/1/registerIOS.jssp / registerAndroid.jssp, form body, parameters
      in the SDKs' order). A share of the tokens (--invalid-percent) carries the prefixes the
      provider simulators answer as invalid (APNs `dead` -> 410 Unregistered, `bad0` -> 400
      BadDeviceToken; FCM `unreg` -> 404 UNREGISTERED), so the demo shows quarantine.
      Writes one line per device to FILE: platform, token, userKey, invalid (0/1).

  demo-devices.py track --url URL --delivered FILE... --delivery-id ID --summary FILE
      Each FILE is a simulator's /_control/log answer: the notifications it accepted, with
      `provider`, `token` and `mId`. Each simulated device that got
      one sends the SDK's tracking hits (GET /r/?id=h<hex of mId>,<deliveryId>,<tag>): tag 1
      ("received", an impression: Android mostly, iOS rarely) and tag 2 ("opened"), spread
      over --spread seconds. Writes the expected figures to the summary file (shell syntax).

Progress goes to stderr, one line per second; any request that does not end in 200 makes the
exit status non-zero.
"""

import argparse
import base64
import http.client
import json
import random
import secrets
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

CONTENT_TYPE = "application/x-www-form-urlencoded;charset=UTF-8"

IPHONES = [("iPhone15,2", "iPhone 14 Pro"), ("iPhone16,1", "iPhone 15 Pro"), ("iPhone14,7", "iPhone 14"),
           ("iPhone17,3", "iPhone 16"), ("iPhone13,2", "iPhone 12")]
IOS_VERSIONS = ["iOS 17.0", "iOS 17.5", "iOS 18.1", "iOS 18.2", "iOS 16.7"]
ANDROIDS = [("Google", "Google", "Pixel 8"), ("samsung", "samsung", "SM-S911B"), ("Xiaomi", "Xiaomi", "2201117TG"),
            ("OnePlus", "OnePlus", "CPH2449"), ("motorola", "motorola", "moto g84 5G")]
ANDROID_VERSIONS = ["Android 14", "Android 13", "Android 15", "Android 12"]
LANGUAGES = ["en-US", "en-GB", "fr-FR", "de-DE", "pt-PT", "es-ES"]


def log(message):
    print(message, file=sys.stderr, flush=True)


def encode(value):
    """Percent-encoding as the SDKs do it: %20 for a space, %40 for @, nothing left raw but unreserved characters."""
    return urllib.parse.quote(value, safe="")


def xml_escape(value):
    return (value.replace("&", "&amp;").replace('"', "&quot;").replace("'", "&#39;")
            .replace(">", "&gt;").replace("<", "&lt;"))


def ios_body(device, integration_key):
    # iOS: root <additionalParams>, " />" with a space (the SDK's own layout).
    params = "".join(f'<param name="{xml_escape(k)}" value="{xml_escape(v)}" />' for k, v in device["params"])
    fields = [
        ("registrationToken", device["token"]), ("mobileAppUuid", integration_key), ("userKey", device["userKey"]),
        ("deviceName", device["name"]), ("deviceModel", device["model"]), ("deviceBrand", "Apple"),
        ("deviceManufacturer", "Apple"), ("osName", "iOS"), ("osVersion", device["osVersion"]),
        ("osLanguage", device["language"]), ("additionalParams", f"<additionalParams>{params}</additionalParams>"),
    ]
    return "&".join(f"{k}={encode(v)}" for k, v in fields)


def android_body(device, integration_key):
    # Android: root <additionalParameters>, "/>" without a space, deviceImei after userKey.
    params = "".join(f'<param name="{xml_escape(k)}" value="{xml_escape(v)}"/>' for k, v in device["params"])
    fields = [
        ("registrationToken", device["token"]), ("mobileAppUuid", integration_key), ("userKey", device["userKey"]),
        ("deviceImei", device["imei"]), ("deviceName", device["name"]), ("deviceModel", device["model"]),
        ("deviceBrand", device["brand"]), ("deviceManufacturer", device["manufacturer"]), ("osName", "android"),
        ("osVersion", device["osVersion"]), ("osLanguage", device["language"]),
        ("additionalParams", f"<additionalParameters>{params}</additionalParameters>"),
    ]
    return "&".join(f"{k}={encode(v)}" for k, v in fields)


def fcm_token(prefix=""):
    """Looks like an FCM registration token: <instance id>:APA91b<base64url>."""
    def b64(n):
        return base64.urlsafe_b64encode(secrets.token_bytes(n)).decode().rstrip("=")
    return f"{prefix}{b64(16)[:22 - len(prefix)]}:APA91b{b64(101)[:134]}"


# Token prefixes the simulators answer specially (docs/simulators.md); a valid device's random
# token must not start with one (a random hex token starts with "dead" once in 65,536).
APNS_SPECIAL = ("dead", "bad0", "busy", "e429", "e500", "e503")
FCM_SPECIAL = ("unreg", "mismatch", "invalid", "quota", "unavail", "internal", "thirdparty")


def apns_token():
    while True:
        token = secrets.token_hex(32)  # the token bytes as lowercase hex (32 bytes today)
        if not token.startswith(APNS_SPECIAL):
            return token


def valid_fcm_token():
    while True:
        token = fcm_token()
        if not token.lower().startswith(FCM_SPECIAL):
            return token


def make_devices(count, invalid_percent, run, rng):
    ios_count = count // 2
    android_count = count - ios_count

    def invalid_count(n):
        return 0 if invalid_percent <= 0 or n == 0 else max(1, round(n * invalid_percent / 100))

    devices = []
    ios_invalid = invalid_count(ios_count)
    for i in range(ios_count):
        invalid = i < ios_invalid
        token = ("dead" if i % 2 == 0 else "bad0") + secrets.token_hex(30) if invalid else apns_token()
        model, name = rng.choice(IPHONES)
        devices.append({
            "platform": "ios", "token": token, "invalid": invalid, "userKey": f"ios-{run}-{i:06d}@example.com",
            "name": f"{name} #{i}", "model": model, "osVersion": rng.choice(IOS_VERSIONS), "language": rng.choice(LANGUAGES),
            "params": [("email", f"ios-{run}-{i:06d}@example.com"), ("userPoints", str(rng.randint(0, 5000)))],
        })
    android_invalid = invalid_count(android_count)
    for i in range(android_count):
        invalid = i < android_invalid
        brand, manufacturer, model = rng.choice(ANDROIDS)
        devices.append({
            "platform": "android", "token": fcm_token("unreg") if invalid else valid_fcm_token(), "invalid": invalid,
            "userKey": f"android-{run}-{i:06d}@example.com", "imei": secrets.token_hex(8),
            "name": f"{model} #{i}", "model": model, "brand": brand, "manufacturer": manufacturer,
            "osVersion": rng.choice(ANDROID_VERSIONS), "language": rng.choice(LANGUAGES),
            "params": [("email", f"android-{run}-{i:06d}@example.com"), ("userPoints", str(rng.randint(0, 5000)))],
        })
    rng.shuffle(devices)
    return devices


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.values = {}

    def add(self, key, n=1):
        with self.lock:
            self.values[key] = self.values.get(key, 0) + n

    def get(self, key):
        with self.lock:
            return self.values.get(key, 0)


class Connections:
    """One keep-alive HTTP/1.1 connection per worker thread (the SDKs each hold their own)."""

    def __init__(self, url):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port or 80
        self.local = threading.local()

    def request(self, method, path, body=None, headers=None):
        for attempt in (1, 2):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            try:
                conn.request(method, path, body=body, headers=headers or {})
                response = conn.getresponse()
                text = response.read().decode("utf-8", "replace")
                return response.status, response.getheader("Retry-After"), text
            except (http.client.HTTPException, ConnectionError, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise


def progress(label, counters, total, done_event, fields):
    start = time.monotonic()
    while not done_event.wait(1.0):
        done = counters.get("done")
        elapsed = time.monotonic() - start
        extra = ", ".join(f"{name} {counters.get(key)}" for name, key in fields)
        log(f"  {label}: {done}/{total} ({done / elapsed:.0f}/s){', ' + extra if extra else ''}")


def cmd_register(args):
    rng = random.Random(args.seed)
    devices = make_devices(args.devices, args.invalid_percent, args.run, rng)
    connections = Connections(args.url)
    counters = Counters()
    errors = []

    def register(device):
        path = "/nms/mobile/1/registerIOS.jssp" if device["platform"] == "ios" else "/nms/mobile/1/registerAndroid.jssp"
        key = args.ios_key if device["platform"] == "ios" else args.android_key
        body = (ios_body if device["platform"] == "ios" else android_body)(device, key).encode()
        # A throttled SDK registers again at a later app start; here the device waits and retries.
        for _ in range(20):
            status, retry_after, text = connections.request("POST", path, body, {"Content-Type": CONTENT_TYPE})
            if status == 200:
                counters.add("done")
                return
            if status in (429, 503):
                counters.add(f"retried_{status}")
                time.sleep(min(float(retry_after or 0.2), 2.0) * (0.5 + rng.random()))
                continue
            break
        counters.add("done")
        counters.add("failed")
        with counters.lock:
            errors.append(f"{device['platform']} {status}: {text.strip()[:200]}")

    done = threading.Event()
    reporter = threading.Thread(target=progress, args=("registered", counters, len(devices), done,
                                                        [("throttled (429, retried)", "retried_429"), ("failed", "failed")]), daemon=True)
    start = time.monotonic()
    reporter.start()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        for future in [pool.submit(register, d) for d in devices]:
            future.result()
    done.set()
    elapsed = time.monotonic() - start
    with open(args.out, "w") as out:
        for d in devices:
            out.write(f"{d['platform']}\t{d['token']}\t{d['userKey']}\t{1 if d['invalid'] else 0}\n")
    ios = sum(1 for d in devices if d["platform"] == "ios")
    invalid = sum(1 for d in devices if d["invalid"])
    log(f"  registered {len(devices) - counters.get('failed')}/{len(devices)} devices ({ios} iOS, {len(devices) - ios} Android; "
        f"{invalid} with tokens the providers will refuse) in {elapsed:.1f} s, {len(devices) / elapsed:.0f}/s "
        f"over {args.concurrency} connections; {counters.get('retried_429')} throttled and retried")
    for line in errors[:5]:
        log(f"  refused: {line}")
    return 1 if errors else 0


def cmd_track(args):
    rng = random.Random(args.seed)
    delivered = {}
    arrivals = 0
    for path in args.delivered:
        with open(path) as f:
            for entry in json.load(f)["entries"]:
                if entry.get("mId"):
                    arrivals += 1
                    delivered[entry["mId"]] = entry["provider"]  # a notification that arrived twice is tracked once
    # Which hits each device sends, and when (seconds from the start).
    hits = []
    for message_id, provider in delivered.items():
        android = provider == "fcm"
        received = rng.random() < (args.android_received if android else args.ios_received)
        t_received = rng.uniform(0, args.spread * 0.5)
        if received:
            hits.append((t_received, message_id, 1))
        # Android reports an open only for a notification it displayed; iOS opens need no impression.
        if (received or not android) and rng.random() < args.opened:
            hits.append((min(args.spread, t_received + rng.expovariate(1 / (args.spread * 0.25))), message_id, 2))
    hits.sort()
    connections = Connections(args.url)
    counters = Counters()
    errors = []

    def send(hit):
        _, message_id, tag = hit
        # Exactly the SDK's URL: content letter h, the payload's _mId (a decimal 32-bit id goes as
        # Java's Integer.toHexString writes it; a UUID as is), the _dId as is, the tag.
        sdk_id = f"{int(message_id) & 0xFFFFFFFF:x}" if message_id.lstrip("-").isdigit() else message_id
        status, _, text = connections.request("GET", f"/r/?id=h{sdk_id},{args.delivery_id},{tag}")
        counters.add("done")
        if status == 200:
            counters.add("received" if tag == 1 else "opened")
        else:
            counters.add("failed")
            with counters.lock:
                errors.append(f"{status}: {text.strip()[:200]}")

    done = threading.Event()
    reporter = threading.Thread(target=progress, args=("tracking hits", counters, len(hits), done,
                                                        [("received", "received"), ("opened", "opened"), ("failed", "failed")]), daemon=True)
    start = time.monotonic()
    reporter.start()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        futures = []
        for hit in hits:
            delay = hit[0] - (time.monotonic() - start)
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(send, hit))
        for future in futures:
            future.result()
    done.set()
    elapsed = time.monotonic() - start
    received_ids = {h[1] for h in hits if h[2] == 1}
    opened_ids = {h[1] for h in hits if h[2] == 2}
    by_provider = {p: sum(1 for v in delivered.values() if v == p) for p in ("apns", "fcm")}
    log(f"  {len(hits)} tracking hits in {elapsed:.1f} s from {len(delivered)} delivered notifications "
        f"({by_provider['apns']} APNs, {by_provider['fcm']} FCM): {counters.get('received')} received, "
        f"{counters.get('opened')} opened, {counters.get('failed')} refused")
    for line in errors[:5]:
        log(f"  refused: {line}")
    with open(args.summary, "w") as out:
        out.write(f"TRACK_DELIVERED={len(delivered)}\nTRACK_HITS={len(hits)}\nTRACK_ACCEPTED={len(hits) - counters.get('failed')}\n"
                  f"TRACK_IMPRESSIONS={len(received_ids)}\nTRACK_OPENS={len(opened_ids)}\nTRACK_REPEATS={arrivals - len(delivered)}\n")
    return 1 if errors else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    reg = sub.add_parser("register", help="register simulated devices")
    reg.add_argument("--url", required=True, help="registration service base URL")
    reg.add_argument("--ios-key", required=True)
    reg.add_argument("--android-key", required=True)
    reg.add_argument("--devices", type=int, default=10000)
    reg.add_argument("--invalid-percent", type=float, default=1.0)
    reg.add_argument("--concurrency", type=int, default=32)
    reg.add_argument("--run", default="demo", help="tag in user keys, so runs do not share them")
    reg.add_argument("--seed", type=int, default=None)
    reg.add_argument("--out", required=True)
    track = sub.add_parser("track", help="send tracking hits for delivered notifications")
    track.add_argument("--url", required=True, help="tracking-ingestion base URL")
    track.add_argument("--delivered", required=True, action="append", help="a simulator's /_control/log answer (repeatable)")
    track.add_argument("--delivery-id", required=True)
    track.add_argument("--spread", type=float, default=5.0, help="seconds over which hits are spread")
    track.add_argument("--android-received", type=float, default=0.9)
    track.add_argument("--ios-received", type=float, default=0.05)
    track.add_argument("--opened", type=float, default=0.1)
    track.add_argument("--concurrency", type=int, default=16)
    track.add_argument("--seed", type=int, default=None)
    track.add_argument("--summary", required=True)
    args = parser.parse_args()
    return cmd_register(args) if args.command == "register" else cmd_track(args)


if __name__ == "__main__":
    sys.exit(main())

"""Shared by chaos/run and bench/e2e.py: the whole channel on the embedded stack, as real
processes (the five services and both provider simulators), with the run's secrets and a
service with an iOS and an Android app. Python standard library only."""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
LOCAL = os.path.join(ROOT, ".local")
SERVICES = ["registration", "delivery-planning", "apns-sender", "fcm-sender", "tracking-ingestion"]
SENDERS = ["apns-sender", "fcm-sender"]

START = time.monotonic()


def log(message):
    print(f"{time.monotonic() - START:7.1f}s  {message}", flush=True)


def fail(message, program="chaos"):
    log(f"{program}: FAILED: {message}")
    sys.exit(1)


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, text=True, capture_output=True, **kwargs).stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------ stack ---

class Stack:
    """PostgreSQL and Tansu as scripts/stack runs them, with the faults applied to them."""

    def __init__(self, env):
        self.env = env
    def tansu_pid(self):
        with open(os.path.join(LOCAL, "tansu.pid")) as f:
            return int(f.read().strip())

    def crash_pg(self, seconds):
        subprocess.run([os.path.join(ROOT, "scripts", "stack"), "crash-pg", f"{seconds:.1f}"], check=True,
                       capture_output=True, env=self.env)

    def sql(self, query, patience=120):
        """psql's answer; while PostgreSQL is down (psql exit status 2: no connection) it asks
        again for up to `patience` seconds."""
        deadline = time.monotonic() + patience
        while True:
            try:
                return run(["psql", self.env["POSTGRES_URL"], "-X", "-tAq", "-v", "ON_ERROR_STOP=1", "-c", query], env=self.env).strip()
            except subprocess.CalledProcessError as e:
                if e.returncode != 2 or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def sql_rows(self, query):
        out = self.sql(query)
        return [line.split("|") for line in out.splitlines() if line]


# -------------------------------------------------------------------------------- processes ---

def stack_up():
    """scripts/stack up, then its environment (database URL, brokers, library path)."""
    subprocess.run([os.path.join(ROOT, "scripts", "stack"), "up"], check=True)
    env = dict(os.environ)
    with open(os.path.join(LOCAL, "stack.env")) as f:
        for line in f:
            if line.startswith("export "):
                key, value = line[len("export "):].strip().split("=", 1)
                env[key] = value.strip('"')
    env["LD_LIBRARY_PATH"] = os.path.join(LOCAL, "lib") + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    return env, Stack(env)


def build(products, release=False, scratch=None):
    """Builds the products one by one (as scripts/demo does) and returns the binaries' directory."""
    command = ["swift", "build"] + (["-c", "release"] if release else []) + (["--scratch-path", scratch] if scratch else [])
    if not release and not scratch and os.environ.get("PUSH_BUILT") == "1":
        products = []  # the debug build is current: CI builds everything before it runs anything
    log(f"building {' '.join(products) or 'nothing (PUSH_BUILT=1)'} ({'release' if release else 'debug'})")
    for product in products:
        subprocess.run(command + ["--product", product], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return run(command + ["--show-bin-path"], cwd=ROOT).strip()


# -------------------------------------------------------------------------------- processes ---

SHUTTING_DOWN = threading.Event()


class Process:
    """One program kept running as `restart: unless-stopped` would keep it: the supervisor
    restarts it when it exits, unless the injector holds it down for a while."""

    def __init__(self, name, argv, env, ops_port=None, log_prefix="chaos"):
        self.name, self.argv, self.env, self.ops_port = name, argv, env, ops_port
        self.log_path = os.path.join(LOCAL, f"{log_prefix}-{name}.log")
        self.popen = None
        self.lock = threading.RLock()
        self.held = False  # the injector stopped it and restarts it itself
        self.starts = 0
        self.unplanned_exits = []  # exit statuses nobody asked for
        self.lost_answers = {}  # process start -> sends retried after a transport failure
        with open(self.log_path, "w"):
            pass

    def start(self):
        with self.lock, open(self.log_path, "a") as out:
            out.write(f"--- chaos: start {self.starts + 1} at {time.monotonic() - START:.1f}s\n")
            out.flush()
            self.popen = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True)
            self.starts += 1

    def hold_and_signal(self, sig):
        """Sends a signal that ends the process; the supervisor leaves it down until release()."""
        with self.lock:
            self.held = True
            self.popen.send_signal(sig)

    def release(self):
        """Restarts a held process once it has exited; returns its exit status."""
        status = self.popen.wait()
        with self.lock:
            self.held = False
            self.start()
        return status

    def supervise(self):
        with self.lock:
            if self.held or SHUTTING_DOWN.is_set() or self.popen.poll() is None:
                return
            status = self.popen.returncode
            self.unplanned_exits.append(status)
            log(f"{self.name} exited by itself with status {status} (log {self.log_path}); restarting it")
            self.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.ops_port}{path}"

    def ready(self):
        try:
            with urllib.request.urlopen(self.url("/health/ready"), timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def metric(self, name, *labels):
        """The sum of a metric's samples in /metrics (those whose labels contain every given
        `key="value"` prefix), or None when the endpoint does not answer."""
        try:
            with urllib.request.urlopen(self.url("/metrics"), timeout=2) as r:
                text = r.read().decode()
        except (OSError, urllib.error.URLError):
            return None
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and line[len(name)] in " {" and all(label in line for label in labels):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def sample_lost_answers(self):
        """Sends retried after a transport failure (connection lost, timeout: the provider may
        have taken them), kept per process start: the counter starts again at each start."""
        value = self.metric("push_sender_messages_total", 'outcome="retried"', 'reason="transport-')
        if value is not None:
            with self.lock:
                self.lost_answers[self.starts] = max(self.lost_answers.get(self.starts, 0), int(value))

    def stop(self):
        if self.popen and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGCONT)
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class Simulator:
    def __init__(self, name, process, port_file, ca_file):
        self.name, self.process, self.port_file, self.ca_file = name, process, port_file, ca_file
        self.base = None

    def connect(self):
        with open(self.port_file) as f:
            self.base = f"127.0.0.1:{f.read().strip()}"

    def call(self, method, path, body=None, timeout=60):
        """The control API (docs/simulators.md), over HTTP/2 with curl as scripts/demo calls it."""
        argv = ["curl", "-sS", "--fail", "--http2", "--cacert", self.ca_file, "-m", str(timeout), "-X", method,
                f"https://{self.base}{path}"]
        if body is not None:
            argv += ["-H", "content-type: application/json", "-d", json.dumps(body)]
        return json.loads(run(argv))



class Secrets:
    """The run's secrets, made as scripts/demo makes them and never printed: the key sealing
    provider credentials (kept across runs under `.local/<kind>/`), an admin token, an APNs
    .p8 key and an FCM service account."""

    def __init__(self, kind, run_dir, rng):
        key_file = os.path.join(LOCAL, kind, "credentials.key")
        if not os.path.exists(key_file):
            with open(key_file, "w") as f:
                f.write(run(["openssl", "rand", "-base64", "32"]))
            os.chmod(key_file, 0o600)
        self.credentials_key = key_file
        self.admin_token = f"{kind}-" + secrets.token_hex(16)
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
        self.team_id = "".join(rng.choice(alphabet) for _ in range(10))
        self.key_id = "".join(rng.choice(alphabet) for _ in range(10))
        self.bundle_id, self.fcm_project = f"com.neotrips.{kind}", f"neotrips-{kind}"
        self.p8 = os.path.join(run_dir, f"AuthKey_{self.key_id}.p8")
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.p8])
        rsa = os.path.join(run_dir, "fcm-key.pem")
        run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsa])
        self.service_account = os.path.join(run_dir, "service-account.json")
        email = f"firebase-adminsdk-{kind}@{self.fcm_project}.iam.gserviceaccount.com"
        with open(rsa) as f:
            private_key = f.read()
        os.remove(rsa)
        with open(self.service_account, "w") as f:
            json.dump({"type": "service_account", "project_id": self.fcm_project, "private_key_id": secrets.token_hex(20),
                       "private_key": private_key, "client_email": email, "client_id": str(secrets.randbelow(10**21)),
                       "token_uri": "https://oauth2.googleapis.com/token"}, f)

    def environment(self):
        return {"PUSH_CREDENTIALS_KEY_FILE": self.credentials_key, "PUSH_ADMIN_TOKEN": self.admin_token, "PUSH_OPS_HOST": "127.0.0.1"}


class Channel:
    """The five services and both simulators of one run, supervised; `close()` stops them."""

    def __init__(self, kind, env, stack, bin_dir, run_dir, secrets_, log_capacity, latency_ms, settings=None, program="chaos"):
        self.env, self.stack, self.bin_dir, self.run_dir, self.secrets = env, stack, bin_dir, run_dir, secrets_
        self.program = program
        self.processes, self.simulators = {}, {}
        # SIGTERM (a CI timeout, kill) ends the run like Ctrl-C: the caller's `finally` stops
        # the processes, which run in their own sessions and would outlive it otherwise.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        env = dict(env, **secrets_.environment())
        self.env = env
        for name, extra in (("apns", ["--key", f"{secrets_.team_id}:{secrets_.key_id}:{secrets_.p8}", "--topic", secrets_.bundle_id]),
                            ("fcm", ["--service-account", secrets_.service_account])):
            port_file, ca_file = os.path.join(run_dir, f"{name}.port"), os.path.join(run_dir, f"{name}-ca.pem")
            process = Process(f"{name}-simulator", [os.path.join(bin_dir, f"{name}-simulator"), "--host", "127.0.0.1", "--port", "0",
                                                    "--port-file", port_file, "--ca-out", ca_file, "--log-capacity", str(log_capacity),
                                                    "--latency-ms", str(latency_ms)] + extra, env, log_prefix=kind)
            process.start()
            self.simulators[name] = Simulator(name, process, port_file, ca_file)
            self.processes[process.name] = process
        for sim in self.simulators.values():
            deadline = time.monotonic() + 60
            while not (os.path.exists(sim.ca_file) and os.path.exists(sim.port_file) and os.path.getsize(sim.port_file)):
                if time.monotonic() > deadline or sim.process.popen.poll() is not None:
                    fail(f"{sim.name}-simulator did not start (log {sim.process.log_path})", program)
                time.sleep(0.2)
            sim.connect()
            log(f"{sim.name}-simulator on {sim.base}")

        self.ports = {name: free_port() for name in SERVICES}
        self.registration_port, self.tracking_port, self.planning_admin_port = free_port(), free_port(), free_port()
        apns, fcm = self.simulators["apns"], self.simulators["fcm"]
        defaults = {
            "registration": {"REGISTRATION_HOST": "127.0.0.1", "REGISTRATION_PORT": str(self.registration_port), "REGISTRATION_RATE_PER_ADDRESS": "0"},
            "delivery-planning": {"PLANNER_ADMIN_HOST": "127.0.0.1", "PLANNER_ADMIN_PORT": str(self.planning_admin_port)},
            "apns-sender": {"APNS_PRODUCTION_URL": f"https://{apns.base}", "APNS_SANDBOX_URL": f"https://{apns.base}", "APNS_CA_FILE": apns.ca_file},
            "fcm-sender": {"FCM_BASE_URL": f"https://{fcm.base}", "FCM_TOKEN_URL": f"https://{fcm.base}/token", "FCM_CA_FILE": fcm.ca_file},
            "tracking-ingestion": {"TRACKING_HOST": "127.0.0.1", "TRACKING_PORT": str(self.tracking_port)},
        }
        for name in SERVICES:
            values = dict(defaults[name], **(settings or {}).get(name, {}))
            process = Process(name, [os.path.join(bin_dir, name)], dict(env, PUSH_OPS_PORT=str(self.ports[name]), **values),
                              self.ports[name], log_prefix=kind)
            process.start()
            self.processes[name] = process
        self.services = {name: self.processes[name] for name in SERVICES}
        self.pushctl_env = dict(env, PUSH_ADMIN_URL=f"http://127.0.0.1:{self.registration_port}",
                                PUSH_PLANNING_ADMIN_URL=f"http://127.0.0.1:{self.planning_admin_port}")
        self.pushctl = os.path.join(bin_dir, "pushctl")
        self.on_round = []  # called by the supervisor every 0.5 s
        threading.Thread(target=self._supervise, daemon=True).start()
        self.wait_until(120, "every service ready", lambda: all(p.ready() for p in self.services.values()))
        log("services ready: " + ", ".join(f"{n} :{p}" for n, p in self.ports.items())
            + f"; registration :{self.registration_port}, tracking :{self.tracking_port}")

    def _supervise(self):
        rounds = 0
        while not SHUTTING_DOWN.wait(0.5):
            rounds += 1
            for process in list(self.processes.values()):
                process.supervise()
            for callback in self.on_round:
                try:
                    callback(rounds)
                except Exception as e:  # keep supervising
                    log(f"supervisor: {e}")

    def wait_until(self, limit, what, predicate, every=0.5):
        deadline = time.monotonic() + limit
        while True:
            try:
                if predicate():
                    return
            except (subprocess.CalledProcessError, OSError):
                pass  # PostgreSQL or a service down for a moment: ask again
            if time.monotonic() > deadline:
                fail(f"{what} not reached within {limit:.0f} s", self.program)
            time.sleep(every)

    def pushctl_json(self, *arguments):
        return json.loads(run([self.pushctl, *arguments], env=self.pushctl_env))

    def create_service(self, name, label, credentials=True):
        """A service with an iOS and an Android app (and the run's credentials): their app
        records, once the registration endpoints know them."""
        run([self.pushctl, "services", "create", "--name", name, "--label", label], env=self.pushctl_env)
        params = ["--param", "email:string", "--param", "userPoints:integer"]
        ios = self.pushctl_json("apps", "create", "--service", name, "--platform", "ios", "--label", f"{label} iOS",
                                "--bundle-id", self.secrets.bundle_id, *params)
        android = self.pushctl_json("apps", "create", "--service", name, "--platform", "android", "--label", f"{label} Android",
                                    "--fcm-project-id", self.secrets.fcm_project, *params)
        if credentials:
            run([self.pushctl, "apps", "credentials", "--id", ios["appId"], "--p8", self.secrets.p8, "--key-id", self.secrets.key_id,
                 "--team-id", self.secrets.team_id], env=self.pushctl_env)
            run([self.pushctl, "apps", "credentials", "--id", android["appId"], "--service-account", self.secrets.service_account],
                env=self.pushctl_env)
        # The registration endpoints read the projected catalog: wait until it has both apps.
        self.wait_until(60, f"the catalog projected ({name})", lambda: self.stack.sql(
            f"SELECT count(*) FROM push.apps a JOIN push.services s USING (service_id) WHERE s.name = '{name}'") == "2")
        return ios, android

    def publish(self, request):
        subprocess.run(["kcat", "-P", "-b", self.env["KAFKA_BROKERS"], "-t", "push.delivery-requests", "-k", request["requestId"]],
                       input=json.dumps(request) + "\n", text=True, check=True, env=self.env, timeout=120)

    def close(self):
        SHUTTING_DOWN.set()
        for p in reversed(list(self.processes.values())):
            p.stop()
        try:
            os.kill(self.stack.tansu_pid(), signal.SIGCONT)
        except OSError:
            pass

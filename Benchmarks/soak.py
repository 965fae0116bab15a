#!/usr/bin/env python3
"""Soak: two `upgrade-cli serve` instances on one PostgreSQL database under mixed traffic for a
bounded time, sampling each instance's RSS, open descriptors, threads and database connections,
and the latency of each route, then checking that the counts return to their baseline.

    Benchmarks/soak.py [--seconds 600] [--cli PATH] [--postgres CLUSTER-URL] [--rate N]
                       [--row-seconds 60] [--sample-seconds 5] [--settle-seconds 30]

Processes: the Apple ID emulator (`upgrade-cli emulator serve`), two `serve` instances in
production mode on one fresh database, a webhook receiver in this process, and the traffic from
this process's worker threads, spread over both instances: upgrades without and with a TOTP
step-up, password changes, Apple sign-ins, server-to-server notifications (the emulator signs and
delivers them), account deletions (each revokes the Apple refresh token at the emulator), the
webhooks all of these send, and accounts provisioned in batches as the pools run low. Halfway
through, `upgrade-cli transfer prepare` runs as a batch against the same database (the half of a
transfer that runs while the app is still the sender's; `complete` needs the app moved to the
recipient team, which would stop the sender's servers).

Before the load, a warm-up drives every route on both instances with eight clients at once (so
that the connection pools are open), then the baseline is sampled. After the load and a settle
period (until the counts are back, at most --settle-seconds), each instance must have:
  - no more threads than at the baseline,
  - no more descriptors than at the baseline, apart from the connections it keeps alive,
  - of those, no more than the baseline or the cap, whichever is larger: to PostgreSQL 8 (the
    pool), to Apple 16 (two clients keeping 8 idle connections each), to the webhook endpoint 8.
    They stay open while idle and more of them may be open after a busy spell than before.
The exit status is 1 when one did not return, on a 5xx answer other than 503 (overload, with
Retry-After) or on a webhook whose signature did not verify, 0 otherwise.
RSS and the latencies are compared first row against last and printed, not judged by the exit
status: they move with the machine.

On the cluster --postgres names (its login needs CREATEDB, as Scripts/dev-postgres grants), in a
fresh database dropped at the end; without it a throwaway cluster from Scripts/dev-postgres.
Loopback only; every child process is stopped at the end, on Ctrl-C, and (PR_SET_PDEATHSIG) if
this script is killed.
"""
import argparse
import base64
import ctypes
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT_ID = "com.example.soak"
TEAM = "TEAMA12345"
# Connections an instance keeps open while idle, at most: PostgresStore's pool; AppleClientTransport's
# idle handles (8 each) for the two Apple clients (exchanges and revocations) and the webhook sender.
# Each of those 24 libcurl handles also keeps, once used, the socket pair of the multi handle that
# curl_easy_perform made inside it (its wake-up pair): two Unix sockets a handle, whether or not its
# connection is still open, so a run that leaves more handles idle than the baseline had holds more.
KEPT_ALIVE = {"db": 8, "apple": 16, "webhook": 8, "unix": 2 * (16 + 8)}
TOTP_SECRET = base64.b32encode(b"soak-totp-secret-20b").decode().rstrip("=")
PASSWORD = "Soak-Passw0rd-initial"

parser = argparse.ArgumentParser(description="Soak two serve instances on one PostgreSQL database.")
parser.add_argument("--seconds", type=float, default=600, help="length of the load (default 600)")
parser.add_argument("--cli", default=os.path.join(ROOT, ".build/release/upgrade-cli"))
parser.add_argument("--postgres", help="a cluster URL (postgres://...); default: Scripts/dev-postgres")
parser.add_argument("--rate", type=float, default=8, help="scenarios started per second (default 8)")
parser.add_argument("--workers", type=int, default=6, help="client threads (default 6)")
parser.add_argument("--row-seconds", type=float, default=60, help="one table row per this many seconds")
parser.add_argument("--sample-seconds", type=float, default=5, help="seconds between process samples")
parser.add_argument("--settle-seconds", type=float, default=30, help="longest wait for the counts to return")
parser.add_argument("--hold-open", type=int, default=0,
                    help="a self-check: hold this many connections to serve 1 open after the load (must fail)")
args = parser.parse_args()

children = []
cleanups = []
stopping = threading.Event()
libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: the child goes when this script goes.


def on_signal(number, _frame):
    raise KeyboardInterrupt(f"signal {number}")


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)  # also when started in the background, where it is ignored

# ---------------------------------------------------------------- processes


def start(arguments, environment, marker, log):
    """Starts the CLI with its output in a file (a pipe nobody reads would block it) and waits for
    `marker` in that output."""
    out = open(log, "w")
    process = subprocess.Popen([args.cli] + arguments, env={**os.environ, **environment}, stdout=out,
                               stderr=subprocess.STDOUT, text=True, preexec_fn=die_with_parent)
    children.append(process)
    deadline = time.time() + 60
    while True:
        text = open(log).read()
        if marker in text:
            return process, text
        if process.poll() is not None or time.time() > deadline:
            raise SystemExit(f"soak: {' '.join(arguments[:2])} did not start: {text[-2000:]}")
        time.sleep(0.1)


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cli(arguments, environment, stdin=None, timeout=300):
    return subprocess.run([args.cli] + arguments, env={**os.environ, **environment}, input=stdin,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=die_with_parent)


def postgres_environment(url):
    return {**os.environ, "PGHOST": url.hostname or "", "PGPORT": str(url.port or 5432),
            "PGUSER": urllib.parse.unquote(url.username or ""),
            "PGPASSWORD": urllib.parse.unquote(url.password or "")}


def fresh_database():
    """A new database on the cluster: --postgres's, or a throwaway one. Returns its URL."""
    cluster = args.postgres
    if cluster is None:
        started = subprocess.run([os.path.join(ROOT, "Scripts/dev-postgres")], capture_output=True, text=True,
                                 timeout=120)
        if started.returncode != 0:
            raise SystemExit(f"soak: Scripts/dev-postgres failed: {started.stderr.strip()}")
        values = dict(re.findall(r"^([A-Z_]+)=(.*)$", started.stdout, re.M))
        cluster = values["UPGRADE_DB"]
        directory = values["UPGRADE_DEV_POSTGRES_DIR"]
        cleanups.append(lambda: subprocess.run([os.path.join(ROOT, "Scripts/dev-postgres"), "--stop", directory],
                                               capture_output=True, timeout=120))
    url = urllib.parse.urlsplit(cluster)
    name = "soak_" + os.urandom(6).hex()
    environment = postgres_environment(url)
    maintenance = url.path.lstrip("/") or "postgres"
    created = subprocess.run(["createdb", "--maintenance-db", maintenance, name], env=environment,
                             capture_output=True, text=True, timeout=60)
    if created.returncode != 0:
        raise SystemExit(f"soak: createdb failed: {created.stderr.strip()}")
    cleanups.insert(0, lambda: subprocess.run(["dropdb", "--maintenance-db", maintenance, "--if-exists", "--force",
                                               name], env=environment, capture_output=True, timeout=60))
    return url._replace(path="/" + name)


def database_connections(url):
    """Backends connected to the soak's database, psql's own left out."""
    answer = subprocess.run(["psql", "-d", url.path.lstrip("/"), "-Atc",
                             "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                             "AND pid <> pg_backend_pid()"],
                            env=postgres_environment(url), capture_output=True, text=True, timeout=30)
    return int(answer.stdout.strip()) if answer.returncode == 0 else -1


# ---------------------------------------------------------------- sampling


def unix_sockets(pid):
    """The inodes of the Unix sockets in the process's network namespace."""
    try:
        lines = open(f"/proc/{pid}/net/unix").read().splitlines()[1:]
    except OSError:
        return set()
    return {line.split()[6] for line in lines if len(line.split()) > 6}


def socket_table(pid):
    """inode -> (local port, remote port, state) for the process's network namespace."""
    table = {}
    for name in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{name}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            table[inode] = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16), state)
    return table


def sample(instance):
    """One instance's RSS (MiB), threads, descriptors and what its sockets are connected to."""
    pid = instance["process"].pid
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1)) / 1024
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    table = socket_table(pid)
    unix = unix_sockets(pid)
    counts = {"db": 0, "clients": 0, "apple": 0, "webhook": 0, "unix": 0, "otherSockets": 0}
    descriptors = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        descriptors += 1
        found = re.fullmatch(r"socket:\[(\d+)\]", target)
        if found and found.group(1) in unix:
            counts["unix"] += 1
            continue
        if not found or found.group(1) not in table:
            continue
        local, remote, state = table[found.group(1)]
        if state == "0A":  # LISTEN
            continue
        if remote == instance["databasePort"]:
            counts["db"] += 1
        elif local == instance["port"]:
            counts["clients"] += 1
        elif remote == instance["applePort"]:
            counts["apple"] += 1
        elif remote == instance["webhookPort"]:
            counts["webhook"] += 1
        else:
            counts["otherSockets"] += 1
    return {"at": time.time(), "rss": rss, "threads": threads, "fds": descriptors, **counts}


# ---------------------------------------------------------------- webhooks


class WebhookReceiver(BaseHTTPRequestHandler):
    """Verifies each delivery's Standard Webhooks signature and counts it by type."""
    protocol_version = "HTTP/1.1"
    key = b""
    lock = threading.Lock()
    received = {}
    bad = 0

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        signed = f"{self.headers.get('webhook-id')}.{self.headers.get('webhook-timestamp')}.".encode() + body
        expected = base64.b64encode(hmac.new(WebhookReceiver.key, signed, hashlib.sha256).digest()).decode()
        offered = [part.split(",", 1)[1] for part in self.headers.get("webhook-signature", "").split() if "," in part]
        good = any(hmac.compare_digest(expected, candidate) for candidate in offered)
        with WebhookReceiver.lock:
            if good:
                kind = json.loads(body).get("type", "?")
                WebhookReceiver.received[kind] = WebhookReceiver.received.get(kind, 0) + 1
            else:
                WebhookReceiver.bad += 1
        self.send_response(204 if good else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


# ---------------------------------------------------------------- traffic


class Recorder:
    """Latencies by route and row, and the answers no scenario expected."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = {}  # (route, row) -> [seconds]
        self.unexpected = {}  # (route, status) -> count
        self.load_start = None

    def record(self, route, seconds, status, expected, problem):
        with self.lock:
            if self.load_start is not None:
                # The last scenarios finish just after the load's end: they count in its last row.
                row = min(int((time.time() - self.load_start) // args.row_seconds), rows_of_load() - 1)
                self.latencies.setdefault((route, row), []).append(seconds)
            if status not in expected:
                key = (route, status, problem)
                self.unexpected[key] = self.unexpected.get(key, 0) + 1


recorder = Recorder()


def rows_of_load():
    return max(1, int(-(-args.seconds // args.row_seconds)))


class Client:
    """Keep-alive HTTP/1.1 connections of one worker, one per base URL, reopened now and then so
    that the servers also accept and close connections through the run."""

    def __init__(self):
        self.connections = {}
        self.uses = {}

    def call(self, base, method, path, body=None, headers=None, route=None, expected=(200, 201)):
        split = urllib.parse.urlsplit(base)
        data = json.dumps(body).encode() if body is not None else None
        headers = {**(headers or {}), **({"Content-Type": "application/json"} if data is not None else {})}
        for _ in range(2):
            connection = self.connections.get(base)
            reused = connection is not None
            if connection is None:
                connection = http.client.HTTPConnection(split.hostname, split.port, timeout=60)
                self.connections[base], self.uses[base] = connection, 0
            began = time.perf_counter()
            try:
                connection.request(method, path, body=data, headers=headers)
                answer = connection.getresponse()
                raw = answer.read()
            except (http.client.HTTPException, OSError):
                connection.close()
                del self.connections[base]
                if not reused:
                    raise
                continue  # the server closed an idle keep-alive connection: once more on a new one
            elapsed = time.perf_counter() - began
            self.uses[base] += 1
            if self.uses[base] >= 50 or answer.getheader("Connection", "").lower() == "close":
                connection.close()
                del self.connections[base]
            try:
                decoded = json.loads(raw or b"{}")
            except ValueError:
                decoded = {}
            if route is not None:
                problem = decoded.get("type", "").rsplit("/", 1)[-1] if isinstance(decoded, dict) else ""
                recorder.record(route, elapsed, answer.status, expected, problem)
            return answer.status, decoded
        raise OSError("unreachable")

    def close(self):
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()


def totp(secret, at=None):
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    digest = hmac.new(key, struct.pack(">Q", int((at or time.time()) // 30)), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


class World:
    """The accounts the traffic works on, by what can be done with them next."""

    def __init__(self, apple, bases, admin, password_hash):
        self.apple, self.bases, self.admin, self.password_hash = apple, bases, admin, password_hash
        self.lock = threading.Lock()
        self.plain = []  # [username, password]
        self.twoFactor = []  # [username, password]
        self.converted = []  # {username, userId}
        self.provisioning = False
        self.next = 0
        self.counts = {}

    def count(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def base(self):
        return random.choice(self.bases)

    def provision(self, client, count=100):
        with self.lock:
            if self.provisioning:
                return
            self.provisioning = True
            first, self.next = self.next, self.next + count
        try:
            rows = []
            for index in range(first, first + count):
                row = {"username": f"soak{index}", "passwordHash": self.password_hash}
                if index % 3 == 0:
                    row["totp"] = f"otpauth://totp/Soak:soak{index}?secret={TOTP_SECRET}&issuer=Soak"
                rows.append(row)
            status, answer = client.call(self.base(), "POST", "/v1/admin/accounts/batch", {"accounts": rows},
                                         self.admin, route="POST /v1/admin/accounts/batch", expected=(200,))
            created = {result["username"] for result in answer.get("results", []) if result.get("action") == "created"}
            with self.lock:
                for row in rows:
                    if row["username"] in created:
                        (self.twoFactor if "totp" in row else self.plain).append([row["username"], PASSWORD])
        finally:
            with self.lock:
                self.provisioning = False

    def take(self, pool):
        with self.lock:
            return pool.pop(random.randrange(len(pool))) if pool else None

    def upgrade(self, client, two_factor):
        account = self.take(self.twoFactor if two_factor else self.plain)
        if account is None:
            return self.provision(client)
        username, password = account
        base = self.base()
        status, started = client.call(base, "POST", "/v1/upgrades", {"username": username, "password": password,
                                      "serviceIdentifier": "soak.example.com"}, route="POST /v1/upgrades",
                                      expected=(201,))
        if status != 201:
            return
        if started.get("status") == "stepUpRequired":
            status, started2 = client.call(base, "POST", f"/v1/upgrades/{started['id']}/step-up",
                                           {"code": totp(TOTP_SECRET)}, route="POST /v1/upgrades/{id}/step-up",
                                           expected=(200,))
            if status != 200:
                return
            started = {**started2, "id": started["id"]}
        _, user = client.call(self.apple, "POST", "/emulator/users", {"email": f"{username}@example.com"})
        _, sheet = client.call(self.apple, "POST", "/emulator/authorize",
                               {"userId": user["userId"], "clientId": CLIENT_ID, "nonce": started["nonce"],
                                "state": started["state"], "emailMode": "hidden"})
        status, done = client.call(base, "POST", f"/v1/upgrades/{started['id']}/apple-credential",
                                   {"identityToken": sheet["identityToken"],
                                    "authorizationCode": sheet["authorizationCode"], "state": started["state"]},
                                   route="POST /v1/upgrades/{id}/apple-credential", expected=(200,))
        if status == 200 and done.get("status") == "completed":
            self.count("upgrades with step-up" if two_factor else "upgrades")
            with self.lock:
                self.converted.append({"username": username, "userId": user["userId"], "forwarding": True})

    def change_password(self, client):
        account = self.take(self.plain)
        if account is None:
            return self.provision(client)
        new = f"Soak-Passw0rd-{os.urandom(6).hex()}"
        status, answer = client.call(self.base(), "POST", "/v1/password-changes",
                                     {"username": account[0], "password": account[1], "newPassword": new,
                                      "serviceIdentifier": "soak.example.com"}, route="POST /v1/password-changes",
                                     expected=(201,))
        if status == 201 and answer.get("status") == "completed":
            self.count("password changes")
            account[1] = new
        with self.lock:
            self.plain.append(account)

    def pick_converted(self):
        with self.lock:
            return random.choice(self.converted) if self.converted else None

    def sign_in(self, client):
        account = self.pick_converted()
        if account is None:
            return
        base = self.base()
        _, issued = client.call(base, "POST", "/v1/apple/sign-in/nonce", route="POST /v1/apple/sign-in/nonce",
                                expected=(201,))
        _, sheet = client.call(self.apple, "POST", "/emulator/authorize",
                               {"userId": account["userId"], "clientId": CLIENT_ID, "nonce": issued.get("nonce", "")})
        status, _ = client.call(base, "POST", "/v1/apple/sign-in", {"identityToken": sheet.get("identityToken", "")},
                                route="POST /v1/apple/sign-in", expected=(200,))
        if status == 200:
            self.count("sign-ins")

    def notify(self, client):
        account = self.pick_converted()
        if account is None:
            return
        with self.lock:
            account["forwarding"] = not account["forwarding"]
            enabled = account["forwarding"]
        client.call(self.apple, "POST", f"/emulator/users/{account['userId']}/email-forwarding",
                    {"teamId": TEAM, "enabled": enabled})
        status, answer = client.call(self.apple, "POST", "/emulator/notifications/deliver",
                                     {"url": self.base() + "/v1/apple/notifications"},
                                     route="emulator delivers to POST /v1/apple/notifications", expected=(200,))
        delivered = answer.get("delivered", [])
        for _ in delivered if isinstance(delivered, list) else range(int(delivered or 0)):
            self.count("notifications")

    def delete(self, client):
        with self.lock:
            if len(self.converted) <= 20:
                return
            account = self.converted.pop(random.randrange(len(self.converted)))
        status, answer = client.call(self.base(), "DELETE", f"/v1/admin/accounts/{account['username']}",
                                     headers=self.admin, route="DELETE /v1/admin/accounts/{username}", expected=(200,))
        if status == 200:
            self.count("deletions, revocation " + str(answer.get("appleRevocation")))


SCENARIOS = [("upgrade", 3), ("upgrade-step-up", 2), ("password-change", 2), ("sign-in", 4), ("notification", 2),
             ("deletion", 1)]


def run_scenario(world, client, name):
    if name == "upgrade":
        world.upgrade(client, two_factor=False)
    elif name == "upgrade-step-up":
        world.upgrade(client, two_factor=True)
    elif name == "password-change":
        world.change_password(client)
    elif name == "sign-in":
        world.sign_in(client)
    elif name == "notification":
        world.notify(client)
    else:
        world.delete(client)
    with world.lock:
        low = len(world.plain) < 60 or len(world.twoFactor) < 30
    if low:
        world.provision(client)


def warm_up(world):
    client = Client()
    try:
        for name, _ in SCENARIOS * 2:
            run_scenario(world, client, name)
    finally:
        client.close()


def worker(world, until, pace):
    """Runs scenarios until `until`, taking one start slot from `pace` for each."""
    client = Client()
    names = [name for name, weight in SCENARIOS for _ in range(weight)]
    try:
        while time.time() < until and not stopping.is_set():
            if not pace():
                break
            try:
                run_scenario(world, client, random.choice(names))
            except (OSError, http.client.HTTPException, KeyError) as error:
                world.count(f"scenario errors ({type(error).__name__})")
    finally:
        client.close()


def pacer(rate, until):
    """A shared start schedule: at most `rate` scenario starts per second."""
    lock = threading.Lock()
    state = {"next": time.time()}

    def take():
        with lock:
            slot = max(state["next"], time.time())
            state["next"] = slot + 1 / rate
        delay = slot - time.time()
        if slot >= until:
            return False
        if delay > 0:
            stopping.wait(delay)
        return not stopping.is_set()

    return take


# ---------------------------------------------------------------- report


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def print_tables(instances, samples, load_start, rows):
    print(f"\nper instance and row of {args.row_seconds:g} s (the row's largest sample):")
    print(f"{'':>10} {'row':>4} {'RSS MiB':>8} {'fds':>5} {'threads':>7} {'db':>3} {'clients':>7} {'apple':>5} "
          f"{'webhook':>7}")
    for index, instance in enumerate(instances):
        for row in range(rows):
            inside = [s for s in samples[index] if load_start + row * args.row_seconds <= s["at"]
                      < load_start + (row + 1) * args.row_seconds]
            if not inside:
                continue
            peak = {key: max(s[key] for s in inside) for key in inside[0] if key != "at"}
            print(f"{'serve ' + str(index + 1):>10} {row + 1:>4} {peak['rss']:8.1f} {peak['fds']:5d} "
                  f"{peak['threads']:7d} {peak['db']:3d} {peak['clients']:7d} {peak['apple']:5d} {peak['webhook']:7d}")
    routes = sorted({route for route, _ in recorder.latencies})
    print("\nlatency per route and row, both instances (ms: p50 / p99, count):")
    for route in routes:
        cells = []
        for row in range(rows):
            values = recorder.latencies.get((route, row), [])
            cells.append(f"{percentile(values, 0.5) * 1000:6.1f} /{percentile(values, 0.99) * 1000:7.1f} ({len(values)})"
                         if values else "-")
        print(f"  {route}")
        print("    " + " | ".join(cells))


def main():
    script_start = time.time()
    if not os.access(args.cli, os.X_OK):
        raise SystemExit(f"soak: no upgrade-cli at {args.cli} (swift build -c release)")
    workdir = tempfile.mkdtemp(prefix="siwa-soak-")
    cleanups.append(lambda: shutil.rmtree(workdir, ignore_errors=True))
    os.chdir(workdir)
    database = fresh_database()

    emulator, output = start(["emulator", "serve", "--port", "0", "--team", TEAM, "--client-id", CLIENT_ID,
                              "--private-key-out", "apple.p8"], {}, "APPLE_BASE_URL=", "emulator.log")
    settings = dict(re.findall(r"^(APPLE_[A-Z_]+)=(.*)$", output, re.M))
    apple = settings["APPLE_BASE_URL"]

    with open("secret.key", "wb") as key:
        key.write(os.urandom(32))
    os.chmod("secret.key", 0o600)
    webhook_key = os.urandom(32)
    with open("webhook.secret", "w") as secret:
        secret.write("whsec_" + base64.b64encode(webhook_key).decode())
    os.chmod("webhook.secret", 0o600)
    WebhookReceiver.key = webhook_key
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), WebhookReceiver)
    receiver.daemon_threads = True
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    cleanups.insert(0, receiver.shutdown)

    environment = {**settings, "UPGRADE_DB": urllib.parse.urlunsplit(database),
                   "UPGRADE_SECRET_KEY_FILE": "secret.key", "UPGRADE_LISTEN": "127.0.0.1:0",
                   "UPGRADE_ADMIN_TOKENS_FILE": "admin.tokens",
                   "UPGRADE_WEBHOOK_URL": f"http://127.0.0.1:{receiver.server_address[1]}/hooks",
                   "UPGRADE_WEBHOOK_SECRET_FILE": "webhook.secret"}
    migrated = cli(["db", "migrate"], environment)
    if migrated.returncode != 0:
        raise SystemExit(f"soak: db migrate failed: {migrated.stderr.strip()}")
    token = cli(["admin", "tokens", "add", "soak", "--scopes", "accounts,provisioning", "--file", "admin.tokens"],
                environment)
    if token.returncode != 0:
        raise SystemExit(f"soak: admin tokens add failed: {token.stderr.strip()}")
    admin = {"Authorization": "Bearer " + token.stdout.strip().splitlines()[-1]}

    instances = []
    for index in range(2):
        process, text = start(["serve"], environment, "listening on http://", f"serve{index + 1}.log")
        port = int(re.search(r"listening on http://127\.0\.0\.1:(\d+)", text).group(1))
        instances.append({"process": process, "port": port, "base": f"http://127.0.0.1:{port}",
                          "databasePort": database.port or 5432, "applePort": urllib.parse.urlsplit(apple).port,
                          "webhookPort": receiver.server_address[1]})
    import argon2  # argon2-cffi, which Scripts/setup installs; cheap parameters, as upgrade-scale uses.
    password_hash = argon2.PasswordHasher(time_cost=1, memory_cost=256, parallelism=1).hash(PASSWORD)
    world = World(apple, [instance["base"] for instance in instances], admin, password_hash)
    print(f"soak: two serve instances on one PostgreSQL database, {args.seconds:g} s of load at {args.rate:g} "
          f"scenarios/s from {args.workers} clients, {args.cli}")

    # Warm-up: every route on both instances, eight clients at once per instance.
    setup = Client()
    for _ in range(4):
        world.provision(setup)
    setup.close()
    for base in world.bases:
        world.bases = [base]
        threads = [threading.Thread(target=warm_up, args=(world,)) for _ in range(8)]
        [thread.start() for thread in threads]
        [thread.join() for thread in threads]
    world.bases = [instance["base"] for instance in instances]
    time.sleep(3)
    baseline = [sample(instance) for instance in instances]
    baseline_total = database_connections(database)
    print("baseline after warm-up: " + "; ".join(
        f"serve {i + 1}: RSS {b['rss']:.1f} MiB, {b['fds']} fds, {b['threads']} threads, {b['db']} db"
        for i, b in enumerate(baseline)) + f"; {baseline_total} backends on the database")

    print(f"set up in {time.time() - script_start:.0f} s (warm-up included)")
    samples = [[] for _ in instances]
    load_start = time.time()
    until = load_start + args.seconds
    recorder.load_start = load_start
    world.counts.clear()
    pace = pacer(args.rate, until)
    workers = [threading.Thread(target=worker, args=(world, until, pace)) for _ in range(args.workers)]
    [thread.start() for thread in workers]
    transfer = {}

    def run_transfer():
        began = time.time()
        answer = cli(["transfer", "prepare", "--target-team", "TEAMB67890", "--report", "prepare.jsonl"], environment,
                     timeout=max(60, args.seconds))
        reasons = {}
        if os.path.exists("prepare.jsonl"):
            for line in open("prepare.jsonl"):
                row = json.loads(line)
                if row.get("outcome") != "succeeded":
                    reason = f"{row.get('outcome')} ({row.get('reason')})"
                    reasons[reason] = reasons.get(reason, 0) + 1
        transfer.update(seconds=time.time() - began, code=answer.returncode, reasons=reasons,
                        line=(answer.stdout.strip().splitlines() or [answer.stderr.strip()])[-1],
                        at=began - load_start)

    transfer_thread = threading.Thread(target=run_transfer)
    transfer_started = False
    while time.time() < until:
        for index, instance in enumerate(instances):
            samples[index].append(sample(instance))
        if not transfer_started and time.time() >= load_start + args.seconds / 2:
            transfer_started = True
            transfer_thread.start()
        stopping.wait(min(args.sample_seconds, max(0, until - time.time())))
    [thread.join() for thread in workers]
    if transfer_started:
        transfer_thread.join()
    load_end = time.time()

    # Settle: until every count is back, at most --settle-seconds.
    def returned(now, then):
        kept = ("db", "apple", "webhook", "unix")
        return (now["fds"] - sum(now[key] for key in kept) <= then["fds"] - sum(then[key] for key in kept)
                and now["threads"] <= then["threads"]
                and all(now[key] <= max(then[key], KEPT_ALIVE[key]) for key in kept))

    # The self-check: connections this script holds open to serve 1 must make the check fail.
    # (A request on each every second, so that the server's idle deadline does not close them.)
    held = [http.client.HTTPConnection("127.0.0.1", instances[0]["port"]) for _ in range(args.hold_open)]

    def keep_held():
        for connection in held:
            connection.request("GET", "/healthz")
            connection.getresponse().read()

    keep_held()
    after = [sample(instance) for instance in instances]
    while time.time() < load_end + args.settle_seconds and not all(map(returned, after, baseline)):
        time.sleep(1)
        keep_held()
        after = [sample(instance) for instance in instances]
    after_total = database_connections(database)
    [connection.close() for connection in held]
    settled = time.time() - load_end

    rows = rows_of_load()
    print_tables(instances, samples, load_start, rows)
    print("\nwhat the load did: " + ", ".join(f"{value} {key}" for key, value in sorted(world.counts.items())))
    with WebhookReceiver.lock:
        print("webhooks received and verified: " + ", ".join(
            f"{value} {key}" for key, value in sorted(WebhookReceiver.received.items()))
            + f"; {WebhookReceiver.bad} with a bad signature")
    if transfer:
        print(f"transfer prepare at {transfer['at']:.0f} s into the load: exit {transfer['code']} in "
              f"{transfer['seconds']:.1f} s: {transfer['line']}"
              + "".join(f"; {count} × {reason}" for reason, count in transfer["reasons"].items()))
    failed = False
    if recorder.unexpected:
        print("unexpected answers: " + ", ".join(f"{count} × {status} {problem} on {route}" for (route, status, problem),
                                               count in sorted(recorder.unexpected.items())))
        # A 503 is the documented answer to overload (Retry-After); any other 5xx is a fault.
        failed = any(status >= 500 and status != 503 for _, status, _ in recorder.unexpected)
    failed = failed or WebhookReceiver.bad > 0

    print("\nfirst row against last (largest sample of each), and after the load:")
    for index, instance in enumerate(instances):
        first = [s for s in samples[index] if s["at"] < load_start + args.row_seconds]
        last = [s for s in samples[index] if s["at"] >= load_start + (rows - 1) * args.row_seconds]
        for key, unit in (("rss", "MiB"), ("fds", ""), ("threads", ""), ("db", "")):
            a, b = max(s[key] for s in first), max(s[key] for s in last)
            # Flat: RSS within 10% or 8 MiB of the first row's, a count within a quarter of it.
            flat = b - a <= max(0.1 * a, 8) if key == "rss" else b <= a * 1.25
            print(f"  serve {index + 1} {key:>7}: first {a:8.1f} last {b:8.1f} {unit:3} "
                  f"({(b - a) / a * 100 if a else 0:+.0f}%) {'flat' if flat else 'GREW'}")
        ok = returned(after[index], baseline[index])
        failed = failed or not ok
        b, a = baseline[index], after[index]
        print(f"  serve {index + 1} after {settled:.0f} s of settling: fds {b['fds']} -> {a['fds']} "
              f"(database sockets {b['db']} -> {a['db']}, clients {b['clients']} -> {a['clients']}, "
              f"apple {b['apple']} -> {a['apple']}, webhook {b['webhook']} -> {a['webhook']}, "
              f"libcurl wake-up sockets {b['unix']} -> {a['unix']}), threads "
              f"{b['threads']} -> {a['threads']}: {'RETURNED' if ok else 'DID NOT RETURN'}")
    print(f"  backends on the database: {baseline_total} -> {after_total} (the CLI batch's closed with it)")
    for route in sorted({route for route, _ in recorder.latencies}):
        first = recorder.latencies.get((route, 0), [])
        last = recorder.latencies.get((route, rows - 1), [])
        if first and last:
            print(f"  p99 {route}: first {percentile(first, 0.99) * 1000:.1f} ms, last "
                  f"{percentile(last, 0.99) * 1000:.1f} ms")
    print("soak: " + ("FAILED: a count did not return to its baseline or a request failed" if failed
                      else "every count returned to its baseline"))
    return 1 if failed else 0


try:
    code = main()
except KeyboardInterrupt:
    stopping.set()
    code = 130
finally:
    stopping.set()
    for child in children:
        stop(child)
    for cleanup in cleanups:
        try:
            cleanup()
        except Exception:  # noqa: BLE001 - cleanup goes on whatever one step did
            pass
sys.exit(code)

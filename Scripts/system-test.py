#!/usr/bin/env python3
"""System test across real processes: the Apple ID emulator (`upgrade-cli emulator serve`), the
server in production mode (`upgrade-cli serve`) reaching it through the HTTPS client path, and the
batch CLI. A password account is upgraded over HTTP, then its app moves from team A to team B:
`transfer prepare` with A's credentials, the app transfer, `transfer complete` with B's. The old
sub must read `transferred`, B's sub must sign in to the same account, and the reports must hold
no sub. Loopback only; every process is stopped at the end; bounded by timeouts.

    Scripts/system-test.py [--postgres CLUSTER-URL] [PATH-TO-upgrade-cli]

On SQLite by default; with --postgres, on a fresh database created on that cluster (its login needs
CREATEDB, as Scripts/dev-postgres grants) and dropped at the end.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

arguments = sys.argv[1:]
POSTGRES = None
if arguments[:1] == ["--postgres"]:
    if len(arguments) < 2 or not arguments[1].startswith(("postgres://", "postgresql://")):
        raise SystemExit("system-test: --postgres needs a postgres:// URL")
    POSTGRES = urllib.parse.urlsplit(arguments[1])
    arguments = arguments[2:]
CLI = os.path.abspath(arguments[0]) if arguments else None
if CLI is None:
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], capture_output=True, text=True, check=True).stdout.strip()
    CLI = os.path.join(bin_path, "upgrade-cli")
children = []


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def get(url):
    with urllib.request.urlopen(url, timeout=20) as answer:
        return json.loads(answer.read())


def start(arguments, environment, marker):
    process = subprocess.Popen([CLI] + arguments, env={**os.environ, **environment}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    children.append(process)
    output, deadline = "", time.time() + 30
    while marker not in output:
        line = process.stdout.readline()
        if not line or time.time() > deadline:
            raise SystemExit(f"system-test: {' '.join(arguments[:2])} did not start: {output}")
        output += line
    return process, output


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def cli(arguments, environment, stdin=None):
    return subprocess.run([CLI] + arguments, env={**os.environ, **environment}, input=stdin, capture_output=True, text=True, timeout=120)


def check(condition, what):
    if not condition:
        raise SystemExit(f"system-test: FAILED: {what}")
    print(f"ok  {what}")


WORKDIR = tempfile.mkdtemp(prefix="siwa-system-")
FRESH_DATABASE = "system_" + os.urandom(6).hex()


def postgres_tool(tool, *arguments):
    """createdb or dropdb on the --postgres cluster; the password goes by environment, never argv."""
    environment = {**os.environ, "PGHOST": POSTGRES.hostname or "", "PGPORT": str(POSTGRES.port or 5432),
                   "PGUSER": urllib.parse.unquote(POSTGRES.username or ""),
                   "PGPASSWORD": urllib.parse.unquote(POSTGRES.password or "")}
    maintenance = POSTGRES.path.lstrip("/") or "postgres"
    return subprocess.run([tool, "--maintenance-db", maintenance, *arguments, FRESH_DATABASE], env=environment,
                          capture_output=True, text=True, timeout=60)


def database_url():
    if POSTGRES is None:
        return "sqlite:system.db"
    created = postgres_tool("createdb")
    if created.returncode != 0:
        raise SystemExit(f"system-test: createdb failed: {created.stderr.strip()}")
    return urllib.parse.urlunsplit(POSTGRES._replace(path="/" + FRESH_DATABASE))


def main():
    os.chdir(WORKDIR)
    emulator, output = start(["emulator", "serve", "--port", "0", "--team", "TEAMA12345", "--client-id", "com.example.app",
                              "--private-key-out", "team-a.p8", "--user", "alice@example.com"], {}, "APPLE_BASE_URL=")
    settings = dict(re.findall(r"^(APPLE_[A-Z_]+)=(.*)$", output, re.M))
    apple_user = re.search(r"userId (\S+)", output).group(1)
    apple = settings["APPLE_BASE_URL"]
    with open("secret.key", "wb") as key:
        key.write(os.urandom(32))
    os.chmod("secret.key", 0o600)
    print("system-test: on " + ("PostgreSQL, a fresh database" if POSTGRES else "SQLite"))
    team_a = {**settings, "UPGRADE_DB": database_url(), "UPGRADE_SECRET_KEY_FILE": "secret.key", "UPGRADE_LISTEN": "127.0.0.1:0"}
    check(cli(["db", "migrate"], team_a).returncode == 0, "db migrate")
    check(cli(["accounts", "add", "alice"], team_a, stdin="pw-alice").returncode == 0, "accounts add alice")

    server, output = start(["serve"], team_a, "listening on http://")
    api = re.search(r"listening on (http://127\.0\.0\.1:\d+)", output).group(1)
    status, started = post(api + "/v1/upgrades", {"username": "alice", "password": "pw-alice", "serviceIdentifier": "s"})
    check(status == 201 and started.get("status") == "awaitingAppleCredential", "password accepted, state and nonce issued")
    status, sheet = post(apple + "/emulator/authorize", {"userId": apple_user, "clientId": "com.example.app",
                                                         "nonce": started["nonce"], "state": started["state"]})
    check(status == 200 and sheet.get("state") == started["state"], "Apple's sheet echoes the state")
    status, done = post(api + f"/v1/upgrades/{started['id']}/apple-credential",
                        {"identityToken": sheet["identityToken"], "authorizationCode": sheet["authorizationCode"], "state": started["state"]})
    check(status == 200 and done.get("status") == "completed", "upgrade completed through the HTTPS client")
    old_sub = sheet["user"]
    stop(server)

    prepared = cli(["transfer", "prepare", "--target-team", "TEAMB67890", "--report", "prepare.jsonl"], team_a)
    check(prepared.returncode == 0 and "1 succeeded" in prepared.stdout, "transfer prepare (team A)")
    check(post(apple + "/emulator/teams", {"teamId": "TEAMB67890"})[0] == 201, "team B exists")
    status, key = post(apple + "/emulator/teams/TEAMB67890/keys", {"keyId": "KEYB000001"})
    with open(os.open("team-b.p8", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as pem:
        pem.write(key["privateKeyPem"])
    check(post(apple + "/emulator/apps/com.example.app/transfer", {"toTeamId": "TEAMB67890"})[0] == 200, "app transferred to team B")
    team_b = {**team_a, "APPLE_TEAM_ID": "TEAMB67890", "APPLE_KEY_ID": "KEYB000001", "APPLE_PRIVATE_KEY_FILE": "team-b.p8"}
    completed = cli(["transfer", "complete", "--accepted-at", str(int(time.time())), "--report", "complete.jsonl"], team_b)
    check(completed.returncode == 0 and "1 succeeded" in completed.stdout, "transfer complete (team B)")
    again = cli(["transfer", "complete", "--accepted-at", str(int(time.time())), "--report", "again.jsonl"], team_b)
    check(again.returncode == 0 and "1 succeeded" not in again.stdout, "a second complete does nothing twice")

    server, output = start(["serve"], team_b, "listening on http://")
    api = re.search(r"listening on (http://127\.0\.0\.1:\d+)", output).group(1)
    check(get(api + "/v1/apple/credential-state?user=" + old_sub)["state"] == "transferred", "the old sub reads transferred")
    status, issued = post(api + "/v1/apple/sign-in/nonce", {})
    check(status == 201 and issued.get("nonce"), "the server issues a sign-in nonce")
    status, fresh = post(apple + "/emulator/authorize", {"userId": apple_user, "clientId": "com.example.app", "nonce": issued["nonce"]})
    status, signed = post(api + "/v1/apple/sign-in", {"identityToken": fresh["identityToken"]})
    check(status == 200 and signed.get("accountId") == done.get("accountId") and signed.get("sub") != old_sub,
          "team B's sub signs in to the same account")
    status, replayed = post(api + "/v1/apple/sign-in", {"identityToken": fresh["identityToken"]})
    check(status == 400 and replayed.get("type", "").endswith("/nonce-mismatch"), "the same token cannot sign in twice")
    check(get(api + "/v1/apple/credential-state?user=" + fresh["user"])["state"] == "authorized", "the new sub reads authorized")
    reports = open("prepare.jsonl").read() + open("complete.jsonl").read()
    check(old_sub not in reports and fresh["user"] not in reports, "the reports hold no sub")
    print("system-test: passed on " + ("PostgreSQL" if POSTGRES else "SQLite"))


try:
    main()
finally:
    for child in children:
        stop(child)
    if POSTGRES is not None:
        postgres_tool("dropdb", "--if-exists", "--force")
    shutil.rmtree(WORKDIR, ignore_errors=True)

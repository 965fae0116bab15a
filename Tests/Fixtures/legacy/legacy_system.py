#!/usr/bin/env python3
"""A legacy login system for the tests of lazy verification (docs/legacy-verification.md), written
independently of the server: every request's Standard Webhooks signature is checked with the
`standardwebhooks` package, and passwords against its own table hashed with python `bcrypt`.

usage: legacy_system.py --secret-file FILE --table FILE [--log FILE] [--mode MODE] [--max-seconds N]

  --table        JSON {"username": {"password": ..., "email"?: ..., "displayName"?: ...}}, hashed with
                 bcrypt at startup (cost 4: the tests need the answer, not the cost)
  --secret-file  the whsec_ secret (first line), as the server's UPGRADE_LEGACY_VERIFY_SECRET_FILE
  --log          also append each record below to this file, one JSON object a line
  --mode         the starting mode (default normal)
  --max-seconds  exit by itself after this long (default 300), so a test that dies leaves nothing behind

Listens on 127.0.0.1, port chosen by the system, printed alone on the first line of stdout.

  POST /verify (any path but the ones below)  the password.verify endpoint; answers by mode:
      normal     200 {"result": "match", "profile": {...}} / {"result": "mismatch"} / {"result": "unknown"}
      status500  500
      redirect   302 to /redirected on this server, which records the hit ("redirectFollowed": true)
                 and answers "match" (GET or POST), the answer a server that follows would wrongly take
      stall      records the call, sleeps `seconds` (default 30), then answers as normal
      garbage    200 with a body that is not JSON
      badresult  200 {"result": "yes"}
    A request whose signature (or timestamp) does not verify is answered 401 in every mode.
  POST /control  {"mode": MODE, "seconds"?: N}  switches the mode; answers {"mode": ..., "seconds": ...}
  GET  /log      {"requests": [record, ...]} in arrival order
  POST /log/clear  forgets the records

A record: {"path", "webhookId", "verified" (the signature), "username" (null unless verified),
"mode", "answered" ("match", "mismatch", "unknown", or the mode's name for the other modes, "stall"
included; "refused" (401) or "malformed" (400))}, plus "why" when refused. Never the password.
"""
import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import bcrypt
from standardwebhooks import Webhook

MODES = {"normal", "status500", "redirect", "stall", "garbage", "badresult"}

parser = argparse.ArgumentParser()
parser.add_argument("--secret-file", required=True)
parser.add_argument("--table", required=True)
parser.add_argument("--log")
parser.add_argument("--mode", default="normal", choices=sorted(MODES))
parser.add_argument("--max-seconds", type=float, default=300)
options = parser.parse_args()

with open(options.secret_file) as secret_file:
    webhook = Webhook(secret_file.readline().strip())
with open(options.table) as table_file:
    table = {
        username: {
            "hash": bcrypt.hashpw(entry["password"].encode(), bcrypt.gensalt(rounds=4)),
            "profile": {key: entry[key] for key in ("email", "displayName") if key in entry},
        }
        for username, entry in json.load(table_file).items()
    }

lock = threading.Lock()
state = {"mode": options.mode, "seconds": 30.0}
records = []


def record(entry):
    with lock:
        records.append(entry)
        if options.log:
            with open(options.log, "a") as out:
                out.write(json.dumps(entry) + "\n")


def answer_for(username, password):
    entry = table.get(username)
    if entry is None:
        return {"result": "unknown"}
    if not bcrypt.checkpw(password.encode(), entry["hash"]):
        return {"result": "mismatch"}
    answer = {"result": "match"}
    if entry["profile"]:
        answer["profile"] = entry["profile"]
    return answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/log":
            with lock:
                return self.send(200, json.dumps({"requests": records}))
        if self.path == "/redirected":  # a client that turned the redirected POST into a GET
            record({"path": self.path, "webhookId": self.headers.get("webhook-id"), "verified": False,
                    "username": None, "mode": state["mode"], "answered": "match", "redirectFollowed": True})
            return self.send(200, json.dumps({"result": "match"}))
        self.send(404, "{}")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/control":
            return self.control(body)
        if self.path == "/log/clear":
            with lock:
                records.clear()
            return self.send(204, "")
        with lock:
            mode, seconds = state["mode"], state["seconds"]
        headers = {key.lower(): value for key, value in self.headers.items()}
        entry = {"path": self.path, "webhookId": headers.get("webhook-id"), "verified": False,
                 "username": None, "mode": mode}
        try:
            payload = webhook.verify(body, headers)
        except Exception as error:  # any refusal: missing header, stale timestamp, wrong signature
            record({**entry, "answered": "refused", "why": str(error)})
            return self.send(401, json.dumps({"error": "signature"}))
        entry["verified"] = True
        data = payload.get("data") if isinstance(payload, dict) else None
        if (payload.get("type") != "password.verify" or not isinstance(data, dict)
                or not isinstance(data.get("username"), str) or not isinstance(data.get("password"), str)):
            record({**entry, "answered": "malformed"})
            return self.send(400, json.dumps({"error": "not a password.verify request"}))
        entry["username"] = data["username"]
        if self.path == "/redirected":
            record({**entry, "answered": "match", "redirectFollowed": True})
            return self.send(200, json.dumps({"result": "match"}))
        if mode == "status500":
            record({**entry, "answered": "status500"})
            return self.send(500, json.dumps({"error": "internal"}))
        if mode == "redirect":
            record({**entry, "answered": "redirect"})
            port = self.server.server_address[1]
            return self.send(302, "", location=f"http://127.0.0.1:{port}/redirected")
        if mode == "garbage":
            record({**entry, "answered": "garbage"})
            return self.send(200, "<html>Service temporarily unavailable</html>", content_type="text/html")
        if mode == "badresult":
            record({**entry, "answered": "badresult"})
            return self.send(200, json.dumps({"result": "yes"}))
        answer = answer_for(data["username"], data["password"])
        if mode == "stall":
            # Recorded on arrival, so a test counts the call while the caller is still waiting.
            record({**entry, "answered": "stall"})
            time.sleep(seconds)
        else:
            record({**entry, "answered": answer["result"]})
        self.send(200, json.dumps(answer))

    def control(self, body):
        try:
            change = json.loads(body)
            mode = change["mode"]
            seconds = float(change.get("seconds", 30))
        except (ValueError, KeyError, TypeError):
            return self.send(400, json.dumps({"error": "expected {\"mode\": MODE, \"seconds\"?: N}"}))
        if mode not in MODES or not 0 <= seconds <= 120:
            return self.send(400, json.dumps({"error": f"mode must be one of {sorted(MODES)}, seconds 0 to 120"}))
        with lock:
            state["mode"], state["seconds"] = mode, seconds
        self.send(200, json.dumps(state))

    def send(self, status, text, content_type="application/json", location=None):
        data = text.encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", content_type)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 drops connections when many sign-ins stall at once

    def handle_error(self, request, client_address):
        # A caller that gave up on a stall closes first; its broken pipe is expected, and a traceback
        # per call could fill a stderr pipe nobody reads.
        pass


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
# os._exit, not shutdown(): a stalled request must not keep the process alive past its bound.
threading.Timer(options.max_seconds, lambda: os._exit(0)).start()
server.serve_forever()

#!/usr/bin/env python3
"""A webhook receiver for the tests: verifies every delivery with the `standardwebhooks` package
(an implementation independent of the server's) and appends one JSON line per verified delivery to
RECORD: {"id", "type", "accountId", "body"}. Listens on 127.0.0.1, port chosen by the system, and
prints the port on its first line.

While the file RECORD.down exists it answers 503 to everything (an outage), counting the refusals
in RECORD.refused. A delivery whose signature does not verify is answered 400 and recorded with
"bad": true. It exits by itself after LIFETIME seconds, so a test that dies cannot leave it behind.

SECRET is the one secret the receiver holds, or @PATH: a file holding it, read again for each
delivery, so a test can switch the receiver's secret during a rotation.

usage: receiver.py SECRET RECORD [LIFETIME] [DELAY_MS]
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

secret, record = sys.argv[1], sys.argv[2]
lifetime = float(sys.argv[3]) if len(sys.argv) > 3 else 120
delay = float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0
lock = threading.Lock()


def append(path, line):
    with lock, open(path, "a") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if os.path.exists(record + ".down"):
            append(record + ".refused", self.headers.get("webhook-id", ""))
            return self.answer(503)
        if delay:
            time.sleep(delay)
        headers = {k.lower(): v for k, v in self.headers.items()}
        held = open(secret[1:]).read().strip() if secret.startswith("@") else secret
        try:
            payload = Webhook(held).verify(body, headers)
        except Exception as error:  # any refusal: the test fails on a "bad" line
            append(record, json.dumps({"bad": True, "id": headers.get("webhook-id"), "why": str(error)}))
            return self.answer(400)
        data = payload.get("data", {})
        line = {"id": headers["webhook-id"], "type": payload["type"], "accountId": data.get("accountId"),
                "body": body.decode()}
        append(record, json.dumps(line))
        self.answer(204)

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Timer(lifetime, server.shutdown).start()
server.serve_forever()

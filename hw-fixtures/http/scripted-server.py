#!/usr/bin/env python3
"""A local HTTP server for DoseTap's outbound tests (#12: ntfy pushes, Twilio-compatible calls).

Usage: scripted-server.py PORT_FILE RECORD_FILE [ANSWER ...]

Listens on 127.0.0.1 on a free port (written to PORT_FILE), records every request as one JSON line in
RECORD_FILE (method, path, headers, body) and answers the requests in order with the scripted ANSWERs:
"200", "503", "401", "429:7" (with Retry-After: 7), or "hang" (never answers: the client's timeout).
When the script runs out it answers 200.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port_file, record_file, *answers = sys.argv[1:]
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length)
        with lock:
            answer = answers.pop(0) if answers else "200"
            with open(record_file, "a", encoding="utf-8") as out:
                out.write(json.dumps({"method": "POST", "path": self.path, "headers": dict(self.headers.items()),
                                      "body": body.decode("utf-8", "replace"), "answer": answer}) + "\n")
        if answer == "hang":
            time.sleep(60)
            return
        status, _, retry_after = answer.partition(":")
        self.send_response(int(status))
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(port_file + ".tmp", "w", encoding="utf-8") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()

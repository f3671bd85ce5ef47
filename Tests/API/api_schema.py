"""The dashboard's API against its own OpenAPI document (GET /api/openapi.json), on the real agent.

Starts `dosetap agent` (DOSETAP_BIN) in a private home on a free 127.0.0.1 port, with ALSA's null device, no wake
helper and no D-Bus (both buses point at sockets that do not exist), and pairs as a person does: `dosetap web link`
prints the link, opening it gives the session cookie, GET /api/session the CSRF token. Then:

1. every operation of the document without the session is refused (401, one line of JSON); every state change with
   the session but without the CSRF token, or from another origin, is refused (403);
2. Schemathesis (hw-fixtures/api/schemathesis.toml: checks, seed, bounds) runs against the document with the
   session's cookie and token, and any finding fails the run;
3. the agent is still running, logged no failed request ("web: … failed", the 500s' line), and stops on SIGTERM.

Run by scripts/api-schema-tests.sh, with the venv's python (scripts/schemathesis-reference.sh). Prints
"api-schema: N passed, N failed" last; exits non-zero on any failure.
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("DOSETAP_BIN") or str(ROOT / ".build/debug/dosetap")
CONFIG = ROOT / "hw-fixtures/api/schemathesis.toml"
REPORTS = pathlib.Path(os.environ.get("DOSETAP_API_ARTIFACTS", ROOT / ".build/api-schema"))
NOWHERE = "unix:path=/nonexistent/dosetap-api-schema-bus"

passed, failed = [], []


def check(name, ok, detail=""):
    (passed if ok else failed).append(name)
    print(f"api-schema: {'ok  ' if ok else 'FAIL'} {name}{'' if ok or not detail else ': ' + detail}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    def __init__(self):
        self.home = pathlib.Path(tempfile.mkdtemp(prefix="dosetap-cli-api-"))
        self.port = free_port()
        config = self.home / "config" / "dosetap"
        config.mkdir(parents=True)
        # The rate limit raised (a documented setting, docs/configuration.md): Schemathesis sends far more than
        # 200 requests a minute. Its 429 is documented on every route and tested in DoseTapWebTests.
        (config / "config.toml").write_text(
            f'[web]\nlisten = ["127.0.0.1:{self.port}"]\nrate_burst = 1000000\nrate_refuse_above = 1000000\n')
        runtime = self.home / "run"
        runtime.mkdir(mode=0o700)
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TZ": "UTC", "NO_COLOR": "1",
            "XDG_DATA_HOME": str(self.home / "data"), "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_RUNTIME_DIR": str(runtime), "DOSETAP_UPOWER_DIR": str(self.home / "upower"),
            "DOSETAP_AUDIO_DEVICE": "null", "DOSETAP_WAKE_SOCKET": "/nonexistent/dosetap-wake.sock",
            "DBUS_SESSION_BUS_ADDRESS": NOWHERE, "DBUS_SYSTEM_BUS_ADDRESS": NOWHERE,
        }
        # Something for the routes that name an alarm to find (PATCH, DELETE /api/alarms/{id}).
        for time_of_day in ["06:30", "07:15"]:
            self.cli("alarm", "add", time_of_day)
        self.log = open(self.home / "agent.log", "w+")
        self.process = subprocess.Popen([BIN, "agent"], env=self.env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"api-schema: the agent exited ({self.process.returncode}) at start:\n{self.log_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("api-schema: the dashboard did not listen within 60 s:\n" + self.log_text())
                time.sleep(0.1)
        self.base = f"http://127.0.0.1:{self.port}"

    def log_text(self):
        self.log.flush()
        return (self.home / "agent.log").read_text(errors="replace")

    def cli(self, *args):
        r = subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f"api-schema: dosetap {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r.stdout

    def stop(self):
        if self.process.poll() is not None:
            return self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


def pair(agent):
    """`dosetap web link`, the link opened: the session cookie, then the CSRF token of GET /api/session."""
    link = next(line for line in agent.cli("web", "link").splitlines() if line.startswith("http://"))
    parts = urllib.parse.urlsplit(link)
    opened = requests.get(agent.base + parts.path + "?" + parts.query, allow_redirects=False, timeout=10)
    cookie = opened.cookies.get("dosetap_session")
    if not cookie:
        raise SystemExit(f"api-schema: the pairing link gave no session ({opened.status_code}): {opened.text[:200]}")
    token = requests.get(agent.base + "/api/session", cookies={"dosetap_session": cookie}, timeout=10).json()["csrfToken"]
    return cookie, token


def one_line_error(response):
    try:
        body = response.json()
    except ValueError:
        return False
    return (response.headers.get("Content-Type", "").startswith("application/json") and isinstance(body, dict)
            and list(body) == ["error"] and isinstance(body["error"], str) and "\n" not in body["error"])


def operations(document):
    """Every (method, path) of the document, its path parameters filled with a plausible value."""
    fill = {"id": "1", "address": "A4:C1:38:00:00:01", "event": "alarm"}
    for path, item in document["paths"].items():
        concrete = path
        for name, value in fill.items():
            concrete = concrete.replace("{" + name + "}", value)
        for method in item:
            if method in ("get", "post", "patch", "delete", "put"):
                yield method.upper(), path, concrete


def refusals(agent, cookie, token, document):
    """Without the session: 401 everywhere. A state change without the token or from another site: 403."""
    origin = agent.base
    for method, path, concrete in operations(document):
        url = agent.base + concrete
        body = {} if method != "GET" else None
        r = requests.request(method, url, json=body, headers={"Origin": origin}, timeout=10, stream=True)
        check(f"{method} {path} without the session: 401", r.status_code == 401 and one_line_error(r),
              f"{r.status_code} {r.text[:120]!r}")
        r.close()
        forged = requests.request(method, url, json=body, timeout=10, stream=True,
                                  cookies={"dosetap_session": "x" * len(cookie)}, headers={"X-CSRF-Token": token})
        check(f"{method} {path} with a forged session: 401", forged.status_code == 401 and one_line_error(forged),
              f"{forged.status_code} {forged.text[:120]!r}")
        forged.close()
        if method == "GET":
            continue
        r = requests.request(method, url, json=body, cookies={"dosetap_session": cookie}, headers={"Origin": origin}, timeout=10)
        check(f"{method} {path} without the CSRF token: 403", r.status_code == 403 and one_line_error(r),
              f"{r.status_code} {r.text[:120]!r}")
        r = requests.request(method, url, json=body, cookies={"dosetap_session": cookie}, timeout=10,
                             headers={"X-CSRF-Token": "0" * len(token), "Origin": origin})
        check(f"{method} {path} with a wrong CSRF token: 403", r.status_code == 403 and one_line_error(r),
              f"{r.status_code} {r.text[:120]!r}")
        r = requests.request(method, url, json=body, cookies={"dosetap_session": cookie}, timeout=10,
                             headers={"X-CSRF-Token": token, "Origin": "http://attacker.example"})
        check(f"{method} {path} from another origin: 403", r.status_code == 403 and one_line_error(r),
              f"{r.status_code} {r.text[:120]!r}")


def schemathesis(agent, cookie, token):
    """Schemathesis with the session's cookie and token; its own exit status and summary decide."""
    shutil.rmtree(REPORTS, ignore_errors=True)
    REPORTS.mkdir(parents=True)
    env = {**os.environ, "DOSETAP_SESSION": cookie, "DOSETAP_CSRF": token, "SCHEMATHESIS_HOOKS": "",
           "NO_COLOR": "1", "COLUMNS": "120"}
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run",
               # What a browser of the dashboard sends with a state change: its own origin.
               "--header", f"Origin: {agent.base}",
               "--report", "junit,ndjson", "--report-dir", str(REPORTS),
               f"{agent.base}/api/openapi.json"]
    print("api-schema: " + " ".join(command), flush=True)
    started = time.monotonic()
    status = subprocess.run(command, env=env, cwd=ROOT, timeout=300).returncode
    check(f"schemathesis: no finding (exit {status}, {time.monotonic() - started:.0f} s; reports in {REPORTS})", status == 0)


def main():
    if not os.access(BIN, os.X_OK):
        raise SystemExit(f"api-schema: no dosetap binary at {BIN} (build it, or set DOSETAP_BIN)")
    agent = Agent()
    try:
        cookie, token = pair(agent)
        check("paired with dosetap web link: a session cookie and its CSRF token", bool(cookie) and bool(token))
        served = requests.get(agent.base + "/api/openapi.json", timeout=10)
        document = served.json()
        check("GET /api/openapi.json without a session: 200, OpenAPI 3.1",
              served.status_code == 200 and document.get("openapi", "").startswith("3.1"))
        refusals(agent, cookie, token, document)
        schemathesis(agent, cookie, token)
        check("the agent is still running after the run", agent.process.poll() is None, f"exit {agent.process.returncode}")
    finally:
        status = agent.stop()
        log = agent.log_text()
    check("the agent stopped on SIGTERM (exit 0)", status == 0, f"exit {status}")
    failures = [line for line in log.splitlines() if "web:" in line and " failed" in line]
    check("the agent logged no failed request (no 500)", not failures, "\n".join(failures[:10]))
    if failed:
        print("api-schema: the agent's log, last 40 lines:\n" + "\n".join(log.splitlines()[-40:]))
    else:
        shutil.rmtree(agent.home, ignore_errors=True)
    print(f"api-schema: {len(passed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

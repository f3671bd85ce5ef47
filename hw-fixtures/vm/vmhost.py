#!/usr/bin/env python3
"""Host side of scripts/vm.sh (stdlib only).

  vmhost.py boot --report FILE --console FILE [--timeout S] [--poweroff-timeout S] [-v] -- QEMU-ARGV...
      start qemu, follow the guest's report channel (the file the second serial port writes, frames made by
      runner.py), print the command's stdout/stderr as they come, wait for the guest's poweroff, and exit with
      the command's exit code. 124: timeout (qemu killed); 255: the VM failed (qemu ended before the command
      did, or the guest did not power off). Both print one "vm: ..." line and the console log's last lines.
  vmhost.py qmp SOCK JSON...           one QMP session: handshake, each command, print each reply (one line)
  vmhost.py wait-status SOCK STATUS S  poll query-status until it is STATUS (e.g. suspended), at most S seconds
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

MAGIC = b"@@DTVM1 "


def tail(path, n=30):
    try:
        with open(path, "rb") as f:
            text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", f.read().decode(errors="replace"))
            lines = text.replace("\r", "").splitlines()
    except OSError:
        return "(no console log)"
    return "\n".join("  | " + line for line in lines[-n:])


def fail(msg, console, code):
    sys.stdout.flush()
    sys.stderr.write(f"vm: {msg}\n  last lines of the guest console ({console}):\n{tail(console)}\n")
    sys.exit(code)


class Report:
    """Parses the frames as they arrive; anything between frames is skipped."""

    def __init__(self):
        self.buf = b""
        self.exit = None
        self.marks = {}

    def feed(self, data):
        self.buf += data
        while True:
            i = self.buf.find(MAGIC)
            if i < 0:
                self.buf = self.buf[-(len(MAGIC) - 1):]
                return
            nl = self.buf.find(b"\n", i)
            if nl < 0:
                self.buf = self.buf[i:]
                return
            try:
                kind, value = self.buf[i + len(MAGIC):nl].decode().split(" ")
            except ValueError:
                self.buf = self.buf[i + 1:]
                continue
            if kind in ("O", "E", "M"):
                n = int(value)
                if len(self.buf) < nl + 1 + n:
                    self.buf = self.buf[i:]
                    return
                data = self.buf[nl + 1:nl + 1 + n]
                self.buf = self.buf[nl + 1 + n:]
                out = sys.stdout if kind == "O" else sys.stderr
                if kind == "M":
                    out.buffer.write(b"vm: guest: ")
                out.buffer.write(data)
                out.flush()
            else:
                self.buf = self.buf[nl + 1:]
                if kind == "X":
                    self.exit = int(value)
                else:
                    self.marks[kind] = (time.monotonic(), float(value))


def boot(args):
    opts = {"--timeout": "600", "--poweroff-timeout": "180"}
    verbose = False
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "-v":
            verbose = True
        else:
            opts[a] = args.pop(0)
    qemu = args[1:]
    report_path, console = opts["--report"], opts["--console"]
    timeout, poweroff_timeout = float(opts["--timeout"]), float(opts["--poweroff-timeout"])
    open(report_path, "wb").close()
    qemu_log = open(report_path + ".qemu-stderr", "w+b")
    t0 = time.monotonic()
    proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=qemu_log, stderr=qemu_log)

    def stop(signum, frame):
        proc.kill()
        proc.wait()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    rep = Report()
    with open(report_path, "rb") as f:
        while rep.exit is None:
            data = f.read(65536)
            if data:
                rep.feed(data)
                continue
            if proc.poll() is not None:
                rep.feed(f.read())
                if rep.exit is not None:
                    break
                qemu_log.seek(0)
                err = qemu_log.read().decode(errors="replace").strip().replace("\n", "; ")
                fail(f"qemu exited ({proc.returncode}) {time.monotonic() - t0:.0f} s after start, before the "
                     f"command finished{': ' + err if err else ''}", console, 255)
            if time.monotonic() - t0 > timeout:
                proc.kill()
                proc.wait()
                where = "the command" if "R" in rep.marks else "the boot" if "B" not in rep.marks else "the setup"
                fail(f"timeout: {timeout:.0f} s passed in {where}; qemu killed", console, 124)
            time.sleep(0.05)
    t_exit = time.monotonic()
    try:
        proc.wait(timeout=max(1.0, poweroff_timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail(f"the command exited {rep.exit} but the guest did not power off within {poweroff_timeout:.0f} s; "
             "qemu killed", console, 255)
    t_off = time.monotonic()
    if verbose:
        parts = []
        if "B" in rep.marks:
            parts.append(f"payload unpacked at {rep.marks['B'][0] - t0:.1f} s (guest uptime {rep.marks['B'][1]:.1f} s)")
        if "R" in rep.marks:
            parts.append(f"command started at {rep.marks['R'][0] - t0:.1f} s (guest uptime {rep.marks['R'][1]:.1f} s)")
            parts.append(f"command took {t_exit - rep.marks['R'][0]:.1f} s")
        parts.append(f"poweroff took {t_off - t_exit:.1f} s")
        parts.append(f"total {t_off - t0:.1f} s")
        sys.stderr.write("vm: " + "; ".join(parts) + f"; exit {rep.exit}\n")
    sys.exit(rep.exit)


class QMP:
    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.f = self.sock.makefile("rb")
        self.read()  # the greeting
        self.cmd({"execute": "qmp_capabilities"})

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("QMP connection closed")
        return json.loads(line)

    def cmd(self, obj):
        self.sock.sendall(json.dumps(obj).encode() + b"\n")
        while True:
            msg = self.read()
            if "event" not in msg:
                return msg


def qmp(args):
    q = QMP(args[0])
    for c in args[1:]:
        print(json.dumps(q.cmd(json.loads(c))), flush=True)


def wait_status(args):
    path, want, timeout = args[0], args[1], float(args[2])
    deadline = time.monotonic() + timeout
    q = QMP(path, timeout)
    while True:
        status = q.cmd({"execute": "query-status"})["return"]["status"]
        if status == want:
            print(status)
            return
        if time.monotonic() > deadline:
            sys.exit(f"vm: QMP status is {status!r}, not {want!r}, after {timeout:.0f} s")
        time.sleep(0.1)


def watch(args):
    """Follows a run's output file (argv[0]) and acts on the guest's requests to the host, over QMP (argv[1]):
       vm-host: self-wake NAME        the guest is about to be suspended and must wake by itself: QMP must show
                                      "suspended", then "running" again, with no system_wakeup sent;
       vm-host: wake-at NAME EPOCH [+S]   the guest is about to be suspended and cannot wake itself: QMP must
                                      show "suspended" until EPOCH (host clock), then the host sends system_wakeup;
                                      with +S, the guest's RTC is moved S seconds ahead while it sleeps (the run's
                                      --host-clock file, argv[3]: the guest then has slept S seconds longer);
       vm-host: self-wake-jump NAME EPOCH   the guest is about to suspend itself and must wake by itself for a
                                      moment hours ahead: QMP must show "suspended"; then the host moves the
                                      guest's RTC ahead (the --host-clock file) until it reads EPOCH (guest clock,
                                      the host's plus the file's offset) and QMP must show "running" again, with no
                                      system_wakeup sent (the guest's own RTC alarm woke it).
    Prints one line per request ("watch: ok: …" or "watch: FAIL: …") and exits, when the run's output says it
    ended (or after argv[2] seconds, default 1800), with the number of failures."""
    path, sock = args[0], args[1]
    limit = float(args[2]) if len(args) > 2 else 1800
    clock_file = args[3] if len(args) > 3 else None
    end = time.monotonic() + limit
    failures = 0
    q = None

    def status():
        nonlocal q
        if q is None:
            q = QMP(sock, 60)
        return q.cmd({"execute": "query-status"})["return"]["status"]

    def until(want, seconds):
        deadline = time.monotonic() + seconds
        while True:
            s = status()
            if s == want:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def report(ok, text):
        nonlocal failures
        failures += 0 if ok else 1
        print(f"watch: {'ok' if ok else 'FAIL'}: {text}", flush=True)

    offset = 0
    pending = b""
    while time.monotonic() < end:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        offset += len(chunk)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace")
            if line.startswith("vm: ") and " total " in line:
                sys.exit(failures)
            if not line.startswith("vm-host: "):
                continue
            words = line.split()
            try:
                if words[1] == "self-wake":
                    name = words[2]
                    if not until("suspended", 600):
                        report(False, f"{name}: the guest was never suspended (QMP)")
                        continue
                    at = time.monotonic()
                    if until("running", 400):
                        report(True, f"{name}: the host saw the guest suspended for {time.monotonic() - at:.0f} s and "
                                     "running again without a system_wakeup")
                    else:
                        report(False, f"{name}: the guest did not wake by itself within 400 s")
                elif words[1] == "self-wake-jump":
                    name, when = words[2], float(words[3])
                    if clock_file is None:
                        report(False, f"{name}: cannot move the guest's clock: the run has no --host-clock file")
                        continue
                    if not until("suspended", 600):
                        report(False, f"{name}: the guest was never suspended (QMP)")
                        continue
                    at = time.monotonic()
                    with open(clock_file) as f:
                        now = int(f.read().strip().lstrip("+") or 0)
                    seconds = int(when - (time.time() + now))
                    if not 0 < seconds <= 86400:
                        report(False, f"{name}: cannot move the guest's clock to {when:.0f}: {seconds} s from its clock now")
                        continue
                    with open(clock_file, "w") as f:
                        f.write(f"+{now + seconds}\n")
                    if until("running", 400):
                        report(True, f"{name}: the host saw the guest suspended for {time.monotonic() - at:.0f} s (its RTC "
                                     f"moved {seconds} s ahead meanwhile) and running again without a system_wakeup")
                    else:
                        report(False, f"{name}: the guest did not wake by itself within 400 s of its RTC moved {seconds} s ahead")
                elif words[1] == "wake-at":
                    name, when = words[2], float(words[3])
                    if not until("suspended", 600):
                        report(False, f"{name}: the guest was never suspended (QMP)")
                        continue
                    at = time.monotonic()
                    jump = ""
                    if len(words) > 4:
                        seconds = int(words[4].lstrip("+"))
                        if clock_file is None or not words[4].startswith("+") or not 0 < seconds <= 86400:
                            report(False, f"{name}: cannot move the guest's clock by {words[4]} (host clock file: {clock_file})")
                            continue
                        with open(clock_file) as f:
                            now = int(f.read().strip().lstrip("+") or 0)
                        with open(clock_file, "w") as f:
                            f.write(f"+{now + seconds}\n")
                        jump = f", its RTC moved {seconds} s ahead meanwhile"
                    woke = None
                    while time.time() < when:
                        s = status()
                        if s != "suspended":
                            woke = s
                            break
                        time.sleep(0.5)
                    if woke is not None:
                        report(False, f"{name}: the guest was {woke!r} again {time.monotonic() - at:.0f} s into a suspend "
                                      "it could not wake from")
                        continue
                    q.cmd({"execute": "system_wakeup"})
                    if until("running", 60):
                        report(True, f"{name}: the guest stayed suspended for {time.monotonic() - at:.0f} s, until the "
                                     f"host's system_wakeup{jump}")
                    else:
                        report(False, f"{name}: the guest did not run after system_wakeup")
                else:
                    report(False, f"an unknown request from the guest: {line}")
            except (IndexError, ValueError):
                report(False, f"a malformed request from the guest: {line}")
            except (OSError, ConnectionError, json.JSONDecodeError) as e:
                report(False, f"QMP: {e} (during: {line})")
                q = None
        time.sleep(0.2)
    report(False, f"the run did not end within {limit:.0f} s")
    sys.exit(failures)


if __name__ == "__main__":
    cmds = {"boot": boot, "qmp": qmp, "wait-status": wait_status, "watch": watch}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])

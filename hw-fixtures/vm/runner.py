#!/usr/bin/python3
"""Guest side of scripts/vm.sh run: shipped in every payload as /opt/vm/runner.py and started by the image's
dosetap-vm.service (as root) once the payload is unpacked.

1. waits for the boot to finish (systemctl is-system-running --wait) and, when `tester` lingers, for
   user@1000.service (its `systemctl --user` manager);
2. installs /opt/debs/*.deb with dpkg -i (exit record 125 if that fails);
3. runs the command of /opt/vm/argv.json in /opt/payload, stdin /dev/null, and streams its stdout and stderr,
   then its exit code, to the host over the report channel: the second serial port (/dev/ttyS1, raw) of the
   amd64 guest, the virtio serial port named dosetap.report of the arm64 one (qemu's virt has one UART);
4. powers the guest off.

On amd64 the report channel is a 16550 UART, not virtio or 9p: it survives an S3 suspend and resume (the arm64
guest is never suspended).
Frames: b"@@DTVM1 T N\\n", followed by N bytes for T in O (stdout), E (stderr), M (a note for the host's
stderr); B (runner started) and R (command starts) carry the guest's uptime in N, X the exit code.
"""
import glob
import json
import os
import selectors
import subprocess
import sys
import termios
import time
import tty

VIRTIO_REPORT = "/dev/virtio-ports/dosetap.report"
REPORT = VIRTIO_REPORT if os.path.exists(VIRTIO_REPORT) else "/dev/ttyS1"
MAGIC = b"@@DTVM1 "

fd = os.open(REPORT, os.O_RDWR | os.O_NOCTTY)
if os.isatty(fd):
    tty.setraw(fd)
    attrs = termios.tcgetattr(fd)
    attrs[2] |= termios.CLOCAL
    attrs[2] &= ~termios.CRTSCTS
    attrs[4] = attrs[5] = termios.B115200
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


def write_all(data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def send(kind, value, data=b""):
    write_all(MAGIC + f"{kind} {value}\n".encode() + data)


def send_data(kind, data):
    for i in range(0, len(data), 4096):
        chunk = data[i:i + 4096]
        send(kind, len(chunk), chunk)


def note(text):
    print(f"dosetap-vm: {text}", flush=True)  # to the console log (the unit's output is journal+console)


def uptime():
    with open("/proc/uptime") as f:
        return f.read().split()[0]


def main():
    send("B", uptime())
    note("payload unpacked; waiting for the boot to finish")

    # 1. The boot, then the lingering user's manager (logind starts it at boot; it is no part of the boot's jobs).
    state = subprocess.run(["systemctl", "is-system-running", "--wait"], capture_output=True, text=True,
                           timeout=600).stdout.strip()
    if state != "running":
        failed = subprocess.run(["systemctl", "--failed", "--no-legend", "--plain"], capture_output=True,
                                text=True).stdout
        note(f"system state {state!r}; failed units:\n{failed}")
        send_data("M", f"system state {state!r}; failed units:\n{failed}".encode())
    if os.path.exists("/var/lib/systemd/linger/tester"):
        deadline = time.monotonic() + 120
        while subprocess.run(["systemctl", "is-active", "--quiet", "user@1000.service"]).returncode != 0:
            if time.monotonic() > deadline:
                note("user@1000.service (tester's lingering manager) is not active after 120 s")
                send_data("M", b"user@1000.service (tester's lingering manager) is not active after 120 s\n")
                break
            time.sleep(0.2)

    # 2. The packages under test.
    debs = sorted(glob.glob("/opt/debs/*.deb"))
    code = None
    if debs:
        note("dpkg -i " + " ".join(debs))
        p = subprocess.run(["dpkg", "-i", *debs], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                                                          "DEBIAN_FRONTEND": "noninteractive"})
        sys.stdout.write(p.stdout.decode(errors="replace"))
        if p.returncode != 0:
            send_data("M", b"dpkg -i failed in the guest:\n" + p.stdout)
            code = 125

    # 3. The command.
    if code is None:
        with open("/opt/vm/argv.json") as f:
            argv = json.load(f)
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
               "LANG": "C.UTF-8", "TERM": "dumb", "DOSETAP_VM": "1", "DOSETAP_VM_PAYLOAD": "/opt/payload",
               "DOSETAP_VM_DEBS": " ".join(debs)}
        send("R", uptime())
        note("running " + " ".join(argv))
        try:
            proc = subprocess.Popen(argv, cwd="/opt/payload", env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            send_data("E", f"vm: cannot run {argv[0]!r}: {e}\n".encode())
            code = 127 if isinstance(e, FileNotFoundError) else 126
        else:
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ, "O")
            sel.register(proc.stderr, selectors.EVENT_READ, "E")
            quiet_since = None
            while sel.get_map():
                events = sel.select(timeout=0.5)
                for key, _ in events:
                    data = os.read(key.fileobj.fileno(), 65536)
                    if data:
                        send_data(key.data, data)
                    else:
                        sel.unregister(key.fileobj)
                # The command has ended but something it left behind holds its output open: stop after 2 quiet s.
                if proc.poll() is not None:
                    if events:
                        quiet_since = None
                    elif quiet_since is None:
                        quiet_since = time.monotonic()
                    elif time.monotonic() - quiet_since > 2:
                        break
            code = proc.wait()
            if code < 0:
                code = 128 - code

    return code


try:
    code = main()
except Exception:  # tell the host now rather than let it time out
    import traceback
    send_data("M", ("runner failed:\n" + traceback.format_exc()).encode())
    code = 126
send("X", code)
if os.isatty(fd):
    termios.tcdrain(fd)  # the UART's queue out before the poweroff (a virtio port's write is the host's once it returns)
note(f"command exited {code}; powering off")
subprocess.run(["systemctl", "poweroff", "--no-block"])

"""What the real-client tests share (#27): waiting, free ports, processes through /proc, pixels."""

import pathlib
import socket
import time


def wait_for(what, check, timeout=30.0, every=0.1):
    """check() until it returns something true (returned), or fail after `timeout` s naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stat_fields(pid):
    """(state, ppid), or None when the process is gone."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def alive(pid):
    """Running, and not a zombie (this sandbox's PID 1 does not always reap orphans)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def cmdline(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids():
    return [int(entry.name) for entry in pathlib.Path("/proc").iterdir() if entry.name.isdigit()]


def children(pid):
    """The live (not zombie) children of `pid`."""
    return [p for p in pids() if (f := stat_fields(p)) and f[1] == pid and f[0] != "Z"]


def count(image, colour, tolerance=12):
    """How many pixels of an RGB image are within `tolerance` of `colour` in every channel."""
    return sum(1 for p in image.getdata() if all(abs(a - b) <= tolerance for a, b in zip(p, colour)))

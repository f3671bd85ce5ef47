"""`dosetap status --format i3blocks --follow` in the real i3blocks: Debian's i3blocks 1.4 under i3 4.22 and its
i3bar on Xvfb, against a real `dosetap agent`. The bar is read back from screenshots: the text by OCR (tesseract),
the emoji's colours and the urgent block's colours by pixels. A second, X-less test reads the i3bar protocol
i3blocks writes on its stdout. Nothing here is skipped: a missing tool fails with its name.

Run alone: DOSETAP_BIN=.build/debug/dosetap python -m pytest Tests/RealClients/test_i3blocks.py"""

import colorsys
import json
import os
import pathlib
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
from PIL import Image, ImageGrab, ImageOps

from realclients import alive, children, cmdline, count, pids, wait_for

BIN = os.environ["DOSETAP_BIN"]
ARTIFACTS = pathlib.Path(os.environ.get("DOSETAP_REAL_CLIENT_ARTIFACTS",
                                        pathlib.Path(__file__).resolve().parents[2] / ".build" / "real-clients"))
WIDTH, HEIGHT = 800, 200
BACKGROUND = (0x20, 0x20, 0x20)  # the bar's background below
URGENT = (0xD0, 0x00, 0x00)      # the bar's urgent_workspace background (and border) below
TOOLS = ("Xvfb", "i3", "i3bar", "i3blocks", "scrot", "tesseract", "faketime")


# --- processes, through /proc ----------------------------------------------------------------------------------

def marked(mark):
    """Our processes, wherever they were reparented to: every one of them carries DOSETAP_TEST_MARK=<work folder>
    in its environment (i3 double-forks i3bar away from itself, so process groups do not catch them all)."""
    needle = f"DOSETAP_TEST_MARK={mark}".encode()
    out = []
    for pid in pids():
        try:
            if needle in pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") and alive(pid):
                out.append(pid)
        except OSError:
            pass
    return out


def followers(mark):
    """The `dosetap status --follow` processes still running among ours."""
    return [p for p in marked(mark) if "status" in cmdline(p) and "--follow" in cmdline(p)]


def follower_of(i3blocks_pid):
    found = [p for p in children(i3blocks_pid) if "status" in cmdline(p)]
    assert len(found) <= 1, f"i3blocks runs {len(found)} `dosetap status` children: {[cmdline(p) for p in found]}"
    return found[0] if found else None


# --- a private night: the agent, its environment, the CLI --------------------------------------------------------

class Night:
    def __init__(self, prefix):
        missing = [tool for tool in TOOLS if not shutil.which(tool)]
        assert not missing, f"missing: {', '.join(missing)} (scripts/install-deps.sh test installs them)"
        assert os.access(BIN, os.X_OK), f"DOSETAP_BIN={BIN} is not an executable"
        self.work = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
        print(f"\nwork folder: {self.work}")
        self.home = self.work / "home"
        self.run = self.work / "run"
        (self.home / "config" / "dosetap").mkdir(parents=True)
        (self.home / "config" / "dosetap" / "config.toml").write_text("[web]\nlisten = []\n")
        self.run.mkdir(mode=0o700)
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TZ": "UTC", "NO_COLOR": "1",
            "LANG": "C.UTF-8", "XDG_DATA_HOME": str(self.home / "data"), "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_RUNTIME_DIR": str(self.run), "DOSETAP_UPOWER_DIR": str(self.home / "upower"),
            "DOSETAP_AUDIO_DEVICE": "null", "DOSETAP_TEST_MARK": str(self.work),
        }
        self.processes = []
        try:
            self.agent_log = self.work / "agent.log"
            self.agent = self.spawn([BIN, "agent"], self.agent_log)
            wait_for("the agent's web socket", lambda: self.agent.poll() is None and
                     "web dashboard listening" in self.agent_log.read_text(), timeout=60)
            assert self.agent.poll() is None, f"the agent exited: {self.agent_log.read_text()}"
            # i3blocks as docs/status-bar.md gives it: exec, so the follower is i3blocks' own child; persist and
            # json, so every line the follower prints replaces the whole block.
            self.i3blocks_conf = self.work / "i3blocks.conf"
            self.i3blocks_conf.write_text(f"[dosetap]\ncommand=exec {BIN} status --format i3blocks --follow\n"
                                          "interval=persist\nformat=json\n")
        except BaseException:
            self.close()
            raise

    def spawn(self, argv, log, **kwargs):
        process = subprocess.Popen(argv, env={**self.env, **kwargs.pop("env", {})}, stdout=open(log, "w"),
                                   stderr=subprocess.STDOUT, cwd=self.work, start_new_session=True, **kwargs)
        self.processes.append(process)
        return process

    def take(self, fake=None):
        """`dosetap dose take`, with the clock moved by `fake` (libfaketime) to record the dose in the past."""
        argv = (["faketime", "-f", fake] if fake else []) + [BIN, "dose", "take"]
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"dosetap dose take: {r.stdout}{r.stderr}"
        return r.stdout

    def close(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        # whatever was forked away from the processes above (i3bar, i3blocks, the follower)
        for pid in marked(self.work):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# --- the bar's pixels --------------------------------------------------------------------------------------------

def close_to(pixel, colour, tolerance=12):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def hue(pixel):
    """The hue in degrees of a pixel with a clear chroma (max-min > 60), else None (greys, and near-greys)."""
    if max(pixel) - min(pixel) <= 60:
        return None
    return colorsys.rgb_to_hsv(*(c / 255 for c in pixel))[0] * 360


def yellows(image):
    return sum(1 for p in image.getdata() if (h := hue(p)) is not None and 35 <= h <= 70)


def reds(image):
    return sum(1 for p in image.getdata() if (h := hue(p)) is not None and (h <= 15 or h >= 345))


def status_block(image):
    """The columns of the status block: where anything but the bar's background is drawn (the bar has no
    workspace buttons, so the status block is the only thing on it)."""
    columns = [x for x in range(image.width)
               if any(not close_to(image.getpixel((x, y)), BACKGROUND, 6) for y in range(image.height))]
    return (min(columns), max(columns) + 1) if columns else None


def first_cluster(image, block, background):
    """The leftmost run of columns inside the block with something drawn on the block's background: the emoji,
    which the text follows after a space."""
    left, right = block
    drawn = [any(not close_to(image.getpixel((x, y)), background, 40) for y in range(image.height))
             for x in range(left, right)]
    start = drawn.index(True)
    end = start
    while end < len(drawn) and drawn[end]:
        end += 1
    return (left + start, 0, left + end, image.height)


def ocr(image, work, name):
    # 4x upscaled, with a margin: the status block ends at the screen's right edge
    big = ImageOps.expand(image, border=8, fill=BACKGROUND).resize(((image.width + 16) * 4, (image.height + 16) * 4),
                                                                   Image.LANCZOS)
    path = work / f"{name}-ocr.png"
    big.save(path)
    r = subprocess.run(["tesseract", str(path), "-", "--psm", "7"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"tesseract: {r.stderr}"
    return r.stdout.strip()


# --- X: Xvfb, i3 and its i3bar ------------------------------------------------------------------------------------

class Desktop(Night):
    def __init__(self):
        super().__init__("dosetap-i3blocks-")
        try:
            self.start_x()
        except BaseException:
            self.close()
            raise

    def start_x(self):
        # Xvfb picks a free display itself and writes its number when it accepts connections.
        read, write = os.pipe()
        self.xvfb = self.spawn(["Xvfb", "-displayfd", str(write), "-screen", "0", f"{WIDTH}x{HEIGHT}x24",
                                "-nolisten", "tcp"], self.work / "xvfb.log", pass_fds=(write,))
        os.close(write)
        selector = selectors.DefaultSelector()
        selector.register(read, selectors.EVENT_READ)
        number = b""
        deadline = time.monotonic() + 30
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            if selector.select(timeout=1):
                chunk = os.read(read, 16)
                if not chunk:
                    break
                number += chunk
        selector.close()
        os.close(read)
        assert number.strip().isdigit(), f"Xvfb gave no display: {(self.work / 'xvfb.log').read_text()}"
        self.display = f":{int(number)}"
        self.env["DISPLAY"] = self.display

        # i3 with its bar only: no workspace buttons (no windows either), the bar's own colours, and i3bar's
        # colours for an urgent block (it draws urgent status blocks with urgent_workspace) unmistakable.
        self.i3_conf = self.work / "i3.conf"
        self.i3_conf.write_text(
            "# i3 config file (v4)\n"
            "font pango:DejaVu Sans 14\n"
            "bar {\n"
            f"  status_command i3blocks -c {self.i3blocks_conf}\n"
            "  position top\n"
            "  workspace_buttons no\n"
            "  tray_output none\n"
            "  font pango:DejaVu Sans 14\n"
            "  colors {\n"
            "    background #202020\n"
            "    statusline #ffffff\n"
            "    separator #202020\n"
            "    urgent_workspace #d00000 #d00000 #ffffff\n"
            "  }\n"
            "}\n")
        check = subprocess.run(["i3", "-C", "-c", str(self.i3_conf)], env=self.env, capture_output=True, text=True,
                               timeout=30)
        assert check.returncode == 0 and "ERROR" not in check.stdout + check.stderr, \
            f"i3 -C: {check.stdout}{check.stderr}"
        self.i3 = self.spawn(["i3", "-c", str(self.i3_conf)], self.work / "i3.log")
        self.find_bar()

    def find_bar(self):
        """i3 → i3bar → sh -c → i3blocks → dosetap status --follow: the i3blocks running our configuration, and its
        follower."""
        def found():
            for pid in marked(self.work):
                argv = cmdline(pid).split()
                if argv[:1] and os.path.basename(argv[0]) == "i3blocks" and str(self.i3blocks_conf) in argv:
                    follower = follower_of(pid)
                    return (pid, follower) if follower else None
            assert self.i3.poll() is None, f"i3 exited: {(self.work / 'i3.log').read_text()}"
            return None
        self.i3blocks, self.follower = wait_for("i3blocks and its `dosetap status` child", found, timeout=60)

    def grab(self):
        """The bar, straight from the X server (XCB GetImage, as scrot does): a few ms, for the latency loop."""
        return ImageGrab.grab(bbox=(0, 0, WIDTH, self.bar_height), xdisplay=self.display).convert("RGB")

    def screenshot(self, name):
        """A scrot screenshot of the screen, kept in the work folder; the bar cropped from it."""
        path = self.work / f"{name}.png"
        r = subprocess.run(["scrot", "--overwrite", str(path)], env=self.env, capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0, f"scrot: {r.stderr}"
        with Image.open(path) as screen:
            return screen.convert("RGB").crop((0, 0, WIDTH, self.bar_height))

    def measure_bar(self):
        """The bar's height: the rows from the top drawn in the bar's background (the root window below is black)."""
        screen = ImageGrab.grab(xdisplay=self.display).convert("RGB")
        height = 0
        while height < screen.height and any(close_to(screen.getpixel((x, height)), BACKGROUND, 6)
                                             for x in range(0, WIDTH, 4)):
            height += 1
        return height


@pytest.fixture(scope="module")
def desktop():
    d = Desktop()
    try:
        yield d
    finally:
        d.close()
        print(f"\nwork folder: {d.work}")


def test_the_idle_bar_draws_the_pill_in_colour_and_nothing_urgent(desktop):
    d = desktop

    def drawn():
        d.bar_height = d.measure_bar()
        return 15 <= d.bar_height <= 60 and status_block(d.grab())
    wait_for("i3bar drawing the idle glance", drawn, timeout=60, every=0.2)
    time.sleep(1.0)  # settled: the glyph is drawn once, when i3blocks has the follower's first line
    idle = d.screenshot("idle")
    d.idle = d.grab()
    assert idle.tobytes() == d.idle.tobytes(), "scrot and a direct X grab disagree about the idle bar"

    # The idle night's glance is the pill alone. Drawn by Noto Color Emoji it is yellow and red; drawn as a
    # monochrome glyph (or as a missing-glyph box) it would be white on #202020, greys only. So both hues, in
    # the leftmost (only) cluster of the status block.
    block = status_block(idle)
    assert block, "nothing drawn on the bar"
    cluster = first_cluster(idle, block, BACKGROUND)
    emoji = idle.crop(cluster)
    assert yellows(emoji) > 40 and reds(emoji) > 40, \
        f"the pill is not in colour: {yellows(emoji)} yellow and {reds(emoji)} red pixels"
    # the pill alone: the one cluster is all that is drawn, 15 to 40 px wide (a 14 pt glyph)
    assert (cluster[0], cluster[2]) == block and 15 <= block[1] - block[0] <= 40, \
        f"the idle bar draws more than one glyph: {block}, its first cluster {cluster}"
    # and nothing urgent: not one pixel in the urgent colour
    assert count(idle, URGENT) == 0
    assert alive(d.follower)


def test_a_dose_taken_elsewhere_reaches_the_bar_within_2_s_urgent(desktop):
    d = desktop
    assert hasattr(d, "idle"), "no idle bar to compare with: see the test before"
    before = d.idle.tobytes()
    # Dose 1 230 minutes ago: the window closes in 10 minutes, so the glance is near-close and urgent.
    started = time.monotonic()
    d.take(fake="-230m")
    taken = time.monotonic()
    frames = 0
    deadline = taken + 10
    changed = None
    while time.monotonic() < deadline:
        frame = d.grab()
        frames += 1
        if frame.tobytes() != before:
            changed = time.monotonic()
            break
        time.sleep(0.01)
    assert changed, "the bar did not change within 10 s of `dose take`"
    latency = changed - taken
    print(f"\nthe bar changed {latency:.3f} s after `dose take` returned ({changed - started:.3f} s after it started, "
          f"{frames} frames grabbed)")
    assert latency <= 2.0, f"the bar changed {latency:.2f} s after `dose take` returned"

    urgent = wait_for("the urgent block", lambda: (lambda i: i if count(i, URGENT) > 500 else None)(
        d.screenshot("urgent")), timeout=10, every=0.1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    urgent.save(ARTIFACTS / "i3blocks-urgent.png")

    # the text: the window's minutes left
    text = ocr(urgent, d.work, "urgent")
    print(f"tesseract read the urgent bar as {text!r}")
    assert re.search(r"open (9|10) min", text), f"OCR read {text!r}"

    # "urgent" reached i3bar: the block is drawn in the urgent_workspace colours (before the dose: none of them)
    block = status_block(urgent)
    assert count(urgent, URGENT) > 500, f"{count(urgent, URGENT)} pixels in the urgent colour"
    inside = urgent.crop((block[0], 0, block[1], urgent.height))
    assert count(inside, URGENT) > 0.5 * inside.width * inside.height, "the block's background is not the urgent one"

    # The pill, left of the text, still in colour on the red block. The urgent background and the white text's
    # anti-aliasing on it are red hues (and i3bar draws an urgent block's text in urgent_workspace's #ffffff,
    # not in the line's #FF6B6B): a monochrome glyph or a box would add no yellow. The yellow half of the pill
    # does, and all of the bar's yellow is in that first cluster.
    emoji = urgent.crop(first_cluster(urgent, block, URGENT))
    assert yellows(emoji) > 40, f"no colour pill left of the text: {yellows(emoji)} yellow pixels"
    assert yellows(emoji) == yellows(urgent), "yellow outside the pill: not the emoji"


def test_no_dosetap_process_is_left_5_s_after_the_bar_is_killed(desktop):
    d = desktop
    follower = d.follower
    assert alive(follower), "the follower found at start-up is gone already"
    assert follower_of(d.i3blocks) == follower
    # SIGKILL: i3blocks cannot pass anything on; the follower must see its parent go (pidfd) by itself.
    os.kill(d.i3blocks, signal.SIGKILL)
    killed = time.monotonic()
    wait_for("the follower gone after i3blocks was killed", lambda: not alive(follower), timeout=5, every=0.05)
    print(f"\nthe follower ended {time.monotonic() - killed:.2f} s after i3blocks was killed")

    # The whole bar: i3 restarts in place with a new i3bar, i3blocks and follower; then i3 is stopped (SIGTERM),
    # its i3bar loses i3's socket and exits, and nothing of ours may run 5 s later but the agent and Xvfb.
    r = subprocess.run(["i3-msg", "-s", str(next(d.run.glob("i3/ipc-socket.*"))), "restart"], env=d.env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"i3-msg restart: {r.stdout}{r.stderr}"
    d.find_bar()
    assert d.follower != follower and alive(d.follower)
    d.i3.terminate()
    d.i3.wait(timeout=30)
    stopped = time.monotonic()
    wait_for("no `dosetap status` left after i3 stopped", lambda: not followers(d.work), timeout=5, every=0.05)
    print(f"no follower {time.monotonic() - stopped:.2f} s after i3 was stopped")
    # nor the bar: i3bar and i3blocks (Xvfb's own xkbcomp children may come and go)
    def bar_left():
        return {pid: cmdline(pid) for pid in marked(d.work) if pid != d.agent.pid and
                os.path.basename(cmdline(pid).split(" ")[0]) in ("dosetap", "i3", "i3bar", "i3blocks")}
    wait_for("i3bar and i3blocks gone", lambda: not bar_left(), timeout=5, every=0.05)


# --- no X: the i3bar protocol on i3blocks' stdout -------------------------------------------------------------------

@pytest.fixture
def night():
    n = Night("dosetap-i3blocks-protocol-")
    try:
        yield n
    finally:
        n.close()


def test_i3blocks_passes_color_and_the_string_urgent_on_to_i3bar(night):
    """i3blocks 1.4 drops a JSON `true` and keeps the string "true", which it writes to i3bar as `true`."""
    bar = subprocess.Popen(["i3blocks", "-c", str(night.i3blocks_conf)], env=night.env, stdout=subprocess.PIPE,
                           stderr=open(night.work / "i3blocks.log", "w"), cwd=night.work, start_new_session=True)
    night.processes.append(bar)
    selector = selectors.DefaultSelector()
    selector.register(bar.stdout, selectors.EVENT_READ)
    lines = []
    pending = b""

    def block(until, timeout):
        """The next status line whose dosetap block satisfies `until`: (the block, the raw line)."""
        nonlocal pending
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                text = line.decode()
                lines.append(text)
                if text.startswith(",[") or text.startswith("[{"):
                    blocks = json.loads(text.lstrip(","))
                    mine = [b for b in blocks if b.get("name") == "dosetap"]
                    if mine and until(mine[0]):
                        return mine[0], text
            if selector.select(timeout=0.2):
                chunk = os.read(bar.stdout.fileno(), 65536)
                assert chunk, f"i3blocks ended: {lines}"
                pending += chunk
        raise AssertionError(f"no such line within {timeout} s: {lines}")

    idle, _ = block(lambda b: b.get("full_text"), timeout=60)
    assert lines[0] == '{"version":1,"click_events":true}', lines
    assert idle["full_text"] == "💊" and "urgent" not in idle and "color" not in idle, idle
    follower = wait_for("i3blocks' `dosetap status` child", lambda: follower_of(bar.pid), timeout=10)

    night.take(fake="-230m")
    taken = time.monotonic()
    urgent, raw = block(lambda b: b.get("full_text", "").startswith("💊 open"), timeout=10)
    print(f"\ni3blocks wrote the urgent line {time.monotonic() - taken:.3f} s after `dose take` returned: {raw}")
    assert re.fullmatch(r"💊 open (9|10) min", urgent["full_text"]), urgent
    assert re.fullmatch(r"💊 (9|10)m", urgent["short_text"]), urgent
    assert urgent["color"] == "#FF6B6B", urgent
    assert urgent["urgent"] is True and '"urgent":true' in raw, raw

    # and the follower ends with i3blocks
    bar.kill()
    bar.wait()
    wait_for("the follower gone after i3blocks was killed", lambda: not alive(follower), timeout=5, every=0.05)

"""`dosetap status --format waybar --follow` in the real waybar (#27): Debian's waybar 0.9.17 on a headless sway
1.7 (the pixman renderer, no GPU), run as an unprivileged user as sway requires, against a real `dosetap agent`
of the same user. Everything is read back from grim screenshots of the bar: the text by OCR (tesseract), the
emoji's colours and the urgent class's CSS by pixels. Nothing here is skipped.

Run alone: DOSETAP_BIN=.build/debug/dosetap scripts/real-clients-tests.sh status-bars"""

import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
from PIL import Image

from realclients import alive, children, cmdline, count, wait_for

BIN = os.environ["DOSETAP_BIN"]
USER = "dosetap-bar"
ARTIFACTS = pathlib.Path(os.environ.get("DOSETAP_REAL_CLIENT_ARTIFACTS", ".build/real-clients"))
WIDTH, BAR = 640, 40
URGENT = (0xD0, 0x00, 0x00)      # the CSS background of .urgent below
NEAR_CLOSE = (0xFF, 0xE0, 0x00)  # the CSS text colour of .near-close below
BACKGROUND = (0x20, 0x20, 0x20)


def bar_user():
    """sway refuses to run as root: the bar, its follower and the agent run as a system user of their own."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        assert os.geteuid() == 0, f"the user {USER} is missing and only root can add it (useradd --system {USER})"
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", USER], check=True)
        return pwd.getpwnam(USER)


class Session:
    def __init__(self):
        for tool in ("sway", "waybar", "grim", "tesseract", "faketime", "setpriv"):
            assert shutil.which(tool), f"{tool} is missing (scripts/install-deps.sh test installs it)"
        self.user = bar_user()
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="dosetap-waybar-"))
        self.work.chmod(0o755)
        self.home = self.work / "home"
        self.run = self.work / "run"
        (self.home / "config" / "dosetap").mkdir(parents=True)
        (self.home / "config" / "dosetap" / "config.toml").write_text("[web]\nlisten = []\n")
        self.run.mkdir(mode=0o700)
        for path in [self.home, self.run, *self.home.rglob("*")]:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TZ": "UTC", "NO_COLOR": "1",
            "XDG_DATA_HOME": str(self.home / "data"), "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_RUNTIME_DIR": str(self.run), "DOSETAP_UPOWER_DIR": str(self.home / "upower"),
            "DOSETAP_AUDIO_DEVICE": "null", "LANG": "C.UTF-8",
        }
        self.processes = []
        self.agent_log = self.work / "agent.log"
        self.agent = self.spawn([BIN, "agent"], self.agent_log)
        wait_for("the agent", lambda: "web dashboard listening" in self.agent_log.read_text(), timeout=60)

        # sway with one headless output the size of the bar's screen, no Xwayland, nothing else.
        (self.work / "sway.conf").write_text(f"output HEADLESS-1 resolution {WIDTH}x120\nxwayland disable\n")
        self.wayland = {"WLR_BACKENDS": "headless", "WLR_RENDERER": "pixman", "WLR_LIBINPUT_NO_DEVICES": "1"}
        self.sway = self.spawn(["sway", "-c", str(self.work / "sway.conf")], self.work / "sway.log", self.wayland)
        display = wait_for("sway's Wayland socket", lambda: next((p.name for p in self.run.glob("wayland-*")
                                                                  if not p.name.endswith(".lock")), None), timeout=30)
        self.env["WAYLAND_DISPLAY"] = display

        # The module as docs/status-bar.md gives it: exec, so the follower is waybar's own child. The emoji
        # font is not in font-family (listing it there draws the digits from it too); fontconfig finds it.
        (self.work / "waybar.json").write_text(
            '{"layer": "top", "position": "top", "height": %d, "modules-left": ["custom/dosetap"],\n'
            ' "custom/dosetap": {"exec": "exec %s status --format waybar --follow", "return-type": "json"}}\n' % (BAR, BIN))
        (self.work / "style.css").write_text(
            '* { font-family: "DejaVu Sans"; font-size: 22px; border: none; border-radius: 0; }\n'
            "window#waybar { background: #202020; color: #ffffff; }\n"
            "#custom-dosetap { padding: 0 16px; }\n"
            # Both classes of the array must reach the CSS: the phase's (the text's colour) and `urgent` (the background).
            "#custom-dosetap.near-close { color: #ffe000; }\n"
            "#custom-dosetap.urgent { background: #d00000; }\n")
        self.start_bar()

    def start_bar(self):
        self.bar = self.spawn(["waybar", "-c", str(self.work / "waybar.json"), "-s", str(self.work / "style.css")],
                              self.work / "waybar.log")
        self.follower = wait_for("waybar's `dosetap status` child",
                                 lambda: next((p for p in children(self.bar.pid) if "status" in cmdline(p)), None), timeout=30)

    def spawn(self, argv, log, extra=None):
        process = subprocess.Popen(
            ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups", *argv],
            env={**self.env, **(extra or {})}, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=self.work)
        self.processes.append(process)
        return process

    def cli(self, *args, fake=None):
        argv = ["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups"]
        argv += (["faketime", "-f", fake] if fake else []) + [BIN, *args]
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"dosetap {' '.join(args)}: {r.stderr}"
        return r.stdout

    def screenshot(self, name):
        path = self.work / f"{name}.png"
        r = subprocess.run(["setpriv", f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups",
                            "grim", "-g", f"0,0 {WIDTH}x{BAR}", "-"], env=self.env, timeout=30, capture_output=True)
        assert r.returncode == 0, f"grim: {r.stderr.decode(errors='replace')}"
        path.write_bytes(r.stdout)
        return Image.open(path).convert("RGB")

    def close(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.kill()
                process.wait()
        for pid in children(os.getpid()):
            pass


def ocr(image):
    big = image.resize((image.width * 4, image.height * 4), Image.LANCZOS)
    path = pathlib.Path(tempfile.mktemp(suffix=".png"))
    big.save(path)
    try:
        return subprocess.run(["tesseract", str(path), "-", "--psm", "7"], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    finally:
        path.unlink()


def colourful(image, exclude=()):
    """Pixels with a clear hue (not grey), apart from the given colours: the emoji, drawn by Noto Color Emoji."""
    out = []
    for pixel in image.getdata():
        if max(pixel) - min(pixel) > 60 and all(sum(abs(a - b) for a, b in zip(pixel, c)) > 40 for c in exclude):
            out.append(pixel)
    return out


def emoji_box(idle):
    """Where the idle bar (the emoji alone) has colour: the emoji's bounding box."""
    xs, ys = [], []
    for y in range(idle.height):
        for x in range(idle.width):
            p = idle.getpixel((x, y))
            if max(p) - min(p) > 60:
                xs.append(x)
                ys.append(y)
    return (min(xs), min(ys), max(xs) + 1, max(ys) + 1)


@pytest.fixture(scope="module")
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()
        print(f"\nwork folder: {s.work}")


def test_the_bar_draws_the_glance_with_a_colour_emoji(session):
    idle = wait_for("the idle glance drawn", lambda: (lambda i: i if colourful(i) else None)(session.screenshot("idle")), timeout=30)
    session.idle = idle
    # The idle night's text is the emoji alone: drawn in colour (a monochrome glyph or a missing-glyph box
    # would be grey on grey), and nothing urgent.
    hues = colourful(idle)
    assert len(hues) > 40, f"{len(hues)} coloured pixels: the emoji is not drawn in colour"
    assert len({(r // 64, g // 64, b // 64) for r, g, b in hues}) >= 3, "the emoji has one colour only"
    assert count(idle, URGENT) == 0


def test_a_dose_taken_elsewhere_reaches_the_bar_within_2_s_with_the_urgent_class(session):
    # Dose 1 230 minutes ago: the window closes in 10 minutes, near-close, urgent.
    session.cli("dose", "take", fake="-230m")
    taken = time.monotonic()
    before = session.idle.tobytes()
    changed = wait_for("the bar changed", lambda: (lambda i: i if i.tobytes() != before else None)(session.screenshot("changing")),
                       timeout=10, every=0.05)
    latency = time.monotonic() - taken
    urgent = wait_for("the urgent bar", lambda: (lambda i: i if count(i, URGENT) > 500 else None)(session.screenshot("urgent")), timeout=10)
    print(f"\nthe bar changed {latency:.2f} s after `dose take` returned")
    assert latency <= 2.0, f"the bar changed after {latency:.2f} s"
    assert count(urgent, NEAR_CLOSE, tolerance=30) > 100, "the near-close class did not colour the text"
    text = ocr(urgent)
    assert re.search(r"open (9|10) min", text), f"OCR read {text!r}"
    # The emoji is still in colour, where it was drawn on the idle bar (left of the text), on the urgent background.
    box = emoji_box(session.idle)
    assert len(colourful(urgent.crop(box), exclude=[URGENT])) > 40, f"no colour emoji in {box}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    urgent.save(ARTIFACTS / "waybar-urgent.png")
    changed.save(session.work / "first-change.png")


def test_no_dosetap_process_is_left_5_s_after_the_bar_is_killed(session):
    follower = session.follower
    assert alive(follower)
    session.bar.kill()   # SIGKILL: waybar does nothing on its way out
    session.bar.wait()
    wait_for("the follower gone", lambda: not alive(follower), timeout=5)
    # and after a restart of the bar, exactly one follower again
    session.start_bar()
    assert alive(session.follower) and session.follower != follower
    session.bar.send_signal(signal.SIGTERM)
    session.bar.wait(timeout=30)
    wait_for("the second follower gone", lambda: not alive(session.follower), timeout=5)

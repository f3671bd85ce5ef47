#!/usr/bin/env python3
"""Writes the evdev streams of hw-fixtures/hid/*.events (see README.md).

They follow what an AB Shutter3 (BLE HID, "Consumer Control" node) puts on its event node, as captured
with evdev on a Raspberry Pi (MSC_SCAN 0xc00e9 = Consumer page / Volume Increment, then KEY_VOLUMEUP,
then SYN_REPORT, all with the timestamp of the HID report; the release ~110 ms later), plus the input
core's software autorepeat for a held key (value 2 + SYN_REPORT, first after 250 ms, then every 33 ms,
no MSC_SCAN). The format is what `umockdev-record --evemu-events` writes and what
`umockdev_testbed_load_evemu_events` replays: "E: sec.usec TYPE CODE value", type and code in hex.

No down or up here has a microsecond field below 100000: umockdev (0.17.16 and its current
source) parses "sec.usec" with base auto-detection, so a zero-padded "040207" is read as octal (16519
µs). Only autorepeat events (ignored by DoseTap) may fall on such a timestamp.

Run it from anywhere; it rewrites the files next to it. The tests hard-code the expected timestamps,
so a change here must be a deliberate change there too.
"""
import os

EV_SYN, EV_KEY, EV_MSC = 0x00, 0x01, 0x04
SYN_REPORT, MSC_SCAN = 0x00, 0x04
KEY_ENTER, KEY_VOLUMEUP = 28, 115
SCAN = {KEY_VOLUMEUP: 0xC00E9, KEY_ENTER: 0x70028}
NAMES = {(EV_SYN, SYN_REPORT): "EV_SYN / SYN_REPORT", (EV_MSC, MSC_SCAN): "EV_MSC / MSC_SCAN",
         (EV_KEY, KEY_VOLUMEUP): "EV_KEY / KEY_VOLUMEUP", (EV_KEY, KEY_ENTER): "EV_KEY / KEY_ENTER"}
HERE = os.path.dirname(os.path.abspath(__file__))


def line(us, etype, code, value):
    sec, usec = divmod(us, 1_000_000)
    return f"E: {sec}.{usec:06d} {etype:04X} {code:04X} {value}\t# {NAMES[(etype, code)]:<24} {value}\n"


def report(us, keys):
    """One HID report: a scan code and a key event per changed key, then SYN_REPORT."""
    out = []
    for key, value in keys:
        out.append(line(us, EV_MSC, MSC_SCAN, SCAN[key]))
        out.append(line(us, EV_KEY, key, value))
    out.append(line(us, EV_SYN, SYN_REPORT, 0))
    return out


def repeats(down_us, up_us, key, delay=250_000, period=33_000):
    out, t = [], down_us + delay
    while t < up_us:
        out.append(line(t, EV_KEY, key, 2))
        out.append(line(t, EV_SYN, SYN_REPORT, 0))
        t += period
    return out


def write(name, device, comment, lines):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("# EVEMU 1.2\n")
        f.write(f"# device {device}\n")
        for c in comment.strip().splitlines():
            f.write(f"# {c}\n")
        f.writelines(lines)


CONSUMER = "/dev/input/event5"   # "AB Shutter3 Consumer Control" in ab-shutter3.umockdev
KEYBOARD = "/dev/input/event4"   # "AB Shutter3" (its keyboard collection)

t = 1732166703_512034
write("single.events", CONSUMER, "AB Shutter3, iOS button: one click (down 112 ms).",
      report(t, [(KEY_VOLUMEUP, 1)]) + report(t + 111_977, [(KEY_VOLUMEUP, 0)]))

t = 1732166741_204518
write("double.events", CONSUMER, "AB Shutter3, iOS button: two clicks, 174 ms apart.",
      report(t, [(KEY_VOLUMEUP, 1)]) + report(t + 96_003, [(KEY_VOLUMEUP, 0)])
      + report(t + 270_011, [(KEY_VOLUMEUP, 1)]) + report(t + 371_240, [(KEY_VOLUMEUP, 0)]))

t = 1732166788_540207
up = t + 1_603_115
write("hold.events", CONSUMER,
      "AB Shutter3, iOS button held 1.6 s: the input core's autorepeat (value 2) from 250 ms, every 33 ms.",
      report(t, [(KEY_VOLUMEUP, 1)]) + repeats(t, up, KEY_VOLUMEUP) + report(up, [(KEY_VOLUMEUP, 0)]))

t = 1732166822_730466
write("bouncy.events", CONSUMER,
      "A worn dome: the contact chatters for 19 ms (down, up after 7 ms, down again) before a 142 ms click.",
      report(t, [(KEY_VOLUMEUP, 1)]) + report(t + 7_012, [(KEY_VOLUMEUP, 0)])
      + report(t + 19_030, [(KEY_VOLUMEUP, 1)]) + report(t + 142_118, [(KEY_VOLUMEUP, 0)]))

t = 1732166860_118790
write("overlapping-keys.events", KEYBOARD,
      "A remote that sends two keys for one press (Enter and Volume Up, 3 ms apart, released in the other order):\n"
      "one logical button, so one down and one up.",
      report(t, [(KEY_ENTER, 1)]) + report(t + 3_004, [(KEY_VOLUMEUP, 1)])
      + report(t + 120_550, [(KEY_ENTER, 0)]) + report(t + 124_101, [(KEY_VOLUMEUP, 0)]))

#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (Fuzz/corpus/<target>/) from hw-fixtures/.

Run with Debian's /usr/bin/python3 (python3-gi marshals the D-Bus seeds). The files are committed;
rerun this after changing a fixture or an input format of Fuzz/*/*.swift.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")
# The fixed key and address of Fuzz/BTHomeDecrypt (the bthome.io encryption example).
DECRYPT_MAC, DECRYPT_KEY = "54:48:E6:8F:80:A5", "231d39c1d7cc1ab1aee224cd096db932"


def write(target, seeds):
    folder = os.path.join(CORPUS, target)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name, data in seeds:
        if isinstance(data, str):
            data = data.encode()
        digest = hashlib.sha1(data).hexdigest()[:12]
        with open(os.path.join(folder, f"{name}-{digest}"), "wb") as f:
            f.write(data)
    print(f"{target}: {len(seeds)} seeds")


def bthome():
    vectors = json.load(open(os.path.join(ROOT, "hw-fixtures/bthome/bthome-ble-vectors.json")))
    plain, encrypted, seen = [], [], set()
    for test in vectors["tests"]:
        for step in test["steps"]:
            data = bytes.fromhex(step["data"])
            if data in seen:
                continue
            seen.add(data)
            name = re.sub(r"[^a-z0-9]+", "-", test["name"].lower()).strip("-")[:40]
            if data and data[0] & 1:
                if step["mac"] == DECRYPT_MAC and step["bindkey"] == DECRYPT_KEY:
                    encrypted.append((name, b"\x00" + data))
            else:
                plain.append((name, data))
    write("bthome", plain)
    # Mode 1 of the decrypt target: counter (4), device info, plaintext objects.
    sealed = [("seal-press", b"\x01" + struct.pack("<I", 7) + b"\x41" + bytes.fromhex("000101643a01")),
              ("seal-beacon", b"\x01" + struct.pack("<I", 9) + b"\x45" + bytes.fromhex("0002013a00")),
              ("seal-address", b"\x01" + struct.pack("<I", 1) + b"\x43" + bytes.fromhex("02ca0903bf13"))]
    ccm = [("ccm-roundtrip", bytes([2, 0, 0, 6, 8]) + bytes(range(16)) + bytes(13) + bytes(8) + b"hello BTHome"),
           ("ccm-open", bytes([3, 16, 4, 13]) + bytes(range(16)) + bytes(13) + b"\x01\x02\x03\x04" + b"ciphertext")]
    write("bthome-decrypt", encrypted + sealed + ccm)


# RawPowerSupply.attributeNames: the attributes a reading uses (the rest only makes inputs longer).
ATTRIBUTES = {"type", "scope", "present", "online", "status", "capacity", "capacity_level", "energy_now", "energy_full",
              "energy_full_design", "power_now", "charge_now", "charge_full", "charge_full_design", "current_now",
              "voltage_now", "voltage_max_design", "voltage_min_design", "model_name", "manufacturer", "technology"}


def power_supply():
    seeds = []
    for path in sorted(glob.glob(os.path.join(ROOT, "hw-fixtures/power_supply/*.umockdev"))):
        lines, supply = [], False
        for line in open(path):
            if line.startswith("P: "):
                supply = "/power_supply/" in line
                if supply:
                    lines.append(f"[{line.rstrip().rsplit('/', 1)[-1]}]")
            elif supply and line.startswith("A: ") and line[3:].split("=", 1)[0] in ATTRIBUTES:
                key, value = line[3:].rstrip("\n").split("=", 1)
                lines.append(f"{key}={value.replace(chr(92) + 'n', chr(10)).rstrip(chr(10))}")
        seeds.append((os.path.basename(path)[:-len(".umockdev")], "\n".join(lines) + "\n"))
    write("power-supply", seeds)


def hid():
    seeds = []
    for path in sorted(glob.glob(os.path.join(ROOT, "hw-fixtures/hid/*.events"))):
        records = b""
        for line in open(path):
            m = re.match(r"E: (\d+)\.(\d+) ([0-9A-Fa-f]{4}) ([0-9A-Fa-f]{4}) (-?\d+)", line)
            if m:
                records += struct.pack("<qqHHi", int(m[1]), int(m[2]), int(m[3], 16), int(m[4], 16), int(m[5]))
        name = os.path.basename(path)[:-len(".events")]
        header = bytes([0]) + struct.pack("<HHHH", 115, 28, 164, 115)
        seeds.append((name, header + records))
        # The same stream with a SYN_DROPPED in the middle and EVIOCGKEY answering "the held keys".
        dropped = struct.pack("<qqHHi", 1, 0, 0, 3, 0) + struct.pack("<qqHHi", 1, 0, 0, 0, 0)
        half = len(records) // 48 * 24
        seeds.append((name + "-dropped", bytes([0x08]) + header[1:] + records[:half] + dropped + records[half:]))
    write("hid", seeds)


def dbus():
    from gi.repository import Gio, GLib

    def signal(path, interface, member, body):
        m = Gio.DBusMessage.new_signal(path, interface, member)
        m.set_sender(":1.7")
        m.set_serial(1)  # libdbus refuses serial 0
        m.set_body(body)
        return m.to_blob(Gio.DBusCapabilityFlags.NONE)

    service = GLib.Variant("a{sv}", {"0000fcd2-0000-1000-8000-00805f9b34fb": GLib.Variant("ay", bytes.fromhex("4400c9013a01"))})
    props = GLib.Variant("(sa{sv}as)", ("org.bluez.Device1", {
        "ServiceData": GLib.Variant("a{sv}", {"0000fcd2-0000-1000-8000-00805f9b34fb": GLib.Variant("ay", bytes.fromhex("4400c9013a01"))}),
        "RSSI": GLib.Variant("n", -61),
        "ManufacturerData": GLib.Variant("a{qv}", {0x0ba9: GLib.Variant("ay", b"\x01\x02")}),
    }, ["Name"]))
    added = GLib.Variant("(oa{sa{sv}})", ("/org/bluez/hci0/dev_54_48_E6_8F_80_A5", {
        "org.bluez.Device1": {"Address": GLib.Variant("s", "54:48:E6:8F:80:A5"), "Paired": GLib.Variant("b", False),
                              "ServiceData": service, "UUIDs": GLib.Variant("as", ["0000fcd2-0000-1000-8000-00805f9b34fb"])},
        "org.bluez.Battery1": {"Percentage": GLib.Variant("y", 87)},
    }))
    notify = GLib.Variant("(sa{sv}as)", ("org.bluez.GattCharacteristic1", {"Value": GLib.Variant("ay", b"\x01")}, []))
    various = GLib.Variant("(ynqiuxtdsogv(ib)a(sv))", (1, -2, 3, -4, 5, -6, 7, 0.5, "s", "/o", "a{sv}",
                                                       GLib.Variant("d", 1.5), (1, True), [("k", GLib.Variant("u", 1))]))
    seeds = [
        ("properties-changed", signal("/org/bluez/hci0/dev_54_48_E6_8F_80_A5", "org.freedesktop.DBus.Properties", "PropertiesChanged", props)),
        ("interfaces-added", signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", added)),
        ("gatt-notify", signal("/org/bluez/hci0/dev_AA/service0010/char0011", "org.freedesktop.DBus.Properties", "PropertiesChanged", notify)),
        ("basic-types", signal("/org/dosetap/Fuzz", "org.dosetap.Fuzz", "Types", various)),
    ]
    reply = Gio.DBusMessage.new_method_call("org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
    reply.set_serial(3)
    ret = Gio.DBusMessage.new_method_reply(reply)
    ret.set_serial(4)
    ret.set_body(GLib.Variant("(a{oa{sa{sv}}})", ({"/org/bluez/hci0": {"org.bluez.Adapter1": {"Powered": GLib.Variant("b", True)}}},)))
    seeds.append(("managed-objects-reply", ret.to_blob(Gio.DBusCapabilityFlags.NONE)))
    # The same bodies as "signature length, signature, body" (the target wraps them in its own header).
    for name, blob in list(seeds):
        message = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
        signature = (message.get_signature() or "").encode()
        body_length = int.from_bytes(blob[4:8], "little")
        seeds.append((name + "-body", bytes([len(signature)]) + signature + blob[len(blob) - body_length:]))
    write("dbus", seeds)


def config():
    write("config", [
        ("documented", '[alarm]\ntime = "06:30"\n\n[battery]\npoll_seconds = 60\n'),
        ("alarm-only", '[alarm]\ntime = "23:59"\n'),
        ("poll-max", "[battery]\npoll_seconds = 3600\n"),
        ("unknown-key", "[battery]\npoll = 5\n"),
        ("inline", 'alarm = { time = "7:05" }\nbattery.poll_seconds = 120\n'),
        ("wrong-type", "[alarm]\ntime = 0630\n"),
    ])


def flic2():
    """Flic 2 (Fuzz/Flic2): mode byte, then length-prefixed chunks (frames in even mode, packet bodies in odd)."""
    def chunks(*parts):
        return b"".join(bytes([len(p)]) + p for p in parts)
    event = bytes([12]) + (3).to_bytes(4, "little") + (5).to_bytes(6, "little") + bytes([1]) + (9).to_bytes(6, "little") + bytes([10])
    queued = bytes([12]) + (7).to_bytes(4, "little") + (1).to_bytes(6, "little") + bytes([0x11]) + (2).to_bytes(6, "little") + bytes([0x3B])
    init_boot = bytes([10, 1]) + bytes(5) + (2).to_bytes(4, "little") + (9).to_bytes(4, "little")
    init_same = bytes([11, 0]) + bytes(5) + (0).to_bytes(4, "little")
    response1 = bytes([0]) + bytes([0x66, 0x0B, 0x00, 0x00]) + bytes(64) + bytes([0x34, 0x12, 0x70, 0xDA, 0xE4, 0x80, 0]) + bytes(32) + bytes(8) + bytes([2])
    write("flic2", [
        ("events", bytes([1]) + chunks(init_same, event, bytes([15]), bytes([20, 0x55, 0x03]))),
        ("queued-after-reboot", bytes([1]) + chunks(init_boot, queued, event)),
        ("disconnect", bytes([1]) + chunks(bytes([9, 1]))),
        ("fragments", bytes([0]) + chunks(bytes([0xA1]) + response1[:19], bytes([0xA1]) + response1[19:38],
                                         bytes([0xA1]) + response1[38:57], bytes([0x21]) + response1[57:])),
        ("negative", bytes([0]) + chunks(bytes([0x00, 6, 0x66, 0x0B, 0, 0]), bytes([0x00, 2, 1, 2, 3, 4]))),
        ("truncated", bytes([0]) + chunks(bytes([0x80]), bytes([0x01]))),
    ])


bthome()
flic2()
power_supply()
hid()
dbus()
config()

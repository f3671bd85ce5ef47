#!/usr/bin/env python3
"""Turns a `dbus-monitor --system` capture of BlueZ into a scenario skeleton for hw-fixtures/bluez/.

    dbus-monitor --system "type='signal',sender='org.bluez'" > capture.txt     # press the button, Ctrl-C
    scripts/bluez-capture-to-scenario.py capture.txt > hw-fixtures/bluez/my-button.json

What it keeps: the adapters and devices that appear (InterfacesAdded), every advert (Device1.ServiceData
in PropertiesChanged or InterfacesAdded), adapters powered off and on (Adapter1.Powered), GATT
notifications (GattCharacteristic1.Value) and battery changes (Battery1.Percentage), with the pauses
between them (capped at 2 s). Adapters and devices already present before the capture began are not
in it: add them by hand (`bluetoothctl devices` lists them). `setup` and `expect` are left for you to
fill in: which buttons were added, and what the agent must have done.
"""
import json
import re
import sys

SCALARS = {
    "boolean": lambda s: s == "true",
    "byte": int, "int16": int, "uint16": int, "int32": int, "uint32": int, "int64": int, "uint64": int,
    "double": float,
}


def unquote(text):
    """A dbus-monitor quoted string (C-like escapes) → str."""
    assert text.startswith('"'), text
    body = text[1:text.rindex('"')]
    return bytes(body, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


class Parser:
    def __init__(self, lines):
        self.lines = lines
        self.i = 0

    def value(self, line=None):
        if line is None:
            line = self.lines[self.i].strip()
            self.i += 1
        if line.startswith("variant"):
            return self.value(line[len("variant"):].strip())
        if line.startswith("string "):
            return unquote(line[len("string "):])
        if line.startswith("object path "):
            return unquote(line[len("object path "):])
        if line.startswith("signature "):
            return unquote(line[len("signature "):])
        if line == "array of bytes [":
            data = []
            while self.lines[self.i].strip() != "]":
                data += [int(b, 16) for b in self.lines[self.i].split()]
                self.i += 1
            self.i += 1
            return bytes(data)
        if line.startswith("array of bytes \""):
            # Printable byte arrays are shown as a string, maybe followed by ` + \0`.
            rest = line[len("array of bytes "):]
            data = unquote(rest).encode("utf-8")
            return data + (b"\0" if rest.rstrip().endswith("+ \\0") else b"")
        if line == "array [":
            items = []
            while self.lines[self.i].strip() != "]":
                items.append(self.value())
            self.i += 1
            if items and all(isinstance(x, tuple) and len(x) == 3 and x[0] == "entry" for x in items):
                return {k: v for _, k, v in items}
            return items
        if line == "dict entry(":
            key = self.value()
            val = self.value()
            assert self.lines[self.i].strip() == ")", self.lines[self.i]
            self.i += 1
            return ("entry", key, val)
        if line == "struct {":
            fields = []
            while self.lines[self.i].strip() != "}":
                fields.append(self.value())
            self.i += 1
            return fields
        kind, _, raw = line.partition(" ")
        if kind in SCALARS:
            return SCALARS[kind](raw)
        raise ValueError(f"cannot read '{line}'")


HEADER = re.compile(r"^signal time=([0-9.]+) .*?path=([^;]+); interface=([^;]+); member=(\S+)")


def signals(text):
    """(time, path, interface, member, [arguments]) for each signal in the capture."""
    blocks = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            blocks.append([line, []])
        elif blocks:
            blocks[-1][1].append(line)
    for header, body in blocks:
        m = HEADER.match(header)
        if not m:
            continue
        p = Parser(body)
        args = []
        try:
            while p.i < len(body):
                args.append(p.value())
        except (IndexError, ValueError, AssertionError) as e:
            # A capture cut off mid-signal (Ctrl-C), or a type this script does not read: skip that signal.
            print(f"bluez-capture-to-scenario: skipped the signal at {m.group(1)} ({m.group(4)} on {m.group(2)}): "
                  f"{e or 'truncated'}", file=sys.stderr)
            continue
        yield float(m.group(1)), m.group(2), m.group(3), m.group(4), args


def hexbytes(b):
    return " ".join(f"{x:02x}" for x in b)


def address_of(path):
    last = path.rsplit("/", 1)[-1]
    return last[4:].replace("_", ":") if last.startswith("dev_") else None


def convert(text):
    adapters, devices, timeline = [], [], []
    last = None

    def step(at, s):
        nonlocal last
        if last is not None and at - last > 0.001:
            timeline.append({"sleep": round(min(at - last, 2.0), 3)})
        last = at
        timeline.append(s)

    def properties(at, path, interface, props, initial=False):
        if interface == "org.bluez.Device1" and props.get("ServiceData"):
            sd = {uuid: hexbytes(v) for uuid, v in props["ServiceData"].items() if isinstance(v, bytes)}
            if sd:
                step(at, {"advert": props.get("Address") or address_of(path), "serviceData": sd})
        elif interface == "org.bluez.Adapter1" and "Powered" in props:
            step(at, {"set": path, "interface": interface, "property": "Powered", "value": {"b": props["Powered"]}})
        elif interface == "org.bluez.GattCharacteristic1" and isinstance(props.get("Value"), bytes):
            step(at, {"set": path, "interface": interface, "property": "Value", "value": {"ay": hexbytes(props["Value"])}})
        elif interface == "org.bluez.Battery1" and "Percentage" in props:
            step(at, {"set": path, "interface": interface, "property": "Percentage", "value": {"y": props["Percentage"]}})
        elif interface == "org.bluez.Device1" and not initial and ("Connected" in props or "ServicesResolved" in props):
            for name in ("Connected", "ServicesResolved"):
                if name in props:
                    step(at, {"set": path, "interface": interface, "property": name, "value": {"b": props[name]}})

    for at, path, interface, member, args in signals(text):
        if member == "InterfacesAdded" and len(args) == 2 and isinstance(args[1], dict):
            objpath, ifaces = args
            if "org.bluez.Adapter1" in ifaces:
                a = ifaces["org.bluez.Adapter1"]
                adapters.append({"name": objpath.rsplit("/", 1)[-1], "alias": a.get("Alias", a.get("Name", ""))})
            if "org.bluez.Device1" in ifaces:
                d = ifaces["org.bluez.Device1"]
                adapter = d.get("Adapter", objpath.rsplit("/", 1)[0]).rsplit("/", 1)[-1]
                devices.append({"adapter": adapter, "address": d.get("Address") or address_of(objpath), "alias": d.get("Alias", "")})
                properties(at, objpath, "org.bluez.Device1", d, initial=True)
        elif member == "PropertiesChanged" and len(args) >= 2 and isinstance(args[1], dict):
            properties(at, path, args[0], args[1])
    return {
        "summary": "TODO: what happens, in a sentence or two.",
        "source": "Recorded with dbus-monitor --system; TODO: the button, the machine, the date.",
        "setup": [],
        "adapters": adapters,
        "devices": devices,
        "timeline": timeline,
        "expect": {"doses": []},
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bluez-capture-to-scenario.py CAPTURE.txt")
    try:
        with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
            text = f.read()
        print(json.dumps(convert(text), indent=2))
    except (OSError, ValueError, AssertionError) as e:
        sys.exit(f"bluez-capture-to-scenario: {sys.argv[1]}: {e}")


if __name__ == "__main__":
    main()

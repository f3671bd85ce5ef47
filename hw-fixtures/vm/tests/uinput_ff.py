#!/usr/bin/python3
"""A force-feedback motor for the VM tier (#28): a uinput device with EV_FF / FF_RUMBLE (and FF_GAIN), made through
the real kernel's /dev/uinput, that answers the uploads and erases the kernel hands it and records what it is told,
one JSON line each, in the file named by argv[1]:
  {"at": t, "upload": id, "strong": m, "weak": m, "length": ms}   an FF_RUMBLE effect uploaded (or updated)
  {"at": t, "play": id, "value": 1|0}                              the effect started (1) or stopped (0)
  {"at": t, "erase": id}                                           the effect removed
  {"at": t, "gain": g}                                             FF_GAIN set
Prints "ready /dev/input/eventN" once the device exists. The layouts are the kernel's (linux/uinput.h,
linux/input.h) on x86_64."""
import fcntl
import json
import os
import struct
import sys
import time

LOG = sys.argv[1]
NAME = b"DoseTap VM rumble motor"

# ioctl numbers: _IOC(dir, 'U', nr, size).
def _ioc(direction, nr, size):
    return (direction << 30) | (size << 16) | (ord("U") << 8) | nr

IOC_NONE, IOC_WRITE, IOC_READ = 0, 1, 2
EV_FF, EV_UINPUT = 0x15, 0x0101
FF_RUMBLE, FF_GAIN = 0x50, 0x60
UI_FF_UPLOAD, UI_FF_ERASE = 1, 2
INPUT_EVENT = struct.Struct("llHHi")               # struct input_event: timeval, type, code, value (24 bytes)
SETUP = struct.Struct("HHHH80sI")                  # struct uinput_setup (92 bytes)
FF_EFFECT_SIZE = 48                                # struct ff_effect: 16-byte header + 32-byte union
UPLOAD = struct.Struct(f"Ii{FF_EFFECT_SIZE}s{FF_EFFECT_SIZE}s")  # struct uinput_ff_upload (104 bytes)
ERASE = struct.Struct("IiI")                        # struct uinput_ff_erase (12 bytes)

UI_DEV_CREATE = _ioc(IOC_NONE, 1, 0)
UI_DEV_SETUP = _ioc(IOC_WRITE, 3, SETUP.size)
UI_SET_EVBIT = _ioc(IOC_WRITE, 100, 4)
UI_SET_FFBIT = _ioc(IOC_WRITE, 107, 4)
UI_GET_SYSNAME = _ioc(IOC_READ, 44, 64)
UI_BEGIN_FF_UPLOAD = _ioc(IOC_READ | IOC_WRITE, 200, UPLOAD.size)
UI_END_FF_UPLOAD = _ioc(IOC_WRITE, 201, UPLOAD.size)
UI_BEGIN_FF_ERASE = _ioc(IOC_READ | IOC_WRITE, 202, ERASE.size)
UI_END_FF_ERASE = _ioc(IOC_WRITE, 203, ERASE.size)


def record(**fields):
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"at": time.time(), **fields}) + "\n")


fd = os.open("/dev/uinput", os.O_RDWR)
fcntl.ioctl(fd, UI_SET_EVBIT, EV_FF)
fcntl.ioctl(fd, UI_SET_FFBIT, FF_RUMBLE)
fcntl.ioctl(fd, UI_SET_FFBIT, FF_GAIN)
fcntl.ioctl(fd, UI_DEV_SETUP, SETUP.pack(0x06, 0x1209, 0x0001, 1, NAME, 16))  # BUS_VIRTUAL, pid.codes test ids
fcntl.ioctl(fd, UI_DEV_CREATE)
sysname = fcntl.ioctl(fd, UI_GET_SYSNAME, bytes(64)).split(b"\0", 1)[0].decode()
events = sorted(e for e in os.listdir(f"/sys/devices/virtual/input/{sysname}") if e.startswith("event"))
open(LOG, "a").close()
print(f"ready /dev/input/{events[0]}", flush=True)

while True:
    data = os.read(fd, INPUT_EVENT.size)
    _, _, kind, code, value = INPUT_EVENT.unpack(data)
    if kind == EV_UINPUT and code == UI_FF_UPLOAD:
        request = bytearray(UPLOAD.pack(value, 0, bytes(FF_EFFECT_SIZE), bytes(FF_EFFECT_SIZE)))
        fcntl.ioctl(fd, UI_BEGIN_FF_UPLOAD, request)
        request_id, _, effect, _ = UPLOAD.unpack(request)
        effect_type, effect_id, _direction, _tb, _ti, length, _delay = struct.unpack_from("HhHHHHH", effect, 0)
        strong, weak = struct.unpack_from("HH", effect, 16)
        ok = effect_type == FF_RUMBLE
        record(upload=effect_id, type=effect_type, strong=strong, weak=weak, length=length, accepted=ok)
        fcntl.ioctl(fd, UI_END_FF_UPLOAD, UPLOAD.pack(request_id, 0 if ok else -22, effect, bytes(FF_EFFECT_SIZE)))
    elif kind == EV_UINPUT and code == UI_FF_ERASE:
        request = bytearray(ERASE.pack(value, 0, 0))
        fcntl.ioctl(fd, UI_BEGIN_FF_ERASE, request)
        request_id, _, effect_id = ERASE.unpack(request)
        record(erase=effect_id)
        fcntl.ioctl(fd, UI_END_FF_ERASE, ERASE.pack(request_id, 0, effect_id))
    elif kind == EV_FF and code == FF_GAIN:
        record(gain=value)
    elif kind == EV_FF:
        record(play=code, value=value)

#!/usr/bin/python3
"""A desktop notification server (org.freedesktop.Notifications) on the session bus that records every
Notify call, one JSON line each, in the file named by argv[1]. The VM tier runs it as the test user, so the
agent's alarm notification is seen by a real peer on a real session bus."""
import json
import sys
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

LOG = sys.argv[1]


class Server(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.next_id = 0

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app, replaces, icon, summary, body, actions, hints, timeout):
        self.next_id += 1
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"at": time.time(), "app": str(app), "summary": str(summary), "body": str(body),
                                "actions": [str(a) for a in actions], "id": self.next_id}) + "\n")
        return dbus.UInt32(self.next_id)

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u", out_signature="")
    def CloseNotification(self, id):
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"closed": int(id)}) + "\n")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="", out_signature="as")
    def GetCapabilities(self):
        return ["actions", "body", "persistence"]

    @dbus.service.method("org.freedesktop.Notifications", in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ["dosetap-vm-notifyd", "DoseTap", "1", "1.2"]


DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.freedesktop.Notifications", bus, do_not_queue=True)
server = Server(bus)
open(LOG, "a").close()
print("notifyd: ready", flush=True)
GLib.MainLoop().run()

/// iTags for python-dbusmock's `bluez5` template, which has adapters and devices but no GATT: methods to
/// add to the mock's `/org/bluez` object (with `org.freedesktop.DBus.Mock.AddMethod`, interface
/// `MockBlueZGATT.interface`), so a test in any target can build an iTag as bluetoothd shows one.
///
/// - `AddITag(s adapter, s address, s alias, y battery) → (o device, o press, o decoy)`: the template's device,
///   whose `Device1.Connect` sets `Connected` (raising `AlreadyConnected` when it is) and `ServicesResolved`
///   50 ms later, as BlueZ does after service discovery, and whose `Disconnect` clears both; `Battery1`;
///   a `GattService1` 0xFFE0 (`…/service0010`) with the press characteristic 0xFFE1 (`…/char0011`); and a decoy
///   0xFFE1 under service 0x180F listed before it (`…/service000c/char000d`). Characteristics have `Value`,
///   `Notifying`, `StartNotify` and `StopNotify`. Every object is announced with `InterfacesAdded`.
/// - `FailConnects(o device, u count)`: the next `count` connects fail with `org.bluez.Error.Failed`.
/// - `SkipResolves(o device, u count)`: the next `count` connects bring the link up but never `ServicesResolved`.
/// - `Strangers(u start, u count)`: `count` devices nobody paired, each at a new random address (numbered from
///   `start`), announced with `InterfacesAdded` carrying an unencrypted BTHome press in `ServiceData`, as
///   bluetoothd does for a transmitter rotating its address (#25, finding 7). Only the signals: the mock keeps
///   no object for them.
///
/// - `AddFlic2(s adapter, s address, s alias) → (o device, o write, o notify)`: a Flic 2 as bluetoothd shows one: the
///   device (advertising the Flic 2 service UUID; `Connect`/`Disconnect` as above), `GattService1`
///   00420000-8f59-4420-870d-84f3b617e493 with the write characteristic …0001 (`WriteValue` emits
///   `org.dosetap.Mock.Written(ay)` on it, so a test can answer as the button: `MockFlic2Peer`) and the notify
///   characteristic …0002 (`Value`, `Notifying`, `StartNotify`, `StopNotify`, `MTU` 23).
///
/// A press: `org.freedesktop.DBus.Properties.Set(GattCharacteristic1, Value, <ay 01>)` on the characteristic
/// emits `PropertiesChanged` as a notification does. Calls are counted with the mock's `GetMethodCalls`.
public enum MockBlueZGATT {
    public static let path = "/org/bluez"
    public static let interface = "org.dosetap.Mock"

    /// (name, in signature, out signature, python code) for `AddMethod`.
    public static let methods: [(name: String, inSignature: String, outSignature: String, code: String)] = [
        ("AddITag", "sssy", "ooo", addITag),
        ("AddFlic2", "sss", "ooo", addFlic2),
        ("FailConnects", "ou", "", "objects[args[0]].dosetap_fail_connects = int(args[1])"),
        ("SkipResolves", "ou", "", "objects[args[0]].dosetap_skip_resolves = int(args[1])"),
        ("Strangers", "uu", "", strangers),
    ]

    static let strangers = #"""
        for n in range(int(args[0]), int(args[0]) + int(args[1])):
            address = 'C6:%02X:%02X:%02X:%02X:%02X' % ((n >> 32) & 0xFF, (n >> 24) & 0xFF, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF)
            path = '/org/bluez/hci0/dev_' + address.replace(':', '_')
            data = dbus.Dictionary({'0000fcd2-0000-1000-8000-00805f9b34fb': dbus.Array([0x40, 0x00, n & 0xFF, 0x3A, 0x01], signature='y')},
                                   signature='sv')
            self.object_manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}', [
                dbus.ObjectPath(path), {'org.bluez.Device1': {
                    'Address': dbus.String(address, variant_level=1), 'AddressType': dbus.String('random', variant_level=1),
                    'Adapter': dbus.ObjectPath('/org/bluez/hci0', variant_level=1), 'RSSI': dbus.Int16(-70, variant_level=1),
                    'ServiceData': dbus.Dictionary(data, signature='sv', variant_level=1)}}])
        """#

    static let connect = #"""
        from gi.repository import GLib
        if self.props['org.bluez.Device1']['Connected']:
            raise dbus.exceptions.DBusException('Already Connected', name='org.bluez.Error.AlreadyConnected')
        failures = getattr(self, 'dosetap_fail_connects', 0)
        if failures > 0:
            self.dosetap_fail_connects = failures - 1
            raise dbus.exceptions.DBusException('le-connection-abort-by-local', name='org.bluez.Error.Failed')
        self.UpdateProperties('org.bluez.Device1', {'Connected': dbus.Boolean(True, variant_level=1)})
        def resolved(device=self):
            if device.props['org.bluez.Device1']['Connected']:
                device.UpdateProperties('org.bluez.Device1', {'ServicesResolved': dbus.Boolean(True, variant_level=1)})
            return False
        skips = getattr(self, 'dosetap_skip_resolves', 0)
        if skips > 0:
            self.dosetap_skip_resolves = skips - 1
        else:
            GLib.timeout_add(50, resolved)
        """#

    static let disconnect = #"""
        if not self.props['org.bluez.Device1']['Connected']:
            raise dbus.exceptions.DBusException('Not Connected', name='org.bluez.Error.NotConnected')
        self.UpdateProperties('org.bluez.Device1', {'ServicesResolved': dbus.Boolean(False, variant_level=1)})
        self.UpdateProperties('org.bluez.Device1', {'Connected': dbus.Boolean(False, variant_level=1)})
        """#

    static let startNotify = "self.UpdateProperties('org.bluez.GattCharacteristic1', {'Notifying': dbus.Boolean(True, variant_level=1)})"
    static let stopNotify = "self.UpdateProperties('org.bluez.GattCharacteristic1', {'Notifying': dbus.Boolean(False, variant_level=1)})"

    static let addITag = """
        device = self.AddDevice(args[0], args[1], args[2])
        dev = objects[device]
        dev.AddMethod('org.bluez.Device1', 'Connect', '', '', \(pythonString(connect)))
        dev.AddMethod('org.bluez.Device1', 'Disconnect', '', '', \(pythonString(disconnect)))
        dev.AddProperties('org.bluez.Battery1', {'Percentage': dbus.Byte(int(args[3]), variant_level=1)})
        self.object_manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}', [
            dbus.ObjectPath(device), {'org.bluez.Battery1': dev.props['org.bluez.Battery1']}])
        paths = []
        for service_name, service_uuid, char_name in [('service000c', '0000180f-0000-1000-8000-00805f9b34fb', 'char000d'),
                                                      ('service0010', '0000ffe0-0000-1000-8000-00805f9b34fb', 'char0011')]:
            service = device + '/' + service_name
            self.AddObject(service, 'org.bluez.GattService1', {
                'UUID': dbus.String(service_uuid, variant_level=1),
                'Device': dbus.ObjectPath(device, variant_level=1),
                'Primary': dbus.Boolean(True, variant_level=1),
            }, [])
            self.object_manager_emit_added(service)
            chrc = service + '/' + char_name
            self.AddObject(chrc, 'org.bluez.GattCharacteristic1', {
                'UUID': dbus.String('0000ffe1-0000-1000-8000-00805f9b34fb', variant_level=1),
                'Service': dbus.ObjectPath(service, variant_level=1),
                'Value': dbus.Array([], signature='y', variant_level=1),
                'Notifying': dbus.Boolean(False, variant_level=1),
                'Flags': dbus.Array(['read', 'notify'], signature='s', variant_level=1),
            }, [('StartNotify', '', '', \(pythonString(startNotify))), ('StopNotify', '', '', \(pythonString(stopNotify)))])
            self.object_manager_emit_added(chrc)
            paths.append(chrc)
        ret = (dbus.ObjectPath(device), dbus.ObjectPath(paths[1]), dbus.ObjectPath(paths[0]))
        """

    static let writeValue = #"""
        self.EmitSignal('org.dosetap.Mock', 'Written', 'ay', [dbus.Array(args[0], signature='y')])
        """#

    static let addFlic2 = """
        device = self.AddDevice(args[0], args[1], args[2])
        dev = objects[device]
        dev.AddMethod('org.bluez.Device1', 'Connect', '', '', \(pythonString(connect)))
        dev.AddMethod('org.bluez.Device1', 'Disconnect', '', '', \(pythonString(disconnect)))
        dev.UpdateProperties('org.bluez.Device1', {'UUIDs': dbus.Array(['00420000-8f59-4420-870d-84f3b617e493'], signature='s', variant_level=1)})
        service = device + '/service000c'
        self.AddObject(service, 'org.bluez.GattService1', {
            'UUID': dbus.String('00420000-8f59-4420-870d-84f3b617e493', variant_level=1),
            'Device': dbus.ObjectPath(device, variant_level=1),
            'Primary': dbus.Boolean(True, variant_level=1),
        }, [])
        self.object_manager_emit_added(service)
        write = service + '/char000d'
        self.AddObject(write, 'org.bluez.GattCharacteristic1', {
            'UUID': dbus.String('00420001-8f59-4420-870d-84f3b617e493', variant_level=1),
            'Service': dbus.ObjectPath(service, variant_level=1),
            'Value': dbus.Array([], signature='y', variant_level=1),
            'Flags': dbus.Array(['write-without-response', 'write'], signature='s', variant_level=1),
            'MTU': dbus.UInt16(23, variant_level=1),
        }, [('WriteValue', 'aya{sv}', '', \(pythonString(writeValue)))])
        self.object_manager_emit_added(write)
        notify = service + '/char000f'
        self.AddObject(notify, 'org.bluez.GattCharacteristic1', {
            'UUID': dbus.String('00420002-8f59-4420-870d-84f3b617e493', variant_level=1),
            'Service': dbus.ObjectPath(service, variant_level=1),
            'Value': dbus.Array([], signature='y', variant_level=1),
            'Notifying': dbus.Boolean(False, variant_level=1),
            'Flags': dbus.Array(['notify'], signature='s', variant_level=1),
            'MTU': dbus.UInt16(23, variant_level=1),
        }, [('StartNotify', '', '', \(pythonString(startNotify))), ('StopNotify', '', '', \(pythonString(stopNotify)))])
        self.object_manager_emit_added(notify)
        ret = (dbus.ObjectPath(device), dbus.ObjectPath(write), dbus.ObjectPath(notify))
        """

    /// A Python string literal holding `code`.
    static func pythonString(_ code: String) -> String {
        "'" + code.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            .replacingOccurrences(of: "\n", with: "\\n") + "'"
    }
}

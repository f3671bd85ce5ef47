/// The signals the BlueZ clients act on, decoded in one place: BlueZ's object tree changing
/// (`InterfacesAdded`/`InterfacesRemoved` of its ObjectManager), properties changing
/// (`PropertiesChanged`), and the bus telling who owns a name (`NameOwnerChanged`, to follow bluetoothd
/// restarting). Pure: whether the sender is the right one (bluetoothd's unique name) is the caller's
/// rule, and so is what to do with a malformed signal (log it, or drop it).
enum BlueZSignal: Sendable, Equatable {
    /// `org.freedesktop.DBus.NameOwnerChanged` from the bus itself: `newOwner` is "" when the name has
    /// no owner any more.
    case nameOwnerChanged(name: String, newOwner: String)
    /// `InterfacesAdded`: the object and its interfaces with their properties.
    case interfacesAdded(path: String, interfaces: [String: [String: DBusValue]])
    /// `InterfacesRemoved`: the object and the names of the interfaces it lost.
    case interfacesRemoved(path: String, interfaces: [String])
    /// `PropertiesChanged` of `interface` on the object `path` (the signal's own path).
    case propertiesChanged(path: String, interface: String, changed: [String: DBusValue])

    /// One of these signals whose arguments are not what the interface says.
    struct Malformed: Error, Equatable {
        var member: String
        var signature: String
    }

    static let bus = "org.freedesktop.DBus"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"

    /// The signal `message` is, or nil when it is none of the four (another member or interface, or a
    /// `NameOwnerChanged` that does not come from the bus). Throws when it is one of them, malformed.
    static func decode(_ message: DBusMessage) throws(Malformed) -> BlueZSignal? {
        guard message.kind == .signal, let member = message.member else { return nil }
        let body = message.body
        let malformed = Malformed(member: member, signature: body.map(\.signature).joined())
        switch (message.interface, member) {
        case (bus, "NameOwnerChanged"):
            // Only the bus speaks for names: another process may send a look-alike.
            guard message.sender == bus else { return nil }
            guard body.count == 3, let name = body[0].string, body[1].string != nil, let new = body[2].string else { throw malformed }
            return .nameOwnerChanged(name: name, newOwner: new)
        case (objectManager, "InterfacesAdded"):
            guard body.count == 2, let path = body[0].string, let interfaces = body[1].stringKeyed else { throw malformed }
            return .interfacesAdded(path: path, interfaces: interfaces.compactMapValues(\.stringKeyed))
        case (objectManager, "InterfacesRemoved"):
            guard body.count == 2, let path = body[0].string, let names = body[1].array?.compactMap(\.string) else { throw malformed }
            return .interfacesRemoved(path: path, interfaces: names)
        case (properties, "PropertiesChanged"):
            guard body.count >= 2, let path = message.path, let interface = body[0].string,
                  let changed = body[1].stringKeyed else { throw malformed }
            return .propertiesChanged(path: path, interface: interface, changed: changed)
        default:
            return nil
        }
    }
}

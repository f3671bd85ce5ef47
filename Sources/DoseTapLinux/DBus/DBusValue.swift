import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
/// A D-Bus value with its type. Covers what BlueZ, the notification daemon and logind use: basic types,
/// arrays (`ay`, `as`, `ao`), dictionaries (`a{sv}`, `a{qv}`, `a{oa{sa{sv}}}`), variants, structs and file
/// descriptors (`h`, owned by a `DBusUnixFD`).
public indirect enum DBusValue: Sendable, Equatable, Hashable, CustomStringConvertible {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor (`h`: logind's `Inhibit` returns one). The box owns it and closes it when the last
    /// copy of the value is gone, unless someone `take()`s it first; sending it sends a duplicate.
    case unixFD(DBusUnixFD)
    /// An array of values of one type (`elementSignature`), possibly empty.
    case array(elementSignature: String, [DBusValue])
    /// A dictionary (`a{KV}`): ordered entries, keys of a basic type.
    case dictionary(keySignature: String, valueSignature: String, [DBusDictEntry])
    case variant(DBusValue)
    case structure([DBusValue])

    /// The D-Bus type signature of this value.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary(let k, let v, _): "a{" + k + v + "}"
        case .variant: "v"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    public var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v
        case .signature(let v): "g\"\(v)\""
        case .unixFD(let fd): "\(fd)"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries): "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .variant(let v): "<\(v)>"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        }
    }

    // MARK: Builders

    /// `a{sv}` from a Swift dictionary (keys sorted, so messages are reproducible).
    public static func vardict(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(keySignature: "s", valueSignature: "v",
                    values.sorted { $0.key < $1.key }.map { DBusDictEntry(key: .string($0.key), value: .variant($0.value)) })
    }

    public static func strings(_ values: [String]) -> DBusValue {
        .array(elementSignature: "s", values.map { .string($0) })
    }

    public static func bytes(_ values: [UInt8]) -> DBusValue {
        .array(elementSignature: "y", values.map { .byte($0) })
    }

    // MARK: Accessors (nil when the value is of another type)

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    public var bool: Bool? {
        if case .bool(let b) = unwrapped { return b }
        return nil
    }

    /// Any integer type, widened.
    public var int: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        default: nil
        }
    }

    public var double: Double? {
        if case .double(let d) = unwrapped { return d }
        return nil
    }

    /// `ay` as bytes.
    public var bytes: [UInt8]? {
        guard case .array("y", let items) = unwrapped else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .byte(let b) = item else { return nil }
            out.append(b)
        }
        return out
    }

    /// `h` as its owning box.
    public var unixFD: DBusUnixFD? {
        if case .unixFD(let fd) = unwrapped { return fd }
        return nil
    }

    public var array: [DBusValue]? {
        if case .array(_, let items) = unwrapped { return items }
        return nil
    }

    /// A dictionary's entries keyed by their string key (`a{sv}`, `a{sa{sv}}`, `a{oa{…}}`); values unwrapped
    /// from their variants.
    public var stringKeyed: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var out: [String: DBusValue] = [:]
        for e in entries {
            guard let k = e.key.string else { return nil }
            out[k] = e.value.unwrapped
        }
        return out
    }

    /// A dictionary with integer keys (`a{qv}`: ManufacturerData).
    public var intKeyed: [Int: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var out: [Int: DBusValue] = [:]
        for e in entries {
            guard let k = e.key.int else { return nil }
            out[k] = e.value.unwrapped
        }
        return out
    }
}

/// A file descriptor received from (or to be sent on) the bus, owned: closed exactly once — by `close()`,
/// or when the last reference goes away — unless `take()` hands it to a new owner first. Equal only to
/// itself (two boxes never own the same descriptor).
public final class DBusUnixFD: Sendable, Hashable, CustomStringConvertible {
    /// -1 once closed or taken.
    private let descriptor: Mutex<Int32>

    /// Takes ownership of `fd` (it will be closed by this box).
    public init(owning fd: Int32) {
        descriptor = Mutex(fd)
    }

    deinit { close() }

    /// Whether this box still owns an open descriptor.
    public var isOpen: Bool { descriptor.withLock { $0 >= 0 } }

    /// Runs `body` with the descriptor while it cannot be closed by another thread (nil when already closed
    /// or taken). Do not close it in `body`.
    public func withDescriptor<E: Error>(_ body: (Int32?) throws(E) -> Void) throws(E) {
        try descriptor.withLock { (fd: inout Int32) throws(E) in try body(fd >= 0 ? fd : nil) }
    }

    /// Hands the descriptor over: the caller owns it from now on (nil when it was closed or taken already).
    public func take() -> Int32? {
        descriptor.withLock { fd in
            defer { fd = -1 }
            return fd >= 0 ? fd : nil
        }
    }

    /// Closes the descriptor (once: later calls do nothing).
    public func close() {
        if let fd = take() { _ = Glibc.close(fd) }
    }

    public static func == (a: DBusUnixFD, b: DBusUnixFD) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { descriptor.withLock { $0 >= 0 ? "fd \($0)" : "fd (closed)" } }
}

public struct DBusDictEntry: Sendable, Equatable, Hashable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// A D-Bus error reply, or a failure to talk to the bus, with its name and message.
public struct DBusError: Error, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    static func local(_ message: String) -> DBusError {
        DBusError(name: "org.dosetap.Error.Local", message: message)
    }
}

/// A message as Swift sees it: header fields and the decoded body.
public struct DBusMessage: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal
    }

    public var kind: Kind
    public var sender: String?
    public var destination: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var body: [DBusValue]
    /// When our connection took the message off the bus (signals only; not part of equality).
    public var receivedAt: Date?

    public static func == (a: DBusMessage, b: DBusMessage) -> Bool {
        a.kind == b.kind && a.sender == b.sender && a.destination == b.destination && a.path == b.path && a.interface == b.interface
            && a.member == b.member && a.errorName == b.errorName && a.body == b.body
    }

    public init(kind: Kind, sender: String? = nil, destination: String? = nil, path: String? = nil,
                interface: String? = nil, member: String? = nil, errorName: String? = nil, body: [DBusValue] = []) {
        self.kind = kind
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.body = body
    }
}

/// Which signals a subscription wants. Empty fields match anything.
public struct DBusMatchRule: Sendable, Equatable, Hashable {
    public var sender: String?
    public var path: String?
    public var pathNamespace: String?
    public var interface: String?
    public var member: String?
    /// The first argument, as a string (e.g. the interface name of PropertiesChanged).
    public var arg0: String?

    public init(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil, interface: String? = nil,
                member: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule as the bus daemon reads it (for AddMatch).
    public var text: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            if let value { parts.append("\(key)='\(value.replacingOccurrences(of: "'", with: "\\'"))'") }
        }
        add("sender", sender)
        add("path", path)
        add("path_namespace", pathNamespace)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        return parts.joined(separator: ",")
    }

    /// Local check of a received signal (the bus filters too, but one connection has many rules).
    /// A well-known sender name is not compared: the bus rewrites it to the owner's unique name.
    public func matches(_ m: DBusMessage) -> Bool {
        guard m.kind == .signal else { return false }
        if let path, m.path != path { return false }
        if let ns = pathNamespace, let p = m.path, !(p == ns || p.hasPrefix(ns == "/" ? "/" : ns + "/")) { return false }
        if pathNamespace != nil, m.path == nil { return false }
        if let interface, m.interface != interface { return false }
        if let member, m.member != member { return false }
        if let arg0, m.body.first?.string != arg0 { return false }
        if let sender, sender.hasPrefix(":"), m.sender != sender { return false }
        return true
    }
}

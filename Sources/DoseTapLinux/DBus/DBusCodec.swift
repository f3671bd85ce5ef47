internal import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Reads and writes message bodies with libdbus's iterator API (the variadic append_args does not
/// import into Swift). Malformed input becomes a `DBusError`, never a crash.
enum DBusCodec {
    static let maximumDepth = 32

    // MARK: Decoding

    static func decodeBody(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            let type = dbus_message_iter_get_arg_type(&iter)
            if type == DOSETAP_DBUS_TYPE_INVALID { break }
            values.append(try decode(&iter, depth: 0))
        } while dbus_message_iter_next(&iter) != 0
        return values
    }

    static func signature(of iter: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    static func decode(_ iter: inout DBusMessageIter, depth: Int) throws(DBusError) -> DBusValue {
        guard depth < maximumDepth else { throw .local("message nested deeper than \(maximumDepth) levels") }
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case DOSETAP_DBUS_TYPE_BYTE:
            var v: UInt8 = 0; dbus_message_iter_get_basic(&iter, &v); return .byte(v)
        case DOSETAP_DBUS_TYPE_BOOLEAN:
            var v: dbus_bool_t = 0; dbus_message_iter_get_basic(&iter, &v); return .bool(v != 0)
        case DOSETAP_DBUS_TYPE_INT16:
            var v: Int16 = 0; dbus_message_iter_get_basic(&iter, &v); return .int16(v)
        case DOSETAP_DBUS_TYPE_UINT16:
            var v: UInt16 = 0; dbus_message_iter_get_basic(&iter, &v); return .uint16(v)
        case DOSETAP_DBUS_TYPE_INT32:
            var v: Int32 = 0; dbus_message_iter_get_basic(&iter, &v); return .int32(v)
        case DOSETAP_DBUS_TYPE_UINT32:
            var v: UInt32 = 0; dbus_message_iter_get_basic(&iter, &v); return .uint32(v)
        case DOSETAP_DBUS_TYPE_INT64:
            var v: Int64 = 0; dbus_message_iter_get_basic(&iter, &v); return .int64(v)
        case DOSETAP_DBUS_TYPE_UINT64:
            var v: UInt64 = 0; dbus_message_iter_get_basic(&iter, &v); return .uint64(v)
        case DOSETAP_DBUS_TYPE_DOUBLE:
            var v: Double = 0; dbus_message_iter_get_basic(&iter, &v); return .double(v)
        case DOSETAP_DBUS_TYPE_UNIX_FD:
            // libdbus hands out a duplicate (close-on-exec) that the caller owns: the box closes it unless
            // someone takes it. An index with no descriptor attached comes back as -1.
            var fd: Int32 = -1; dbus_message_iter_get_basic(&iter, &fd)
            guard fd >= 0 else { throw .local("file descriptor missing from the message") }
            return .unixFD(DBusUnixFD(owning: fd))
        case DOSETAP_DBUS_TYPE_STRING, DOSETAP_DBUS_TYPE_OBJECT_PATH, DOSETAP_DBUS_TYPE_SIGNATURE:
            var p: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iter, &p)
            let s = p.map { String(cString: $0) } ?? ""
            return type == DOSETAP_DBUS_TYPE_STRING ? .string(s) : type == DOSETAP_DBUS_TYPE_OBJECT_PATH ? .objectPath(s) : .signature(s)
        case DOSETAP_DBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try decode(&sub, depth: depth + 1))
        case DOSETAP_DBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != DOSETAP_DBUS_TYPE_INVALID {
                fields.append(try decode(&sub, depth: depth + 1))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case DOSETAP_DBUS_TYPE_ARRAY:
            let full = signature(of: &iter) // "a…"
            let element = String(full.dropFirst())
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            if dbus_message_iter_get_element_type(&iter) == DOSETAP_DBUS_TYPE_DICT_ENTRY {
                guard element.count >= 4, element.first == "{", element.last == "}" else {
                    throw .local("bad dictionary signature '\(full)'")
                }
                let inner = element.dropFirst().dropLast()
                let key = String(inner.prefix(1))
                let value = String(inner.dropFirst())
                var entries: [DBusDictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == DOSETAP_DBUS_TYPE_DICT_ENTRY {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &entry)
                    let k = try decode(&entry, depth: depth + 1)
                    guard dbus_message_iter_next(&entry) != 0 else { throw .local("dictionary entry without a value") }
                    let v = try decode(&entry, depth: depth + 1)
                    entries.append(DBusDictEntry(key: k, value: v))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(keySignature: key, valueSignature: value, entries)
            }
            var items: [DBusValue] = []
            if element == "y" {
                // Byte arrays (advertisement data) in one step.
                var count: Int32 = 0
                var pointer: UnsafeMutableRawPointer?
                dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
                if let pointer, count > 0 {
                    let buffer = UnsafeBufferPointer(start: pointer.assumingMemoryBound(to: UInt8.self), count: Int(count))
                    items = buffer.map { .byte($0) }
                }
                return .array(elementSignature: "y", items)
            }
            while dbus_message_iter_get_arg_type(&sub) != DOSETAP_DBUS_TYPE_INVALID {
                items.append(try decode(&sub, depth: depth + 1))
                dbus_message_iter_next(&sub)
            }
            return .array(elementSignature: element, items)
        default:
            throw .local("unsupported D-Bus type code \(type)")
        }
    }

    // MARK: Encoding

    static func encodeBody(_ values: [DBusValue], into message: OpaquePointer) throws(DBusError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for v in values { try encode(v, into: &iter, depth: 0) }
    }

    static func appendBasic<T>(_ iter: inout DBusMessageIter, _ type: Int32, _ value: T) throws(DBusError) {
        var v = value
        let ok = withUnsafePointer(to: &v) { dbus_message_iter_append_basic(&iter, type, $0) }
        guard ok != 0 else { throw .local("out of memory while encoding") }
    }

    static func appendString(_ iter: inout DBusMessageIter, _ type: Int32, _ s: String) throws(DBusError) {
        let ok = s.withCString { cs -> dbus_bool_t in
            var p: UnsafePointer<CChar>? = cs
            return withUnsafePointer(to: &p) { dbus_message_iter_append_basic(&iter, type, $0) }
        }
        guard ok != 0 else { throw .local("invalid string for D-Bus type \(type): \(s.prefix(64))") }
    }

    static func container(_ iter: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                          _ body: (inout DBusMessageIter) throws(DBusError) -> Void) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub)
        }
        guard opened != 0 else { throw .local("cannot open container \(signature ?? "")") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iter, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &sub) != 0 else { throw .local("cannot close container") }
    }

    static func encode(_ value: DBusValue, into iter: inout DBusMessageIter, depth: Int) throws(DBusError) {
        guard depth < maximumDepth else { throw .local("value nested deeper than \(maximumDepth) levels") }
        switch value {
        case .byte(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_BYTE, v)
        case .bool(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_INT16, v)
        case .uint16(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_UINT16, v)
        case .int32(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_INT32, v)
        case .uint32(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_UINT32, v)
        case .int64(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_INT64, v)
        case .uint64(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_UINT64, v)
        case .double(let v): try appendBasic(&iter, DOSETAP_DBUS_TYPE_DOUBLE, v)
        case .string(let s): try appendString(&iter, DOSETAP_DBUS_TYPE_STRING, s)
        case .objectPath(let s):
            guard isValidObjectPath(s) else { throw .local("invalid object path '\(s.prefix(64))'") }
            try appendString(&iter, DOSETAP_DBUS_TYPE_OBJECT_PATH, s)
        case .signature(let s): try appendString(&iter, DOSETAP_DBUS_TYPE_SIGNATURE, s)
        case .unixFD(let box):
            // libdbus duplicates the descriptor into the message: the box keeps its own.
            try box.withDescriptor { (fd: Int32?) throws(DBusError) in
                guard let fd else { throw .local("cannot send a file descriptor that was closed") }
                try appendBasic(&iter, DOSETAP_DBUS_TYPE_UNIX_FD, fd)
            }
        case .variant(let inner):
            try container(&iter, DOSETAP_DBUS_TYPE_VARIANT, inner.signature) { (sub: inout DBusMessageIter) throws(DBusError) in
                try encode(inner, into: &sub, depth: depth + 1)
            }
        case .structure(let fields):
            try container(&iter, DOSETAP_DBUS_TYPE_STRUCT, nil) { (sub: inout DBusMessageIter) throws(DBusError) in
                for f in fields { try encode(f, into: &sub, depth: depth + 1) }
            }
        case .array(let element, let items):
            for item in items where item.signature != element {
                throw .local("array of '\(element)' holds a '\(item.signature)'")
            }
            try container(&iter, DOSETAP_DBUS_TYPE_ARRAY, element) { (sub: inout DBusMessageIter) throws(DBusError) in
                for item in items { try encode(item, into: &sub, depth: depth + 1) }
            }
        case .dictionary(let k, let v, let entries):
            try container(&iter, DOSETAP_DBUS_TYPE_ARRAY, "{" + k + v + "}") { (sub: inout DBusMessageIter) throws(DBusError) in
                for e in entries {
                    guard e.key.signature == k, e.value.signature == v else {
                        throw .local("dictionary a{\(k)\(v)} holds {\(e.key.signature)\(e.value.signature)}")
                    }
                    try container(&sub, DOSETAP_DBUS_TYPE_DICT_ENTRY, nil) { (entry: inout DBusMessageIter) throws(DBusError) in
                        try encode(e.key, into: &entry, depth: depth + 1)
                        try encode(e.value, into: &entry, depth: depth + 1)
                    }
                }
            }
        }
    }

    static func isValidObjectPath(_ s: String) -> Bool {
        guard s.hasPrefix("/") else { return false }
        if s == "/" { return true }
        guard !s.hasSuffix("/") else { return false }
        return s.dropFirst().split(separator: "/", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        }
    }

    // MARK: Messages

    static func message(from raw: OpaquePointer) throws(DBusError) -> DBusMessage {
        func str(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        let kind: DBusMessage.Kind
        switch dbus_message_get_type(raw) {
        case DOSETAP_DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case DOSETAP_DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case DOSETAP_DBUS_MESSAGE_TYPE_ERROR: kind = .error
        case DOSETAP_DBUS_MESSAGE_TYPE_SIGNAL: kind = .signal
        default: throw .local("unknown message type")
        }
        return DBusMessage(kind: kind, sender: str(dbus_message_get_sender(raw)), destination: str(dbus_message_get_destination(raw)),
                           path: str(dbus_message_get_path(raw)), interface: str(dbus_message_get_interface(raw)),
                           member: str(dbus_message_get_member(raw)), errorName: str(dbus_message_get_error_name(raw)),
                           body: try decodeBody(raw))
    }
}

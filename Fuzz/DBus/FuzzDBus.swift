// libFuzzer target: the D-Bus value decoder (`DBusCodec`). The input is either
//   - one message in D-Bus wire format (its first byte is 'l' or 'B', the byte order), or
//   - a body signature and a body: one length byte, the signature, then the body bytes (little endian),
//     wrapped here in a fixed signal header, so that the fuzzer controls the types directly;
// libdbus checks the message (`dbus_message_demarshal`, as it checks every message off a socket) and
// `DBusCodec.message(from:)` decodes header and body into `DBusValue`s. A decoded body must encode
// again (`DBusCodec.encodeBody`) and decode to the same values. Seeds: Fuzz/corpus/dbus (messages
// BlueZ sends, marshalled by scripts/make-fuzz-seeds.py, in both forms).
import CDBus
import CDBusLazy
@testable import DoseTapLinux
import DoseTapFuzzSupport

/// libdbus through the product's wrappers (Sources/CDBusLazy), which return their failure values until it is
/// loaded: loaded before the first input, or the run stops (a fuzzer that decodes nothing finds nothing).
let libdbusProblem: String? = LazyLibrary.loadProblem { dosetap_dbus_load($0, $1) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBus(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if let libdbusProblem { fatalError("fuzz-dbus: \(libdbusProblem)") }
    guard let data, size > 0, size < Int(Int32.max) / 2 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let wire = input[0] == UInt8(ascii: "l") || input[0] == UInt8(ascii: "B")
        ? input : signal(signature: Array(input.dropFirst().prefix(Int(input[0]))), body: Array(input.dropFirst(1 + Int(input[0]))))
    guard let raw = wire.withUnsafeBytes({ demarshal($0.baseAddress!, $0.count) }) else { return 0 }
    defer { dbus_message_unref(raw) }
    let message: DBusMessage
    do {
        message = try DBusCodec.message(from: raw)
    } catch {
        _ = error.description
        return 0
    }
    _ = message.body.map(\.description)
    _ = message.body.map(\.signature)
    for value in message.body {
        _ = value.stringKeyed
        _ = value.intKeyed
        _ = value.bytes
    }

    // Round trip through the encoder.
    guard let copy = dbus_message_new_signal("/org/dosetap/Fuzz", "org.dosetap.Fuzz", "Body") else { return 0 }
    defer { dbus_message_unref(copy) }
    dbus_message_set_serial(copy, 1) // libdbus refuses a marshalled message with serial 0
    do {
        try DBusCodec.encodeBody(message.body, into: copy)
    } catch {
        fuzzCheck(false, "a decoded body does not encode again: \(error)")
    }
    var bytes: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(copy, &bytes, &length) != 0, let bytes else { return 0 }
    defer { dbus_free(bytes) }
    guard let again = demarshal(UnsafeRawPointer(bytes), Int(length)) else {
        fuzzCheck(false, "libdbus refuses the body the encoder wrote")
        return 0
    }
    defer { dbus_message_unref(again) }
    do {
        let body = try DBusCodec.decodeBody(again)
        // NaN is not equal to itself: compare only bodies without one.
        if !message.body.contains(where: hasNaN) {
            fuzzCheck(body == message.body, "round trip changed the body: \(message.body) → \(body)")
        }
    } catch {
        fuzzCheck(false, "the re-encoded body does not decode: \(error)")
    }
    return 0
}

/// A little-endian signal message (serial 1, path /f, interface f.F, member M) with this body.
private func signal(signature: [UInt8], body: [UInt8]) -> [UInt8] {
    func u32(_ n: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: n >> (8 * $0)) } }
    func pad(_ m: inout [UInt8], _ alignment: Int) { while m.count % alignment != 0 { m.append(0) } }
    var m: [UInt8] = [UInt8(ascii: "l"), 4, 0, 1] + u32(body.count) + u32(1) + u32(0)
    func field(_ code: UInt8, _ type: Character, _ value: [UInt8]) {
        pad(&m, 8)
        m += [code, 1, type.asciiValue!, 0]
        if type == "g" {
            m += [UInt8(value.count)] + value + [0]
        } else {
            pad(&m, 4)
            m += u32(value.count) + value + [0]
        }
    }
    field(1, "o", Array("/f".utf8))
    field(2, "s", Array("f.F".utf8))
    field(3, "s", Array("M".utf8))
    if !signature.isEmpty { field(8, "g", signature) }
    let fieldsLength = u32(m.count - 16)
    m.replaceSubrange(12..<16, with: fieldsLength)
    pad(&m, 8)
    return m + body
}

private func demarshal(_ bytes: UnsafeRawPointer, _ count: Int) -> OpaquePointer? {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    return dbus_message_demarshal(bytes.assumingMemoryBound(to: CChar.self), Int32(count), &error)
}

private func hasNaN(_ value: DBusValue) -> Bool {
    switch value {
    case .double(let d): d.isNaN
    case .variant(let inner): hasNaN(inner)
    case .structure(let fields), .array(_, let fields): fields.contains(where: hasNaN)
    case .dictionary(_, _, let entries): entries.contains { hasNaN($0.key) || hasNaN($0.value) }
    default: false
    }
}

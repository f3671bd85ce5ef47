// Shared by the libFuzzer targets under Fuzz/ (see scripts/fuzz.sh): a cursor over the fuzzer's bytes.

/// Takes values off the front of a fuzz input; past the end every read is zero / empty, so a target
/// never has to handle "not enough bytes" itself.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var offset = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    }

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { offset >= bytes.count }
    public var remaining: Int { max(0, bytes.count - offset) }

    public mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func take(_ count: Int) -> [UInt8] {
        let n = max(0, min(count, remaining))
        defer { offset += n }
        return Array(bytes[offset..<offset + n])
    }

    public mutating func rest() -> [UInt8] { take(remaining) }

    /// Little-endian unsigned integer of `count` bytes.
    public mutating func uint(_ count: Int) -> UInt64 {
        take(count).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}

/// A broken invariant: fatalError (its message goes to stderr), which libFuzzer reports as a crash and
/// saves the input for.
public func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        fatalError("fuzz invariant broken: \(message())", file: file, line: line)
    }
}

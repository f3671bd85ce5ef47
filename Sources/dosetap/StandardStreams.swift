import ArgumentParser
import DoseTapAgent
import DoseTapApp
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Standard output and error without Foundation's `FileHandle.write`, which traps (SIGILL and a
/// backtrace) when the descriptor cannot be written: `> /dev/full`, a closed stdout, a reader that
/// exits early. The first failure is remembered and later writes are dropped; `DoseTapCLI.main` turns
/// it into one line on standard error and the documented exit status (docs/configuration.md):
/// a command whose change was already saved still exits 0 (it was done), a command that only reads
/// exits 1.
enum StandardOutput {
    private struct State {
        var failure: Int32?
        var committed: String?
    }

    private static let state = Mutex(State())

    /// Writes all of `text` to standard output (retrying short writes and EINTR).
    static func write(_ text: String) {
        let failed = state.withLock { $0.failure != nil }
        guard !failed else { return }
        if let error = writeAll(STDOUT_FILENO, Array(text.utf8)) {
            state.withLock { if $0.failure == nil { $0.failure = error } }
        }
    }

    /// Standard error: best effort (nothing more can be said when it cannot be written).
    static func error(_ text: String) {
        _ = writeAll(STDERR_FILENO, Array(text.utf8))
    }

    /// Says that the command's change is saved (a dose recorded, settings written): an output failure
    /// after this point does not turn a done action into a reported failure.
    static func markCommitted(_ what: String) {
        state.withLock { $0.committed = what }
    }

    /// The errno of the first failed write to standard output, and what had been committed by then.
    static var outcome: (failure: Int32?, committed: String?) {
        state.withLock { ($0.failure, $0.committed) }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return EIO }
            offset += n
        }
        return nil
    }
}

/// Reads one answer from standard input without `readLine()`, which reads without bound
/// (`data clear < /dev/zero` grew to 3 GB in seconds).
enum StandardInput {
    enum Line: Equatable {
        case text(String)
        /// Standard input ended (closed, /dev/null) before a line was given.
        case endOfInput
        /// More than `maxBytes` without a newline, or bytes that are not UTF-8: not an answer.
        case invalid
    }

    /// One line of at most `maxBytes` bytes (without its newline), trimmed of spaces.
    static func line(maxBytes: Int = 256) -> Line {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? .endOfInput : decode(bytes) }
            if byte == UInt8(ascii: "\n") { return decode(bytes) }
            bytes.append(byte)
            if bytes.count > maxBytes {
                // Drain the rest of this line (bounded) so it is not read as the next answer.
                var drained = 0
                while drained < 1 << 16, read(STDIN_FILENO, &byte, 1) == 1, byte != UInt8(ascii: "\n") { drained += 1 }
                return .invalid
            }
        }
    }

    private static func decode(_ bytes: [UInt8]) -> Line {
        var trimmed = bytes[...]
        if trimmed.last == UInt8(ascii: "\r") { trimmed = trimmed.dropLast() }
        guard let text = String(validating: trimmed, as: UTF8.self) else { return .invalid }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return .invalid }
        return .text(text.trimmingCharacters(in: .whitespaces))
    }
}

/// The C library's sentence for an errno value ("No space left on device").
func strerrorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// A number as people type it: ASCII digits with an optional sign and decimal point ("55", "-3",
/// "7.5", ".5"). Swift's `Double(_:)` also takes "0x10", "1e3", "inf" and "nan", which no one means
/// as a battery level or a dose.
struct PlainNumber: ExpressibleByArgument, Equatable, CustomStringConvertible {
    var value: Double
    var description: String

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        self.value = value
        self.description = argument
    }

    static func parse(_ text: String) -> Double? {
        PlainNumberText.parse(text)
    }
}

import DoseTapAgent
import DoseTapApp
import DoseTapCore
import Foundation
import InMemoryLogging
import Logging
import Testing

/// Finding: device names and sysfs text reached the agent's log raw.
@Suite("The agent's log handler escapes control characters")
struct EscapingLogHandlerTests {
    @Test("message and metadata (nested too): controls and bidi characters escaped, long values cut, escaped text unchanged")
    func escapes() throws {
        let memory = InMemoryLogHandler()
        var logger = Logger(label: "t") { _ in EscapingLogHandler(memory, maxLength: 100) }
        logger.logLevel = .debug
        logger[metadataKey: "context"] = "ctx\u{1B}[0m"
        logger.notice("HID remote \"\u{1B}]0;pwned\u{07}\" connected\r\nFAKE", metadata: [
            "button": "bed\u{202E}side",
            "nested": .dictionary(["name": "a\u{0}b"]),
            "list": .array(["\u{9B}31m"]),
            "already": "\(DisplayText.escaped("x\u{1B}y"))",
            "long": .string(String(repeating: "n", count: 100_000)),
        ])
        let entry = try #require(memory.entries.first)
        #expect(entry.message.description == "HID remote \"\\x1b]0;pwned\\x07\" connected\\r\\nFAKE")
        #expect(entry.metadata["button"]?.description == "bed\\u{202e}side")
        #expect(entry.metadata["nested"] == .dictionary(["name": "a\\x00b"]))
        #expect(entry.metadata["list"] == .array(["\\x9b31m"]))
        #expect(entry.metadata["already"]?.description == "x\\x1by")
        #expect(entry.metadata["long"]?.description == String(repeating: "n", count: 100) + "…")
        #expect(logger.logLevel == .debug)
        #expect(logger[metadataKey: "context"]?.description == "ctx\u{1B}[0m") // stored as given, escaped when logged
    }
}

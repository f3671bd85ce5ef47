import Foundation

/// One entry of the agent's own log, as `dosetap logs export` reads it back.
public struct LogRecord: Sendable, Equatable {
    /// nil when the entry carries no time that can be read (such an entry is never exported: it cannot be
    /// shown to be within the export's 90 days).
    public var time: Date?
    /// trace, debug, info, notice, warning, error or critical.
    public var level: String
    public var message: String
    /// `key=value` pairs in the order written.
    public var metadata: [Field]

    public struct Field: Sendable, Equatable {
        public var key: String
        public var value: String
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(time: Date?, level: String, message: String, metadata: [Field] = []) {
        self.time = time
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where the agent's log is kept: the journal (the agent under systemd) or a file its standard error was
/// captured in. A failure is one line naming the source and the cause.
public protocol LogSource: Sendable {
    /// The entries from `since` on, oldest first. A source may return older ones; the export filters again.
    func records(since: Date) async throws -> [LogRecord]
}

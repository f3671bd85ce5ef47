import DoseTapApp
import DoseTapCore
import Logging

/// Wraps the agent's log handler so that no log line carries a raw control character: device names,
/// sysfs text, file names and error texts reach the log through many call sites, and any of them may
/// hold an escape sequence, a carriage return or a bidi override. The message and every metadata value
/// go through `DisplayText` (controls and format characters as visible escapes; each value cut at
/// `maxLength`). Backslashes are left as they are, so text a call site escaped already is unchanged.
public struct EscapingLogHandler: LogHandler {
    public var inner: any LogHandler
    public var maxLength: Int

    public init(_ inner: any LogHandler, maxLength: Int = 1000) {
        self.inner = inner
        self.maxLength = maxLength
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var safe = event
        safe.message = "\(clean(event.message.description))"
        safe.metadata = event.metadata.map(clean)
        inner.log(event: safe)
    }

    private func clean(_ text: String) -> String {
        DisplayText.escaped(text, maxLength: maxLength, doublingBackslashes: false)
    }

    private func clean(_ metadata: Logger.Metadata) -> Logger.Metadata {
        var out: Logger.Metadata = [:]
        for (key, value) in metadata { out[clean(key)] = clean(value) }
        return out
    }

    private func clean(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let s): .string(clean(s))
        case .stringConvertible(let c): .string(clean(c.description))
        case .dictionary(let d): .dictionary(clean(d))
        case .array(let a): .array(a.map(clean))
        }
    }
}

import DoseTapCore
import DoseTapStore
import Foundation

/// `dosetap logs export`: the agent's own log as anonymised CSV (`time,level,message,metadata`) for a
/// doctor or a helper (docs/exports.md). Button addresses and names become stable short hashes keyed by
/// the per-install secret, key material and dose amounts are removed (`LogAnonymizer`), and nothing older
/// than 90 days is ever exported.
public struct LogExport: Sendable {
    /// The oldest entry ever exported: 90 days back.
    public static let maximumAge: TimeInterval = 90 * 86_400
    public static let defaultSince = "90d"

    private let store: DataStore
    private let identity: InstallIdentity
    private let clock: any WallClock

    public init(store: DataStore, identity: InstallIdentity, clock: any WallClock) {
        self.store = store
        self.identity = identity
        self.clock = clock
    }

    /// `--since`: a whole number of days (`7d`, 1 to 90) or hours (`12h`, 1 to 2160) back from now. More
    /// than 90 days is refused, not capped: the person asked for something the export never gives.
    public static func age(parsing text: String) throws(UseCaseError) -> TimeInterval {
        let usage = "--since takes days or hours back, from 1h or 1d to 90d (such as 7d, 12h or 90d), not '\(DisplayText.escaped(text, maxLength: 40))'"
        guard let unit = text.last, unit == "d" || unit == "h" else { throw UseCaseError(usage) }
        let digits = text.dropLast()
        guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits), n > 0 else {
            throw UseCaseError(usage)
        }
        let age = TimeInterval(n) * (unit == "d" ? 86_400 : 3_600)
        guard age <= maximumAge else {
            throw UseCaseError("--since \(text) reaches back more than 90 days: DoseTap never exports log entries older than 90 days (use at most 90d)")
        }
        return age
    }

    public struct Export: Sendable, Equatable {
        public var csv: String
        public var records: [LogRecord]
        /// Entries left out for having no time that can be read.
        public var untimed: Int
    }

    /// The entries of `source` from `age` seconds ago (at most 90 days) to now, anonymised, oldest first.
    public func export(from source: any LogSource, age: TimeInterval) async throws -> Export {
        let now = clock.now()
        let since = now.addingTimeInterval(-min(age, Self.maximumAge))
        let names: [String]
        if let database = try store.openForReading() {
            names = try ButtonRepository(database: database).all().map(\.name)
        } else {
            names = []
        }
        let identity = self.identity
        let anonymizer = LogAnonymizer(buttonNames: names) { domain, value in identity.shortHash(domain: domain, value: value) }
        let records = try await source.records(since: since)
        var kept: [(Date, Int, LogRecord)] = []
        var untimed = 0
        for (index, record) in records.enumerated() {
            guard let time = record.time else { untimed += 1; continue }
            guard time >= since else { continue }
            kept.append((time, index, anonymizer.clean(record)))
        }
        kept.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        let cleaned = kept.map(\.2)
        return Export(csv: LogCSV.document(cleaned), records: cleaned, untimed: untimed)
    }
}

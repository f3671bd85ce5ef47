import Foundation

/// Why the data could not be written (#51): the store's errors say it where SQLite did.
public enum StoreProblem: String, Sendable, Equatable, CaseIterable, Codable {
    /// The disk (or the data folder's file system) is full.
    case full
    /// Another process held the database's write lock longer than the agent waited.
    case locked
    /// The file or its folder cannot be written (permissions, a read-only mount).
    case readOnly
    /// The disk reported an input/output error.
    case ioError
    /// The file is damaged or is not a DoseTap database.
    case damaged
    /// Anything else the store said.
    case other

    /// The cause as a person reads it, inside "DoseTap cannot write its data (…)".
    public var reason: String {
        switch self {
        case .full: "the disk is full"
        case .locked: "another program keeps the database locked"
        case .readOnly: "the data folder is read-only"
        case .ioError: "the disk reports errors"
        case .damaged: "the database file is damaged"
        case .other: "the database refused the write"
        }
    }

    /// What the person can do about it; `folder` is the data folder.
    public func fix(folder: String) -> String {
        switch self {
        case .full: "free space on \(folder)"
        case .locked: "close the program holding \(folder)/dosetap.sqlite (sqlite3, a backup tool)"
        case .readOnly: "make \(folder) writable again"
        case .ioError: "check the disk (dmesg) and back up \(folder)"
        case .damaged: "run `dosetap data check`, and restore \(folder)/dosetap.sqlite from a backup"
        case .other: "see `journalctl --user -u dosetap`"
        }
    }

    /// The one sentence every face shows while the store cannot be written.
    public func sentence(folder: String) -> String {
        "DoseTap cannot write its data (\(reason)): alarms still ring, doses cannot be recorded — \(fix(folder: folder))."
    }
}

/// A store that cannot be written, as a state (#51) rather than a loop: the agent's services report each write's
/// outcome here; it says when to try again (backing off to a ceiling), and what to tell — one line when the trouble
/// starts, changes cause or ends, a reminder at most every `reminderInterval` while it lasts, never a line per
/// failure. Pure: the caller passes the time.
public struct StoreTrouble: Sendable, Equatable {
    /// The waits between attempts at a write that keeps failing: 5 s doubling to 30 s, then every 30 s. The ceiling is
    /// what the person waits, after the lock is released or space freed, for what was kept in memory to be written
    /// (with 5 minutes, a lock released under load was not seen for minutes); an attempt costs one failed write or one
    /// `BEGIN IMMEDIATE`, and the log stays quiet (the reminder's own interval), so 30 s keeps CPU and log flat.
    public static let retrySteps: [TimeInterval] = [5, 10, 20, 30]
    /// While the trouble lasts, the log is reminded this often at most.
    public static let reminderInterval: TimeInterval = 600

    /// A trouble in progress.
    public struct Episode: Sendable, Equatable {
        public var problem: StoreProblem
        /// When the first write of this trouble failed.
        public var since: Date
        /// Writes that failed since it began (all causes).
        public var failures: Int
        /// When the log last said anything of it.
        public var toldAt: Date
        /// The store's own words for the last failure.
        public var detail: String
    }

    /// What to say now, if anything.
    public enum Report: Sendable, Equatable {
        /// It began: tell the person (once) and log it.
        case began(StoreProblem)
        /// Same trouble, another cause (a lock released on a full disk): tell again.
        case changed(from: StoreProblem, to: StoreProblem)
        /// Still failing: a line in the log, nothing more.
        case reminder(StoreProblem, since: Date, failures: Int)
        /// A write succeeded again after `failures` failed ones since `since`.
        case recovered(StoreProblem, since: Date, failures: Int)
    }

    public private(set) var episode: Episode?

    public init() {}

    /// Whether the store is in trouble now.
    public var isFailing: Bool { episode != nil }

    /// The wait before attempt `failures + 1` after `failures` consecutive failures (none after 0).
    public static func retryDelay(afterFailures failures: Int) -> TimeInterval {
        guard failures > 0 else { return 0 }
        return retrySteps[min(failures, retrySteps.count) - 1]
    }

    /// A write failed at `now`: what to say (nil when quiet), and when a write that waits should be tried again.
    public mutating func failed(_ problem: StoreProblem, detail: String, at now: Date) -> (report: Report?, retryAt: Date) {
        guard var current = episode else {
            episode = Episode(problem: problem, since: now, failures: 1, toldAt: now, detail: detail)
            return (.began(problem), now.addingTimeInterval(Self.retryDelay(afterFailures: 1)))
        }
        current.failures += 1
        current.detail = detail
        var report: Report?
        if current.problem != problem {
            report = .changed(from: current.problem, to: problem)
            current.problem = problem
            current.toldAt = now
        } else if now.timeIntervalSince(current.toldAt) >= Self.reminderInterval || now < current.toldAt {
            report = .reminder(problem, since: current.since, failures: current.failures)
            current.toldAt = now
        }
        episode = current
        return (report, now.addingTimeInterval(Self.retryDelay(afterFailures: current.failures)))
    }

    /// A write succeeded: the trouble, if any, is over.
    public mutating func succeeded() -> Report? {
        guard let current = episode else { return nil }
        episode = nil
        return .recovered(current.problem, since: current.since, failures: current.failures)
    }
}

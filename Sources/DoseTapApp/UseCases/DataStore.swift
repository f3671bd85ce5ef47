import DoseTapStore
import Foundation

/// A use case's refusal or failure as every face shows it: one line, ready to print.
public struct UseCaseError: Error, Equatable, CustomStringConvertible {
    /// What kind of "no" it is, so a face can say it its own way without guessing from the words (the
    /// dashboard maps it to an HTTP status in one place, `WebDashboard.status(for:)`).
    public enum Kind: Sendable, Equatable {
        /// The input is not valid (a bad time, an unknown sound, a threshold out of range).
        case invalid
        /// What it names does not exist (no alarm 7, no button with that address).
        case notFound
        /// Valid, but refused in the present state (no alarm is ringing to stop).
        case refused
        /// Something the use case needs cannot be reached now (the database cannot be written, BlueZ is not running).
        case unavailable
    }

    public var description: String
    public var kind: Kind
    public init(_ description: String, kind: Kind = .invalid) {
        self.description = description
        self.kind = kind
    }

    public static func notFound(_ description: String) -> UseCaseError { UseCaseError(description, kind: .notFound) }
    public static func refused(_ description: String) -> UseCaseError { UseCaseError(description, kind: .refused) }
    public static func unavailable(_ description: String) -> UseCaseError { UseCaseError(description, kind: .unavailable) }
}

/// Where the use cases find the database. The command line names a folder and opens the file only when a
/// command needs it (a read never creates it); the agent and the tests hand over a database already open.
public struct DataStore: Sendable {
    private enum Place: Sendable {
        case directory(URL)
        case database(DoseTapDatabase)
    }

    private let place: Place

    /// The database in `directory`, opened when first needed.
    public init(directory: URL) { place = .directory(directory) }

    /// A database already open.
    public init(database: DoseTapDatabase) { place = .database(database) }

    /// The data folder, without opening anything.
    public var folder: String {
        switch place {
        case .directory(let url): url.path
        case .database(let database): database.folder
        }
    }

    /// The database, created (and migrated) on first use. Errors are the store's own one-line messages.
    public func open() throws -> DoseTapDatabase {
        switch place {
        case .directory(let url): try DoseTapDatabase(directory: url)
        case .database(let database): database
        }
    }

    /// The database to read, or nil when there is none yet: a read never creates the file.
    public func openForReading() throws -> DoseTapDatabase? {
        switch place {
        case .directory(let url): try DoseTapDatabase.openForReading(directory: url)
        case .database(let database): database
        }
    }

    /// The database if its file exists (opened for writing), else nil.
    public func openIfPresent() throws -> DoseTapDatabase? {
        switch place {
        case .directory(let url): try DoseTapDatabase.openIfPresent(directory: url)
        case .database(let database): database
        }
    }
}

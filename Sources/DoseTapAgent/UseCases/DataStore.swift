import DoseTapStore
import Foundation

/// A use case's refusal or failure as every face shows it: one line, ready to print.
public struct UseCaseError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
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

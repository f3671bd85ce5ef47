import DoseTapCore

/// A one-line, human-readable storage failure.
public struct StoreError: Error, CustomStringConvertible {
    public var description: String
    /// Why, where SQLite said (the agent tells a person once per cause, #51).
    public var cause: StoreProblem?
    public init(_ description: String, cause: StoreProblem? = nil) {
        self.description = description
        self.cause = cause
    }
}

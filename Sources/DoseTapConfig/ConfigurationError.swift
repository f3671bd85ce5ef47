import Foundation

/// A configuration problem, in one line: which file, which key, what is wrong.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    /// Control characters (a line break in a quoted value or key) are escaped: the error is one line.
    public init(_ description: String) { self.description = TOMLSubset.oneLine(description) }
}

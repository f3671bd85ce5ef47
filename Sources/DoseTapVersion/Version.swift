/// What this binary is: `dosetap --version`, the agent's first log line, a bug report.
public enum DoseTapVersion {
    /// The release version (the `VERSION` file), e.g. `0.9.0`.
    public static let version = BuildStamp.version
    /// The git commit it was built from (12 hex digits, `-dirty` with uncommitted changes; `unknown`
    /// outside a git checkout).
    public static let commit = BuildStamp.commit
    /// The UTC day of the first build of that commit (`SOURCE_DATE_EPOCH` for reproducible packages).
    public static let buildDate = BuildStamp.date

    /// `0.9.0 (commit 0123456789ab, built 2026-11-24)`.
    public static var description: String { "\(version) (commit \(commit), built \(buildDate))" }
}

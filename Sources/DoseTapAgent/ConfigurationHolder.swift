import Synchronization

/// Holds the configuration the agent runs with; replaced on SIGHUP.
public final class ConfigurationHolder: Sendable {
    private let value: Mutex<AgentConfiguration>
    public init(_ initial: AgentConfiguration) { value = Mutex(initial) }
    public var current: AgentConfiguration { value.withLock { $0 } }
    public func replace(_ new: AgentConfiguration) { value.withLock { $0 = new } }
}

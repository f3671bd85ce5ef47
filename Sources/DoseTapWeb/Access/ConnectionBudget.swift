import Logging
import NIOCore
import Synchronization

/// How many connections the dashboard holds open, and for how long a connection may stay silent (issue #25):
/// about 1,100 half-open connections once filled the agent's 1,024 descriptors and its alarm "rang" with no
/// sound. Every connection beyond a cap is accepted and closed at once (the client sees it closed, never a
/// hang); a connection that has not sent a whole request head within `headerTimeout` — or sits idle that
/// long between requests — is closed. The caps follow the descriptor limit, keeping `reserve` descriptors
/// free for the alarm's player, the database, D-Bus and the rest of the agent.
public struct WebLimits: Sendable, Equatable {
    /// Connections held open at once over TCP, every TCP listener together.
    public var tcpConnections: Int
    /// Of those, from one address (every local user shares 127.0.0.1).
    public var tcpPerClient: Int
    /// Connections held open at once on the Unix socket (its own budget: a TCP flood never reaches it).
    public var unixConnections: Int
    /// Seconds a connection may take to send a request head, or stay idle between requests. Not a limit on
    /// a response being written (a live stream stays open).
    public var headerTimeout: Int64

    /// Descriptors kept out of every listener's reach.
    public static let reserve = 256
    public static let defaultHeaderTimeout: Int64 = 10

    public init(tcpConnections: Int, tcpPerClient: Int, unixConnections: Int, headerTimeout: Int64 = defaultHeaderTimeout) {
        self.tcpConnections = max(1, tcpConnections)
        self.tcpPerClient = max(1, min(tcpPerClient, self.tcpConnections))
        self.unixConnections = max(1, unixConnections)
        self.headerTimeout = max(1, headerTimeout)
    }

    /// The caps for a soft descriptor limit: half of what is left above the reserve for TCP (at most 512,
    /// at least 8), an eighth for the Unix socket (4…64), 64 per TCP client.
    public static func forDescriptors(_ soft: Int) -> WebLimits {
        let spare = max(0, soft - reserve)
        let tcp = min(512, max(8, spare / 2))
        return WebLimits(tcpConnections: tcp, tcpPerClient: min(64, tcp), unixConnections: min(64, max(4, spare / 8)))
    }
}

/// Open connections counted per client against two caps, overall and per client. Shared by every listener
/// of one kind; a ticket is given back when its connection closes.
public final class ConnectionBudget: Sendable {
    private struct State {
        var open = 0
        var byClient: [String: Int] = [:]
        var refusing = false
    }

    public let limit: Int
    public let perClient: Int
    private let state = Mutex(State())

    public init(limit: Int, perClient: Int) {
        self.limit = limit
        self.perClient = perClient
    }

    public enum Decision: Sendable, Equatable {
        case admitted
        /// Refused; `first` for the refusal that starts a run of them (logged once).
        case refused(first: Bool)
    }

    public func admit(_ client: String) -> Decision {
        state.withLock { state in
            let mine = state.byClient[client, default: 0]
            guard state.open < limit, mine < perClient else {
                defer { state.refusing = true }
                return .refused(first: !state.refusing)
            }
            state.open += 1
            state.byClient[client] = mine + 1
            state.refusing = false
            return .admitted
        }
    }

    public func release(_ client: String) {
        state.withLock { state in
            state.open = max(0, state.open - 1)
            let mine = state.byClient[client, default: 0] - 1
            state.byClient[client] = mine > 0 ? mine : nil
        }
    }

    public var openConnections: Int { state.withLock { $0.open } }
}

/// Refuses a connection over its budget before any HTTP handler is set up, and gives the ticket back when
/// an admitted one closes.
struct ConnectionRefused: Error {}

extension ConnectionBudget {
    /// Admits `channel` or closes it; logs the first refusal of a run.
    func guardChannel(_ channel: any Channel, logger: Logger, listener: String) -> Bool {
        let client: String
        switch channel.remoteAddress {
        case .v4, .v6: client = channel.remoteAddress?.ipAddress ?? "?"
        default: client = "unix"
        }
        switch admit(client) {
        case .admitted:
            channel.closeFuture.whenComplete { _ in self.release(client) }
            return true
        case .refused(let first):
            if first {
                logger.warning("web dashboard: too many connections; closing new ones until some end",
                               metadata: ["listener": "\(listener)", "client": "\(client)", "open": "\(openConnections)",
                                          "cap": "\(limit)", "perClient": "\(perClient)"])
            }
            channel.close(promise: nil)
            return false
        }
    }
}

import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Who is calling: a process on the Unix socket (its uid from the kernel, `SO_PEERCRED`) or a TCP client
/// (its address). Only a Unix-socket peer of the agent's own uid skips pairing: a loopback TCP port is
/// open to every local user, and TCP cannot tell who they are.
public enum WebPeer: Sendable, Equatable {
    case unix(uid: UInt32?)
    case tcp(address: String)

    /// The key of the rate limit: one per uid on the socket, one per address over TCP.
    public var clientKey: String {
        switch self {
        case .unix(let uid): "unix:\(uid.map(String.init) ?? "unknown")"
        case .tcp(let address): address
        }
    }

    /// True for a Unix-socket peer whose uid is `ownUID`.
    public func isTrustedLocal(ownUID: UInt32) -> Bool {
        if case .unix(let uid?) = self { return uid == ownUID }
        return false
    }

    /// The peer of a connection: the Unix socket's `SO_PEERCRED` uid, or the TCP address.
    public static func of(_ channel: any Channel) async -> WebPeer {
        if case .unixDomainSocket = channel.localAddress {
            guard let provider = channel as? any SocketOptionProvider else { return .unix(uid: nil) }
            let credentials = try? await peerCredentials(provider)
            return .unix(uid: credentials?.uid)
        }
        return .tcp(address: channel.remoteAddress?.ipAddress ?? "unknown")
    }

    /// `struct ucred` of Linux: pid, uid, gid.
    struct Credentials: Sendable {
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
    }

    static let peerCredentialOption: Int32 = 17 // SO_PEERCRED on Linux

    private static func peerCredentials(_ provider: any SocketOptionProvider) async throws -> Credentials {
        try await provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET),
                                                 name: SocketOptionName(peerCredentialOption)).get()
    }
}

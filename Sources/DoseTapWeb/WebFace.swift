import DoseTapApp
import DoseTapConfig
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The dashboard's listeners: one HTTP server per listener — the Unix socket `$XDG_RUNTIME_DIR/dosetap/web.sock`
/// and every `[web] listen` address (127.0.0.1:8765 by default) — each a service of the agent's ServiceGroup
/// (the command line plugs the dashboard into the agent: `DashboardFace`).
public enum WebFace {
    public struct StartError: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    /// `$XDG_RUNTIME_DIR/dosetap/web.sock`, or nil without a runtime directory.
    public static func socketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        return runtime + "/dosetap/web.sock"
    }

    public static func services(dashboard: WebDashboard, listen: [WebListenAddress], socketPath: String?, logger: Logger,
                                limits: WebLimits = .forDescriptors(DescriptorLimit.current()?.soft ?? 1024),
                                onListening: @escaping @Sendable (String) -> Void = { _ in }) throws -> [any Service] {
        var services: [any Service] = []
        // One budget for every TCP listener, another for the socket: a TCP flood never closes the socket's door.
        let tcp = ConnectionBudget(limit: limits.tcpConnections, perClient: limits.tcpPerClient)
        let unix = ConnectionBudget(limit: limits.unixConnections, perClient: limits.unixConnections)
        let timeout = TimeAmount.seconds(limits.headerTimeout)
        if let socketPath {
            do {
                try prepareSocket(socketPath)
                services.append(listener(dashboard: dashboard, address: .unixDomainSocket(path: socketPath), name: socketPath,
                                         logger: logger, budget: unix, headerTimeout: timeout, onListening: { _ in
                                             chmod(socketPath, 0o600)
                                             onListening(socketPath)
                                         }))
            } catch {
                logger.error("web dashboard: no Unix socket: \(error)")
            }
        } else {
            logger.notice("web dashboard: no XDG_RUNTIME_DIR, so no Unix socket (TCP only, pairing needed)")
        }
        for address in listen {
            if address.isWildcard {
                logger.notice("web dashboard: listening on every interface (\(address)): anyone on the network can reach the pairing page; only paired browsers get in")
            }
            services.append(listener(dashboard: dashboard, address: .hostname(address.host, port: address.port),
                                     name: address.description, logger: logger, budget: tcp, headerTimeout: timeout,
                                     onListening: onListening))
        }
        return services
    }

    static func listener(dashboard: WebDashboard, address: BindAddress, name: String, logger: Logger, budget: ConnectionBudget,
                         headerTimeout: TimeAmount, onListening: @escaping @Sendable (String) -> Void) -> any Service {
        Listener(dashboard: dashboard, address: address, name: name, logger: logger, budget: budget, headerTimeout: headerTimeout,
                 onListening: onListening)
    }

    /// HummingbirdCore's HTTP/1.1 channel behind the connection budget: a connection over it is closed before
    /// any HTTP handler is set up. Its idle timeout is the header timeout too: Hummingbird restarts it only at a
    /// whole request part, so a client trickling a request head byte by byte is closed as well.
    struct GuardedHTTP1Channel: ServerChildChannel {
        typealias Value = HTTP1Channel.Value
        let inner: HTTP1Channel
        let budget: ConnectionBudget
        let name: String

        func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
            guard budget.guardChannel(channel, logger: logger, listener: name) else {
                return channel.eventLoop.makeFailedFuture(ConnectionRefused())
            }
            return inner.setup(channel: channel, logger: logger)
        }

        func handle(value: Value, logger: Logger) async {
            await inner.handle(value: value, logger: logger)
        }
    }

    /// One listener: HummingbirdCore's HTTP/1.1 server with the dashboard's responder. Not Hummingbird's
    /// `Application`: that one runs a date cache that wakes the process every second, forever — an idle
    /// agent guarding a battery must not (the Date header is made per response instead). A listener that
    /// cannot bind (the port is taken) is logged, and the agent goes on without it.
    struct Listener: Service {
        let dashboard: WebDashboard
        let address: BindAddress
        let name: String
        let logger: Logger
        let budget: ConnectionBudget
        let headerTimeout: TimeAmount
        let onListening: @Sendable (String) -> Void

        func run() async throws {
            var quiet = logger
            quiet[metadataKey: "listener"] = "\(name)"
            let requestLogger = quiet
            let responder = dashboard.responder
            let logger = self.logger
            let name = self.name
            let onListening = self.onListening
            let headerTimeout = self.headerTimeout
            do {
                let http = HTTP1Channel(
                    responder: { request, writer, channel in
                        let context = WebContext(source: ApplicationRequestContextSource(channel: channel, logger: requestLogger))
                        var response: Response
                        do {
                            response = try await WebDashboard.$bodyDeadline.withValue(BodyDeadline(channel: channel, timeout: headerTimeout)) {
                                try await responder.respond(to: request, context: context)
                            }
                        } catch {
                            response = WebDashboard.error(.internalServerError, "the request failed", api: true)
                            WebDashboard.securityHeaders(&response.headers)
                        }
                        response.headers[.date] = HTTPDate.now()
                        try await writer.write(response: response.head, body: response.body)
                    },
                    configuration: HTTP1Channel.Configuration(idleTimeout: headerTimeout))
                let server = GuardedHTTP1Channel(inner: http, budget: budget, name: name).server(
                    configuration: ServerConfiguration(address: address),
                    onServerRunning: { channel in
                        logger.info("web dashboard listening", metadata: ["address": "\(name)"])
                        if let local = channel.localAddress, let port = local.port {
                            onListening("\(local.ipAddress ?? ""):\(port)")
                        } else {
                            onListening(name)
                        }
                    },
                    eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                    logger: quiet)
                try await server.run()
            } catch {
                guard !Task.isCancelled else { return }
                logger.error("web dashboard: cannot listen on \(name): \(error)")
                try? await gracefulShutdown()
            }
        }
    }

    /// The socket's folder (0700, ours), and no stale socket: one left by an agent that died is removed;
    /// one that answers belongs to a running agent.
    static func prepareSocket(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw StartError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else {
            throw StartError(description: "\(directory) is not a folder of ours")
        }
        chmod(directory, 0o700)
        guard path.utf8.count < 108 else { throw StartError(description: "\(path) is too long for a Unix socket") }
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw StartError(description: "\(path) exists and is not a socket") }
        if socketAnswers(path) { throw StartError(description: "\(path) is in use (another agent is running)") }
        unlink(path)
    }

    static func socketAnswers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }
}

/// The HTTP Date header (RFC 9110 IMF-fixdate) of now.
enum HTTPDate {
    static func now() -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[Int(parts.tm_wday)], parts.tm_mday, months[Int(parts.tm_mon)],
                      Int(parts.tm_year) + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}

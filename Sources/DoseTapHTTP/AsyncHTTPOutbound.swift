import AsyncHTTPClient
import DoseTapCore
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// The outbound HTTP port on async-http-client: one POST, its status and `Retry-After`. Redirects are not
/// followed (a push or call endpoint that redirects is misconfigured, and a redirect could carry the
/// credentials elsewhere). The policy's 10 s timeout is enforced by the caller on the scheduling port
/// (cancelling this task); the client's own deadline is a backstop a little later.
/// The client (and NIO's event loop threads) is made on the first request: an agent whose alarms have no
/// push or phone backups never starts them.
public final class AsyncHTTPOutbound: OutboundHTTP {
    private let client = Mutex<HTTPClient?>(nil)

    public init() {}

    deinit {
        if let client = client.withLock({ $0.take() }) { try? client.syncShutdown() }
    }

    private var shared: HTTPClient {
        client.withLock { client in
            if let client { return client }
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.timeout = .init(connect: .seconds(10), read: .seconds(12))
            let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            client = made
            return made
        }
    }

    public func post(_ request: OutboundRequest) async -> OutboundRetryPolicy.Attempt {
        var http = HTTPClientRequest(url: request.url)
        http.method = .POST
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) { http.headers.add(name: name, value: value) }
        if let auth = request.basicAuth {
            let token = Data("\(auth.user):\(auth.password)".utf8).base64EncodedString()
            http.headers.replaceOrAdd(name: "Authorization", value: "Basic \(token)")
        }
        http.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            let response = try await shared.execute(http, timeout: .seconds(Int64(OutboundRetryPolicy.timeout) + 2))
            // The body is not needed; it is read (at most 64 KiB) so the connection can be reused.
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return .status(Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"))
        } catch {
            return .noAnswer
        }
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore

/// Asks the running agent to Stop or Snooze the alarm ringing on this machine (`POST /api/ringing/stop|snooze` on its
/// Unix socket, #51): what `dosetap alarm stop|snooze` does when it cannot write the answer itself (another program
/// holds the database's lock, the disk is full) or finds no ring in the store (the agent could not record it). The
/// agent ends the sound at once and saves the answer when it can. Only the agent's own user reaches the socket.
public enum AgentRingAnswer {
    public enum Outcome: Sendable, Equatable {
        /// The agent answered the ring.
        case answered
        /// The agent runs and says no alarm rings.
        case noneRinging
        /// No agent to ask (no socket, or it did not answer), or it refused: why.
        case unreachable(String)
    }

    /// - Parameter answer: `stop` or `snooze`.
    public static func ask(_ answer: String, socketPath: String) async -> Outcome {
        guard FileManager.default.fileExists(atPath: socketPath) else { return .unreachable("no agent runs (no socket at \(socketPath))") }
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: "/api/ringing/\(answer)") else {
            return .unreachable("the agent's socket path \(socketPath) is not usable")
        }
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(2), read: .seconds(5))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let outcome = await ask(url: url, socketPath: socketPath, client: client)
        try? await client.shutdown()
        return outcome
    }

    private static func ask(url: URL, socketPath: String, client: HTTPClient) async -> Outcome {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        do {
            let response = try await client.execute(request, timeout: .seconds(6))
            _ = try? await response.body.collect(upTo: 16 * 1024)
            switch response.status.code {
            case 200: return .answered
            case 409: return .noneRinging
            default: return .unreachable("the agent refused (HTTP \(response.status.code))")
            }
        } catch {
            return .unreachable("the agent did not answer on \(socketPath) (\(error))")
        }
    }
}

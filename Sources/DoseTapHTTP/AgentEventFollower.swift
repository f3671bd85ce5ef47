import AsyncHTTPClient
import Foundation
import NIOCore

/// Follows the running agent's event stream (`GET /api/events` on its Unix socket, server-sent events):
/// the names of what happens, as they happen, for a face that re-reads its view on each one
/// (`dosetap status --follow`). Only the agent's own user reaches the socket (its directory is 0700 and the
/// agent checks `SO_PEERCRED`); nothing is polled.
public enum AgentEventFollower {
    public struct Unreachable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The event names, starting with `ready` once connected. The stream ends with an error when the agent
    /// cannot be reached or goes away (it stopped or restarted), and finishes when the consumer stops.
    public static func events(socketPath: String) -> AsyncThrowingStream<String, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
            let task = Task {
                var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
                // No read timeout: the stream is quiet for as long as nothing happens.
                configuration.timeout = .init(connect: .seconds(5))
                let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                do {
                    guard FileManager.default.fileExists(atPath: socketPath) else {
                        throw Unreachable(description: "no agent answers on \(socketPath) (no socket there): is it running? (systemctl --user start dosetap)")
                    }
                    guard let url = URL(httpURLWithSocketPath: socketPath, uri: "/api/events") else {
                        throw Unreachable(description: "the agent's socket path \(socketPath) is not usable")
                    }
                    var request = HTTPClientRequest(url: url.absoluteString)
                    request.headers.add(name: "Accept", value: "text/event-stream")
                    let response: HTTPClientResponse
                    do {
                        response = try await client.execute(request, timeout: .hours(24 * 365))
                    } catch {
                        throw Unreachable(description: "no agent answers on \(socketPath) (\(error)): is it running? (systemctl --user start dosetap)")
                    }
                    guard response.status == .ok else {
                        throw Unreachable(description: "the agent refused its event stream (HTTP \(response.status.code))")
                    }
                    var parser = ServerSentEventParser()
                    for try await buffer in response.body {
                        for name in parser.feed(String(buffer: buffer)) { continuation.yield(name) }
                    }
                    throw Unreachable(description: "the agent closed its event stream (it stopped or restarted)")
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: Task.isCancelled ? CancellationError() : error)
                }
                try? await client.shutdown()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The event names of a `text/event-stream`, fed in arbitrary pieces (a chunk may end mid-line). Comments
/// (`: …`) and unnamed events are skipped; a name is kept to 64 characters of letters and digits.
public struct ServerSentEventParser: Sendable {
    private var pending = ""
    private var name: String?

    public init() {}

    public mutating func feed(_ text: String) -> [String] {
        pending += text
        var names: [String] = []
        while let newline = pending.firstIndex(where: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = String(pending[..<newline])
            pending = String(pending[pending.index(after: newline)...])
            if line.isEmpty {
                if let name { names.append(name) }
                name = nil
            } else if line.hasPrefix("event:") {
                let value = line.dropFirst(6).trimmingCharacters(in: .whitespaces)
                name = value.count <= 64 && !value.isEmpty && value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) ? value : nil
            }
        }
        if pending.utf8.count > 64 * 1024 { pending = "" }  // a line that never ends is not an event
        return names
    }
}

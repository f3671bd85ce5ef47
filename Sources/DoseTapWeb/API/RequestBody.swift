import DoseTapApp
import DoseTapCore
import DoseTapStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Where a request's body must arrive by: the listener sets it for each request (its connection, and the header
/// timeout) so a body trickled a byte at a time is cut off like a trickled head (#51: 300 connections trickling a
/// body to `POST /pair` stayed open a minute, each byte restarting the idle timeout).
struct BodyDeadline: Sendable {
    var channel: any Channel
    var timeout: TimeAmount
}

/// Request bodies, bounded (16 KiB) in size and in time (the header timeout, 10 s): forms and strict JSON objects;
/// bad input as a status and one line.
extension WebDashboard {
    @TaskLocal static var bodyDeadline: BodyDeadline?

    static func body(_ request: Request) async throws -> ByteBuffer {
        var request = request
        // The connection is closed when the body is not whole in time: nothing more is read from it, and the
        // request fails (no answer can be written on a closed connection).
        let timer = bodyDeadline.map { deadline in
            let channel = deadline.channel
            return channel.eventLoop.scheduleTask(in: deadline.timeout) { channel.close(promise: nil) }
        }
        defer { timer?.cancel() }
        do {
            return try await request.collectBody(upTo: maxBody)
        } catch {
            if let channel = bodyDeadline?.channel, !channel.isActive {
                throw WebInputError(.requestTimeout, "the request body did not arrive in time")
            }
            throw WebInputError(.contentTooLarge, "the request body is larger than \(maxBody / 1024) KiB")
        }
    }

    /// An `application/x-www-form-urlencoded` body.
    static func form(_ request: Request) async throws -> [String: String] {
        let buffer = try await body(request)
        return FormDecoding.fields(String(buffer: buffer))
    }

    /// A JSON object body (empty means `{}`).
    static func jsonBody(_ request: Request) async throws -> [String: Any] {
        let buffer = try await body(request)
        guard buffer.readableBytes > 0 else { return [:] }
        // Strict (#25): no trailing comma, `true` is not `1`.
        let object: Any
        do {
            object = try StrictJSON.parse(Array(buffer.readableBytesView))
        } catch is StrictJSON.DuplicateKey {
            throw WebInputError(.badRequest, "the body names a key twice: give each field once")
        } catch {
            throw WebInputError(.badRequest, "the body must be a JSON object such as {\"reason\": \"alert\"}")
        }
        guard let fields = object as? [String: Any] else {
            throw WebInputError(.badRequest, "the body must be a JSON object such as {\"reason\": \"alert\"}")
        }
        return fields
    }
}

/// Bad input (or a request the dashboard will not serve), as a status, one line and the headers it needs
/// (a refusal's `Retry-After`); `ErrorAnswers` makes the answer.
struct WebInputError: Error {
    var status: HTTPResponse.Status
    var message: String
    var headers: HTTPFields
    init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }
}


enum FormDecoding {
    static func fields(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            if let value, out[name] == nil { out[name] = value }
        }
        return out
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

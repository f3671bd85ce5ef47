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

/// Request bodies, bounded (16 KiB): forms and strict JSON objects; bad input as a status and one line.
extension WebDashboard {
    static func body(_ request: Request) async throws -> ByteBuffer {
        var request = request
        do {
            return try await request.collectBody(upTo: maxBody)
        } catch {
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
        guard let object = try? StrictJSON.parse(Array(buffer.readableBytesView)), let fields = object as? [String: Any] else {
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

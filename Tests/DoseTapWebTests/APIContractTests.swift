@testable import DoseTapWeb
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The API's document against what the routes do (#51: "the spec matches behaviour"). scripts/api-schema-tests.sh
/// runs Schemathesis against the real agent; these are its findings, fixed, kept as tests of their own.
@Suite("Web: the API matches its OpenAPI document")
struct APIContractTests {
    static func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
    }

    @Test("the document: every route needs the session (401) and is rate limited (429 with Retry-After); every state change needs the CSRF token and our origin (403) and may be too large (413); every $ref resolves")
    func everyRouteSaysItsRefusals() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations = 0
        for (path, item) in paths {
            for (method, value) in item where ["get", "post", "patch", "delete"].contains(method) {
                let operation = try #require(value as? [String: Any])
                let responses = try #require(operation["responses"] as? [String: Any])
                let name = "\(method.uppercased()) \(path)"
                operations += 1
                #expect(responses["401"] != nil, "\(name) documents no 401")
                #expect((responses["429"] as? [String: String])?["$ref"] == "#/components/responses/Limited", "\(name) documents no 429")
                if method != "get" {
                    #expect(responses["403"] != nil, "\(name) documents no 403")
                    #expect(responses["413"] != nil, "\(name) documents no 413")
                    let security = operation["security"] as? [[String: [String]]]
                    #expect(security?.first?.keys.sorted() == ["csrf", "session"], "\(name) does not ask for the CSRF token")
                }
            }
        }
        #expect(operations == 36)
        let limited = ((document["components"] as? [String: Any])?["responses"] as? [String: Any])?["Limited"] as? [String: Any]
        #expect(((limited?["headers"] as? [String: Any])?["Retry-After"] as? [String: Any])?["required"] as? Bool == true)
        // Every reference names something in the document.
        func references(_ value: Any) -> [String] {
            if let object = value as? [String: Any] {
                return object.flatMap { key, inner in key == "$ref" ? [inner as? String ?? ""] : references(inner) }
            }
            if let array = value as? [Any] { return array.flatMap(references) }
            return []
        }
        for reference in Set(references(document)) {
            let parts = reference.dropFirst(2).split(separator: "/").map(String.init)
            var node: Any? = document
            for part in parts { node = (node as? [String: Any])?[part] }
            #expect(reference.hasPrefix("#/") && node != nil, "\(reference) resolves to nothing")
        }
    }
}

import Hummingbird
import NIOCore

/// The dashboard's request context: the connection, and what the middleware learnt about the request on its
/// way in (who calls, what they may do, the form the CSRF check already read).
public struct WebContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: (any Channel)?
    /// Who is calling (`ClientIdentity`): a Unix-socket peer with its uid, or a TCP address.
    var peer: WebPeer = .tcp(address: "unknown")
    /// What the caller may do (`ClientIdentity`): a trusted local peer, a paired browser's session, or nothing.
    var access: WebDashboard.Access = .none
    /// A form body that `CSRFCheck` read for its token: the route takes its fields from here.
    var form: [String: String]?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

extension WebDashboard {
    /// The JSON API (and the event streams of scripts) answers errors in JSON; everything else is a page.
    static func isAPI(_ path: String) -> Bool { path.hasPrefix("/api/") || path == "/events" }

    /// The request's form: the one the CSRF check read, else the body now.
    static func form(_ request: Request, _ context: WebContext) async throws -> [String: String] {
        if let form = context.form { return form }
        return try await form(request)
    }
}

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

/// Who may do what on a request: a trusted local peer, a paired browser's session, or nobody; the rate limit's
/// key and its wait; pairing. (The middleware in Router/ applies them.)
extension WebDashboard {
    /// Who may do what on this request.
    enum Access: Equatable {
        /// A Unix-socket peer of our own uid: no pairing, no CSRF (no browser is involved).
        case local(uid: UInt32)
        case session(id: String)
        case none

        var csrfKey: String? {
            switch self {
            case .local(let uid): "unix:\(uid)"
            case .session(let id): id
            case .none: nil
            }
        }
    }

    func access(_ request: Request, peer: WebPeer) -> Access {
        if peer.isTrustedLocal(ownUID: ownUID) { return .local(uid: ownUID) }
        if let cookie = request.cookies[Self.sessionCookie]?.value, let id = tokens.session(String(cookie), now: clock.now()) {
            return .session(id: id)
        }
        return .none
    }

    /// The rate limit's key: the session (a paired browser), the uid (the Unix socket), or the address for
    /// requests that are neither ("anonymous").
    static func rateKey(_ access: Access, peer: WebPeer) -> String {
        switch access {
        case .session(let id): "session:\(id)"
        case .local: peer.clientKey
        case .none: "anonymous:\(peer.clientKey)"
        }
    }

    /// A queued request's wait for its turn, on the scheduling port. It ends (`.cancelled`) when the agent stops:
    /// the listener waits for every request it holds before it closes, and SIGTERM with 90 requests queued
    /// once took 91 s (#25). A stopping agent answers them 503 at once.
    static func waitTurn(until deadline: Date, clock: any Scheduling) async -> WakeReason {
        if Task.isShuttingDownGracefully { return .cancelled }
        let sleeper = Task { await clock.sleep(until: deadline) }
        return await withTaskCancellationHandler {
            await withGracefulShutdownHandler { await sleeper.value } onGracefulShutdown: { sleeper.cancel() }
        } onCancel: {
            sleeper.cancel()
        }
    }

    func csrf(_ access: Access) -> String { access.csrfKey.map(tokens.csrfToken(for:)) ?? "" }

    func pair(code: String) -> Response {
        do {
            let session = try desk.redeem(code.trimmingCharacters(in: .whitespaces), now: clock.now())
            logger.notice("web: a browser was paired")
            return Self.redirect("/", cookies: [sessionCookie(session)])
        } catch {
            return Self.html(PairingPage.render(error: error.description), status: .forbidden)
        }
    }
}

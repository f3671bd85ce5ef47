import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// The streams: a page's live part (`/events?page=`) and the agent's events for followers (`/api/events`).
struct LiveController: DashboardController {
    let dashboard: WebDashboard

    func addRoutes(to router: Router<WebContext>) {
        router.get("/events", use: live)
        router.get("/api/events") { _, _ in dashboard.eventStream() }
    }

    @Sendable func live(_ request: Request, _ context: WebContext) async throws -> Response {
        let version = request.uri.queryParameters["version"].map(String.init)
        let page = request.uri.queryParameters["page"].map(String.init) ?? "tonight"
        guard page == "tonight" || dashboard.liveFragment(page, csrf: "") != nil else {
            throw WebInputError(.notFound, "no live page '\(DisplayText.escaped(page, maxLength: 20))'")
        }
        return dashboard.liveUpdates(csrf: dashboard.csrf(context.access), version: version.flatMap { $0.count <= 32 ? $0 : nil }, page: page)
    }
}

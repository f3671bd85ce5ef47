import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// What anyone may reach, paired or not: the assets, the API's description, the theme switch and pairing.
struct PublicController: DashboardController {
    let dashboard: WebDashboard

    func addRoutes(to router: Router<WebContext>) {
        router.get("/static/app.css") { _, _ in WebDashboard.staticAsset(StaticAssets.css, "text/css; charset=utf-8") }
        router.get("/static/app.js") { _, _ in WebDashboard.staticAsset(StaticAssets.js, "text/javascript; charset=utf-8") }
        router.get("/api/openapi.json") { _, _ in WebDashboard.response(.ok, "application/json", OpenAPIDocument.json) }
        router.get("/theme", use: theme)
        router.get("/pair", use: pairingPage)
        router.post("/pair", use: pair)
    }

    /// Only this browser's own cookie changes (like a language switch): no session or CSRF needed.
    @Sendable func theme(_ request: Request, _ context: WebContext) async throws -> Response {
        let set = request.uri.queryParameters["set"].map(String.init) ?? "auto"
        guard ["auto", "light", "dark"].contains(set) else { throw WebInputError(.badRequest, "set must be auto, light or dark") }
        let back = request.uri.queryParameters["back"].map(String.init) ?? "/"
        let location = HTML.navigation.contains { $0.path == back } ? back : "/"
        let cookie = set == "auto" ? "\(WebDashboard.themeCookie)=; Path=/; Max-Age=0; SameSite=Strict"
            : "\(WebDashboard.themeCookie)=\(set); Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict"
        return WebDashboard.redirect(location, cookies: [cookie])
    }

    /// The pairing form, or the code of a QR link (`?code=`) redeemed at once.
    @Sendable func pairingPage(_ request: Request, _ context: WebContext) async throws -> Response {
        guard let code = request.uri.queryParameters["code"] else { return WebDashboard.html(PairingPage.render(error: nil)) }
        return dashboard.pair(code: String(code))
    }

    @Sendable func pair(_ request: Request, _ context: WebContext) async throws -> Response {
        dashboard.pair(code: try await WebDashboard.form(request)["code"] ?? "")
    }
}

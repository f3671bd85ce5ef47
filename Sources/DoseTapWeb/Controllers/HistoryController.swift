import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// The dose history: the page with its range, and the CSV of `dosetap export csv`.
struct HistoryController: DashboardController {
    let dashboard: WebDashboard

    func addRoutes(to router: Router<WebContext>) {
        router.get("/history", use: page)
        router.get("/history.csv", use: csv)
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let (key, range) = try HistoryPage.range(request.uri.queryParameters["range"])
        let export = try dashboard.doses.history.export(range)
        return WebDashboard.html(HistoryPage.render(csv: export.csv, unreadable: export.unreadable.count, selected: key))
    }

    @Sendable func csv(_ request: Request, _ context: WebContext) async throws -> Response {
        let (key, range) = try HistoryPage.range(request.uri.queryParameters["range"])
        let export = try dashboard.doses.history.export(range)
        var headers = HTTPFields()
        headers[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"dosetap-\(key).csv\""
        return WebDashboard.response(.ok, "text/csv; charset=utf-8", export.csv, headers: headers)
    }
}

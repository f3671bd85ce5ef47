import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird

/// The Batteries page (with the usage alerts' section) and `/api/batteries`.
struct BatteriesController: DashboardController {
    let dashboard: WebDashboard
    let batteries: WebBatteries

    func addRoutes(to router: Router<WebContext>) {
        router.get("/batteries", use: page)
        router.get("/api/batteries", use: status)
    }

    @Sendable func page(_ request: Request, _ context: WebContext) async throws -> Response {
        let d = dashboard
        let batteries = self.batteries
        let now = d.clock.now()
        var headers = HTTPFields()
        let flash = d.takeFlash(request, &headers)
        let csrf = d.csrf(context.access)
        func render() -> String {
            var alerts = ""
            if let usageAlerts = d.usageAlerts, let overview = try? usageAlerts.overview() {
                alerts = AlertsSection.render(overview, history: (try? usageAlerts.history()) ?? [], now: now, timeZone: d.clock.timeZone, csrf: csrf)
            }
            return BatteriesPage.render(status: batteries.now(), samples: batteries.samples(now.addingTimeInterval(-24 * 3600)),
                                        others: batteries.others(), now: now, timeZone: d.clock.timeZone, alerts: alerts, flash: flash)
        }
        guard flash == nil else { return WebDashboard.html(render(), headers: headers) }
        // The battery is read outside the store: its readings come as events (a udev change, a poll while
        // discharging), and the page is drawn again at least every minute (the chart, time to empty).
        return WebDashboard.html(d.views.view(.init(view: "/batteries", session: csrf, variant: WebDashboard.themeVariant), now: now) {
            (render(), ViewCache.nextMinute(after: now))
        }, headers: headers)
    }

    @Sendable func status(_ request: Request, _ context: WebContext) async throws -> Response {
        guard let status = batteries.now() else { throw WebInputError(.serviceUnavailable, "the power supplies cannot be read") }
        return WebDashboard.json(status.json)
    }
}

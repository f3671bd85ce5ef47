import Hummingbird

/// A page or API area of the dashboard: its routes, over the dashboard's use cases.
protocol DashboardController: Sendable {
    func addRoutes(to router: Router<WebContext>)
}

extension WebDashboard {
    /// Every route on Hummingbird's router behind one stack of middleware, in one order for every route (an
    /// unknown path passes the whole stack too, then is a 404):
    /// 1. the security headers on every answer; 2. errors made answers in one place (`ErrorAnswers`);
    /// 3. who calls and what they may do; 4. the rate limit; 5. the colour scheme; 6. the origin of a state
    /// change; then the public routes (assets, the API's description, the theme switch, pairing);
    /// 7. pairing required; 8. the CSRF token of a state change; then one controller per page and API area.
    /// An area the agent does not have (no alarms, no buttons…) has no routes: its paths are 404s.
    func makeRouter() -> Router<WebContext> {
        let router = Router(context: WebContext.self)
        router.add(middleware: SecurityHeaders())
        router.add(middleware: ErrorAnswers(logger: logger))
        router.add(middleware: ClientIdentity(dashboard: self))
        router.add(middleware: RateLimit(dashboard: self))
        router.add(middleware: ThemeChoice(dashboard: self))
        router.add(middleware: OriginCheck())
        PublicController(dashboard: self).addRoutes(to: router)
        router.add(middleware: PairingRequired())
        router.add(middleware: CSRFCheck(dashboard: self))
        var controllers: [any DashboardController] = [TonightController(dashboard: self), HistoryController(dashboard: self),
                                                      LiveController(dashboard: self)]
        if let batteries { controllers.append(BatteriesController(dashboard: self, batteries: batteries)) }
        if let alarms { controllers.append(AlarmsController(dashboard: self, alarms: alarms)) }
        if let usageAlerts { controllers.append(AlertsController(dashboard: self, alerts: usageAlerts)) }
        if let sounds { controllers.append(SoundsController(dashboard: self, sounds: sounds)) }
        if let buttons { controllers.append(ButtonsController(dashboard: self, buttons: buttons)) }
        for controller in controllers { controller.addRoutes(to: router) }
        return router
    }
}

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

/// The local web dashboard (#14): pages and a JSON API over the agent's use cases, on Hummingbird's router with
/// one stack of middleware for every route (`makeRouter`, in Router/) and one controller per area (Controllers/).
public final class WebDashboard: Sendable {
    public static let sessionCookie = "dosetap_session"
    static let flashCookie = "dosetap_flash"
    static let maxBody = 16 * 1024

    let doses: DoseUseCases
    let events: EventBus
    let clock: any Scheduling
    let tokens: WebTokens
    let desk: PairingDesk
    let ownUID: UInt32
    let logger: Logger
    let databaseChanges: @Sendable () -> AsyncStream<Void>?
    let alarms: AlarmUseCases?
    let batteries: WebBatteries?
    /// What stands between an alarm and its being heard: "This machine may sleep through the alarm: …",
    /// "This machine cannot play the alarm: …"; empty when nothing does.
    let alarmWarnings: @Sendable () -> [String]
    let limiter: Mutex<RateLimiter>
    /// The alarms ringing now, as the agent's event stream told (alarm ids).
    let ringingAlarms = Mutex<Set<Int>>([])
    /// The household's alarms ringing here as backups (#12), by ring: the line the Alarms page shows.
    let ringingBackups = Mutex<[Int64: String]>([:])
    let sounds: WebSounds?
    let buttons: WebButtons?
    /// This machine's name and whether a household broker is set: the backup rules (#12); nil hides backups.
    let household: AlarmUseCases.Household?
    /// The usage alerts of every battery (#13), shown on the Batteries page.
    let usageAlerts: AlertUseCases?
    /// Stop or Snooze the alarm ringing here through the agent (`POST /api/ringing/stop|snooze`, #51); false: none rings.
    let answerRing: (@Sendable (_ outcome: AlarmRingOutcome, _ by: AlarmRingEnder) -> Bool)?
    /// Rendered views kept while nothing they show changed (`ViewCache`).
    let views: ViewCache
    /// The bedtime and wake time (minutes of the day) as read at a store generation.
    let nightHours = Mutex<(generation: Int, bed: Int, wake: Int)?>(nil)

    public init(doses: DoseUseCases, events: EventBus, clock: any Scheduling, secret: WebSecret, ownUID: UInt32 = getuid(),
                logger: Logger, databaseChanges: @escaping @Sendable () -> AsyncStream<Void>? = { nil },
                alarms: AlarmUseCases? = nil, alarmWarnings: @escaping @Sendable () -> [String] = { [] },
                batteries: WebBatteries? = nil, sounds: WebSounds? = nil, buttons: WebButtons? = nil,
                redeemedCodes dataDirectory: URL? = nil, household: AlarmUseCases.Household? = nil, usageAlerts: AlertUseCases? = nil,
                rateLimit: RateLimiter = RateLimiter(), storeGeneration: (@Sendable () -> Int)? = nil,
                answerRing: (@Sendable (_ outcome: AlarmRingOutcome, _ by: AlarmRingEnder) -> Bool)? = nil) {
        self.answerRing = answerRing
        self.limiter = Mutex(rateLimit)
        self.views = ViewCache(storeGeneration: storeGeneration)
        self.usageAlerts = usageAlerts
        self.household = household
        self.sounds = sounds
        self.buttons = buttons
        self.alarms = alarms
        self.batteries = batteries
        self.alarmWarnings = alarmWarnings
        self.doses = doses
        self.events = events
        self.clock = clock
        self.tokens = WebTokens(secret: secret)
        self.desk = PairingDesk(tokens: tokens, dataDirectory: dataDirectory)
        self.ownUID = ownUID
        self.logger = logger
        self.databaseChanges = databaseChanges
    }

    /// The responder of every listener: the router with its middleware.
    public var responder: some HTTPResponder<WebContext> { makeRouter().buildResponder() }
}

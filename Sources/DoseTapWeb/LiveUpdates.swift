import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

extension WebDashboard {
    /// Server-sent events: `event: tonight` with the Tonight fragment, at once, after every dose event of
    /// the agent (a button, a notification, the agent's own close), after every write of another process
    /// (the command line: the data folder's inotify), and at each minute (minutes left). Timers wait on
    /// the scheduling port. The stream ends when the browser goes or the agent stops.
    /// - Parameter version: the version of the fragment the page already shows (nothing is sent until it changes).
    /// - Parameter page: "tonight" (`event: tonight`), or "alarms", "batteries", "buttons" (`event: live`, the
    ///   page's live part).
    func liveUpdates(csrf: String, version: String?, page: String = "tonight") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let pokes = pokeStream()
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { pokes.stop() }
            var last = version ?? ""
            // Ends when the agent shuts down (graceful shutdown), or when a write fails (the browser went).
            for await _ in pokes.stream.cancelOnGracefulShutdown() {
                let fragment: String
                if page == "tonight" {
                    guard let status = try? self.doses.status() else { continue }
                    fragment = TonightPage.fragment(status: status, csrf: csrf)
                } else {
                    guard let live = self.liveFragment(page, csrf: csrf) else { continue }
                    fragment = live
                }
                let current = TonightPage.version(fragment)
                if current == last {
                    try await writer.write(ByteBuffer(string: ": unchanged\n\n"))
                    continue
                }
                last = current
                try await writer.write(ByteBuffer(string: Self.serverSentEvent(page == "tonight" ? "tonight" : "live", fragment, id: current)))
            }
            try await writer.finish(nil)
        })
    }

    static func serverSentEvent(_ name: String, _ data: String, id: String? = nil) -> String {
        (id.map { "id: \($0)\n" } ?? "") + "event: \(name)\n" + data.split(separator: "\n", omittingEmptySubsequences: false).map { "data: \($0)\n" }.joined() + "\n"
    }

    struct Pokes: Sendable {
        let stream: AsyncStream<Void>
        let stop: @Sendable () -> Void
    }

    /// One signal now, then one per relevant event, database change or minute.
    func pokeStream() -> Pokes {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield()
        let subscription = events.subscribe()
        let changes = databaseChanges()
        let clock = self.clock
        let watchers = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Every event of the agent may change a page (a dose, a reading, a press, a ring, a setting): each
                    // pokes, and the page is sent only when its version changed. What the pages remember (a press, a
                    // ring) is noted first, so the page drawn next shows it.
                    for await event in subscription {
                        self.remember(event)
                        continuation.yield()
                    }
                }
                if let changes {
                    group.addTask { for await _ in changes { continuation.yield() } }
                }
                group.addTask {
                    while !Task.isCancelled {
                        let now = clock.now()
                        let next = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60 + 60)
                        if await clock.sleep(until: next) == .cancelled { break }
                        continuation.yield()
                    }
                }
                await group.waitForAll()
            }
        }
        continuation.onTermination = { _ in watchers.cancel() }
        return Pokes(stream: stream, stop: {
            watchers.cancel()
            continuation.finish()
        })
    }

    /// The live part of a page other than Tonight, as its page shows it now; nil for no such page.
    func liveFragment(_ page: String, csrf: String) -> String? {
        switch page {
        case "alarms":
            guard let alarms, let (views, unusable) = try? alarms.list() else { return nil }
            return AlarmsPage.fragment(alarms: views, unusable: unusable.map { "Alarm \($0.id) cannot be read: \($0.reason)" },
                                       warnings: alarmWarnings(), timeZone: clock.timeZone, csrf: csrf, backups: backups(views, alarms),
                                       ringing: ringingAlarms.withLock { $0 }, backupsRinging: backupsRinging)
        case "batteries":
            guard let batteries else { return nil }
            let now = clock.now()
            return BatteriesPage.fragment(status: batteries.now(), samples: batteries.samples(now.addingTimeInterval(-24 * 3600)),
                                          others: batteries.others(), now: now, timeZone: clock.timeZone)
        case "buttons":
            guard let buttons, let (rows, _) = try? buttons.rows() else { return nil }
            return ButtonsPage.fragment(rows: rows, timeZone: clock.timeZone, csrf: csrf)
        default:
            return nil
        }
    }

    /// The household's alarms ringing here as backups, as the Alarms page says them.
    var backupsRinging: [String] { ringingBackups.withLock { $0.sorted { $0.key < $1.key }.map(\.value) } }

    /// What the pages remember of the event stream: the last press of each button, the alarms ringing.
    func remember(_ event: AgentEvent) {
        switch event {
        case .buttonPressed(let address, let gesture): buttons?.recordPress(address: address, gesture: gesture, at: clock.now())
        case .alarmRinging(let ring, _): ringingAlarms.withLock { _ = $0.insert(ring.alarmID) }
        case .alarmEnded(let ring), .alarmMissed(let ring, _): ringingAlarms.withLock { _ = $0.remove(ring.alarmID) }
        case .backupAlarmRinging(let ring, let alarm, let owner):
            let line = "Backup alarm ringing: \(alarm.time) “\(alarm.label)” of \(owner)."
            ringingBackups.withLock { $0[ring.id] = line }
        case .backupAlarmEnded(let ring, _): ringingBackups.withLock { _ = $0.removeValue(forKey: ring.id) }
        default: break
        }
        // After what is remembered changed: a view drawn from now on shows it.
        views.eventSeen()
    }

    /// Remembers the event stream for the pages, from the agent's start to its stop.
    public struct Recorder: Service {
        let dashboard: WebDashboard

        public init(dashboard: WebDashboard) { self.dashboard = dashboard }

        public func run() async throws {
            for await event in dashboard.events.subscribe().cancelOnGracefulShutdown() { dashboard.remember(event) }
        }
    }
}

import DoseTapApp
import DoseTapCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

extension WebDashboard {
    /// `GET /api/events`: what happens in the agent, as server-sent events, for a follower that keeps its
    /// own view and re-reads what it shows (`dosetap status --follow`): `event: ready` once, then one event
    /// per agent event by its name (`doseRecorded`, `alarmRinging`, `batteryReading`, …) and `storeChanged`
    /// when another process (the command line) wrote the data folder. The data is `{}`: a follower reads the
    /// state through the API or the store, so nothing here can go stale or leak a device's name. The stream
    /// ends when the client goes or the agent stops.
    func eventStream() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        let (names, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let subscription = events.subscribe()
        let changes = databaseChanges()
        let watchers = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await event in subscription { continuation.yield(Self.eventName(event)) } }
                if let changes {
                    group.addTask { for await _ in changes { continuation.yield("storeChanged") } }
                }
                await group.waitForAll()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in watchers.cancel() }
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { watchers.cancel() }
            try await writer.write(ByteBuffer(string: Self.serverSentEvent("ready", "{}")))
            for await name in names.cancelOnGracefulShutdown() {
                try await writer.write(ByteBuffer(string: Self.serverSentEvent(name, "{}")))
            }
            try await writer.finish(nil)
        })
    }

    /// An event's name on the stream: its case.
    static func eventName(_ event: AgentEvent) -> String {
        switch event {
        case .doseRecorded: "doseRecorded"
        case .doseRefused: "doseRefused"
        case .reminderDue: "reminderDue"
        case .batteryReading: "batteryReading"
        case .buttonPressed: "buttonPressed"
        case .buttonBattery: "buttonBattery"
        case .settingsChanged: "settingsChanged"
        case .configurationReloaded: "configurationReloaded"
        case .backupAlarmRinging: "backupAlarmRinging"
        case .backupAlarmEnded: "backupAlarmEnded"
        case .alarmRinging: "alarmRinging"
        case .alarmEnded: "alarmEnded"
        case .alarmMissed: "alarmMissed"
        case .storeHealthChanged: "storeHealthChanged"
        }
    }
}

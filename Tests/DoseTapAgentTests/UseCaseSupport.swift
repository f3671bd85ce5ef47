import DoseTapAgent
import DoseTapApp
import Foundation

/// A fresh data folder for one test (the database is not created until a use case opens it).
func freshDataFolder(_ prefix: String = "dosetap-uc") -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
}

/// Everything published on `bus` so far: finishes the bus, then drains a subscription taken before.
func drained(_ bus: EventBus, _ stream: AsyncStream<AgentEvent>) async -> [AgentEvent] {
    bus.finish()
    var events: [AgentEvent] = []
    for await event in stream { events.append(event) }
    return events
}

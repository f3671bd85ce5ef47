import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The status file `dosetap household status` reads (`HouseholdStatus`).
extension HouseholdService {
    // MARK: Status for the command line

    func writeStatus(view: HouseholdCascade.View, now: Date) {
        guard let statusFile else { return }
        let utc = TimeZone(identifier: "UTC")!
        let s = state.withLock { $0 }
        var broker = HouseholdStatus.Broker(configured: link != nil || refused != nil)
        if let refused {
            broker.url = refused.url
            broker.connected = false
            broker.off = refused.reason
        }
        if let link {
            broker.url = link.url
            broker.anonymous = link.anonymous
            broker.connected = s.connected
            broker.since = s.connectedSince?.rfc3339(in: utc)
        }
        let peers = s.peers.byDevice.sorted { $0.key < $1.key }.map { name, peer in
            HouseholdStatus.Peer(device: name, online: peer.online, lastHeartbeat: peer.heartbeat?.rfc3339(in: utc),
                                 clockOffset: s.peers.clockOffsets[name].map { Int($0.rounded()) })
        }
        var cascades: [HouseholdStatus.Cascade] = []
        for occurrence in view.occurrences where occurrence.key.date <= now {
            let progress = HouseholdCascade.progress(of: occurrence, answers: view.answers, now: now)
            guard !progress.finished else { continue }
            let fired = progress.slots.filter { $0.key.target >= 0 }.map { slot in
                HouseholdStatus.Slot(target: occurrence.targets[slot.key.target].description, at: slot.key.date.rfc3339(in: utc),
                                     done: view.done[slot.key]?.rawValue)
            }
            cascades.append(HouseholdStatus.Cascade(
                owner: occurrence.key.owner, alarm: occurrence.key.alarmID, label: occurrence.label, time: occurrence.time,
                occurrence: occurrence.key.date.rfc3339(in: utc), next: progress.nextAt?.rfc3339(in: utc), fired: fired))
        }
        let json = HouseholdStatus(pid: Int(getpid()), device: identity.device, household: identity.name, topic: "dosetap/\(identity.topic)",
                                   broker: broker, peers: peers, cascades: cascades).json
        let bytes = Array((json.text + "\n").utf8)
        let changed = state.withLock { st -> Bool in
            guard st.status != bytes else { return false }
            st.status = bytes
            return true
        }
        if changed { statusFile.write(bytes) }
    }
}

extension HouseholdStatus {
    /// The running agent's record; nil when no agent runs (or the record cannot be read).
    public static func read(dataDirectory: URL) -> (status: HouseholdStatus, raw: Data)? {
        guard let data = AgentStatusFile(dataDirectory: dataDirectory, name: fileName).readFromRunningAgent(),
              let status = try? JSONDecoder().decode(HouseholdStatus.self, from: data) else { return nil }
        return (status, data)
    }
}

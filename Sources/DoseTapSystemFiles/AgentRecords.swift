import DoseTapCore
#if canImport(Glibc)
import Glibc
#endif

/// What the running agent records for the command line in its data folder, each in a file it holds locked with
/// an exclusive `flock` for as long as it runs (DoseTapAgent's `AgentStatusFile` writes them): the command line
/// trusts a record only while it is locked — a file left by a dead agent is not. Read here, with the C library
/// and `JSONValue`, by the full program and the one-shot front alike (#29), so the two tell the same.
public enum AgentRecord {
    /// How the agent can wake the machine for an alarm (`WakeStatusFile`).
    public static let wakeName = "wake-status.json"
    /// Whether the agent can make the alarm's sound (`SoundStatusFile`).
    public static let soundName = "sound-status.json"
    /// Whether the agent can write its data (`StoreHealth`, #51).
    public static let storeName = "store-status.json"
    /// A record is a few hundred bytes; more than this is not the agent's.
    static let maximumSize = 1 << 20

    /// The content of the file at `path` while an agent holds it locked; nil when nobody does, or it is missing or
    /// unreadable.
    public static func readFromRunningAgent(path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            // Nobody holds it: whatever it says is a dead agent's.
            flock(fd, LOCK_UN)
            return nil
        }
        guard errno == EWOULDBLOCK else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < maximumSize {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(bytes.count)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }

    /// The agent's wake finding (`{"method": "alarmTimer" | "rtc" | "helper" | null, …}`), or nil when the record is
    /// not one the agent writes.
    public static func wake(_ bytes: [UInt8]) -> Result<WakeMethod, WakeUnavailable>? {
        guard let object = JSONValue.parse(bytes), case .object = object, let method = object["method"] else { return nil }
        switch method {
        case .string("alarmTimer"): return .success(.alarmTimer)
        case .string("rtc"):
            guard let path = object["rtcPath"]?.string else { return nil }
            return .success(.rtc(path: path))
        case .string("helper"):
            guard let socket = object["helperSocket"]?.string else { return nil }
            return .success(.helper(socket: socket))
        case .null:
            guard let reason = object["reason"]?.string, let fix = object["fix"]?.string else { return nil }
            return .failure(WakeUnavailable(reason: reason, fix: fix))
        default: return nil
        }
    }

    /// The agent's sound finding (`{"canPlay": true}`, or false with the reason and the fix): `.some(nil)` it can
    /// play, `.some(problem)` it cannot, nil when the record is not one the agent writes.
    public static func sound(_ bytes: [UInt8]) -> SoundUnavailable?? {
        guard let object = JSONValue.parse(bytes), let canPlay = object["canPlay"]?.bool else { return nil }
        if canPlay { return .some(nil) }
        guard let reason = object["reason"]?.string, let fix = object["fix"]?.string else { return nil }
        return .some(SoundUnavailable(reason: reason, fix: fix))
    }

    /// The agent's finding about its data (`{"canWrite": true}`, or false with the sentence to show): `.some(nil)` it
    /// can write, `.some(sentence)` it cannot, nil when the record is not one the agent writes.
    public static func store(_ bytes: [UInt8]) -> String?? {
        guard let object = JSONValue.parse(bytes), let canWrite = object["canWrite"]?.bool else { return nil }
        if canWrite { return .some(nil) }
        guard let message = object["message"]?.string else { return nil }
        return .some(message)
    }

    /// The running agent's sentence about its data in `dataDirectory` when it cannot write it; nil when it can, or no
    /// agent holds the record.
    public static func storeProblem(dataDirectory: String) -> String? {
        readFromRunningAgent(path: dataDirectory + "/" + storeName).flatMap(store) ?? nil
    }

    /// The running agent's wake finding in `dataDirectory`, or nil when no agent holds its record (or it is not one).
    public static func wake(dataDirectory: String) -> Result<WakeMethod, WakeUnavailable>? {
        readFromRunningAgent(path: dataDirectory + "/" + wakeName).flatMap(wake)
    }

    /// The running agent's sound finding in `dataDirectory`, or nil when no agent holds its record (or it is not one).
    public static func sound(dataDirectory: String) -> SoundUnavailable?? {
        readFromRunningAgent(path: dataDirectory + "/" + soundName).flatMap(sound)
    }
}

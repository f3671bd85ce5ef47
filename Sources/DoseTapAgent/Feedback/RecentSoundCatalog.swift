import DoseTapApp
import DoseTapCore
import Foundation
import Synchronization

/// The machine's sounds as listed at most `maxAge` ago: for the settings screens, which list the sound themes
/// on every request (a walk of `$XDG_DATA_HOME/sounds` and every `$XDG_DATA_DIRS/sounds`: the dashboard's most
/// expensive request). A short age, not an inotify watch: the themes spread over several roots, each with
/// nested folders and roots that may not exist yet, so a watch would need one per folder and a re-scan to
/// follow new ones, while a theme added or removed shows within `maxAge` (1 s) this way. A failed listing is
/// not kept: the next request lists again. Only the settings screens use it; playing a sound (an alarm, a
/// preview) still lists afresh.
public final class RecentSoundCatalog: SoundCatalog {
    public static let defaultMaxAge: Duration = .seconds(1)

    private let base: any SoundCatalog
    private let maxAge: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let kept = Mutex<(sounds: [SoundInfo], at: ContinuousClock.Instant)?>(nil)

    public init(_ base: any SoundCatalog, maxAge: Duration = RecentSoundCatalog.defaultMaxAge,
                now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.base = base
        self.maxAge = maxAge
        self.now = now
    }

    /// The kept listing while younger than `maxAge`, else a new one (one walk at a time: a request arriving
    /// during the walk waits for it and takes its result).
    public func list() throws -> [SoundInfo] {
        try kept.withLock { kept in
            let now = self.now()
            if let kept, now - kept.at < maxAge, now >= kept.at { return kept.sounds }
            let sounds = try base.list()
            kept = (sounds, now)
            return sounds
        }
    }
}

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

/// The pages' colour scheme: the person's choice (a cookie), else dark between bedtime and wake time.
extension WebDashboard {
    static let themeCookie = "dosetap_theme"

    /// Between the configured bedtime and wake time (setup's answers), on this machine's clock: the pages are
    /// dark unless the person chose light. The two times are read again after every change of the store.
    func isNight() -> Bool {
        let generation = views.generation()?.store
        let hours: (bed: Int, wake: Int)
        if let generation, let kept = nightHours.withLock({ $0 }), kept.generation == generation {
            hours = (kept.bed, kept.wake)
        } else {
            let settings = doses.night
            // Core's TimeOfDay reads the stored answers, as every other part does (an unreadable one: no night).
            func minutes(_ text: String) -> Int? { (try? TimeOfDay(parsing: text)).map { $0.hour * 60 + $0.minute } }
            hours = (minutes(settings.bedtime) ?? -1, minutes(settings.wakeTime) ?? -1)
            if let generation { nightHours.withLock { $0 = (generation, hours.bed, hours.wake) } }
        }
        let (bed, wake) = hours
        guard bed >= 0, wake >= 0, bed != wake else { return false }
        // The minute of the day on this machine's clock, from its offset (a Calendar per request is costly).
        let date = clock.now()
        let local = Int(date.timeIntervalSince1970.rounded(.down)) + clock.timeZone.secondsFromGMT(for: date)
        let day = 24 * 60
        let now = ((local / 60) % day + day) % day
        return bed > wake ? (now >= bed || now < wake) : (now >= bed && now < wake)
    }

    /// The theme of the page being answered, as a part of a cached view's key.
    static var themeVariant: String { "\(HTML.theme ?? "auto")/\(HTML.themeChoice ?? "auto")" }
}

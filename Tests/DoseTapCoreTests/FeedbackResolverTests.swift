import DoseTapCore
import Testing

@Suite("Feedback resolution")
struct FeedbackResolverTests {
    static let beep = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/cache/beep.wav")
    static let bell = SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")
    static let alarmSound = SoundInfo(name: "alarm-clock-elapsed", theme: "freedesktop", path: "/x/alarm-clock-elapsed.oga")

    func caps(haptics: Bool) -> FeedbackCapabilities {
        FeedbackCapabilities(hapticsSupported: haptics, sounds: [Self.bell, Self.alarmSound], builtinBeep: Self.beep)
    }

    enum EventSound: CaseIterable { case unset, available, vanished }
    enum Global: CaseIterable { case unset, off, available, vanished }

    /// Every combination of chime, event sound, global sound, quiet mode, haptics (event and global),
    /// intensity override, motor present or not, and events that bypass quiet mode or not.
    @Test("every combination follows the rules", arguments: FeedbackEvent.allCases)
    func everyCombination(event: FeedbackEvent) {
        var checked = 0
        for chime in [true, false] {
            for eventSound in EventSound.allCases {
                for global in Global.allCases {
                    for quiet in [false, true] {
                        for hapticsOverride in [Bool?.none, true, false] {
                            for globalHaptics in [true, false] {
                                for intensityOverride in [HapticIntensity?.none, .strong] {
                                    for motor in [true, false] {
                                        var s = FeedbackSettings()
                                        s.global.hapticsEnabled = globalHaptics
                                        s.global.intensity = .light
                                        s.global.sound = switch global {
                                        case .unset: .unset
                                        case .off: .off
                                        case .available: .named("bell")
                                        case .vanished: .named("gone-theme-sound")
                                        }
                                        s.set(event, EventFeedback(
                                            chime: chime,
                                            sound: eventSound == .unset ? nil : eventSound == .available ? "alarm-clock-elapsed" : "deleted",
                                            haptics: hapticsOverride, intensity: intensityOverride))
                                        let plan = FeedbackResolver.resolve(event, settings: s, quiet: quiet, capabilities: caps(haptics: motor))
                                        check(plan, chime: chime, eventSound: eventSound, global: global, quiet: quiet,
                                              hapticsOn: hapticsOverride ?? globalHaptics, intensity: intensityOverride ?? .light, motor: motor,
                                              event: event)
                                        checked += 1
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 2 * 3 * 4 * 2 * 3 * 2 * 2 * 2)
    }

    func check(_ plan: FeedbackPlan, chime: Bool, eventSound: EventSound, global: Global, quiet: Bool,
               hapticsOn: Bool, intensity: HapticIntensity, motor: Bool, event: FeedbackEvent) {
        #expect(plan.event == event)
        guard chime else {
            #expect(plan == FeedbackPlan(event: event, chime: false, sound: nil, haptics: nil, muted: false, warnings: []))
            return
        }
        // The sound before quiet mode: event → global → built-in beep.
        let wanted: SoundInfo? = switch (eventSound, global) {
        case (.available, _): Self.alarmSound
        case (_, .available): Self.bell
        case (_, .vanished), (_, .unset): Self.beep
        case (.vanished, .off): Self.beep
        case (.unset, .off): nil
        }
        let muted = quiet && wanted != nil && !event.bypassesQuiet
        #expect(plan.sound == (muted ? nil : wanted))
        #expect(plan.muted == muted)
        if event == .doseUrgent || event == .alarm { #expect(!plan.muted) }
        #expect(plan.haptics == (hapticsOn && motor ? intensity.pattern : nil))
        let silent = plan.sound == nil && plan.haptics == nil
        #expect(plan.warnings.contains(FeedbackPlan.noNotificationWarning) == silent)
        if eventSound == .vanished { #expect(plan.warnings.contains { $0.contains("'deleted'") }) }
        if global == .vanished, eventSound != .available { #expect(plan.warnings.contains { $0.contains("'gone-theme-sound'") }) }
    }

    @Test("first-run defaults: haptics on at medium, no sound chosen (the beep), chime on")
    func defaults() {
        let plan = FeedbackResolver.resolve(.doseReminder, settings: FeedbackSettings(), quiet: false, capabilities: caps(haptics: true))
        #expect(plan.chime)
        #expect(plan.sound == Self.beep)
        #expect(plan.haptics == HapticIntensity.medium.pattern)
        #expect(plan.warnings.isEmpty)
    }

    @Test("intensities are distinct in pulse count, duration and magnitude")
    func patterns() {
        let p = HapticIntensity.allCases.map(\.pattern)
        #expect(Set(p.map(\.pulses.count)).count == 3)
        #expect(Set(p.map(\.totalMilliseconds)).count == 3)
        #expect(Set(p.map(\.magnitude)).count == 3)
        #expect(p.map(\.totalMilliseconds) == p.map(\.totalMilliseconds).sorted())
    }

    @Test("names are validated with clear messages")
    func validation() throws {
        #expect(throws: FeedbackSettingsError.self) { try FeedbackEvent(validating: "dose-remindr") }
        #expect(throws: FeedbackSettingsError.self) { try HapticIntensity(validating: "max") }
        #expect(try FeedbackEvent(validating: "alarm") == .alarm)
        #expect(try HapticIntensity(validating: "strong") == .strong)
        #expect((try? FeedbackEvent(validating: "x")) == nil)
    }
}

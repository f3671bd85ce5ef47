import DoseTapAgent
import DoseTapApp
import DoseTapCore
import DoseTapLinux
import DoseTapStore
import DoseTapTesting
import Foundation
import Testing

/// Settings changes: validated, stored, published.
@Suite("SettingsUseCases")
struct SettingsUseCasesTests {
    static let beep = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/tmp/beep.wav")
    static let bell = SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")

    func useCases(events: EventBus? = nil, motor: Bool = true) throws -> SettingsUseCases {
        let devices = FeedbackDevices(haptics: RecordingHaptics(supported: motor), catalog: FixedSoundCatalog([Self.bell]),
                                      player: RecordingSoundPlayer(), beep: Self.beep, desktop: nil)
        return try SettingsUseCases.open(store: DataStore(directory: freshDataFolder()), clock: SystemClock(), devices: { devices.channels }, events: events)
    }

    @Test("a feedback change is stored and publishes settingsChanged")
    func changePublishes() async throws {
        let bus = EventBus()
        let stream = bus.subscribe()
        let cases = try useCases(events: bus)
        try cases.changeFeedback(.init(sound: .named("bell"), haptics: false, intensity: "strong", quiet: true))
        let feedback = try cases.feedback()
        #expect(feedback.settings.global == GlobalFeedback(hapticsEnabled: false, intensity: .strong, sound: .named("bell")))
        #expect(feedback.quietMode)
        #expect(feedback.globalSound == "bell")
        try cases.changeFeedback(.init(sound: .off))
        #expect(try cases.feedback().globalSound == "none")
        #expect(await drained(bus, stream) == [.settingsChanged, .settingsChanged])
    }

    @Test("refused changes store nothing and publish nothing: an unknown sound, an unknown intensity")
    func refusals() async throws {
        let bus = EventBus()
        let stream = bus.subscribe()
        let cases = try useCases(events: bus)
        #expect(throws: UseCaseError("unknown sound 'gong': see dosetap sounds list")) {
            try cases.changeFeedback(.init(sound: .named("gong"), haptics: false))
        }
        #expect(throws: UseCaseError.self) { try cases.changeFeedback(.init(haptics: false, intensity: "loud")) }
        #expect(throws: UseCaseError.self) { try cases.changeEvent(.doseReminder, .init(sound: .set("gong"))) }
        #expect(try cases.feedback().settings == FeedbackSettings())
        #expect(await drained(bus, stream).isEmpty)
    }

    @Test("an event's overrides: set, then back to the global value; the plan follows")
    func eventOverrides() throws {
        let cases = try useCases()
        try cases.changeEvent(.doseReminder, .init(chime: true, sound: .set("bell"), haptics: .set(false), intensity: .set("light")))
        #expect(try cases.feedback().settings.event(.doseReminder) == EventFeedback(chime: true, sound: "bell", haptics: false, intensity: .light))
        #expect(try cases.resolve(.doseReminder).sound?.name == "bell")
        #expect(try cases.resolve(.doseReminder).haptics == nil)
        try cases.changeEvent(.doseReminder, .init(sound: .useGlobal, haptics: .useGlobal, intensity: .useGlobal))
        #expect(try cases.feedback().settings.event(.doseReminder) == EventFeedback())
        #expect(try cases.resolve(.doseReminder).haptics?.intensity == .medium)
        try cases.changeEvent(.doseReminder, .init(chime: false))
        #expect(try cases.resolve(.doseReminder).chime == false)
    }

    @Test("no motor: reported, not an error")
    func noMotor() throws {
        let cases = try useCases(motor: false)
        #expect(!cases.hapticsSupported)
        #expect(try !cases.feedback().hapticsSupported)
        try cases.changeFeedback(.init(haptics: true))
    }

    @Test("the night: a valid change is saved and published; an invalid one is refused and nothing changes")
    func night() async throws {
        let bus = EventBus()
        let stream = bus.subscribe()
        let cases = try useCases(events: bus)
        #expect(cases.night() == .defaults)
        var night = cases.night()
        night.dose2TargetMinutes = 180
        night.configured = true
        try cases.saveNight(night)
        #expect(cases.night().dose2TargetMinutes == 180)
        var invalid = night
        invalid.dose1Grams = 12
        #expect(throws: UseCaseError.self) { try cases.saveNight(invalid) }
        #expect(cases.night() == night)
        #expect(await drained(bus, stream) == [.settingsChanged])
    }

    @Test("typed answers: grams within 0.25…9, Dose 2 target among the options; both sides")
    func answers() throws {
        #expect(try SettingsUseCases.doseGrams("4.5") == 4.5)
        #expect(throws: UseCaseError("dose amount must be between 0.25 and 9 grams (got 9.5)")) { try SettingsUseCases.doseGrams("9.5") }
        #expect(throws: UseCaseError.self) { try SettingsUseCases.doseGrams("1e0") }
        #expect(try SettingsUseCases.dose2Target("195") == 195)
        #expect(throws: UseCaseError("dose 2 target must be one of 165, 180, 195, 210, 225 minutes (got 170)")) {
            try SettingsUseCases.dose2Target("170")
        }
    }
}

import DoseTapCore
import Foundation
import Logging

/// This machine's feedback as the use cases see it: the vibration motor, the sound themes, the player and
/// the built-in beep, each a Core port (the agent and the CLI give the machine's adapters).
public struct FeedbackChannels: Sendable {
    public var haptics: any Haptics
    public var catalog: any SoundCatalog
    public var player: any SoundPlayer
    public var beep: SoundInfo

    public init(haptics: any Haptics, catalog: any SoundCatalog, player: any SoundPlayer, beep: SoundInfo) {
        self.haptics = haptics
        self.catalog = catalog
        self.player = player
        self.beep = beep
    }

    /// What the machine can do now (the sounds as the catalog lists them: afresh, a removed theme shows at once;
    /// the settings screens' `RecentSoundCatalog`: at most a second old).
    public func capabilities(logger: Logger) -> FeedbackCapabilities {
        let sounds: [SoundInfo]
        do {
            sounds = try catalog.list()
        } catch {
            logger.warning("cannot list sounds; only the built-in beep is available", metadata: ["error": "\(error)"])
            sounds = []
        }
        return FeedbackCapabilities(hapticsSupported: haptics.isSupported, sounds: sounds, builtinBeep: beep)
    }

    /// A sound of this machine by name (the built-in beep included). Errors: "unknown sound '…': see dosetap
    /// sounds list", or the catalog's failure.
    public func sound(named name: String) throws -> SoundInfo {
        let sounds: [SoundInfo]
        do { sounds = try catalog.list() } catch { throw UseCaseError.unavailable("\(error)") }
        guard let sound = (sounds + [beep]).first(where: { $0.name == name }) else {
            throw UseCaseError("unknown sound '\(name)': see dosetap sounds list")
        }
        return sound
    }
}

import DoseTapCore
import Foundation
import Synchronization

/// Hearing a sound before choosing it (the settings screen's preview and stop): one preview at a time —
/// a new one stops the one playing — until it ends or `stop()`. The same lookup as `dosetap sounds preview`.
public final class SoundPreview: Sendable {
    private struct State {
        var playback: Task<Void, Never>?
        var name: String?
        var serial = 0
    }

    private let devices: FeedbackChannels
    private let state = Mutex(State())

    public init(devices: FeedbackChannels) {
        self.devices = devices
    }

    /// The sound named `name` (see the sound list), played from now. Errors: "unknown sound '…': see dosetap
    /// sounds list".
    @discardableResult
    public func play(_ name: String) throws -> SoundInfo {
        let sound = try devices.sound(named: name)
        let player = devices.player
        state.withLock { state in
            state.playback?.cancel()
            state.serial += 1
            let serial = state.serial
            state.name = sound.name
            state.playback = Task { [weak self] in
                try? await player.play(sound)
                self?.ended(serial)
            }
        }
        return sound
    }

    /// Stops the preview. Returns the name of the sound that was playing, nil when none was.
    @discardableResult
    public func stop() -> String? {
        let (playback, name) = state.withLock { state in
            defer {
                state.playback = nil
                state.name = nil
                state.serial += 1
            }
            return (state.playback, state.name)
        }
        guard let playback else { return nil }
        playback.cancel()
        devices.player.stop()
        return name
    }

    /// The sound playing now, nil when none.
    public var playing: String? { state.withLock { $0.name } }

    private func ended(_ serial: Int) {
        state.withLock { state in
            guard state.serial == serial else { return }
            state.playback = nil
            state.name = nil
        }
    }
}

import CALSA
import DoseTapCore
import Foundation
import Synchronization

/// The alarm's own sound path (#32): a WAV file written to an ALSA device from this process, through
/// libasound.so.2 (loaded at the first sound; `CALSA`). It needs nothing but the package's `Depends`: no
/// pw-play, paplay, sox or aplay. ALSA's "default" device is PipeWire or PulseAudio where they run
/// (pipewire-alsa, libasound2-plugins), else the first sound card.
///
/// The writes run on a thread of their own, without blocking on the device: a stop is heard within one
/// wait (100 ms), and a device that stops taking samples ends the play with an error instead of hanging it.
public enum AlsaPlayback {
    /// The name this path goes by in errors and logs.
    public static let name = "alsa"
    /// ALSA's buffer: long enough not to underrun on a loaded machine, short enough to stop at once.
    static let latencyMicroseconds: UInt32 = 200_000
    static let chunkFrames = 4_800
    static let waitMilliseconds: Int32 = 100

    /// The device opened when none is named.
    public static let defaultDevice = "default"

    /// libasound.so.2, loaded once; nil when it loaded, else why not.
    public static func loadProblem() -> String? {
        LazyLibrary.loadProblem { dosetap_alsa_load($0, $1) }
    }

    /// Why `device` (nil: "default") cannot be opened for playback now, in a few words, or nil when it can.
    /// Opened without blocking and closed at once: a device another program holds is "busy", not a wait.
    public static func probe(device: String?) -> SoundPlayerError? {
        if let problem = loadProblem() { return SoundPlayerError(player: name, reason: problem, isOutputProblem: true) }
        let rc = dosetap_alsa_probe(device ?? defaultDevice)
        return rc == 0 ? nil : failure(rc, device: device)
    }

    /// A stop request, set from any thread, seen by the writing thread between two writes.
    final class StopFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    /// Plays `file` (WAV) on `device` at `volume`; returns when it has played or was stopped (task
    /// cancellation). Throws a one-line `SoundPlayerError`.
    public static func play(file: String, device: String?, volume: Double) async throws -> PlaybackOutcome {
        let audio: WAVAudio
        do {
            audio = try WAVAudio(contentsOf: file)
        } catch {
            throw SoundPlayerError(player: name, reason: "\(error)")
        }
        let samples = audio.scaled(by: volume)
        let stop = StopFlag()
        let result = await withTaskCancellationHandler {
            await awaitOnOwnThread {
                write(samples, channels: audio.channels, rate: audio.sampleRate, device: device, stop: stop)
            }
        } onCancel: {
            stop.set()
        }
        return try result.get()
    }

    static func write(_ samples: [Int16], channels: Int, rate: Int, device: String?, stop: StopFlag)
        -> Result<PlaybackOutcome, SoundPlayerError> {
        if let problem = loadProblem() { return .failure(SoundPlayerError(player: name, reason: problem, isOutputProblem: true)) }
        if stop.isSet { return .success(.stopped) }
        var pcm: UnsafeMutableRawPointer?
        let opened = dosetap_alsa_open(&pcm, device ?? defaultDevice, UInt32(channels), UInt32(rate), latencyMicroseconds)
        guard opened == 0, let pcm else { return .failure(failure(opened, device: device)) }
        defer { dosetap_alsa_close(pcm) }

        let frames = samples.count / channels
        // However slow the device, the sound ends: its own length and 5 s more.
        let deadline = ContinuousClock.now + .seconds(Double(frames) / Double(rate) + 5)
        var written = 0
        while written < frames {
            if stop.isSet { return .success(.stopped) }
            guard ContinuousClock.now < deadline else {
                return .failure(SoundPlayerError(player: name, reason: "the sound device stopped taking samples", isOutputProblem: true))
            }
            let count = min(chunkFrames, frames - written)
            let n = samples.withUnsafeBufferPointer { buffer in
                dosetap_alsa_write(pcm, buffer.baseAddress! + written * channels, UInt(count))
            }
            if n < 0 { return .failure(failure(Int32(truncatingIfNeeded: n), device: device)) }
            if n == 0 {
                let waited = dosetap_alsa_wait(pcm, waitMilliseconds)
                if waited < 0 { return .failure(failure(waited, device: device)) }
            }
            written += n
        }
        // What is queued plays out; a stop drops it (the deferred close).
        while !stop.isSet {
            let queued = dosetap_alsa_delay(pcm)
            if queued <= 0 || ContinuousClock.now >= deadline { return .success(.completed) }
            let milliseconds = max(1, min(20, queued * 1000 / rate))
            usleep(UInt32(milliseconds * 1000))
        }
        return .success(.stopped)
    }

    /// An ALSA error code as the players' errors say it (`SoundPlayerError.reason`).
    static func failure(_ code: Int32, device: String?) -> SoundPlayerError {
        let missing = device.map { "no audio device named '\(DisplayText.escaped($0, maxLength: 80))'" }
        switch -code {
        case ENOENT, ENODEV, ENXIO:
            return SoundPlayerError(player: name, reason: missing ?? "no sound card found", isOutputProblem: true)
        case EBUSY, EAGAIN:
            return SoundPlayerError(player: name, reason: "the sound device is busy (another program holds it)", isOutputProblem: true)
        case EACCES, EPERM:
            return SoundPlayerError(player: name, reason: "no permission to use the sound device (is this user in the audio group?)",
                                    isOutputProblem: true)
        default:
            let text = String(cString: dosetap_alsa_strerror(code))
            return SoundPlayerError(player: name, reason: DisplayText.escaped(text, maxLength: 160), isOutputProblem: true)
        }
    }
}

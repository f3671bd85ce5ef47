import DoseTapCore
import Foundation
import Logging
import Subprocess
import Synchronization

/// One of the Debian command-line players DoseTap can drive, or its own ALSA path (`AlsaPlayback`, in this
/// process), with an optional output device.
public struct AudioPlayerCommand: Sendable, Equatable, Hashable, CustomStringConvertible {
    public enum Program: String, Sendable, Equatable, Hashable, CaseIterable {
        /// PipeWire (pipewire-bin).
        case pwPlay = "pw-play"
        /// PulseAudio or pipewire-pulse (pulseaudio-utils).
        case paplay
        /// SoX (sox; libsox-fmt-all for Ogg Vorbis).
        case sox = "play"
        /// ALSA (alsa-utils). WAV only.
        case aplay
        /// ALSA from this process (libasound2, a Depends of the package): no external player. WAV only.
        case alsa

        /// The external programs, looked up on `PATH`.
        public static let external: [Program] = [.pwPlay, .paplay, .sox, .aplay]
    }

    public var program: Program
    /// The absolute path of the executable.
    public var executable: String
    /// A PipeWire target, PulseAudio sink or ALSA device ("null", "default", "hw:1,0"); nil for the default.
    public var device: String?

    public init(program: Program, executable: String, device: String? = nil) {
        self.program = program
        self.executable = executable
        self.device = device
    }

    /// The program found on `PATH`, or nil. The built-in ALSA path is always there.
    public init?(program: Program, device: String? = nil,
                 searchPath: String = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") {
        if program == .alsa {
            self = .builtin(device: device)
            return
        }
        guard let executable = Self.which(program.rawValue, searchPath: searchPath) else { return nil }
        self.init(program: program, executable: executable, device: device)
    }

    /// This process's own ALSA path (`AlsaPlayback`).
    public static func builtin(device: String? = nil) -> AudioPlayerCommand {
        AudioPlayerCommand(program: .alsa, executable: "libasound.so.2", device: device)
    }

    /// Every player on `PATH`, in preference order — pw-play, paplay, play (sox), aplay: they talk to the
    /// session's sound server and read Ogg and FLAC too — and last, always, the built-in ALSA path, so a
    /// machine with none of them still plays the alarm's WAV sounds (the built-in beep among them).
    public static func detect(device: String? = nil,
                              searchPath: String = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") -> [AudioPlayerCommand] {
        Program.external.compactMap { AudioPlayerCommand(program: $0, device: device, searchPath: searchPath) } + [.builtin(device: device)]
    }

    /// aplay and the built-in ALSA path read WAV only; the others read WAV, Ogg (Vorbis) and FLAC.
    public func canPlay(_ path: String) -> Bool {
        (program != .aplay && program != .alsa) || path.lowercased().hasSuffix(".wav")
    }

    /// Whether this is a program of its own (not the built-in ALSA path).
    public var isExternal: Bool { program != .alsa }

    /// The arguments and the extra environment for playing one file, at `volume` (0…1 of full scale; 1 adds
    /// no option). aplay has no volume option: it always plays at full scale.
    public func invocation(for file: String, volume: Double = 1) -> (arguments: [String], environment: [String: String]) {
        let level = volume.isFinite ? min(1, max(0, volume)) : 1
        let scaled = level < 1
        switch program {
        case .pwPlay:
            return ((device.map { ["--target", $0] } ?? []) + (scaled ? ["--volume", String(format: "%.3f", level)] : []) + [file], [:])
        case .paplay:
            // PulseAudio volumes: 65536 is 100 %.
            return ((device.map { ["--device=\($0)"] } ?? []) + (scaled ? ["--volume=\(Int((level * 65536).rounded()))"] : []) + [file], [:])
        case .sox:
            // `play` writes to $AUDIODEV through the $AUDIODRIVER driver; -v scales the samples.
            return (["-q"] + (scaled ? ["-v", String(format: "%.3f", level)] : []) + [file],
                    device.map { ["AUDIODRIVER": "alsa", "AUDIODEV": $0] } ?? [:])
        case .aplay:
            return (["-q"] + (device.map { ["-D", $0] } ?? []) + [file], [:])
        case .alsa:
            // Not a program: `AlsaPlayback` plays the file in this process.
            return ([file], [:])
        }
    }

    /// Whether this player can play softer than full scale (the alarm's rising volume).
    public var setsVolume: Bool { program != .aplay }

    public var description: String {
        (program == .alsa ? "alsa (built in)" : program.rawValue) + (device.map { " (device \($0))" } ?? "")
    }

    static func which(_ name: String, searchPath: String) -> String? {
        for dir in searchPath.split(separator: ":") where dir.hasPrefix("/") {
            let candidate = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

public struct SoundPlayerError: Error, Equatable, CustomStringConvertible {
    public var description: String
    /// For one player's failure: the player and its reason (the description is "player: reason").
    public var player: String?
    public var reason: String?
    /// Whether the output was the trouble (no device, no server, busy, no permission), not the file.
    public var isOutputProblem = false
    public init(_ description: String) { self.description = description }
    public init(player: String, reason: String, isOutputProblem: Bool = false) {
        self.description = "\(player): \(reason)"
        self.player = player
        self.reason = reason
        self.isOutputProblem = isOutputProblem
    }

    /// One player's failure from its exit status and its standard error.
    public init(player: String, status: TerminationStatus, standardError: String, device: String?) {
        let (reason, output) = Self.reason(status: status, standardError: standardError, device: device)
        self.init(player: player, reason: reason, isOutputProblem: output)
    }

    /// Every player's failure on one line, players with the same reason together ("play, aplay: no default
    /// audio output"), then how to choose another output.
    public static func combined(_ failures: [SoundPlayerError]) -> SoundPlayerError {
        var order: [String] = []
        var players: [String: [String]] = [:]
        for failure in failures {
            let reason = failure.reason ?? failure.description
            if players[reason] == nil { order.append(reason) }
            players[reason, default: []].append(failure.player ?? "")
        }
        let parts = order.map { reason in
            let names = players[reason, default: []].filter { !$0.isEmpty }
            return names.isEmpty ? reason : names.joined(separator: ", ") + ": " + reason
        }
        let hint = failures.contains(where: \.isOutputProblem) ? "; " + outputHint : ""
        return SoundPlayerError(parts.joined(separator: "; ") + hint)
    }

    /// Said after every player failed: how to pick another output.
    public static let outputHint = "choose another output with DOSETAP_AUDIO_DEVICE (a PipeWire target, PulseAudio sink or ALSA device: `aplay -L` lists them)"

    /// Why a player exited without playing, in a few words instead of its raw ALSA, PipeWire or PulseAudio
    /// text: the usual causes are recognised; anything else is the player's last line of text, trimmed of
    /// ALSA's `ALSA lib pcm.c:2666:(snd_pcm_open_noupdate)` source location.
    public static func reason(status: TerminationStatus, standardError: String, device: String?) -> (String, outputProblem: Bool) {
        let text = standardError.lowercased()
        let missing = device.map { "no audio device named '\(DisplayText.escaped($0, maxLength: 80))'" } ?? "no default audio output"
        if text.contains("unknown pcm") || device != nil && (text.contains("no such device") || text.contains("no such file or directory")) {
            return (missing, true)
        }
        if text.contains("audio open error: no such file or directory") || text.contains("cannot find card") || text.contains("no soundcards found") {
            return ("no sound card found", true)
        }
        if text.contains("device or resource busy") { return ("the sound device is busy (another program holds it)", true) }
        if text.contains("permission denied") { return ("no permission to use the sound device (is this user in the audio group?)", true) }
        if text.contains("connection refused") || text.contains("host is down") || text.contains("can't connect")
            || text.contains("connection failure") || text.contains("failed to connect") {
            return ("no sound server is running (PipeWire or PulseAudio)", true)
        }
        if text.contains("no such entity") || text.contains("no such sink") || text.contains("target not found") {
            return (missing, true)
        }
        let last = standardError.split(whereSeparator: \.isNewline).last.map {
            var line = $0.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("ALSA lib "), let end = line.range(of: ") ") { line = String(line[end.upperBound...]) }
            return DisplayText.escaped(line, maxLength: 160)
        }
        switch status {
        case .signaled(let signal): return ("stopped by signal \(signal)" + (last.map { " (\($0))" } ?? ""), false)
        case .exited(let code): return (last ?? "exited with status \(code)", false)
        }
    }
}

/// How a play ended.
public enum PlaybackOutcome: Sendable, Equatable {
    /// The player ran to the end and exited successfully.
    case completed
    /// `stop()`, a newer `play`, or cancellation ended it.
    case stopped
}

/// Plays sound files through a real audio path: a Debian player run with swift-subprocess (not
/// Foundation's `Process`, whose children inherit blocked signals and can ignore SIGTERM), or this
/// process's own ALSA path (`AlsaPlayback`) where no player is installed or every one failed.
///
/// A file goes to the first player that reads its format; if that player fails (pw-play installed but no
/// PipeWire running, say), the next one is tried. One sound at a time: a new `play` stops the one
/// playing and waits for its player to exit before it starts. `stop()` sends SIGTERM, then SIGKILL after
/// the grace period (500 ms). `play` returns when the sound ended or was stopped; stopping (and
/// cancelling the calling task) is not an error. When every player fails (a broken file, no audio
/// device) `play` throws a one-line `SoundPlayerError`. The built-in beep is regenerated if its cache
/// file has gone.
public final class SubprocessSoundPlayer: SoundPlayer, Sendable {
    /// Tried in order: the first that can read a file's format plays it, the next if that one fails.
    public let players: [AudioPlayerCommand]
    /// SIGTERM first, SIGKILL this long after.
    public let gracePeriod: Duration
    /// Where the built-in beep is regenerated when its file has gone (default `$XDG_CACHE_HOME/dosetap`).
    public let builtinBeepDirectory: String?
    private let logger: Logger
    private let current = Mutex<Task<PlaybackOutcome, any Error>?>(nil)

    /// Plays with the first of `players` that can play a file's format. Throws when the list is empty.
    public convenience init(players: [AudioPlayerCommand], gracePeriod: Duration = .milliseconds(500),
                            builtinBeepDirectory: String? = nil, logger: Logger = Logger(label: "dosetap.sound")) throws {
        guard !players.isEmpty else {
            throw SoundPlayerError("no audio player found: install pipewire-bin (pw-play), pulseaudio-utils (paplay), sox (play) or alsa-utils (aplay)")
        }
        self.init(checked: players, gracePeriod: gracePeriod, builtinBeepDirectory: builtinBeepDirectory, logger: logger)
    }

    /// One given player (for example sox on the ALSA "null" device in tests).
    public convenience init(player: AudioPlayerCommand, gracePeriod: Duration = .milliseconds(500),
                            builtinBeepDirectory: String? = nil, logger: Logger = Logger(label: "dosetap.sound")) {
        self.init(checked: [player], gracePeriod: gracePeriod, builtinBeepDirectory: builtinBeepDirectory, logger: logger)
    }

    private init(checked players: [AudioPlayerCommand], gracePeriod: Duration, builtinBeepDirectory: String?, logger: Logger) {
        self.players = players
        self.gracePeriod = gracePeriod
        self.builtinBeepDirectory = builtinBeepDirectory
        self.logger = logger
    }

    /// The players found on `PATH` (pw-play, paplay, play, aplay), then the built-in ALSA path, all on
    /// `device` when given.
    public convenience init(device: String? = nil, builtinBeepDirectory: String? = nil,
                            logger: Logger = Logger(label: "dosetap.sound")) {
        self.init(checked: AudioPlayerCommand.detect(device: device), gracePeriod: .milliseconds(500),
                  builtinBeepDirectory: builtinBeepDirectory, logger: logger)
    }

    /// True while a sound plays (or waits for the previous one to stop).
    public var isPlaying: Bool { current.withLock { $0 != nil } }

    public func play(_ sound: SoundInfo) async throws {
        _ = try await playReporting(sound)
    }

    public func play(_ sound: SoundInfo, volume: Double) async throws {
        _ = try await playReporting(sound, volume: volume)
    }

    /// Asks the playing sound to stop and returns at once; the player process ends within the grace
    /// period (the pending `play` returns when it has).
    public func stop() {
        current.withLock { $0?.cancel() }
    }

    /// Stops the playing sound and returns once its player process has exited (before a process exits,
    /// for example on Ctrl-C, so no player is left behind).
    public func stopAndWait() async {
        let task = current.withLock { slot -> Task<PlaybackOutcome, any Error>? in
            slot?.cancel()
            return slot
        }
        _ = await task?.result
    }

    /// Plays and says how it ended.
    public func playReporting(_ sound: SoundInfo, volume: Double = 1) async throws -> PlaybackOutcome {
        let path = sound.name == SoundInfo.builtinBeepName && !FileManager.default.isReadableFile(atPath: sound.path)
            ? try BuiltinBeep.sound(cacheDirectory: builtinBeepDirectory).path
            : sound.path
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SoundPlayerError("cannot play '\(sound.name)': \(path) is missing or unreadable")
        }
        let commands = players.filter { $0.canPlay(path) }
        guard !commands.isEmpty else {
            throw SoundPlayerError("cannot play '\(sound.name)': without pw-play, paplay or play only WAV files play (install pipewire-bin, pulseaudio-utils or sox)")
        }
        let grace = gracePeriod
        let logger = self.logger
        let task: Task<PlaybackOutcome, any Error> = current.withLock { slot in
            let previous = slot
            previous?.cancel()
            let next = Task {
                if let previous { _ = await previous.result }
                // A player that fails (pw-play installed but no PipeWire running) hands over to the next.
                var failures: [SoundPlayerError] = []
                for command in commands {
                    if Task.isCancelled { return PlaybackOutcome.stopped }
                    do {
                        return try await Self.run(command, file: path, volume: volume, grace: grace, logger: logger)
                    } catch let failure as SoundPlayerError {
                        // The next player may well play it: the whole story is in the error if none does.
                        logger.debug("player failed", metadata: ["player": "\(command)", "error": "\(failure)"])
                        failures.append(failure)
                    }
                }
                if Task.isCancelled { return PlaybackOutcome.stopped }
                throw SoundPlayerError.combined(failures)
            }
            slot = next
            return next
        }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        current.withLock { slot in
            if slot == task { slot = nil }
        }
        return try result.get()
    }

    static func run(_ command: AudioPlayerCommand, file: String, volume: Double = 1, grace: Duration,
                    logger: Logger) async throws -> PlaybackOutcome {
        if command.program == .alsa {
            logger.debug("playing", metadata: ["player": "\(command)", "file": "\(file)"])
            return try await AlsaPlayback.play(file: file, device: command.device, volume: volume)
        }
        let (arguments, extra) = command.invocation(for: file, volume: volume)
        var environment = Environment.inherit
        if !extra.isEmpty {
            var update: [Environment.Key: String?] = [:]
            for (key, value) in extra { update[Environment.Key(stringLiteral: key)] = value }
            environment = environment.updating(update)
        }
        var options = PlatformOptions()
        options.teardownSequence = [.gracefulShutDown(allowedDurationToNextStep: grace)]
        logger.debug("playing", metadata: ["player": "\(command)", "file": "\(file)"])
        let result: ExecutionResult<Void, DiscardedOutput, StringOutput<UTF8>>
        do {
            result = try await Subprocess.run(
                .path(.init(command.executable)), arguments: Arguments(arguments), environment: environment,
                platformOptions: options, input: .none, output: .discarded, error: .string(limit: 64 * 1024)
            )
        } catch {
            if Task.isCancelled { return .stopped }
            throw SoundPlayerError(player: command.program.rawValue, reason: "could not start: \(error)")
        }
        if Task.isCancelled { return .stopped }
        if result.terminationStatus.isSuccess { return .completed }
        throw SoundPlayerError(player: command.program.rawValue, status: result.terminationStatus,
                               standardError: result.standardError, device: command.device)
    }
}

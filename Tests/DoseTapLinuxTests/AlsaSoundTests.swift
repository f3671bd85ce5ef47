import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Glibc
import PropertyBased
import Testing

/// A WAV file's bytes, written by hand: `format` 1 PCM, 3 float, 0xFFFE extensible (`sub` its real format).
private func wav(format: Int = 1, sub: Int = 1, channels: Int = 1, rate: Int = 48_000, bits: Int = 16,
                 blockAlign: Int? = nil, data: [UInt8], claimedDataSize: Int? = nil, extraChunk: Bool = false) -> Data {
    var out = [UInt8]()
    func u16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
    func u32(_ v: Int) { u16(v & 0xFFFF); u16((v >> 16) & 0xFFFF) }
    out += Array("RIFF".utf8); u32(0); out += Array("WAVE".utf8)
    if extraChunk {
        // A LIST chunk of odd length (padded), before the format: readers must skip it.
        out += Array("LIST".utf8); u32(3); out += [1, 2, 3, 0]
    }
    let align = blockAlign ?? channels * bits / 8
    out += Array("fmt ".utf8); u32(format == 0xFFFE ? 40 : 16)
    u16(format); u16(channels); u32(rate); u32(rate * align); u16(align); u16(bits)
    if format == 0xFFFE {
        u16(22); u16(bits); u32(0)
        u16(sub); out += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }
    out += Array("data".utf8); u32(claimedDataSize ?? data.count); out += data
    return Data(out)
}

private func le16(_ values: [Int16]) -> [UInt8] { values.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] } }

@Suite("WAV decoding for the built-in ALSA path")
struct WAVAudioTests {
    @Test("the built-in beep decodes to its own samples: 300 ms of mono 16-bit at 48 kHz")
    func beep() throws {
        let audio = try WAVAudio(data: BuiltinBeep.wav)
        #expect(audio.channels == 1 && audio.sampleRate == 48_000 && audio.frames == 14_400)
        #expect(abs(audio.duration - 0.3) < 1e-9)
        let raw = BuiltinBeep.wav.subdata(in: 44..<BuiltinBeep.wav.count)
        #expect(le16(audio.samples) == [UInt8](raw))
        #expect(audio.samples.max()! > 16_000, "half of full scale, not silence")
    }

    @Test("8-, 16-, 24- and 32-bit PCM, float and WAVE_FORMAT_EXTENSIBLE all become the same 16-bit samples")
    func encodings() throws {
        let expected: [Int16] = [0, 16_384, -16_384, 32_767, -32_768]
        let u8 = try WAVAudio(data: wav(bits: 8, data: [128, 192, 64, 255, 0]))
        #expect(u8.samples == [0, 16_384, -16_384, 32_512, -32_768])
        let s16 = try WAVAudio(data: wav(data: le16(expected)))
        #expect(s16.samples == expected)
        let s24 = try WAVAudio(data: wav(bits: 24, data: expected.flatMap { [0x7F] + le16([$0]) }))
        #expect(s24.samples == expected)
        let s32 = try WAVAudio(data: wav(bits: 32, data: expected.flatMap { [0x00, 0x01] + le16([$0]) }))
        #expect(s32.samples == expected)
        let floats: [Float] = [0, 0.5, -0.5, 1, -1]
        let f32 = try WAVAudio(data: wav(format: 3, bits: 32, data: floats.flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) }))
        #expect(f32.samples == [0, 16_384, -16_384, 32_767, -32_767])
        let f64 = try WAVAudio(data: wav(format: 3, bits: 64, data: [Double.nan, 2, -7].flatMap { withUnsafeBytes(of: $0.bitPattern.littleEndian, Array.init) }))
        #expect(f64.samples == [0, 32_767, -32_767], "NaN is silence; beyond full scale is full scale")
        let extensible = try WAVAudio(data: wav(format: 0xFFFE, sub: 1, channels: 2, data: le16(expected + [7])))
        #expect(extensible.channels == 2 && extensible.frames == 3 && extensible.samples == expected + [7])
        let skipped = try WAVAudio(data: wav(data: le16(expected), extraChunk: true))
        #expect(skipped.samples == expected)
    }

    @Test("a data chunk claiming more than the file holds plays what is there; half a frame is dropped")
    func truncated() throws {
        let audio = try WAVAudio(data: wav(channels: 2, data: le16([1, 2, 3, 4, 5]), claimedDataSize: 1_000_000))
        #expect(audio.frames == 2 && audio.samples == [1, 2, 3, 4])
    }

    @Test("broken and unsupported files are one-line errors", arguments: [
        (Data("RIFX....WAVE".utf8), "not a WAV file"),
        (Data(), "not a WAV file"),
        (wav(format: 7, bits: 8, data: [1, 2]), "not PCM or float"),
        (wav(format: 0xFFFE, sub: 2, bits: 16, data: [1, 2]), "not PCM or float"),
        (wav(bits: 12, data: [1, 2]), "not PCM or float"),
        (wav(channels: 0, data: [1, 2]), "0 channels"),
        (wav(channels: 9, data: [1, 2]), "9 channels"),
        (wav(rate: 0, data: [1, 2]), "sample rate 0"),
        (wav(rate: 10_000_000, data: [1, 2]), "sample rate 10000000"),
        (wav(blockAlign: 3, data: [1, 2]), "block size 3"),
        (Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEdata\u{2}\u{0}\u{0}\u{0}ab".utf8), "data comes before its format"),
        (Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8), "no format chunk"),
        (Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt \u{10}\u{0}\u{0}\u{0}\u{1}\u{0}".utf8), "format chunk is truncated"),
    ] as [(Data, String)])
    func refused(data: Data, message: String) {
        do {
            _ = try WAVAudio(data: data)
            Issue.record("decoded a broken file")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
            #expect(!"\(error)".contains("\n"))
        }
    }

    @Test("a file with a good header and no data chunk is refused; so is a file larger than the limit")
    func noData() throws {
        var bytes = [UInt8](wav(data: []))
        bytes.removeLast(8)
        #expect(throws: WAVAudio.DecodeError.self) { _ = try WAVAudio(data: Data(bytes)) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-huge-\(UUID().uuidString).wav").path
        defer { unlink(path) }
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        #expect(truncate(path, off_t(WAVAudio.maximumBytes + 1)) == 0)
        #expect(throws: WAVAudio.DecodeError.self) { _ = try WAVAudio(contentsOf: path) }
        #expect(throws: WAVAudio.DecodeError.self) { _ = try WAVAudio(contentsOf: path + ".missing") }
    }

    @Test("volume scales every sample; out-of-range and NaN volumes are clamped (NaN plays at full scale)")
    func volume() {
        let audio = WAVAudio(channels: 1, sampleRate: 8_000, samples: [32_767, -32_768, 100, 0])
        #expect(audio.scaled(by: 0.5) == [16_384, -16_384, 50, 0])
        #expect(audio.scaled(by: 0) == [0, 0, 0, 0])
        #expect(audio.scaled(by: 7) == audio.samples)
        #expect(audio.scaled(by: -1) == [0, 0, 0, 0])
        #expect(audio.scaled(by: .nan) == audio.samples)
    }

    @Test("any bytes at all: an error or whole frames, never a crash (property)")
    func anyBytes() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...255).array(of: 0...120), Gen.int(in: 0...3)) { tail, header in
            // Half the inputs start with a plausible header, so the fuzzing reaches the chunk walk.
            let prefixes: [[UInt8]] = [[], Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8), [UInt8](wav(data: [])), [UInt8](wav(channels: 2, bits: 24, data: []))]
            let bytes = prefixes[header] + tail.map(UInt8.init)
            if let audio = try? WAVAudio(data: Data(bytes)) {
                #expect(audio.channels >= 1 && audio.samples.count % audio.channels == 0)
            }
        }
    }
}

@Suite("The built-in ALSA path (libasound, no player program)", .serialized, .timeLimit(.minutes(1)))
struct AlsaPlaybackTests {
    final class Directory {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-alsa-\(UUID().uuidString)").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test("libasound.so.2 loads; ALSA's null device opens, a device that does not exist does not")
    func probe() {
        #expect(AlsaPlayback.loadProblem() == nil)
        #expect(AlsaPlayback.probe(device: "null") == nil)
        let missing = AlsaPlayback.probe(device: "no-such-device")
        #expect(missing?.reason == "no audio device named 'no-such-device'" && missing?.isOutputProblem == true, "\(String(describing: missing))")
        let escaped = AlsaPlayback.probe(device: "bad\u{1b}[2J")
        #expect(escaped?.reason == "no audio device named 'bad\\x1b[2J'")
    }

    @Test("the beep reaches ALSA's file sink sample for sample, and at half volume at half scale")
    func fileSink() async throws {
        let dir = try Directory()
        let beep = try BuiltinBeep.sound(cacheDirectory: dir.path)
        let full = dir.path + "/full.wav", half = dir.path + "/half.wav"
        #expect(try await AlsaPlayback.play(file: beep.path, device: "file:FILE=\(full),FORMAT=wav", volume: 1) == .completed)
        #expect(try await AlsaPlayback.play(file: beep.path, device: "file:FILE=\(half),FORMAT=wav", volume: 0.5) == .completed)
        let written = try WAVAudio(contentsOf: full)
        let original = try WAVAudio(data: BuiltinBeep.wav)
        #expect(written == original)
        #expect(try WAVAudio(contentsOf: half).samples == original.scaled(by: 0.5))
    }

    @Test("through the sound player with no program on PATH: played by the built-in path; a missing device is a one-line output error")
    func viaPlayer() async throws {
        let dir = try Directory()
        let beep = try BuiltinBeep.sound(cacheDirectory: dir.path)
        let sink = dir.path + "/sink.wav"
        let players = AudioPlayerCommand.detect(device: "file:FILE=\(sink),FORMAT=wav", searchPath: dir.path + "/no-bin")
        #expect(players == [.builtin(device: "file:FILE=\(sink),FORMAT=wav")])
        let player = try SubprocessSoundPlayer(players: players, builtinBeepDirectory: dir.path)
        #expect(try await player.playReporting(beep) == .completed)
        #expect(try WAVAudio(contentsOf: sink).frames == 14_400)

        let nowhere = SubprocessSoundPlayer(player: .builtin(device: "no-such-device"), builtinBeepDirectory: dir.path)
        await #expect {
            try await nowhere.play(beep)
        } throws: { error in
            "\(error)" == "alsa: no audio device named 'no-such-device'; " + SoundPlayerError.outputHint
        }
        // An Ogg sound is not for this path: said before anything is tried.
        let ogg = SoundInfo(name: "bell", theme: "t", path: dir.path + "/bell.oga")
        #expect(FileManager.default.createFile(atPath: ogg.path, contents: Data("OggS".utf8)))
        await #expect {
            try await player.play(ogg)
        } throws: { error in
            "\(error)".contains("without pw-play, paplay or play only WAV files play")
        }
        // A broken WAV file: the file's trouble, not the output's.
        let broken = dir.path + "/broken.wav"
        #expect(FileManager.default.createFile(atPath: broken, contents: Data("RIFF".utf8)))
        await #expect {
            try await player.play(SoundInfo(name: "broken", theme: "t", path: broken))
        } throws: { error in
            "\(error)".contains("not a WAV file") && !"\(error)".contains("DOSETAP_AUDIO_DEVICE")
        }
    }

    @Test("a play cancelled before it starts ends as stopped, and writes nothing")
    func cancelled() async throws {
        let dir = try Directory()
        let beep = try BuiltinBeep.sound(cacheDirectory: dir.path)
        let sink = dir.path + "/never.wav"
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await AlsaPlayback.play(file: beep.path, device: "file:FILE=\(sink),FORMAT=wav", volume: 1)
        }
        #expect(try await task.value == .stopped)
        #expect(!FileManager.default.fileExists(atPath: sink))
    }
}

@Suite("Whether the alarm can be heard (the cannot-play warning's rules)")
struct SoundCheckTests {
    typealias Machine = SoundCheck.Machine

    @Test("an output ALSA opens is enough, whatever else is missing")
    func alsaOpens() {
        #expect(SoundCheck.problem(Machine(cards: [], soundServer: false, externalPlayers: [], device: nil, alsaProblem: nil)) == nil)
        #expect(SoundCheck.problem(Machine(cards: [], soundServer: false, externalPlayers: [], device: "null", alsaProblem: nil)) == nil)
    }

    @Test("no card and no server: the warning, with the fix; a card or a server with a player: none")
    func noCard() throws {
        let bare = Machine(cards: [], soundServer: false, externalPlayers: ["play", "aplay"], device: nil, alsaProblem: "no sound card found")
        let problem = try #require(SoundCheck.problem(bare))
        #expect(problem.message.hasPrefix("This machine cannot play the alarm: it has no sound card (udev lists none) and no sound server"))
        #expect(problem.message.contains(". Fix: connect a speaker"))
        var server = bare
        server.soundServer = true
        #expect(SoundCheck.problem(server) == nil, "a Bluetooth speaker through PipeWire has no card")
        var card = bare
        card.cards = ["card0"]
        #expect(SoundCheck.problem(card) == nil, "the players may well reach the card")
        card.externalPlayers = []
        #expect(SoundCheck.problem(card)?.reason == "ALSA's default output cannot be opened: no sound card found")
    }

    @Test("a server but no player, and ALSA cannot reach it: install the ALSA plugin")
    func serverWithoutBridge() {
        let machine = Machine(cards: ["card0"], soundServer: true, externalPlayers: [], device: nil, alsaProblem: "the sound device is busy (another program holds it)")
        #expect(SoundCheck.problem(machine)?.fix.contains("pipewire-alsa") == true)
    }

    @Test("a device named in DOSETAP_AUDIO_DEVICE: ALSA's verdict counts only with no other player to take the name")
    func namedDevice() {
        var machine = Machine(cards: ["card0"], soundServer: true, externalPlayers: ["pw-play"], device: "bluez_output.x", alsaProblem: "no audio device named 'bluez_output.x'")
        #expect(SoundCheck.problem(machine) == nil)
        machine.externalPlayers = []
        #expect(SoundCheck.problem(machine)?.message
                == "This machine cannot play the alarm: the audio device 'bluez_output.x' (DOSETAP_AUDIO_DEVICE) cannot be opened: no audio device named 'bluez_output.x'. "
                + "Fix: set DOSETAP_AUDIO_DEVICE to a device `aplay -L` lists, or unset it to use the default output")
    }

    @Test("a PC speaker it may write to is a way to be heard; one it may not is named in the fix")
    func speaker() throws {
        var machine = Machine(cards: [], soundServer: false, externalPlayers: [], device: nil, alsaProblem: "no sound card found",
                              speaker: (devnode: "/dev/input/event3", writable: true))
        #expect(SoundCheck.problem(machine) == nil)
        machine.speaker = (devnode: "/dev/input/event3", writable: false)
        let problem = try #require(SoundCheck.problem(machine))
        #expect(problem.fix.hasSuffix("; or let this user beep the PC speaker (/dev/input/event3): install udev-rules/71-dosetap-beeper.rules"))
        machine.alsaProblem = nil
        #expect(SoundCheck.problem(machine) == nil, "a sound file plays: the speaker is not needed")
    }

    @Test("no permission: the audio group is the fix")
    func permission() {
        let machine = Machine(cards: ["card0"], soundServer: false, externalPlayers: [], device: nil,
                              alsaProblem: "no permission to use the sound device (is this user in the audio group?)")
        #expect(SoundCheck.problem(machine)?.fix.hasPrefix("add this user to the audio group") == true)
    }

    @Test("observed on this process: the named device, the players on PATH, a server's socket")
    func observe() throws {
        let runtime = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-runtime-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: runtime + "/pulse", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let quiet = SoundCheck.observe(environment: ["PATH": runtime, "DOSETAP_AUDIO_DEVICE": "null", "XDG_RUNTIME_DIR": runtime])
        #expect(quiet.device == "null" && quiet.alsaProblem == nil && quiet.externalPlayers.isEmpty && !quiet.soundServer)
        // A plain file is not a server's socket; a listening socket is.
        #expect(FileManager.default.createFile(atPath: runtime + "/pipewire-0", contents: nil))
        #expect(!SoundCheck.observe(environment: ["XDG_RUNTIME_DIR": runtime, "PATH": runtime]).soundServer)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = runtime + "/pulse/native"
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { destination in
            for (i, byte) in bytes.prefix(destination.count - 1).enumerated() { destination[i] = byte }
        }
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } } == 0)
        let served = SoundCheck.observe(environment: ["XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin", "DOSETAP_AUDIO_DEVICE": ""])
        #expect(served.soundServer && served.device == nil && served.externalPlayers.contains("play"))
    }
}

@Suite("The PC speaker's tone (EV_SND/SND_TONE)")
struct PCSpeakerTests {
    @Test("SND_TONE is bit 2 of capabilities/snd, in the last (lowest) word")
    func capability() {
        #expect(PCSpeaker.hasTone(sysfs: "6\n"))
        #expect(PCSpeaker.hasTone(sysfs: "4"))
        #expect(PCSpeaker.hasTone(sysfs: "0 4"))
        #expect(!PCSpeaker.hasTone(sysfs: "2"), "a bell alone is not a tone")
        #expect(!PCSpeaker.hasTone(sysfs: "4 0"))
        #expect(!PCSpeaker.hasTone(sysfs: ""))
        #expect(!PCSpeaker.hasTone(sysfs: "zz"))
    }

    @Test("a node it may not open: a one-line output error naming the udev rule")
    func notWritable() async throws {
        let speaker = PCSpeaker(devnode: "/nonexistent/event9", name: "PC Speaker")
        #expect(!speaker.isWritable)
        await #expect {
            try await speaker.beep(milliseconds: 10)
        } throws: { error in
            "\(error)" == "pc-speaker: cannot open /nonexistent/event9: No such file or directory"
        }
        #expect(speaker.description == "/nonexistent/event9 (\"PC Speaker\")")
        #expect(speaker.sound.name == "pc-speaker")
    }
}

extension UdevFixtures {
    @Suite("The PC speaker found through libudev under umockdev, and its tone written")
    struct PCSpeakerFixtureTests {
        /// The records of a node's file: (type, code, value) of each 24-byte `struct input_event` (x86_64, arm64).
        static func events(_ data: Data) -> [(UInt16, UInt16, Int32)] {
            let bytes = [UInt8](data)
            return stride(from: 0, to: bytes.count - 23, by: 24).map { at in
                func u16(_ i: Int) -> UInt16 { UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 }
                let value = UInt32(u16(at + 20)) | UInt32(u16(at + 22)) << 16
                return (u16(at + 16), u16(at + 18), Int32(bitPattern: value))
            }
        }

        @Test("the pcspkr device is found beside a keyboard; a beep writes SND_TONE 880, then SND_TONE 0")
        func finds() async throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("input/pc-speaker.umockdev"), encoding: .utf8))
            let udev = try UdevClient()
            let speaker = try #require(PCSpeaker.find(udev: udev))
            #expect(speaker == PCSpeaker(devnode: "/dev/input/event3", name: "PC Speaker"))
            #expect(speaker.isWritable)
            try await speaker.beep(frequency: 880, milliseconds: 40)
            // umockdev's node is a pty: the testbed's end reads what was written (without blocking: all is there).
            let fd = testbed.deviceFD("/dev/input/event3")
            try #require(fd >= 0)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var written = Data()
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                written.append(contentsOf: buffer[0..<n])
            }
            let events = Self.events(written)
            #expect(events.count == 2 && events[0] == (0x12, 0x02, 880) && events[1] == (0x12, 0x02, 0), "\(events)")
            withExtendedLifetime(testbed) {}
        }

        @Test("no tone device (a keyboard, a battery): none found")
        func none() throws {
            try #require(UmockdevTestbed.isPreloaded, "run the tests under umockdev-wrapper (make test)")
            let testbed = UmockdevTestbed()
            try testbed.add(try String(contentsOf: Fixtures.root.appendingPathComponent("power_supply/ac-online.umockdev"), encoding: .utf8))
            #expect(PCSpeaker.find(udev: try UdevClient()) == nil)
            withExtendedLifetime(testbed) {}
        }
    }
}

import DoseTapCore
import DoseTapLinux
import Foundation
import Glibc
import Subprocess
import Synchronization
import Testing

/// A temporary directory tree, removed at the end.
private final class TemporaryTree {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("dosetap-sounds-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    deinit {
        // Undo any chmod 000 first so the tree can be removed.
        if let e = FileManager.default.enumerator(atPath: root) {
            for case let p as String in e { chmod(root + "/" + p, 0o755) }
        }
        try? FileManager.default.removeItem(atPath: root)
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    func file(_ relative: String, _ text: String = "sound") throws {
        let p = path(relative)
        try FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: p, atomically: true, encoding: .utf8)
    }

    func directory(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    func link(_ relative: String, to target: String) throws {
        let p = path(relative)
        try FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: p, withDestinationPath: target)
    }
}

/// Wraps the real file system and fails chosen directories with chosen errnos, a number of times.
private final class FailingFileSystem: SoundFileSystem {
    let failures: Mutex<[String: (errno: Int32, remaining: Int)]>
    let reads = Mutex<[String: Int]>([:])

    init(_ failures: [String: (errno: Int32, remaining: Int)]) {
        self.failures = Mutex(failures)
    }

    func entries(of directory: String) throws(SoundFileSystemError) -> [SoundDirectoryEntry] {
        reads.withLock { $0[directory, default: 0] += 1 }
        let fail: Int32? = failures.withLock { f in
            guard let entry = f[directory], entry.remaining > 0 else { return nil }
            f[directory] = (entry.errno, entry.remaining - 1)
            return entry.errno
        }
        if let fail { throw SoundFileSystemError(path: directory, errno: fail) }
        return try LocalSoundFileSystem().entries(of: directory)
    }

    func text(of file: String) -> String? { LocalSoundFileSystem().text(of: file) }

    func readCount(_ directory: String) -> Int { reads.withLock { $0[directory] ?? 0 } }
}

/// The theme tree of the catalog tests:
///
///     home/sounds/              ($XDG_DATA_HOME/sounds)
///       bell.oga                  loose: theme "user", beats every theme
///       my-theme/alarm.wav        a theme without index.theme: plain files
///       freedesktop/stereo/complete.oga   the user's override of part of the freedesktop theme
///       notes.txt                 not a sound
///     sys1/sounds/              (first $XDG_DATA_DIRS entry)
///       child/   Inherits=parent, Directories=stereo; stereo/message.oga, stereo/dialog-warning.disabled
///       parent/  Inherits=freedesktop, Directories=stereo, 5.1 (5.1 missing); stereo/message.ogg,
///                stereo/alarm-clock-elapsed.wav, stereo/broken.oga (dangling link), stereo/readme.txt, loose.flac
///       empty-theme/ (empty)
///       loop-a/  Inherits=loop-b, Directories=stereo; stereo/loop-sound.oga
///       loop-b/  Inherits=loop-a
///     sys2/sounds/
///       freedesktop/  Directories=stereo; stereo/{bell,complete,dialog-warning,message,alarm-clock-elapsed,service-login}.oga,
///                     stereo/fr/bell.oga (localized: not listed)
///       unthemed.wav  loose in a system root: "unthemed"
private struct ThemeTree {
    let tree: TemporaryTree
    var locations: SoundThemeLocations { SoundThemeLocations(dataHome: tree.path("home"), dataDirs: [tree.path("sys1"), tree.path("sys2")]) }

    init() throws {
        let t = try TemporaryTree()
        tree = t
        try t.file("home/sounds/bell.oga")
        try t.file("home/sounds/notes.txt")
        try t.file("home/sounds/my-theme/alarm.wav")
        try t.file("home/sounds/freedesktop/stereo/complete.oga")

        try t.file("sys1/sounds/child/index.theme", "[Sound Theme]\nName=Child\nInherits=parent\nDirectories=stereo\n\n[stereo]\nOutputProfile=stereo\n")
        try t.file("sys1/sounds/child/stereo/message.oga")
        try t.file("sys1/sounds/child/stereo/dialog-warning.disabled")
        try t.file("sys1/sounds/parent/index.theme", "[Sound Theme]\nName=Parent\nComment=x\nInherits=freedesktop\nDirectories=stereo, 5.1\n\n[stereo]\nOutputProfile=stereo\n[5.1]\nOutputProfile=5.1\nDirectories=bogus\n")
        try t.file("sys1/sounds/parent/stereo/message.ogg")
        try t.file("sys1/sounds/parent/stereo/alarm-clock-elapsed.wav")
        try t.file("sys1/sounds/parent/stereo/readme.txt")
        try t.link("sys1/sounds/parent/stereo/broken.oga", to: t.path("nowhere/broken.oga"))
        try t.file("sys1/sounds/parent/loose.flac")
        try t.directory("sys1/sounds/empty-theme")
        try t.file("sys1/sounds/loop-a/index.theme", "[Sound Theme]\nName=A\nInherits=loop-b\nDirectories=stereo\n")
        try t.file("sys1/sounds/loop-a/stereo/loop-sound.oga")
        try t.file("sys1/sounds/loop-b/index.theme", "[Sound Theme]\nName=B\nInherits=loop-a\nDirectories=stereo\n")

        try t.file("sys2/sounds/freedesktop/index.theme", "[Sound Theme]\nName=Default\nDirectories=stereo\n\n[stereo]\nOutputProfile=stereo\n")
        for name in ["bell", "complete", "dialog-warning", "message", "alarm-clock-elapsed", "service-login"] {
            try t.file("sys2/sounds/freedesktop/stereo/\(name).oga")
        }
        try t.file("sys2/sounds/freedesktop/stereo/fr/bell.oga")
        try t.file("sys2/sounds/unthemed.wav")
    }

    /// The expected listing: name → (theme, path relative to the tree).
    static let expected: [(String, String, String)] = [
        ("alarm", "my-theme", "home/sounds/my-theme/alarm.wav"),
        ("alarm-clock-elapsed", "parent", "sys1/sounds/parent/stereo/alarm-clock-elapsed.wav"),
        ("bell", "user", "home/sounds/bell.oga"),
        ("complete", "freedesktop", "home/sounds/freedesktop/stereo/complete.oga"),
        ("loop-sound", "loop-a", "sys1/sounds/loop-a/stereo/loop-sound.oga"),
        ("loose", "parent", "sys1/sounds/parent/loose.flac"),
        ("message", "child", "sys1/sounds/child/stereo/message.oga"),
        ("service-login", "freedesktop", "sys2/sounds/freedesktop/stereo/service-login.oga"),
        ("unthemed", "unthemed", "sys2/sounds/unthemed.wav"),
    ]

    func expectedSounds(replacing changes: [String: (String, String)] = [:]) -> [SoundInfo] {
        Self.expected.map { name, theme, path in
            let (t, p) = changes[name] ?? (theme, path)
            return SoundInfo(name: name, theme: t, path: tree.path(p))
        }
    }
}

@Suite("Sounds: listing the theme sounds")
struct SoundCatalogTests {
    static let noSleep: @Sendable (Duration) -> Void = { _ in }

    @Test("inheritance, overrides, disabled, missing and empty parts, loose files: each name once, most specific wins")
    func themeTree() throws {
        let themes = try ThemeTree()
        let catalog = ThemeSoundCatalog(locations: themes.locations, sleep: Self.noSleep)
        let sounds = try catalog.list()
        #expect(sounds == themes.expectedSounds())
        #expect(!sounds.contains { $0.name == "dialog-warning" }, "child's .disabled hides freedesktop's dialog-warning")
        #expect(!sounds.contains { $0.name == "broken" || $0.name == "readme" || $0.name == "notes" })
        #expect(sounds.map(\.name) == sounds.map(\.name).sorted())
        #expect(Set(sounds.map(\.name)).count == sounds.count)
    }

    @Test("an unreadable theme directory (EACCES) is skipped; the parent's sound then shows through")
    func unreadableDirectory() throws {
        let themes = try ThemeTree()
        let fs = FailingFileSystem([themes.tree.path("sys1/sounds/child/stereo"): (EACCES, .max)])
        let sounds = try ThemeSoundCatalog(locations: themes.locations, fileSystem: fs, sleep: Self.noSleep).list()
        // message falls back to parent's .ogg, and dialog-warning is no longer disabled.
        var expected = themes.expectedSounds(replacing: ["message": ("parent", "sys1/sounds/parent/stereo/message.ogg")])
        expected.append(SoundInfo(name: "dialog-warning", theme: "freedesktop", path: themes.tree.path("sys2/sounds/freedesktop/stereo/dialog-warning.oga")))
        #expect(sounds == expected.sorted { $0.name < $1.name })
    }

    @Test("an unreadable or missing sounds root is skipped without an error or a retry")
    func unreadableRoot() throws {
        let themes = try ThemeTree()
        let sleeps = Mutex<[Duration]>([])
        let fs = FailingFileSystem([themes.tree.path("sys1/sounds"): (EACCES, .max)])
        var locations = themes.locations
        locations.dataDirs.insert(themes.tree.path("does-not-exist"), at: 0)
        let sounds = try ThemeSoundCatalog(locations: locations, fileSystem: fs, sleep: { d in sleeps.withLock { $0.append(d) } }).list()
        #expect(sounds.map(\.name) == ["alarm", "alarm-clock-elapsed", "bell", "complete", "dialog-warning", "message", "service-login", "unthemed"])
        #expect(sounds.first { $0.name == "message" }?.theme == "freedesktop")
        #expect(sleeps.withLock { $0 }.isEmpty)
        #expect(fs.readCount(themes.tree.path("sys1/sounds")) == 1)
    }

    @Test("chmod 000 on a theme directory: skipped for a normal user; root still reads it")
    func chmodZero() throws {
        let themes = try ThemeTree()
        let dir = themes.tree.path("sys1/sounds/child/stereo")
        #expect(chmod(dir, 0o000) == 0)
        defer { chmod(dir, 0o755) }
        let sounds = try ThemeSoundCatalog(locations: themes.locations, sleep: Self.noSleep).list()
        let message = sounds.first { $0.name == "message" }
        if geteuid() == 0 {
            // Root bypasses the permission bits (CAP_DAC_READ_SEARCH): the directory is readable.
            #expect(opendir(dir).map { closedir($0); return true } == true)
            #expect(message?.theme == "child")
        } else {
            #expect(message?.theme == "parent")
        }
    }

    @Test("no sounds anywhere: an empty list, not an error")
    func nothing() throws {
        let tree = try TemporaryTree()
        let locations = SoundThemeLocations(dataHome: tree.path("home"), dataDirs: [tree.path("none")])
        #expect(try ThemeSoundCatalog(locations: locations, sleep: Self.noSleep).list() == [])
        try tree.directory("home/sounds/empty")
        #expect(try ThemeSoundCatalog(locations: locations, sleep: Self.noSleep).list() == [])
    }

    @Test("an I/O error on a root is retried after 100, 200 and 400 ms; success on the third attempt")
    func retrySucceeds() throws {
        let themes = try ThemeTree()
        let root = themes.tree.path("sys2/sounds")
        let fs = FailingFileSystem([root: (EIO, 2)])
        let sleeps = Mutex<[Duration]>([])
        let catalog = ThemeSoundCatalog(locations: themes.locations, fileSystem: fs,
                                        sleep: { d in sleeps.withLock { $0.append(d) } })
        #expect(try catalog.list() == themes.expectedSounds())
        #expect(fs.readCount(root) == 3)
        #expect(sleeps.withLock { $0 } == [.milliseconds(100), .milliseconds(200)])
    }

    @Test("an I/O error that persists: 4 attempts, waits of 100, 200, 400 ms, then one clear line")
    func retryGivesUp() throws {
        let themes = try ThemeTree()
        let root = themes.tree.path("home/sounds")
        let fs = FailingFileSystem([root: (EIO, .max)])
        let sleeps = Mutex<[Duration]>([])
        let catalog = ThemeSoundCatalog(locations: themes.locations, fileSystem: fs,
                                        sleep: { d in sleeps.withLock { $0.append(d) } })
        let error = try #require(throws: SoundCatalogError.self) { try catalog.list() }
        #expect(error.description == "cannot list sounds: \(root): Input/output error (4 attempts)")
        #expect(fs.readCount(root) == 4)
        #expect(sleeps.withLock { $0 } == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
    }

    @Test("the default retry really waits (about 700 ms in all)")
    func retryRealDelays() throws {
        let themes = try ThemeTree()
        let fs = FailingFileSystem([themes.tree.path("home/sounds"): (EIO, .max)])
        let start = ContinuousClock.now
        #expect(throws: SoundCatalogError.self) {
            try ThemeSoundCatalog(locations: themes.locations, fileSystem: fs).list()
        }
        #expect(ContinuousClock.now - start >= .milliseconds(700))
    }

    @Test("the installed freedesktop theme is found in /usr/share/sounds")
    func systemTheme() throws {
        let tree = try TemporaryTree()
        let sounds = try ThemeSoundCatalog(locations: SoundThemeLocations(dataHome: tree.path("home"), dataDirs: ["/usr/share"])).list()
        let bell = try #require(sounds.first { $0.name == "bell" })
        #expect(bell == SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga"))
        #expect(sounds.contains { $0.name == "alarm-clock-elapsed" && $0.theme == "freedesktop" })
        #expect(sounds.contains { $0.name == "complete" })
    }

    @Test("with includeBuiltinBeep the beep is listed as theme \"builtin\"")
    func builtinListed() throws {
        let themes = try ThemeTree()
        let cache = themes.tree.path("cache")
        let catalog = ThemeSoundCatalog(locations: themes.locations, includeBuiltinBeep: true, builtinBeepDirectory: cache, sleep: Self.noSleep)
        let sounds = try catalog.list()
        #expect(sounds.contains(SoundInfo(name: "builtin-beep", theme: "builtin", path: cache + "/builtin-beep.wav")))
        #expect(sounds.count == ThemeTree.expected.count + 1)
        #expect(try catalog.sound(named: "message")?.theme == "child")
        #expect(try catalog.sound(named: "nope") == nil)
        #expect(try catalog.sound(named: "builtin-beep")?.theme == "builtin")
    }

    @Test("XDG locations: defaults, relative values ignored, trailing slashes trimmed")
    func locations() {
        let defaults = SoundThemeLocations(environment: ["HOME": "/home/ann"])
        #expect(defaults.dataHome == "/home/ann/.local/share")
        #expect(defaults.dataDirs == ["/usr/local/share", "/usr/share"])
        #expect(defaults.soundRoots == ["/home/ann/.local/share/sounds", "/usr/local/share/sounds", "/usr/share/sounds"])

        let custom = SoundThemeLocations(environment: ["HOME": "/home/ann", "XDG_DATA_HOME": "relative/x",
                                                       "XDG_DATA_DIRS": "/opt/share/::rel:/usr/share:/usr/share/"])
        #expect(custom.dataHome == "/home/ann/.local/share")
        #expect(custom.soundRoots == ["/home/ann/.local/share/sounds", "/opt/share/sounds", "/usr/share/sounds"])

        let xdg = SoundThemeLocations(environment: ["HOME": "/home/ann", "XDG_DATA_HOME": "/data"])
        #expect(xdg.soundRoots.first == "/data/sounds")
    }
}

@Suite("Sounds: the built-in beep")
struct BuiltinBeepTests {
    @Test("a 300 ms 880 Hz 16-bit mono WAV, written once to the cache directory")
    func beepFile() async throws {
        let tree = try TemporaryTree()
        let dir = tree.path("cache/dosetap")
        let sound = try BuiltinBeep.sound(cacheDirectory: dir)
        #expect(sound == SoundInfo(name: "builtin-beep", theme: "builtin", path: dir + "/builtin-beep.wav"))
        let data = try #require(FileManager.default.contents(atPath: sound.path))
        #expect(data == BuiltinBeep.wav)
        #expect(data.count == 28_844, "44-byte header + 14 400 samples of 2 bytes")
        #expect(String(decoding: data.prefix(4), as: UTF8.self) == "RIFF")
        #expect(String(decoding: data[8..<12], as: UTF8.self) == "WAVE")

        // sox agrees: 1 channel, 48 kHz, 16 bits, 0.3 s.
        func soxi(_ flag: String) async throws -> String {
            let r = try await Subprocess.run(.path("/usr/bin/soxi"), arguments: [flag, sound.path], output: .string(limit: 1024))
            return r.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try await soxi("-c") == "1")
        #expect(try await soxi("-r") == "48000")
        #expect(try await soxi("-b") == "16")
        #expect(Double(try await soxi("-D")) == 0.3)

        // Its loudest frequency is 880 Hz: count zero crossings (2 per period).
        let samples: [Int16] = data.dropFirst(44).withUnsafeBytes { raw in
            (0..<(raw.count / 2)).map { raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self) }
        }
        var crossings = 0
        for i in 1..<samples.count where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        #expect(abs(crossings - 2 * 264) <= 10, "880 Hz × 0.3 s = 264 periods")

        // Written once: a second call leaves the file alone; a damaged file is rewritten.
        let inode = try FileManager.default.attributesOfItem(atPath: sound.path)[.systemFileNumber] as? Int
        _ = try BuiltinBeep.sound(cacheDirectory: dir)
        #expect(try FileManager.default.attributesOfItem(atPath: sound.path)[.systemFileNumber] as? Int == inode)
        try Data("junk".utf8).write(to: URL(fileURLWithPath: sound.path))
        _ = try BuiltinBeep.sound(cacheDirectory: dir)
        #expect(FileManager.default.contents(atPath: sound.path) == BuiltinBeep.wav)
    }

    @Test("the cache directory comes from XDG_CACHE_HOME, else ~/.cache")
    func cacheDirectory() {
        #expect(BuiltinBeep.defaultCacheDirectory(environment: ["HOME": "/home/ann", "XDG_CACHE_HOME": "/var/cache/ann"]) == "/var/cache/ann/dosetap")
        #expect(BuiltinBeep.defaultCacheDirectory(environment: ["HOME": "/home/ann", "XDG_CACHE_HOME": "rel"]) == "/home/ann/.cache/dosetap")
    }
}

/// A FIFO that looks like an endless WAV file: a header, a little silence, then nothing — the player
/// blocks reading it until it is stopped. Opened read-write by the test so nothing blocks and no
/// SIGPIPE can happen.
private final class EndlessWAV {
    let path: String
    private let fd: Int32

    init(in tree: TemporaryTree) throws {
        path = tree.path("endless-\(UUID().uuidString).wav")
        guard mkfifo(path, 0o600) == 0 else { throw SoundPlayerError("mkfifo: \(String(cString: strerror(errno)))") }
        fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SoundPlayerError("open fifo: \(String(cString: strerror(errno)))") }
        var header = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { header.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { header.append(contentsOf: $0) } }
        header.append(contentsOf: Array("RIFF".utf8)); u32(0x7FFF_FFF0)
        header.append(contentsOf: Array("WAVEfmt ".utf8)); u32(16); u16(1); u16(1); u32(8000); u32(16000); u16(2); u16(16)
        header.append(contentsOf: Array("data".utf8)); u32(0x7FFF_FFC0)
        header.append(Data(count: 1600))
        _ = header.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { close(fd) }
}

/// Processes whose command line mentions `needle` (found through /proc).
private func processes(mentioning needle: String) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry in
        guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
        return String(decoding: data, as: UTF8.self).contains(needle) ? pid : nil
    }
}

private func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

@Suite("Sounds: playing through sox to the ALSA null device", .serialized, .timeLimit(.minutes(1)))
struct SoundPlayerTests {
    static let sox = AudioPlayerCommand(program: .sox, executable: "/usr/bin/play", device: "null")
    static let aplay = AudioPlayerCommand(program: .aplay, executable: "/usr/bin/aplay", device: "null")

    @Test("the built-in beep plays to completion")
    func beep() async throws {
        let tree = try TemporaryTree()
        let beep = try BuiltinBeep.sound(cacheDirectory: tree.path("cache"))
        let player = SubprocessSoundPlayer(player: Self.sox)
        #expect(try await player.playReporting(beep) == .completed)
        #expect(!player.isPlaying)
    }

    @Test("a freedesktop .oga plays to completion")
    func oga() async throws {
        let sound = SoundInfo(name: "complete", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/complete.oga")
        let player = SubprocessSoundPlayer(player: Self.sox)
        #expect(try await player.playReporting(sound) == .completed)
        try await player.play(sound)   // the port's entry point: returns after the end
    }

    @Test("the beep is regenerated when its cache file has gone")
    func beepRegenerated() async throws {
        let tree = try TemporaryTree()
        let gone = SoundInfo(name: SoundInfo.builtinBeepName, theme: "builtin", path: "/nonexistent/builtin-beep.wav")
        let player = SubprocessSoundPlayer(player: Self.sox, builtinBeepDirectory: tree.path("cache"))
        #expect(try await player.playReporting(gone) == .completed)
        #expect(FileManager.default.contents(atPath: tree.path("cache/builtin-beep.wav")) == BuiltinBeep.wav)
    }

    @Test("a broken file, a missing file: one-line errors")
    func failures() async throws {
        let tree = try TemporaryTree()
        try tree.file("bad.oga", "this is not ogg vorbis")
        let player = SubprocessSoundPlayer(player: Self.sox)
        let broken = try await #require(throws: SoundPlayerError.self) {
            try await player.play(SoundInfo(name: "bad", theme: "t", path: tree.path("bad.oga")))
        }
        #expect(broken.description.hasPrefix("play: "), "\(broken)")
        #expect(!broken.description.contains("DOSETAP_AUDIO_DEVICE"), "the file is the trouble, not the output: \(broken)")
        #expect(!broken.description.contains("\n"))
        let missing = try await #require(throws: SoundPlayerError.self) {
            try await player.play(SoundInfo(name: "gone", theme: "t", path: tree.path("gone.oga")))
        }
        #expect(missing.description == "cannot play 'gone': \(tree.path("gone.oga")) is missing or unreadable")
    }

    @Test("a player that fails hands over to the next; when all fail, both reasons in one line")
    func fallbackToNextPlayer() async throws {
        let tree = try TemporaryTree()
        try tree.file("bin/paplay", "#!/bin/sh\necho 'Connection failure: Connection refused' >&2\nexit 1\n")
        chmod(tree.path("bin/paplay"), 0o755)
        let broken = AudioPlayerCommand(program: .paplay, executable: tree.path("bin/paplay"))
        let beep = try BuiltinBeep.sound(cacheDirectory: tree.path("cache"))

        let player = try SubprocessSoundPlayer(players: [broken, Self.sox])
        #expect(try await player.playReporting(beep) == .completed)

        let error = try await #require(throws: SoundPlayerError.self) {
            try await SubprocessSoundPlayer(players: [broken, broken]).play(beep)
        }
        #expect(error.description == "paplay, paplay: no sound server is running (PipeWire or PulseAudio); " + SoundPlayerError.outputHint)
    }

    @Test("a player's failure in a few words, not its raw ALSA, PipeWire or PulseAudio text", arguments: [
        ("ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM default\naplay: main:831: audio open error: No such file or directory", nil, "no default audio output", true),
        ("aplay: main:831: audio open error: No such file or directory", "hw:7", "no audio device named 'hw:7'", true),
        ("aplay: main:831: audio open error: No such file or directory", nil, "no sound card found", true),
        ("aplay: main:831: audio open error: Device or resource busy", nil, "the sound device is busy (another program holds it)", true),
        ("Connection failure: Connection refused", nil, "no sound server is running (PipeWire or PulseAudio)", true),
        ("pw-play: can't connect: Host is down", nil, "no sound server is running (PipeWire or PulseAudio)", true),
        ("ALSA lib conf.c:5180:(snd_config_expand) Evaluate error: Permission denied", nil, "no permission to use the sound device (is this user in the audio group?)", true),
        ("play FAIL formats: can't open input file `x.oga': Ogg Vorbis header\u{1b}[31m", nil, "play FAIL formats: can't open input file `x.oga': Ogg Vorbis header\\x1b[31m", false),
        ("", nil, "exited with status 1", false),
    ] as [(String, String?, String, Bool)])
    func playerReasons(standardError: String, device: String?, reason: String, output: Bool) {
        let error = SoundPlayerError(player: "aplay", status: .exited(1), standardError: standardError, device: device)
        #expect(error.reason == reason)
        #expect(error.isOutputProblem == output)
        #expect(SoundPlayerError.combined([error]).description.contains("DOSETAP_AUDIO_DEVICE") == output)
    }

    @Test("aplay plays WAV only: the beep plays, an .oga is refused before any process starts")
    func aplayWAVOnly() async throws {
        let tree = try TemporaryTree()
        let player = SubprocessSoundPlayer(player: Self.aplay)
        #expect(try await player.playReporting(try BuiltinBeep.sound(cacheDirectory: tree.path("cache"))) == .completed)
        let error = try await #require(throws: SoundPlayerError.self) {
            try await player.play(SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga"))
        }
        #expect(error.description.contains("without pw-play, paplay or play only WAV files play"))

        // With sox after aplay, the .oga goes to sox.
        let both = try SubprocessSoundPlayer(players: [Self.aplay, Self.sox])
        #expect(try await both.playReporting(SoundInfo(name: "bell", theme: "freedesktop", path: "/usr/share/sounds/freedesktop/stereo/bell.oga")) == .completed)
    }

    @Test("stop() ends a long sound early: SIGTERM, then SIGKILL, and the player process is gone")
    func stopEndsLongSound() async throws {
        let tree = try TemporaryTree()
        let endless = try EndlessWAV(in: tree)
        let player = SubprocessSoundPlayer(player: Self.sox)
        let playing = Task { [path = endless.path] in try await player.playReporting(SoundInfo(name: "endless", theme: "t", path: path)) }
        #expect(try await waitUntil { !processes(mentioning: endless.path).isEmpty }, "sox started")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!processes(mentioning: endless.path).isEmpty, "still playing: the sound is long")
        #expect(player.isPlaying)

        let stopAt = ContinuousClock.now
        player.stop()
        #expect(try await playing.value == .stopped)
        #expect(ContinuousClock.now - stopAt < .seconds(5))
        #expect(processes(mentioning: endless.path).isEmpty)
        #expect(!player.isPlaying)
    }

    @Test("a second play() stops the first, which returns .stopped, and then plays to the end")
    func secondPlayStopsFirst() async throws {
        let tree = try TemporaryTree()
        let endless = try EndlessWAV(in: tree)
        let player = SubprocessSoundPlayer(player: Self.sox)
        let first = Task { [path = endless.path] in try await player.playReporting(SoundInfo(name: "endless", theme: "t", path: path)) }
        #expect(try await waitUntil { !processes(mentioning: endless.path).isEmpty }, "sox started")

        let beep = try BuiltinBeep.sound(cacheDirectory: tree.path("cache"))
        let second = try await player.playReporting(beep)
        #expect(second == .completed)
        #expect(try await first.value == .stopped)
        #expect(processes(mentioning: endless.path).isEmpty, "the first player was gone before the second ended")
    }

    @Test("stopAndWait() returns only once the player process is gone")
    func stopAndWait() async throws {
        let tree = try TemporaryTree()
        let endless = try EndlessWAV(in: tree)
        let player = SubprocessSoundPlayer(player: Self.sox)
        let playing = Task { [path = endless.path] in try await player.playReporting(SoundInfo(name: "endless", theme: "t", path: path)) }
        #expect(try await waitUntil { !processes(mentioning: endless.path).isEmpty }, "sox started")
        await player.stopAndWait()
        #expect(processes(mentioning: endless.path).isEmpty)
        #expect(try await playing.value == .stopped)
        await player.stopAndWait()   // nothing playing: returns at once
    }

    @Test("cancelling the playing task stops the sound")
    func cancellationStops() async throws {
        let tree = try TemporaryTree()
        let endless = try EndlessWAV(in: tree)
        let player = SubprocessSoundPlayer(player: Self.sox)
        let playing = Task { [path = endless.path] in try await player.playReporting(SoundInfo(name: "endless", theme: "t", path: path)) }
        #expect(try await waitUntil { !processes(mentioning: endless.path).isEmpty }, "sox started")
        playing.cancel()
        #expect(try await playing.value == .stopped)
        #expect(processes(mentioning: endless.path).isEmpty)
        #expect(!player.isPlaying)
    }
}

@Suite("Sounds: choosing the player")
struct SoundPlayerChoiceTests {
    @Test("each program's command line and environment, with and without a device")
    func invocations() {
        let file = "/s/bell.oga"
        #expect(AudioPlayerCommand(program: .pwPlay, executable: "/usr/bin/pw-play").invocation(for: file).arguments == [file])
        #expect(AudioPlayerCommand(program: .pwPlay, executable: "/usr/bin/pw-play", device: "alsa_output.x").invocation(for: file).arguments
                == ["--target", "alsa_output.x", file])
        #expect(AudioPlayerCommand(program: .paplay, executable: "/usr/bin/paplay", device: "sink1").invocation(for: file).arguments
                == ["--device=sink1", file])
        let sox = AudioPlayerCommand(program: .sox, executable: "/usr/bin/play", device: "null").invocation(for: file)
        #expect(sox.arguments == ["-q", file])
        #expect(sox.environment == ["AUDIODRIVER": "alsa", "AUDIODEV": "null"])
        #expect(AudioPlayerCommand(program: .sox, executable: "/usr/bin/play").invocation(for: file).environment == [:])
        #expect(AudioPlayerCommand(program: .aplay, executable: "/usr/bin/aplay", device: "null").invocation(for: "/s/a.wav").arguments
                == ["-q", "-D", "null", "/s/a.wav"])
        #expect(!AudioPlayerCommand(program: .aplay, executable: "/usr/bin/aplay").canPlay(file))
        #expect(AudioPlayerCommand(program: .aplay, executable: "/usr/bin/aplay").canPlay("/s/A.WAV"))
        #expect(AudioPlayerCommand(program: .paplay, executable: "/usr/bin/paplay").canPlay(file))
    }

    @Test("detection takes pw-play, paplay, play, aplay in that order, from PATH, then always the built-in ALSA path")
    func detection() throws {
        let tree = try TemporaryTree()
        for (dir, name) in [("a", "aplay"), ("b", "paplay"), ("b", "notaplayer"), ("c", "play")] {
            try tree.file("\(dir)/\(name)", "#!/bin/sh\n")
            chmod(tree.path("\(dir)/\(name)"), 0o755)
        }
        try tree.file("c/pw-play", "not executable")
        let found = AudioPlayerCommand.detect(device: "null", searchPath: [tree.path("a"), tree.path("b"), "relative", tree.path("c")].joined(separator: ":"))
        #expect(found == [
            AudioPlayerCommand(program: .paplay, executable: tree.path("b/paplay"), device: "null"),
            AudioPlayerCommand(program: .sox, executable: tree.path("c/play"), device: "null"),
            AudioPlayerCommand(program: .aplay, executable: tree.path("a/aplay"), device: "null"),
            .builtin(device: "null"),
        ])
        // Nothing on PATH: the alarm still has its own way out (#32).
        #expect(AudioPlayerCommand.detect(searchPath: tree.path("empty")) == [.builtin()])
        #expect(!AudioPlayerCommand.builtin().isExternal && AudioPlayerCommand.builtin().canPlay("/s/beep.wav")
                && !AudioPlayerCommand.builtin().canPlay("/s/bell.oga"))
        #expect(throws: SoundPlayerError.self) { _ = try SubprocessSoundPlayer(players: []) }
        // This machine has sox and aplay (the test dependencies).
        #expect(AudioPlayerCommand.detect(searchPath: "/usr/bin:/bin").map(\.program).contains(.sox))
    }
}

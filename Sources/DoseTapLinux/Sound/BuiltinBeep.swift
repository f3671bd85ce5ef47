import DoseTapCore
import Foundation

/// The sound DoseTap can always play: an 880 Hz sine, 300 ms, 16-bit mono PCM WAV at 48 kHz, made in
/// code (with 10 ms fades, so it does not click) and written once to a cache file.
public enum BuiltinBeep {
    public static let theme = "builtin"
    public static let fileName = "builtin-beep.wav"
    public static let frequency = 880.0
    public static let milliseconds = 300
    public static let sampleRate = 48_000

    /// The WAV bytes (44-byte RIFF header + samples).
    public static let wav: Data = makeWAV()

    /// `$XDG_CACHE_HOME/dosetap` (default `~/.cache/dosetap`).
    public static func defaultCacheDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/dosetap" }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return home + "/.cache/dosetap"
    }

    /// The beep as a sound, its file written when missing or different. Falls back to a per-user
    /// temporary directory when the cache directory cannot be written (a read-only home).
    public static func sound(cacheDirectory: String? = nil) throws -> SoundInfo {
        let primary = cacheDirectory ?? defaultCacheDirectory()
        do {
            return try write(in: primary)
        } catch {
            let fallback = NSTemporaryDirectory() + "dosetap-\(getuid())"
            do {
                return try write(in: fallback)
            } catch {
                throw SoundCatalogError("cannot write the built-in beep to \(primary) or \(fallback): \(error.localizedDescription)")
            }
        }
    }

    static func write(in directory: String) throws -> SoundInfo {
        let path = directory + "/" + fileName
        let info = SoundInfo(name: SoundInfo.builtinBeepName, theme: theme, path: path)
        if FileManager.default.contents(atPath: path) == wav { return info }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Atomic: a player started by another process never sees half a file.
        try wav.write(to: URL(fileURLWithPath: path), options: .atomic)
        return info
    }

    static func makeWAV() -> Data {
        let count = sampleRate * milliseconds / 1000
        let fade = sampleRate / 100
        var samples = Data(capacity: count * 2)
        for i in 0..<count {
            let envelope = min(1.0, Double(min(i, count - 1 - i)) / Double(fade))
            let value = 0.5 * envelope * sin(2 * Double.pi * frequency * Double(i) / Double(sampleRate))
            let sample = Int16((value * Double(Int16.max)).rounded())
            withUnsafeBytes(of: sample.littleEndian) { samples.append(contentsOf: $0) }
        }
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count))
        data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16)
        u16(1)                                   // PCM
        u16(1)                                   // mono
        u32(UInt32(sampleRate))
        u32(UInt32(sampleRate * 2))              // byte rate
        u16(2)                                   // block align
        u16(16)                                  // bits per sample
        data.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count))
        data.append(samples)
        return data
    }
}

import Foundation

/// A WAV file's samples as signed 16-bit, interleaved: what the in-process ALSA player (`AlsaPlayback`)
/// writes. Reads PCM at 8, 16, 24 and 32 bits, IEEE float at 32 and 64 bits, and the same inside
/// WAVE_FORMAT_EXTENSIBLE; anything else (ADPCM, µ-law, a broken header) is a one-line error. A data chunk
/// that claims more than the file holds is read as far as the file goes (a truncated download still plays).
public struct WAVAudio: Sendable, Equatable {
    public var channels: Int
    public var sampleRate: Int
    /// channels × frames values.
    public var samples: [Int16]

    public var frames: Int { channels == 0 ? 0 : samples.count / channels }
    public var duration: Double { sampleRate == 0 ? 0 : Double(frames) / Double(sampleRate) }

    /// Larger files are refused rather than read: an alarm sound is seconds long.
    public static let maximumBytes = 32 << 20

    public struct DecodeError: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public init(channels: Int, sampleRate: Int, samples: [Int16]) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.samples = samples
    }

    public init(contentsOf path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DecodeError("cannot open \(path)")
        }
        defer { try? handle.close() }
        let data = try handle.read(upToCount: Self.maximumBytes + 1) ?? Data()
        guard data.count <= Self.maximumBytes else {
            throw DecodeError("\(path) is larger than \(Self.maximumBytes >> 20) MiB")
        }
        self = try Self(data: data)
    }

    public init(data: Data) throws {
        let bytes = [UInt8](data)
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        func tag(_ at: Int) -> String { String(decoding: bytes[at..<at + 4], as: UTF8.self) }

        guard bytes.count >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else {
            throw DecodeError("not a WAV file (no RIFF/WAVE header)")
        }
        var format: (code: Int, channels: Int, rate: Int, blockAlign: Int, bits: Int)?
        var data: Range<Int>?
        var offset = 12
        while offset + 8 <= bytes.count, data == nil {
            let id = tag(offset)
            let size = u32(offset + 4)
            let body = offset + 8
            let end = body + min(size, bytes.count - body)
            switch id {
            case "fmt ":
                guard size >= 16, end - body >= 16 else { throw DecodeError("the WAV format chunk is truncated") }
                var code = u16(body)
                if code == 0xFFFE {
                    // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
                    guard size >= 40, end - body >= 40 else { throw DecodeError("the WAV format chunk is truncated") }
                    code = u16(body + 24)
                }
                format = (code, u16(body + 2), u32(body + 4), u16(body + 12), u16(body + 14))
            case "data":
                guard format != nil else { throw DecodeError("the WAV data comes before its format") }
                data = body..<end
            default:
                break
            }
            // Chunks are padded to an even length.
            offset = body + size + (size & 1)
        }
        guard let format else { throw DecodeError("the WAV file has no format chunk") }
        guard let data else { throw DecodeError("the WAV file has no data chunk") }
        guard (1...8).contains(format.channels) else { throw DecodeError("the WAV file has \(format.channels) channels (1 to 8 play)") }
        guard (1_000...384_000).contains(format.rate) else { throw DecodeError("the WAV sample rate \(format.rate) Hz is out of range") }
        let width: Int
        switch (format.code, format.bits) {
        case (1, 8): width = 1
        case (1, 16): width = 2
        case (1, 24): width = 3
        case (1, 32), (3, 32): width = 4
        case (3, 64): width = 8
        default:
            throw DecodeError("the WAV encoding (format \(format.code), \(format.bits) bits) is not PCM or float: convert it to 16-bit PCM")
        }
        guard format.blockAlign == width * format.channels else {
            throw DecodeError("the WAV block size \(format.blockAlign) does not match \(format.channels) channels of \(format.bits) bits")
        }
        let frameCount = data.count / format.blockAlign
        var samples = [Int16]()
        samples.reserveCapacity(frameCount * format.channels)
        var at = data.lowerBound
        for _ in 0..<(frameCount * format.channels) {
            let value: Int16
            switch (format.code, width) {
            case (1, 1): value = Int16(truncatingIfNeeded: (Int(bytes[at]) - 128) << 8)
            case (1, 2): value = Int16(bitPattern: UInt16(u16(at)))
            case (1, 3): value = Int16(bitPattern: UInt16(u16(at + 1)))
            case (1, 4): value = Int16(bitPattern: UInt16(u16(at + 2)))
            case (3, 4): value = Self.clamp(Double(Float(bitPattern: UInt32(u32(at)))))
            default: value = Self.clamp(Double(bitPattern: UInt64(u32(at)) | UInt64(u32(at + 4)) << 32))
            }
            samples.append(value)
            at += width
        }
        self.init(channels: format.channels, sampleRate: format.rate, samples: samples)
    }

    /// A float sample (−1…1) as 16 bits; NaN is silence, anything beyond full scale is full scale.
    static func clamp(_ value: Double) -> Int16 {
        guard !value.isNaN else { return 0 }
        let scaled = (min(1, max(-1, value)) * 32767).rounded()
        return Int16(scaled)
    }

    /// The samples at `volume` (0…1 of full scale).
    public func scaled(by volume: Double) -> [Int16] {
        let level = volume.isFinite ? min(1, max(0, volume)) : 1
        guard level < 1 else { return samples }
        return samples.map { Int16((Double($0) * level).rounded()) }
    }
}

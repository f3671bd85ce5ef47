internal import CLinuxInput

/// The force-feedback codes a device advertises (`EV_FF` bits: `FF_RUMBLE`, `FF_PERIODIC`, `FF_GAIN`, …).
///
/// Two sources, the same meaning: the `EVIOCGBIT(EV_FF)` ioctl on an open device (an array of native
/// `unsigned long` words), and the sysfs attribute `capabilities/ff` of the `inputN` device, which the
/// kernel prints as hexadecimal words, most significant first, separated by spaces, with leading zero
/// words left out (e.g. `"107030000 0"` on a 64-bit machine: FF_RUMBLE, FF_PERIODIC, FF_SQUARE,
/// FF_TRIANGLE, FF_SINE and FF_GAIN).
public struct ForceFeedbackCapabilities: Sendable, Equatable, Hashable, CustomStringConvertible {
    public private(set) var codes: Set<Int>

    public init(codes: some Sequence<Int>) {
        self.codes = Set(codes.filter { $0 >= 0 && $0 <= Int(FF_MAX) })
    }

    /// From `EVIOCGBIT` words: bit `n` is bit `n % width` of word `n / width`.
    public init(words: [UInt], bitsPerWord: Int = UInt.bitWidth) {
        var found: [Int] = []
        for (index, word) in words.enumerated() where word != 0 {
            for bit in 0..<bitsPerWord where word & (1 << UInt(bit)) != 0 {
                found.append(index * bitsPerWord + bit)
            }
        }
        self.init(codes: found)
    }

    /// Parses the sysfs text (`/sys/class/input/inputN/capabilities/ff`). `bitsPerWord` is the kernel's
    /// `long` (64 on x86_64 and arm64, 32 on 32-bit Raspberry Pi OS). Nil for text that is not a bitmap.
    public init?(sysfs text: String, bitsPerWord: Int = UInt.bitWidth) {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard !tokens.isEmpty, bitsPerWord > 0, bitsPerWord <= UInt.bitWidth else { return nil }
        var words: [UInt] = []
        for token in tokens.reversed() {
            guard token.count <= (bitsPerWord + 3) / 4, let word = UInt(token, radix: 16) else { return nil }
            if bitsPerWord < UInt.bitWidth, word >> UInt(bitsPerWord) != 0 { return nil }
            words.append(word)
        }
        self.init(words: words, bitsPerWord: bitsPerWord)
    }

    public func contains(_ code: Int32) -> Bool { codes.contains(Int(code)) }

    public var hasRumble: Bool { contains(FF_RUMBLE) }
    public var hasPeriodic: Bool { contains(FF_PERIODIC) }
    public var hasConstant: Bool { contains(FF_CONSTANT) }
    public var hasGain: Bool { contains(FF_GAIN) }

    /// A motor DoseTap can drive: rumble, or a periodic or constant effect.
    public var canVibrate: Bool { hasRumble || hasPeriodic || hasConstant }

    /// The effect DoseTap uploads: FF_RUMBLE when offered, else FF_PERIODIC (a sine), else FF_CONSTANT.
    public var preferredEffect: ForceFeedbackEffect.Kind? {
        if hasRumble { return .rumble }
        if hasPeriodic { return .periodic }
        if hasConstant { return .constant }
        return nil
    }

    static let names: [Int: String] = [
        Int(FF_RUMBLE): "rumble", Int(FF_PERIODIC): "periodic", Int(FF_CONSTANT): "constant",
        Int(FF_SPRING): "spring", Int(FF_FRICTION): "friction", Int(FF_DAMPER): "damper",
        Int(FF_INERTIA): "inertia", Int(FF_RAMP): "ramp", Int(FF_SQUARE): "square",
        Int(FF_TRIANGLE): "triangle", Int(FF_SINE): "sine", Int(FF_SAW_UP): "saw-up",
        Int(FF_SAW_DOWN): "saw-down", Int(FF_CUSTOM): "custom", Int(FF_GAIN): "gain",
        Int(FF_AUTOCENTER): "autocenter",
    ]

    /// "rumble, periodic, sine, gain" — the known names, in code order.
    public var description: String {
        let list = codes.sorted().map { Self.names[$0] ?? "0x" + String($0, radix: 16) }
        return list.isEmpty ? "none" : list.joined(separator: ", ")
    }
}

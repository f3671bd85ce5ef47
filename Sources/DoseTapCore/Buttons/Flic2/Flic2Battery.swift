/// A Flic 2's battery as a percentage. It runs on one CR2032 lithium coin cell, whose voltage stays near 3.0 V for
/// most of its life and falls fast at the end; the button reports the voltage (`Flic2Packets.batteryMillivolts`).
/// DoseTap's curve, piecewise linear through these points (mV → %), from the cell's discharge shape under the
/// button's light load:
///
///     ≥ 3000 → 100,  2900 → 80,  2800 → 60,  2700 → 40,  2600 → 20,  2500 → 10,  ≤ 2000 → 0
///
/// So the 20 % usage alert ("replace the button's battery") comes at about 2.6 V, weeks before the button stops.
public enum Flic2Battery {
    static let curve: [(millivolts: Int, percent: Int)] = [
        (2000, 0), (2500, 10), (2600, 20), (2700, 40), (2800, 60), (2900, 80), (3000, 100),
    ]

    public static func percent(millivolts: Int) -> Int {
        guard let first = curve.first, let last = curve.last else { return 0 }
        if millivolts <= first.millivolts { return 0 }
        if millivolts >= last.millivolts { return 100 }
        for (low, high) in zip(curve, curve.dropFirst()) where millivolts <= high.millivolts {
            let span = high.millivolts - low.millivolts
            return low.percent + ((millivolts - low.millivolts) * (high.percent - low.percent) + span / 2) / span
        }
        return 100
    }
}

extension BinaryInteger {
    /// The number in decimal with at least `width` characters, zero-padded as printf's `%0*d` writes it
    /// ("7" → "07"; -5 at width 4 → "-005"): `String(format:)` casts each argument at run time (a scan of every
    /// protocol conformance in the program the first time), a cost the one-shot commands pay on every start (#29).
    public func zeroPadded(_ width: Int) -> String {
        let digits = String(magnitude)
        let sign = self < 0 ? "-" : ""
        return sign + String(repeating: "0", count: Swift.max(0, width - sign.count - digits.count)) + digits
    }
}

// libFuzzer target: config.toml loading (`AgentConfiguration.parse`, TOMLKit underneath). The input is
// the file's text; seeds in Fuzz/corpus/config. A parse either fails with a one-line reason or gives
// values inside their documented ranges.
import DoseTapConfig
import DoseTapFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: FuzzInput(data, size).bytes, as: UTF8.self)
    do {
        let config = try AgentConfiguration.parse(text, source: "fuzz.toml")
        fuzzCheck(AgentConfiguration.pollRange.contains(config.pollSeconds), "poll_seconds \(config.pollSeconds) out of range")
    } catch {
        fuzzCheck(!error.description.contains("\n"), "a configuration error is one line: \(error.description)")
    }
    return 0
}

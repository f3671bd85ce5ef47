import DoseTapCore
import DoseTapTesting
import Foundation
import Testing

@Suite("Exports: iCalendar text, the agent's log lines, anonymising, log CSV")
struct ExportTextTests {
    let ny = TimeZone(identifier: "America/New_York")!

    // MARK: iCalendar

    @Test("TEXT escaping: backslash, semicolon, comma, line breaks; user text shows controls as escapes")
    func escaping() {
        #expect(ICalendar.text(#"a\b;c,d"# + "\ne\r\nf") == #"a\\b\;c\,d\ne\nf"#)
        #expect(ICalendar.userText("Wake\u{1b}[31m, now\u{202e}") == #"Wake\\x1b[31m\, now\\u{202e}"#)
        #expect(!ICalendar.userText("bell\u{7}").unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
    }

    @Test("folding at 75 octets: continuation lines start with a space, no UTF-8 sequence is cut")
    func folding() {
        let line = "SUMMARY:" + String(repeating: "é", count: 60) + String(repeating: "x", count: 50) + "💊💊💊"
        let folded = ICalendar.fold(line)
        let lines = folded.components(separatedBy: "\r\n")
        #expect(lines.count > 1)
        for (i, part) in lines.enumerated() {
            #expect(part.utf8.count <= 75)
            if i > 0 { #expect(part.hasPrefix(" ")) }
        }
        // Unfolding gives the line back.
        #expect(folded.replacingOccurrences(of: "\r\n ", with: "") == line)
        #expect(ICalendar.fold("SHORT:1") == "SHORT:1")
    }

    @Test("durations")
    func durations() {
        #expect(ICalendar.duration(0) == "PT0S")
        #expect(ICalendar.duration(15 * 60) == "PT15M")
        #expect(ICalendar.duration(-150 * 60) == "-PT2H30M")
        #expect(ICalendar.duration(3601) == "PT1H1S")
    }

    @Test("VTIMEZONE over a DST change: the offset in force with its real onset, then the change")
    func timeZone() {
        // 2026-10-30 to 2026-11-05 in New York: EDT until 2026-11-01 06:00 UTC, then EST.
        let from = localDate("2026-10-30 12:00:00", ny)
        let to = localDate("2026-11-05 12:00:00", ny)
        let document = ICalendar.document([], timeZone: ny, stamp: from)
        #expect(document.contains("TZID:America/New_York\r\n"))
        let observances = ICalendar.observances(ny, from: from, to: to)
        #expect(observances.count == 2)
        #expect(observances[0].daylight && observances[0].to == -4 * 3600 && observances[0].from == -5 * 3600)
        #expect(!observances[1].daylight && observances[1].from == -4 * 3600 && observances[1].to == -5 * 3600)
        let lines = ICalendar.timeZoneLines(ny, tzid: "America/New_York", from: from, to: to)
        // The onsets as local times in the offset before them: 2026-03-08 02:00 and 2026-11-01 02:00.
        #expect(lines.contains("DTSTART:20260308T020000"))
        #expect(lines.contains("DTSTART:20261101T020000"))
        #expect(lines.contains("TZOFFSETFROM:-0400") && lines.contains("TZOFFSETTO:-0500"))
        // A zone without DST: one STANDARD from 1970.
        let fixed = ICalendar.timeZoneLines(TimeZone(secondsFromGMT: 19800)!, tzid: "GMT+0530", from: from, to: to)
        #expect(fixed.contains("DTSTART:19700101T000000") && fixed.contains("TZOFFSETTO:+0530"))
    }

    @Test("local times with TZID; the second 01:30 of a fall-back night in UTC (a TZID time means the first)")
    func localTimes() {
        let first = localDate("2026-11-01 00:30:00", ny).addingTimeInterval(3600) // 01:30 EDT
        let second = first.addingTimeInterval(3600)                              // 01:30 EST
        #expect(ICalendar.dateTime(first, ny, "America/New_York") == ";TZID=America/New_York:20261101T013000")
        #expect(ICalendar.dateTime(second, ny, "America/New_York") == ":20261101T063000Z")
        #expect(ICalendar.dateTime(localDate("2026-11-02 06:30:00", ny), ny, "America/New_York") == ";TZID=America/New_York:20261102T063000")
    }

    @Test("a whole document: CRLF only, every line at most 75 octets, VEVENT with VALARM")
    func document() {
        let start = localDate("2026-11-24 06:30:00", ny)
        let event = ICalendar.Event(uid: "alarm-1-x@dosetap", start: start, end: start.addingTimeInterval(600),
                                    summary: "Alarm: " + String(repeating: "Work, gym; \\ ", count: 10), description: "line1\nline2",
                                    reminders: [ICalendar.Reminder(offset: 0, text: "Alarm 06:30")])
        let text = ICalendar.document([event], timeZone: ny, stamp: start)
        #expect(text.hasPrefix("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"))
        #expect(text.hasSuffix("END:VCALENDAR\r\n"))
        let bytes = Array(text.utf8)
        for (i, b) in bytes.enumerated() where b == UInt8(ascii: "\n") { #expect(i > 0 && bytes[i - 1] == UInt8(ascii: "\r")) }
        for line in text.components(separatedBy: "\r\n") { #expect(line.utf8.count <= 75) }
        #expect(text.contains("DTSTART;TZID=America/New_York:20261124T063000\r\n"))
        #expect(text.contains("BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:Alarm 06:30\r\nTRIGGER:PT0S\r\nEND:VALARM\r\n"))
    }

    // MARK: The agent's log lines

    @Test("swift-log's StreamLogHandler lines: time, level, metadata, message")
    func logLines() throws {
        let r = try #require(AgentLogLine.parse("2026-11-24T07:12:51+0100 warning dosetap.agent: button=Bedside remote level=80 [DoseTapAgent] iTag battery low [really]"))
        #expect(r.time == ISO8601DateFormatter().date(from: "2026-11-24T06:12:51Z"))
        #expect(r.level == "warning")
        #expect(r.message == "iTag battery low [really]")
        #expect(r.metadata == [.init("button", "Bedside remote"), .init("level", "80")])
        let plain = try #require(AgentLogLine.parse("2026-11-24T07:12:51+0000 info dosetap.agent: [DoseTapAgent] started"))
        #expect(plain.metadata.isEmpty && plain.message == "started")
        #expect(AgentLogLine.timestamp("2026-11-24T07:12:51+0000") == AgentLogLine.timestamp("2026-11-24T08:12:51+0100"))
        #expect(AgentLogLine.timestamp("2028-02-29T23:59:59-0130") == ISO8601DateFormatter().date(from: "2028-03-01T01:29:59Z"))
        #expect(AgentLogLine.timestamp("2027-02-29T00:00:00+0000") == nil)
        #expect(AgentLogLine.timestamp("1969-12-31T23:59:59+0000") == Date(timeIntervalSince1970: -1))
        #expect(LogCSV.time(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        #expect(LogCSV.time(ISO8601DateFormatter().date(from: "2000-02-29T12:34:56Z")!) == "2000-02-29T12:34:56Z")
        #expect(AgentLogLine.parse("Started DoseTap agent.") == nil)
        #expect(AgentLogLine.parse("2026-13-24T07:12:51+0000 info x: [M] y") == nil)
        #expect(AgentLogLine.parse("2026-11-24T07:12:51+0000 loud x: [M] y") == nil)
    }

    // MARK: Anonymising

    /// A stand-in for the keyed hash: stable and distinct per value (FNV-1a).
    static func fakeHash(_ domain: String, _ value: String) -> String {
        String(format: "%08x", (domain + "|" + value).utf8.reduce(UInt32(2_166_136_261)) { ($0 ^ UInt32($1)) &* 16_777_619 })
    }

    static let anonymizer = LogAnonymizer(buttonNames: ["Bedside", "Mum's button", "a"]) { fakeHash($0, $1) }

    @Test("addresses in every spelling become one stable hash; look-alikes too; nothing of the address is left")
    func addresses() {
        let a = Self.anonymizer
        let canonical = a.clean("button A4:C1:38:8D:18:B2 pressed")
        #expect(!canonical.contains("A4:C1") && canonical.contains("bt-"))
        let token = canonical.split(separator: " ")[1]
        for spelling in ["a4:c1:38:8d:18:b2", "A4-C1-38-8D-18-B2", "/org/bluez/hci0/dev_A4_C1_38_8D_18_B2",
                         "Ａ４：Ｃ１：３８：８Ｄ：１８：Ｂ２", "A٤:C1:38:8D:18:B2"] {
            let out = a.clean("x \(spelling) y")
            #expect(out.contains(token), "\(spelling) → \(out)")
            #expect(!out.contains("8D") && !out.lowercased().contains("8d:18"), "\(out)")
        }
        #expect(a.clean("FF:FF:FF:FF:FF:FF and 00:00:00:00:00:00").contains("bt-"))
        // A longer hex run is not an address (it is left to the key rule or kept).
        #expect(a.clean("id 12:34:56:78:9A:BC:DE").contains("12:34"))
    }

    @Test("key material never appears: 32 hex digits, separated pairs, whatever follows bindkey; bindkey metadata dropped")
    func keys() {
        let a = Self.anonymizer
        let key = "231d39c1d7cc1ab1aee224f7ec1ad4c4"
        for line in ["added bindkey=\(key)", "key \(key.uppercased())", "k=\"\(key)\"",
                     "bindkey: 231D39C1-not-hex", "pairs 23:1d:39:c1:d7:cc:1a:b1:ae:e2:24:f7:ec:1a:d4:c4",
                     "full ２３１ｄ３９ｃ１ｄ７ｃｃ１ａｂ１ａｅｅ２２４ｆ７ｅｃ１ａｄ４ｃ４"] {
            let out = a.clean(line)
            #expect(!out.lowercased().contains("231d39") && !out.contains("d4:c4") && !out.contains("２３１"), "\(line) → \(out)")
        }
        let record = a.clean(LogRecord(time: Date(), level: "info", message: "saved",
                                       metadata: [.init("bindkey", key), .init("Bindkey.new", "x"), .init("level", "3")]))
        #expect(record.metadata == [.init("level", "3")])
        // A UUID (a dose event's id) is kept: it is not a key.
        #expect(a.clean("event 2f1c3b4a-1111-4222-8333-444455556666").contains("2f1c3b4a-1111"))
    }

    @Test("dose amounts never appear")
    func amounts() {
        let a = Self.anonymizer
        for line in ["dose 1 4.5 g recorded", "took 4,5g", "2.25 grams", #"settings {"dose1Grams":4.5,"dose2Grams":3.75}"#,
                     "dose2Grams=3.75", "amount: 4.5"] {
            let out = a.clean(line)
            #expect(!out.contains("4.5") && !out.contains("4,5") && !out.contains("3.75") && !out.contains("2.25"), "\(line) → \(out)")
        }
        #expect(a.clean("battery 80% at 4.5 GB free").contains("4.5 GB"))
        let record = a.clean(LogRecord(time: nil, level: "info", message: "m", metadata: [.init("dose1Grams", "4.5"), .init("amount", "2")]))
        #expect(record.metadata.isEmpty)
    }

    @Test("button names become hashes as whole words, any case; button metadata always hashed")
    func names() {
        let a = Self.anonymizer
        let out = a.clean("bedside pressed; Mum's button battery 20%; Bedsidelamp stays; a b c")
        #expect(!out.lowercased().contains("bedside pressed") && !out.contains("Mum's"))
        #expect(out.contains("Bedsidelamp"))
        #expect(out.hasSuffix("Bedsidelamp stays; button-\(Self.fakeHash("button", "a")) b c"), "\(out)")
        #expect(out.hasPrefix("button-\(Self.fakeHash("button", "Bedside")) pressed; button-\(Self.fakeHash("button", "Mum's button")) battery"))
        // The name "a" never reaches into a hash another pass wrote.
        let mixed = a.clean("a A4:C1:38:8D:18:B2 a")
        #expect(mixed.hasPrefix("button-") && mixed.contains(" bt-"))
        // A default name (kind and the address's last two bytes), even of a button no longer added.
        #expect(a.clean("press from bthome-18B2.") == "press from button-\(Self.fakeHash("button", "bthome-18B2")).")
        #expect(a.clean("ITAG-18b2") == "button-\(Self.fakeHash("button", "itag-18B2"))")
        #expect(a.clean("xbthome-18B2 stays").hasPrefix("xbthome-18B2"))
        let record = a.clean(LogRecord(time: nil, level: "info", message: "m", metadata: [.init("button", "Removed Long Ago")]))
        #expect(record.metadata.count == 1 && record.metadata[0].value.hasPrefix("button-") && !record.metadata[0].value.contains("Removed"))
    }

    // MARK: CSV

    @Test("log CSV: header, UTC times, RFC 4180 quoting, formula guard, control characters escaped")
    func csv() {
        let t = ISO8601DateFormatter().date(from: "2026-11-24T06:12:51Z")!
        let doc = LogCSV.document([
            LogRecord(time: t, level: "info", message: "=cmd|' /C calc'!A0", metadata: [.init("k", "+1")]),
            LogRecord(time: t, level: "error", message: "say \"hi\", then\nbreak\u{1b}", metadata: []),
            LogRecord(time: t, level: "info", message: "@SUM(1)", metadata: [.init("", "-2")]),
            LogRecord(time: t, level: "info", message: "＝1+1", metadata: []),
        ])
        let lines = doc.components(separatedBy: "\r\n")
        #expect(lines[0] == "time,level,message,metadata")
        #expect(lines[1] == "2026-11-24T06:12:51Z,info,'=cmd|' /C calc'!A0,k=+1")
        #expect(lines[2] == #"2026-11-24T06:12:51Z,error,"say ""hi"", then\nbreak\x1b","#)
        #expect(lines[3].hasSuffix(",'@SUM(1),'-2"))
        #expect(lines[4].contains(",'＝1+1,"))
        #expect(!doc.unicodeScalars.contains { $0.value == 0x1b })
    }
}

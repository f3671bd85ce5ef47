import DoseTapCore
import Foundation
import Testing

@Suite("Backup targets and the cascade's schedule (#12)")
struct BackupTargetTests {
    @Test("device, push and phone targets: stored form, display name, what the preview says")
    func parse() throws {
        let device = try BackupTarget(parsing: "device:bedroom-pi")
        #expect(device == .device("bedroom-pi") && device.displayName == "bedroom-pi" && device.action == "Alarm on bedroom-pi")
        let push = try BackupTarget(parsing: "push:https://ntfy.sh/jen")
        #expect(push.description == "push:https://ntfy.sh/jen" && push.displayName == "jen" && push.action == "Alarm on jen")
        let call = try BackupTarget(parsing: "phone:5551234567")
        #expect(call.description == "phone:+15551234567" && call.displayName == "(555) 123-4567" && call.action == "Call (555) 123-4567")
        #expect(call.sublabel == "Calls with automated backup message" && device.sublabel == nil)
        #expect(try BackupTarget(parsing: "phone:(555) 123-4567") == call)
        #expect(try BackupTarget(parsing: "phone:1-555-123-4567") == call)
        #expect(try BackupTarget(parsing: "phone:+1 555.123.4567") == call)
        let london = try BackupTarget(parsing: "phone:+44 20 7946 0958")
        #expect(london.displayName == "+442079460958", "others in E.164")
    }

    @Test("refused targets, each with what is expected", arguments: [
        ("bedroom-pi", "use device:NAME, push:URL or phone:NUMBER"),
        ("sms:5551234567", "use device:NAME, push:URL or phone:NUMBER"),
        ("device:", "invalid device name"),
        ("device:-pi", "invalid device name"),
        ("device:bed room", "invalid device name"),
        ("device:bedroom\u{1b}[2J", "invalid device name 'bedroom\\x1b[2J'"),
        ("device:bеdroom", "invalid device name"),   // a Cyrillic е
        ("push:ftp://ntfy.sh/jen", "invalid push URL"),
        ("push:https://ntfy.sh/", "invalid push URL"),
        ("push:https:///jen", "invalid push URL"),
        ("phone:123", "invalid phone number '123'"),
        ("phone:+0123456789", "invalid phone number"),
        ("phone:+1234567890123456", "invalid phone number"),
        ("phone:555-123-456７", "invalid phone number"),
        ("phone:555 123 4567 ext 2", "invalid phone number"),
    ])
    func refused(text: String, message: String) {
        #expect {
            _ = try BackupTarget(parsing: text)
        } throws: { error in
            "\(error)".contains(message) && !"\(error)".contains("\n")
        }
    }

    @Test("the schedule: the first backup at T+2 min, each next 2 minutes later")
    func slots() throws {
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        let targets = [try BackupTarget(parsing: "device:bedroom-pi"), try BackupTarget(parsing: "push:https://ntfy.sh/jen"),
                       try BackupTarget(parsing: "phone:5551234567")]
        let slots = BackupSchedule.slots(targets, occurrence: t)
        #expect(slots.map { $0.at.timeIntervalSince(t) } == [120, 240, 360])
        #expect(slots.map(\.target) == targets)
        #expect(BackupSchedule.slots([], occurrence: t).isEmpty)
    }
}

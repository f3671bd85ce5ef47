import DoseTapCore
import DoseTapLinux
import DoseTapTesting
import Foundation
import Testing

/// #25 §10: a notification's body carries text from outside (an alarm's label, a device's name); on a server
/// that reads body markup, a forged `<a href=…>` or `<img src=…>` became a link or a fetch.
@Suite("Desktop notifications: the body is text, never markup")
struct NotificationMarkupTests {
    @Test("markup characters become entities, and nothing else changes")
    func escaping() {
        #expect(DesktopNotifications.escapedMarkup(#"Alarm 06:30 "<a href="http://x">Stop</a> & <img src=x>": ☾"#)
            == #"Alarm 06:30 "&lt;a href="http://x"&gt;Stop&lt;/a&gt; &amp; &lt;img src=x&gt;": ☾"#)
        #expect(DesktopNotifications.escapedMarkup("Estimated battery at alarm: 4% — Plug in now.") == "Estimated battery at alarm: 4% — Plug in now.")
    }

    @Test("a server that reads markup (the mock's body-markup) gets the forged label as entities")
    func onTheBus() async throws {
        try await PrivateBus.run(mockTemplate: "notification_daemon") { bus in
            let c = try DBusConnection(bus: .address(bus.address))
            let desktop = DesktopNotifications(connection: c)
            let label = #"<a href="http://attacker/">Stop</a><img src="http://attacker/p.png">"#
            _ = try await desktop.notify(title: "Alarm at Risk", body: "Alarm 06:30 \"\(label)\": Plug in now.", urgency: .normal,
                                         soundName: nil, suppressSound: true, actions: [])
            let reply = try await c.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                         interface: "org.freedesktop.DBus.Mock", member: "GetMethodCalls", arguments: [.string("Notify")])
            let bodies = (reply.first?.array ?? []).compactMap { call -> String? in
                guard case .structure(let fields) = call, fields.count == 2, let args = fields[1].array, args.count == 8 else { return nil }
                return args[4].string
            }
            #expect(bodies == [#"Alarm 06:30 "&lt;a href="http://attacker/"&gt;Stop&lt;/a&gt;&lt;img src="http://attacker/p.png"&gt;": Plug in now."#])
        }
    }
}

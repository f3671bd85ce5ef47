enum PairingPage {
    /// The page of a browser without a session: how to pair, a field for the code, and why it failed.
    static func render(error: String?, code: String? = nil) -> String {
        let problem = error.map { "<p class=\"refusal\" role=\"alert\"><strong>Not paired:</strong> \(HTML.escape($0))</p>" } ?? ""
        return HTML.page(title: "Pair this browser", current: nil, body: """
            <h1>Pair this browser</h1>
            \(problem)
            <p>This dashboard shows your doses and alarms, so each browser must be paired once.
            On the machine that runs DoseTap, run <code>dosetap web link</code>: it prints a link (and a QR code for a
            phone) that pairs this browser for 30 days. The link works once, within 10 minutes.</p>
            <p>On that machine itself, <code>dosetap web open</code> opens a browser already paired.</p>
            <form method="post" action="/pair">
            <label for="code">Pairing code</label>
            <input id="code" name="code" type="text" autocomplete="off" spellcheck="false" required value="\(HTML.escape(code ?? ""))">
            <button type="submit">Pair</button>
            </form>
            """, scripts: false)
    }
}

/// The dashboard's only style sheet and script, in the binary (nothing from a CDN, nothing inline).
enum StaticAssets {
    static let css = """
        :root { color-scheme: light dark; --bg: #ffffff; --fg: #1a1a1a; --muted: #4a4a4a; --accent: #0b57d0;
          --accent-fg: #ffffff; --line: #767676; --ok-bg: #e6f4ea; --ok-fg: #0d5124; --bad-bg: #fce8e6; --bad-fg: #8c1d18;
          --warn-bg: #fff0d6; --warn-fg: #6b3b00; --focus: #b45309; }
        @media (prefers-color-scheme: dark) {
          :root:not([data-theme="light"]) { --bg: #121212; --fg: #eeeeee; --muted: #c4c4c4; --accent: #8ab4f8; --accent-fg: #0b1a33; --line: #9e9e9e;
            --ok-bg: #0f2e1a; --ok-fg: #b7f0c6; --bad-bg: #3b0d0a; --bad-fg: #ffb4ab; --warn-bg: #3a2600; --warn-fg: #ffd08a; --focus: #fbbf24; }
        }
        :root[data-theme="dark"] { color-scheme: dark; --bg: #121212; --fg: #eeeeee; --muted: #c4c4c4; --accent: #8ab4f8; --accent-fg: #0b1a33; --line: #9e9e9e;
            --ok-bg: #0f2e1a; --ok-fg: #b7f0c6; --bad-bg: #3b0d0a; --bad-fg: #ffb4ab; --warn-bg: #3a2600; --warn-fg: #ffd08a; --focus: #fbbf24; }
        :root[data-theme="light"] { color-scheme: light; }
        footer { max-width: 40rem; margin: 0 auto; padding: 1rem; border-top: 1px solid var(--line); }
        .theme { list-style: none; display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0; padding: 0; }
        .theme a { display: inline-block; min-height: 44px; padding: 0.5rem 0.75rem; color: var(--fg); }
        .theme a[aria-current] { font-weight: 700; }
        @media (prefers-reduced-motion: reduce) { * { transition: none !important; animation: none !important; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 1.125rem/1.5 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
        header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: 0.5rem 1rem; border-bottom: 1px solid var(--line); }
        .brand { font-weight: 700; margin: 0; }
        nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 0; padding: 0; }
        nav a { display: inline-block; min-height: 44px; padding: 0.5rem 0.75rem; color: var(--fg); }
        nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
        main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: 0.5rem; z-index: 1; }
        a { color: var(--accent); }
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        .facts { display: grid; grid-template-columns: 1fr auto; margin: 1rem 0; }
        .facts dt, .facts dd { border-bottom: 1px solid var(--line); padding: 0.25rem 0; }
        .facts dt { color: var(--muted); }
        .facts dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; text-align: right; }
        .actions { display: flex; flex-direction: column; gap: 0.75rem; }
        button, select, input[type=text] { font: inherit; min-height: 44px; min-width: 44px; padding: 0.5rem 1rem;
          border: 2px solid var(--line); border-radius: 0.5rem; background: var(--bg); color: var(--fg); }
        button { cursor: pointer; width: 100%; }
        button.primary { background: var(--accent); color: var(--accent-fg); border-color: var(--accent); font-weight: 700; }
        details summary { min-height: 44px; padding: 0.5rem 0; cursor: pointer; }
        details form { display: grid; gap: 0.5rem; }
        label { font-weight: 600; }
        .confirmation { background: var(--ok-bg); color: var(--ok-fg); padding: 0.75rem; border-radius: 0.5rem; }
        .refusal { background: var(--bad-bg); color: var(--bad-fg); padding: 0.75rem; border-radius: 0.5rem; }
        .nudge { padding: 0.75rem; border-radius: 0.5rem; border-left: 0.5rem solid; margin: 0.5rem 0; }
        .nudge p { margin: 0.25rem 0; }
        .nudge.critical { background: var(--bad-bg); color: var(--bad-fg); }
        .nudge.warning { background: var(--warn-bg); color: var(--warn-fg); }
        code { font-size: 0.95em; }
        form[action="/pair"], .alarm-form { display: grid; gap: 0.5rem; }
        .alarms { list-style: none; padding: 0; }
        .chart { margin: 0; }
        .chart svg { width: 100%; height: auto; }
        .chart .grid { stroke: var(--line); stroke-width: 1; }
        .chart .axis { fill: var(--fg); font-size: 12px; }
        .chart .level { fill: none; stroke: var(--accent); stroke-width: 3; }
        .range { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
        .range button { width: auto; }
        table { border-collapse: collapse; width: 100%; }
        caption { text-align: left; color: var(--muted); }
        th, td { text-align: left; padding: 0.25rem 0.5rem 0.25rem 0; border-bottom: 1px solid var(--line); }
        .alarm { border-bottom: 1px solid var(--line); padding: 0.5rem 0 1rem; }
        .alarm h2 { margin: 0.25rem 0; font-variant-numeric: tabular-nums; }
        .alarm .label { font-weight: 400; }
        .ringing { background: var(--bad-bg); color: var(--bad-fg); padding: 0.75rem; border-radius: 0.5rem; }
        .backup { margin-top: 1rem; padding-top: 0.5rem; border-top: 1px dashed var(--line); }
        .targets { padding-left: 1.5rem; }
        .target p { margin: 0.25rem 0; }
        .target-actions { display: flex; flex-direction: column; gap: 0.5rem; margin-bottom: 0.75rem; }
        .sublabel { color: var(--muted); }
        .settings-form { display: grid; gap: 0.5rem; margin: 0.5rem 0; }
        .note { color: var(--muted); }
        .events { list-style: none; padding: 0; }
        .event { border-bottom: 1px solid var(--line); padding: 0.5rem 0; }
        .event h3 { margin: 0.25rem 0; }
        input[type=number] { font: inherit; min-height: 44px; padding: 0.5rem; border: 2px solid var(--line); border-radius: 0.5rem;
          background: var(--bg); color: var(--fg); }
        input[type=time] { font: inherit; min-height: 44px; padding: 0.5rem; border: 2px solid var(--line); border-radius: 0.5rem;
          background: var(--bg); color: var(--fg); }

        """

    /// Progressive enhancement: the page works without it (forms post and redirect). With it, actions are
    /// sent in the background and announced, and the night follows the agent's event stream.
    static let js = """
        "use strict";
        (function () {
          var announce = document.getElementById("announce");
          // Alarms, Batteries, Buttons: the live part follows the event stream. A part the person is working in
          // (focus inside, a form opened) waits until they leave it: nothing moves under their hands.
          var part = document.querySelector("[data-live]");
          if (part && window.EventSource) {
            var pending = null;
            var shown = part.getAttribute("data-version") || "";
            var busy = function () {
              return part.contains(document.activeElement) || part.querySelector("details[open]") !== null;
            };
            var apply = function () {
              if (pending === null || busy()) { return; }
              part.innerHTML = pending;
              pending = null;
            };
            part.addEventListener("focusout", function () { window.setTimeout(apply, 0); });
            part.addEventListener("toggle", apply, true);
            var stream = new EventSource("/events?page=" + encodeURIComponent(part.getAttribute("data-live")) +
              "&version=" + encodeURIComponent(shown));
            stream.addEventListener("live", function (event) {
              pending = event.data;
              apply();
            });
          }
          var live = document.getElementById("tonight");
          if (!live) { return; }
          var version = live.getAttribute("data-version") || "";
          // Only a night the page does not show yet replaces it: focus and keyboard position stay put.
          function swap(html, next) {
            if (next && next === version) { return; }
            version = next || "";
            var active = document.activeElement;
            var key = active && live.contains(active) && active.form ? active.form.getAttribute("action") : null;
            live.innerHTML = html;
            if (key) {
              var again = live.querySelector('form[action="' + key + '"] button');
              if (again) { again.focus(); }
            }
          }
          // One action at a time: a submit while another is in flight is dropped (a double click sends one), and a
          // failed fetch is never sent again (the first may have been recorded): it says so and the page reloads.
          var inFlight = false;
          live.addEventListener("submit", function (event) {
            var form = event.target;
            if (!window.fetch || !window.FormData) { return; }
            event.preventDefault();
            if (inFlight) { return; }
            inFlight = true;
            var body = new URLSearchParams(new FormData(form));
            fetch(form.getAttribute("action"), {
              method: "POST", body: body, credentials: "same-origin",
              headers: { "Accept": "application/json", "X-CSRF-Token": body.get("csrf") || "" }
            }).then(function (response) { return response.json(); }).then(function (answer) {
              inFlight = false;
              if (answer.announce !== undefined) { announce.innerHTML = answer.announce; }
              if (answer.tonight !== undefined) { swap(answer.tonight, answer.version); }
              if (answer.error) { announce.textContent = answer.error; }
            }).catch(function () {
              inFlight = false;
              announce.textContent = "No answer from the agent: reloading to show what was recorded.";
              window.setTimeout(function () { window.location.reload(); }, 1500);
            });
          });
          if (window.EventSource) {
            var source = new EventSource("/events?version=" + encodeURIComponent(version));
            source.addEventListener("tonight", function (event) { swap(event.data, event.lastEventId); });
          }
        })();

        """
}

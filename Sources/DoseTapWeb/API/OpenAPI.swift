/// `/api/openapi.json`: the JSON API beside the pages, the same use cases as the command line.
enum OpenAPIDocument {
    static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "DoseTap local dashboard API",
        "version": "1",
        "description": "The agent's own API, on its Unix socket ($XDG_RUNTIME_DIR/dosetap/web.sock, no pairing for the same user) and on its TCP addresses (paired browsers only). Dose inputs are the command line's use case with source web: the same decisions and the same refusals. Every route but this document needs the session cookie (401 without it), and every POST, PATCH and DELETE also the X-CSRF-Token header (GET /api/session tells it) and no Origin of another site (403), except on the Unix socket. Every route is rate limited (429 with Retry-After). Bodies are JSON objects of at most 16 KiB (413 above), each key once; an optional field given as null is the same as leaving it out. The schemas give each field's type and range; the command line's own rules (a time of day, a button's address, a target that is a backup…) answer 400 with its one line. Errors are {\"error\": \"one line\"}."
      },
      "components": {
        "securitySchemes": {
          "session": { "type": "apiKey", "in": "cookie", "name": "dosetap_session" },
          "csrf": { "type": "apiKey", "in": "header", "name": "X-CSRF-Token" }
        },
        "schemas": {
          "Error": { "type": "object", "required": ["error"], "properties": { "error": { "type": "string", "description": "One line." } } },
          "EventId": { "type": "string", "format": "uuid", "description": "An event's id, as GET /api/tonight names it." },
          "Nudge": { "type": "object", "properties": {
            "severity": { "enum": ["critical", "warning"] }, "header": { "type": "string" }, "headline": { "type": "string" },
            "action": { "type": "string" }, "powerOff": { "type": "string" } } },
          "Tonight": { "type": "object", "properties": {
            "phase": { "enum": ["idle", "waiting", "open", "near-close", "closed", "completed", "skipped"] },
            "nightDate": { "type": "string", "format": "date" },
            "dose1At": { "type": ["string", "null"], "format": "date-time" },
            "dose2At": { "type": ["string", "null"], "format": "date-time" },
            "windowOpensAt": { "type": ["string", "null"], "format": "date-time" },
            "windowClosesAt": { "type": ["string", "null"], "format": "date-time" },
            "reminderAt": { "type": ["string", "null"], "format": "date-time" },
            "minutesRemaining": { "type": ["integer", "null"] },
            "snoozesUsed": { "type": "integer" }, "snoozesLeft": { "type": "integer" },
            "skipReason": { "type": ["string", "null"] }, "onTime": { "type": ["boolean", "null"] },
            "lastAction": { "oneOf": [ { "type": "object", "properties": { "id": { "type": "string" }, "kind": { "type": "string" }, "at": { "type": "string", "format": "date-time" }, "source": { "type": "string" } } }, { "type": "null" } ], "description": "What Undo names (its id is the event of POST /api/dose/undo)." },
            "reminderSetBy": { "type": ["string", "null"], "description": "The event of POST /api/dose/snooze." },
            "setAside": { "type": "array", "description": "Entries dated in the future, set aside: they decide nothing (POST /api/dose/discard ends the notice).", "items": { "type": "object", "properties": {
              "id": { "type": "string" }, "kind": { "type": "string" }, "at": { "type": "string", "format": "date-time" }, "notice": { "type": "string" } } } } } },
          "AlarmFields": { "type": "object", "properties": {
            "time": { "type": ["string", "null"], "pattern": "^([01]?[0-9]|2[0-3]):[0-5][0-9]$", "example": "06:30" }, "label": { "type": ["string", "null"], "maxLength": 64 },
            "repeat": { "type": ["string", "null"], "description": "once, daily, or days such as mon,wed,fri" }, "enabled": { "type": ["boolean", "null"] } } },
          "Alarm": { "type": "object", "properties": {
            "id": { "type": "integer" }, "time": { "type": "string" }, "label": { "type": "string" }, "repeat": { "type": "string" },
            "enabled": { "type": "boolean" }, "nextAt": { "type": ["string", "null"], "format": "date-time" },
            "nudge": { "oneOf": [ { "$ref": "#/components/schemas/Nudge" }, { "type": "null" } ] },
            "forecast": { "type": "object", "properties": { "risk": { "const": "unknown" }, "reason": { "type": "string" } } },
            "missedAt": { "type": "string", "format": "date-time" } } },
          "DoseAnswer": { "type": "object", "required": ["recorded", "status"], "properties": {
            "recorded": { "type": "boolean" },
            "event": { "type": "object", "properties": { "id": { "type": "string" }, "kind": { "type": "string" }, "at": { "type": "string" }, "source": { "const": "web" } } },
            "message": { "type": "string", "description": "The confirmation, as the command line prints it." },
            "batteryNudge": { "oneOf": [ { "$ref": "#/components/schemas/Nudge" }, { "type": "null" } ] },
            "refusal": { "type": "object", "properties": { "code": { "type": "string" }, "message": { "type": "string", "description": "The command line's refusal, word for word." } } },
            "status": { "$ref": "#/components/schemas/Tonight" } } },
          "ServerSentEvent": { "type": "object", "required": ["event", "data"], "description": "One event of a text/event-stream: its name and its data.", "properties": {
            "event": { "type": "string" }, "data": { "type": "string" }, "id": { "type": "string" }, "retry": { "type": "integer" } } },
          "FeedbackChange": { "type": "object", "minProperties": 1, "properties": {
            "sound": { "type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "A sound name, or none" }, "haptics": { "type": ["boolean", "null"] },
            "intensity": { "enum": ["light", "medium", "strong", null] }, "quiet": { "type": ["boolean", "null"] } } },
          "EventFeedbackChange": { "type": "object", "minProperties": 1, "properties": {
            "chime": { "type": ["boolean", "null"] }, "sound": { "type": ["string", "null"], "minLength": 1, "maxLength": 200, "description": "A sound name, none, or default" },
            "haptics": { "oneOf": [ { "type": ["boolean", "null"] }, { "const": "default" } ] }, "intensity": { "enum": ["light", "medium", "strong", "default", null] } } }
        },
        "responses": {
          "Answer": { "description": "Recorded", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/DoseAnswer" } } } },
          "Refused": { "description": "Refused by the dose rules (nothing recorded)", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/DoseAnswer" } } } },
          "Bad": { "description": "Bad input (400), no session (401), no CSRF token or another site's Origin (403), not found (404), refused in the present state (409), a body over 16 KiB (413), something needed cannot be reached now (503)", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
          "Limited": { "description": "Too many requests from this client: refused for a while", "headers": { "Retry-After": { "required": true, "description": "Seconds until the refusal ends", "schema": { "type": "string", "pattern": "^[0-9]+$" } } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
          "EventFeedback": { "description": "{event, settings, plan, timerRunning, message}: message is Timer is running, changes will apply next time when tonight's reminder is already scheduled", "content": { "application/json": { "schema": { "type": "object", "required": ["event", "settings", "plan", "timerRunning", "message"], "properties": { "event": { "type": "string" }, "timerRunning": { "type": "boolean" }, "message": { "type": ["string", "null"] } } } } } }
        }
      },
      "security": [ { "session": [] } ],
      "paths": {
        "/api/session": { "get": { "summary": "The CSRF token of this session", "responses": {
          "200": { "description": "The token", "content": { "application/json": { "schema": { "type": "object", "required": ["csrfToken"], "properties": { "csrfToken": { "type": "string" } } } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/events": { "get": { "summary": "What happens in the agent, as server-sent events (dosetap status --follow): ready, then one event per agent event by name (doseRecorded, alarmRinging, batteryReading, ...) or storeChanged; each with data {}", "responses": {
          "200": { "description": "An event stream", "content": { "text/event-stream": { "schema": { "$ref": "#/components/schemas/ServerSentEvent" } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/tonight": { "get": { "summary": "Tonight (dosetap dose status --json)", "responses": {
          "200": { "description": "Tonight", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Tonight" } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/dose/take": { "post": { "summary": "Take the next dose (dosetap dose take)", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "properties": { "late": { "type": ["boolean", "null"], "description": "Confirm a late Dose 2 (within 30 min after the close)." } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/snooze": { "post": { "summary": "Snooze the Dose 2 reminder 10 minutes", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["event"], "properties": { "event": { "$ref": "#/components/schemas/EventId", "description": "reminderSetBy of GET /api/tonight: the reminder this snooze moves." } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/skip": { "post": { "summary": "Skip Dose 2 tonight", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "properties": { "reason": { "enum": ["alert", "side-effects", "other", null] } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/undo": { "post": { "summary": "Undo the last dose action, within 5 seconds", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["event"], "properties": { "event": { "$ref": "#/components/schemas/EventId", "description": "lastAction.id of GET /api/tonight: the action to undo." } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/discard": { "post": { "summary": "Discard an entry set aside because it is dated in the future (dosetap dose discard)", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["event"], "properties": { "event": { "$ref": "#/components/schemas/EventId", "description": "setAside[].id of GET /api/tonight." } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/batteries": { "get": { "summary": "The battery now (dosetap battery --json): the system battery with its drain, every supply", "responses": {
          "200": { "description": "{system, supplies}", "content": { "application/json": { "schema": { "type": "object" } } } }, "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alarms": {
          "get": { "summary": "The alarms (dosetap alarm list --json): next occurrence and the battery nudge of each", "responses": {
            "200": { "description": "{\"alarms\": [Alarm]}", "content": { "application/json": { "schema": { "type": "object", "required": ["alarms"], "properties": { "alarms": { "type": "array", "items": { "$ref": "#/components/schemas/Alarm" } } } } } } },
            "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } },
          "post": { "summary": "Add an alarm (dosetap alarm add)", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "allOf": [ { "$ref": "#/components/schemas/AlarmFields" }, { "required": ["time"], "properties": { "time": { "type": "string" } } } ] } } } },
            "responses": { "200": { "description": "The alarm", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Alarm" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/ringing/stop": { "post": { "summary": "Stop the alarm ringing here, through the agent: the sound ends at once, the answer is saved (or kept in memory while the data cannot be written); dosetap alarm stop asks this when it cannot write", "security": [ { "session": [], "csrf": [] } ],
          "responses": { "200": { "description": "{\"answered\": \"stop\", \"by\": \"cli\"|\"web\"}", "content": { "application/json": { "schema": { "type": "object", "required": ["answered", "by"], "properties": { "answered": { "const": "stop" }, "by": { "enum": ["cli", "web"] } } } } } }, "409": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/ringing/snooze": { "post": { "summary": "Snooze the alarm ringing here for 9 minutes, through the agent (as /api/ringing/stop)", "security": [ { "session": [], "csrf": [] } ],
          "responses": { "200": { "description": "{\"answered\": \"snooze\", \"by\": \"cli\"|\"web\"}", "content": { "application/json": { "schema": { "type": "object", "required": ["answered", "by"], "properties": { "answered": { "const": "snooze" }, "by": { "enum": ["cli", "web"] } } } } } }, "409": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/alarms/{id}": {
          "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "integer", "minimum": 1 } } ],
          "patch": { "summary": "Change an alarm (dosetap alarm edit / on / off): at least one field", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "allOf": [ { "$ref": "#/components/schemas/AlarmFields" }, { "minProperties": 1 } ] } } } },
            "responses": { "200": { "description": "The alarm", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Alarm" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } },
          "delete": { "summary": "Delete an alarm", "security": [ { "session": [], "csrf": [] } ],
            "responses": { "200": { "description": "{\"deleted\": id}", "content": { "application/json": { "schema": { "type": "object", "required": ["deleted"], "properties": { "deleted": { "type": "integer" } } } } } }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alarms/{id}/backups": {
          "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "integer", "minimum": 1 } } ],
          "get": { "summary": "The alarm's backups and their timing (dosetap alarm backup ID list --json, dosetap alarm preview ID --json)", "responses": {
            "200": { "description": "{alarm, enabled, targets: [{target, kind, name, sublabel}], note, preview: [{at, target, action}] | null}", "content": { "application/json": { "schema": { "type": "object" } } } }, "401": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } },
          "post": { "summary": "Change the backups (dosetap alarm backup ID on|off|add|move|remove): add, move and remove name a target, move a place (to)", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["action"], "properties": {
              "action": { "enum": ["on", "off", "add", "move", "remove"] }, "target": { "type": ["string", "null"], "maxLength": 300, "example": "phone:+15551234567" }, "to": { "type": ["integer", "null"], "minimum": 1 } } } } } },
            "responses": { "200": { "description": "The backups, as GET", "content": { "application/json": { "schema": { "type": "object" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/feedback": {
          "get": { "summary": "Sound and vibration: global and per event (dosetap feedback show --json), and what each event would play now", "responses": {
            "200": { "description": "{feedback: {global, events}, plans: [{event, chime, sound, haptics, muted, warnings}]}", "content": { "application/json": { "schema": { "type": "object", "required": ["feedback", "plans"] } } } }, "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } },
          "post": { "summary": "Change the global settings (dosetap feedback set): at least one field", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FeedbackChange" } } } },
            "responses": { "200": { "description": "The settings", "content": { "application/json": { "schema": { "type": "object", "required": ["global", "events"] } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } },
          "patch": { "summary": "As POST /api/feedback", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FeedbackChange" } } } },
            "responses": { "200": { "description": "The settings", "content": { "application/json": { "schema": { "type": "object", "required": ["global", "events"] } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/feedback/events/{event}": {
          "parameters": [ { "name": "event", "in": "path", "required": true, "schema": { "enum": ["dose-window-open", "dose-reminder", "dose-urgent", "dose-closed", "dose-recorded", "action-rejected", "battery-nudge", "alarm", "usage-alert"] } } ],
          "patch": { "summary": "Change one event (dosetap feedback event): at least one field; default means Use global default", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/EventFeedbackChange" } } } },
            "responses": { "200": { "$ref": "#/components/responses/EventFeedback" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } },
          "post": { "summary": "As PATCH /api/feedback/events/{event}", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/EventFeedbackChange" } } } },
            "responses": { "200": { "$ref": "#/components/responses/EventFeedback" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/sounds": { "get": { "summary": "The sounds of this machine (dosetap sounds list --json) and the one previewing", "responses": {
          "200": { "description": "{sounds, playing}", "content": { "application/json": { "schema": { "type": "object", "required": ["sounds", "playing"], "properties": { "sounds": { "type": "array" }, "playing": { "type": ["string", "null"] } } } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/sounds/preview": { "post": { "summary": "Play a sound until it ends or stop", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["sound"], "properties": { "sound": { "type": "string", "minLength": 1, "maxLength": 200 } } } } } },
          "responses": { "200": { "description": "{playing}", "content": { "application/json": { "schema": { "type": "object", "required": ["playing"] } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/sounds/stop": { "post": { "summary": "Stop the preview", "security": [ { "session": [], "csrf": [] } ], "responses": {
          "200": { "description": "{stopped: name | null}", "content": { "application/json": { "schema": { "type": "object", "required": ["stopped"], "properties": { "stopped": { "type": ["string", "null"] } } } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/buttons": {
          "get": { "summary": "The added buttons (dosetap button list --json) with battery and last press", "responses": {
            "200": { "description": "{buttons}", "content": { "application/json": { "schema": { "type": "object", "required": ["buttons"], "properties": { "buttons": { "type": "array" } } } } } },
            "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } },
          "post": { "summary": "Add a button (dosetap button add)", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["address", "kind"], "properties": {
              "address": { "type": "string", "minLength": 1, "maxLength": 200, "example": "A4:C1:38:8D:18:B2" }, "kind": { "enum": ["bthome", "itag", "hid", "flic2"] }, "name": { "type": ["string", "null"] }, "bindkey": { "type": ["string", "null"] } } } } } },
            "responses": { "200": { "description": "{button, updated, keyChange, paired}", "content": { "application/json": { "schema": { "type": "object", "required": ["button", "updated"] } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/buttons/scan": { "post": { "summary": "Listen for nearby buttons (dosetap button scan --json)", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "properties": { "seconds": { "type": ["integer", "null"], "minimum": 1, "maximum": 30, "description": "5 when not given" } } } } } },
          "responses": { "200": { "description": "{candidates}", "content": { "application/json": { "schema": { "type": "object", "required": ["candidates"], "properties": { "candidates": { "type": "array" } } } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/buttons/{address}": {
          "parameters": [ { "name": "address", "in": "path", "required": true, "schema": { "type": "string", "pattern": "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$|^[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){5}$" }, "example": "A4:C1:38:8D:18:B2", "description": "A button's address: six pairs of hex digits, by colons or by dashes (another text is a 400; so are the all-zero, broadcast and multicast addresses)" } ],
          "patch": { "summary": "Map gestures (dosetap button map): at least one", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "minProperties": 1, "properties": {
              "single": { "enum": ["take", "snooze", "undo", "skip", "none", null] }, "double": { "enum": ["take", "snooze", "undo", "skip", "none", null] }, "hold": { "enum": ["take", "snooze", "undo", "skip", "none", null] }, "noDouble": { "type": ["boolean", "null"] } } } } } },
            "responses": { "200": { "description": "The button", "content": { "application/json": { "schema": { "type": "object" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } },
          "delete": { "summary": "Remove a button", "security": [ { "session": [], "csrf": [] } ], "responses": {
            "200": { "description": "{removed}", "content": { "application/json": { "schema": { "type": "object", "required": ["removed"], "properties": { "removed": { "type": "string" } } } } } },
            "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alerts": { "get": { "summary": "Usage alerts (dosetap alerts show --json)", "responses": {
          "200": { "description": "{warning, critical, snoozedUntil, sources}", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/alerts/history": { "get": { "summary": "The alerts given, newest first", "responses": {
          "200": { "description": "{history}", "content": { "application/json": { "schema": { "type": "object", "required": ["history"], "properties": { "history": { "type": "array" } } } } } },
          "401": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } },
        "/api/alerts/thresholds": { "post": { "summary": "dosetap alerts set: warning 10-99, critical 5-95, warning below critical; at least one", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "minProperties": 1, "properties": { "warning": { "type": ["integer", "null"] }, "critical": { "type": ["integer", "null"] } } } } } },
          "responses": { "200": { "description": "As GET /api/alerts", "content": { "application/json": { "schema": { "type": "object" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alerts/source": { "post": { "summary": "dosetap alerts source NAME: its own thresholds, on or off, or reset alone", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string", "minLength": 1, "maxLength": 200 }, "warning": { "type": ["integer", "null"] }, "critical": { "type": ["integer", "null"] }, "enabled": { "type": ["boolean", "null"] }, "reset": { "type": ["boolean", "null"] } } } } } },
          "responses": { "200": { "description": "{name, warning, critical, enabled, state}", "content": { "application/json": { "schema": { "type": "object", "required": ["name", "warning", "critical", "enabled", "state"] } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alerts/snooze": { "post": { "summary": "dosetap alerts snooze 15m|1h|4h|24h|off", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["duration"], "properties": { "duration": { "enum": ["15m", "1h", "4h", "24h", "off"] } } } } } },
          "responses": { "200": { "description": "{snoozedUntil}", "content": { "application/json": { "schema": { "type": "object", "required": ["snoozedUntil"], "properties": { "snoozedUntil": { "type": ["string", "null"], "format": "date-time" } } } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "413": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/events": { "get": { "summary": "Live updates (server-sent events): page=tonight (default) sends event tonight with the Tonight fragment; page=alarms|batteries|buttons sends event live with that page's live part (HTML)",
          "parameters": [ { "name": "page", "in": "query", "schema": { "enum": ["tonight", "alarms", "batteries", "buttons"] } }, { "name": "version", "in": "query", "schema": { "type": "string" } } ],
          "responses": { "200": { "description": "An event stream", "content": { "text/event-stream": { "schema": { "$ref": "#/components/schemas/ServerSentEvent" } } } }, "401": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Limited" } } } }
      }
    }

    """#
}

/// `/api/openapi.json`: the JSON API beside the pages, the same use cases as the command line.
enum OpenAPIDocument {
    static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "DoseTap local dashboard API",
        "version": "1",
        "description": "The agent's own API, on its Unix socket ($XDG_RUNTIME_DIR/dosetap/web.sock, no pairing for the same user) and on its TCP addresses (paired browsers only). Dose inputs are the command line's use case with source web: the same decisions and the same refusals. Every POST needs the session cookie and the X-CSRF-Token header (GET /api/session tells it), except on the Unix socket."
      },
      "components": {
        "securitySchemes": {
          "session": { "type": "apiKey", "in": "cookie", "name": "dosetap_session" },
          "csrf": { "type": "apiKey", "in": "header", "name": "X-CSRF-Token" }
        },
        "schemas": {
          "Error": { "type": "object", "required": ["error"], "properties": { "error": { "type": "string", "description": "One line." } } },
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
            "skipReason": { "type": ["string", "null"] }, "onTime": { "type": ["boolean", "null"] } } },
          "AlarmFields": { "type": "object", "properties": {
            "time": { "type": "string", "example": "06:30" }, "label": { "type": "string", "maxLength": 64 },
            "repeat": { "type": "string", "description": "once, daily, or days such as mon,wed,fri" }, "enabled": { "type": "boolean" } } },
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
            "status": { "$ref": "#/components/schemas/Tonight" } } }
        },
        "responses": {
          "Answer": { "description": "Recorded", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/DoseAnswer" } } } },
          "Refused": { "description": "Refused by the dose rules (nothing recorded)", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/DoseAnswer" } } } },
          "Bad": { "description": "Bad input, no session, no CSRF token, too many requests", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } }
        }
      },
      "security": [ { "session": [] } ],
      "paths": {
        "/api/session": { "get": { "summary": "The CSRF token of this session", "responses": {
          "200": { "description": "The token", "content": { "application/json": { "schema": { "type": "object", "properties": { "csrfToken": { "type": "string" } } } } } },
          "401": { "$ref": "#/components/responses/Bad" } } } },
        "/api/events": { "get": { "summary": "What happens in the agent, as server-sent events (dosetap status --follow): ready, then one event per agent event by name (doseRecorded, alarmRinging, batteryReading, ...) or storeChanged; each with data {}", "responses": {
          "200": { "description": "An event stream", "content": { "text/event-stream": { "schema": { "type": "string" } } } },
          "401": { "$ref": "#/components/responses/Bad" } } } },
        "/api/tonight": { "get": { "summary": "Tonight (dosetap dose status --json)", "responses": {
          "200": { "description": "Tonight", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Tonight" } } } },
          "401": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/take": { "post": { "summary": "Take the next dose (dosetap dose take)", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "properties": { "late": { "type": "boolean", "description": "Confirm a late Dose 2 (within 30 min after the close)." } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/snooze": { "post": { "summary": "Snooze the Dose 2 reminder 10 minutes", "security": [ { "session": [], "csrf": [] } ],
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/skip": { "post": { "summary": "Skip Dose 2 tonight", "security": [ { "session": [], "csrf": [] } ],
          "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "properties": { "reason": { "enum": ["alert", "side-effects", "other"] } } } } } },
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Bad" } } } },
        "/api/dose/undo": { "post": { "summary": "Undo the last dose action, within 5 seconds", "security": [ { "session": [], "csrf": [] } ],
          "responses": { "200": { "$ref": "#/components/responses/Answer" }, "409": { "$ref": "#/components/responses/Refused" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" }, "429": { "$ref": "#/components/responses/Bad" } } } },
        "/api/batteries": { "get": { "summary": "The battery now (dosetap battery --json): the system battery with its drain, every supply", "responses": {
          "200": { "description": "{system, supplies}" }, "401": { "$ref": "#/components/responses/Bad" }, "503": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alarms": {
          "get": { "summary": "The alarms (dosetap alarm list --json): next occurrence and the battery nudge of each", "responses": {
            "200": { "description": "{\"alarms\": [Alarm]}", "content": { "application/json": { "schema": { "type": "object", "properties": { "alarms": { "type": "array", "items": { "$ref": "#/components/schemas/Alarm" } } } } } } },
            "401": { "$ref": "#/components/responses/Bad" } } },
          "post": { "summary": "Add an alarm (dosetap alarm add)", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/AlarmFields" } } } },
            "responses": { "200": { "description": "The alarm", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Alarm" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "401": { "$ref": "#/components/responses/Bad" }, "403": { "$ref": "#/components/responses/Bad" } } } },
        "/api/alarms/{id}": {
          "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "integer", "minimum": 1 } } ],
          "patch": { "summary": "Change an alarm (dosetap alarm edit / on / off)", "security": [ { "session": [], "csrf": [] } ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/AlarmFields" } } } },
            "responses": { "200": { "description": "The alarm", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Alarm" } } } }, "400": { "$ref": "#/components/responses/Bad" }, "404": { "$ref": "#/components/responses/Bad" } } },
          "delete": { "summary": "Delete an alarm", "security": [ { "session": [], "csrf": [] } ],
            "responses": { "200": { "description": "{\"deleted\": id}" }, "404": { "$ref": "#/components/responses/Bad" } } } },
        "/events": { "get": { "summary": "Live updates (server-sent events): event tonight, data the Tonight fragment (HTML)", "responses": {
          "200": { "description": "text/event-stream" }, "401": { "$ref": "#/components/responses/Bad" } } } }
      }
    }

    """#
}

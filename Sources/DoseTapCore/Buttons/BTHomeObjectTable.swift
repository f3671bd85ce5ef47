import Foundation

/// The BTHome v2 object ids (https://bthome.io/format/): how long each object is and how to read it.
/// The set of ids, their lengths, factors and names are those of bthome-ble 3.25.0 (the reference the
/// differential tests compare with), which follows the spec's table. An id missing here stops the
/// parse, as in bthome-ble: nobody can skip an object without knowing its length.
struct BTHomeObjectSpec: Sendable {
    enum Format: Sendable {
        /// Little-endian unsigned integer × factor, rounded to `decimals` places.
        case unsigned(factor: Double, decimals: Int)
        /// Little-endian two's-complement integer × factor, rounded to `decimals` places.
        case signed(factor: Double, decimals: Int)
        case binary
        case button
        /// 0x3C: event byte and steps, kept as bytes.
        case dimmer
        /// 0x3B: a length byte (low 5 bits = number of argument bytes), then opcode and arguments.
        case command
        /// 0x53: a length byte, then UTF-8.
        case text
        /// 0x54: a length byte, then bytes.
        case raw
        case timestamp
        case firmware4
        case firmware3
    }

    let id: UInt8
    let name: String
    let unit: String?
    /// Data bytes after the id (after the length byte for the variable-length formats).
    let length: Int
    let format: Format

    var isVariableLength: Bool {
        switch format {
        case .command, .text, .raw: true
        default: false
        }
    }
}

enum BTHomeObjectTable {
    private static func u(_ id: UInt8, _ name: String, _ length: Int, _ factor: Double = 1, _ decimals: Int = 0,
                          _ unit: String? = nil) -> BTHomeObjectSpec {
        BTHomeObjectSpec(id: id, name: name, unit: unit, length: length, format: .unsigned(factor: factor, decimals: decimals))
    }

    private static func s(_ id: UInt8, _ name: String, _ length: Int, _ factor: Double = 1, _ decimals: Int = 0,
                          _ unit: String? = nil) -> BTHomeObjectSpec {
        BTHomeObjectSpec(id: id, name: name, unit: unit, length: length, format: .signed(factor: factor, decimals: decimals))
    }

    private static func b(_ id: UInt8, _ name: String) -> BTHomeObjectSpec {
        BTHomeObjectSpec(id: id, name: name, unit: nil, length: 1, format: .binary)
    }

    private static func other(_ id: UInt8, _ name: String, _ length: Int, _ format: BTHomeObjectSpec.Format) -> BTHomeObjectSpec {
        BTHomeObjectSpec(id: id, name: name, unit: nil, length: length, format: format)
    }

    static let all: [BTHomeObjectSpec] = [
        u(0x00, "packet_id", 1),
        u(0x01, "battery", 1, 1, 0, "%"),
        s(0x02, "temperature", 2, 0.01, 2, "°C"),
        u(0x03, "humidity", 2, 0.01, 2, "%"),
        u(0x04, "pressure", 3, 0.01, 2, "mbar"),
        u(0x05, "illuminance", 3, 0.01, 2, "lx"),
        u(0x06, "mass", 2, 0.01, 2, "kg"),
        u(0x07, "mass", 2, 0.01, 2, "lb"),
        s(0x08, "dew_point", 2, 0.01, 2, "°C"),
        u(0x09, "count", 1),
        u(0x0A, "energy", 3, 0.001, 3, "kWh"),
        u(0x0B, "power", 3, 0.01, 2, "W"),
        u(0x0C, "voltage", 2, 0.001, 3, "V"),
        u(0x0D, "pm25", 2, 1, 0, "µg/m³"),
        u(0x0E, "pm10", 2, 1, 0, "µg/m³"),
        b(0x0F, "generic"),
        b(0x10, "power"),
        b(0x11, "opening"),
        u(0x12, "carbon_dioxide", 2, 1, 0, "ppm"),
        u(0x13, "volatile_organic_compounds", 2, 1, 0, "µg/m³"),
        u(0x14, "moisture", 2, 0.01, 2, "%"),
        b(0x15, "battery"),
        b(0x16, "battery_charging"),
        b(0x17, "carbon_monoxide"),
        b(0x18, "cold"),
        b(0x19, "connectivity"),
        b(0x1A, "door"),
        b(0x1B, "garage_door"),
        b(0x1C, "gas"),
        b(0x1D, "heat"),
        b(0x1E, "light"),
        b(0x1F, "lock"),
        b(0x20, "moisture"),
        b(0x21, "motion"),
        b(0x22, "moving"),
        b(0x23, "occupancy"),
        b(0x24, "plug"),
        b(0x25, "presence"),
        b(0x26, "problem"),
        b(0x27, "running"),
        b(0x28, "safety"),
        b(0x29, "smoke"),
        b(0x2A, "sound"),
        b(0x2B, "tamper"),
        b(0x2C, "vibration"),
        b(0x2D, "window"),
        u(0x2E, "humidity", 1, 1, 0, "%"),
        u(0x2F, "moisture", 1, 1, 0, "%"),
        other(0x3A, "button", 1, .button),
        other(0x3B, "command", 0, .command),
        other(0x3C, "dimmer", 2, .dimmer),
        u(0x3D, "count", 2),
        u(0x3E, "count", 4),
        s(0x3F, "rotation", 2, 0.1, 1, "°"),
        u(0x40, "distance", 2, 1, 0, "mm"),
        u(0x41, "distance", 2, 0.1, 1, "m"),
        u(0x42, "duration", 3, 0.001, 3, "s"),
        u(0x43, "current", 2, 0.001, 3, "A"),
        u(0x44, "speed", 2, 0.01, 2, "m/s"),
        s(0x45, "temperature", 2, 0.1, 1, "°C"),
        u(0x46, "uv_index", 1, 0.1, 1),
        u(0x47, "volume", 2, 0.1, 1, "L"),
        u(0x48, "volume", 2, 1, 0, "mL"),
        u(0x49, "volume_flow_rate", 2, 0.001, 3, "m³/h"),
        u(0x4A, "voltage", 2, 0.1, 1, "V"),
        u(0x4B, "gas", 3, 0.001, 3, "m³"),
        u(0x4C, "gas", 4, 0.001, 3, "m³"),
        u(0x4D, "energy", 4, 0.001, 3, "kWh"),
        u(0x4E, "volume", 4, 0.001, 3, "L"),
        u(0x4F, "water", 4, 0.001, 3, "L"),
        other(0x50, "timestamp", 4, .timestamp),
        u(0x51, "acceleration", 2, 0.001, 3, "m/s²"),
        u(0x52, "gyroscope", 2, 0.001, 3, "°/s"),
        other(0x53, "text", 0, .text),
        other(0x54, "raw", 0, .raw),
        u(0x55, "volume_storage", 4, 0.001, 3, "L"),
        u(0x56, "conductivity", 2, 1, 0, "µS/cm"),
        s(0x57, "temperature", 1, 1, 0, "°C"),
        s(0x58, "temperature", 1, 0.35, 1, "°C"),
        s(0x59, "count", 1),
        s(0x5A, "count", 2),
        s(0x5B, "count", 4),
        s(0x5C, "power", 4, 0.01, 2, "W"),
        s(0x5D, "current", 2, 0.001, 3, "A"),
        u(0x5E, "direction", 2, 0.01, 2, "°"),
        u(0x5F, "precipitation", 2, 0.1, 1, "mm"),
        u(0x60, "channel", 1),
        u(0x61, "rotational_speed", 2, 1, 0, "rpm"),
        s(0x62, "speed", 4, 0.000001, 6, "m/s"),
        s(0x63, "acceleration", 4, 0.000001, 6, "m/s²"),
        u(0x64, "light_level", 1),
        u(0x65, "settings_revision", 1),
        u(0xF0, "device_type_id", 2),
        other(0xF1, "firmware_version", 4, .firmware4),
        other(0xF2, "firmware_version", 3, .firmware3),
    ]

    /// Indexed by object id.
    static let byID: [BTHomeObjectSpec?] = {
        var table = [BTHomeObjectSpec?](repeating: nil, count: 256)
        for spec in all { table[Int(spec.id)] = spec }
        return table
    }()

    static func spec(_ id: UInt8) -> BTHomeObjectSpec? { byID[Int(id)] }
}

// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

/// libdbus's headers: its own folder and the one of its architecture's `dbus-arch-deps.h` (what
/// `pkg-config --cflags dbus-1` says), in the sysroot of a cross build (`DOSETAP_SYSROOT`, set by
/// scripts/cross-arm64.sh) or this machine's. A folder that does not exist is ignored.
let dbusHeaders = ["/usr/include/dbus-1.0", "/usr/lib/x86_64-linux-gnu/dbus-1.0/include",
                   "/usr/lib/aarch64-linux-gnu/dbus-1.0/include"].map { "-I" + (Context.environment["DOSETAP_SYSROOT"] ?? "") + $0 }

let package = Package(
    name: "DoseTap",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dosetap", targets: ["dosetap"]),
        .executable(name: "dosetap-front", targets: ["dosetap-front"]),
        .library(name: "DoseTapCore", targets: ["DoseTapCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        // C system libraries (Debian -dev packages).
        // libudev (Debian's libudev-dev for the header), loaded with dlopen by the first UdevClient: see CUdev.h.
        .target(name: "CUdev", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CUMockdev", pkgConfig: "umockdev-1.0", providers: [.apt(["libumockdev-dev"])]),
        // libdbus (Debian's libdbus-1-dev for the headers): CDBus names them and links nothing, CDBusLazy loads
        // the library with dlopen at the first connection: see CDBusLazy.h. Not pkg-config, whose `-ldbus-1`
        // SwiftPM would put on the link line (the headers' folders are `dbusHeaders`, at the top).
        .systemLibrary(name: "CDBus"),
        .target(name: "CDBusLazy", cSettings: [.unsafeFlags(dbusHeaders)], linkerSettings: [.linkedLibrary("dl")]),
        // The household's broker (#12): libmosquitto (Debian's libmosquitto-dev for the headers), loaded with
        // dlopen at the first MQTT client: see CMosquitto.h.
        .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("dl")]),
        // evdev: EVIOC* ioctls as non-variadic C functions (linux-libc-dev headers).
        .target(name: "CLinuxInput"),
        // timerfd and epoll for the scheduling port (macros Swift cannot import).
        .target(name: "CLinuxTime"),
        // The alarm's own sound path (#32): ALSA's PCM API, libasound.so.2 loaded at the first sound
        // (the headers of libasound2-dev to build; libasound2, a Depends of the package, to run).
        .target(name: "CALSA", linkerSettings: [.linkedLibrary("dl")]),

        // The version, git commit and build date (`dosetap --version`), stamped by the BuildStamp plugin.
        .plugin(name: "BuildStamp", capability: .buildTool()),
        .target(name: "DoseTapVersion", swiftSettings: strict, plugins: ["BuildStamp"]),

        // Pure domain: rules, predictions, ports. No I/O, no C modules.
        .target(name: "DoseTapCore", swiftSettings: strict),

        // AES-128-CCM for encrypted BTHome adverts, built on swift-crypto's AES block cipher.
        .target(
            name: "DoseTapCrypto",
            dependencies: ["DoseTapCore", .product(name: "_CryptoExtras", package: "swift-crypto"),
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),

        // The store without GRDB (#29): where the files are (DataPaths, DataFolder), the dose log's rows (their SQL
        // and decoding) and the schema's versions — shared by the store and the one-shot front, which reads
        // through SQLite's C API (CSQLite). DoseTapStore re-exports it.
        .target(name: "DoseTapStoreFormat", dependencies: ["DoseTapCore"], swiftSettings: strict),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),

        // The SQLite file (GRDB): schema, migrations, samples.
        .target(
            name: "DoseTapStore",
            dependencies: ["DoseTapCore", "DoseTapStoreFormat", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),

        // What the command line reads of the machine as plain files and the C library (#29): the time zone
        // (SystemTimeZone, SystemClock), the power supplies from sysfs, UPower's configuration, the running agent's
        // records for the command line and the wake helper's CHECK — no libudev, D-Bus or server stacks, so the
        // one-shot front reads them exactly as the full program does. DoseTapLinux re-exports it.
        .target(name: "DoseTapSystemFiles", dependencies: ["DoseTapCore", "CLinuxTime"], swiftSettings: strict),

        // Adapters to the real machine.
        .target(
            name: "DoseTapLinux",
            dependencies: [
                "DoseTapCore", "DoseTapSystemFiles", "CUdev", "CDBus", "CDBusLazy", "CLinuxInput", "CLinuxTime", "CMosquitto", "CALSA",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ],
            swiftSettings: strict + [.unsafeFlags(dbusHeaders.flatMap { ["-Xcc", $0] })]
        ),

        // Outbound HTTP of the backup cascade (#12: ntfy pushes, phone calls), through async-http-client.
        .target(
            name: "DoseTapHTTP",
            dependencies: ["DoseTapCore", .product(name: "AsyncHTTPClient", package: "async-http-client")],
            swiftSettings: strict
        ),

        // config.toml: its model and its parser (TOMLKit), apart from the agent's wiring.
        .target(
            name: "DoseTapConfig",
            dependencies: ["DoseTapCore", .product(name: "TOMLKit", package: "TOMLKit")],
            swiftSettings: strict
        ),

        // The presenters of Core's own values (JSON, a prediction, tonight, a dose event) and the typed-number
        // rule: Core only, so the one-shot front (dosetap-front) prints the same bytes as the full program.
        .target(name: "DoseTapPresenters", dependencies: ["DoseTapCore"], swiftSettings: strict),

        // The application layer (#26): use cases, presenters and the event types. Core, Store, the config
        // model and the keyed hash (DoseTapCrypto: computation only), and nothing of the machine: every
        // adapter arrives through a port, injected by the agent or the CLI (`MachinePorts`).
        .target(
            name: "DoseTapApp",
            dependencies: [
                "DoseTapCore", "DoseTapPresenters", "DoseTapStore", "DoseTapConfig", "DoseTapCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // Daemon wiring: services, config, lifecycle.
        .target(
            name: "DoseTapAgent",
            dependencies: [
                "DoseTapCore", "DoseTapApp", "DoseTapConfig", "DoseTapStore", "DoseTapLinux", "DoseTapCrypto", "DoseTapHTTP", "DoseTapVersion",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: strict
        ),

        // The local web dashboard (#14): Hummingbird 2, a service of the agent's ServiceGroup.
        .target(
            name: "DoseTapWeb",
            dependencies: [
                "DoseTapCore", "DoseTapApp", "DoseTapConfig", "DoseTapStore", "DoseTapLinux",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // The command line.
        .executableTarget(
            name: "dosetap",
            dependencies: [
                "DoseTapCore", "DoseTapApp", "DoseTapStore", "DoseTapLinux", "DoseTapAgent", "DoseTapWeb", "DoseTapVersion", "DoseTapHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["exports.map"],
            swiftSettings: strict,
            // Export no symbols (see exports.map). Linked by lld with packed relative relocations (DT_RELR,
            // glibc ≥ 2.36): the 150,000 relative relocations of a PIE this size take 30 KB instead of 3.6 MB,
            // which every start read (docs/performance.md, "One-shot commands beside sqlite3", step 5).
            linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--as-needed",
                                           "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/dosetap/exports.map"],
                                          .when(platforms: [.linux]))]
        ),

        // The installed `dosetap` (#29): answers the frequent one-shot commands itself (Core and the presenters
        // only) and runs the full program (installed as lib/dosetap/dosetap) for everything else. No exported
        // symbols, and static (glibc, SQLite and the C++ runtime inside), not position-independent: the dynamic
        // loader's work was a third of its start, and a PIE's own relocations a third of what was left
        // (docs/performance.md, "One-shot commands beside sqlite3", step 8; docs/architecture.md says what that costs).
        // The front's hand-over to the full program: C, in a constructor that runs before the Swift runtime.
        .target(name: "CFrontDispatch"),
        .executableTarget(
            name: "dosetap-front",
            dependencies: ["DoseTapCore", "DoseTapPresenters", "DoseTapStoreFormat", "DoseTapSystemFiles", "CSQLite", "CFrontDispatch"],
            swiftSettings: strict,
            linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--as-needed",
                                           "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/dosetap/exports.map"],
                                          .when(platforms: [.linux])),
                             // Release only, and with --static-swift-stdlib (make release, cross-arm64.sh): a debug
                             // build (the tests') links Foundation's shared libraries, which a static link cannot.
                             .unsafeFlags(["-static-executable"],
                                          .when(platforms: [.linux], configuration: .release))]
        ),

        // Benchmarks (not built by the test command): swift run -c release feedback-latency
        // swift run -c release prediction-accuracy DIR [--json]: the battery forecast on real nights (#24).
        .executableTarget(
            name: "prediction-accuracy",
            dependencies: ["DoseTapCore"],
            path: "Benchmarks/PredictionAccuracy",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "feedback-latency",
            dependencies: ["DoseTapAgent", "DoseTapApp", "DoseTapLinux", "DoseTapStore", "DoseTapCore", "DoseTapTesting", "CLinuxInput",
                           .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/FeedbackLatency",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "button-latency",
            dependencies: ["DoseTapAgent", "DoseTapApp", "DoseTapLinux", "DoseTapStore", "DoseTapCore", "DoseTapTesting", "DoseTapCrypto",
                           .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/ButtonLatency",
            swiftSettings: strict
        ),

        .executableTarget(
            name: "household-latency",
            dependencies: ["DoseTapAgent", "DoseTapApp", "DoseTapLinux", "DoseTapStore", "DoseTapCore", "DoseTapTesting",
                           .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/HouseholdLatency",
            swiftSettings: strict
        ),

        // Fakes for every port and fixture loaders; used by tests only.
        .target(
            name: "DoseTapTesting",
            dependencies: ["DoseTapCore", "DoseTapLinux", "DoseTapCrypto", "CUMockdev", .product(name: "Subprocess", package: "swift-subprocess"),
                           .product(name: "Crypto", package: "swift-crypto")],
            linkerSettings: [.linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0")]
        ),

        .testTarget(
            name: "DoseTapCoreTests",
            dependencies: ["DoseTapCore", "DoseTapPresenters", "DoseTapTesting", .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapButtonTests",
            dependencies: [
                "DoseTapCore", "DoseTapCrypto", "DoseTapTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapStoreTests",
            dependencies: ["DoseTapStore", "DoseTapTesting", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapLinuxTests",
            // DoseTapAgent: the overnight re-check's umockdev test runs the battery monitor in UdevFixtures.
            dependencies: ["DoseTapLinux", "DoseTapTesting", "CUMockdev", "DoseTapAgent", "DoseTapApp",
                           .product(name: "PropertyBased", package: "swift-property-based")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapAgentTests",
            dependencies: [
                "DoseTapAgent", "DoseTapApp", "DoseTapTesting", "DoseTapStore", "DoseTapLinux", "DoseTapCrypto", "DoseTapHTTP",
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapWebTests",
            dependencies: [
                "DoseTapWeb", "DoseTapApp", "DoseTapAgent", "DoseTapTesting", "DoseTapStore", "DoseTapCore", "DoseTapLinux",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DoseTapCLITests",
            dependencies: ["DoseTapTesting", "DoseTapStore", "DoseTapLinux", "DoseTapCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
    ]
)

// libFuzzer targets (Fuzz/, scripts/fuzz.sh): declared only when DOSETAP_FUZZ is set, so the normal build
// and `swift build --build-tests` never see them (they have no main() of their own: libFuzzer's runtime
// provides it, linked by --sanitize=fuzzer). Build one with
//   DOSETAP_FUZZ=1 swift build -c release -Xswiftc -enable-testing --sanitize=fuzzer --product fuzz-bthome --scratch-path .build-fuzz
if Context.environment["DOSETAP_FUZZ"] != nil {
    package.targets += [
        .target(name: "DoseTapFuzzSupport", path: "Fuzz/Support", swiftSettings: strict),
        .executableTarget(name: "fuzz-bthome", dependencies: ["DoseTapCore", "DoseTapFuzzSupport"],
                          path: "Fuzz/BTHome", swiftSettings: strict),
        .executableTarget(name: "fuzz-bthome-decrypt", dependencies: ["DoseTapCore", "DoseTapCrypto", "DoseTapFuzzSupport"],
                          path: "Fuzz/BTHomeDecrypt", swiftSettings: strict),
        .executableTarget(name: "fuzz-power-supply", dependencies: ["DoseTapCore", "DoseTapFuzzSupport"],
                          path: "Fuzz/PowerSupply", swiftSettings: strict),
        // It calls libdbus's marshalling itself (dbus_message_marshal, …: not among the product's lazy wrappers), so
        // it links libdbus; the wrappers DBusCodec calls answer once it has loaded them (FuzzDBus.swift).
        .executableTarget(name: "fuzz-dbus", dependencies: ["DoseTapLinux", "CDBus", "CDBusLazy", "DoseTapFuzzSupport"],
                          path: "Fuzz/DBus", swiftSettings: strict + [.unsafeFlags(dbusHeaders.flatMap { ["-Xcc", $0] })],
                          linkerSettings: [.linkedLibrary("dbus-1")]),
        .executableTarget(name: "fuzz-hid", dependencies: ["DoseTapLinux", "DoseTapCore", "CLinuxInput", "DoseTapFuzzSupport"],
                          path: "Fuzz/HID", swiftSettings: strict),
        .executableTarget(name: "fuzz-flic2", dependencies: ["DoseTapCore", "DoseTapCrypto", "DoseTapFuzzSupport"],
                          path: "Fuzz/Flic2", swiftSettings: strict),
        .executableTarget(name: "fuzz-config", dependencies: ["DoseTapConfig", "DoseTapFuzzSupport"],
                          path: "Fuzz/Config", swiftSettings: strict),
    ]
}

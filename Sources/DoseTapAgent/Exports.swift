// config.toml's model and parser live in DoseTapConfig (DoseTapCore + TOMLKit, nothing of the agent's
// wiring), so that the config fuzzer builds without SwiftNIO, GRDB or Hummingbird; every user of the
// agent's module still sees them.
@_exported import DoseTapConfig

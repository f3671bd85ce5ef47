// SystemTimeZone and SystemClock live in DoseTapSystemZone (Foundation and the C library only), shared with the
// one-shot front (#29); every user of the adapters sees them as before.
@_exported import DoseTapSystemZone

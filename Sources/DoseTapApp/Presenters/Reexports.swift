// The presenters that need nothing but Core live in DoseTapPresenters, so that the small one-shot
// executable (dosetap-front) can print the same bytes without linking the store, the config parser or
// the crypto; every face that imports DoseTapApp sees them as before.
@_exported import DoseTapPresenters

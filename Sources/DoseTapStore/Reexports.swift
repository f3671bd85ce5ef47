// The store without GRDB (DataPaths, DataFolder, StoreError, the dose log's rows, the schema's versions) lives
// in DoseTapStoreFormat, shared with the one-shot front (#29); every user of the store sees it as before.
@_exported import DoseTapStoreFormat

// What the command line reads of the machine as plain files (the time zone, the power supplies from sysfs, UPower's
// configuration, the agent's records, the wake helper's CHECK) lives in DoseTapSystemFiles (Foundation and the C
// library only), shared with the one-shot front (#29); every user of the adapters sees it as before.
@_exported import DoseTapSystemFiles

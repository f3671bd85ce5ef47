#ifndef DOSETAP_CDBUSLAZY_H
#define DOSETAP_CDBUSLAZY_H
/* libdbus for BlueZ, logind, UPower and the desktop's notifications (DBusConnection), loaded with dlopen
 * when the first connection is made, not at start-up: a command that talks to no bus (`dose status`,
 * `predict`, `alarm list`) would map and relocate it for nothing (docs/performance.md, "One-shot commands
 * beside sqlite3", step 6). CDBus names the headers (pkg-config dbus-1) and links nothing; the functions
 * the Swift code calls are defined in dbus.c (scripts/lazy-library.py) with libdbus's own names and
 * prototypes; each calls the library's once dosetap_dbus_load() has succeeded, and returns its failure
 * value before (NULL for a pointer or a string, 0: FALSE, DBUS_TYPE_INVALID, DBUS_MESSAGE_TYPE_INVALID).
 * libdbus-1-3 is a Depends of the package (packaging/debian/dlopen).
 * A Swift call to a libdbus function not in dbus.c fails to link: add it by generating the file again,
 * from the repository's root, with every function the Swift code calls:
 *   PATH=/opt/swift/usr/bin:$PATH scripts/lazy-library.py --failure-int 0 --null-strings \
 *     --package libdbus-1-3 $(pkg-config --cflags-only-I dbus-1 | sed 's/-I/--include-dir /g') \
 *     Sources/CDBusLazy/include/CDBusLazy.h libdbus-1.so.3 dosetap_dbus \
 *     $(grep -rhoE '\bdbus_[a-z_0-9]+\(' Sources --include=*.swift | sort -u | tr -d '(' | grep -v '^dbus_bool_t$') \
 *     > Sources/CDBusLazy/dbus.c */
#include <stddef.h>
#include <dbus/dbus.h>

/* Loads libdbus-1.so.3 and its functions, once (thread-safe). 0, or -1 with the reason in `error`. */
int dosetap_dbus_load(char *error, size_t length);

#endif

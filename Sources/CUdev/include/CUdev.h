#ifndef DOSETAP_CUDEV_H
#define DOSETAP_CUDEV_H
/* libudev for the power supplies, the HID remotes and the vibration motor (UdevClient), loaded with dlopen
 * when the first UdevClient is made, not at start-up: libudev.so.1 brings libsystemd's libcap, and
 * `dose status` or `predict`, which read no device, would map and relocate them for nothing
 * (docs/performance.md, "One-shot commands beside sqlite3", step 6).
 * The functions the Swift code calls are defined in udev.c (scripts/lazy-library.py) with libudev's own
 * names and prototypes; each calls the library's once dosetap_udev_load() has succeeded, and returns its
 * failure value before (NULL for a pointer or a string, -ENOSYS). libudev1 is a Depends of the package (packaging/debian/dlopen).
 * A Swift call to a libudev function not in udev.c fails to link (no library is linked): add it by
 * generating the file again, from the repository's root, with every function the Swift code calls:
 *   PATH=/opt/swift/usr/bin:$PATH scripts/lazy-library.py --failure-int -ENOSYS --null-strings --package libudev1 \
 *     Sources/CUdev/include/CUdev.h libudev.so.1 dosetap_udev \
 *     $(grep -rhoE '\budev_[a-z_0-9]+\(' Sources --include=*.swift | sort -u | tr -d '(') \
 *     > Sources/CUdev/udev.c */
#include <errno.h>
#include <stddef.h>
#include <libudev.h>

/* Loads libudev.so.1 and its functions, once (thread-safe). 0, or -1 with the reason in `error`. */
int dosetap_udev_load(char *error, size_t length);

#endif

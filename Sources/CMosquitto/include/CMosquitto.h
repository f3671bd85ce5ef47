#ifndef DOSETAP_CMOSQUITTO_H
#define DOSETAP_CMOSQUITTO_H
/* libmosquitto for the household link (MQTTClient), loaded with dlopen when the first client is made,
 * not at start-up: libmosquitto.so.1 brings libssl and libcrypto, and a command or an agent without a
 * household would map and relocate all three for nothing (docs/performance.md, "One-shot commands").
 * The functions the Swift code calls are defined in mosquitto.c (scripts/lazy-library.py) with
 * libmosquitto's own names and prototypes; each calls the library's once dosetap_mosquitto_load() has
 * succeeded, and returns its failure value before. libmosquitto1 is a Depends of the package
 * (packaging/debian/dlopen).
 * A Swift call to a libmosquitto function not in mosquitto.c fails to link (no library is linked): add it by
 * generating the file again, from the repository's root, with every function the Swift code calls:
 *   PATH=/opt/swift/usr/bin:$PATH scripts/lazy-library.py --failure-int MOSQ_ERR_NOT_SUPPORTED \
 *     --package libmosquitto1 Sources/CMosquitto/include/CMosquitto.h libmosquitto.so.1 dosetap_mosquitto \
 *     $(grep -rhoE '\bmosquitto_[a-z_0-9]+\(' Sources --include=*.swift | sort -u | tr -d '(') \
 *     > Sources/CMosquitto/mosquitto.c */
#include <stddef.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

/* Loads libmosquitto.so.1 and its functions, once (thread-safe). 0, or -1 with the reason in `error`. */
int dosetap_mosquitto_load(char *error, size_t length);

#endif

#ifndef DOSETAP_CLINUXINPUT_H
#define DOSETAP_CLINUXINPUT_H
/*
 * evdev for Swift: the EVIOC* request numbers are function-like macros and ioctl(2) is variadic, so
 * neither imports. Each request gets one small non-variadic function here. All of them return what
 * the system call returns (-1 with errno set on failure). Plain constants (EV_FF, FF_RUMBLE, FF_GAIN,
 * ...) import into Swift directly from <linux/input.h>.
 */
#include <linux/input.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* sizeof(struct ff_effect) and sizeof(struct input_event) as this build sees them. */
size_t dosetap_ff_effect_size(void);
size_t dosetap_input_event_size(void);

/* EVIOCGBIT(EV_FF, len): the force-feedback capability bits, `len` bytes (FF_CNT / 8 is enough).
 * Returns the number of bytes the kernel filled in. */
int dosetap_evdev_get_ff_bits(int fd, uint8_t *bits, size_t len);

/* EVIOCGBIT(0, len): the event types the device supports (EV_KEY, EV_FF, ...). */
int dosetap_evdev_get_event_bits(int fd, uint8_t *bits, size_t len);

/* EVIOCSFF: uploads (effect->id == -1) or updates (a known id) an effect. The kernel writes the
 * assigned id back into effect->id. */
int dosetap_evdev_upload_effect(int fd, struct ff_effect *effect);

/* EVIOCRMFF: removes an uploaded effect (stopping it if it plays). */
int dosetap_evdev_remove_effect(int fd, int effect_id);

/* EVIOCGEFFECTS: how many effects the device can hold / play at once. */
int dosetap_evdev_get_effect_count(int fd, int *count);

/* EVIOCGRAB: 1 takes the device exclusively (its events no longer reach other readers), 0 releases. */
int dosetap_evdev_grab(int fd, int grab);

/* EVIOCGNAME(len): the device name, NUL-terminated in `name`. */
int dosetap_evdev_get_name(int fd, char *name, size_t len);

/* Fills `effect` (zeroed first) as an FF_RUMBLE effect. id -1 asks for a new slot. */
void dosetap_ff_effect_rumble(struct ff_effect *effect, int16_t id, uint16_t strong_magnitude,
                              uint16_t weak_magnitude, uint16_t length_ms, uint16_t delay_ms);

/* Fills `effect` (zeroed first) as an FF_PERIODIC effect (waveform FF_SINE and friends). */
void dosetap_ff_effect_periodic(struct ff_effect *effect, int16_t id, uint16_t waveform,
                                uint16_t period_ms, int16_t magnitude, uint16_t direction,
                                uint16_t length_ms, uint16_t delay_ms);

/* Fills `effect` (zeroed first) as an FF_CONSTANT effect. */
void dosetap_ff_effect_constant(struct ff_effect *effect, int16_t id, int16_t level,
                                uint16_t direction, uint16_t length_ms, uint16_t delay_ms);

/* The union members of struct ff_effect, read without touching the union from Swift. */
uint16_t dosetap_ff_effect_rumble_strong(const struct ff_effect *effect);
uint16_t dosetap_ff_effect_rumble_weak(const struct ff_effect *effect);
int16_t dosetap_ff_effect_periodic_magnitude(const struct ff_effect *effect);
uint16_t dosetap_ff_effect_periodic_waveform(const struct ff_effect *effect);
uint16_t dosetap_ff_effect_periodic_period(const struct ff_effect *effect);
int16_t dosetap_ff_effect_constant_level(const struct ff_effect *effect);

/* An input_event with a zero timestamp (the kernel ignores the time of written events). */
struct input_event dosetap_input_event_make(uint16_t type, uint16_t code, int32_t value);

/* Writes one input_event. Returns the bytes written (sizeof(struct input_event)) or -1. Used for
 * EV_FF play (code = effect id, value = 1 play / 0 stop) and FF_GAIN (code FF_GAIN, 0...0xFFFF). */
long dosetap_evdev_write_event(int fd, uint16_t type, uint16_t code, int32_t value);

/* Reads one input_event (blocking or not, as the fd was opened). Returns the bytes read or -1;
 * the timestamp is split into seconds and microseconds. */
long dosetap_evdev_read_event(int fd, uint16_t *type, uint16_t *code, int32_t *value,
                              int64_t *seconds, int64_t *microseconds);

/* --- HID buttons (remotes read as keys) ------------------------------------------------------ */

/* EVIOCGKEY(len): the keys held down right now, one bit per KEY_* / BTN_* code (KEY_CNT / 8 bytes
 * is enough). Used to resynchronise after SYN_DROPPED and to ignore a key already held at open. */
int dosetap_evdev_get_key_state(int fd, uint8_t *bits, size_t len);

/* EVIOCGUNIQ(len): the device's unique id, NUL-terminated in `uniq` (for a Bluetooth remote: its
 * address, as BlueZ or the kernel's hidp wrote it). Returns the length or -1 (ENOENT when empty). */
int dosetap_evdev_get_uniq(int fd, char *uniq, size_t len);

/* One `struct input_event` record (dosetap_input_event_size() bytes, as read(2) returns them) taken
 * apart and put together, so Swift never depends on the timeval layout (64-bit time on 64-bit
 * kernels, 32-bit seconds and microseconds on 32-bit ones such as armhf Raspberry Pi OS). */
void dosetap_input_event_unpack(const void *record, uint16_t *type, uint16_t *code, int32_t *value,
                                int64_t *seconds, int64_t *microseconds);
void dosetap_input_event_pack(void *record, int64_t seconds, int64_t microseconds, uint16_t type,
                              uint16_t code, int32_t value);

/* A private epoll set for evdev nodes, so one DispatchSource (on the epoll descriptor, which never
 * hangs up) watches them all and a node that hangs up (EPOLLHUP on unplug) is removed and closed on the
 * owner's queue, in order. (libdispatch's own handling of EPOLLHUP on Linux has crashed in
 * _dispatch_event_loop_drain when read sources on hung-up descriptors were cancelled concurrently.)
 * Each returns what the system call returns (-1 with errno set on failure). */
int dosetap_epoll_create(void);
int dosetap_epoll_add(int epfd, int fd);
int dosetap_epoll_remove(int epfd, int fd);
/* Without waiting: up to `max` (at most 64) ready descriptors and their EPOLL* event bits. */
int dosetap_epoll_ready(int epfd, int *fds, uint32_t *events, int max);
/* EPOLLHUP | EPOLLERR, for Swift. */
uint32_t dosetap_epoll_hangup_bits(void);

#ifdef __cplusplus
}
#endif
#endif

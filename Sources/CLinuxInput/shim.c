#include "CLinuxInput.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

size_t dosetap_ff_effect_size(void) { return sizeof(struct ff_effect); }
size_t dosetap_input_event_size(void) { return sizeof(struct input_event); }

int dosetap_evdev_get_ff_bits(int fd, uint8_t *bits, size_t len) {
    return ioctl(fd, EVIOCGBIT(EV_FF, len), bits);
}

int dosetap_evdev_get_event_bits(int fd, uint8_t *bits, size_t len) {
    return ioctl(fd, EVIOCGBIT(0, len), bits);
}

int dosetap_evdev_upload_effect(int fd, struct ff_effect *effect) {
    return ioctl(fd, EVIOCSFF, effect);
}

int dosetap_evdev_remove_effect(int fd, int effect_id) {
    /* EVIOCRMFF takes the id as the argument value, not a pointer to it. */
    return ioctl(fd, EVIOCRMFF, (long)effect_id);
}

int dosetap_evdev_get_effect_count(int fd, int *count) {
    return ioctl(fd, EVIOCGEFFECTS, count);
}

int dosetap_evdev_grab(int fd, int grab) {
    /* EVIOCGRAB also takes its flag by value. */
    return ioctl(fd, EVIOCGRAB, (long)grab);
}

int dosetap_evdev_get_name(int fd, char *name, size_t len) {
    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    memset(name, 0, len);
    int rc = ioctl(fd, EVIOCGNAME(len - 1), name);
    return rc;
}

void dosetap_ff_effect_rumble(struct ff_effect *effect, int16_t id, uint16_t strong_magnitude,
                              uint16_t weak_magnitude, uint16_t length_ms, uint16_t delay_ms) {
    memset(effect, 0, sizeof(*effect));
    effect->type = FF_RUMBLE;
    effect->id = id;
    effect->replay.length = length_ms;
    effect->replay.delay = delay_ms;
    effect->u.rumble.strong_magnitude = strong_magnitude;
    effect->u.rumble.weak_magnitude = weak_magnitude;
}

void dosetap_ff_effect_periodic(struct ff_effect *effect, int16_t id, uint16_t waveform,
                                uint16_t period_ms, int16_t magnitude, uint16_t direction,
                                uint16_t length_ms, uint16_t delay_ms) {
    memset(effect, 0, sizeof(*effect));
    effect->type = FF_PERIODIC;
    effect->id = id;
    effect->direction = direction;
    effect->replay.length = length_ms;
    effect->replay.delay = delay_ms;
    effect->u.periodic.waveform = waveform;
    effect->u.periodic.period = period_ms;
    effect->u.periodic.magnitude = magnitude;
}

void dosetap_ff_effect_constant(struct ff_effect *effect, int16_t id, int16_t level,
                                uint16_t direction, uint16_t length_ms, uint16_t delay_ms) {
    memset(effect, 0, sizeof(*effect));
    effect->type = FF_CONSTANT;
    effect->id = id;
    effect->direction = direction;
    effect->replay.length = length_ms;
    effect->replay.delay = delay_ms;
    effect->u.constant.level = level;
}

uint16_t dosetap_ff_effect_rumble_strong(const struct ff_effect *effect) { return effect->u.rumble.strong_magnitude; }
uint16_t dosetap_ff_effect_rumble_weak(const struct ff_effect *effect) { return effect->u.rumble.weak_magnitude; }
int16_t dosetap_ff_effect_periodic_magnitude(const struct ff_effect *effect) { return effect->u.periodic.magnitude; }
uint16_t dosetap_ff_effect_periodic_waveform(const struct ff_effect *effect) { return effect->u.periodic.waveform; }
uint16_t dosetap_ff_effect_periodic_period(const struct ff_effect *effect) { return effect->u.periodic.period; }
int16_t dosetap_ff_effect_constant_level(const struct ff_effect *effect) { return effect->u.constant.level; }

struct input_event dosetap_input_event_make(uint16_t type, uint16_t code, int32_t value) {
    struct input_event event;
    memset(&event, 0, sizeof(event));
    event.type = type;
    event.code = code;
    event.value = value;
    return event;
}

long dosetap_evdev_write_event(int fd, uint16_t type, uint16_t code, int32_t value) {
    struct input_event event = dosetap_input_event_make(type, code, value);
    ssize_t n;
    do {
        n = write(fd, &event, sizeof(event));
    } while (n < 0 && errno == EINTR);
    if (n >= 0 && (size_t)n != sizeof(event)) {
        errno = EIO;
        return -1;
    }
    return (long)n;
}

long dosetap_evdev_read_event(int fd, uint16_t *type, uint16_t *code, int32_t *value,
                              int64_t *seconds, int64_t *microseconds) {
    struct input_event event;
    ssize_t n;
    do {
        n = read(fd, &event, sizeof(event));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if ((size_t)n != sizeof(event)) {
        errno = EIO;
        return -1;
    }
    *type = event.type;
    *code = event.code;
    *value = event.value;
    *seconds = (int64_t)event.input_event_sec;
    *microseconds = (int64_t)event.input_event_usec;
    return (long)n;
}

int dosetap_evdev_get_key_state(int fd, uint8_t *bits, size_t len) {
    memset(bits, 0, len);
    return ioctl(fd, EVIOCGKEY(len), bits);
}

int dosetap_evdev_get_uniq(int fd, char *uniq, size_t len) {
    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    memset(uniq, 0, len);
    return ioctl(fd, EVIOCGUNIQ(len - 1), uniq);
}

void dosetap_input_event_unpack(const void *record, uint16_t *type, uint16_t *code, int32_t *value,
                                int64_t *seconds, int64_t *microseconds) {
    struct input_event event;
    memcpy(&event, record, sizeof(event));
    *type = event.type;
    *code = event.code;
    *value = event.value;
    *seconds = (int64_t)event.input_event_sec;
    *microseconds = (int64_t)event.input_event_usec;
}

void dosetap_input_event_pack(void *record, int64_t seconds, int64_t microseconds, uint16_t type,
                              uint16_t code, int32_t value) {
    struct input_event event;
    memset(&event, 0, sizeof(event));
    event.input_event_sec = seconds;
    event.input_event_usec = microseconds;
    event.type = type;
    event.code = code;
    event.value = value;
    memcpy(record, &event, sizeof(event));
}

int dosetap_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int dosetap_epoll_add(int epfd, int fd) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    event.events = EPOLLIN;
    event.data.fd = fd;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int dosetap_epoll_remove(int epfd, int fd) {
    struct epoll_event event;
    memset(&event, 0, sizeof(event));
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &event);
}

int dosetap_epoll_ready(int epfd, int *fds, uint32_t *events, int max) {
    struct epoll_event ready[64];
    if (max > 64) max = 64;
    if (max <= 0) {
        errno = EINVAL;
        return -1;
    }
    int n;
    do {
        n = epoll_wait(epfd, ready, max, 0);
    } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return n;
}

uint32_t dosetap_epoll_hangup_bits(void) { return EPOLLHUP | EPOLLERR; }

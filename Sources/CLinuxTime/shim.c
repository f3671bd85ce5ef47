#define _GNU_SOURCE /* struct ucred (SO_PEERCRED) */
#include "CLinuxTime.h"
#include <errno.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOCK_REALTIME_ALARM
#define CLOCK_REALTIME_ALARM 8
#endif

int dosetap_timerfd_create(int alarm) {
    return timerfd_create(alarm ? CLOCK_REALTIME_ALARM : CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
}

int dosetap_timerfd_arm(int fd, int64_t seconds, int64_t nanoseconds) {
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = (time_t)seconds;
    spec.it_value.tv_nsec = (long)nanoseconds;
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1; /* 0 would disarm */
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL);
}

int dosetap_timerfd_consume(int fd) {
    uint64_t expirations = 0;
    ssize_t n = read(fd, &expirations, sizeof expirations);
    if (n == (ssize_t)sizeof expirations) return 1;
    if (n < 0 && errno == ECANCELED) return 0;
    return -1;
}

int dosetap_time_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int dosetap_time_epoll_add(int epfd, int fd, uint64_t key) {
    struct epoll_event event = {0};
    event.events = EPOLLIN | EPOLLONESHOT;
    event.data.u64 = key;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int dosetap_time_epoll_remove(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

int dosetap_time_epoll_wait(int epfd, uint64_t *keys, int max) {
    struct epoll_event events[32];
    if (max > 32) max = 32;
    for (;;) {
        int n = epoll_wait(epfd, events, max, -1);
        if (n < 0 && errno == EINTR) continue;
        for (int i = 0; i < n; i++) keys[i] = events[i].data.u64;
        return n;
    }
}

/* ---- The agent's one event loop -------------------------------------------------------------------------- */
#include <sys/eventfd.h>

int dosetap_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void dosetap_eventfd_signal(int fd) {
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

void dosetap_eventfd_drain(int fd) {
    uint64_t value;
    while (read(fd, &value, sizeof value) < 0 && errno == EINTR) {}
}

int dosetap_epoll_watch(int epfd, int fd, uint32_t events, int oneshot, uint64_t key) {
    struct epoll_event event = {0};
    event.events = events | (oneshot ? EPOLLONESHOT : 0);
    event.data.u64 = key;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int dosetap_epoll_wait_events(int epfd, uint64_t *keys, uint32_t *mask, int max, int timeout_ms) {
    struct epoll_event events[64];
    if (max > 64) max = 64;
    for (;;) {
        int n = epoll_wait(epfd, events, max, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        for (int i = 0; i < n; i++) {
            keys[i] = events[i].data.u64;
            mask[i] = events[i].events;
        }
        return n;
    }
}

/* The runtime's hooks (swift/Runtime/Concurrency.h, Swift 5.9 to 6.3 unchanged): swiftcall function
 * pointers. Declared here with the types the runtime gives them. */
#define SWIFTCC __attribute__((swiftcall))
typedef SWIFTCC void (*enqueue_original)(void *job);
typedef SWIFTCC void (*enqueue_delay_original)(unsigned long long delay, void *job);
typedef SWIFTCC void (*enqueue_deadline_original)(long long sec, long long nsec, long long tsec, long long tnsec,
                                                  int clock, void *job);
extern SWIFTCC void (*swift_task_enqueueGlobal_hook)(void *job, enqueue_original original);
extern SWIFTCC void (*swift_task_enqueueGlobalWithDelay_hook)(unsigned long long delay, void *job,
                                                              enqueue_delay_original original);
extern SWIFTCC void (*swift_task_enqueueGlobalWithDeadline_hook)(long long sec, long long nsec, long long tsec,
                                                                 long long tnsec, int clock, void *job,
                                                                 enqueue_deadline_original original);
/* The runtime's own reading of the clock a deadline is on (continuous, suspending: their ids and POSIX
 * clocks changed between Swift versions, so the deadline is turned into "nanoseconds from now" with the
 * runtime's own clock, never by guessing which clock_gettime id it means). */
extern SWIFTCC void swift_get_time(long long *seconds, long long *nanoseconds, int clock);

/* swift_job_run(Job *, SerialExecutorRef) (swift/Runtime/Concurrency.h): SerialExecutorRef is two words,
 * { HeapObject *Identity; uintptr_t Implementation }, and the generic executor is both zero. */
typedef struct { void *identity; uintptr_t implementation; } dosetap_serial_executor_ref;
extern SWIFTCC void swift_job_run(void *job, dosetap_serial_executor_ref executor);

void dosetap_run_global_job(void *job) {
    dosetap_serial_executor_ref generic = { NULL, 0 };
    swift_job_run(job, generic);
}

static dosetap_enqueue_fn dosetap_enqueue;
static dosetap_enqueue_after_fn dosetap_enqueue_after;

static SWIFTCC void dosetap_enqueue_hook(void *job, enqueue_original original) {
    (void)original;
    dosetap_enqueue(job);
}

static SWIFTCC void dosetap_enqueue_delay_hook(unsigned long long delay, void *job, enqueue_delay_original original) {
    (void)original;
    dosetap_enqueue_after(job, (uint64_t)delay);
}

static SWIFTCC void dosetap_enqueue_deadline_hook(long long sec, long long nsec, long long tsec, long long tnsec,
                                                  int clock, void *job, enqueue_deadline_original original) {
    (void)tsec; (void)tnsec; (void)original;
    long long now_sec = 0, now_nsec = 0;
    swift_get_time(&now_sec, &now_nsec, clock);
    long long left = (sec - now_sec) * 1000000000LL + (nsec - now_nsec);
    dosetap_enqueue_after(job, left > 0 ? (uint64_t)left : 0);
}

int dosetap_install_global_executor(dosetap_enqueue_fn enqueue, dosetap_enqueue_after_fn enqueue_after) {
    if (swift_task_enqueueGlobal_hook != NULL || swift_task_enqueueGlobalWithDelay_hook != NULL ||
        swift_task_enqueueGlobalWithDeadline_hook != NULL) return 0;
    dosetap_enqueue = enqueue;
    dosetap_enqueue_after = enqueue_after;
    __atomic_store_n(&swift_task_enqueueGlobalWithDelay_hook, dosetap_enqueue_delay_hook, __ATOMIC_SEQ_CST);
    __atomic_store_n(&swift_task_enqueueGlobalWithDeadline_hook, dosetap_enqueue_deadline_hook, __ATOMIC_SEQ_CST);
    __atomic_store_n(&swift_task_enqueueGlobal_hook, dosetap_enqueue_hook, __ATOMIC_SEQ_CST);
    return 1;
}

/* A relative timerfd on CLOCK_MONOTONIC (Task.sleep's delays once the hooks above are installed; libdbus's
 * timeouts, repeating). */
int dosetap_monotonic_timer(uint64_t nanoseconds, uint64_t interval) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return -1;
    struct itimerspec spec = {0};
    if (nanoseconds == 0) nanoseconds = 1; /* 0 would disarm */
    spec.it_value.tv_sec = (time_t)(nanoseconds / 1000000000ULL);
    spec.it_value.tv_nsec = (long)(nanoseconds % 1000000000ULL);
    spec.it_interval.tv_sec = (time_t)(interval / 1000000000ULL);
    spec.it_interval.tv_nsec = (long)(interval % 1000000000ULL);
    if (timerfd_settime(fd, 0, &spec, NULL) != 0) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}

int dosetap_pidfd_open(int pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    return (int)syscall(434, pid, 0); /* the same number on every architecture (the shared table, Linux 5.1+) */
#endif
}

int dosetap_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/* ---- The wake helper (#28) ------------------------------------------------------------------------------ */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

int dosetap_timerfd_arm_absolute(int fd, int64_t seconds) {
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = (time_t)seconds;
    if (spec.it_value.tv_sec <= 0) spec.it_value.tv_nsec = 1; /* 0 would disarm */
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

int dosetap_peer_uid(int fd, uint32_t *uid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    if (length != sizeof cred) { errno = EPROTO; return -1; }
    *uid = (uint32_t)cred.uid;
    return 0;
}

static int unix_address(const char *path, struct sockaddr_un *address) {
    memset(address, 0, sizeof *address);
    address->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof address->sun_path) { errno = ENAMETOOLONG; return -1; }
    strcpy(address->sun_path, path);
    return 0;
}

int dosetap_unix_connect(const char *path) {
    struct sockaddr_un address;
    if (unix_address(path, &address) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int dosetap_unix_listen(const char *path, int backlog) {
    struct sockaddr_un address;
    if (unix_address(path, &address) != 0) return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    unlink(path);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || chmod(path, 0666) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int dosetap_wait_readable(int fd, int timeout_ms) {
    struct pollfd entry = { .fd = fd, .events = POLLIN };
    for (;;) {
        int n = poll(&entry, 1, timeout_ms);
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? -1 : (n > 0 ? 1 : 0);
    }
}

int dosetap_unix_accept(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

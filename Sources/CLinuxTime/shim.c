#include "CLinuxTime.h"
#include <errno.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
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

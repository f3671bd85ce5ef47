#ifndef DOSETAP_CLINUXTIME_H
#define DOSETAP_CLINUXTIME_H
/* Wall-clock timers for the scheduling port: timerfd (absolute, cancelled when the clock is set) and one
 * epoll set to wait on all of them from one thread. Swift cannot import these headers' macros. */
#include <stdint.h>

/* A non-blocking, close-on-exec timerfd on CLOCK_REALTIME (alarm = 0) or CLOCK_REALTIME_ALARM (alarm = 1,
 * wakes the machine from suspend; needs CAP_WAKE_ALARM). -1 and errno on failure. */
int dosetap_timerfd_create(int alarm);
/* Arms it for an absolute wall-clock instant, with TFD_TIMER_CANCEL_ON_SET. 0, or -1 and errno. */
int dosetap_timerfd_arm(int fd, int64_t seconds, int64_t nanoseconds);
/* After readiness: 1 expired, 0 the clock was set (ECANCELED), -1 nothing yet or an error (errno). */
int dosetap_timerfd_consume(int fd);

int dosetap_time_epoll_create(void);
/* EPOLLIN | EPOLLONESHOT, with `key` as the event's data. */
int dosetap_time_epoll_add(int epfd, int fd, uint64_t key);
int dosetap_time_epoll_remove(int epfd, int fd);
/* Blocks until at least one is ready (EINTR retried); fills keys; returns how many, or -1. */
int dosetap_time_epoll_wait(int epfd, uint64_t *keys, int max);
#endif

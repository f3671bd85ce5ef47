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

/* Names the calling thread (the first 15 bytes), as `top` and gdb show it: prctl(PR_SET_NAME). 0, or -1 and errno. */
int dosetap_thread_name(const char *name);

/* ---- The agent's one event loop (DoseTapLinux's EpollLoop) ---------------------------------------------- */

/* A non-blocking, close-on-exec eventfd (the loop's "work queued" signal). -1 and errno on failure. */
int dosetap_eventfd_create(void);
/* Adds 1 to it (wakes the loop). */
void dosetap_eventfd_signal(int fd);
/* Reads and clears it. */
void dosetap_eventfd_drain(int fd);

/* Level-triggered watch for `events` (EPOLLIN = 1, EPOLLOUT = 4; oneshot adds EPOLLONESHOT). 0 or -1. */
int dosetap_epoll_watch(int epfd, int fd, uint32_t events, int oneshot, uint64_t key);
/* Blocks until at least one is ready (EINTR retried); fills keys and their event masks; -1 on error. */
int dosetap_epoll_wait_events(int epfd, uint64_t *keys, uint32_t *events, int max, int timeout_ms);
enum { DOSETAP_EPOLLIN = 1, DOSETAP_EPOLLOUT = 4, DOSETAP_EPOLLERR = 8, DOSETAP_EPOLLHUP = 16 };

/* Swift concurrency's global executor hooks (the runtime's swift_task_enqueueGlobal*_hook, which
 * libswift_Concurrency exports: a static --static-swift-stdlib link resolves them here, where dlsym
 * cannot see them). Once installed, every job the runtime would give to libdispatch's worker pool goes to
 * `enqueue`, and every delayed job (Task.sleep) to `enqueue_after` with the delay left in nanoseconds on a
 * monotonic clock. Returns 1 when installed, 0 when another hook was already there. */
typedef void (*dosetap_enqueue_fn)(void *job);
typedef void (*dosetap_enqueue_after_fn)(void *job, uint64_t nanoseconds);
int dosetap_install_global_executor(dosetap_enqueue_fn enqueue, dosetap_enqueue_after_fn enqueue_after);
/* Runs a job handed to the global executor the way the runtime's own global executor does (libdispatch:
 * swift_job_run with the generic executor): the job's task is then on the generic executor, so nonisolated
 * async code it calls runs on in place. Run "on" a serial executor instead, every call into nonisolated async
 * code would be a hop, a suspension where the code has none (see EpollLoop). */
void dosetap_run_global_job(void *job);
/* An armed, relative, non-blocking timerfd on CLOCK_MONOTONIC firing after `nanoseconds`, then every
 * `interval` (0: once); -1 and errno. */
int dosetap_monotonic_timer(uint64_t nanoseconds, uint64_t interval);

/* A close-on-exec pidfd of process `pid` (pidfd_open, Linux 5.3): readable once the process has exited.
 * -1 and errno (ENOSYS on an older kernel, ESRCH when it is gone). */
int dosetap_pidfd_open(int pid);

/* ---- The wake helper (#28) ------------------------------------------------------------------------------ */

/* Arms a timerfd for an absolute wall-clock instant, plainly (TFD_TIMER_ABSTIME only: a clock that is set
 * moves the instant with it, nothing is cancelled). 0, or -1 and errno. */
int dosetap_timerfd_arm_absolute(int fd, int64_t seconds);
/* The user id of the process at the other end of a connected AF_UNIX socket (SO_PEERCRED, as the kernel
 * recorded it at connect(), in this process's user namespace). 0, or -1 and errno. */
int dosetap_peer_uid(int fd, uint32_t *uid);
/* A close-on-exec, non-blocking AF_UNIX stream socket connected to `path`, or -1 and errno. Replies are
 * awaited with dosetap_wait_readable. */
int dosetap_unix_connect(const char *path);
/* A close-on-exec, non-blocking AF_UNIX stream socket bound to `path` (mode 0666) and listening, or -1 and errno. */
int dosetap_unix_listen(const char *path, int backlog);
/* accept4() with SOCK_CLOEXEC | SOCK_NONBLOCK: the connection, or -1 and errno. */
int dosetap_unix_accept(int listener);
/* poll() one descriptor for reading for at most `timeout_ms`: 1 readable (or hung up), 0 timed out, -1 and errno. */
int dosetap_wait_readable(int fd, int timeout_ms);
#endif

#define _GNU_SOURCE
#include "CALSA.h"

#include <alsa/asoundlib.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The functions used, resolved from libasound.so.2 at the first call of dosetap_alsa_load. */
static struct {
    int (*pcm_open)(snd_pcm_t **, const char *, snd_pcm_stream_t, int);
    int (*pcm_close)(snd_pcm_t *);
    int (*pcm_set_params)(snd_pcm_t *, snd_pcm_format_t, snd_pcm_access_t, unsigned int, unsigned int, int, unsigned int);
    snd_pcm_sframes_t (*pcm_writei)(snd_pcm_t *, const void *, snd_pcm_uframes_t);
    int (*pcm_recover)(snd_pcm_t *, int, int);
    int (*pcm_wait)(snd_pcm_t *, int);
    int (*pcm_delay)(snd_pcm_t *, snd_pcm_sframes_t *);
    int (*pcm_drop)(snd_pcm_t *);
    int (*pcm_start)(snd_pcm_t *);
    snd_pcm_state_t (*pcm_state)(snd_pcm_t *);
    const char *(*strerror)(int);
    int (*lib_error_set_handler)(snd_lib_error_handler_t);
    int (*config_update_free_global)(void);
} alsa;

/* Opening a PCM parses alsa.conf into a global tree (a few hundred kB of heap) that libasound keeps for the
 * process's life. The agent opens one rarely (a check at start, an alarm), so the tree is freed whenever no
 * PCM is open; the lock keeps a free from racing an open on another thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int open_count;

static void release_config_locked(void) {
    if (open_count == 0) alsa.config_update_free_global();
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[256];
static int loaded;

/* ALSA prints its errors ("ALSA lib pcm.c:2666:(snd_pcm_open_noupdate) Unknown PCM …") to standard error by
 * default; the player reports each failure itself, in one line. */
static void silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

#define RESOLVE(field, name)                                                               \
    do {                                                                                   \
        *(void **)(&alsa.field) = dlsym(lib, name);                                        \
        if (alsa.field == NULL) {                                                          \
            snprintf(load_error, sizeof load_error, "libasound.so.2 has no %s", name);     \
            return;                                                                        \
        }                                                                                  \
    } while (0)

static void load(void) {
    void *lib = dlopen("libasound.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load libasound.so.2 (install libasound2): %s", why ? why : "unknown error");
        return;
    }
    RESOLVE(pcm_open, "snd_pcm_open");
    RESOLVE(pcm_close, "snd_pcm_close");
    RESOLVE(pcm_set_params, "snd_pcm_set_params");
    RESOLVE(pcm_writei, "snd_pcm_writei");
    RESOLVE(pcm_recover, "snd_pcm_recover");
    RESOLVE(pcm_wait, "snd_pcm_wait");
    RESOLVE(pcm_delay, "snd_pcm_delay");
    RESOLVE(pcm_drop, "snd_pcm_drop");
    RESOLVE(pcm_start, "snd_pcm_start");
    RESOLVE(pcm_state, "snd_pcm_state");
    RESOLVE(strerror, "snd_strerror");
    RESOLVE(lib_error_set_handler, "snd_lib_error_set_handler");
    RESOLVE(config_update_free_global, "snd_config_update_free_global");
    alsa.lib_error_set_handler(silent);
    loaded = 1;
}

int dosetap_alsa_load(char *error, size_t length) {
    pthread_once(&once, load);
    if (loaded) return 0;
    if (error != NULL && length > 0) snprintf(error, length, "%s", load_error);
    return -1;
}

int dosetap_alsa_open(void **pcm, const char *device, unsigned channels, unsigned rate, unsigned latency_us) {
    if (!loaded) return -ENOSYS;
    snd_pcm_t *handle = NULL;
    pthread_mutex_lock(&lock);
    int rc = alsa.pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK);
    if (rc == 0) {
        rc = alsa.pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, channels, rate, 1, latency_us);
        if (rc < 0) alsa.pcm_close(handle);
    }
    if (rc == 0) {
        open_count++;
        *pcm = handle;
    } else {
        release_config_locked();
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

long dosetap_alsa_write(void *pcm, const int16_t *samples, unsigned long frames) {
    snd_pcm_sframes_t n = alsa.pcm_writei((snd_pcm_t *)pcm, samples, frames);
    if (n == -EAGAIN) return 0;
    if (n < 0) {
        /* An underrun (-EPIPE) or a suspended device (-ESTRPIPE): prepared again, the caller writes on. */
        int rc = alsa.pcm_recover((snd_pcm_t *)pcm, (int)n, 1);
        return rc < 0 ? rc : 0;
    }
    return n;
}

int dosetap_alsa_wait(void *pcm, int milliseconds) {
    int rc = alsa.pcm_wait((snd_pcm_t *)pcm, milliseconds);
    if (rc < 0) {
        int recovered = alsa.pcm_recover((snd_pcm_t *)pcm, rc, 1);
        return recovered < 0 ? recovered : 1;
    }
    return rc;
}

long dosetap_alsa_delay(void *pcm) {
    snd_pcm_state_t state = alsa.pcm_state((snd_pcm_t *)pcm);
    if (state == SND_PCM_STATE_PREPARED) {
        /* A sound shorter than the start threshold: nothing starts the stream but this. */
        snd_pcm_sframes_t queued = 0;
        if (alsa.pcm_delay((snd_pcm_t *)pcm, &queued) == 0 && queued > 0 && alsa.pcm_start((snd_pcm_t *)pcm) == 0) {
            state = alsa.pcm_state((snd_pcm_t *)pcm);
        }
    }
    if (state != SND_PCM_STATE_RUNNING && state != SND_PCM_STATE_DRAINING) return 0;
    snd_pcm_sframes_t delay = 0;
    int rc = alsa.pcm_delay((snd_pcm_t *)pcm, &delay);
    if (rc < 0) return rc;
    return delay < 0 ? 0 : delay;
}

void dosetap_alsa_close(void *pcm) {
    if (pcm == NULL) return;
    alsa.pcm_drop((snd_pcm_t *)pcm);
    pthread_mutex_lock(&lock);
    alsa.pcm_close((snd_pcm_t *)pcm);
    open_count--;
    release_config_locked();
    pthread_mutex_unlock(&lock);
}

int dosetap_alsa_probe(const char *device) {
    if (!loaded) return -ENOSYS;
    snd_pcm_t *handle = NULL;
    pthread_mutex_lock(&lock);
    int rc = alsa.pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK);
    if (rc == 0) alsa.pcm_close(handle);
    release_config_locked();
    pthread_mutex_unlock(&lock);
    return rc < 0 ? rc : 0;
}

const char *dosetap_alsa_strerror(int error) {
    if (!loaded) return strerror(-error);
    return alsa.strerror(error);
}

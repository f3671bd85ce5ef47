#ifndef DOSETAP_CALSA_H
#define DOSETAP_CALSA_H
/* The alarm's own sound path (#32): ALSA's PCM API from libasound.so.2, loaded with dlopen when first
 * needed (a sound, the cannot-play check), so a command that needs neither never maps or relocates it.
 * ALSA's parsed configuration is freed whenever no PCM is open. libasound2 is a
 * Depends of the package; PipeWire and PulseAudio give ALSA its "default" device (pipewire-alsa,
 * libasound2-plugins), a bare machine its first card. Frames are signed 16-bit little-endian, interleaved. */
#include <stddef.h>
#include <stdint.h>

/* Loads libasound.so.2 and its functions, once (thread-safe). 0, or -1 with the reason in `error`. ALSA's
 * own messages to standard error are silenced: the caller says what went wrong in one line. */
int dosetap_alsa_load(char *error, size_t length);

/* Opens `device` ("default", "null", "hw:1,0", "file:FILE=/tmp/x.raw,FORMAT=raw") for playback without
 * blocking (a busy device is an error at once, not a wait), S16_LE interleaved at `channels` and `rate`,
 * resampled by ALSA when the device needs it, with a buffer of `latency_us`. 0 and *pcm set, or a negative
 * ALSA error code. */
int dosetap_alsa_open(void **pcm, const char *device, unsigned channels, unsigned rate, unsigned latency_us);
/* Writes up to `frames` frames; recovers from an underrun. The frames written (0: no room now, wait), or a
 * negative ALSA error code. */
long dosetap_alsa_write(void *pcm, const int16_t *samples, unsigned long frames);
/* Waits up to `milliseconds` for room in the buffer. 1 room, 0 timed out, negative an error. */
int dosetap_alsa_wait(void *pcm, int milliseconds);
/* The frames written but not yet played (0 once the stream has stopped), or a negative error code. Starts a
 * stream that holds frames but has not started (a sound shorter than the start threshold). */
long dosetap_alsa_delay(void *pcm);
/* Stops at once (what is queued is dropped) and closes. */
void dosetap_alsa_close(void *pcm);
/* Whether `device` opens for playback now (opened without blocking and closed): 0, or a negative error code. */
int dosetap_alsa_probe(const char *device);
/* ALSA's text for an error code. */
const char *dosetap_alsa_strerror(int error);

#endif

// The one-shot front's hand-over to the full program (#29), in C so that it can run before anything else.
#ifndef CFRONTDISPATCH_H
#define CFRONTDISPATCH_H

/// Executes the full program with `argv` unchanged: `../lib/dosetap/dosetap` from this executable's folder, else
/// `dosetap` beside it (the build folder), never this executable itself. Returns only on failure, after saying
/// why in one line on standard error; the caller exits with the returned status (126: it cannot be run, 127: it
/// is missing).
int dosetap_front_run_full(char *const argv[]);

#endif

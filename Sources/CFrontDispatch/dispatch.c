// The installed `dosetap` is the one-shot front (#29, Sources/dosetap-front). A command line it does not answer
// itself is handed to the full program here, in a constructor that runs before the Swift runtime, Foundation and
// ICU initialise: the hand-over then costs the exec and little more (docs/performance.md, "One-shot commands
// beside sqlite3"). The command lines the front may answer go on to its Swift `main`, which decides on the
// exact words and calls dosetap_front_run_full itself when it does not answer after all.
#include "CFrontDispatch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(const char *a, const char *b, const char *c, const char *d, const char *e) {
    const char *parts[] = {a, b, c, d, e};
    char line[PATH_MAX + 512];
    size_t used = 0;
    for (size_t i = 0; i < 5; i++) {
        if (parts[i] == NULL) continue;
        size_t n = strlen(parts[i]);
        if (n > sizeof line - 1 - used) n = sizeof line - 1 - used;
        memcpy(line + used, parts[i], n);
        used += n;
    }
    while (used > 0) {
        ssize_t w = write(STDERR_FILENO, line, used);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        memmove(line, line + w, used - (size_t)w);
        used -= (size_t)w;
    }
}

int dosetap_front_run_full(char *const argv[]) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        say("dosetap: the full program is missing (looked for /proc/self/exe); reinstall dosetap\n", NULL, NULL, NULL, NULL);
        return 127;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    const char *folder = ".";
    if (slash != NULL) {
        *slash = '\0';
        folder = self;
    }
    char own_path[PATH_MAX];
    struct stat own;
    int own_known = 0;
    if (slash != NULL) {
        snprintf(own_path, sizeof own_path, "%s/%s", self, slash + 1);
        own_known = stat(own_path, &own) == 0;
    }
    const char *suffixes[] = {"/../lib/dosetap/dosetap", "/dosetap"};
    char candidates[2][PATH_MAX];
    for (int i = 0; i < 2; i++) {
        snprintf(candidates[i], sizeof candidates[i], "%s%s", folder, suffixes[i]);
        struct stat s;
        if (stat(candidates[i], &s) != 0 || !S_ISREG(s.st_mode)) continue;
        if (own_known && s.st_dev == own.st_dev && s.st_ino == own.st_ino) continue;
        execv(candidates[i], argv);
        int code = errno;
        say("dosetap: cannot run the full program ", candidates[i], ": ", strerror(code), " (reinstall dosetap)\n");
        return 126;
    }
    say("dosetap: the full program is missing (looked for ", candidates[0], "); reinstall dosetap\n", NULL, NULL);
    return 127;
}

// glibc calls an executable's constructors with (argc, argv, envp). Priority 101: before the Swift runtime's and
// the libraries' own initialisers in this executable.
__attribute__((constructor(101))) static void dosetap_front_early(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc >= 2 && strcmp(argv[1], "predict") == 0) return;
    if (argc >= 3 && strcmp(argv[1], "dose") == 0 && strcmp(argv[2], "status") == 0) return;
    if (argc >= 3 && strcmp(argv[1], "alarm") == 0 && strcmp(argv[2], "list") == 0) return;
    if (argc >= 2 && strcmp(argv[1], "status") == 0) return;
    _exit(dosetap_front_run_full(argv));
}

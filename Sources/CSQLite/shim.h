// SQLite's C API for the one-shot front (#29: read-only, no GRDB). The library is Debian's libsqlite3-0, the
// one GRDB links in the full program.
#include <sqlite3.h>

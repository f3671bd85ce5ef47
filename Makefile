# DoseTap — the two commands of the README:
#   make run    build and run the agent in the foreground
#   make test   run every test (unit, property, store, CLI, hardware fixtures under umockdev, a short fuzz run)
# and, for hardening: make fuzz (10^7 executions per fuzz target), make sanitize (ASan, TSan).
# make install: the lean release build (static Swift runtime), the systemd user unit, the udev rules, the man
# pages and the shell completions. make deb: the same as a Debian package (packaging/debian/, docs/packaging.md).
SWIFT ?= swift
ARGS ?=

# make install [PREFIX=…] [DESTDIR=…]. The default PREFIX is your own ~/.local: no root needed for the
# binary and the user unit (~/.local/share/systemd/user is in the user manager's search path, as are
# /usr/local/share/systemd/user and /usr/share/systemd/user for PREFIX=/usr/local or /usr). The udev rules
# go to /etc/udev/rules.d: installed when that is writable (root, or a DESTDIR staging tree), otherwise
# `sudo make install-udev` installs them alone.
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin
USERUNITDIR ?= $(PREFIX)/share/systemd/user
# The wake helper's system units (dosetap-wake.socket/.service, root's: docs/alarms.md); the package's go to
# /usr/lib/systemd/system.
SYSTEMUNITDIR ?= /etc/systemd/system
UDEVRULESDIR ?= /etc/udev/rules.d
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR ?=
# Where SwiftPM builds the release binary (another scratch path keeps a second release build apart).
SCRATCH ?= .build
# The manual's date: the commit's day, so the same commit gives the same pages.
MANDATE ?= $(shell git log -1 --format=%cs 2>/dev/null || date -u +%Y-%m-%d)
INSTALL ?= install
# The binary make install installs (make deb-arm64 names the cross-built one), and the one-shot front beside it.
BINARY ?= $(SCRATCH)/release/dosetap
FRONT ?= $(dir $(BINARY))dosetap-front
# The installed `dosetap` is the small front (#29: the frequent one-shot commands in a few milliseconds); it runs
# the full program, installed here, for everything else. The front finds it as ../lib/dosetap/dosetap from its
# own folder, so this follows BINDIR.
PKGLIBDIR = $(BINDIR)/../lib/dosetap
# The installed binary keeps its symbol table (named frames in a crash backtrace), not its DWARF (-36 MB).
STRIP ?= strip --strip-debug

.PHONY: run test build release man completions deb build-arm64 deb-arm64 deps deps-test deps-bench bench fuzz sanitize clean install install-udev install-wake uninstall

deps:
	@scripts/install-deps.sh run

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

build: deps
	$(SWIFT) build --product dosetap

release: deps
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --product dosetap --scratch-path $(SCRATCH)
	$(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath --product dosetap-front --scratch-path $(SCRATCH)

# One manual page per command (dosetap.1, dosetap.alarm.add.1, …), generated from the command definitions
# by swift-argument-parser's generate-manual tool (what its GenerateManual plugin runs).
man: release
	$(SWIFT) build --product generate-manual
	rm -rf $(SCRATCH)/man && mkdir -p $(SCRATCH)/man
	.build/debug/generate-manual $(SCRATCH)/release/dosetap --multi-page --date $(MANDATE) \
	    --authors "DoseTap developers" -o $(SCRATCH)/man
	scripts/man-names.py $(SCRATCH)/man

# bash, zsh and fish completions, written by the binary itself (swift-argument-parser).
completions: release
	mkdir -p $(SCRATCH)/completions
	$(SCRATCH)/release/dosetap --generate-completion-script bash | sed '1{/^#!/d}' > $(SCRATCH)/completions/dosetap
	$(SCRATCH)/release/dosetap --generate-completion-script zsh > $(SCRATCH)/completions/_dosetap
	$(SCRATCH)/release/dosetap --generate-completion-script fish > $(SCRATCH)/completions/dosetap.fish

# The Debian package of the release build: dist/dosetap_VERSION_ARCH.deb (scripts/build-deb.sh).
deb: man completions
	scripts/build-deb.sh $(SCRATCH)

# The Raspberry Pi's (arm64) release binary, cross-built here from Debian's packages (scripts/cross-arm64.sh:
# sid's swiftlang 6.2.3, a trixie arm64 root; made once and cached under ~/.cache/dosetap), and its package
# dist/dosetap_VERSION_arm64.deb (the same pages and completions: they come from the amd64 build of the same source).
build-arm64:
	scripts/cross-arm64.sh build

deb-arm64: man completions build-arm64
	scripts/build-deb.sh $(SCRATCH) arm64 .build-arm64/dosetap

# The installed agent is the release build with the Swift runtime linked in (--static-swift-stdlib):
# the smallest resident footprint (docs/performance.md), and no Swift toolchain needed where it runs.
install: release man completions
	$(INSTALL) -Dm755 $(FRONT) "$(DESTDIR)$(BINDIR)/dosetap"
	$(STRIP) "$(DESTDIR)$(BINDIR)/dosetap"
	$(INSTALL) -Dm755 $(BINARY) "$(DESTDIR)$(PKGLIBDIR)/dosetap"
	$(STRIP) "$(DESTDIR)$(PKGLIBDIR)/dosetap"
	$(INSTALL) -d "$(DESTDIR)$(USERUNITDIR)"
	sed -e 's|^ExecStart=%h/.local/bin/dosetap |ExecStart=$(BINDIR)/dosetap |' packaging/systemd/dosetap.service \
	    > "$(DESTDIR)$(USERUNITDIR)/dosetap.service"
	chmod 644 "$(DESTDIR)$(USERUNITDIR)/dosetap.service"
	$(INSTALL) -d "$(DESTDIR)$(MANDIR)/man1"
	$(INSTALL) -m644 $(SCRATCH)/man/*.1 "$(DESTDIR)$(MANDIR)/man1/"
	$(INSTALL) -Dm644 $(SCRATCH)/completions/dosetap "$(DESTDIR)$(BASHCOMPDIR)/dosetap"
	$(INSTALL) -Dm644 $(SCRATCH)/completions/_dosetap "$(DESTDIR)$(ZSHCOMPDIR)/_dosetap"
	$(INSTALL) -Dm644 $(SCRATCH)/completions/dosetap.fish "$(DESTDIR)$(FISHCOMPDIR)/dosetap.fish"
	@if [ -n "$(DESTDIR)" ] || [ -w "$(UDEVRULESDIR)" ] || { [ ! -e "$(UDEVRULESDIR)" ] && [ "$$(id -u)" = 0 ]; }; then \
	    $(MAKE) --no-print-directory install-udev; \
	else \
	    echo "udev rules not installed ($(UDEVRULESDIR) is not writable): sudo make install-udev"; \
	fi
	@if [ -n "$(DESTDIR)" ] || [ "$$(id -u)" = 0 ]; then \
	    $(MAKE) --no-print-directory install-wake; \
	else \
	    echo "The wake helper is not installed (it is root's): without it the machine may sleep through an alarm. Run: sudo make install-wake"; \
	fi
	@echo "Installed $(DESTDIR)$(BINDIR)/dosetap and $(DESTDIR)$(USERUNITDIR)/dosetap.service. Start the agent with:"
	@echo "  systemctl --user daemon-reload && systemctl --user enable --now dosetap"

# The rules alone (root): the vibration motor, HID remotes, the PC speaker, the RTC wake alarm (udev-rules/README.md).
install-udev:
	$(INSTALL) -d "$(DESTDIR)$(UDEVRULESDIR)"
	$(INSTALL) -m644 udev-rules/70-dosetap-vibra.rules udev-rules/71-dosetap-hid-buttons.rules udev-rules/71-dosetap-beeper.rules \
	    udev-rules/72-dosetap-rtc-wakealarm.rules "$(DESTDIR)$(UDEVRULESDIR)/"
	@if [ -z "$(DESTDIR)" ] && command -v udevadm >/dev/null && [ -d /run/udev ]; then \
	    udevadm control --reload && udevadm trigger -s input -s rtc || true; \
	fi

# The wake helper alone (root): the system socket and service that arm wake-ups from suspend for the users'
# agents, running $(BINDIR)/dosetap wake-helper with CAP_WAKE_ALARM (docs/alarms.md, "Waking from suspend").
install-wake:
	$(INSTALL) -d "$(DESTDIR)$(SYSTEMUNITDIR)"
	$(INSTALL) -m644 packaging/systemd/dosetap-wake.socket "$(DESTDIR)$(SYSTEMUNITDIR)/"
	sed -e 's|^ExecStart=/usr/bin/dosetap |ExecStart=$(BINDIR)/dosetap |' packaging/systemd/dosetap-wake.service \
	    > "$(DESTDIR)$(SYSTEMUNITDIR)/dosetap-wake.service"
	chmod 644 "$(DESTDIR)$(SYSTEMUNITDIR)/dosetap-wake.service"
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	    systemctl daemon-reload && systemctl enable --now dosetap-wake.socket; \
	fi

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/dosetap" "$(DESTDIR)$(PKGLIBDIR)/dosetap" "$(DESTDIR)$(USERUNITDIR)/dosetap.service" "$(DESTDIR)$(MANDIR)"/man1/dosetap.*1 \
	    "$(DESTDIR)$(BASHCOMPDIR)/dosetap" "$(DESTDIR)$(ZSHCOMPDIR)/_dosetap" "$(DESTDIR)$(FISHCOMPDIR)/dosetap.fish"
	-rmdir "$(DESTDIR)$(PKGLIBDIR)" 2>/dev/null
	@echo "The udev rules stay in $(UDEVRULESDIR) (sudo rm $(UDEVRULESDIR)/7[012]-dosetap-*.rules); your data stays in ~/.local/share/dosetap."
	@echo "The wake helper stays (sudo systemctl disable --now dosetap-wake.socket; sudo rm $(SYSTEMUNITDIR)/dosetap-wake.*)."

run: build
	.build/debug/dosetap agent $(ARGS)

test: deps-test
	scripts/run-tests.sh

bench: release deps-bench
	Benchmarks/cli-latency.sh
	Benchmarks/oneshot-vs-sqlite.sh
	Benchmarks/idle-footprint.sh
	Benchmarks/web-latency.sh

# Every fuzz target (Fuzz/, libFuzzer) to 10^7 executions; counts and exec/s in docs/performance.md.
fuzz: deps-test
	scripts/fuzz.sh $(or $(RUNS),10000000)

# The whole suite under AddressSanitizer, then under ThreadSanitizer (docs/performance.md, "Sanitizers").
sanitize: deps-test
	scripts/sanitize.sh address thread

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan dist

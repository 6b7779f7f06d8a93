# usher: build, run and test.
#
#   make run    build and start usherd in the foreground (socket and state under ./.run/)
#   make test   install what the build and tests need, build (warnings are errors), check formatting, run every test:
#               every suite runs (lint, swift, python, varlink, libusher, pam) whatever the others did, and the output
#               ends with one verdict line per suite and "N passed, M failed" (suites); it fails if any suite failed
#   make test-python [USHER_BIN=DIR]   the Python package's mypy --strict and pytest tests, against DIR/usherd
#   make test-varlink [USHER_BIN=DIR]   the Varlink interface, with the PyPI varlink client, against DIR/usherd
#   make libusher        the C client library (clients/c, docs/c-library.md) into .build/libusher
#   make test-libusher   its C tests against the usherd in USHER_BIN (default: .build/debug), plain, under ASan+UBSan
#               and valgrind, its documented examples, and a bounded fuzz run
#   make pam    the PAM module pam_usher.so (clients/pam, docs/login.md) into .build/pam
#   make test-pam   its tests with pamtester and libpam-wrapper against the usherd in USHER_BIN: plain, under
#               ASan+UBSan and under valgrind
#   make install [PREFIX=/usr/local] [DESTDIR=]   release binaries, systemd units, sysusers.d, sample config, README,
#               manual pages (usher.1, usherd.8, usherd.toml.5), bash/zsh/fish completions
#   make uninstall [PREFIX=/usr/local] [DESTDIR=]
#   make deb [ARCH=arm64]   the Debian package usher_VERSION_ARCH.deb (and usher-dbgsym_...), checked with lintian;
#               and python3-usher_VERSION_all.deb, the Python package of clients/python. ARCH other than this machine's
#               cross-compiles with an installed Swift SDK (docs/install.md, "Building for arm64")
#   make test-package   boots systemd in a throw-away container and installs, upgrades, removes and purges the
#               package there (root and systemd-nspawn; skipped with a reason otherwise)
#   make check-no-foundation   the release usherd and usher link no Foundation beyond FoundationEssentials, no ICU
#   make test-static    the installed binaries start and answer with the Swift toolchain hidden (root; else skipped)
#   make bench  footprint (binary sizes, Installed-Size, idle memory) and performance figures against a line-echo
#               server and ssh-agent (release build; not part of make test)
#   make order-file   packaging/usherd.order again: the code a daemon runs, placed first by the release link
#
# Every target that builds first installs the Debian packages it needs when they are missing, so a fresh machine
# needs nothing but this repository and the Swift toolchain.

SWIFT ?= swift
# The one version of everything: usherd --version, usher --version, hello, the package (see Plugins/VersionPlugin).
VERSION := $(shell cat $(CURDIR)/VERSION)
RUN_DIR := $(CURDIR)/.run
SOCKET := $(RUN_DIR)/usher.sock
BIN := $(CURDIR)/.build/debug

# What the build needs (Debian packages): SQLite's headers and library for the store (Sources/CSQLite), libsystemd for
# sd_notify and sd-login, libcurl for the daemon's requests to identity providers (Sources/UsherHTTP).
BUILD_APT_PACKAGES := libsqlite3-dev libsystemd-dev libcurl4-openssl-dev pkg-config
# libusher, the C client library: json-c parses the daemon's answers.
BUILD_APT_PACKAGES += libjson-c-dev
# pam_usher, the PAM module (clients/pam): libpam's headers.
BUILD_APT_PACKAGES += libpam0g-dev
# What only the tests need: socat for the by-hand examples, systemd for systemd-analyze and systemd-socket-activate,
# and Python with venv for the OpenID Connect test servers.
TEST_APT_PACKAGES := socat systemd python3 python3-venv
# libusher's tests: valgrind for leaks, GLib for the GLib example (the fuzzer uses the Swift toolchain's clang).
TEST_APT_PACKAGES += valgrind libglib2.0-dev
# [unix_users]' tests: userdbctl (systemd-userdbd) and nss-systemd (libnss-systemd), tools usherd did not write.
TEST_APT_PACKAGES += systemd-userdbd libnss-systemd
# The tools usher hands tokens to (docs/integrations.md), tested with the real ones: git (and its http-backend), curl,
# msmtp; and kubectl, Debian's kubernetes-client unless a kubectl is installed already (another package's would
# conflict with it).
TEST_APT_PACKAGES += git curl msmtp
# pam_usher's tests: pamtester is the PAM application, libpam-wrapper gives it the tests' own PAM stack.
TEST_APT_PACKAGES += pamtester libpam-wrapper
# The seat that follows logind (LogindFollowTests): python-dbusmock's logind template on a private bus of its own.
TEST_APT_PACKAGES += python3-dbusmock dbus-daemon
KUBECTL_APT_PACKAGE = $(if $(shell command -v kubectl),,kubernetes-client)
# And Debian 12's own kubectl (kubernetes-client, 1.20) in any case, whatever kubectl is installed: usher setup-kube is
# tested with both (KubeCredentialTests). Downloaded and unpacked under .build, not installed, so that it never
# conflicts with the machine's kubectl.
DEBIAN_KUBECTL = .build/debian-kubectl/usr/bin/kubectl

# The real OpenID Connect servers the tests log in at (Tests/Fixtures/oidc-server): django-oauth-toolkit from PyPI,
# and idpyoidc for token exchange (RFC 8693), which django-oauth-toolkit lacks. oauthlib is pinned: 4.0.1 breaks
# django-oauth-toolkit's device authorization endpoint. They go into a virtual environment under .build/ (ignored by
# git), never into the system Python; the tests find it through USHER_TEST_PYTHON.
TEST_VENV := $(CURDIR)/.build/test-venv
TEST_PYTHON := $(TEST_VENV)/bin/python3
PIP_PACKAGES := django-oauth-toolkit==3.4.1 oauthlib==3.3.1 idpyoidc==5.0.0 requests
PIP_CHECK := import oauth2_provider, oauthlib, idpyoidc, requests, cryptography; assert oauthlib.__version__ == "3.3.1"
# The Python client's tests (clients/python): pytest runs them, mypy --strict checks the package's type hints.
PIP_PACKAGES += pytest==9.2.0 mypy==2.4.1
PIP_CHECK := $(PIP_CHECK); import pytest, mypy
# The Varlink socket is tested with a client this project did not write: the reference Python implementation.
PIP_PACKAGES += varlink==31.0.0
PIP_CHECK := $(PIP_CHECK); import varlink

# Release builds link the Swift runtime statically: `usher` then starts without the dynamic loader mapping and
# relocating a dozen Swift libraries (most of `usher token`'s wall time), and both binaries run on a machine without
# the Swift toolchain. Neither links Foundation beyond FoundationEssentials (tools/check-no-foundation.sh).
#
# One program: the release usherd is the CLI too (Sources/usherd/Usherd.swift: the daemon under the name usherd, the
# CLI under any other), and the package installs usher as a hard link to it. Two binaries would each carry the Swift
# runtime, FoundationEssentials, SwiftNIO and the C++ runtime: 19 MB of the CLI's 20 were the same as usherd's.
# $(PROGRAMS) holds both names as the package has them (links to the release usherd), for the manual page, the
# completions and make bench; the tests run the debug usherd so too (Tests/UsherTestSupport, BuiltProducts). The
# `usher` product is the CLI alone, for development.
#
# Sized for devices (issue 25; what each flag saves: docs/performance.md, "Footprint"). --no-export-dynamic takes back
# the --export-dynamic of the toolchain's static-stdlib-args.lnk, which exported every symbol of every module of the
# package (52,000 dynamic symbols in usherd, 13,000 in usher, with their names and hash table; nothing loads plugins
# into either, so nothing needs them). SwiftPM links release builds with --gc-sections already. Not used: lld (for -z
# pack-relative-relocs, which gold lacks, a few MB less): linked by lld, usherd pulls in the whole of Foundation and
# ICU again through TOMLKit's `import struct Foundation.Data` (tools/check-no-foundation.sh catches it); GNU ld (bfd)
# for the same flag (2.6 MB less of usherd): Swift's objects carry writable .rodata sections, and bfd then lays out a
# binary without RELRO (no GNU_RELRO segment even with -z relro: the GOT and .data.rel.ro stay writable), which a
# daemon holding credentials must not trade for size; -Osize: it took 2.9 MB off usherd and 0.8 MB off usher, but
# usherd spent 15-25 % more CPU time per read.
# -z now: with gold's RELRO, full RELRO (the GOT read-only once the loader has bound the few dynamic symbols: libc,
# libstdc++; SQLite, libsystemd and libcurl are opened with dlopen), as Debian's bindnow hardening; the boot test
# checks both (checks.d/footprint-*.sh).
RELEASE_FLAGS := -Xlinker --no-export-dynamic -Xlinker -z -Xlinker now
# Every function (and C datum) in a section of its own: --gc-sections then drops each one nothing reaches, not only
# whole objects (1.6 MB of usherd), and the link can place each function where it chooses. It places the code a daemon
# runs first, in the order of packaging/usherd.order (written by `make order-file`, bench/order_file.py), so that this
# code fills the pages the kernel maps instead of being scattered over all of them: an idle daemon with 10 users keeps
# 4.6 MB of its binary resident instead of 11 MB (docs/performance.md, "Footprint"). The Swift runtime, Foundation and
# libdispatch come as archives built without sections per function: their code stays where it is. (SwiftPM does not
# recompile the dependencies when these flags change: in a tree built before them, rm -rf .build/*/release once.)
ORDER_FILE := $(CURDIR)/packaging/usherd.order
RELEASE_FLAGS += -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcc -fdata-sections \
	-Xcxx -ffunction-sections -Xcxx -fdata-sections
# The release build of a tree whose link order is ORDER (make before-usherd builds another commit's tree so too).
release_build = $(SWIFT) build -c release --static-swift-stdlib $(RELEASE_FLAGS) -Xlinker --section-ordering-file=$(1)
RELEASE_BUILD := $(call release_build,$(ORDER_FILE))

# ARCH: the Debian architecture the package is built for, this machine's by default. Another one (make deb ARCH=arm64)
# cross-compiles: the Swift code with the installed Swift SDK for SWIFT_TRIPLE (SWIFT_SDK names another; how a
# build machine gets one: docs/install.md, "Building for arm64"), the C library with Debian's GNU cross compiler, and
# the dpkg tools see DEB_HOST_ARCH, so the packages are ARCH's and dpkg-shlibdeps reads ARCH's libraries. The manual
# page and the completions are generated by running usher, so a cross build also builds it for this machine.
BUILD_ARCH := $(shell dpkg --print-architecture)
ARCH ?= $(BUILD_ARCH)
TARGET_BIN := .build/release
TARGET_RELEASE_BUILD := $(RELEASE_BUILD)
PROGRAMS := .build/programs
ifneq ($(ARCH),$(BUILD_ARCH))
GNU_TYPE := $(shell dpkg-architecture -a$(ARCH) -qDEB_HOST_GNU_TYPE 2>/dev/null)
SWIFT_TRIPLE ?= $(shell dpkg-architecture -a$(ARCH) -qDEB_HOST_GNU_CPU 2>/dev/null)-unknown-linux-gnu
SWIFT_SDK ?= $(SWIFT_TRIPLE)
TARGET_BIN := .build/$(SWIFT_TRIPLE)/release
TARGET_RELEASE_BUILD := $(RELEASE_BUILD) --swift-sdk $(SWIFT_SDK)
export DEB_HOST_ARCH := $(ARCH)
export DEB_HOST_MULTIARCH := $(shell dpkg-architecture -a$(ARCH) -qDEB_HOST_MULTIARCH 2>/dev/null)
export DEB_HOST_GNU_TYPE := $(GNU_TYPE)
export CC := $(GNU_TYPE)-gcc
# The C library's json-c of ARCH (libjson-c-dev:ARCH); the Swift SDK's sysroot has the Swift code's libraries.
export PKG_CONFIG := env PKG_CONFIG_LIBDIR=/usr/lib/$(DEB_HOST_MULTIARCH)/pkgconfig:/usr/share/pkgconfig pkg-config
export OBJCOPY := $(GNU_TYPE)-objcopy
export STRIP := $(GNU_TYPE)-strip
CROSS_APT_PACKAGES := gcc-$(GNU_TYPE) binutils-$(GNU_TYPE) libc6:$(ARCH) libstdc++6:$(ARCH) libgcc-s1:$(ARCH) \
  libsqlite3-0:$(ARCH) libsystemd0:$(ARCH) libcurl4-openssl-dev:$(ARCH) libjson-c-dev:$(ARCH) libpam0g-dev:$(ARCH)
endif

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
DOCDIR := $(PREFIX)/share/doc/usher
UNITDIR := $(PREFIX)/lib/systemd/system
USERUNITDIR := $(PREFIX)/lib/systemd/user
SYSUSERSDIR := $(PREFIX)/lib/sysusers.d
MANDIR := $(PREFIX)/share/man
# The Varlink interface definition, for code generators and varlinkctl validate-idl (the daemon serves it too).
VARLINKDIR := $(PREFIX)/share/varlink
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR := $(PREFIX)/share/fish/vendor_completions.d
SYSCONFDIR ?= /etc
# Detached debug information of the installed binaries, by build ID (gdb's default place with PREFIX=/usr).
DEBUGDIR := $(PREFIX)/lib/debug
# Where libpam looks for modules (clients/pam/Makefile installs there too): /usr/lib/<multiarch>/security on Debian.
# dpkg-architecture as clients/pam/Makefile asks it (the DEB_HOST_MULTIARCH exported below, when make deb ARCH= sets it).
PAM_MODULE = $(PREFIX)/lib/$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)/security/pam_usher.so
SUBSTITUTE := sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g'

# The Debian package. DEB_VERSION is the VERSION file's; only the boot test overrides it, to build "the same package
# with a higher version" for its upgrade step. The tools come from Debian: dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol),
# binutils (objcopy, readelf), lintian.
DEB_VERSION ?= $(VERSION)
DEB_ARCH = $(ARCH)
DEB_DIR ?= $(CURDIR)/.build/deb
DEB_OUT ?= $(CURDIR)
DEB_LINTIAN ?= yes
DEB_APT_PACKAGES := dpkg-dev binutils lintian
# What the boot test needs besides: systemd-nspawn, script(1) for the pseudo-terminal nspawn wants, unshare(1), and
# ss(8) for the checks in the container (which runs this machine's programs).
BOOT_TEST_APT_PACKAGES := systemd-container bsdutils util-linux iproute2

.PHONY: all deps test-deps build run test test-python lint format clean install uninstall fuzz load bench order-file deb test-package test-package-as-root test-static man completions
.PHONY: pam test-pam
.PHONY: libusher test-libusher test-varlink check-no-foundation before-usherd programs size-floor

all: build libusher pam

# Installs the Debian packages named in $(1) that are missing.
define apt_install
	@missing=""; \
	for package in $(1); do \
	  dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing packages:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

# What building needs, and no more: make run depends on this alone.
deps:
	$(call apt_install,$(BUILD_APT_PACKAGES))

# What the tests need besides: test tools, and the OpenID Connect servers in their own virtual environment.
test-deps: deps $(DEBIAN_KUBECTL)
	$(call apt_install,$(TEST_APT_PACKAGES) $(KUBECTL_APT_PACKAGE))
	@$(TEST_PYTHON) -c '$(PIP_CHECK)' 2>/dev/null || { \
	  echo "Installing the OpenID Connect test servers into $(TEST_VENV): $(PIP_PACKAGES)"; \
	  rm -rf $(TEST_VENV) && python3 -m venv $(TEST_VENV) && \
	  $(TEST_PYTHON) -m pip install --quiet --disable-pip-version-check $(PIP_PACKAGES) && \
	  $(TEST_PYTHON) -c '$(PIP_CHECK)'; \
	}

build: deps
	$(SWIFT) build

$(DEBIAN_KUBECTL):
	@echo "Unpacking Debian's kubernetes-client (kubectl 1.20) into $(dir $(DEBIAN_KUBECTL))"
	@rm -rf .build/debian-kubectl && mkdir -p .build/debian-kubectl
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	cd .build/debian-kubectl && { apt-get download -qq kubernetes-client 2>/dev/null || \
	  { $$SUDO apt-get update -qq && apt-get download -qq kubernetes-client; }; } && \
	dpkg-deb -x kubernetes-client_*.deb . && rm -f kubernetes-client_*.deb
	@test -x $(DEBIAN_KUBECTL)

# Ends, as `ssh-agent -s` does, with the line to paste into another shell so that `usher` finds this daemon.
run: build
	@mkdir -p $(RUN_DIR)
	@echo "usherd is starting in the foreground (Ctrl-C stops it); its state is in $(RUN_DIR)/state."
	@echo "Then try: usher login --anonymous; usher users; usher token"
	@echo "     and: echo '{\"method\":\"current_user\"}' | socat - UNIX-CONNECT:\$$USHER_SOCKET"
	@echo "To use it from another shell, paste:"
	@echo
	@echo "export USHER_SOCKET=$(SOCKET) PATH=$(BIN):\$$PATH"
	@echo
	exec $(BIN)/usherd --config config/usherd.toml --socket $(SOCKET) --state-directory $(RUN_DIR)/state

# Formatting, and Package.swift's graph: every target declares exactly the modules it imports (SwiftPM builds a
# target that imports an undeclared module whenever another target brought it in, and ignores unused declarations).
lint:
	$(SWIFT) format lint --recursive --strict Sources Tests Package.swift bench/size-floor
	python3 tools/check-target-imports.py
	@# docs/protocol.md's tables of methods and error codes are the interface file's (varlink/io.usher.Session.varlink).
	python3 tools/check_protocol_docs.py
	@# The core speaks in users, changes and events; the server owns every byte on the wire.
	@! grep -rn 'WireWriter\|LineCodec' Sources/UsherCore || { echo "UsherCore uses a wire encoder (above)"; exit 1; }

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Package.swift bench/size-floor

# Every suite runs whatever the others did (a failing Swift suite must not hide what the Python, Varlink and C suites
# say), each in a make of its own; then one verdict line per suite, and last the plain closing line CI reads,
# "N passed, M failed", counting suites. make test fails if any suite did. The Python, Varlink and C suites test the
# debug usherd the Swift suite's build makes: after a failed build they test the previous one, or fail without one.
TEST_SUITES := lint swift python varlink libusher pam
test: test-deps
	@passed=0; failed=0; verdicts=""; \
	for suite in $(TEST_SUITES); do \
	  echo "=== suite $$suite"; \
	  if $(MAKE) --no-print-directory test-suite-$$suite; then \
	    passed=$$((passed + 1)); verdicts="$$verdicts suite-$$suite:passed"; \
	  else \
	    failed=$$((failed + 1)); verdicts="$$verdicts suite-$$suite:FAILED"; \
	  fi; \
	done; \
	echo; for verdict in $$verdicts; do echo "$${verdict%%:*}: $${verdict#*:}" | sed 's/^suite-/suite /'; done; \
	echo "$$passed passed, $$failed failed"; \
	[ $$failed -eq 0 ]

.PHONY: test-suite-lint test-suite-swift test-suite-python test-suite-varlink test-suite-libusher test-suite-pam
test-suite-lint: lint
test-suite-python: test-python
test-suite-varlink: test-varlink
test-suite-libusher: test-libusher
test-suite-pam: test-pam
test-suite-swift: test-deps
	$(SWIFT) build --build-tests
	@# A deadline that names the tests still running, should one hang past every guard of its own.
	USHER_TEST_PYTHON=$(TEST_PYTHON) python3 tools/test-deadline.py $(SWIFT) test --skip-build --disable-xctest

# The Python package (clients/python): mypy --strict on it and its example, then its pytest tests against the real
# usherd in USHER_BIN (this repository's debug build by default; USHER_BIN=/some/bin tests other binaries). The tests
# also pip-install the package into a throw-away virtual environment and run the walk-through example with it.
USHER_BIN ?= $(BIN)
test-python: test-deps
	cd clients/python && $(TEST_PYTHON) -m mypy --strict src/usher examples
	@# The readers and generators of the interface file, that tests/test_interface.py runs.
	$(TEST_PYTHON) -m mypy --strict tools/varlink_idl.py tools/generate_interface.py tools/check_protocol_docs.py
	cd clients/python && USHER_BIN=$(USHER_BIN) $(TEST_PYTHON) -m pytest -p no:cacheprovider

# The Varlink interface (varlink/io.usher.Session.varlink, docs/varlink.md) through the PyPI varlink client, against
# the usherd in USHER_BIN: every method, introspection, streaming, hostile input, and the walk-through of the docs
# (with varlinkctl too where systemd has it, 255 and later).
test-varlink: test-deps
	cd Tests/varlink-client && USHER_BIN=$(USHER_BIN) $(TEST_PYTHON) -m pytest -p no:cacheprovider -rs

# libusher, the C client library (clients/c/Makefile builds and tests it). Its tests start the usherd in USHER_BIN:
# this repository's debug build by default, or prebuilt binaries (make test-libusher USHER_BIN=/path/to/bin).
# Another architecture's objects (make deb ARCH=...) are kept apart from this machine's.
LIBUSHER_BUILD := $(CURDIR)/.build/libusher$(if $(filter-out $(BUILD_ARCH),$(ARCH)),-$(ARCH))
libusher: deps
	$(MAKE) -C clients/c O=$(LIBUSHER_BUILD)

test-libusher: test-deps libusher
	$(MAKE) -C clients/c test O=$(LIBUSHER_BUILD) USHER_BIN=$(USHER_BIN)

# pam_usher.so, the PAM module (clients/pam/Makefile builds, tests and installs it): libusher's sources linked in, so
# that it depends on libpam, json-c and libc only. Its tests run pamtester under libpam-wrapper against the usherd in
# USHER_BIN (this repository's debug build by default), with the test venv's pytest and OpenID Connect server.
PAM_BUILD := $(CURDIR)/.build/pam$(if $(filter-out $(BUILD_ARCH),$(ARCH)),-$(ARCH))
pam: deps
	$(MAKE) -C clients/pam O=$(PAM_BUILD)

test-pam: test-deps pam
	$(MAKE) -C clients/pam test O=$(PAM_BUILD) USHER_BIN=$(USHER_BIN) TEST_PYTHON=$(TEST_PYTHON)

# The manual pages: usher(1) generated from the release binary's own help by swift-argument-parser's generate-manual
# (the tool behind its manual plug-in), usherd.toml(5) from the documented sample configuration, usherd(8) written.
MAN_BUILD := .build/man
# The page's date: SOURCE_DATE_EPOCH when set (reproducible builds), else today.
MAN_DATE = $$(date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%d)
man: programs
	$(RELEASE_BUILD) --product generate-manual
	@mkdir -p $(MAN_BUILD)
	.build/release/generate-manual $(PROGRAMS)/usher --section 1 --date $(MAN_DATE) --output-directory $(MAN_BUILD)
	@# generate-manual keeps the blank lines between paragraphs of a discussion, which mdoc warns about: .Pp instead.
	sed -i 's/^$$/.Pp/' $(MAN_BUILD)/usher.1
	awk -f man/usherd.toml.5.awk config/usherd.toml > $(MAN_BUILD)/usherd.toml.5
	cp man/usherd.8 $(MAN_BUILD)/usherd.8

# Shell completions, from the release binary (swift-argument-parser's generator); user arguments complete with the
# emails of the users on the device, which the script asks `usher` for as the shell completes.
COMPLETIONS_BUILD := .build/completions
completions: programs
	@mkdir -p $(COMPLETIONS_BUILD)
	@# Sourced by bash-completion, never run: without the generator's #! line (lintian: bash-completion-with-hashbang).
	$(PROGRAMS)/usher --generate-completion-script bash > $(COMPLETIONS_BUILD)/usher.generated
	sed '1{/^#!/d}' $(COMPLETIONS_BUILD)/usher.generated > $(COMPLETIONS_BUILD)/usher
	$(PROGRAMS)/usher --generate-completion-script zsh > $(COMPLETIONS_BUILD)/_usher
	$(PROGRAMS)/usher --generate-completion-script fish > $(COMPLETIONS_BUILD)/usher.fish

# This machine's release usherd under both its names, as the package installs it (see RELEASE_FLAGS above).
programs: deps
	$(RELEASE_BUILD) --product usherd
	@mkdir -p $(PROGRAMS)
	ln -sfn ../release/usherd $(PROGRAMS)/usherd
	ln -sfn ../release/usherd $(PROGRAMS)/usher

install: deps man completions libusher pam
	$(TARGET_RELEASE_BUILD) --product usherd
	@# It links no Foundation proper or ICU (FoundationEssentials only): checked before stripping, on the symbols.
	tools/check-no-foundation.sh $(TARGET_BIN)/usherd
	@# Stripped; the debug information goes to $(DEBUGDIR)/.build-id/ (the -dbgsym package in make deb).
	packaging/install-stripped.sh $(TARGET_BIN)/usherd $(DESTDIR)$(BINDIR)/usherd $(DESTDIR)$(DEBUGDIR)
	@# The CLI is usherd under another name. A hard link, not a symbolic one: /proc/PID/exe then says /usr/bin/usher
	@# for the CLI (what an [[access.rule]] with `executable` names), and dpkg counts the file once in Installed-Size.
	ln -f $(DESTDIR)$(BINDIR)/usherd $(DESTDIR)$(BINDIR)/usher
	@# The name git runs for credential.helper = usher (usher acts as git-credential when called so).
	ln -sf usher $(DESTDIR)$(BINDIR)/git-credential-usher
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR)
	for unit in usherd.service usherd.socket usherd-varlink.socket; do \
	  $(SUBSTITUTE) systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit; \
	  $(SUBSTITUTE) systemd/user/$$unit > $(DESTDIR)$(USERUNITDIR)/$$unit; \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit $(DESTDIR)$(USERUNITDIR)/$$unit; \
	done
	@# The user database socket ([unix_users], docs/unix-users.md): system-wide only, and off until enabled.
	$(SUBSTITUTE) systemd/usherd-userdb.socket > $(DESTDIR)$(UNITDIR)/usherd-userdb.socket
	chmod 0644 $(DESTDIR)$(UNITDIR)/usherd-userdb.socket
	install -D -m 0644 systemd/sysusers.d/usher.conf $(DESTDIR)$(SYSUSERSDIR)/usher.conf
	install -D -m 0644 varlink/io.usher.Session.varlink $(DESTDIR)$(VARLINKDIR)/io.usher.Session.varlink
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	for page in docs/*.md; do install -D -m 0644 $$page $(DESTDIR)$(DOCDIR)/$$page; done
	install -D -m 0644 config/usherd.toml $(DESTDIR)$(DOCDIR)/usherd.toml.sample
	install -D -m 0644 $(MAN_BUILD)/usher.1 $(DESTDIR)$(MANDIR)/man1/usher.1
	install -D -m 0644 $(MAN_BUILD)/usherd.8 $(DESTDIR)$(MANDIR)/man8/usherd.8
	install -D -m 0644 $(MAN_BUILD)/usherd.toml.5 $(DESTDIR)$(MANDIR)/man5/usherd.toml.5
	install -D -m 0644 $(COMPLETIONS_BUILD)/usher $(DESTDIR)$(BASHCOMPDIR)/usher
	install -D -m 0644 $(COMPLETIONS_BUILD)/_usher $(DESTDIR)$(ZSHCOMPDIR)/_usher
	install -D -m 0644 $(COMPLETIONS_BUILD)/usher.fish $(DESTDIR)$(FISHCOMPDIR)/usher.fish
	$(MAKE) -C clients/c install O=$(LIBUSHER_BUILD) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	@# pam_usher.so into the multiarch PAM directory, its pam-auth-update profile (off by default) and pam_usher(8).
	$(MAKE) -C clients/pam install O=$(PAM_BUILD) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	@# Stripped as dh_strip strips a module, its debug information beside usherd's (the -dbgsym package in make deb).
	packaging/install-stripped.sh $(PAM_BUILD)/pam_usher.so $(DESTDIR)$(PAM_MODULE) $(DESTDIR)$(DEBUGDIR)
	chmod 0644 $(DESTDIR)$(PAM_MODULE)
	@# Never overwrite a configuration someone edited.
	test -e $(DESTDIR)$(SYSCONFDIR)/usher/usherd.toml || \
	  install -D -m 0644 config/usherd.toml $(DESTDIR)$(SYSCONFDIR)/usher/usherd.toml
	@echo "Installed. Next: systemd-sysusers && systemctl daemon-reload && systemctl enable --now usherd.socket usherd-varlink.socket"

uninstall:
	for binary in $(DESTDIR)$(BINDIR)/usherd $(DESTDIR)$(PAM_MODULE); do \
	  id=$$(readelf -n $$binary 2>/dev/null | sed -n 's/^ *Build ID: *//p'); \
	  [ -z "$$id" ] || rm -f $(DESTDIR)$(DEBUGDIR)/.build-id/$$(echo $$id | cut -c1-2)/$$(echo $$id | cut -c3-).debug; \
	done
	rm -f $(DESTDIR)$(BINDIR)/usherd $(DESTDIR)$(BINDIR)/usher $(DESTDIR)$(BINDIR)/git-credential-usher
	rm -f $(DESTDIR)$(UNITDIR)/usherd.service $(DESTDIR)$(UNITDIR)/usherd.socket $(DESTDIR)$(UNITDIR)/usherd-varlink.socket
	rm -f $(DESTDIR)$(UNITDIR)/usherd-userdb.socket
	rm -f $(DESTDIR)$(USERUNITDIR)/usherd.service $(DESTDIR)$(USERUNITDIR)/usherd.socket
	rm -f $(DESTDIR)$(USERUNITDIR)/usherd-varlink.socket
	rm -f $(DESTDIR)$(VARLINKDIR)/io.usher.Session.varlink
	rm -f $(DESTDIR)$(SYSUSERSDIR)/usher.conf
	rm -f $(DESTDIR)$(MANDIR)/man1/usher.1 $(DESTDIR)$(MANDIR)/man8/usherd.8 $(DESTDIR)$(MANDIR)/man5/usherd.toml.5
	rm -f $(DESTDIR)$(BASHCOMPDIR)/usher $(DESTDIR)$(ZSHCOMPDIR)/_usher $(DESTDIR)$(FISHCOMPDIR)/usher.fish
	rm -rf $(DESTDIR)$(DOCDIR)
	$(MAKE) -C clients/c uninstall O=$(LIBUSHER_BUILD) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	$(MAKE) -C clients/pam uninstall O=$(PAM_BUILD) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	@# The configuration stays unless it is the untouched sample.
	if cmp -s config/usherd.toml $(DESTDIR)$(SYSCONFDIR)/usher/usherd.toml; then \
	  rm -f $(DESTDIR)$(SYSCONFDIR)/usher/usherd.toml; rmdir $(DESTDIR)$(SYSCONFDIR)/usher 2>/dev/null || true; \
	fi

# The package is built from what make install installs with the package's paths, so the two cannot differ
# (packaging/build-deb.sh adds the Debian files: control, maintainer scripts, copyright, changelog, md5sums).
deb: deps
	$(call apt_install,$(DEB_APT_PACKAGES))
	$(if $(CROSS_APT_PACKAGES),@dpkg --print-foreign-architectures | grep -qx $(ARCH) || { echo \
	  "make deb ARCH=$(ARCH) needs $(ARCH)'s libraries: dpkg --add-architecture $(ARCH) && apt-get update first"; exit 1; })
	$(if $(CROSS_APT_PACKAGES),$(call apt_install,$(CROSS_APT_PACKAGES)))
	rm -rf $(DEB_DIR)/stage
	$(MAKE) install DESTDIR=$(DEB_DIR)/stage PREFIX=/usr SYSCONFDIR=/etc
	@# libusher0 and libusher-dev take the C library's files out of the stage (as dh_install from debian/tmp).
	packaging/build-deb-libusher.sh $(DEB_DIR)/stage $(DEB_VERSION) $(DEB_OUT)
	packaging/build-deb.sh $(DEB_DIR)/stage $(DEB_VERSION) $(DEB_OUT)
	@# Errors fail the build; the warnings kept, and why, are listed in docs/install.md.
	[ "$(DEB_LINTIAN)" != yes ] || lintian --fail-on error $(DEB_OUT)/usher_$(DEB_VERSION)_$(DEB_ARCH).deb
	@# The Python package (clients/python): python3-usher_VERSION_all.deb, lintian clean.
	DEB_DIR=$(DEB_DIR) packaging/build-deb-python.sh $(DEB_VERSION) $(DEB_OUT)
	[ "$(DEB_LINTIAN)" != yes ] || lintian --fail-on error,warning $(DEB_OUT)/python3-usher_$(DEB_VERSION)_all.deb
	[ "$(DEB_LINTIAN)" != yes ] || lintian --fail-on error,warning $(DEB_OUT)/libusher0_$(DEB_VERSION)_$(DEB_ARCH).deb \
	  $(DEB_OUT)/libusher-dev_$(DEB_VERSION)_$(DEB_ARCH).deb

# The installed binaries with the Swift toolchain made invisible (a private mount namespace, an empty tmpfs over it).
test-static:
	@if [ "$$(id -u)" -ne 0 ]; then echo "test-static skipped: needs root (unshare -m)"; exit 0; fi; \
	$(MAKE) install DESTDIR=$(DEB_DIR)/static PREFIX=/usr SYSCONFDIR=/etc && \
	packaging/test-static.sh $(DEB_DIR)/static/usr/bin

# usherd (the CLI too) links no Foundation beyond FoundationEssentials, and no ICU (make install checks it too). The
# CLI alone (the `usher` product) is checked as well: it is what `swift build` gives a developer.
check-no-foundation: deps
	$(RELEASE_BUILD) --product usherd
	$(RELEASE_BUILD) --product usher
	tools/check-no-foundation.sh .build/release/usherd .build/release/usher

# Boots systemd in a container over a throw-away overlay of this machine's root and tests the package there.
test-package:
	@if [ "$$(id -u)" -ne 0 ]; then echo "test-package skipped: needs root (systemd-nspawn, overlay mounts)"; \
	else $(MAKE) --no-print-directory test-package-as-root; fi

test-package-as-root:
	$(call apt_install,$(BOOT_TEST_APT_PACKAGES))
	$(MAKE) deb
	DEB_QUICK=yes $(MAKE) deb DEB_VERSION=$(VERSION)+boottest1 DEB_DIR=$(DEB_DIR)-upgrade DEB_OUT=$(DEB_DIR)-upgrade \
	  DEB_LINTIAN=no
	packaging/test-static.sh $(DEB_DIR)/stage/usr/bin
	packaging/boot-test/run.sh $(CURDIR)/usher_$(VERSION)_$(DEB_ARCH).deb \
	  $(DEB_DIR)-upgrade/usher_$(VERSION)+boottest1_$(DEB_ARCH).deb \
	  $(CURDIR)/python3-usher_$(VERSION)_all.deb

# The request decoder and dispatcher fuzzer, for longer than make test runs it. USHER_FUZZ_SEED replays a failure.
FUZZ_ITERATIONS ?= 300000
fuzz: test-deps
	$(SWIFT) build --build-tests
	USHER_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) $(SWIFT) test --skip-build --disable-xctest --filter DispatcherFuzzTests

# A load test against a release build: 1,000 connections, 100 subscribed, pipelined reads, switches. Reports figures.
LOAD_ARGS ?=
load: deps
	$(RELEASE_BUILD) --product usherd
	$(RELEASE_BUILD) --product usher-load
	@dir=$$(mktemp -d /tmp/usher-load-XXXXXX); \
	.build/release/usherd --socket $$dir/usher.sock --state-directory $$dir/state --log-level warning & \
	pid=$$!; \
	for i in $$(seq 100); do [ -S $$dir/usher.sock ] && break; sleep 0.1; done; \
	.build/release/usher-load --socket $$dir/usher.sock --pid $$pid $(LOAD_ARGS); status=$$?; \
	kill -TERM $$pid; wait $$pid; rm -rf $$dir; exit $$status

# The performance figures of the README, in one run (see bench/bench.py): first the footprint (bench/footprint.py: the
# stripped binaries, the package's Installed-Size, usherd's idle memory with 10, 20,000 and 100,000 users, beside
# ssh-agent and the Debian packages of the same kind), then usherd against the line-echo server and ssh-agent at 1, 16
# and 64 connections, with a handful and with 100,000 users, login throughput, start-up time and idle memory, and the
# CLI's wall time. BENCH_ARGS="--footprint-only" stops after the footprint; "--baseline-usherd DIR/usherd
# --baseline-usher DIR/usher" adds other binaries' footprint beside. Not part of make test.
BENCH_DIR := $(CURDIR)/.build/bench
BENCH_ARGS ?=
# make bench BEFORE=<commit>: also the read and write workloads of that commit's usherd side by side with this one's,
# in the same run (bench/compare.py). Its usherd is built (release, minutes) from the commit's tree in .build/before.
BEFORE ?=
BEFORE_DIR = $(CURDIR)/.build/before/$(BEFORE)
BEFORE_USHERD = $(BEFORE_DIR)/.build/release/usherd
before-usherd:
	@test -n "$(BEFORE)" || { echo "make before-usherd BEFORE=<commit>"; exit 2; }
	@mkdir -p $(BEFORE_DIR)
	git archive $(BEFORE) | tar -x -C $(BEFORE_DIR)
	@# With this tree's release flags, so that the figures compare code, not flags; with the commit's own link order,
	@# or an empty one for a commit from before link orders.
	mkdir -p $(BEFORE_DIR)/packaging && { test -f $(BEFORE_DIR)/packaging/usherd.order || : > $(BEFORE_DIR)/packaging/usherd.order; }
	cd $(BEFORE_DIR) && $(call release_build,$(BEFORE_DIR)/packaging/usherd.order) --product usherd

bench: test-deps programs pam $(if $(BEFORE),before-usherd)
	$(call apt_install,openssh-client)
	@# The CLI's start-up figure is only meaningful without a dynamically loaded Swift runtime or Foundation.
	@if ldd $(PROGRAMS)/usher | grep -E 'libswift|libFoundation|lib_Foundation'; then \
	  echo "usher links the Swift runtime or Foundation dynamically (above)"; exit 1; fi
	@mkdir -p $(BENCH_DIR)
	$(CC) -O2 -Wall -Wextra -o $(BENCH_DIR)/rtload bench/rtload.c -lpthread
	$(CC) -O2 -Wall -Wextra -o $(BENCH_DIR)/lineecho bench/lineecho.c
	@# The package of these binaries, for its Installed-Size (quickly: gzip, no -dbgsym, no lintian).
	$(MAKE) --no-print-directory deb DEB_QUICK=yes DEB_LINTIAN=no DEB_DIR=$(BENCH_DIR)/deb DEB_OUT=$(BENCH_DIR)
	$(TEST_PYTHON) bench/bench.py --usherd $(PROGRAMS)/usherd --usher $(PROGRAMS)/usher \
	  --rtload $(BENCH_DIR)/rtload --lineecho $(BENCH_DIR)/lineecho --deb $(BENCH_DIR)/usher_$(VERSION)_$(DEB_ARCH).deb \
	  $(if $(BEFORE),--before $(BEFORE_USHERD)) $(BENCH_ARGS)

# make size-floor: the size below which usherd and usher cannot go as long as they link the libraries they do. Two
# programs that only use each library once (bench/size-floor), built with the release flags and stripped as the package
# strips: what the libraries cost before any code of usher's (docs/performance.md). Not part of make test (minutes).
SIZE_FLOOR_DIR := $(CURDIR)/.build/size-floor
size-floor: deps
	$(SWIFT) build -c release --static-swift-stdlib $(RELEASE_FLAGS) --package-path bench/size-floor \
	  --scratch-path $(SIZE_FLOOR_DIR)
	@for program in DaemonLibraries CLILibraries; do \
	  packaging/install-stripped.sh $(SIZE_FLOOR_DIR)/release/$$program $(SIZE_FLOOR_DIR)/stripped/$$program \
	    $(SIZE_FLOOR_DIR)/debug || exit 1; \
	  printf '%-16s %11d bytes stripped\n' $$program $$(stat -c %s $(SIZE_FLOOR_DIR)/stripped/$$program); \
	done

# make order-file: writes packaging/usherd.order again, from what a release usherd executes under callgrind (see
# bench/order_file.py; about a minute after the release build). Worth running after changes to what the daemon runs at
# start-up or for a read; make bench says how much of the committed order still names code of the binary.
# SwiftPM relinks only what it knows changed, and not for the map or the order file: the binary is removed first.
order-file: test-deps
	rm -f .build/release/usherd
	$(RELEASE_BUILD) --product usherd -Xlinker -Map=$(CURDIR)/.build/release-usherd.map
	$(TEST_PYTHON) bench/order_file.py --usherd .build/release/usherd --map .build/release-usherd.map \
	  --output $(ORDER_FILE)
	rm -f .build/release/usherd
	$(RELEASE_BUILD) --product usherd

clean:
	rm -rf .build $(RUN_DIR)

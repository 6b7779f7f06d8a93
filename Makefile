# usher: build, run and test.
#
#   make run    build and start usherd in the foreground (socket and state under ./.run/)
#   make test   install what the build and tests need, build (warnings are errors), check formatting, run every test
#
# Every target that builds first installs the Debian packages it needs when they are missing, so a fresh machine
# needs nothing but this repository and the Swift toolchain.

SWIFT ?= swift
RUN_DIR := $(CURDIR)/.run
SOCKET := $(RUN_DIR)/usher.sock
BIN := $(CURDIR)/.build/debug

# Debian packages: SQLite headers for GRDB, libsystemd for sd_notify, socat for the by-hand examples and tests.
APT_PACKAGES := libsqlite3-dev libsystemd-dev pkg-config socat

.PHONY: all deps build run test lint format clean

all: build

deps:
	@missing=""; \
	for package in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing packages:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build

run: build
	@mkdir -p $(RUN_DIR)
	@echo "usherd is starting in the foreground (Ctrl-C stops it)."
	@echo "  socket: $(SOCKET)"
	@echo "  state:  $(RUN_DIR)/state"
	@echo "Try, in another terminal:"
	@echo "  $(BIN)/usher --socket $(SOCKET) login --anonymous"
	@echo "  $(BIN)/usher --socket $(SOCKET) users"
	@echo "  echo '{\"method\":\"current_user\"}' | socat - UNIX-CONNECT:$(SOCKET)"
	@echo
	exec $(BIN)/usherd --config config/usherd.toml --socket $(SOCKET) --state-directory $(RUN_DIR)/state

lint:
	$(SWIFT) format lint --recursive --strict Sources Tests Package.swift

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Package.swift

test: deps lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --disable-xctest

clean:
	rm -rf .build $(RUN_DIR)

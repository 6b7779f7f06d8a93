#!/bin/sh
# install-stripped.sh BINARY DESTINATION DEBUG_ROOT
#
# Installs BINARY stripped as DESTINATION (mode 0755) and its debug information, compressed, as
# DEBUG_ROOT/.build-id/xx/yyyy….debug, where gdb, eu-stack and debuginfod look for it by the binary's build ID (the
# layout of Debian's -dbgsym packages). The stripped binary also carries a debuglink to that file.
set -eu
binary=$1
destination=$2
debug_root=$3
# Another architecture's binaries (make deb ARCH=...) need that architecture's objcopy (binutils-aarch64-linux-gnu).
objcopy=${OBJCOPY:-objcopy}

build_id=$(readelf -n "$binary" | sed -n 's/^ *Build ID: *//p')
[ -n "$build_id" ] || { echo "$binary has no build ID (link with --build-id)" >&2; exit 1; }
prefix=$(printf %s "$build_id" | cut -c1-2)
rest=$(printf %s "$build_id" | cut -c3-)
debug=$debug_root/.build-id/$prefix/$rest.debug

install -d "$(dirname "$debug")" "$(dirname "$destination")"
"$objcopy" --only-keep-debug --compress-debug-sections "$binary" "$debug"
chmod 0644 "$debug"
# --strip-all drops the symbol table and every debug section; what the Swift runtime reads at run time (type metadata,
# conformances, the swift5_* sections) is allocated, so it stays. .comment and .note are what dh_strip removes too.
"$objcopy" --strip-all --remove-section=.comment --remove-section=.note --add-gnu-debuglink="$debug" \
  "$binary" "$destination.tmp"
chmod 0755 "$destination.tmp"
mv "$destination.tmp" "$destination"

#!/bin/sh
# Issue 25: the installed usher CLI is sized for a device: no Foundation (beyond FoundationEssentials) and no ICU
# linked in, nothing of the Swift toolchain among the libraries it loads, and no larger than the release flags made it
# (20,500,000 bytes as installed, stripped). Issue 25's target is 10,000,000 bytes; the CLI does not reach it while it
# links FoundationEssentials and SwiftNIO (docs/performance.md, "Where the CLI's size goes"), and this check says by
# how much. Run by the package boot test inside the booted container, as root; changes nothing.
# footprint-usherd.sh checks the daemon and the package's Installed-Size.
set -u
say() { echo "footprint-usher: $*"; }
fail() { say "FAIL: $*"; exit 1; }
binary=/usr/bin/usher
limit=20500000
target=10000000

size=$(stat -c %s "$binary") || fail "no $binary"
[ "$size" -le "$limit" ] || fail "$binary is $size bytes, more than $limit"
say "$binary is $size bytes (at most $limit)"
[ "$size" -le "$target" ] || say "issue 25's target of $target bytes is not met: $((size - target)) bytes over"

# Foundation or ICU linked statically leaves their names in the binary even stripped: the Swift module descriptor of
# Foundation and FoundationInternationalization (the module's name between NUL bytes, where FoundationEssentials'
# own name does not match), ICU's data (its package name, icudtNN) and ICU's versioned C functions (u_..._NN, ucol_).
# Linked dynamically, they are in the dynamic symbol table and the NEEDED entries.
grep -aqP '\x00(Foundation|FoundationInternationalization|_FoundationICU)\x00' "$binary" \
	&& fail "$binary has Foundation's or ICU's module linked in"
grep -aqE 'icudt[0-9]+[lb]' "$binary" && fail "$binary carries ICU's data"
symbols=$(readelf -W --dyn-syms "$binary" | grep -E '\$s10Foundation|FoundationInternationalization| u_[A-Za-z]+_[0-9]+| ucol_' \
	| head -3)
[ -z "$symbols" ] || fail "$binary has Foundation or ICU symbols: $symbols"
# Hardened as Debian builds its programs: full RELRO (a GNU_RELRO segment, and BIND_NOW so that the GOT is in it).
readelf -lW "$binary" | grep -q GNU_RELRO || fail "$binary has no RELRO segment"
readelf -d "$binary" | grep -Eq 'BIND_NOW|FLAGS.*\bNOW\b' || fail "$binary is not linked with -z now"
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "$needed" | grep -Eq 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|icu' \
	&& fail "$binary loads a library of the Swift toolchain or ICU: $needed"
say "no Foundation or ICU symbols; loads only: $needed"
say "ok"

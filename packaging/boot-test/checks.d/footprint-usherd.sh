#!/bin/sh
# Issue 25: the installed daemon and the package are sized for a device: usherd at most 20 MB (20,000,000 bytes) as
# installed (stripped), with no Foundation (beyond FoundationEssentials) and no ICU linked in, and nothing of the Swift
# toolchain among the libraries it loads; the usher package's Installed-Size at most 35,000 KiB. Run by the package
# boot test inside the booted container, as root; changes nothing; every failure is listed before it exits.
# footprint-usher.sh checks the CLI.
#
# This holds once usherd's store no longer needs Foundation (issue 25's store work); before that usherd links
# Foundation and ICU (87 MB) and this check fails, on purpose: it is the target.
set -u
say() { echo "footprint-usherd: $*"; }
fail() { say "FAIL: $*"; exit 1; }
binary=/usr/bin/usherd
limit=20000000
installed_limit=35000

size=$(stat -c %s "$binary") || fail "no $binary"
installed=$(dpkg-query -W -f='${Installed-Size}' usher) || fail "the usher package is not installed"
say "$binary is $size bytes (at most $limit); the package's Installed-Size is $installed KiB (at most $installed_limit)"

# Foundation or ICU linked statically leaves their names in the binary even stripped: the Swift module descriptor of
# Foundation and FoundationInternationalization (the module's name between NUL bytes, where FoundationEssentials'
# own name does not match), ICU's data (its package name, icudtNN) and ICU's versioned C functions (u_..._NN, ucol_).
# Linked dynamically, they are in the dynamic symbol table and the NEEDED entries.
status=0
grep -aqP '\x00(Foundation|FoundationInternationalization|_FoundationICU)\x00' "$binary" \
	&& { say "FAIL: $binary has Foundation's or ICU's module linked in"; status=1; }
grep -aqE 'icudt[0-9]+[lb]' "$binary" && { say "FAIL: $binary carries ICU's data"; status=1; }
symbols=$(readelf -W --dyn-syms "$binary" | grep -E '\$s10Foundation|FoundationInternationalization| u_[A-Za-z]+_[0-9]+| ucol_' \
	| head -3)
[ -z "$symbols" ] || { say "FAIL: $binary has Foundation or ICU symbols: $symbols"; status=1; }
needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if echo "$needed" | grep -Eq 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|icu'; then
	say "FAIL: $binary loads a library of the Swift toolchain or ICU: $needed"
	status=1
fi
[ "$size" -le "$limit" ] || { say "FAIL: $binary is $size bytes, more than $limit"; status=1; }
[ "$installed" -le "$installed_limit" ] || { say "FAIL: Installed-Size $installed KiB, more than $installed_limit"; status=1; }
[ "$status" -eq 0 ] || exit 1
say "no Foundation or ICU symbols; loads only: $needed"
say "ok"

#!/bin/sh
# Fails when a program links Foundation proper or ICU (issue 25): only FoundationEssentials is allowed.
#
# usherd and usher are built to link nothing of Foundation beyond FoundationEssentials, which has no ICU: Foundation
# would bring FoundationInternationalization, and with it ICU's code and its 34 MB of data. This reads the symbol table
# of each unstripped release binary (before `install-stripped.sh` strips it) and fails, naming the module and the
# first symbols, when any symbol is of Foundation, FoundationInternationalization, FoundationNetworking, FoundationXML,
# CoreFoundation or ICU, defined or referenced; and fails too when ICU's data is in the binary under any name, since
# a stripped binary keeps it.
#
# Usage: tools/check-no-foundation.sh BINARY...
set -eu

[ "$#" -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
status=0
for binary in "$@"; do
	symbols=$(nm "$binary" 2>/dev/null | awk '{ print $NF }') || true
	if [ -z "$symbols" ]; then
		echo "check-no-foundation: $binary has no symbol table (stripped?): check the unstripped build" >&2
		status=1
		continue
	fi
	found=""
	# Swift mangles a module name with its length: 10Foundation is Foundation itself (FoundationEssentials is
	# 20FoundationEssentials), wherever it stands in a symbol; ICU's C++ symbols are in namespace icu_NN; CoreFoundation's
	# public functions start with CF and a capital (its __CFUniChar tables are not looked for: FoundationEssentials has
	# copies of its own).
	for pattern in \
		'Foundation:(^|[^0-9])10Foundation' \
		'FoundationInternationalization:30FoundationInternationalization' \
		'FoundationNetworking:20FoundationNetworking' \
		'FoundationXML:13FoundationXML' \
		'CoreFoundation:^CF[A-Z][A-Za-z]+$' \
		'ICU:(^_ZN6icu_[0-9]+|^icudt[0-9]+_dat$|^u_[a-z]+_[0-9]+$)'; do
		module=${pattern%%:*}
		regex=${pattern#*:}
		matches=$(printf '%s\n' "$symbols" | grep -E "$regex" | head -n 3 || true)
		if [ -n "$matches" ]; then
			found="$found $module"
			echo "check-no-foundation: $binary has symbols of $module, e.g.:" >&2
			printf '%s\n' "$matches" | sed 's/^/    /' >&2
		fi
	done
	# ICU's data begins with its own name (icudtNNl); stripping removes the symbol, not the data.
	if grep -a -q -E 'icudt[0-9]+l' "$binary"; then
		found="$found ICU-data"
		echo "check-no-foundation: $binary holds ICU's data (icudt..l)" >&2
	fi
	if [ -n "$found" ]; then
		status=1
	else
		echo "check-no-foundation: $binary links no Foundation, FoundationInternationalization or ICU"
	fi
done
exit "$status"

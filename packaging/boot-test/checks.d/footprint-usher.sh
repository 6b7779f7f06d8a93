#!/bin/sh
# Issue 25: the installed usher CLI takes no room of its own. It is usherd under another name: /usr/bin/usher is a
# hard link to /usr/bin/usherd (one file, which runs the CLI under any name but usherd; Sources/usherd/Usherd.swift),
# and git-credential-usher a symbolic link to usher. footprint-usherd.sh checks that file (its size, no Foundation or
# ICU, nothing of the Swift toolchain loaded, RELRO) and the package's Installed-Size. Issue 25's target for the CLI
# alone, 10,000,000 bytes, is not met by the CLI built alone (the `usher` product, 19.9 MB; docs/performance.md, "Where
# the CLI's size goes"); installed, the CLI adds the 1.7 MB of its own code to usherd and nothing else. Run by the
# package boot test inside the booted container, as root; changes nothing.
set -u
say() { echo "footprint-usher: $*"; }
fail() { say "FAIL: $*"; exit 1; }
usher=/usr/bin/usher
usherd=/usr/bin/usherd

[ -f "$usher" ] && [ ! -L "$usher" ] || fail "$usher is not a file"
[ "$usher" -ef "$usherd" ] || fail "$usher is not the same file as $usherd (a hard link)"
links=$(stat -c %h "$usher")
[ "$links" -eq 2 ] || fail "$usher has $links names, not 2 (usher and usherd)"
[ "$(readlink /usr/bin/git-credential-usher)" = usher ] || fail "git-credential-usher is not a link to usher"
say "$usher is $usherd under another name (one file, $(stat -c %s "$usher") bytes); git-credential-usher links to it"

# Under each name the program it is named for: the CLI's help and the daemon's differ.
"$usher" --help | grep -q '^OVERVIEW: Talk to usherd' || fail "$usher --help is not the CLI's help"
"$usherd" --help | grep -q -- '--state-directory' || fail "$usherd --help is not the daemon's help"
/usr/bin/git-credential-usher --help | grep -q 'usher git-credential' \
	|| fail "git-credential-usher --help is not the git-credential command's help"
[ "$("$usher" --version)" = "$("$usherd" --version)" ] || fail "usher and usherd report different versions"
say "ok"

#!/bin/sh
# build-deb.sh STAGE VERSION OUTPUT_DIRECTORY
#
# Turns what `make install DESTDIR=STAGE PREFIX=/usr SYSCONFDIR=/etc` installed into usher_VERSION_ARCH.deb and
# usher-dbgsym_VERSION_ARCH.deb (the detached debug information, as dh_strip would make it), in OUTPUT_DIRECTORY.
# Everything in STAGE is shipped; this adds only what Debian asks of a package: the copyright file and changelog,
# compressed man pages, the maintainer scripts, conffiles, md5sums, and a control file whose Depends: dpkg-shlibdeps
# computes from the binaries.
#
# DEB_QUICK=yes (the boot test's upgrade package) compresses with gzip -1 instead of xz and skips the -dbgsym package.
set -eu
compression="-Zxz"
[ "${DEB_QUICK:-}" != yes ] || compression="-Zgzip -z1"
stage=$(realpath "$1")
version=$2
output=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
# The package's architecture: DEB_HOST_ARCH when set (make deb ARCH=...), else this machine's.
arch=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null)
work=$(dirname "$stage")/package
rm -rf "$work"
mkdir -p "$work/src/debian"
package=$work/usher
dbgsym=$work/usher-dbgsym
cp -a "$stage" "$package"

# The debug information goes into its own package.
if [ -d "$package/usr/lib/debug" ]; then
	mkdir -p "$dbgsym/usr/lib"
	mv "$package/usr/lib/debug" "$dbgsym/usr/lib/debug"
	mkdir -p "$dbgsym/usr/share/doc"
	ln -s usher "$dbgsym/usr/share/doc/usher-dbgsym"
fi

# Debian's documentation files. The version's changelog entry is written from the VERSION file, so the package's
# changelog cannot disagree with it; the changes themselves are the project's history.
doc=$package/usr/share/doc/usher
install -D -m 0644 "$here/debian/copyright" "$doc/copyright"
date=$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}")
maintainer=$(sed -n 's/^Maintainer: //p' "$here/debian/control")
cat > "$work/src/debian/changelog" <<CHANGELOG
usher ($version) unstable; urgency=medium

  * Release $version. The changes are in the project's history (git log).

 -- $maintainer  $date
CHANGELOG
gzip -9nc "$work/src/debian/changelog" > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
# Man pages, when make install put some there, compressed as Debian wants them.
if [ -d "$package/usr/share/man" ]; then
	find "$package/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +
fi
find "$package" "$work/src" -type d -exec chmod 0755 {} +

# Maintainer scripts, conffiles (everything under /etc), md5sums.
mkdir -p "$package/DEBIAN"
for script in postinst prerm postrm; do
	install -m 0755 "$here/debian/$script" "$package/DEBIAN/$script"
done
(cd "$package" && find etc -type f -printf '/%p\n' | sort) > "$package/DEBIAN/conffiles"
[ -s "$package/DEBIAN/conffiles" ] || rm "$package/DEBIAN/conffiles"
(cd "$package" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0r md5sum) \
	> "$package/DEBIAN/md5sums"

# The control file: Depends from dpkg-shlibdeps (the libraries the binaries load, with their package versions), and
# the dependencies of the maintainer scripts (as dh_installsysusers and dh_installsystemd would add them).
cp "$here/debian/control" "$work/src/debian/control"
cd "$work/src"
binaries=$(find "$package/usr/bin" -type f -perm -u+x)
# pam_usher.so (the PAM module, in the multiarch security directory): its libraries too (libpam, json-c).
binaries="$binaries $(find "$package/usr/lib" -path '*/security/*.so' -type f)"
# shellcheck disable=SC2086 # one argument per binary
dpkg-shlibdeps -Tdebian/usher.substvars $binaries
# Binaries linked with -z pack-relative-relocs (DT_RELR, see the Makefile's RELEASE_FLAGS) need glibc 2.36's loader,
# which they ask for by the version GLIBC_ABI_DT_RELR; dpkg-shlibdeps maps only their symbols' versions, not this one.
relr=""
# shellcheck disable=SC2086 # one argument per binary
if readelf -V $binaries | grep -q GLIBC_ABI_DT_RELR; then relr=", libc6 (>= 2.36)"; fi
# usherd opens libcurl with dlopen on its first request to an identity provider (Sources/CCurl), libsystemd on first
# use (Sources/CSystemd) and libsqlite3 when the store opens its database (Sources/CSQLite), so dpkg-shlibdeps, which
# reads NEEDED entries, sees none of them; 7.85 for CURLOPT_PROTOCOLS_STR, 227 for sd_listen_fds_with_names, 3.37 for
# sqlite3_changes64.
# libpam-runtime 1.0.1-6 has pam-auth-update, which the PAM profile (/usr/share/pam-configs/usher) and prerm use.
echo "misc:Depends=systemd | systemd-standalone-sysusers | systemd-sysusers, init-system-helpers (>= 1.54~)$relr, libcurl4 (>= 7.85.0), libsystemd0 (>= 227), libsqlite3-0 (>= 3.37.0), libpam-runtime (>= 1.0.1-6)" \
	>> debian/usher.substvars
dpkg-gencontrol -pusher -v"$version" -Tdebian/usher.substvars -P"$package" -f"$work/files"
# shellcheck disable=SC2086 # two options
dpkg-deb --root-owner-group $compression --build "$package" "$output/usher_${version}_${arch}.deb"

if [ -d "$dbgsym" ] && [ "${DEB_QUICK:-}" != yes ]; then
	build_ids=$(cd "$dbgsym/usr/lib/debug/.build-id" && find . -name '*.debug' | sed 's|^\./||; s|/||; s|\.debug$||' \
		| sort | tr '\n' ' ' | sed 's/ $//')
	(cd "$dbgsym" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0r md5sum) \
		> "$work/dbgsym.md5sums"
	mkdir -p "$dbgsym/DEBIAN"
	mv "$work/dbgsym.md5sums" "$dbgsym/DEBIAN/md5sums"
	cat > "$dbgsym/DEBIAN/control" <<CONTROL
Package: usher-dbgsym
Source: usher
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$dbgsym" | cut -f1)
Depends: usher (= $version)
Section: debug
Priority: optional
Description: debug symbols for usher
Auto-Built-Package: debug-symbols
Build-Ids: $build_ids
CONTROL
	find "$dbgsym" -type d -exec chmod 0755 {} +
	dpkg-deb --root-owner-group -Zxz --build "$dbgsym" "$output/usher-dbgsym_${version}_${arch}.deb"
fi

#!/bin/sh
# build-deb-libusher.sh STAGE VERSION OUTPUT_DIRECTORY
#
# Takes the C client library's files out of what `make install DESTDIR=STAGE PREFIX=/usr` installed (as dh_install
# splits debian/tmp) and makes libusher0_VERSION_ARCH.deb (the shared library) and libusher-dev_VERSION_ARCH.deb
# (usher.h, the libusher.so link, usher.pc, the section 3 manual pages, the examples) in OUTPUT_DIRECTORY. Run before
# build-deb.sh, so that the usher package does not ship them too. Adds what Debian asks of a library package: a
# symbols file (every symbol of the LIBUSHER_0 version node, from the library itself), the ldconfig trigger, a
# stripped library, Depends: from dpkg-shlibdeps, copyright, changelog, md5sums.
set -eu
stage=$(realpath "$1")
version=$2
output=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
# The package's architecture: DEB_HOST_ARCH when set (make deb ARCH=...), else this machine's.
arch=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(dirname "$stage")/package-libusher
rm -rf "$work"
mkdir -p "$work/src/debian"
lib=$work/libusher0
dev=$work/libusher-dev
libdir=usr/lib/$multiarch
maintainer=$(sed -n 's/^Maintainer: //p' "$here/debian/control")

# Moves PATH (relative to the stage) into a package's tree.
take() { # take PACKAGE_DIR PATH
	mkdir -p "$1/$(dirname "$2")"
	mv "$stage/$2" "$1/$2"
}
soname=libusher.so.0
realname=$(cd "$stage/$libdir" && ls libusher.so.0.*)
take "$lib" "$libdir/$realname"
take "$lib" "$libdir/$soname"
take "$dev" "$libdir/libusher.so"
take "$dev" "$libdir/pkgconfig/usher.pc"
rmdir "$stage/$libdir/pkgconfig" 2>/dev/null || true
take "$dev" usr/include/usher.h
rmdir "$stage/usr/include" 2>/dev/null || true
mkdir -p "$dev/usr/share/man/man3"
mv "$stage"/usr/share/man/man3/*.3 "$dev/usr/share/man/man3/"
rmdir "$stage/usr/share/man/man3"
take "$dev" usr/share/doc/libusher-dev/examples
# The directories this emptied, so that the usher package has none without content.
for directory in usr/share/doc/libusher-dev "$libdir" usr/lib usr/share/man usr/share/doc usr/share usr; do
	rmdir "$stage/$directory" 2>/dev/null || true
done

# As dh_strip does for a shared library: no debug information, no symbol table beyond the dynamic one.
"${STRIP:-strip}" --remove-section=.comment --remove-section=.note --strip-unneeded "$lib/$libdir/$realname"
chmod 0644 "$lib/$libdir/$realname"

date=$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}")
cat > "$work/src/debian/changelog" <<CHANGELOG
usher ($version) unstable; urgency=medium

  * Release $version. The changes are in the project's history (git log).

 -- $maintainer  $date
CHANGELOG
for package in libusher0 libusher-dev; do
	doc=$work/$package/usr/share/doc/$package
	install -D -m 0644 "$here/debian/libusher.copyright" "$doc/copyright"
	gzip -9nc "$work/src/debian/changelog" > "$doc/changelog.gz"
	chmod 0644 "$doc/changelog.gz"
done
find "$dev/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +
find "$lib" "$dev" -type d -exec chmod 0755 {} +

mkdir -p "$lib/DEBIAN" "$dev/DEBIAN"
# The symbols file: every symbol the library exports, all in LIBUSHER_0, there since the first version.
{
	echo "$soname libusher0 #MINVER#"
	echo "* Build-Depends-Package: libusher-dev"
	objdump -T "$lib/$libdir/$realname" | awk '$NF ~ /^usher_|^LIBUSHER_/ && $(NF-1) ~ /LIBUSHER_/ { print " " $NF "@" $(NF-1) " 0.1.0" }' \
		| LC_ALL=C sort -u
} > "$lib/DEBIAN/symbols"
grep -q ' usher_open@LIBUSHER_0 ' "$lib/DEBIAN/symbols" || { echo "no usher_open in the symbols file"; exit 1; }
# shlibs too, for tools that read only that: the first version of the package is the minimum.
echo "libusher 0 libusher0 (>= 0.1.0)" > "$lib/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$lib/DEBIAN/triggers"
chmod 0644 "$lib/DEBIAN/symbols" "$lib/DEBIAN/shlibs" "$lib/DEBIAN/triggers"
for package in "$lib" "$dev"; do
	(cd "$package" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0r md5sum) \
		> "$package/DEBIAN/md5sums"
done

cat > "$work/src/debian/control" <<CONTROL
Source: usher
Section: libs
Priority: optional
Maintainer: $maintainer
Rules-Requires-Root: no
Standards-Version: 4.6.2

Package: libusher0
Architecture: any
Multi-Arch: same
Section: libs
Depends: \${shlibs:Depends}, \${misc:Depends}
Description: C client library of usher, the multi-user session daemon
 usher keeps track of who is using a device and hands every local program a
 valid access token for them. libusher lets C programs (and any language with
 a C foreign-function interface) log users in, list them, switch the active
 user, take access tokens, hold leases and receive events, with an event API
 that a program's own main loop drives.
 .
 This package contains the shared library.

Package: libusher-dev
Architecture: any
Multi-Arch: same
Section: libdevel
Depends: libusher0 (= \${binary:Version}), \${misc:Depends}
Description: C client library of usher, the multi-user session daemon (development files)
 usher keeps track of who is using a device and hands every local program a
 valid access token for them. libusher lets C programs (and any language with
 a C foreign-function interface) log users in, list them, switch the active
 user, take access tokens, hold leases and receive events, with an event API
 that a program's own main loop drives.
 .
 This package contains the header, the pkg-config file, the manual pages and
 the examples (poll(2) and GLib).
CONTROL
cd "$work/src"
dpkg-shlibdeps -Tdebian/libusher0.substvars "$lib/$libdir/$realname"
echo 'misc:Depends=' >> debian/libusher0.substvars
dpkg-gencontrol -plibusher0 -v"$version" -Tdebian/libusher0.substvars -P"$lib" -f"$work/files"
echo 'misc:Depends=' > debian/libusher-dev.substvars
dpkg-gencontrol -plibusher-dev -v"$version" -Tdebian/libusher-dev.substvars -P"$dev" -f"$work/files"
dpkg-deb --root-owner-group -Zxz --build "$lib" "$output/libusher0_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$dev" "$output/libusher-dev_${version}_${arch}.deb"

#!/bin/sh
# build-deb-python.sh VERSION OUTPUT_DIRECTORY
#
# Builds python3-usher_VERSION_all.deb, the Python package of clients/python, in OUTPUT_DIRECTORY: the wheel that
# `pip install ./clients/python` would install (made by its PEP 517 backend, flit_core, from
# clients/python/build_backend), unpacked into /usr/lib/python3/dist-packages as dh_python3 lays it out (no RECORD;
# byte-compiled at installation by py3compile, removed by py3clean), its README and examples under
# /usr/share/doc/python3-usher, and the Debian files.
set -eu
version=$1
output=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
source=$(cd "$here/../clients/python" && pwd)
work=$(realpath -m "${DEB_DIR:-$here/../.build/deb}")/python3-usher
rm -rf "$work"
package=$work/root
site=$package/usr/lib/python3/dist-packages
doc=$package/usr/share/doc/python3-usher
mkdir -p "$work/wheel" "$site" "$doc/examples" "$package/DEBIAN"

# The package's version is the project's (pyproject.toml's, which a test checks against VERSION); only the boot
# test's upgrade package adds a suffix to it (VERSION+boottest1).
wheel=$(cd "$source" && python3 -c 'import sys; sys.path.insert(0, "build_backend"); import flit_core.buildapi as backend; print(backend.build_wheel(sys.argv[1]))' "$work/wheel")
wheel_version=${wheel#usher-}
wheel_version=${wheel_version%-py3-none-any.whl}
case "$version" in
"$wheel_version" | "$wheel_version"+*) ;;
*) echo "build-deb-python.sh: the wheel is $wheel, not version $version (clients/python/pyproject.toml)" >&2; exit 1 ;;
esac
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$work/wheel/$wheel" "$site"
rm "$site/usher-$wheel_version.dist-info/RECORD"
printf 'debian\n' > "$site/usher-$wheel_version.dist-info/INSTALLER"

install -m 0644 "$source/README.md" "$doc/README.md"
for example in "$source"/examples/*.py; do install -m 0644 "$example" "$doc/examples/"; done
install -m 0644 "$here/debian/python3-usher/copyright" "$doc/copyright"
maintainer=$(sed -n 's/^Maintainer: //p' "$here/debian/control")
date=$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}")
cat > "$work/changelog" <<CHANGELOG
usher ($version) unstable; urgency=medium

  * Release $version. The changes are in the project's history (git log).

 -- $maintainer  $date
CHANGELOG
gzip -9nc "$work/changelog" > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
find "$package" -type f -exec chmod 0644 {} +
find "$package" -type d -exec chmod 0755 {} +

for script in postinst prerm; do
	install -m 0755 "$here/debian/python3-usher/$script" "$package/DEBIAN/$script"
done
(cd "$package" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0r md5sum) \
	> "$package/DEBIAN/md5sums"
chmod 0644 "$package/DEBIAN/md5sums"
{
	sed -n '1,/^Architecture:/p' "$here/debian/python3-usher/control"
	echo "Version: $version"
	echo "Maintainer: $maintainer"
	echo "Installed-Size: $(du -sk --exclude=DEBIAN "$package" | cut -f1)"
	sed -n '/^Architecture:/,$p' "$here/debian/python3-usher/control" | sed 1d
} > "$package/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$package" "$output/python3-usher_${version}_all.deb"

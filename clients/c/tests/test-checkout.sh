#!/bin/sh
# test-checkout.sh TOP WALKTHROUGH.c RUN-EXAMPLE: the build from a checkout as docs/c-library.md shows it. The
# page's two command blocks run as written, in a shell of their own: the first in the checkout TOP, the second in a
# directory holding the walk-through as app.c; then the program they built runs against the real usherd
# (RUN-EXAMPLE starts one, $USHER_BIN/usherd) and pkg-config must have named this checkout's build.
set -eu
top=$1 walkthrough=$2 run_example=$3
here=$(cd "$(dirname "$0")" && pwd)
page=$top/docs/c-library.md
build=$(awk -v name=build-in-a-checkout.sh -f "$here/extract-example.awk" "$page")
compile=$(awk -v name=compile-against-it.sh -f "$here/extract-example.awk" "$page")
if [ -z "$build" ] || [ -z "$compile" ]; then
	echo "docs/c-library.md has no block build-in-a-checkout.sh or compile-against-it.sh"
	exit 1
fi
work=$(mktemp -d /tmp/usher-c-checkout-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$walkthrough" "$work/app.c"
printf '%s\n' "in $top:" "$build" "in a directory with app.c:" "$compile"
# The reader's shell: none of this run's make variables (make puts those of its command line in the environment),
# and PKG_CONFIG_PATH only as the page sets it.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u O -u USHER_BIN -u PKG_CONFIG_PATH sh -eu -c "cd \"\$1\"
$build
cd \"\$2\"
$compile
pkg-config --cflags usher | grep -q -e \"-I\$1/clients/c/include\" || {
	echo \"pkg-config found another usher than this checkout's: \$(pkg-config --cflags --libs usher)\"
	exit 1
}" sh "$top" "$work"
"$run_example" "$work/app"

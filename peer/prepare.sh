#!/usr/bin/env bash
# Prepares what the peer harness needs on a GPU machine that reaches no
# network, on a machine that does: tarballs of sppark and blst at the pinned
# commits, from git checkouts (or bare clones) given as arguments, and the
# cuzk executable, all in one directory that travels with the work tree.
#
#   peer/prepare.sh SPPARK_GIT BLST_GIT [DEST]     (DEST: .peer)
#
# then, on the GPU machine:  peer/run.sh DEST OUTDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/pins.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 SPPARK_GIT BLST_GIT [DEST]" >&2
	exit 2
fi
sppark=$1 blst=$2 dest=${3:-.peer}
mkdir -p "$dest"

# archive NAME GITDIR COMMIT: DEST/NAME.tar.gz with the tree under NAME/.
archive() {
	if ! git -C "$2" cat-file -e "$3^{commit}" 2>/dev/null; then
		echo "prepare: $2 has no commit $3 ($1's pinned commit); fetch it first" >&2
		exit 1
	fi
	git -C "$2" archive --format=tar.gz --prefix="$1/" "$3" > "$dest/$1.tar.gz"
	echo "prepare: $dest/$1.tar.gz at $3"
}
archive sppark "$sppark" "$SPPARK_COMMIT"
archive blst "$blst" "$BLST_COMMIT"

# Stripped, the executable leaves room for the tarballs in what may travel.
go build -ldflags "-s -w -X github.com/cuzk/cuzk/cli.Version=$(git describe --always --dirty 2>/dev/null || echo dev)" \
	-o "$dest/cuzk" ./cmd/cuzk
echo "prepare: $dest/cuzk built"
du -sh "$dest"

#!/usr/bin/env bash
# Repacks one run archive, a .tgz whose traces were gzipped one by one before
# the tar was gzipped again (the calls' `gzip $R/*/*.json ...; tar czf
# $OUT/x.tgz -C $R .`), as a .txz beside it: the same tar with every gzip
# member decompressed (x.json.gz becomes x.json, holding exactly `gunzip -c
# x.json.gz`; members that are not gzip stay as they are, same path), in the
# same member order with the same modes and times (owner root), compressed
# whole with `xz -9e`. The outer gzip gains nothing on gzipped members, xz
# over the whole tar about half.
#
# Then it checks the pair: for each archive, every member's path and the
# sha256 of its content, a gzip member read decompressed and named without
# its .gz (directories as such), in archive order; the two lists must be
# equal. It writes the .txz only if they are and it is at least MIN_GAIN
# percent (default 25) smaller than the .tgz; otherwise it exits non-zero and
# writes nothing. The .tgz is left where it was: `git rm` it, `git add` the
# .txz, and name the new archive in the READMEs (`tar xJf`; the traces
# without .gz). Before repacking, make sure no script or test reads the .tgz
# (grep the *.go, *.sh, *.py files and Makefiles for its name and for the
# folder variables that build its path).
#
#   bash docs/runs/repack.sh docs/runs/RUN/CALL/x.tgz     repack and check
#   bash docs/runs/repack.sh --check OLD.tgz NEW.txz      only the check
# Prints one line: the archive, members, bytes before and after.
# Needs GNU tar, gzip, xz and sha256sum.
set -euo pipefail
MIN_GAIN=${MIN_GAIN:-25}

die() { echo "repack: $*" >&2; exit 1; }

# manifest ARCHIVE DIR: the check's list for ARCHIVE, unpacked into DIR.
manifest() {
	local a=$1 d=$2 name path kind
	mkdir -p "$d"
	tar -xpf "$a" -C "$d"
	tar -tf "$a" | while IFS= read -r name; do
		path=$d/$name
		if [ -L "$path" ]; then
			printf 'link %s -> %s\n' "$name" "$(readlink "$path")"
		elif [ -d "$path" ]; then
			printf 'dir %s\n' "${name%/}"
		elif [ -f "$path" ]; then
			case $name in
			*.gz)
				if gzip -t "$path" 2> /dev/null; then
					printf 'file %s %s\n' "${name%.gz}" "$(gunzip -c "$path" | sha256sum | cut -d' ' -f1)"
					continue
				fi ;;
			esac
			printf 'file %s %s\n' "$name" "$(sha256sum < "$path" | cut -d' ' -f1)"
		else
			kind=$(stat -c %F "$path")
			printf 'other %s %s\n' "$name" "$kind"
		fi
	done
}

# check OLD NEW: compares the two archives' lists; prints the number of
# members. Run it in a subshell: $(check OLD NEW).
check() {
	local old=$1 new=$2
	ct=$(mktemp -d)
	trap 'rm -rf "$ct"' EXIT
	xz -t "$new" || die "$new is not an xz file"
	manifest "$old" "$ct/old" > "$ct/old.list"
	manifest "$new" "$ct/new" > "$ct/new.list"
	[ -s "$ct/old.list" ] || die "$old has no members"
	diff "$ct/old.list" "$ct/new.list" > "$ct/diff" || { cat "$ct/diff" >&2; die "$new differs from $old"; }
	wc -l < "$ct/old.list"
}

if [ "${1:-}" = --check ]; then
	[ $# = 3 ] || die "usage: repack.sh --check OLD.tgz NEW.txz"
	n=$(check "$2" "$3")
	echo "$2: $n members, $(stat -c %s "$2") -> $(stat -c %s "$3") bytes ($3): same content"
	exit 0
fi

[ $# = 1 ] || die "usage: repack.sh ARCHIVE.tgz (or --check OLD.tgz NEW.txz)"
old=$1
case $old in *.tgz) ;; *) die "$old is not a .tgz" ;; esac
[ -f "$old" ] || die "no $old"
new=${old%.tgz}.txz
[ -e "$new" ] && die "$new exists already"

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir "$t/x"
tar -xpzf "$old" -C "$t/x"
tar -tzf "$old" > "$t/names"
# The member list must read back as it was written: one name a line, no
# name twice.
if grep -q '\\' "$t/names"; then die "$old has a name tar quotes; repack it by hand"; fi
[ -z "$(sort "$t/names" | uniq -d)" ] || die "$old holds a name twice"

# Decompress the gzip members in place of their .gz, with their mode and time.
: > "$t/list"
while IFS= read -r name; do
	path=$t/x/$name
	if [ -f "$path" ] && [ ! -L "$path" ] && [ "$name" != "${name%.gz}" ] && gzip -t "$path" 2> /dev/null; then
		plain=${name%.gz}
		grep -qxF "$plain" "$t/names" && die "$old holds both $name and $plain"
		gunzip -c "$path" > "$t/x/$plain"
		chmod --reference="$path" "$t/x/$plain"
		touch -r "$path" "$t/x/$plain"
		rm "$path"
		name=$plain
	fi
	printf '%s\n' "$name" >> "$t/list"
done < "$t/names"
# The directories' times as they were (writing into them moved them).
if grep -q '/$' "$t/names"; then
	tar -xpzf "$old" -C "$t/x" --no-recursion --wildcards '*/'
fi

tar -cf - -C "$t/x" --no-recursion --owner=root:0 --group=root:0 --verbatim-files-from -T "$t/list" |
	xz -9e -T1 > "$t/new.txz"
n=$(check "$old" "$t/new.txz")
a=$(stat -c %s "$old") b=$(stat -c %s "$t/new.txz")
if [ $((b * 100)) -gt $((a * (100 - MIN_GAIN))) ]; then
	die "$old: $a -> $b bytes, less than $MIN_GAIN % smaller; left as it is"
fi
mv "$t/new.txz" "$new"
echo "$old: $n members, $a -> $b bytes ($new): same content"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print amptrace's version, a valid Debian upstream version (starts with a
# digit; only digits, letters and . + ~).
#
#  - In a git checkout: `git describe` against a release tag v0.1.0 gives
#    0.1.0+N.gHASH (N commits after it), or 0.1.0 on the tag itself; with no
#    release tag yet, VERSION's base with the commit count,
#    0.1.0+N.gHASH.  The count makes later builds sort higher in dpkg.  A
#    tree with uncommitted changes gets .dirty.
#  - Outside git (a release tarball, the copy `make deb` builds from): the
#    VERSION file, which `make deb` writes with the full version.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd -P)
base=$(cat "$top/VERSION")
if ! git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
   [ "$(git -C "$top" rev-parse --show-toplevel)" != "$top" ]; then
    echo "$base"
    exit 0
fi
dirty=
git -C "$top" diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if desc=$(git -C "$top" describe --tags --match 'v[0-9]*' --long 2>/dev/null); then
    # v0.1.0-5-gabc1234 -> 0.1.0+5.gabc1234; v0.1.0-0-g... -> 0.1.0
    tag=${desc%-*-g*}
    rest=${desc#"$tag"-}
    count=${rest%%-*}
    hash=${rest#*-}
    if [ "$count" = 0 ]; then
        echo "${tag#v}${dirty:++0$dirty}"
    else
        echo "${tag#v}+$count.$hash$dirty"
    fi
else
    echo "$base+$(git -C "$top" rev-list --count HEAD).g$(git -C "$top" rev-parse --short=7 HEAD)$dirty"
fi

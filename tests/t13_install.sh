#!/usr/bin/env bash
# make install / make uninstall, into a DESTDIR (the host's own /usr/local
# is never touched):
#  1. exactly the expected files, under PREFIX=/usr/local and /opt/amptrace;
#  2. the installed binary runs; `amptrace compare` finds its driver and
#     its package in PREFIX/lib/amptrace, and the driver its writer there;
#     man finds the pages; bash completion completes options and values;
#  3. the exporter unit names the installed binary and defaults file and
#     passes `systemd-analyze verify` without a word; its exposure
#     (`systemd-analyze security`) stays under 4 (measured 2.7);
#  4. an edited /etc/default/amptrace-exporter survives reinstall and
#     uninstall; everything else goes, no file is left.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
D=$AMP_TMP/dest
make -C "$AMP_ROOT" -s install DESTDIR="$D" PREFIX=/usr/local >"$AMP_TMP/install.log" 2>&1 ||
    fail "make install: $(tail -5 "$AMP_TMP/install.log")"
(cd "$D" && find . -type f | sort) >"$AMP_TMP/files"
pages=$(cd "$AMP_ROOT/scripts/man" && ls *.8 | sed 's|^|./usr/local/share/man/man8/|')
compare_pkg=$(cd "$AMP_ROOT/scripts" && ls amptrace_compare/*.py | sed 's|^|./usr/local/lib/amptrace/|')
sort >"$AMP_TMP/want" <<LIST
./etc/default/amptrace-exporter
./usr/local/bin/amptrace
./usr/local/lib/amptrace/amptrace-compare
./usr/local/lib/amptrace/append_writer
./usr/local/lib/systemd/system/amptrace-exporter.service
./usr/local/share/amptrace/prometheus/amptrace.rules.yml
./usr/local/share/bash-completion/completions/amptrace
./usr/local/share/doc/amptrace/examples/prometheus-scrape.yml
$pages
$compare_pkg
LIST
diff "$AMP_TMP/want" "$AMP_TMP/files" || fail "installed files differ from the list (< wanted, > installed)"
ok "make install: $(wc -l <"$AMP_TMP/files") files, as listed"

bin=$D/usr/local/bin/amptrace
"$bin" --version | head -1 | grep -q '^amptrace [0-9]' || fail "installed amptrace --version"
env -u AMPTRACE "$bin" compare --help >"$AMP_TMP/compare.help" 2>&1 ||
    fail "installed amptrace compare --help: $(cat "$AMP_TMP/compare.help")"
writer=$(env -u AMPTRACE -u AMPTRACE_APPEND_WRITER python3 -B -c '
import sys
sys.path.insert(0, sys.argv[1])
from amptrace_compare.paths import APPEND_WRITER
print(APPEND_WRITER)' "$D/usr/local/lib/amptrace")
[[ $writer == "$D/usr/local/lib/amptrace/append_writer" ]] || fail "installed driver's writer is $writer"
ok "installed compare runs its driver from lib/amptrace, which uses its writer there"
for p in amptrace amptrace-trace amptrace-compare; do
    [[ $(MANPATH=$D/usr/local/share/man man -w "$p") == "$D/usr/local/share/man/man8/$p.8" ]] ||
        fail "man does not find $p in the installed tree"
done
ok "man finds the installed pages"

if [[ -r /usr/share/bash-completion/bash_completion ]]; then
    out=$(PATH=$D/usr/local/bin:$PATH bash -c '
        . /usr/share/bash-completion/bash_completion
        . "$1"
        c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"
              COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _amptrace 2>/dev/null; echo "${COMPREPLY[*]}"; }
        c amptrace rec; c amptrace trace --pre; c amptrace trace --preset jo; c amptrace top -s am
        c amptrace explain --che; c amptrace compare -f bt' _ "$D/usr/local/share/bash-completion/completions/amptrace")
    want=$'record\n--preset=\njournald\namp\n--check\nbtrfs btrfsC'
    [[ $out == "$want" ]] || fail "bash completion: got $(printf '%q' "$out")"
    ok "bash completion: commands, options from --help, presets, sort keys, filesystems"
fi

unit=$D/usr/local/lib/systemd/system/amptrace-exporter.service
grep -qx 'ExecStart=/usr/local/bin/amptrace trace $AMPTRACE_EXPORTER_ARGS' "$unit" || fail "unit's ExecStart: $(grep ExecStart= "$unit")"
grep -qx 'EnvironmentFile=-/etc/default/amptrace-exporter' "$unit" || fail "unit's EnvironmentFile"
# verify checks that ExecStart exists: point it at the DESTDIR copy.
sed "s|/usr/local/bin/amptrace|$bin|" "$unit" >"$AMP_TMP/amptrace-exporter.service"
systemd-analyze verify --man=no "$AMP_TMP/amptrace-exporter.service" >"$AMP_TMP/verify" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$AMP_TMP/verify")"
[[ ! -s $AMP_TMP/verify ]] || fail "systemd-analyze verify warns: $(cat "$AMP_TMP/verify")"
exposure=$(systemd-analyze security --offline=yes "$AMP_TMP/amptrace-exporter.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[[ -n $exposure ]] && awk -v e="$exposure" 'BEGIN { exit !(e < 4) }' ||
    fail "systemd-analyze security: exposure '$exposure' (want < 4)"
ok "exporter unit: systemd-analyze verify silent, exposure $exposure"

echo '# edited' >>"$D/etc/default/amptrace-exporter"
make -C "$AMP_ROOT" -s install DESTDIR="$D" PREFIX=/usr/local >/dev/null
grep -q '^# edited' "$D/etc/default/amptrace-exporter" || fail "reinstall overwrote an edited /etc/default file"
make -C "$AMP_ROOT" -s uninstall DESTDIR="$D" PREFIX=/usr/local >"$AMP_TMP/uninstall.log" 2>&1 ||
    fail "make uninstall: $(cat "$AMP_TMP/uninstall.log")"
left=$(cd "$D" && find . -type f | sort | paste -sd' ')
[[ $left == ./etc/default/amptrace-exporter ]] || fail "after uninstall: $left"
grep -q 'was changed: kept' "$AMP_TMP/uninstall.log" || fail "uninstall did not say it kept the edited file"
rm -rf "$D"
make -C "$AMP_ROOT" -s install DESTDIR="$D" PREFIX=/opt/amptrace >/dev/null
grep -qx 'ExecStart=/opt/amptrace/bin/amptrace trace $AMPTRACE_EXPORTER_ARGS' \
    "$D/opt/amptrace/lib/systemd/system/amptrace-exporter.service" || fail "PREFIX=/opt/amptrace unit"
env -u AMPTRACE "$D/opt/amptrace/bin/amptrace" compare --help >/dev/null || fail "compare under /opt/amptrace"
make -C "$AMP_ROOT" -s uninstall DESTDIR="$D" PREFIX=/opt/amptrace >/dev/null
left=$(cd "$D" && find . -type f | paste -sd' ')
[[ -z $left ]] || fail "after uninstall from /opt/amptrace: $left"
ok "edited defaults kept; uninstall leaves no other file (PREFIX /usr/local and /opt/amptrace)"

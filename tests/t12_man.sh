#!/usr/bin/env bash
# The man pages (scripts/man/*.8), the reference once installed:
#  1. groff -ww and man --warnings render each without a warning;
#  2. each command's page lists exactly the options of its --help (every
#     option of --help is in the page's OPTIONS, and every option the page
#     lists there is in --help), and every command of `amptrace help` has
#     a page;
#  3. amptrace-trace(8) names every JSON key report.c and by_sender.c
#     write, every metric
#     family and every loss counter metrics.c exports.
# Needs no root: nothing is traced.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v groff >/dev/null || skip "groff not installed (Debian package groff-base)"
command -v man >/dev/null || skip "man not installed (Debian package man-db)"
man=$AMP_ROOT/scripts/man

for page in "$man"/*.8; do
    groff -ww -z -man "$page" 2>"$AMP_TMP/groff.err"
    [[ ! -s $AMP_TMP/groff.err ]] || fail "groff -ww $page: $(cat "$AMP_TMP/groff.err")"
    MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" >/dev/null 2>"$AMP_TMP/man.err"
    [[ ! -s $AMP_TMP/man.err ]] || fail "man --warnings $page: $(cat "$AMP_TMP/man.err")"
done
ok "$(ls "$man"/*.8 | wc -l) pages render without warnings (groff -ww, man --warnings)"

# Options of a --help text: -x and --long, from the option lines only.
help_opts() {
    grep -E '^ {1,6}-' | grep -oE '(^|[ ,])--?[a-zA-Z?][a-zA-Z0-9-]*' | tr -d ' ,' | sort -u
}
# Options a page lists in OPTIONS: the tags (the line after each .TP).
page_opts() {
    awk '/^\.SH /{in_opts = ($0 ~ /^\.SH OPTIONS/)} in_opts && tag {print; tag=0} /^\.TP/{tag=1}' "$1" |
        sed 's/\\-/-/g; s/\\f[BIR]//g' | grep -oE '(^|[ ,"])--?[a-zA-Z?][a-zA-Z0-9-]*' |
        tr -d ' ,"' | sort -u
}
# A page's option tags may sit in a shared block (the tracing options).
cmds=$("$AMPTRACE" help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
for cmd in $cmds; do
    [[ $cmd == help || $cmd == version ]] && continue
    page=$man/amptrace-$cmd.8
    [[ -f $page ]] || fail "no man page for amptrace $cmd"
    "$AMPTRACE" "$cmd" --help | help_opts >"$AMP_TMP/help.$cmd"
    # argp's own -?, --help and --usage work without being listed.
    if [[ $cmd != compare ]] && "$AMPTRACE" "$cmd" --usage >/dev/null && "$AMPTRACE" "$cmd" -'?' >/dev/null; then
        printf '%s\n' -? --help --usage >>"$AMP_TMP/help.$cmd"
        sort -u -o "$AMP_TMP/help.$cmd" "$AMP_TMP/help.$cmd"
    fi
    page_opts "$page" >"$AMP_TMP/page.$cmd"
    [[ -s $AMP_TMP/help.$cmd ]] || fail "no options parsed from amptrace $cmd --help"
    missing=$(comm -23 "$AMP_TMP/help.$cmd" "$AMP_TMP/page.$cmd" | paste -sd' ')
    extra=$(comm -13 "$AMP_TMP/help.$cmd" "$AMP_TMP/page.$cmd" | paste -sd' ')
    [[ -z $missing ]] || fail "amptrace-$cmd(8) lacks options of --help: $missing"
    [[ -z $extra ]] || fail "amptrace-$cmd(8) lists options --help does not have: $extra"
    ok "amptrace-$cmd(8): the $(wc -l <"$AMP_TMP/help.$cmd") options of --help, no others"
done
grep -q 'amptrace\\-trace (8)' "$man/amptrace.8" || fail "amptrace(8) does not point to amptrace-trace(8)"

# The reference must name what the code writes: words of the rendered page.
MANWIDTH=200 man -l "$man/amptrace-trace.8" 2>/dev/null | tr -c 'a-z_A-Z0-9' '\n' | sort -u >"$AMP_TMP/words"
has() { grep -qx "$1" "$AMP_TMP/words"; }
keys=$(cat "$AMP_ROOT/user/sink/report.c" "$AMP_ROOT/user/sink/by_sender.c" |
       grep -o 'json_object_object_add([a-z_]*, "[a-z_]*"' | sed 's/.*"\(.*\)"/\1/' | sort -u)
for k in $keys; do has "$k" || fail "amptrace-trace(8) does not name the JSON key $k"; done
ok "amptrace-trace(8) names all $(wc -w <<<"$keys") JSON keys of report.c and by_sender.c"
fams=$(grep -oE '"amptrace_[a-z_]+' "$AMP_ROOT/user/sink/metrics.c" | tr -d '"' | sed 's/_total$//' | sort -u)
for f in $fams; do has "${f}_total" || fail "amptrace-trace(8) does not name the metric ${f}_total"; done
losses=$(sed -n '/loss_names\[\] = {/,/};/p' "$AMP_ROOT/user/sink/metrics.c" | grep -oE '"[a-z_0-9]+"' | tr -d '"')
losses+=" entries_timed_out late_records"
for l in $losses; do has "$l" || fail "amptrace-trace(8) does not name the loss counter $l"; done
ok "amptrace-trace(8) names the $(wc -w <<<"$fams") metric families and $(wc -w <<<"$losses") loss counters"

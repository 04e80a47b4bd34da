# shellcheck shell=bash
# tests/compat/cases.sh: what t16_compat.sh compares with the golden files,
# one case a line: NAME, then amptrace's arguments.  Run in a folder that
# holds the inputs (rec.amp, rec-cut.amp, trace.json, system.journal);
# out.* files a case writes are part of its output.
COMPAT_CASES=(
    "report_table        report rec.amp"
    "report_json         report -j rec.amp"
    "report_quiet        report -q rec.amp"
    "report_quiet_json   report -q -j rec.amp"
    "report_info         report --info rec.amp"
    "report_svg          report rec.amp --svg out.svg --html out.html"
    "report_cut          report rec-cut.amp"
    "report_cut_json     report -j rec-cut.amp"
    "report_cut_info     report --info rec-cut.amp"
    "report_journal      report rec.amp --journal system.journal"
    "report_journal_json report -j rec.amp --journal system.journal"
    "explain_trace       explain -t trace.json system.journal"
    "explain_trace_json  explain -j -t trace.json system.journal"
    "explain_trace_all   explain -j --all-objects --show-values -t trace.json system.journal"
    "explain_trace_id    explain --id 3 --id 5 --window 0.5 -t trace.json system.journal"
    "explain_header      explain --header system.journal"
    "explain_header_json explain --header -j system.journal"
    "explain_objects     explain --objects system.journal"
    "explain_objects_json explain --objects -j --show-values system.journal"
    "explain_entries     explain --entries system.journal"
    "explain_export      explain --entries --show-values system.journal"
    "explain_entries_json explain --entries -j system.journal"
    "explain_range       explain --range 0-0x3000 system.journal"
    "explain_check       explain --check system.journal"
    "explain_check_json  explain --check -j system.journal"
    "help                help"
    "help_trace          trace --help"
    "help_record         record --help"
    "help_top            top --usage"
    "help_report         report --help"
    "help_explain        explain --help"
    "bad_report_none     report no-such.amp"
    "bad_report_notrec   report trace.json"
    "bad_explain_trace   explain -t system.journal system.journal"
    "bad_explain_nothing explain system.journal"
)

# compat_run AMPTRACE NAME ARGS...: one case's exit status, stdout, stderr
# and out.* files, on stdout.
compat_run() {
    local amp=$1 rc=0 f; shift 2
    rm -f out.*
    # shellcheck disable=SC2068  # the arguments are words
    "$amp" $@ >stdout 2>stderr </dev/null || rc=$?
    echo "exit $rc"
    echo "--- stdout"
    cat stdout
    echo "--- stderr"
    cat stderr
    for f in out.*; do
        [[ -e $f ]] || continue
        echo "--- $f"
        cat "$f"
    done
    rm -f stdout stderr out.*
}

# compat_inputs GOLDEN DIR: the inputs, ready in DIR.
compat_inputs() {
    local size
    cp "$1/rec.amp" "$1/trace.json" "$2/"
    gzip -dc "$1/system.journal.gz" >"$2/system.journal"
    # A recorder killed mid-run: the record cut in the middle of a record.
    size=$(stat -c %s "$2/rec.amp")
    head -c $((size * 3 / 5)) "$2/rec.amp" >"$2/rec-cut.amp"
}

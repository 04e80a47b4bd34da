#!/usr/bin/env bash
# Print the bpftrace program that `make bench` runs side by side with
# amptrace: the same tracepoints (the preset's own syscall tracepoints,
# thread exit, dirty folio, bio queue, request completion, jbd2 handle and
# commit), the same filters (comm), and comparable per-thread, per-entry
# and per-page maps, sized like amptrace's defaults (run it with
# BPFTRACE_MAP_KEYS_MAX=262144).  What it cannot do is what makes
# amptrace's programs longer: check the fd's type, walk a request's bios
# page by page, or hand finished entries to user space.
#
#   scripts/bench/bpftrace-equivalent.sh write|journald COMM [floor] > prog.bt
#   BPFTRACE_MAP_KEYS_MAX=262144 bpftrace prog.bt
#
# floor: empty programs on the busiest of those tracepoints instead, what
# attaching anything there costs before it does any work.
set -euo pipefail
preset=${1:?usage: $0 write|journald COMM [floor]} comm=${2:?usage: $0 write|journald COMM [floor]}
floor=${3:-}
# The syscall tracepoints amptrace attaches for the preset: a write opens
# its entry at enter; recvmsg and recvfrom are handled at exit alone.
case $preset in
    write)    enter=(write writev pwrite64 pwritev pwritev2); exits=("${enter[@]}") ;;
    journald) enter=(recvmmsg read readv); exits=(recvmsg recvfrom recvmmsg read readv) ;;
    *) echo "$0: preset must be write or journald" >&2; exit 2 ;;
esac
probes() {   # enter|exit NAME...: a bpftrace probe list
    local kind=$1 IFS=,
    shift
    local list=("${@/#/tracepoint:syscalls:sys_${kind}_}")
    echo "${list[*]}"
}

if [[ $floor == floor ]]; then
    printf '%s { }\n' "$(probes enter "${enter[@]}")" "$(probes exit "${exits[@]}")" \
        tracepoint:writeback:writeback_dirty_folio tracepoint:block:block_rq_complete
    exit 0
fi

# write: the entry opens at syscall entry (the write dirties pages);
# journald: at exit, once the receive returned data.
if [[ $preset == write ]]; then
    open_enter='@seq = @seq + 1; @entry[tid] = @seq;'
    exit_filter='@pending[tid]'
    open_exit='if (args->ret > 0) { @bytes[@entry[tid]] = args->ret; }'
else
    open_enter=''
    exit_filter="comm == \"$comm\""
    open_exit='if (args->ret > 0) { @seq = @seq + 1; @entry[tid] = @seq; @bytes[@seq] = args->ret; }'
fi

cat <<BT
BEGIN { printf("attached\n"); }

$(probes enter "${enter[@]}")
/comm == "$comm"/
{
	@pending[tid] = nsecs;
	$open_enter
}

$(probes exit "${exits[@]}")
/$exit_filter/
{
	$open_exit
	delete(@pending[tid]);
}

tracepoint:sched:sched_process_exit
/@entry[tid]/
{
	delete(@entry[tid]);
}

tracepoint:writeback:writeback_dirty_folio
/@entry[tid]/
{
	@owner[args->ino, args->index] = @entry[tid];
	@pages[@entry[tid]] = count();
}

tracepoint:jbd2:jbd2_handle_start
/@entry[tid]/
{
	@txn_entries[args->dev, args->tid] = count();
}

tracepoint:jbd2:jbd2_start_commit
{
	@committing[args->dev] = args->transaction;
}

tracepoint:jbd2:jbd2_end_commit
{
	delete(@committing[args->dev]);
	delete(@txn_entries[args->dev, args->transaction]);
}

tracepoint:block:block_bio_queue
/strncmp(comm, "jbd2/", 5) == 0/
{
	@jbd2_bios[args->dev, args->sector] = 1;
}

tracepoint:block:block_rq_complete
/args->nr_sector > 0/
{
	@dev_bytes[args->dev] = sum(args->nr_sector * 512);
	@ios[args->dev] = count();
	delete(@jbd2_bios[args->dev, args->sector]);
}

END
{
	clear(@pending); clear(@entry); clear(@bytes); clear(@owner); clear(@pages);
	 clear(@txn_entries); clear(@committing); clear(@jbd2_bios);
	clear(@seq);
}
BT

#!/usr/bin/env bash
# Print the bpftrace program that `make bench` runs side by side with
# amptrace: the same tracepoints (syscall enter/exit, thread exit, dirty
# folio, user page fault, bio queue, request completion, jbd2 handle and
# commit), the same filters (comm, the preset's syscalls), and comparable
# per-thread, per-entry and per-page maps, sized like amptrace's defaults
# (run it with BPFTRACE_MAP_KEYS_MAX=262144).  What it cannot do is what
# makes amptrace's programs longer: check the fd's type, walk a request's
# bios page by page, or hand finished entries to user space.
#
#   scripts/bench/bpftrace-equivalent.sh write|journald COMM > prog.bt
#   BPFTRACE_MAP_KEYS_MAX=262144 bpftrace prog.bt
set -euo pipefail
preset=${1:?usage: $0 write|journald COMM} comm=${2:?usage: $0 write|journald COMM}
case $preset in
    write)    names=(write writev pwrite64 pwritev pwritev2) ;;
    journald) names=(recvmsg recvfrom recvmmsg read readv) ;;
    *) echo "$0: preset must be write or journald" >&2; exit 2 ;;
esac
# Syscall numbers from this host's headers, as amptrace takes them.
mapfile -t nrs < <(printf '#include <sys/syscall.h>\n%s\n' "${names[@]/#/SYS_}" |
                   cpp -P - | grep -E '^[0-9]+$')
((${#nrs[@]} == ${#names[@]})) || { echo "$0: cannot resolve syscall numbers" >&2; exit 1; }
filter=$(printf 'args->id == %s || ' "${nrs[@]}")
filter=${filter% || }

# write: the entry opens at syscall entry (the write dirties pages);
# journald: at exit, once the receive returned data.
if [[ $preset == write ]]; then
    open_enter='@seq = @seq + 1; @entry[tid] = @seq;'
    open_exit='if (args->ret > 0) { @bytes[@entry[tid]] = args->ret; }'
else
    open_enter=''
    open_exit='if (args->ret > 0) { @seq = @seq + 1; @entry[tid] = @seq; @bytes[@seq] = args->ret; }'
fi

cat <<BT
BEGIN { printf("attached\n"); }

tracepoint:raw_syscalls:sys_enter
/comm == "$comm" && ($filter)/
{
	@pending[tid] = nsecs;
	$open_enter
}

tracepoint:raw_syscalls:sys_exit
/@pending[tid]/
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

tracepoint:exceptions:page_fault_user
/(args->error_code & 2) && @entry[tid]/
{
	@faults[@entry[tid]] = count();
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
	clear(@faults); clear(@txn_entries); clear(@committing); clear(@jbd2_bios);
	clear(@seq);
}
BT

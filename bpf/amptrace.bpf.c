// SPDX-License-Identifier: GPL-2.0
/*
 * amptrace kernel side: one object, one stage of the causal chain per
 * header, in the order the data flows:
 *   syscall (entry) -> dirty folio (page) -> request completion (bytes),
 *   and entry -> jbd2 handle -> transaction -> commit blocks (fs journal),
 *   entry -> btrfs handle -> transaction -> tree blocks (btrfs).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "amptrace.h"
#include "maps.bpf.h"
#include "compat.bpf.h"
#include "target.bpf.h"
#include "files.bpf.h"
#include "entry.bpf.h"
#include "folios.bpf.h"
#include "sender.bpf.h"
#include "relay.bpf.h"
#include "journal_reader.bpf.h"
#include "syscall.bpf.h"
#include "txnpages.bpf.h"
#include "fsjournal.bpf.h"
#include "nojournal.bpf.h"
#include "btrfs.bpf.h"
#include "xfslog.bpf.h"
#include "dirty.bpf.h"
#include "dropped.bpf.h"
#include "stack.bpf.h"
#include "block.bpf.h"

char LICENSE[] SEC("license") = "GPL";

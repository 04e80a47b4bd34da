// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace trace`: open -> configure -> load -> attach -> poll -> drain.
 * Userspace only renders finished entries and sums maps at the end; the
 * kernel side does all per-event work.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "loader.h"
#include "amptrace.skel.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL);	/* a second Ctrl-C kills at once */
}

static bool verbose;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (!verbose)
		return 0;	/* errors are reported as one line by us */
	return vfprintf(stderr, fmt, ap);
}

struct tracer {
	const struct trace_opts *opts;
	struct amptrace *skel;
	struct ring_buffer *rb;
	struct report *report;
	struct ledger *ledger;
	FILE *out;
	void *timed_out;	/* tsearch set of ids reported by the sweep */
	__u64 entries_timed_out, late_records;
	/* device counters at start, for every disk in /sys/block */
	struct baseline {
		char name[AMP_DISK_NAME_LEN];
		__u32 kdev;
		struct disk_counter c;
		struct amp_dev_stats st;
	} *base;
	int nr_base;
};

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* A finished entry, to every consumer of this run. */
static void deliver_entry(void *ctx, const struct amp_entry *e, const struct entry_costs *c)
{
	struct tracer *t = ctx;

	report_entry(t->report, e, c);
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct amp_entry *e = data;

	if (len == sizeof(struct amp_txn_rec) && *(__u32 *)data == AMP_REC_TXN) {
		ledger_txn(t->ledger, data);
		return 0;
	}
	if (len < sizeof(*e) || e->type != AMP_REC_ENTRY)
		return 0;
	/* Already reported by the settle-timeout sweep: count, don't repeat. */
	if (t->timed_out && tfind(&e->id, &t->timed_out, cmp_u64)) {
		t->late_records++;
		return 0;
	}
	ledger_entry(t->ledger, e);
	return 0;
}

static bool tracepoint_in_btf(const char *tp)
{
	struct btf *btf = btf__load_vmlinux_btf();
	char name[128];
	bool found;

	if (!btf)
		return false;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	found = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return found;
}

/* A kernel text symbol's address, 0 if absent or hidden (kptr_restrict). */
static __u64 kallsyms_lookup(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char sym[256], type;
	unsigned long long addr;
	__u64 found = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, name)) {
			found = addr;
			break;
		}
	fclose(f);
	return found;
}

static int configure(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	struct amptrace *skel = t->skel;
	unsigned major, minor;

	skel->rodata->self_tgid = getpid();
	skel->rodata->page_size = sysconf(_SC_PAGESIZE);
	skel->rodata->filter_pid = o->nr_pids > 0;
	skel->rodata->filter_cgroup = o->cgroup != NULL;
	if (o->comm) {
		skel->rodata->filter_comm = true;
		strncpy((char *)skel->rodata->target_comm, o->comm, AMP_COMM_LEN - 1);
	}
	if (o->dev) {
		if (disk_lookup(o->dev, &major, &minor)) {
			amp_err("cannot read /sys/block/%s/dev", o->dev);
			return -1;
		}
		skel->rodata->filter_dev = true;
		skel->rodata->target_disk_major = major;
		skel->rodata->target_disk_minor = minor;
	}
	bpf_map__set_max_entries(skel->maps.entries, o->max_entries);
	bpf_map__set_max_entries(skel->maps.page_owners, o->max_pages);
	bpf_map__set_max_entries(skel->maps.threads, o->max_threads);
	bpf_map__set_max_entries(skel->maps.pending, o->max_threads);
	bpf_map__set_max_entries(skel->maps.files, o->max_files);
	bpf_map__set_max_entries(skel->maps.events, o->ringbuf_kb * 1024);

	/* xfs log writes are recognised by their completion function. */
	skel->rodata->xfs_log_end_io = kallsyms_lookup("xlog_bio_end_io");
	if (o->verbose && !skel->rodata->xfs_log_end_io)
		fprintf(stderr, "amptrace: xlog_bio_end_io not in kallsyms: xfs log counted as metadata\n");

	/* Write faults are an x86 tracepoint: load it only where it exists. */
	if (!tracepoint_in_btf("page_fault_user")) {
		bpf_program__set_autoload(skel->progs.on_page_fault_user, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no page_fault_user tracepoint: write faults not counted\n");
	}
	return 0;
}

static int exclude_file(struct tracer *t, int fd)
{
	struct amp_file_key key = {};
	struct stat st;
	__u8 one = 1;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	key.dev = kdev_from_user(st.st_dev);
	key.ino = st.st_ino;
	return bpf_map__update_elem(t->skel->maps.excluded_files, &key, sizeof(key),
				    &one, sizeof(one), BPF_ANY);
}

static int fill_maps(struct tracer *t, const struct preset_syscall *sys, int nr_sys)
{
	const struct trace_opts *o = t->opts;
	struct amptrace *skel = t->skel;
	__u8 one = 1;
	int err;

	for (int i = 0; i < nr_sys; i++) {
		__u32 key = sys[i].nr;
		__u8 kind = sys[i].kind;

		if (key >= AMP_MAX_SYSCALLS)
			continue;
		err = bpf_map__update_elem(skel->maps.syscall_kinds, &key, sizeof(key),
					   &kind, sizeof(kind), BPF_ANY);
		if (err)
			return err;
	}
	for (int i = 0; i < o->nr_pids; i++) {
		__u32 pid = o->pids[i];

		err = bpf_map__update_elem(skel->maps.target_pids, &pid, sizeof(pid),
					   &one, sizeof(one), BPF_ANY);
		if (err)
			return err;
	}
	if (o->cgroup) {
		int fd = open(o->cgroup, O_RDONLY | O_DIRECTORY);
		__u32 zero = 0;

		if (fd < 0) {
			amp_err("cannot open cgroup %s: %s", o->cgroup, strerror(errno));
			return -1;
		}
		err = bpf_map__update_elem(skel->maps.target_cgroup, &zero, sizeof(zero),
					   &fd, sizeof(fd), BPF_ANY);
		close(fd);
		if (err) {
			amp_err("%s is not a cgroup v2 directory", o->cgroup);
			return -1;
		}
	}
	/* Our own output is never charged to the traced entries. */
	return exclude_file(t, fileno(t->out));
}

static int snapshot_devs(struct tracer *t, __u32 kdev, struct amp_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	return bpf_map__lookup_elem(t->skel->maps.devs, &kdev, sizeof(kdev), st, sizeof(*st), 0);
}

/* Device counters and BPF class counters, read at the same moment. */
static int take_baseline(struct tracer *t)
{
	FILE *f = popen("ls /sys/block", "r");
	char name[AMP_DISK_NAME_LEN];
	unsigned major, minor;

	if (!f)
		return -1;
	while (fscanf(f, "%31s", name) == 1) {
		struct baseline *b;

		if (t->opts->dev && strcmp(name, t->opts->dev))
			continue;
		if (disk_lookup(name, &major, &minor))
			continue;
		b = realloc(t->base, (t->nr_base + 1) * sizeof(*b));
		if (!b)
			break;
		t->base = b;
		b = &t->base[t->nr_base];
		memset(b, 0, sizeof(*b));
		memcpy(b->name, name, sizeof(b->name));
		b->kdev = (major << 20) | minor;
		if (disk_read_counter(name, &b->c))
			continue;
		snapshot_devs(t, b->kdev, &b->st);
		t->nr_base++;
	}
	pclose(f);
	return 0;
}

static void sum_losses(struct tracer *t, struct amp_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct amp_stats *per = calloc(ncpu > 0 ? ncpu : 1, sizeof(*per));
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (!per || ncpu <= 0)
		goto out;
	if (bpf_map__lookup_elem(t->skel->maps.stats, &zero, sizeof(zero), per,
				 ncpu * sizeof(*per), 0))
		goto out;
	for (int c = 0; c < ncpu; c++) {
		__u64 *src = (__u64 *)&per[c], *dst = (__u64 *)out;

		for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
out:
	free(per);
}

/* Entries closed long ago whose pages never reached a device. */
static void sweep_stale(struct tracer *t, bool all)
{
	int fd = bpf_map__fd(t->skel->maps.entries);
	struct timespec now;
	__u64 key, next, now_ns, *ids = NULL;
	size_t n = 0, cap = 0;
	struct amp_entry e;
	void *prev = NULL;

	clock_gettime(CLOCK_BOOTTIME, &now);
	now_ns = now.tv_sec * 1000000000ULL + now.tv_nsec;
	/* Collect first: deleting while iterating restarts the walk. */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &e))
			continue;
		if (!all && (!(e.flags & AMP_ENTRY_CLOSED) ||
			     now_ns - e.end_ns < t->opts->settle_timeout * 1000000000ULL))
			continue;
		if (n == cap) {
			__u64 *p = realloc(ids, (cap = cap ? cap * 2 : 64) * sizeof(*ids));

			if (!p)
				break;
			ids = p;
		}
		ids[n++] = key;
	}
	qsort(ids, n, sizeof(*ids), cmp_u64);	/* report in id order */
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_lookup_and_delete_elem(fd, &ids[i], &e))
			continue;
		e.flags |= AMP_ENTRY_DRAINED;
		ledger_entry(t->ledger, &e);
		if (!all) {
			__u64 *id = malloc(sizeof(*id));

			if (id) {
				*id = e.id;
				tsearch(id, &t->timed_out, cmp_u64);
			}
			t->entries_timed_out++;
		}
	}
	free(ids);
}

static void files_summary(struct tracer *t, struct summary *s)
{
	int fd = bpf_map__fd(t->skel->maps.files);
	struct amp_file_key key, *prev = NULL;
	struct summary_file *f;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		f = realloc(s->files, (s->nr_files + 1) * sizeof(*f));
		if (!f)
			break;
		s->files = f;
		f = &s->files[s->nr_files];
		f->key = key;
		if (!bpf_map_lookup_elem(fd, &key, &f->st))
			s->nr_files++;
		prev = &f->key;
	}
}

static void devs_summary(struct tracer *t, struct summary *s)
{
	int fd = bpf_map__fd(t->skel->maps.devs);
	__u32 key, *prev = NULL;

	/* Every disk we saw bytes for, and every disk whose counter moved. */
	for (int i = 0; i < t->nr_base; i++) {
		struct baseline *b = &t->base[i];
		struct summary_dev d = { .kdev = b->kdev };
		struct disk_counter now;

		memcpy(d.name, b->name, sizeof(d.name));
		snapshot_devs(t, b->kdev, &d.st);
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			d.st.bytes[k] -= b->st.bytes[k];
		d.st.charged_bytes -= b->st.charged_bytes;
		d.st.late_bytes -= b->st.late_bytes;
		d.st.ios -= b->st.ios;
		d.st.unwalked_bytes -= b->st.unwalked_bytes;
		d.st.meta_owned -= b->st.meta_owned;
		d.st.journal_txn -= b->st.journal_txn;
		if (!disk_read_counter(b->name, &now)) {
			d.have_counter = true;
			d.delta.sectors_written = now.sectors_written - b->c.sectors_written;
			d.delta.write_ios = now.write_ios - b->c.write_ios;
		}
		if (!d.st.ios && !d.delta.sectors_written && !(t->opts->dev))
			continue;
		struct summary_dev *p = realloc(s->devs, (s->nr_devs + 1) * sizeof(*p));
		if (!p)
			return;
		s->devs = p;
		s->devs[s->nr_devs++] = d;
	}
	/* Disks that appeared during the run: no counter baseline. */
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		bool known = false;

		for (int i = 0; i < t->nr_base; i++)
			known |= t->base[i].kdev == key;
		if (!known) {
			struct summary_dev *p = realloc(s->devs, (s->nr_devs + 1) * sizeof(*p));

			if (!p)
				return;
			s->devs = p;
			memset(&p[s->nr_devs], 0, sizeof(*p));
			p[s->nr_devs].kdev = key;
			if (!bpf_map_lookup_elem(fd, &key, &p[s->nr_devs].st)) {
				memcpy(p[s->nr_devs].name, p[s->nr_devs].st.name, AMP_DISK_NAME_LEN);
				s->nr_devs++;
			}
		}
		prev = &key;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int trace_run(const struct trace_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = o->btf_path);
	const struct preset_syscall *sys;
	struct tracer t = { .opts = o, .out = stdout };
	struct summary s = {};
	double start, last_sweep;
	int nr_sys, err = -1;

	verbose = o->verbose;
	libbpf_set_print(libbpf_log);
	if (preflight_check(o->btf_path))
		return -1;
	if (preset_resolve(o->preset, o, &sys, &nr_sys))
		return -1;
	if (o->output) {
		t.out = fopen(o->output, "w");
		if (!t.out) {
			amp_err("cannot write %s: %s", o->output, strerror(errno));
			return -1;
		}
	}
	setvbuf(t.out, NULL, _IOLBF, 0);
	t.report = report_new(t.out, o->json, o->quiet);
	if (!t.report)
		goto cleanup;

	t.skel = amptrace__open_opts(&open_opts);
	if (!t.skel) {
		amp_err("cannot open the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	if (configure(&t))
		goto cleanup;
	err = amptrace__load(t.skel);
	if (err) {
		amp_err("cannot load BPF programs (%s); rerun with -v for the verifier log",
			strerror(-err));
		goto cleanup;
	}
	err = fill_maps(&t, sys, nr_sys);
	if (err) {
		if (err != -1)
			amp_err("cannot fill BPF maps: %s", strerror(-err));
		goto cleanup;
	}
	err = amptrace__attach(t.skel);
	if (err) {
		amp_err("cannot attach to tracepoints (%s); rerun with -v", strerror(-err));
		goto cleanup;
	}
	t.ledger = ledger_new(deliver_entry, &t, bpf_map__fd(t.skel->maps.devs));
	if (!t.ledger)
		goto cleanup;
	t.rb = ring_buffer__new(bpf_map__fd(t.skel->maps.events), on_record, &t, NULL);
	if (!t.rb) {
		err = -errno;
		amp_err("cannot create the ring buffer reader: %s", strerror(errno));
		goto cleanup;
	}
	take_baseline(&t);
	paths_use_files_map(bpf_map__fd(t.skel->maps.files));

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* a closed terminal stops us cleanly too */
	fprintf(stderr, "amptrace: tracing (%s preset, %d syscalls); Ctrl-C to stop\n",
		o->preset, nr_sys);

	start = last_sweep = now_s();
	while (!stop_requested) {
		err = ring_buffer__poll(t.rb, 100);
		if (err < 0 && err != -EINTR) {
			amp_err("ring buffer poll failed: %s", strerror(-err));
			break;
		}
		if (o->duration && now_s() - start >= o->duration)
			break;
		if (now_s() - last_sweep >= 0.5) {
			sweep_stale(&t, false);
			ledger_tick(t.ledger, false);
			last_sweep = now_s();
		}
	}
	err = 0;

	/* Detach and read both counters at once, then settle what is left. */
	s.duration_s = now_s() - start;
	amptrace__detach(t.skel);
	devs_summary(&t, &s);
	ring_buffer__consume(t.rb);
	sweep_stale(&t, true);
	ledger_flush(t.ledger, bpf_map__fd(t.skel->maps.txns));
	for (int i = 0; i < s.nr_devs; i++)
		if (ledger_disk(t.ledger, s.devs[i].kdev))
			s.devs[i].ledger = *ledger_disk(t.ledger, s.devs[i].kdev);
	files_summary(&t, &s);
	sum_losses(&t, &s.losses);
	s.entries_timed_out = t.entries_timed_out;
	s.late_records = t.late_records;
	report_summary(t.report, &s);

cleanup:
	ring_buffer__free(t.rb);
	amptrace__destroy(t.skel);
	ledger_free(t.ledger);
	report_free(t.report);
	tdestroy(t.timed_out, free);
	free(t.base);
	free(s.devs);
	free(s.files);
	if (t.out && t.out != stdout)
		fclose(t.out);
	return err;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * A running trace's totals: per device the kernel's class counters and the
 * device's own counter (/sys/block/DISK/stat), both as differences from a
 * baseline read together at the start; per file the kernel's files map;
 * the loss counters summed over CPUs.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "sys/blockdev.h"
#include "sys/devstat.h"
#include "trace/summarize.h"

struct baseline {
	char name[AMP_DISK_NAME_LEN];
	__u32 kdev;
	enum dev_layer layer;
	__u32 disk;
	struct disk_counter c;
	struct amp_dev_stats st;
	/* Its counter as last read, and whether the device went away (its
	 * name gone, or now another device's: dm and loop reuse names and
	 * numbers, so its diskseq where there is one, and a counter never
	 * goes back). */
	struct disk_counter last;
	__u64 seq;
	bool gone;
	struct amp_dev_stats gone_st;	/* its kernel row when it went */
};

struct summarizer {
	int devs_fd, files_fd, stats_fd;
	const struct bpf_object *obj;	/* its programs' recursion misses */
	const __u64 *next_entry_id;
	const struct blockdev_stack *only;	/* --dev's stack, or NULL: every device */
	struct baseline *base;
	size_t nr_base, cap_base;
};

/* The device's counter now, if its name is still that device's. */
static int read_same(const struct baseline *b, struct disk_counter *c)
{
	unsigned major, minor;

	if (disk_lookup(b->name, &major, &minor) || ((major << 20) | minor) != b->kdev ||
	    (b->seq && disk_read_seq(b->name) != b->seq) || disk_read_counter(b->name, c))
		return -1;
	return c->sectors_written < b->last.sectors_written ||
	       c->write_ios < b->last.write_ios ? -1 : 0;
}

static int snapshot_dev(struct summarizer *z, __u32 kdev, struct amp_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	return bpf_map_lookup_elem(z->devs_fd, &kdev, st);
}

/* b's counter now, or (gone) as last read; its kernel row is kept as it
 * was when it went (its number may be another device's by now). */
static const struct disk_counter *counter_of(struct summarizer *z, struct baseline *b)
{
	struct disk_counter now;

	if (b->gone)
		return &b->last;
	if (!read_same(b, &now)) {
		b->last = now;
	} else {
		b->gone = true;
		snapshot_dev(z, b->kdev, &b->gone_st);
	}
	return &b->last;
}

/* /sys/class/block's entries, not dot files, in name order (as `ls` lists
 * them): disks, partitions, dm and md devices. */
static int disk_name(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* What the device is, from sysfs (the device is there now). */
static enum dev_layer layer_of(const char *name, __u32 kdev, __u32 *disk)
{
	const char *bio = blockdev_bio_layer(name);

	*disk = blockdev_partition_disk(kdev);
	if (*disk)
		return DEV_PARTITION;
	if (bio)
		return !strcmp(bio, "dm") ? DEV_DM : DEV_MD;
	return DEV_DISK;
}

struct summarizer *summarizer_new(int devs_fd, int files_fd, int stats_fd,
				  const __u64 *next_entry_id, const struct blockdev_stack *only)
{
	struct summarizer *z = calloc(1, sizeof(*z));
	struct dirent **names = NULL;
	unsigned major, minor;
	int n;

	if (!z)
		return NULL;
	z->devs_fd = devs_fd;
	z->files_fd = files_fd;
	z->stats_fd = stats_fd;
	z->next_entry_id = next_entry_id;
	z->only = only;
	n = scandir("/sys/class/block", &names, disk_name, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct baseline *b;

		if (strlen(name) >= AMP_DISK_NAME_LEN || disk_lookup(name, &major, &minor) ||
		    (only && !blockdev_in_stack(only, (major << 20) | minor)) ||
		    amp_grow(&z->base, &z->cap_base, z->nr_base + 1, sizeof(*b)))
			continue;
		b = &z->base[z->nr_base];
		memset(b, 0, sizeof(*b));
		memcpy(b->name, name, strlen(name) + 1);	/* shorter than the field: checked */
		b->kdev = (major << 20) | minor;
		b->layer = layer_of(name, b->kdev, &b->disk);
		if (disk_read_counter(name, &b->c))
			continue;
		b->last = b->c;
		b->seq = disk_read_seq(name);
		snapshot_dev(z, b->kdev, &b->st);
		z->nr_base++;
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return z;
}

const char *summarizer_watch(struct summarizer *z)
{
	for (size_t i = 0; i < z->nr_base; i++) {
		struct baseline *b = &z->base[i];

		if (b->gone)
			continue;
		counter_of(z, b);
		if (b->gone)
			return b->name;
	}
	return NULL;
}

void summarizer_free(struct summarizer *z)
{
	if (!z)
		return;
	free(z->base);
	free(z);
}

static struct summary_dev *add_dev(struct summary *s, size_t *cap)
{
	if (amp_grow(&s->devs, cap, s->nr_devs + 1, sizeof(*s->devs)))
		return NULL;
	return &s->devs[s->nr_devs++];
}

/*
 * A dm device counts a write it failed only if it had begun it (6.3 on):
 * what a target failed in its map (dm-flakey), not what it killed there
 * (dm's error target, the table `dmsetup remove --force` puts in); the
 * bio's end looks the same.  Of the failed bytes the programs saw, the
 * class keeps what the counter has beyond the bytes stored; the rest is
 * said apart, as failed uncounted.  A disk's requests are always counted.
 * Only at the end: a checkpoint's counter may not have counted writes in
 * flight yet, and the class must not go down between checkpoints.
 */
static void failed_counted(struct summary_dev *d)
{
	__u64 failed = d->st.bytes[AMP_CLASS_FAILED], stored = 0, counted, beyond;

	if (d->layer != DEV_DM || !failed)
		return;
	for (int k = 0; k < AMP_NR_CLASSES; k++)
		if (k != AMP_CLASS_FAILED)
			stored += d->st.bytes[k];
	counted = d->delta.sectors_written * 512;
	beyond = counted > stored ? counted - stored : 0;
	if (beyond >= failed)
		return;
	d->failed_uncounted = failed - beyond;
	d->st.bytes[AMP_CLASS_FAILED] = beyond;
}

void summary_failed_counted(struct summary *s)
{
	for (int i = 0; i < s->nr_devs; i++)
		failed_counted(&s->devs[i]);
}

void summarize_devs(struct summarizer *z, struct summary *s)
{
	size_t cap = s->nr_devs;
	__u32 key, *prev = NULL;

	/* Every disk we saw bytes for, and every disk whose counter moved. */
	for (size_t i = 0; i < z->nr_base; i++) {
		struct baseline *b = &z->base[i];
		struct summary_dev d = { .kdev = b->kdev, .layer = b->layer, .disk = b->disk }, *p;
		const struct disk_counter *now = counter_of(z, b);

		memcpy(d.name, b->name, sizeof(d.name));
		if (b->gone)
			d.st = b->gone_st;
		else
			snapshot_dev(z, b->kdev, &d.st);
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			d.st.bytes[k] -= b->st.bytes[k];
		d.st.charged_bytes -= b->st.charged_bytes;
		d.st.late_bytes -= b->st.late_bytes;
		d.st.ios -= b->st.ios;
		d.st.unwalked_bytes -= b->st.unwalked_bytes;
		d.st.meta_owned -= b->st.meta_owned;
		d.st.journal_txn -= b->st.journal_txn;
		d.st.meta_untraced -= b->st.meta_untraced;
		for (int k = 0; k < AMP_BTRFS_TREES; k++)
			d.st.btrfs_tree[k] -= b->st.btrfs_tree[k];
		d.have_counter = true;
		d.gone = b->gone;
		d.delta.sectors_written = now->sectors_written - b->c.sectors_written;
		d.delta.write_ios = now->write_ios - b->c.write_ios;
		if (!d.st.ios && !d.delta.sectors_written && !z->only)
			continue;
		p = add_dev(s, &cap);
		if (!p)
			return;
		*p = d;
	}
	/* Disks that appeared during the run: no counter baseline. */
	while (!bpf_map_get_next_key(z->devs_fd, prev, &key)) {
		bool known = false;

		for (size_t i = 0; i < z->nr_base; i++)
			known |= z->base[i].kdev == key;
		if (!known) {
			struct summary_dev *p = add_dev(s, &cap);

			if (!p)
				return;
			memset(p, 0, sizeof(*p));
			p->kdev = key;
			if (!bpf_map_lookup_elem(z->devs_fd, &key, &p->st)) {
				memcpy(p->name, p->st.name, AMP_DISK_NAME_LEN);
				p->name[AMP_DISK_NAME_LEN - 1] = 0;
				p->layer = layer_of(p->name, key, &p->disk);
			} else {
				s->nr_devs--;
			}
		}
		prev = &key;
	}
}

static void summarize_files(struct summarizer *z, struct summary *s)
{
	struct amp_file_key key, *prev = NULL;
	size_t cap = s->nr_files;
	struct summary_file *f;

	while (!bpf_map_get_next_key(z->files_fd, prev, &key)) {
		if (amp_grow(&s->files, &cap, s->nr_files + 1, sizeof(*f)))
			break;
		f = &s->files[s->nr_files];
		f->key = key;
		if (!bpf_map_lookup_elem(z->files_fd, &key, &f->st) && !f->st.excluded)
			s->nr_files++;
		prev = &f->key;
	}
}

void summarizer_use_progs(struct summarizer *z, const struct bpf_object *obj)
{
	z->obj = obj;
}

/* Runs the kernel skipped, over the loaded programs: each one a hook that
 * saw nothing (its bytes then fall to a class by window or to other).
 * The first few programs are named, so that a report says which hook it
 * was.  Kernels before 5.12 do not count them: 0. */
static __u64 prog_runs_missed(const struct summarizer *z, struct summary *s)
{
	struct bpf_program *p;
	__u64 missed = 0;

	s->nr_missed = 0;
	if (!z->obj)
		return 0;
	bpf_object__for_each_program(p, z->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    !info.recursion_misses)
			continue;
		missed += info.recursion_misses;
		if (s->nr_missed < (int)ARRAY_SIZE(s->missed)) {
			struct summary_missed *m = &s->missed[s->nr_missed++];

			snprintf(m->prog, sizeof(m->prog), "%s", bpf_program__name(p));
			m->runs = info.recursion_misses;
		}
	}
	return missed;
}

/* The per-CPU loss counters, summed. */
static void sum_losses(struct summarizer *z, struct summary *s)
{
	struct amp_stats *out = &s->losses;
	int ncpu = libbpf_num_possible_cpus();
	struct amp_stats *per = calloc(ncpu > 0 ? ncpu : 1, sizeof(*per));
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (!per || ncpu <= 0)
		goto out;
	if (bpf_map_lookup_elem(z->stats_fd, &zero, per))
		goto out;
	for (int c = 0; c < ncpu; c++) {
		__u64 *src = (__u64 *)&per[c], *dst = (__u64 *)out;

		for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
out:
	out->prog_runs_missed = prog_runs_missed(z, s);
	/* Ids start at 1, one per entry (the BPF side's and startup's own). */
	out->entries_opened = __atomic_load_n(z->next_entry_id, __ATOMIC_RELAXED) - 1;
	free(per);
}

void summarize_rest(struct summarizer *z, struct summary *s, struct ledger *l, bool files)
{
	for (int i = 0; i < s->nr_devs; i++)
		ledger_disk(l, s->devs[i].kdev, &s->devs[i].ledger);
	if (files)
		summarize_files(z, s);
	sum_losses(z, s);
}

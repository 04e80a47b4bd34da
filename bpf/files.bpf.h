/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-file totals for the summary: entries, write-syscall bytes, folios
 * dirtied, device bytes.  Fed by the syscall, dirty and block stages.
 */
#ifndef AMPTRACE_FILES_BPF_H
#define AMPTRACE_FILES_BPF_H

/* The inode's first dentry name: enough to recognise a file. */
static __always_inline void inode_basename(struct inode *inode, char *buf, int len)
{
	struct hlist_node *first = BPF_CORE_READ(inode, i_dentry.first);
	struct dentry *d;

	if (!first)
		return;
	d = (void *)first - bpf_core_field_offset(struct dentry, d_u.d_alias);
	bpf_probe_read_kernel_str(buf, len, BPF_CORE_READ(d, d_name.name));
}

/*
 * Where the file lies in its filesystem: up the dentry chain from the
 * inode's first name to the superblock's root, at most AMP_PATH_DEPTH
 * names, into `file_paths` (struct amp_file_path).  Once per file, at its
 * first sight; a path that does not fit, or a dentry cut off from the
 * root, is kept without AMP_PATH_ROOT (user space shows ".../" in front).
 */
static __always_inline void file_path_record(const struct amp_file_key *fk, struct inode *inode)
{
	struct hlist_node *first = BPF_CORE_READ(inode, i_dentry.first);
	struct super_block *sb = BPF_CORE_READ(inode, i_sb);
	struct dentry *root = BPF_CORE_READ(sb, s_root), *d, *parent;
	struct amp_path_scratch *s;
	__u32 zero = 0, off = 0;

	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s || !first)
		return;
	d = (void *)first - bpf_core_field_offset(struct dentry, d_u.d_alias);
	s->p.sb_dev = BPF_CORE_READ(sb, s_dev);
	/* d_unhashed(): unlinked, as /proc says "(deleted)". */
	s->p.flags = BPF_CORE_READ(d, d_hash.pprev) ? 0 : AMP_PATH_DELETED;
	s->p.depth = 0;
	for (int i = 0; i < AMP_PATH_DEPTH; i++) {
		long n;

		if (d == root) {
			s->p.flags |= AMP_PATH_ROOT;
			break;
		}
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d || off >= AMP_PATH_LEN)
			break;	/* disconnected, or full */
		n = bpf_probe_read_kernel_str(&s->p.rev[off & (AMP_PATH_LEN - 1)], AMP_PATH_LEN,
					      BPF_CORE_READ(d, d_name.name));
		if (n <= 0 || off + n > AMP_PATH_LEN)
			break;
		off += n;
		s->p.depth++;
		d = parent;
	}
	if (d == root)	/* exactly AMP_PATH_DEPTH names deep */
		s->p.flags |= AMP_PATH_ROOT;
	s->p.len = off;
	bpf_map_update_elem(&file_paths, fk, &s->p, BPF_NOEXIST);
}

/* The per-file totals of (dev, ino), created on first sight.  The loader
 * puts amptrace's own output files here beforehand, marked excluded: one
 * lookup both names a file and says whether to trace it. */
static __always_inline struct amp_file_stats *
file_stats(struct amp_file_key *fk, struct inode *inode, __u32 tgid)
{
	struct amp_file_stats *fs = bpf_map_lookup_elem(&files, fk);
	struct amp_file_stats init = { .last_pid = tgid };

	if (fs)
		return fs;
	if (inode)
		inode_basename(inode, init.name, sizeof(init.name));
	if (bpf_map_update_elem(&files, fk, &init, BPF_NOEXIST)) {
		if (!bpf_map_lookup_elem(&files, fk)) {
			STAT_INC(files_full);
			return NULL;
		}
	} else if (inode) {
		file_path_record(fk, inode);	/* we added it: first sight */
	}
	return bpf_map_lookup_elem(&files, fk);
}

/* Count each entry once per file (entries of one thread come in order). */
static __always_inline void file_count_entry(struct amp_file_stats *fs, __u64 entry_id)
{
	if (fs->last_entry != entry_id) {
		fs->last_entry = entry_id;
		__sync_fetch_and_add(&fs->entries, 1);
	}
}

/* Folios of the file dirtied by an entry (fs: from file_stats, or NULL). */
static __always_inline void file_account(struct amp_file_stats *fs, __u32 tgid,
					 __u64 entry_id, __u32 folios, __u32 npages)
{
	if (!fs)
		return;
	fs->last_pid = tgid;
	file_count_entry(fs, entry_id);
	__sync_fetch_and_add(&fs->folios_dirtied, folios);
	__sync_fetch_and_add(&fs->pages_dirtied, npages);
}

/* Is (dev, ino) the thread's last written file, whose totals it keeps? */
static __always_inline bool file_is_last(const struct amp_thread *t, __u32 dev, __u64 ino)
{
	return t->last_file.ino == ino && t->last_file.dev == dev && ino;
}

/* Folios (and bytes) of the thread's last file, by entry entry_id. */
static __always_inline void file_delta_add(struct amp_thread *t, __u64 entry_id, __u64 bytes,
					   __u32 folios, __u32 npages)
{
	struct amp_file_delta *d = &t->file_delta;

	if (d->last_entry != entry_id) {
		d->last_entry = entry_id;
		d->entries++;
	}
	d->syscall_bytes += bytes;
	d->folios_dirtied += folios;
	d->pages_dirtied += npages;
}

/* The thread's additions to its last file, into `files` (tgid: its
 * process, for the file's path).  Each count is taken by an exchange: at
 * the end the drain and the thread's own exit can race, and each count
 * then goes to one of them. */
static __always_inline void file_delta_flush(struct amp_thread *t, __u32 tgid)
{
	struct amp_file_delta *d = &t->file_delta;
	struct amp_file_stats *fs;

	if (!d->entries)
		return;
	fs = file_stats(&t->last_file, NULL, tgid);
	if (!fs) {
		__builtin_memset(d, 0, sizeof(*d));	/* files_full counted */
		return;
	}
	fs->last_pid = tgid;
	__sync_fetch_and_add(&fs->entries, __sync_lock_test_and_set(&d->entries, 0));
	__sync_fetch_and_add(&fs->syscall_bytes, __sync_lock_test_and_set(&d->syscall_bytes, 0));
	__sync_fetch_and_add(&fs->folios_dirtied, __sync_lock_test_and_set(&d->folios_dirtied, 0));
	__sync_fetch_and_add(&fs->pages_dirtied, __sync_lock_test_and_set(&d->pages_dirtied, 0));
}

/* A write syscall's bytes, and the folios of its file it dirtied, go to the
 * file it targeted: the thread's last file (named and checked at enter),
 * kept in the thread, so no lookup at all. */
static __always_inline void file_account_write(struct amp_thread *t,
					       const struct pending_syscall *p,
					       __u64 entry_id, long bytes)
{
	struct amp_file_key fk = { .dev = p->fd_dev, .ino = p->fd_ino };
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct amp_file_stats *fs;

	if (bytes <= 0 && !p->folios_dirtied)
		return;
	if (file_is_last(t, p->fd_dev, p->fd_ino)) {
		file_delta_add(t, entry_id, bytes > 0 ? bytes : 0, p->folios_dirtied,
			       p->pages_dirtied);
		return;
	}
	/* Not in `files` at enter (it was full): try again. */
	fs = file_stats(&fk, NULL, tgid);
	if (!fs)
		return;
	file_count_entry(fs, entry_id);
	if (bytes > 0)
		__sync_fetch_and_add(&fs->syscall_bytes, bytes);
	if (p->folios_dirtied)
		file_account(fs, tgid, entry_id, p->folios_dirtied, p->pages_dirtied);
}

#endif /* AMPTRACE_FILES_BPF_H */

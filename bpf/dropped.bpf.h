/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Folios that leave the page cache: the other way out of the dirtying
 * stage.  A dirty folio of a file deleted or truncated before its
 * write-out (a log cut by logrotate's copytruncate, a file removed while
 * dirty) is cleaned and dropped, never written.  Its owner waited for
 * that write; without this the entry stayed unsettled until the loader's
 * --settle-timeout sweep (counted as entries_timed_out), and the slot held
 * a folio the cache had forgotten.  Here the owner stops waiting
 * (pages_cancelled, as for a folio re-dirtied before its write-out) and
 * the slot is freed.
 *
 * mm_filemap_delete_from_page_cache fires for every folio the cache lets
 * go, reclaim's clean ones too: a folio not dirtied on a traced disk since
 * the start (no bit in its home slot) costs the key's hash and one load.
 * Truncation waits for a write-out in flight, so no owner found here has
 * a write still coming.
 */
#ifndef AMPTRACE_DROPPED_BPF_H
#define AMPTRACE_DROPPED_BPF_H

static __always_inline int folio_dropped(struct address_space *mapping, __u64 index, __u32 npages)
{
	struct amp_page_key key = {};
	struct folio_pos pos;

	if (!folio_key_of(mapping, index, &key))
		return 0;
	folio_pos(&key, npages, &pos);
	if (!dirtied_since_start(&pos))
		return 0;
	folio_disown(&key, &pos, true, NULL);
	return 0;
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(on_folio_dropped, struct folio *folio)
{
	return folio_dropped(folio->mapping, folio->index, folio_npages(folio));
}

/* Before the page cache held folios (5.15) the event passed a page.  Its
 * fields by direct (relocated) loads: a probe-read mapping would be a
 * plain number to the verifier, not a pointer to load through. */
SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(on_page_dropped, struct page *page)
{
	struct page___pre_folio *p = (void *)page;

	return folio_dropped(p->mapping, p->index, 1);
}

#endif /* AMPTRACE_DROPPED_BPF_H */

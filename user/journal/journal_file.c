// SPDX-License-Identifier: GPL-2.0
/*
 * Journal file reader: mapping, header, objects by offset, the linear walk
 * and its page index, entry-array chains, hash-table chains, field names
 * and payloads.  Every read is preceded by a bounds check against the
 * mapping, because the file may be corrupt, truncated, or still being
 * appended to by journald (the format's own rule: readers verify).
 */
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "journal/journal_file.h"

#define ALIGN8(x)	(((x) + 7) & ~(uint64_t)7)
#define NO_OBJECT	UINT64_MAX	/* page index: past the tail object */
#define DROP_WINDOW	(16ull << 20)	/* drop_behind granularity */

struct jf_field_link {
	uint64_t data;
	uint64_t field;
};

static const char *const type_names[] = {
	"HEADER", "DATA", "FIELD", "ENTRY", "DATA_HASH_TABLE",
	"FIELD_HASH_TABLE", "ENTRY_ARRAY", "TAG",
};

const char *jf_type_name(int type)
{
	return type >= 0 && type < 8 ? type_names[type] : "UNKNOWN";
}

static inline uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static void vset_err(struct jf *f, uint64_t off, const char *fmt, va_list ap)
{
	int n = vsnprintf(f->err, sizeof(f->err), fmt, ap);

	if (n >= 0 && (size_t)n < sizeof(f->err))
		snprintf(f->err + n, sizeof(f->err) - n, " at offset %llu (0x%llx)",
			 (unsigned long long)off, (unsigned long long)off);
}

/* Set jf->err to "<what> at offset N (0xN)" and return -EBADMSG. */
__attribute__((format(printf, 3, 4)))
static int fail(struct jf *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_err(f, off, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* The same, for what is valid but cannot be read here. */
__attribute__((format(printf, 3, 4)))
static int unsupported(struct jf *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_err(f, off, fmt, ap);
	va_end(ap);
	return -EOPNOTSUPP;
}

int jf_follow(struct jf *f, uint64_t from, const char *link, uint64_t off, int want,
	      struct jf_object *o)
{
	char inner[sizeof(f->err)];
	int r = jf_object(f, off, want, o);

	/* Say where the bad pointer was, then what it points at. */
	if (r == -EBADMSG) {
		memcpy(inner, f->err, sizeof(inner));
		snprintf(f->err, sizeof(f->err), "%s at %llu (0x%llx) points to %.180s", link,
			 (unsigned long long)from, (unsigned long long)from, inner);
	}
	return r;
}

/* -------------------------------------------------------------- header --- */

/* A later header field exists only if header_size reaches past it. */
#define HAS(h, off, sz)	((h)->header_size >= (uint64_t)(off) + (sz))

static int check_table(struct jf *f, int type, uint64_t items, uint64_t size,
		       uint64_t field_off, uint64_t *buckets)
{
	struct jf_object o;
	int err;

	if (!size || size % 16 || items % 8 || items < f->h.header_size + 16)
		return fail(f, field_off, "bad %s location (items at %llu, %llu bytes)",
			    jf_type_name(type), (unsigned long long)items,
			    (unsigned long long)size);
	/* The header points at the items, 16 bytes into the object. */
	err = jf_object(f, items - 16, type, &o);
	if (err)
		return err;
	if (o.size != size + 16)
		return fail(f, items - 16, "%s object is %llu bytes, header says %llu",
			    jf_type_name(type), (unsigned long long)o.size,
			    (unsigned long long)size + 16);
	*buckets = size / 16;
	return 0;
}

static int parse_header(struct jf *f)
{
	const uint8_t *m = f->map;
	struct jf_header *h = &f->h;
	int err;

	if (f->size < 8 || memcmp(m, "LPKSHHRH", 8))
		return fail(f, 0, "not a journal file (no LPKSHHRH signature)");
	if (f->size < JF_HEADER_MIN)
		return fail(f, f->size, "truncated header: the file ends after %llu bytes, "
			    "a header needs %d", (unsigned long long)f->size, JF_HEADER_MIN);
	h->compatible_flags = rd32(m + 8);
	h->incompatible_flags = rd32(m + 12);
	h->state = m[16];
	memcpy(h->file_id, m + 24, 16);
	memcpy(h->machine_id, m + 40, 16);
	memcpy(h->boot_id, m + 56, 16);
	memcpy(h->seqnum_id, m + 72, 16);
	h->header_size = rd64(m + 88);
	h->arena_size = rd64(m + 96);
	h->data_hash_table_offset = rd64(m + 104);
	h->data_hash_table_size = rd64(m + 112);
	h->field_hash_table_offset = rd64(m + 120);
	h->field_hash_table_size = rd64(m + 128);
	h->tail_object_offset = rd64(m + 136);
	h->n_objects = rd64(m + 144);
	h->n_entries = rd64(m + 152);
	h->tail_entry_seqnum = rd64(m + 160);
	h->head_entry_seqnum = rd64(m + 168);
	h->entry_array_offset = rd64(m + 176);
	h->head_entry_realtime = rd64(m + 184);
	h->tail_entry_realtime = rd64(m + 192);
	h->tail_entry_monotonic = rd64(m + 200);

	if (h->header_size < JF_HEADER_MIN || h->header_size % 8)
		return fail(f, 88, "bad header_size %llu", (unsigned long long)h->header_size);
	if (h->header_size > f->size)
		return fail(f, 88, "header_size %llu is larger than the file (%llu bytes)",
			    (unsigned long long)h->header_size, (unsigned long long)f->size);
	if (h->incompatible_flags & ~JF_INCOMPAT_KNOWN)
		return fail(f, 12, "unsupported incompatible flags 0x%x",
			    h->incompatible_flags & ~JF_INCOMPAT_KNOWN);
	if (HAS(h, 208, 16)) {
		h->n_data = rd64(m + 208);
		h->n_fields = rd64(m + 216);
	}
	if (HAS(h, 224, 16)) {
		h->n_tags = rd64(m + 224);
		h->n_entry_arrays = rd64(m + 232);
	}
	if (HAS(h, 240, 16)) {
		h->data_hash_chain_depth = rd64(m + 240);
		h->field_hash_chain_depth = rd64(m + 248);
	}
	if (HAS(h, 256, 8)) {
		h->tail_entry_array_offset = rd32(m + 256);
		h->tail_entry_array_n_entries = rd32(m + 260);
	}
	if (HAS(h, 264, 8))
		h->tail_entry_offset = rd64(m + 264);

	f->compact = h->incompatible_flags & JF_COMPACT;
	f->keyed = h->incompatible_flags & JF_KEYED_HASH;
	f->item_size = f->compact ? 4 : 16;
	f->array_item_size = f->compact ? 4 : 8;
	f->data_payload_start = f->compact ? 72 : 64;

	/* Objects live in [header_size, header_size + arena_size), as far as
	 * the file really goes (an archived file is truncated to its tail). */
	f->end = f->size;
	if (h->arena_size < f->size - h->header_size)
		f->end = h->header_size + h->arena_size;

	if (h->tail_object_offset &&
	    (h->tail_object_offset < h->header_size || h->tail_object_offset % 8 ||
	     h->tail_object_offset >= f->end))
		return fail(f, 136, "tail_object_offset %llu is outside the object area "
			    "[%llu, %llu): file truncated?",
			    (unsigned long long)h->tail_object_offset,
			    (unsigned long long)h->header_size, (unsigned long long)f->end);
	err = check_table(f, JF_FIELD_HASH_TABLE, h->field_hash_table_offset,
			  h->field_hash_table_size, 120, &f->field_buckets);
	if (err)
		return err;
	return check_table(f, JF_DATA_HASH_TABLE, h->data_hash_table_offset,
			   h->data_hash_table_size, 104, &f->data_buckets);
}

static void init(struct jf *f)
{
	memset(f, 0, sizeof(*f));
	f->max_value = 64ull << 20;
}

int jf_open_mem(struct jf *f, const void *buf, size_t len)
{
	init(f);
	f->map = buf;
	f->size = len;
	return parse_header(f);
}

int jf_open(struct jf *f, const char *path)
{
	struct stat st;
	void *map;
	int fd, err;

	init(f);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(f->err, sizeof(f->err), "%s", strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(f->err, sizeof(f->err), "fstat: %s", strerror(-err));
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		snprintf(f->err, sizeof(f->err), "%s",
			 S_ISREG(st.st_mode) ? "empty file" : "not a regular file");
		close(fd);
		return S_ISREG(st.st_mode) ? -EBADMSG : -EINVAL;
	}
	/* Read-only and shared: we see journald's appends up to st_size, and
	 * never copy a page. */
	map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	err = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err) {
		snprintf(f->err, sizeof(f->err), "mmap: %s", strerror(-err));
		return err;
	}
	f->map = map;
	f->size = st.st_size;
	f->own_map = true;
	f->drop_behind = true;
	return parse_header(f);
}

void jf_close(struct jf *f)
{
	if (f->own_map && f->map)
		munmap((void *)f->map, f->size);
	free(f->page_index);
	free(f->field_map);
	f->map = NULL;
	f->page_index = NULL;
	f->field_map = NULL;
}

/* ------------------------------------------------------------- objects --- */

int jf_object(struct jf *f, uint64_t off, int want, struct jf_object *o)
{
	static const uint64_t min_size[8] = { 0, 64, 40, 64, 16, 16, 24, 64 };
	const uint8_t *p;
	uint64_t min;

	if (off % 8)
		return fail(f, off, "misaligned object offset");
	if (off < f->h.header_size || off >= f->end)
		return fail(f, off, "object offset outside the object area [%llu, %llu)",
			    (unsigned long long)f->h.header_size, (unsigned long long)f->end);
	if (f->end - off < 16)
		return fail(f, off, "object header cut off by the end of the file (%llu)",
			    (unsigned long long)f->end);
	p = f->map + off;
	memset(o, 0, sizeof(*o));
	o->offset = off;
	o->type = p[0];
	o->flags = p[1];
	o->size = rd64(p + 8);
	if (o->type < JF_DATA || o->type > JF_TAG)
		return fail(f, off, "unknown object type %u%s", o->type,
			    o->type ? "" : " (unwritten space: file truncated or not yet written?)");
	if (want && o->type != want)
		return fail(f, off, "expected a %s object, found %s", jf_type_name(want),
			    jf_type_name(o->type));
	min = o->type == JF_DATA ? f->data_payload_start : min_size[o->type];
	if (o->size < min)
		return fail(f, off, "%s object size %llu is below its minimum %llu",
			    jf_type_name(o->type), (unsigned long long)o->size,
			    (unsigned long long)min);
	if (o->size > f->end - off)
		return fail(f, off, "%s object of %llu bytes runs past the end of the file (%llu)",
			    jf_type_name(o->type), (unsigned long long)o->size,
			    (unsigned long long)f->end);
	if (o->flags) {
		unsigned need = o->flags == JF_OBJ_XZ ? JF_COMPRESSED_XZ :
				o->flags == JF_OBJ_LZ4 ? JF_COMPRESSED_LZ4 :
				o->flags == JF_OBJ_ZSTD ? JF_COMPRESSED_ZSTD : 0;

		if (o->type != JF_DATA || !need)
			return fail(f, off, "bad flags 0x%x on a %s object", o->flags,
				    jf_type_name(o->type));
		if (!(f->h.incompatible_flags & need))
			return fail(f, off, "compressed DATA object in a file whose header "
				    "does not allow that compression");
	}
	switch (o->type) {
	case JF_DATA:
		o->data.hash = rd64(p + 16);
		o->data.next_hash_offset = rd64(p + 24);
		o->data.next_field_offset = rd64(p + 32);
		o->data.entry_offset = rd64(p + 40);
		o->data.entry_array_offset = rd64(p + 48);
		o->data.n_entries = rd64(p + 56);
		if (f->compact) {
			o->data.tail_entry_array_offset = rd32(p + 64);
			o->data.tail_entry_array_n_entries = rd32(p + 68);
		}
		o->data.payload_offset = off + f->data_payload_start;
		o->data.payload_size = o->size - f->data_payload_start;
		break;
	case JF_FIELD:
		o->field.hash = rd64(p + 16);
		o->field.next_hash_offset = rd64(p + 24);
		o->field.head_data_offset = rd64(p + 32);
		o->field.name_offset = off + 40;
		o->field.name_size = o->size - 40;
		break;
	case JF_ENTRY:
		if ((o->size - 64) % f->item_size)
			return fail(f, off, "ENTRY object size %llu is not 64 + n x %u",
				    (unsigned long long)o->size, f->item_size);
		o->entry.seqnum = rd64(p + 16);
		o->entry.realtime = rd64(p + 24);
		o->entry.monotonic = rd64(p + 32);
		memcpy(o->entry.boot_id, p + 40, 16);
		o->entry.xor_hash = rd64(p + 56);
		o->entry.n_items = (o->size - 64) / f->item_size;
		break;
	case JF_DATA_HASH_TABLE:
	case JF_FIELD_HASH_TABLE:
		if ((o->size - 16) % 16)
			return fail(f, off, "hash table size %llu is not 16 + n x 16",
				    (unsigned long long)o->size);
		o->hash_table.n_buckets = (o->size - 16) / 16;
		break;
	case JF_ENTRY_ARRAY:
		if ((o->size - 24) % f->array_item_size)
			return fail(f, off, "ENTRY_ARRAY size %llu is not 24 + n x %u",
				    (unsigned long long)o->size, f->array_item_size);
		o->entry_array.next_entry_array_offset = rd64(p + 16);
		o->entry_array.capacity = (o->size - 24) / f->array_item_size;
		break;
	case JF_TAG:
		if (o->size != 64)
			return fail(f, off, "TAG object size %llu is not 64",
				    (unsigned long long)o->size);
		o->tag.seqnum = rd64(p + 16);
		o->tag.epoch = rd64(p + 24);
		break;
	}
	return 0;
}

/* Items lie inside an object jf_object() checked, so reading them is safe;
 * an index past the end reads as 0, like an unused slot. */
uint64_t jf_entry_item(const struct jf *f, const struct jf_object *e, uint64_t i)
{
	const uint8_t *p = f->map + e->offset + 64;

	if (e->type != JF_ENTRY || i >= e->entry.n_items)
		return 0;
	return f->compact ? rd32(p + 4 * i) : rd64(p + 16 * i);
}

uint64_t jf_entry_item_hash(const struct jf *f, const struct jf_object *e, uint64_t i)
{
	if (e->type != JF_ENTRY || f->compact || i >= e->entry.n_items)
		return 0;
	return rd64(f->map + e->offset + 64 + 16 * i + 8);
}

uint64_t jf_array_item(const struct jf *f, const struct jf_object *a, uint64_t i)
{
	const uint8_t *p = f->map + a->offset + 24;

	if (a->type != JF_ENTRY_ARRAY || i >= a->entry_array.capacity)
		return 0;
	return f->compact ? rd32(p + 4 * i) : rd64(p + 8 * i);
}

uint64_t jf_item_offset(const struct jf *f, const struct jf_object *o, uint64_t i)
{
	return o->type == JF_ENTRY ? jf_entry_item(f, o, i) : jf_array_item(f, o, i);
}

/* ---------------------------------------------------- walk and index --- */

static void drop_behind(struct jf *f, uint64_t *dropped, uint64_t off)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t upto;

	if (!f->own_map || !f->drop_behind || off < *dropped + 2 * DROP_WINDOW)
		return;
	/* A walk in file order rarely looks back: let the kernel take every
	 * mapped page behind it, so resident memory stays at a window plus
	 * the pages looked back at since the last drop, not the file.  They
	 * stay in the page cache; a later access is a minor fault. */
	upto = (off - DROP_WINDOW) & ~(uint64_t)(pg - 1);
	madvise((void *)f->map, upto, MADV_DONTNEED);
	*dropped = upto;
}

static int walk(struct jf *f, jf_object_cb cb, void *ctx, bool index)
{
	uint64_t off = f->h.header_size, tail = f->h.tail_object_offset;
	uint64_t next, dropped = 0, p;
	struct jf_object o;
	int r;

	if (!tail)
		return 0;	/* no objects yet */
	for (;;) {
		r = jf_object(f, off, 0, &o);
		if (r)
			return r;
		next = off + ALIGN8(o.size);
		if (index)	/* pages whose first byte lies in this object */
			for (p = (off + JF_INDEX_PAGE - 1) / JF_INDEX_PAGE;
			     p < f->index_pages && p * JF_INDEX_PAGE < next; p++)
				f->page_index[p] = off;
		if (cb) {
			r = cb(f, &o, ctx);
			if (r)
				return r;
		}
		if (off == tail)
			return 0;
		if (next > tail)
			return fail(f, off, "%s object of %llu bytes steps over "
				    "tail_object_offset %llu", jf_type_name(o.type),
				    (unsigned long long)o.size, (unsigned long long)tail);
		drop_behind(f, &dropped, off);
		off = next;
	}
}

int jf_walk(struct jf *f, jf_object_cb cb, void *ctx)
{
	return walk(f, cb, ctx, false);
}

int jf_build_index(struct jf *f, jf_object_cb cb, void *ctx)
{
	uint64_t n = (f->end + JF_INDEX_PAGE - 1) / JF_INDEX_PAGE;
	int r;

	free(f->page_index);
	f->page_index = malloc((n ? n : 1) * sizeof(*f->page_index));
	if (!f->page_index) {
		snprintf(f->err, sizeof(f->err), "out of memory for a %llu-page index",
			 (unsigned long long)n);
		return -ENOMEM;
	}
	/* Header pages point at offset 0; pages past the tail at nothing. */
	for (uint64_t p = 0; p < n; p++)
		f->page_index[p] = p * JF_INDEX_PAGE < f->h.header_size ? 0 : NO_OBJECT;
	f->index_pages = n;
	r = walk(f, cb, ctx, true);
	if (r < 0) {
		free(f->page_index);
		f->page_index = NULL;
		f->index_pages = 0;
	}
	return r;
}

int jf_objects_in(struct jf *f, uint64_t a, uint64_t b, jf_object_cb cb, void *ctx)
{
	uint64_t off = f->h.header_size, tail = f->h.tail_object_offset, next;
	struct jf_object o;
	int r;

	if (a >= b)
		return 0;
	if (a < f->h.header_size) {
		memset(&o, 0, sizeof(o));
		o.type = JF_HEADER;
		o.size = f->h.header_size;
		r = cb(f, &o, ctx);
		if (r)
			return r;
	}
	if (!tail || b <= f->h.header_size)
		return 0;
	if (f->page_index) {
		uint64_t p = a / JF_INDEX_PAGE;

		if (p >= f->index_pages || f->page_index[p] == NO_OBJECT)
			return 0;
		if (f->page_index[p])
			off = f->page_index[p];
	}
	while (off < b) {
		r = jf_object(f, off, 0, &o);
		if (r)
			return r;
		if (off + o.size > a) {
			r = cb(f, &o, ctx);
			if (r)
				return r;
		}
		next = off + ALIGN8(o.size);
		if (off == tail)
			break;
		if (next > tail)
			return fail(f, off, "%s object steps over tail_object_offset %llu",
				    jf_type_name(o.type), (unsigned long long)tail);
		off = next;
	}
	return 0;
}

/* ------------------------------------------------------------- chains --- */

/* Arrays are appended, so a chain's offsets only grow: a chain that does
 * not is corrupt, and the check also bounds every loop over it. */
int jf_chain_entries(struct jf *f, uint64_t head, uint64_t limit, jf_object_cb cb, void *ctx)
{
	uint64_t a = head, prev = 0, seen = 0, dropped = 0;
	struct jf_object arr, e;
	int r;

	while (a) {
		if (a <= prev)
			return fail(f, prev, "entry-array chain points backwards to %llu",
				    (unsigned long long)a);
		r = jf_follow(f, prev ? prev : head, prev ? "next_entry_array_offset of ENTRY_ARRAY"
			      : "entry-array chain head", a, JF_ENTRY_ARRAY, &arr);
		if (r)
			return r;
		for (uint64_t i = 0; i < arr.entry_array.capacity; i++) {
			uint64_t item = jf_array_item(f, &arr, i);

			if (!item || (limit && seen >= limit))
				return 0;
			r = jf_follow(f, a, "an item of ENTRY_ARRAY", item, JF_ENTRY, &e);
			if (r)
				return r;
			r = cb(f, &e, ctx);
			if (r)
				return r;
			seen++;
			/* Entries come in file order: release what lies far behind.
			 * Values they share live wherever they were first written;
			 * those pages come back as minor faults, once. */
			drop_behind(f, &dropped, item);
		}
		prev = a;
		a = arr.entry_array.next_entry_array_offset;
	}
	return 0;
}

int jf_entries(struct jf *f, jf_object_cb cb, void *ctx)
{
	return jf_chain_entries(f, f->h.entry_array_offset, f->h.n_entries, cb, ctx);
}

int jf_chain_find(struct jf *f, uint64_t head, uint64_t e, struct jf_slot *slot)
{
	uint64_t a = head, prev = 0;
	struct jf_object arr;
	unsigned nth = 0;
	int r;

	while (a) {
		uint64_t lo = 0, hi, cap, v;

		if (a <= prev)
			return fail(f, prev, "entry-array chain points backwards to %llu",
				    (unsigned long long)a);
		r = jf_follow(f, prev ? prev : head, prev ? "next_entry_array_offset of ENTRY_ARRAY"
			      : "entry-array chain head", a, JF_ENTRY_ARRAY, &arr);
		if (r)
			return r;
		cap = hi = arr.entry_array.capacity;
		if (!cap || !jf_array_item(f, &arr, 0) || e < jf_array_item(f, &arr, 0))
			return 1;
		/* Items are sorted entry offsets; unused slots (0) at the end
		 * sort as +infinity. */
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;

			v = jf_array_item(f, &arr, mid);
			if (v == e) {
				slot->array = a;
				slot->index = mid;
				slot->prev_array = prev;
				slot->capacity = cap;
				slot->array_size = arr.size;
				slot->nth_array = nth;
				return 0;
			}
			if (!v || v > e)
				hi = mid;
			else
				lo = mid + 1;
		}
		v = jf_array_item(f, &arr, cap - 1);
		if (!v || v > e)
			return 1;
		prev = a;
		a = arr.entry_array.next_entry_array_offset;
		nth++;
	}
	return 1;
}

/* ---------------------------------------------------------- hash tables --- */

static int table_of(struct jf *f, int table, uint64_t *items, uint64_t *n)
{
	if (table == JF_DATA_HASH_TABLE) {
		*items = f->h.data_hash_table_offset;
		*n = f->data_buckets;
	} else {
		*items = f->h.field_hash_table_offset;
		*n = f->field_buckets;
	}
	return *n ? 0 : fail(f, 104, "no %s", jf_type_name(table));
}

int jf_bucket(struct jf *f, int table, uint64_t bucket, uint64_t *head, uint64_t *tail)
{
	uint64_t items, n;
	int r = table_of(f, table, &items, &n);

	if (r)
		return r;
	if (bucket >= n)
		return fail(f, items, "bucket %llu past the %llu of %s",
			    (unsigned long long)bucket, (unsigned long long)n,
			    jf_type_name(table));
	/* check_table() proved the items lie inside the file. */
	*head = rd64(f->map + items + 16 * bucket);
	*tail = rd64(f->map + items + 16 * bucket + 8);
	return 0;
}

int jf_hash_prev(struct jf *f, int table, uint64_t hash, uint64_t target, uint64_t *prev)
{
	int type = table == JF_DATA_HASH_TABLE ? JF_DATA : JF_FIELD;
	uint64_t items, n, head, tail, cur, p = 0;
	struct jf_object o;
	int r = table_of(f, table, &items, &n);

	if (r)
		return r;
	r = jf_bucket(f, table, hash % n, &head, &tail);
	if (r)
		return r;
	for (cur = head; cur; cur = type == JF_DATA ? o.data.next_hash_offset
						   : o.field.next_hash_offset) {
		if (cur == target) {
			*prev = p;
			return 0;
		}
		if (cur <= p)
			return fail(f, p, "hash chain points backwards to %llu",
				    (unsigned long long)cur);
		r = jf_follow(f, p ? p : items + 16 * (hash % n), p ? "next_hash_offset of the "
			      "object" : "hash bucket head", cur, type, &o);
		if (r)
			return r;
		p = cur;
	}
	return 1;
}

int jf_field_name(struct jf *f, const struct jf_object *field, const uint8_t **name, size_t *len)
{
	*name = f->map + field->field.name_offset;
	*len = field->field.name_size;
	return 0;
}

int jf_find_field(struct jf *f, const void *name, size_t len, uint64_t *field)
{
	uint64_t hash = jf_hash(f, name, len), head, tail, cur, p = 0;
	struct jf_object o;
	int r = jf_bucket(f, JF_FIELD_HASH_TABLE, f->field_buckets ? hash % f->field_buckets : 0,
			  &head, &tail);

	*field = 0;
	if (r)
		return r;
	for (cur = head; cur; cur = o.field.next_hash_offset) {
		if (cur <= p)
			return fail(f, p, "hash chain points backwards to %llu",
				    (unsigned long long)cur);
		r = jf_object(f, cur, JF_FIELD, &o);
		if (r)
			return r;
		if (o.field.hash == hash && o.field.name_size == len &&
		    !memcmp(f->map + o.field.name_offset, name, len)) {
			*field = cur;
			return 0;
		}
		p = cur;
	}
	return 0;
}

/* -------------------------------------------------- names and payloads --- */

static int link_cmp(const void *a, const void *b)
{
	const struct jf_field_link *x = a, *y = b;

	return x->data < y->data ? -1 : x->data > y->data;
}

/*
 * A compressed DATA object's field name is inside its compressed payload.
 * Rather than decompress, find the FIELD whose data chain (head_data_offset,
 * then each DATA's next_field_offset) holds it: one pass over all chains,
 * kept as a sorted DATA -> FIELD map.  Only built if ever needed.
 */
static int build_field_map(struct jf *f)
{
	uint64_t cap = f->end / 64 + 1, n = 0, alloc = 1024;
	struct jf_field_link *map = malloc(alloc * sizeof(*map));
	struct jf_object fo, d;
	int r = 0;

	if (!map)
		return -ENOMEM;
	for (uint64_t b = 0; b < f->field_buckets && !r; b++) {
		uint64_t head, tail, cur, p = 0;

		r = jf_bucket(f, JF_FIELD_HASH_TABLE, b, &head, &tail);
		for (cur = head; !r && cur; cur = fo.field.next_hash_offset) {
			uint64_t dd, dprev = UINT64_MAX;

			if (cur <= p) {
				r = fail(f, p, "hash chain points backwards to %llu",
					 (unsigned long long)cur);
				break;
			}
			r = jf_object(f, cur, JF_FIELD, &fo);
			if (r)
				break;
			/* New DATA objects are prepended: offsets fall. */
			for (dd = fo.field.head_data_offset; dd; dd = d.data.next_field_offset) {
				if (dd >= dprev) {
					r = fail(f, dprev, "field data chain points forwards to %llu",
						 (unsigned long long)dd);
					break;
				}
				r = jf_object(f, dd, JF_DATA, &d);
				if (r)
					break;
				if (n == cap) {
					r = fail(f, dd, "more DATA objects on field chains than fit in the file");
					break;
				}
				if (n == alloc) {
					struct jf_field_link *m2 = realloc(map, 2 * alloc * sizeof(*map));

					if (!m2) {
						r = -ENOMEM;
						break;
					}
					map = m2;
					alloc *= 2;
				}
				map[n].data = dd;
				map[n++].field = cur;
				dprev = dd;
			}
			p = cur;
		}
	}
	if (r) {
		free(map);
		return r;
	}
	qsort(map, n, sizeof(*map), link_cmp);
	f->field_map = map;
	f->field_map_len = n;
	f->field_map_built = true;
	return 0;
}

static const struct zstd_api *zstd_api(void);

int jf_data_field(struct jf *f, const struct jf_object *d, const uint8_t **name, size_t *len_out)
{
	struct jf_field_link key = { .data = d->offset }, *hit;
	struct jf_object fo;
	const uint8_t *p, *eq;
	int r;

	if (!d->flags) {
		p = f->map + d->data.payload_offset;
		eq = memchr(p, '=', d->data.payload_size);
		if (!eq)
			return fail(f, d->offset, "DATA payload has no '='");
		*name = p;
		*len_out = eq - p;
		return 0;
	}
	/* Decoding the payload is cheapest when zstd is at hand; the map of
	 * field chains is the fallback (xz, lz4, or no libzstd). */
	if (d->flags == JF_OBJ_ZSTD && zstd_api()) {
		uint64_t len;
		uint8_t *buf;

		r = jf_data_payload(f, d, &p, &len, &buf);
		if (r)
			return r;
		eq = memchr(p, '=', len);
		if (eq && (size_t)(eq - p) <= sizeof(f->name_buf)) {
			memcpy(f->name_buf, p, eq - p);
			*name = f->name_buf;
			*len_out = eq - p;
			free(buf);
			return 0;
		}
		free(buf);
		if (!eq)
			return fail(f, d->offset, "DATA payload has no '='");
	}
	if (!f->field_map_built) {
		r = build_field_map(f);
		if (r)
			return r;
	}
	hit = bsearch(&key, f->field_map, f->field_map_len, sizeof(key), link_cmp);
	if (!hit)
		return fail(f, d->offset, "compressed DATA object is on no field's data chain");
	r = jf_object(f, hit->field, JF_FIELD, &fo);
	if (r)
		return r;
	return jf_field_name(f, &fo, name, len_out);
}

/* libzstd is loaded only when a compressed value is really read, so the
 * build needs no zstd headers and the reader no zstd at all otherwise. */
struct zstd_api {
	size_t (*decompress)(void *dst, size_t cap, const void *src, size_t len);
	unsigned (*is_error)(size_t code);
	unsigned long long (*content_size)(const void *src, size_t len);
};

static const struct zstd_api *zstd_api(void)
{
	static struct zstd_api api;
	static int state;	/* 0 untried, 1 loaded, -1 absent */
	void *h;

	if (state)
		return state > 0 ? &api : NULL;
	state = -1;
	h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return NULL;
	*(void **)&api.decompress = dlsym(h, "ZSTD_decompress");
	*(void **)&api.is_error = dlsym(h, "ZSTD_isError");
	*(void **)&api.content_size = dlsym(h, "ZSTD_getFrameContentSize");
	if (!api.decompress || !api.is_error || !api.content_size)
		return NULL;
	state = 1;
	return &api;
}

int jf_data_payload(struct jf *f, const struct jf_object *d, const uint8_t **p,
		    uint64_t *len, uint8_t **buf)
{
	const uint8_t *src = f->map + d->data.payload_offset;
	const struct zstd_api *z;
	unsigned long long n;
	size_t got;

	*buf = NULL;
	if (!d->flags) {
		*p = src;
		*len = d->data.payload_size;
		return 0;
	}
	if (d->flags != JF_OBJ_ZSTD)
		return unsupported(f, d->offset, "%s-compressed DATA (only zstd is decoded)",
				   d->flags == JF_OBJ_XZ ? "XZ" : "LZ4");
	z = zstd_api();
	if (!z)
		return unsupported(f, d->offset, "zstd-compressed DATA, but no libzstd.so.1");
	/* journald writes single frames that record their content size. */
	n = z->content_size(src, d->data.payload_size);
	if (n >= (unsigned long long)-2)
		return fail(f, d->offset, "zstd payload without a content size");
	if (n > f->max_value)
		return fail(f, d->offset, "zstd payload claims %llu bytes (limit %llu)", n,
			    (unsigned long long)f->max_value);
	*buf = malloc(n ? n : 1);
	if (!*buf)
		return -ENOMEM;
	got = z->decompress(*buf, n, src, d->data.payload_size);
	if (z->is_error(got) || got != n) {
		free(*buf);
		*buf = NULL;
		return fail(f, d->offset, "zstd payload does not decompress");
	}
	*p = *buf;
	*len = n;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A read-only reader for systemd journal files (the format journald 252
 * writes; regular and compact layouts, keyed and unkeyed hashes).
 *
 * The file is mapped read-only and every offset read from it is checked
 * before use: a truncated or corrupt file yields -EBADMSG and a message in
 * jf->err that names the offset where reading stopped, never a crash.
 * Nothing here allocates per object; the only allocations are the page
 * index (8 bytes per 4 KiB of file) and, when a compressed DATA object's
 * field name is needed, a DATA -> FIELD map (16 bytes per DATA object).
 *
 * Layout knowledge comes from systemd's docs/JOURNAL_FILE_FORMAT.md and
 * from files journald 252 and 257 wrote; this is an independent reader.
 */
#ifndef AMPTRACE_JOURNAL_FILE_H
#define AMPTRACE_JOURNAL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jf_type {
	JF_HEADER = 0,		/* pseudo-type for the file header in range queries */
	JF_DATA = 1,
	JF_FIELD = 2,
	JF_ENTRY = 3,
	JF_DATA_HASH_TABLE = 4,
	JF_FIELD_HASH_TABLE = 5,
	JF_ENTRY_ARRAY = 6,
	JF_TAG = 7,
};

/* Header incompatible_flags. */
#define JF_COMPRESSED_XZ	0x01
#define JF_COMPRESSED_LZ4	0x02
#define JF_KEYED_HASH		0x04
#define JF_COMPRESSED_ZSTD	0x08
#define JF_COMPACT		0x10
#define JF_INCOMPAT_KNOWN	0x1f

/* Header compatible_flags.  TAIL_ENTRY_BOOT_ID (systemd 254+): the boot
 * ID at 56 is the tail entry's, stored by every append. */
#define JF_SEALED		0x01
#define JF_TAIL_ENTRY_BOOT_ID	0x02

/* Object flags (DATA only): the payload is compressed. */
#define JF_OBJ_XZ	0x01
#define JF_OBJ_LZ4	0x02
#define JF_OBJ_ZSTD	0x04

#define JF_HEADER_MIN	208	/* header up to n_data: the oldest layout */
/* Header with tail_entry_offset: written by systemd 254 and later (252's
 * header is 264 bytes).  Where the two releases differ, the file's own
 * header says which one wrote it. */
#define JF_HEADER_SIZE_254	272
#define JF_INDEX_PAGE	4096	/* granularity of the page index */

struct jf_header {
	uint32_t compatible_flags;
	uint32_t incompatible_flags;
	uint8_t state;			/* 0 offline, 1 online, 2 archived */
	uint8_t file_id[16];
	uint8_t machine_id[16];
	uint8_t boot_id[16];
	uint8_t seqnum_id[16];
	uint64_t header_size;
	uint64_t arena_size;
	uint64_t data_hash_table_offset, data_hash_table_size;	/* of items */
	uint64_t field_hash_table_offset, field_hash_table_size;
	uint64_t tail_object_offset;
	uint64_t n_objects;
	uint64_t n_entries;
	uint64_t tail_entry_seqnum;
	uint64_t head_entry_seqnum;
	uint64_t entry_array_offset;
	uint64_t head_entry_realtime;
	uint64_t tail_entry_realtime;
	uint64_t tail_entry_monotonic;
	/* Later additions: 0 when header_size does not reach them. */
	uint64_t n_data, n_fields, n_tags, n_entry_arrays;
	uint64_t data_hash_chain_depth, field_hash_chain_depth;
	uint32_t tail_entry_array_offset, tail_entry_array_n_entries;
	uint64_t tail_entry_offset;
};

struct jf_object {
	uint64_t offset;
	uint64_t size;			/* as stored: without padding */
	uint8_t type;
	uint8_t flags;
	union {
		struct {
			uint64_t hash;
			uint64_t next_hash_offset;
			uint64_t next_field_offset;
			uint64_t entry_offset;
			uint64_t entry_array_offset;
			uint64_t n_entries;
			uint32_t tail_entry_array_offset;	/* compact only */
			uint32_t tail_entry_array_n_entries;
			uint64_t payload_offset;		/* absolute */
			uint64_t payload_size;
		} data;
		struct {
			uint64_t hash;
			uint64_t next_hash_offset;
			uint64_t head_data_offset;
			uint64_t name_offset;
			uint64_t name_size;
		} field;
		struct {
			uint64_t seqnum;
			uint64_t realtime;
			uint64_t monotonic;
			uint8_t boot_id[16];
			uint64_t xor_hash;
			uint64_t n_items;
		} entry;
		struct {
			uint64_t n_buckets;
		} hash_table;
		struct {
			uint64_t next_entry_array_offset;
			uint64_t capacity;
		} entry_array;
		struct {
			uint64_t seqnum;
			uint64_t epoch;
		} tag;
	};
};

struct jf {
	const uint8_t *map;
	uint64_t size;			/* bytes of the file that can be read */
	uint64_t end;			/* end of the object area */
	bool own_map;			/* unmap at close */
	bool drop_behind;		/* linear walks release pages behind them */
	bool compact, keyed;
	unsigned item_size;		/* ENTRY item: 16 or 4 */
	unsigned array_item_size;	/* ENTRY_ARRAY item: 8 or 4 */
	uint64_t data_payload_start;	/* 64 or 72 */
	uint64_t data_buckets, field_buckets;
	uint64_t max_value;		/* largest decompressed payload accepted */
	struct jf_header h;
	char err[256];			/* last error; names the offset */

	/* Page index: for each JF_INDEX_PAGE page of [0, end), the offset of
	 * the object that covers the page's first byte (0 = the header). */
	uint64_t *page_index;
	uint64_t index_pages;

	/* DATA -> FIELD, sorted by DATA offset; built on first need. */
	struct jf_field_link *field_map;
	uint64_t field_map_len;
	bool field_map_built;
	uint8_t name_buf[256];		/* a compressed DATA's field name */
};

/* Open read-only and check the header; -errno, with jf->err set. */
int jf_open(struct jf *f, const char *path);
/* Same, over a caller's buffer (kept, not copied): for the fuzzer. */
int jf_open_mem(struct jf *f, const void *buf, size_t len);
void jf_close(struct jf *f);

/* The object at OFF, checked against the file bounds, its type's minimum
 * size and, if WANT is not 0, its type. */
int jf_object(struct jf *f, uint64_t off, int want, struct jf_object *o);

/* jf_object() for a pointer read at FROM (described by LINK): an error says
 * where the pointer was as well as what is wrong with its target. */
int jf_follow(struct jf *f, uint64_t from, const char *link, uint64_t off, int want,
	      struct jf_object *o);

/* Every object from the first to tail_object_offset, in file order.
 * CB returns 0 to go on, > 0 to stop early (returned), < 0 on error. */
typedef int (*jf_object_cb)(struct jf *f, const struct jf_object *o, void *ctx);
int jf_walk(struct jf *f, jf_object_cb cb, void *ctx);

/* One linear walk that fills the page index; CB (may be NULL) sees every
 * object on the way, so callers get their own pass for free. */
int jf_build_index(struct jf *f, jf_object_cb cb, void *ctx);
/* Objects overlapping the bytes [a, b); the header is reported as an
 * object of type JF_HEADER at offset 0.  Uses the index if built. */
int jf_objects_in(struct jf *f, uint64_t a, uint64_t b, jf_object_cb cb, void *ctx);

/* ENTRY items and ENTRY_ARRAY items (0 = unused slot). */
uint64_t jf_entry_item(const struct jf *f, const struct jf_object *entry, uint64_t i);
uint64_t jf_entry_item_hash(const struct jf *f, const struct jf_object *entry, uint64_t i);
uint64_t jf_array_item(const struct jf *f, const struct jf_object *array, uint64_t i);
uint64_t jf_item_offset(const struct jf *f, const struct jf_object *o, uint64_t i);

/* Entries of an entry-array chain, in order: CB gets each ENTRY object.
 * At most LIMIT items are visited (0 = no limit). */
int jf_chain_entries(struct jf *f, uint64_t head, uint64_t limit, jf_object_cb cb, void *ctx);
/* All entries of the file, through the global entry array. */
int jf_entries(struct jf *f, jf_object_cb cb, void *ctx);

/* Where ENTRY offset E sits in the chain starting at HEAD. */
struct jf_slot {
	uint64_t array;		/* ENTRY_ARRAY object holding it */
	uint64_t index;		/* item index in that array */
	uint64_t prev_array;	/* the array before it in the chain, 0 if first */
	uint64_t capacity;	/* items the array holds */
	uint64_t array_size;	/* object size */
	unsigned nth_array;	/* position of the array in the chain, from 0 */
};
/* 0 found, 1 not in the chain, < 0 error. */
int jf_chain_find(struct jf *f, uint64_t head, uint64_t e, struct jf_slot *slot);

/* Hash tables: bucket heads/tails, and the object whose next_hash_offset
 * points at TARGET in its bucket's chain (0 when TARGET is the head). */
int jf_bucket(struct jf *f, int table, uint64_t bucket, uint64_t *head, uint64_t *tail);
int jf_hash_prev(struct jf *f, int table, uint64_t hash, uint64_t target, uint64_t *prev);
/* Find the FIELD object named NAME: its offset, or 0 if absent. */
int jf_find_field(struct jf *f, const void *name, size_t len, uint64_t *field);

/* The field name of a DATA object (compressed or not) and of a FIELD
 * object.  The pointer is into the mapping, or into jf->name_buf until the
 * next call; not terminated. */
int jf_data_field(struct jf *f, const struct jf_object *data, const uint8_t **name, size_t *len);
int jf_field_name(struct jf *f, const struct jf_object *field, const uint8_t **name, size_t *len);
/* The uncompressed payload "NAME=value".  *BUF is set to a malloc'd copy
 * for compressed payloads (free it), else left NULL. */
int jf_data_payload(struct jf *f, const struct jf_object *data, const uint8_t **p,
		    uint64_t *len, uint8_t **buf);

/* The file's hash (siphash24 keyed by file_id, or Jenkins lookup3), and the
 * two hashes themselves. */
uint64_t jf_hash(const struct jf *f, const void *p, size_t len);
uint64_t jf_jenkins64(const void *p, size_t len);
uint64_t jf_siphash24(const void *p, size_t len, const uint8_t key[16]);

/* Full consistency check: walk, hashes, hash-table chains, entry chain,
 * entry items.  Counts what it saw; stops at the first error. */
struct jf_check_stats {
	uint64_t objects, by_type[8];
	uint64_t entries, items, compressed, hashes_checked, hashes_skipped;
};
int jf_check(struct jf *f, struct jf_check_stats *st);

/*
 * What journald's append of one entry wrote, where (journal-format.md §4).
 * For the ENTRY at offset E whose predecessor in the file is PREV (0 for
 * the first), CB gets one record per write: header counters, the ENTRY
 * object, per item the DATA object (new value) or its n_entries and
 * entry-array slot (repeated value), hash buckets and chain links, the
 * FIELD object, and the slot in the global entry array.
 */
enum jf_write_owner {
	JF_OWN_FIELD = 0,	/* item index in .item */
	JF_OWN_HEADER,
	JF_OWN_ENTRY,		/* the ENTRY object itself */
	JF_OWN_GLOBAL_ARRAY,	/* the global entry-array chain */
	JF_OWN_TAG,		/* a TAG object (sealed files) */
};
enum jf_write_what {
	JF_W_HEADER,		/* header counters and tail pointers */
	JF_W_ENTRY,		/* the new ENTRY object */
	JF_W_DATA_NEW,		/* a new DATA object */
	JF_W_DATA_FIRST_USE,	/* entry_offset + n_entries of an older, unused DATA */
	JF_W_DATA_COUNT,	/* n_entries (+ compact tail cache) of a reused DATA */
	JF_W_DATA_BUCKET,	/* data hash-table bucket */
	JF_W_DATA_CHAIN,	/* next_hash_offset of the previous DATA in the bucket */
	JF_W_FIELD_NEW,		/* a new FIELD object */
	JF_W_FIELD_HEAD,	/* FIELD.head_data_offset */
	JF_W_FIELD_BUCKET,
	JF_W_FIELD_CHAIN,
	JF_W_ARRAY_NEW,		/* header + first item of a new ENTRY_ARRAY */
	JF_W_ARRAY_SLOT,	/* one item slot of an existing ENTRY_ARRAY */
	JF_W_ARRAY_LINK,	/* the pointer to a new array (previous array or DATA) */
	JF_W_TAG,		/* a TAG object appended before the entry */
	JF_W_HEADER_BOOT_ID,	/* tail_entry_boot_id (254+: JF_TAIL_ENTRY_BOOT_ID) */
	JF_W__MAX,
};
struct jf_write {
	uint64_t offset, len;
	uint64_t object;	/* the object written into (0 = header) */
	enum jf_write_owner owner;
	enum jf_write_what what;
	uint32_t item;		/* ENTRY item index for JF_OWN_FIELD */
	bool new_value;		/* the item's DATA was new with this entry */
	uint64_t array_capacity;	/* JF_W_ARRAY_NEW: items it holds */
};
typedef int (*jf_write_cb)(struct jf *f, const struct jf_write *w, void *ctx);
int jf_entry_writes(struct jf *f, uint64_t e, uint64_t prev, jf_write_cb cb, void *ctx);

const char *jf_type_name(int type);
const char *jf_write_name(enum jf_write_what w);

#endif /* AMPTRACE_JOURNAL_FILE_H */

// SPDX-License-Identifier: GPL-2.0
/* Bills by sender (see by_sender.h). */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "sink/by_sender.h"

#define OWN_LABEL "(amptrace-own)"

const char *entry_sender_row(const struct amp_entry *e, const struct sender *s,
			     char *buf, size_t len)
{
	if (!s)
		return NULL;
	return e->flags & AMP_ENTRY_OWN ? OWN_LABEL : sender_label(s, buf, len);
}

void by_sender_add(struct by_sender *t, const struct amp_entry *e,
		   const struct entry_costs *c, const struct bill *b)
{
	char key[SENDER_UNIT_LEN] = {}, buf[SENDER_UNIT_LEN];
	const char *name = entry_sender_row(e, c->sender, buf, sizeof(buf));
	struct sender_total *row;
	size_t n = t->nr;

	if (!name)
		return;
	snprintf(key, sizeof(key), "%s", name);
	row = amp_row(&t->rows, &t->nr, &t->cap, sizeof(*row), key, sizeof(key));
	if (!row)
		return;
	if (t->nr > n) {
		memcpy(row->comm, c->sender->comm, sizeof(row->comm));
	}
	row->entries++;
	row->bytes += e->bytes > 0 ? e->bytes : 0;
	row->pages += e->pages_dirtied;
	row->ios += e->ios;
	bill_add(&row->bill, b);
}

static int by_bill(const void *a, const void *b)
{
	const struct sender_total *x = a, *y = b;

	return x->bill.total < y->bill.total ? 1 : x->bill.total > y->bill.total ? -1 :
	       strcmp(x->label, y->label);
}

void by_sender_sort(struct by_sender *t)
{
	if (t->nr > 1)
		qsort(t->rows, t->nr, sizeof(*t->rows), by_bill);
}

static double amp_of(__u64 dev, __u64 bytes)
{
	return bytes ? (double)dev / bytes : 0.0;
}

/*
 * The disks' write requests, shared as their bytes are: a sender billed a
 * part of the bytes the disks wrote is given that part of their requests
 * (IOS counts every request that carried its pages, whole).  Disks only,
 * not the layers over them, whose requests are the disks'.
 */
double disk_ios_per_byte(const struct summary *s)
{
	__u64 ios = 0, bytes = 0;

	for (int i = 0; i < s->nr_devs; i++) {
		if (s->devs[i].layer != DEV_DISK)
			continue;
		ios += s->devs[i].st.ios;
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			bytes += s->devs[i].st.bytes[k];
	}
	return bytes ? (double)ios / bytes : 0.0;
}

json_object *by_sender_json(const struct by_sender *t, const struct summary *s)
{
	json_object *a = json_object_new_array();
	double ipb = disk_ios_per_byte(s);

	for (size_t i = 0; i < t->nr; i++) {
		const struct sender_total *r = &t->rows[i];
		json_object *j = json_object_new_object(), *db = json_object_new_object();

		json_object_object_add(j, "sender", json_object_new_string(r->label));
		json_object_object_add(j, "comm", json_object_new_string_len(r->comm,
			strnlen(r->comm, AMP_COMM_LEN)));
		json_object_object_add(j, "entries", json_object_new_uint64(r->entries));
		json_object_object_add(j, "bytes", json_object_new_uint64(r->bytes));
		json_object_object_add(j, "pages_dirtied", json_object_new_uint64(r->pages));
		for (int k = 0; k < NR_BILL; k++)
			json_object_object_add(db, bill_names[k], json_object_new_uint64(r->bill.cost[k]));
		json_object_object_add(j, "dev_bytes", db);
		json_object_object_add(j, "dev_bytes_total", json_object_new_uint64(r->bill.total));
		json_object_object_add(j, "ios", json_object_new_uint64(r->ios));
		json_object_object_add(j, "io_share", json_object_new_double(r->bill.total * ipb));
		json_object_object_add(j, "io_share_per_s", json_object_new_double(
			s->duration_s > 0 ? r->bill.total * ipb / s->duration_s : 0));
		json_object_object_add(j, "amplification",
			json_object_new_double(amp_of(r->bill.total, r->bytes)));
		json_object_array_add(a, j);
	}
	return a;
}

void by_sender_text(const struct by_sender *t, const struct summary *s, FILE *out)
{
	double ipb = disk_ios_per_byte(s), dur = s->duration_s > 0 ? s->duration_s : 1;

	if (!t->nr)
		return;
	fprintf(out, "\nPer sender (the service or process that sent the records; device bytes "
		"charged to their entries;\nIO/S: the disks' write requests shared as their bytes "
		"are, per second):\n%-32s %-15s %8s %10s %8s %10s %10s %10s %10s %6s %7s %8s\n",
		"SENDER", "COMM", "ENTRIES", "BYTES", "PAGES", "DATA", "METADATA", "JOURNAL",
		"WINDOW", "IOS", "IO/S", "AMP");
	for (size_t i = 0; i < t->nr; i++) {
		const struct sender_total *r = &t->rows[i];

		char iops[16] = "-";	/* no disks (explain): no share */

		if (ipb > 0)
			snprintf(iops, sizeof(iops), "%.2f", r->bill.total * ipb / dur);
		fprintf(out, "%-32.32s %-15.15s %8llu %10llu %8llu %10llu %10llu %10llu %10llu %6llu %7s %7.1fx\n",
			r->label, r->comm[0] ? r->comm : "-", (unsigned long long)r->entries,
			(unsigned long long)r->bytes, (unsigned long long)r->pages,
			(unsigned long long)r->bill.cost[BILL_DATA],
			(unsigned long long)r->bill.cost[BILL_METADATA],
			(unsigned long long)r->bill.cost[BILL_JOURNAL],
			(unsigned long long)r->bill.cost[BILL_WINDOW], (unsigned long long)r->ios,
			iops, amp_of(r->bill.total, r->bytes));
	}
}

void by_sender_free(struct by_sender *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

json_object *sender_json(const struct sender *s)
{
	json_object *j = json_object_new_object();

	json_object_object_add(j, "how", json_object_new_string(sender_state_names[s->state]));
	if (s->pid)
		json_object_object_add(j, "pid", json_object_new_int64(s->pid));
	if (s->uid != (__u32)-1)
		json_object_object_add(j, "uid", json_object_new_int64(s->uid));
	if (s->comm[0])
		json_object_object_add(j, "comm", json_object_new_string(s->comm));
	if (s->cgroup[0])
		json_object_object_add(j, "cgroup", json_object_new_string(s->cgroup));
	if (s->unit[0])
		json_object_object_add(j, "unit", json_object_new_string(s->unit));
	if (s->container[0])
		json_object_object_add(j, "container", json_object_new_string(s->container));
	if (s->relay)
		json_object_object_add(j, "relayed_receives", json_object_new_int64(s->relayed));
	return j;
}

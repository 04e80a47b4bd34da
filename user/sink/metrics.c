// SPDX-License-Identifier: GPL-2.0
/*
 * Fleet metrics: cumulative counters, per process and per sender (the
 * service that sent the records: a bounded label set) from the delivered
 * entries, per device from the kernel's class counters and /sys/block,
 * served over HTTP (--metrics ADDR:PORT, libmicrohttpd's own thread) and/or
 * written as a node_exporter textfile (--metrics-file PATH, every second and
 * at exit, atomically: a temporary file renamed over it).
 *
 * HTTP serves OpenMetrics 1.0 (ending in "# EOF") to a client that asks for
 * it, as Prometheus does, and the Prometheus text format 0.0.4 otherwise
 * (curl, promtool); the textfile is always 0.0.4, which node_exporter
 * parses.  The two differ only in counter family names (OpenMetrics drops
 * "_total" from the family, keeps it on the sample) and the EOF line.
 *
 * The main thread updates the counters, the HTTP thread renders them: one
 * mutex around both.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "sink/bill.h"
#include "sink/by_sender.h"
#include "sink/metrics.h"
#include "sys/senders.h"

/* What is counted per process and per sender. */
struct counts {
	__u64 entries, bytes, pages, ios;
	__u64 cost[NR_BILL];	/* charged bytes by class (bill_names) */
	double io_share;	/* the disks' requests, shared as bytes are */
};

struct proc_ctr {
	__u32 pid;		/* first, the row's key */
	char comm[AMP_COMM_LEN];
	struct counts n;
};

/*
 * Per sender: its unit, else its comm.  A counter must never go down, so
 * a sender's label is kept for the run once given: the first max_senders
 * senders seen get their own, later ones are summed into "other".
 */
struct sender_ctr {
	char name[SENDER_UNIT_LEN];	/* first, the row's key */
	struct counts n;
};

struct metrics {
	pthread_mutex_t lock;
	struct MHD_Daemon *httpd;
	int listen_fd;
	const char *file;
	bool file_failed;
	struct proc_ctr *procs;
	size_t nr_procs, cap_procs;
	struct sender_ctr *senders;	/* the last one: "other" */
	size_t nr_senders, cap_senders, max_senders;
	struct summary_dev *devs;	/* as of the last update */
	int nr_devs;
	struct amp_stats losses;
	__u64 entries_timed_out, late_records;
	__u64 clock_steps;	/* the wall clock's, while tracing */
	double ios_per_byte;	/* the disks', at the last update */
};

static const char *const class_names[AMP_NR_CLASSES] = {
	"data", "metadata", "journal", "other", "before_start", "failed",
};

/* Loss counters by name, in struct amp_stats order (NULL: not a loss). */
static const char *const loss_names[] = {
	NULL, "ringbuf_drops", "entries_full", "tasks_full", "commits_full", "pages_full",
	"files_full", "devs_full", "pages_untracked", "pages_cancelled", "jbd2_bios_full",
	"txns_full", "entry_txns_dropped", "page_races", NULL, NULL,
};
_Static_assert(sizeof(loss_names) / sizeof(loss_names[0]) ==
	       sizeof(struct amp_stats) / sizeof(__u64), "a loss counter without a name");

int metrics_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	const char *colon = strrchr(addr, ':');
	char host[128];
	struct addrinfo *res;
	size_t hlen;
	char *end;
	long port;

	if (!colon)
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 0 || port > 65535)
		return -1;
	hlen = colon - addr;
	if (hlen >= sizeof(host))
		return -1;
	memcpy(host, addr, hlen);
	host[hlen] = 0;
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {	/* [::1]:9464 */
		memmove(host, host + 1, hlen - 2);
		host[hlen - 2] = 0;
	} else if (strchr(host, ':')) {
		return -1;	/* IPv6 without brackets: the port is ambiguous */
	}
	if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res))
		return -1;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Label values: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *name, const char *v, size_t max)
{
	fprintf(f, "%s=\"", name);
	for (size_t i = 0; i < max && v[i]; i++) {
		if (v[i] == '\\' || v[i] == '"')
			fputc('\\', f);
		if (v[i] == '\n')
			fputs("\\n", f);
		else
			fputc(v[i], f);
	}
	fputc('"', f);
}

static void family(FILE *f, bool om, const char *name, const char *help)
{
	fprintf(f, "# HELP %s%s %s\n", name, om ? "" : "_total", help);
	fprintf(f, "# TYPE %s%s counter\n", name, om ? "" : "_total");
}

/* A counter family: its name and help, and which of struct counts (a
 * __u64, or a double where real). */
struct counter_def {
	const char *name, *help;
	size_t off;
	bool real;
};

/*
 * A family per def and one for the charged bytes by class, a series per
 * row: rows of `size` bytes with their struct counts at counts_off,
 * labelled by labels() ("{name=\"value\",...", left open).
 */
static void render_rows(FILE *f, bool om, const struct counter_def *defs, size_t ndefs,
			const struct counter_def *charged, const void *rows, size_t nr,
			size_t size, size_t counts_off, void (*labels)(FILE *f, const void *row))
{
	for (size_t k = 0; k < ndefs; k++) {
		family(f, om, defs[k].name, defs[k].help);
		for (size_t i = 0; i < nr; i++) {
			const char *row = (const char *)rows + i * size;

			fprintf(f, "%s_total", defs[k].name);
			labels(f, row);
			if (defs[k].real)
				fprintf(f, "} %.3f\n", *(const double *)(row + counts_off + defs[k].off));
			else
				fprintf(f, "} %llu\n", *(const unsigned long long *)(row + counts_off +
										   defs[k].off));
		}
	}
	family(f, om, charged->name, charged->help);
	for (size_t i = 0; i < nr; i++) {
		const char *row = (const char *)rows + i * size;
		const struct counts *n = (const struct counts *)(row + counts_off);

		for (int c = 0; c < NR_BILL; c++) {
			fprintf(f, "%s_total", charged->name);
			labels(f, row);
			fprintf(f, ",class=\"%s\"} %llu\n", bill_names[c], (unsigned long long)n->cost[c]);
		}
	}
}

static void proc_labels(FILE *f, const void *row)
{
	const struct proc_ctr *p = row;

	fprintf(f, "{pid=\"%u\",", p->pid);
	label(f, "comm", p->comm, AMP_COMM_LEN);
}

static void render_procs(struct metrics *m, FILE *f, bool om)
{
	static const struct counter_def per_proc[] = {
		{ "amptrace_entries", "Logging syscalls traced to completion (entries).",
		  offsetof(struct counts, entries), false },
		{ "amptrace_syscall_bytes", "Bytes the entries' syscalls moved (what was logged).",
		  offsetof(struct counts, bytes), false },
		{ "amptrace_pages_dirtied", "Page cache pages first dirtied by the entries.",
		  offsetof(struct counts, pages), false },
		{ "amptrace_ios", "Block write requests that carried the entries' pages.",
		  offsetof(struct counts, ios), false },
		{ "amptrace_io_share", "The disks' write requests shared as their bytes are: the "
		  "entries' part of them.", offsetof(struct counts, io_share), true },
	};
	static const struct counter_def charged = { "amptrace_charged_bytes",
		"Device bytes charged to the entries, by class: data and metadata of their pages, "
		"their share of fs journal commits, their share of their write-out window.", 0, false };

	render_rows(f, om, per_proc, ARRAY_SIZE(per_proc), &charged, m->procs, m->nr_procs,
		    sizeof(*m->procs), offsetof(struct proc_ctr, n), proc_labels);
}

static void sender_labels(FILE *f, const void *row)
{
	const struct sender_ctr *s = row;

	fputc('{', f);
	label(f, "sender", s->name, sizeof(s->name));
}

static void render_senders(struct metrics *m, FILE *f, bool om)
{
	static const struct counter_def per_sender[] = {
		{ "amptrace_sender_entries", "Entries of the records each sender sent (its "
		  "systemd unit, else its comm; \"other\": past the label cap).",
		  offsetof(struct counts, entries), false },
		{ "amptrace_sender_syscall_bytes", "Bytes of the records each sender sent.",
		  offsetof(struct counts, bytes), false },
		{ "amptrace_sender_ios", "Block write requests that carried pages of each "
		  "sender's entries.", offsetof(struct counts, ios), false },
		{ "amptrace_sender_io_share", "Each sender's part of the disks' write requests, "
		  "shared as their bytes are.", offsetof(struct counts, io_share), true },
	};
	static const struct counter_def charged = { "amptrace_sender_charged_bytes",
		"Device bytes charged to each sender's entries, by class (as amptrace_charged_bytes).", 0,
		false };

	if (m->nr_senders)
		render_rows(f, om, per_sender, ARRAY_SIZE(per_sender), &charged, m->senders,
			    m->nr_senders, sizeof(*m->senders), offsetof(struct sender_ctr, n),
			    sender_labels);
}

static void render_devs(struct metrics *m, FILE *f, bool om)
{
	family(f, om, "amptrace_device_written_bytes",
	       "Bytes written to the device since amptrace started, by class; the classes sum to "
	       "the device counter.");
	for (int i = 0; i < m->nr_devs; i++)
		for (int c = 0; c < AMP_NR_CLASSES; c++) {
			fputs("amptrace_device_written_bytes_total{", f);
			label(f, "device", m->devs[i].name, AMP_DISK_NAME_LEN);
			fprintf(f, ",class=\"%s\"} %llu\n", class_names[c],
				(unsigned long long)m->devs[i].st.bytes[c]);
		}
	family(f, om, "amptrace_device_stat_written_bytes",
	       "Bytes written per the device's own counter (/sys/block/DEV/stat) since amptrace started.");
	for (int i = 0; i < m->nr_devs; i++) {
		if (!m->devs[i].have_counter)
			continue;
		fputs("amptrace_device_stat_written_bytes_total{", f);
		label(f, "device", m->devs[i].name, AMP_DISK_NAME_LEN);
		fprintf(f, "} %llu\n", (unsigned long long)m->devs[i].delta.sectors_written * 512);
	}
	family(f, om, "amptrace_device_ios",
	       "Block write requests with data completed on the device since amptrace started.");
	for (int i = 0; i < m->nr_devs; i++) {
		fputs("amptrace_device_ios_total{", f);
		label(f, "device", m->devs[i].name, AMP_DISK_NAME_LEN);
		fprintf(f, "} %llu\n", (unsigned long long)m->devs[i].st.ios);
	}
}

static void render_losses(struct metrics *m, FILE *f, bool om)
{
	const __u64 *loss = (const __u64 *)&m->losses;

	family(f, om, "amptrace_losses",
	       "Events amptrace could not account for, by kind (a full map, a full ring buffer...).");
	for (size_t i = 1; i < sizeof(loss_names) / sizeof(loss_names[0]); i++)
		if (loss_names[i])
			fprintf(f, "amptrace_losses_total{kind=\"%s\"} %llu\n", loss_names[i],
				(unsigned long long)loss[i]);
	fprintf(f, "amptrace_losses_total{kind=\"entries_timed_out\"} %llu\n",
		(unsigned long long)m->entries_timed_out);
	fprintf(f, "amptrace_losses_total{kind=\"late_records\"} %llu\n",
		(unsigned long long)m->late_records);
	family(f, om, "amptrace_clock_steps",
	       "Steps of the wall clock seen while tracing (entry times follow them).");
	fprintf(f, "amptrace_clock_steps_total %llu\n", (unsigned long long)m->clock_steps);
}

/* The exposition, in a malloc'd buffer; caller holds the lock. */
static char *render(struct metrics *m, bool om, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	render_procs(m, f, om);
	render_senders(m, f, om);
	render_devs(m, f, om);
	render_losses(m, f, om);
	if (om)
		fputs("# EOF\n", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, char *body,
			     size_t len, const char *type, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static char not_found[] = "amptrace: metrics are at /metrics\n";
	static char not_allowed[] = "amptrace: GET only\n";
	struct metrics *m = cls;
	const char *accept;
	size_t len = 0;
	char *body;
	bool om;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed, strlen(not_allowed),
			     "text/plain", MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found, strlen(not_found),
			     "text/plain", MHD_RESPMEM_PERSISTENT);
	accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	om = accept && strstr(accept, "application/openmetrics-text");
	pthread_mutex_lock(&m->lock);
	body = render(m, om, &len);
	pthread_mutex_unlock(&m->lock);
	if (!body)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, body, len,
		     om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
			  "text/plain; version=0.0.4; charset=utf-8",
		     MHD_RESPMEM_MUST_FREE);
}

/* Our own socket, so a bind failure is a plain one-line error. */
static int listen_on(const char *addr)
{
	struct sockaddr_storage ss;
	char host[INET6_ADDRSTRLEN];
	socklen_t len;
	int fd, one = 1;
	unsigned port;

	if (metrics_parse_addr(addr, &ss, &len)) {
		amp_err("invalid --metrics address '%s' (numeric HOST:PORT, e.g. "
			"127.0.0.1:9464 or [::1]:9464)", addr);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		amp_err("cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Port 0 picks a free one: say which. */
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		fprintf(stderr, "%s: metrics at http://[%s]:%u/metrics\n", amp_prog, host, port);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		fprintf(stderr, "%s: metrics at http://%s:%u/metrics\n", amp_prog, host, port);
	}
	return fd;
}

struct metrics *metrics_new(const char *addr, const char *file, unsigned max_senders)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->max_senders = max_senders;
	pthread_mutex_init(&m->lock, NULL);
	m->listen_fd = -1;
	m->file = file;
	if (addr) {
		m->listen_fd = listen_on(addr);
		if (m->listen_fd < 0)
			goto fail;
		m->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
					    on_request, m,
					    MHD_OPTION_LISTEN_SOCKET, m->listen_fd,
					    MHD_OPTION_CONNECTION_TIMEOUT, 10u,
					    MHD_OPTION_END);
		if (!m->httpd) {
			amp_err("cannot start the metrics HTTP server on %s", addr);
			goto fail;
		}
		m->listen_fd = -1;	/* the daemon's now: MHD_stop_daemon() closes it */
	}
	return m;
fail:
	metrics_free(m);
	return NULL;
}

static void counts_add(struct counts *n, const struct amp_entry *e, const struct bill *b,
		       double ios_per_byte)
{
	n->io_share += b->total * ios_per_byte;
	n->entries++;
	n->bytes += e->bytes > 0 ? e->bytes : 0;
	n->pages += e->pages_dirtied;
	n->ios += e->ios;
	for (int k = 0; k < NR_BILL; k++)
		n->cost[k] += b->cost[k];
}

/* The sender's row: its own while under the cap, else "other". */
static struct sender_ctr *sender_row(struct metrics *m, const struct amp_entry *e,
				     const struct entry_costs *c)
{
	char key[SENDER_UNIT_LEN] = {}, buf[SENDER_UNIT_LEN];
	const char *name = entry_sender_row(e, c->sender, buf, sizeof(buf));
	struct sender_ctr *s;

	if (!name)
		return NULL;
	snprintf(key, sizeof(key), "%s", name);
	for (size_t i = 0; i < m->nr_senders; i++)
		if (!strcmp(m->senders[i].name, key))
			return &m->senders[i];
	if (m->nr_senders >= m->max_senders)
		snprintf(key, sizeof(key), "other");
	s = amp_row(&m->senders, &m->nr_senders, &m->cap_senders, sizeof(*s), key, sizeof(key));
	return s;
}

void metrics_entry(struct metrics *m, const struct amp_entry *e, const struct entry_costs *c)
{
	struct bill b = entry_bill(e, c);
	struct sender_ctr *s;
	struct proc_ctr *p;
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->nr_procs;
	p = amp_row(&m->procs, &m->nr_procs, &m->cap_procs, sizeof(*p), &e->pid, sizeof(e->pid));
	if (p && m->nr_procs > n) {
		/* The first name stays: a label that changed would be a new series. */
		memcpy(p->comm, e->comm, AMP_COMM_LEN);
		p->comm[AMP_COMM_LEN - 1] = 0;
	}
	if (p)
		counts_add(&p->n, e, &b, m->ios_per_byte);
	s = sender_row(m, e, c);
	if (s)
		counts_add(&s->n, e, &b, m->ios_per_byte);
	pthread_mutex_unlock(&m->lock);
}

/* tmp + rename: node_exporter never reads a half-written file. */
static int write_file(struct metrics *m)
{
	char tmp[4096];
	size_t len = 0;
	char *body;
	FILE *f;
	int err = -1;

	pthread_mutex_lock(&m->lock);
	body = render(m, false, &len);
	pthread_mutex_unlock(&m->lock);
	if (!body)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", m->file, getpid());
	f = fopen(tmp, "w");
	if (f && fwrite(body, 1, len, f) == len && !fclose(f)) {
		f = NULL;
		if (!rename(tmp, m->file))
			err = 0;
	}
	if (err) {
		if (!m->file_failed)	/* once, not every second */
			amp_err("cannot write metrics file %s: %s", m->file, strerror(errno));
		m->file_failed = true;
		if (f)
			fclose(f);
		unlink(tmp);
	} else {
		m->file_failed = false;
	}
	free(body);
	return err;
}

int metrics_update(struct metrics *m, const struct summary *now)
{
	struct summary_dev *copy = calloc(now->nr_devs ? now->nr_devs : 1, sizeof(*copy));

	pthread_mutex_lock(&m->lock);
	if (copy) {
		memcpy(copy, now->devs, now->nr_devs * sizeof(*copy));
		free(m->devs);
		m->devs = copy;
		m->nr_devs = now->nr_devs;
	}
	m->losses = now->losses;
	m->ios_per_byte = disk_ios_per_byte(now);
	m->entries_timed_out = now->entries_timed_out;
	m->clock_steps = now->clock ? now->clock->nr_steps : 0;
	m->late_records = now->late_records;
	pthread_mutex_unlock(&m->lock);
	return m->file ? write_file(m) : 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	if (m->httpd)
		MHD_stop_daemon(m->httpd);
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	pthread_mutex_destroy(&m->lock);
	free(m->procs);
	free(m->senders);
	free(m->devs);
	free(m);
}

static void sink_entry_cb(void *self, const struct amp_entry *e, const struct entry_costs *c)
{
	metrics_entry(self, e, c);
}

static int sink_summary_cb(void *self, const struct summary *s, bool final)
{
	return metrics_update(self, s) ? -1 : 0;
}

static int sink_close_cb(void *self, bool ok)
{
	metrics_free(self);
	return 0;
}

/* From the start: the endpoint has devices at once. */
struct sink metrics_sink(struct metrics *m, double period)
{
	static const struct sink_ops ops = {
		.entry = sink_entry_cb, .summary = sink_summary_cb, .close = sink_close_cb,
	};

	return (struct sink){ .ops = &ops, .self = m, .period = period, .at_start = true };
}

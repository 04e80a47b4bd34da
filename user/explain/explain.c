// SPDX-License-Identifier: GPL-2.0
/* The journal files explain reads: see explain.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "util.h"
#include "explain/explain.h"

int explain_add_file(struct explain_opts *opt, const char *path)
{
	struct xfile *f = realloc(opt->files, (opt->nr_files + 1) * sizeof(*f));

	if (!f)
		return -1;
	opt->files = f;
	f = &opt->files[opt->nr_files++];
	memset(f, 0, sizeof(*f));
	f->path = path;
	f->base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	return 0;
}

int xfile_error(struct xfile *x, int err)
{
	amp_err("%s: %s", x->path, x->jf.err[0] ? x->jf.err : strerror(-err));
	return err;
}

int explain_open(struct explain_opts *opt, double *t_open)
{
	for (int i = 0; i < opt->nr_files; i++) {
		struct xfile *x = &opt->files[i];
		double t0 = now_s();
		struct stat st;
		int r = jf_open(&x->jf, x->path);

		if (r)
			return xfile_error(x, r);
		if (t_open)
			t_open[i] = now_s() - t0;
		/* st_dev is what the trace has (on btrfs the subvolume's
		 * device: inode_dev() in compat.bpf.h). */
		if (stat(x->path, &st) == 0) {
			x->dev_major = major(st.st_dev);
			x->dev_minor = minor(st.st_dev);
			x->ino = st.st_ino;
		}
	}
	return 0;
}

void explain_close(struct explain_opts *opt)
{
	for (int i = 0; i < opt->nr_files; i++)
		jf_close(&opt->files[i].jf);
	free(opt->files);
	free(opt->ids);
	opt->files = NULL;
	opt->ids = NULL;
	opt->nr_files = opt->nr_ids = 0;
}

int explain_file_of(const struct explain_opts *opt, unsigned maj, unsigned min, uint64_t ino,
		    const char *path)
{
	for (int i = 0; i < opt->nr_files; i++) {
		const struct xfile *x = &opt->files[i];
		char real[PATH_MAX];

		if (x->ino == ino && x->dev_major == maj && x->dev_minor == min)
			return i;
		if (path && (!strcmp(path, x->path) ||
			     (realpath(x->path, real) && !strcmp(path, real))))
			return i;
	}
	return -1;
}

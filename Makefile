# amptrace build.  Objects go to $(OUTPUT); `make V=1` shows full commands.
HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
	-e 's/ppc64le/powerpc/' -e 's/s390x/s390/' -e 's/riscv64/riscv/')
ARCH ?= $(HOST_ARCH)
ifeq ($(ARCH),$(HOST_ARCH))
OUTPUT ?= build
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
PKG_CONFIG ?= pkg-config
else
# Cross-built (`make ARCH=arm64`): Debian's cross compiler, the :ARCH
# libraries' pkg-config files (dpkg --add-architecture; scripts/deps.sh
# --cross ARCH installs them), objects and binary in build-ARCH/, and the
# BPF object from that architecture's kernel BTF, taken from Debian's
# kernel packages (scripts/kernel-btf.sh): struct layouts, pt_regs and
# syscall numbers are the target's, never this host's.
TRIPLET_arm64 := aarch64-linux-gnu
TRIPLET := $(or $(TRIPLET_$(ARCH)),$(error ARCH=$(ARCH): only arm64 is cross-built))
CROSS_COMPILE ?= $(TRIPLET)-
CC := $(CROSS_COMPILE)gcc
OUTPUT ?= build-$(ARCH)
BIN ?= $(OUTPUT)/amptrace
PKG_CONFIG ?= PKG_CONFIG_LIBDIR=/usr/lib/$(TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
endif
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool

CFLAGS ?= -O2 -g
# -Iuser: user/ includes name their folder ("sink/report.h", "sys/paths.h").
CFLAGS += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -I$(OUTPUT) -Ibpf -Iuser $(EXTRA_CFLAGS)
LDLIBS += $(shell $(PKG_CONFIG) --libs libbpf json-c 2>/dev/null || echo -lbpf -ljson-c) -lelf -lz
# Mount points of the paths the kernel side records (user/sys/mounts.c).
CFLAGS += $(shell $(PKG_CONFIG) --cflags mount)
LDLIBS += $(shell $(PKG_CONFIG) --libs mount)
# The metrics endpoint (user/sink/metrics.c) serves HTTP from its own thread.
LDLIBS += $(shell $(PKG_CONFIG) --libs libmicrohttpd) -lpthread
# EXTRA_BPF_CFLAGS: -D switches for experiment builds of the BPF side
# (scripts/bench/README.md, "cumulative cuts").
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf \
	-Wall -Wno-unused-function $(EXTRA_BPF_CFLAGS)

BIN ?= amptrace
# scripts/version.sh: git describe in a checkout, the VERSION file in a tarball.
AMP_VERSION ?= $(shell scripts/version.sh)
# user/ and its folders (user/README.md): one object folder each.
USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_OBJS := $(USER_SRCS:%.c=$(OUTPUT)/%.o)
TEST_BINS := $(OUTPUT)/tests/synth_writer $(OUTPUT)/tests/append_writer $(OUTPUT)/tests/bench_writer
# libFuzzer target for the journal reader: its own files only (no BPF, no
# main.c, no json-c: not the display or export helpers beside it).
FUZZ_SRCS := tests/fuzz_journal.c $(addprefix user/journal/,journal_file.c journal_hash.c \
	journal_check.c journal_writes.c)
FUZZER := $(OUTPUT)/tests/fuzz_journal
FUZZ_SECONDS ?= 600

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean deps test test-stacks test-journald-next test-asan test-arm64 demo bench soak-faults fuzz FORCE install uninstall deb package-bins

all: $(BIN) $(TEST_BINS)

$(OUTPUT) $(OUTPUT)/tests:
	$(Q)mkdir -p $@

ifeq ($(ARCH),$(HOST_ARCH))
$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@
else
# Another architecture's kernel and module types, from Debian's packages.
$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)scripts/kernel-btf.sh $(ARCH) $(OUTPUT)
endif

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# Rewritten only when the version changes, so a build is not redone for it.
$(OUTPUT)/version.h: FORCE | $(OUTPUT)
	$(Q)v='#define AMP_VERSION "$(AMP_VERSION)"'; \
		[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
$(OUTPUT)/user/cli/version.o: $(OUTPUT)/version.h

# The skeleton must exist before the first compile; after that the -MMD
# files say which objects include it (the tracer), and only those follow it.
$(OUTPUT)/user/%.o: user/%.c | $(OUTPUT)/amptrace.skel.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BIN): $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tests/%: tests/%.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< -o $@

$(FUZZER): $(FUZZ_SRCS) $(wildcard user/journal/*.h) | $(OUTPUT)/tests
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Iuser -Iuser/journal -Wall -Wextra \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(FUZZ_SRCS) -o $@

deps:
	scripts/deps.sh

test: all
	tests/run.sh

# The stacked-storage matrix (t42: partitions, LVM, LUKS, RAID1, NVMe and
# SD partitions, journald on LUKS on LVM) in three guests: Debian 12's 6.1
# (t95, also in `make test`), Ubuntu 22.04's 5.15 (t96) and Debian 13's
# 6.12, ~18, ~20 and ~20 min emulated; then compare --stack's larger
# matrix (t43: ext4 and xfs, five stacks, journald and append; ~8 min).
test-stacks: all
	AMPTRACE_QEMU_TESTS=t42 tests/run.sh t95 t96
	AMP_T43_FS=ext4,xfs AMP_T43_STACKS=plain,lvm,crypt,raid1,lvm+crypt \
		AMP_T43_TARGETS=journald,append AMPTRACE_QEMU_TIMEOUT=1700 \
		scripts/qemu-kernel-test.sh t43_compare_stack
	AMPTRACE_QEMU_SUITE=trixie AMPTRACE_QEMU_TIMEOUT=1700 \
		scripts/qemu-kernel-test.sh t42_stacked_storage
	AMP_T97_CASES=lvmluks tests/run.sh t97

# arm64 (t88): the core tests, the filesystems' by-cause shares (t35) and
# senders (t31) in Debian 12's arm64 kernel and tree, then journald 257 in
# Debian 13's (6.12), each emulated (~25 and ~15 min here).
test-arm64:
	scripts/deps.sh --cross arm64
	$(MAKE) ARCH=arm64 all
	AMP_T88_TESTS="t10 t20 t24 t30 t31 t35 t40 t44 t46 t50 t60" AMP_T88_TIMEOUT=3600 tests/run.sh t88
	AMPTRACE_QEMU_SUITE=trixie AMP_T88_TESTS="t20 t30 t35 t40 t44 t46" AMP_T88_TIMEOUT=3000 tests/run.sh t88

# The journald tests against Debian testing's journald (forky: 262 in
# November 2026), in a chroot like 257's; the tree is made once and cached.
test-journald-next: all
	AMP_JOURNALD=forky tests/run.sh t30_journald t31_senders t35_fs_overhead \
		t70_journal_reader t71_explain

# The loader and the test writers with ASan+UBSan, run through the same
# tests (TESTS="t20_synth_pages.sh ..." for a subset).
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
test-asan:
	$(MAKE) OUTPUT=build-asan BIN=build-asan/amptrace EXTRA_CFLAGS="$(ASAN_FLAGS)" \
		build-asan/amptrace build-asan/tests/synth_writer
	AMPTRACE=$(CURDIR)/build-asan/amptrace SYNTH_WRITER=$(CURDIR)/build-asan/tests/synth_writer \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		tests/run.sh $(TESTS)

# `make test` fuzzes the journal reader for a few seconds (t72); this for longer.
fuzz: $(FUZZER)
	AMP_FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run.sh t72_journal_fuzz.sh

demo: deps all
	scripts/demo.sh

# Overhead figures against issue #7's targets (~15 min; BENCH_ARGS=--quick: ~3).
bench: all
	scripts/deps.sh --bench
	scripts/bench.sh $(BENCH_ARGS)

# A 30-min soak of journald traced as the exporter runs, with a fault every
# 3 min: a stalled tracer, rotation, vacuum, a journald restart, failing
# writes (SOAK_ARGS: scripts/bench/fault_soak.sh's options).
soak-faults: all
	scripts/deps.sh --bench
	scripts/bench/fault_soak.sh $(SOAK_ARGS)

# make install [PREFIX=/usr/local] [DESTDIR=]: what a host needs to run
# amptrace, nothing of the tests.  `amptrace compare` finds its driver and
# writer in PREFIX/lib/amptrace from the binary's own folder, so a binary
# built once installs under any PREFIX.  /etc/default keeps a file it has
# (edited by the admin); uninstall removes it only if unchanged.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
BINDIR := $(PREFIX)/bin
PKGLIBDIR := $(PREFIX)/lib/amptrace
MANDIR ?= $(PREFIX)/share/man
DATADIR := $(PREFIX)/share/amptrace
DOCDIR ?= $(PREFIX)/share/doc/amptrace
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MANPAGES := $(wildcard scripts/man/*.8)
EXAMPLES := scripts/dist/prometheus/prometheus-scrape.yml
# compare's driver: the entry point and its package (scripts/amptrace_compare).
COMPARE_PKG := $(wildcard scripts/amptrace_compare/*.py)
INSTALLED := $(BINDIR)/amptrace $(PKGLIBDIR)/amptrace-compare $(PKGLIBDIR)/append_writer \
	$(COMPARE_PKG:scripts/%=$(PKGLIBDIR)/%) \
	$(MANPAGES:scripts/man/%=$(MANDIR)/man8/%) $(BASHCOMPDIR)/amptrace \
	$(SYSTEMDUNITDIR)/amptrace-exporter.service $(DATADIR)/prometheus/amptrace.rules.yml \
	$(EXAMPLES:scripts/dist/prometheus/%=$(DOCDIR)/examples/%)

install: $(BIN) $(OUTPUT)/tests/append_writer
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR)/amptrace_compare $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(DATADIR)/prometheus \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSCONFDIR)/default
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/amptrace
	install -m 0755 scripts/amptrace-compare $(OUTPUT)/tests/append_writer $(DESTDIR)$(PKGLIBDIR)/
	install -m 0644 $(COMPARE_PKG) $(DESTDIR)$(PKGLIBDIR)/amptrace_compare/
	install -m 0644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 scripts/dist/bash-completion/amptrace $(DESTDIR)$(BASHCOMPDIR)/amptrace
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		scripts/dist/systemd/amptrace-exporter.service.in >$(DESTDIR)$(SYSTEMDUNITDIR)/amptrace-exporter.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/amptrace-exporter.service
	install -m 0644 scripts/dist/prometheus/amptrace.rules.yml $(DESTDIR)$(DATADIR)/prometheus/
	install -m 0644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/amptrace-exporter ] || \
		install -m 0644 scripts/dist/default/amptrace-exporter $(DESTDIR)$(SYSCONFDIR)/default/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	if cmp -s scripts/dist/default/amptrace-exporter $(DESTDIR)$(SYSCONFDIR)/default/amptrace-exporter; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/default/amptrace-exporter; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/default/amptrace-exporter ]; then \
		echo "uninstall: $(DESTDIR)$(SYSCONFDIR)/default/amptrace-exporter was changed: kept"; fi
	-rmdir $(DESTDIR)$(PKGLIBDIR)/amptrace_compare $(DESTDIR)$(PKGLIBDIR) \
		$(DESTDIR)$(DATADIR)/prometheus $(DESTDIR)$(DATADIR) \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null

# amptrace_VERSION_ARCH.deb in $(OUTPUT), built by dpkg-buildpackage from a
# copy of this tree (scripts/debian), and checked by lintian.  ARCH=arm64:
# cross-built, amptrace_VERSION_arm64.deb in build-arm64.
deb:
ifeq ($(ARCH),$(HOST_ARCH))
	scripts/deps.sh --package
	scripts/build-deb.sh $(OUTPUT)
else
	scripts/deps.sh --cross $(ARCH)
	DEB_ARCH=$(ARCH) scripts/build-deb.sh $(OUTPUT)
endif

# What the package installs: the loader and the one writer compare runs.
package-bins: $(BIN) $(OUTPUT)/tests/append_writer

clean:
	$(Q)rm -rf $(OUTPUT) build-asan build-arm64 amptrace

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/user/*.d $(OUTPUT)/user/*/*.d)

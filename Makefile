# amptrace build.  Objects go to $(OUTPUT); `make V=1` shows full commands.
OUTPUT ?= build
CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
	-e 's/ppc64le/powerpc/' -e 's/s390x/s390/' -e 's/riscv64/riscv/')

CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -I$(OUTPUT) -Ibpf -Iuser
LDLIBS += $(shell pkg-config --libs libbpf json-c 2>/dev/null || echo -lbpf -ljson-c) -lelf -lz
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf \
	-Wall -Wno-unused-function

USER_SRCS := $(wildcard user/*.c)
USER_OBJS := $(USER_SRCS:%.c=$(OUTPUT)/%.o)
TEST_BINS := $(OUTPUT)/tests/synth_writer $(OUTPUT)/tests/append_writer $(OUTPUT)/tests/bench_writer

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean deps test demo bench

all: amptrace $(TEST_BINS)

$(OUTPUT) $(OUTPUT)/user $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

$(OUTPUT)/user/%.o: user/%.c $(OUTPUT)/amptrace.skel.h | $(OUTPUT)/user
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

amptrace: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tests/%: tests/%.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@

deps:
	scripts/deps.sh

test: all
	tests/run.sh

demo: deps all
	scripts/demo.sh

clean:
	$(Q)rm -rf $(OUTPUT) amptrace

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/user/*.d)

# gpuwhy: GNU Make, no configure step.
#   make            gpuwhy and (where CUPTI is found) libgpuwhy-inject.so
#   make check      every test; ends with "N passed, N failed"
#   make asan       the test suite under AddressSanitizer + UBSan
#   make ubsan-clang the test suite under clang's UBSan
#   make fuzz       libFuzzer on the recording reader and the report (clang)
#   make fuzz-long  SECONDS=3600: clang's libFuzzer and a gcc-sanitized build at once
#   make demo       the main job on a bundled default (see README)
#   make install    PREFIX=/usr/local

VERSION   := 0.1.0
CC        ?= gcc
PREFIX    ?= /usr/local
CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
BIN       ?= .
OPT       ?= -O2
CFLAGS    ?=
WERROR    ?=
SAN       ?=

BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra $(WERROR) $(SAN) \
	-Wno-format-truncation -Wno-unknown-warning-option \
	-DGPUWHY_VERSION='"$(VERSION)"' $(CFLAGS)

ZLIB      ?= -lz
# libdeflate (Debian's libdeflate-dev), where installed: the report inflates
# recordings with it and runs about 1.2x faster (bench/inflate_compare.sh).
# The injection library always uses zlib alone.
DEFLATE_H ?= $(wildcard /usr/include/libdeflate.h)
ifneq ($(DEFLATE_H),)
READER_DEFS := -DGW_HAVE_LIBDEFLATE
DEFLATE   := -ldeflate
endif
# libiberty (Debian's libiberty-dev), where installed: kernel names are
# demangled with it (src/util/kname.c); without it they are shortened from
# the mangled form as far as it can be read, and shown as recorded otherwise.
IBERTY_H  ?= $(wildcard /usr/include/libiberty/demangle.h)
ifneq ($(IBERTY_H),)
READER_DEFS += -DGW_HAVE_LIBIBERTY
IBERTY    := -liberty
endif
LDLIBS    ?= $(ZLIB) $(DEFLATE) $(IBERTY) -lm -lpthread -ldl

# CUPTI: headers and library wherever the toolkit keeps them.
CUPTI_H   := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h \
	$(CUDA_HOME)/targets/x86_64-linux/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h))
CUPTI_INC := $(dir $(CUPTI_H))
CUDA_INC  := $(dir $(firstword $(wildcard $(CUDA_HOME)/include/cuda.h \
	$(CUDA_HOME)/targets/x86_64-linux/include/cuda.h)))
CUPTI_SO  := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
	$(CUDA_HOME)/targets/x86_64-linux/lib/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so \
	$(CUDA_HOME)/lib64/libcupti.so.* $(CUDA_HOME)/targets/x86_64-linux/lib/libcupti.so.*))
CUPTI_LIB := $(if $(CUPTI_SO),$(realpath $(CUPTI_SO)))

FORMAT_SRC  := $(wildcard src/format/*.c)
CORE_SRC    := $(filter-out src/main.c,$(wildcard src/*.c src/util/*.c src/record/*.c \
	src/gpu/*.c src/pystack/*.c src/analyze/*.c src/analyze/rules/*.c src/report/*.c src/check/*.c src/cmd/*.c)) \
	$(FORMAT_SRC)
CORE_OBJ    := $(CORE_SRC:%.c=$(BUILD)/%.o)
INJECT      := $(BIN)/libgpuwhy-inject.so
GPUWHY      := $(BIN)/gpuwhy
TEST_SRC    := $(wildcard tests/unit/*.c)
TEST_BIN    := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)

ifneq ($(and $(CUPTI_H),$(CUPTI_SO)),)
ALL_TARGETS := $(GPUWHY) $(INJECT)
else
ALL_TARGETS := $(GPUWHY)
endif

all: $(ALL_TARGETS)
ifeq ($(and $(CUPTI_H),$(CUPTI_SO)),)
	@echo "note: no CUPTI headers under $(CUDA_HOME)/include: $(INJECT) not built;"
	@echo "      gpuwhy will record NVML and host data only (set CUDA_HOME to your CUDA toolkit)"
endif

# Quiet by default (perf-style); make V=1 shows the commands.
ifeq ($(V),1)
Q :=
else
Q := @
endif

$(BUILD)/%.o: %.c $(wildcard src/*/*.h src/*.h src/analyze/rules/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(BASE_CFLAGS) $(READER_DEFS) -DGW_CUPTI_LIB='"$(CUPTI_LIB)"' -c $< -o $@

$(GPUWHY): $(BUILD)/src/main.o $(CORE_OBJ)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(BASE_CFLAGS) -o $@ $^ $(LDLIBS)

# The injection library: CUPTI, zlib (for CRCs) and libc only; exports InitializeInjection alone.
$(INJECT): inject/inject.c $(FORMAT_SRC) src/format/format.h src/format/intern.h inject/inject.map \
		src/format/contract.h \
		src/pystack/pystack.c src/pystack/pystack.h
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -fvisibility=hidden -I$(CUPTI_INC) -I$(CUDA_INC) \
		-Wl,--version-script=inject/inject.map -o $@ inject/inject.c $(FORMAT_SRC) src/pystack/pystack.c \
		$(CUPTI_SO) -Wl,-rpath,$(dir $(CUPTI_LIB)) $(ZLIB) -lpthread

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJ) tests/unit/t.h tests/unit/synth.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Isrc -o $@ $< $(CORE_OBJ) $(LDLIBS)

# The Python stack reader's in-process path, loaded by a test's Python with
# ctypes (without sanitizers: their runtime cannot load into python).
$(BUILD)/tests/pystack_self.so: tests/pystack/selfread.c src/pystack/pystack.c src/pystack/pystack.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out $(SAN),$(BASE_CFLAGS)) -fPIC -shared -fvisibility=hidden -o $@ tests/pystack/selfread.c src/pystack/pystack.c

$(BUILD)/tests/failwrite.so: tests/faults/failwrite.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -fPIC -shared -o $@ $< -ldl

$(BUILD)/tests/failmalloc.so: tests/faults/failmalloc.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -fPIC -shared -o $@ $< -ldl

$(BUILD)/faults/injhost: tests/faults/injhost.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -o $@ $< -ldl

$(BUILD)/faults/fakecuda/libcuda.so.1: tests/faults/fakecuda.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -fPIC -shared -o $@ $<

check: all $(TEST_BIN) $(BUILD)/tests/failwrite.so $(BUILD)/tests/failmalloc.so $(BUILD)/tests/pystack_self.so $(BUILD)/faults/injhost $(BUILD)/faults/fakecuda/libcuda.so.1
	@BUILD=$(BUILD) FAILWRITE=$(abspath $(BUILD)/tests/failwrite.so) GPUWHY=$(abspath $(GPUWHY)) INJECT_LIB=$(abspath $(INJECT)) INJHOST=$(abspath $(BUILD)/faults/injhost) FAKECUDA=$(abspath $(BUILD)/faults/fakecuda) ./tests/run-tests.sh

asan:
	$(MAKE) BUILD=build-asan BIN=build-asan OPT=-O1 \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" check

# The test suite built by clang with its UBSan, whose checks differ from
# gcc's (pointer arithmetic on NULL, for one); every finding is fatal. The
# runtime is shared, so that the injection library finds it in any program.
UBSAN_RT := $(dir $(shell clang -print-file-name=libclang_rt.ubsan_standalone-x86_64.so 2>/dev/null))
ubsan-clang:
	$(MAKE) CC=clang BUILD=build-ubsan BIN=build-ubsan OPT=-O1 \
		SAN="-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -shared-libsan -Wl,-rpath,$(UBSAN_RT) -Wno-unused-command-line-argument" check

# Fuzzing (clang's libFuzzer): the reader and the report; CRCs off so that
# mutations reach the decoders. Every sanitizer finding is fatal.
FUZZ_SRC := $(filter-out src/record/% src/cmd/% src/check/% src/gpu/%,$(CORE_SRC))
FUZZ_SAN := -fno-sanitize-recover=all -fno-omit-frame-pointer
build-fuzz/fuzz_report: tests/fuzz/fuzz_report.c $(FUZZ_SRC)
	@mkdir -p build-fuzz
	clang -std=c11 -D_GNU_SOURCE -DGW_FUZZING -DGPUWHY_VERSION='"$(VERSION)"' -g -O1 \
		-fsanitize=fuzzer,address,undefined $(FUZZ_SAN) $(READER_DEFS) -Isrc -o $@ $^ -lz $(DEFLATE) $(IBERTY) -lm
# The same target under gcc's sanitizers, fed by a mutation driver (gcc has
# no libFuzzer): tests/fuzz/mutate.c.
build-fuzz/fuzz_report_gcc: tests/fuzz/fuzz_report.c tests/fuzz/mutate.c $(FUZZ_SRC)
	@mkdir -p build-fuzz
	gcc -std=c11 -D_GNU_SOURCE -DGW_FUZZING -DGPUWHY_VERSION='"$(VERSION)"' -g -O1 \
		-fsanitize=address,undefined $(FUZZ_SAN) $(READER_DEFS) -Isrc -o $@ $^ -lz $(DEFLATE) $(IBERTY) -lm
build-fuzz/recompress: tests/fuzz/recompress.c $(FORMAT_SRC)
	@mkdir -p build-fuzz
	$(CC) -std=c11 -D_GNU_SOURCE -O1 $(READER_DEFS) -Isrc -o $@ $^ -lz $(DEFLATE)

fuzz: build-fuzz/fuzz_report build-fuzz/recompress
	./tests/fuzz/run.sh build-fuzz/fuzz_report $${FUZZ_SECONDS:-60}

# Both builds' fuzzers at once for SECONDS (default an hour): one summary line.
fuzz-long: build-fuzz/fuzz_report build-fuzz/fuzz_report_gcc build-fuzz/recompress
	./tests/fuzz/long.sh $(or $(SECONDS),3600)

# The main job on a bundled default: with a GPU and PyTorch, record and
# diagnose the article's case study; without, diagnose its real recording.
demo: all
	@if nvidia-smi >/dev/null 2>&1 && python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then \
		echo "GPU found: recording workloads/case_study.py"; \
		$(GPUWHY) run -o gpuwhy-demo-$$$$.gwr -- python3 workloads/case_study.py; \
	else \
		echo "No GPU here: diagnosing a real H200 recording (tests/fixtures/case_study.gwr)"; \
		$(GPUWHY) report tests/fixtures/case_study.gwr; \
	fi

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/gpuwhy $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(GPUWHY) $(DESTDIR)$(PREFIX)/bin/gpuwhy
	[ ! -f $(INJECT) ] || install -m 755 $(INJECT) $(DESTDIR)$(PREFIX)/lib/gpuwhy/$(notdir $(INJECT))
	install -m 644 docs/gpuwhy.1 $(DESTDIR)$(PREFIX)/share/man/man1/gpuwhy.1

clean:
	rm -rf build build-asan build-ubsan build-fuzz gpuwhy libgpuwhy-inject.so

.PHONY: all check asan ubsan-clang fuzz fuzz-long demo install clean
.DELETE_ON_ERROR:

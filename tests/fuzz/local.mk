# libFuzzer targets: configure a separate tree with `CC=clang --enable-fuzzing`, then `make fuzz`.
# Each fragment after this one (sigv4.mk, router.mk, xks.mk, ...) adds its program to
# FUZZ_TARGETS and defines it inside `if FUZZING`, linked with $(FUZZ_LDFLAGS) (set by configure:
# libFuzzer's main plus the sanitizers). Its seeds live in tests/fuzz/corpus/<name without fuzz->/.
#   FUZZ_TARGETS += tests/fuzz/fuzz-x
#   if FUZZING
#   tests_fuzz_fuzz_x_SOURCES = tests/fuzz/fuzz-x.c
#   tests_fuzz_fuzz_x_LDADD = <what it drives>
#   tests_fuzz_fuzz_x_LDFLAGS = $(FUZZ_LDFLAGS)
#   endif
#   EXTRA_DIST += tests/fuzz/corpus/x
FUZZ_TARGETS =
# Seconds per target; extra libFuzzer flags (e.g. FUZZ_FLAGS=-jobs=2) go in FUZZ_FLAGS.
FUZZ_SECONDS = 60
FUZZ_FLAGS =
EXTRA_DIST += tests/fuzz/README.md

if FUZZING
noinst_PROGRAMS += $(FUZZ_TARGETS)

# Runs every target for FUZZ_SECONDS on a corpus in the build tree (tests/fuzz/run/<name>/corpus,
# seeded from the source tree and kept between runs), then prints its executions and crashes.
# A crash, leak, timeout or out-of-memory input fails the make and its file is named.
fuzz: $(FUZZ_TARGETS)
	@status=0; \
	for t in $(FUZZ_TARGETS); do \
	  name=$${t##*/}; unit=$${name#fuzz-}; run=tests/fuzz/run/$$unit; \
	  mkdir -p $$run/corpus $$run/artifacts || exit 1; \
	  rm -f $$run/artifacts/*; \
	  if [ -d "$(srcdir)/tests/fuzz/corpus/$$unit" ]; then \
	    cp -f "$(srcdir)/tests/fuzz/corpus/$$unit"/* $$run/corpus/ 2>/dev/null; \
	  fi; \
	  echo "  FUZZ     $$name for $(FUZZ_SECONDS) s (log: $$run/fuzz.log)"; \
	  ./$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$$run/artifacts/ $(FUZZ_FLAGS) $$run/corpus >$$run/fuzz.log 2>&1; \
	  rc=$$?; \
	  execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$run/fuzz.log | tail -n 1); \
	  crashes=$$(ls $$run/artifacts | grep -cE '^(crash|leak|timeout|oom)-'); \
	  echo "$$name: $${execs:-0} executions, $$crashes crashes, corpus $$(ls $$run/corpus | wc -l) inputs"; \
	  if [ $$rc -ne 0 ] || [ $$crashes -ne 0 ]; then \
	    status=1; \
	    tail -n 40 $$run/fuzz.log; \
	    for f in $$run/artifacts/*; do \
	      [ -e "$$f" ] && echo "$$name: crash file: $$(pwd)/$$f (replay: ./$$t $$f)"; \
	    done; \
	    [ $$crashes -ne 0 ] || echo "$$name: exited with status $$rc"; \
	  fi; \
	done; \
	exit $$status
else
fuzz:
	@echo "make fuzz: this tree was configured without --enable-fuzzing, so no fuzz target is built." >&2; \
	echo "  Build them in a tree of their own (clang and its libFuzzer runtime are needed):" >&2; \
	echo "    mkdir ../build-fuzz && cd ../build-fuzz" >&2; \
	echo "    $(abs_top_srcdir)/configure CC=clang --enable-fuzzing && make fuzz FUZZ_SECONDS=60" >&2; \
	exit 1
endif

fuzz-clean:
	-rm -rf tests/fuzz/run

.PHONY: fuzz fuzz-clean

# hf-fault-shim: a PKCS#11 module that wraps another and adds faults (latency, random
# CKR_DEVICE_ERROR, a dead switch), for HSM pool tests (tests/shim/README.md). Built for
# `make check` only, never installed.
check_LTLIBRARIES += tests/shim/hf-fault-shim.la
tests_shim_hf_fault_shim_la_SOURCES = tests/shim/hf-fault-shim.c
tests_shim_hf_fault_shim_la_CPPFLAGS = $(AM_CPPFLAGS) $(INIH_CFLAGS)
# -rpath: libtool builds a shared module only for an installable path; this one never is.
tests_shim_hf_fault_shim_la_LDFLAGS = -module -rpath /nowhere -avoid-version -shared
tests_shim_hf_fault_shim_la_LIBADD = $(INIH_LIBS) $(PTHREAD_LIBS) $(LIBS)

# Two shim copies over SoftHSMv2 and over p11-kit server + p11-kit-client.so, with pkcs11-tool.
TESTS += tests/integration/fault-shim.sh
EXTRA_DIST += tests/integration/fault-shim.sh tests/integration/shim-lib.sh tests/shim/README.md

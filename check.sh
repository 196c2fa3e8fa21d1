#!/bin/sh
# README command 2: installs what is missing, builds everything and runs the whole test suite.
#   ./check.sh                  build in ./build and run `make check`
#   ./check.sh --sanitizers     the same under ASan+UBSan (in ./build-asan)
#   ./check.sh --valgrind       the CUnit suites under valgrind memcheck
#   ./check.sh --helgrind       the CUnit suites under helgrind only
#   ./check.sh --distcheck      the suite in the release tarball (`make distcheck`) instead of the
#                               tree; with --sanitizers, that tarball is built under ASan+UBSan
set -e
cd "$(dirname "$0")"
top=$(pwd)
. ./deps.sh
hf_install_deps

builddir=build
configure_flags="--enable-werror"
target=check
distcheck=no
for arg in "$@"; do
    case "$arg" in
    --sanitizers) builddir=build-asan; configure_flags="$configure_flags --enable-sanitizers" ;;
    --valgrind) builddir=build-valgrind; configure_flags="$configure_flags --enable-valgrind"; target=check-valgrind-memcheck ;;
    --helgrind) builddir=build-valgrind; configure_flags="$configure_flags --enable-valgrind"; target=check-valgrind-helgrind ;;
    --distcheck) distcheck=yes ;;
    *) echo "usage: $0 [--sanitizers|--valgrind|--helgrind] [--distcheck]" >&2; exit 2 ;;
    esac
done
if [ "$distcheck" = yes ] && [ "$target" != check ]; then
    echo "$0: --distcheck runs make check in the tarball; valgrind's targets are not part of it" >&2
    exit 2
fi

if [ ! -x configure ] || [ configure.ac -nt configure ]; then ./autogen.sh >/dev/null; fi
mkdir -p "$builddir"
cd "$builddir"
if [ ! -f Makefile ] || [ "$(cat .configure-flags 2>/dev/null)" != "$configure_flags" ]; then
    "$top/configure" -q $configure_flags
    echo "$configure_flags" > .configure-flags
fi
jobs=$(nproc 2>/dev/null || echo 2)
# A failing test's own log, so that CI's output says why and not only which.
failing_logs() {
    grep -l -E '^:test-result: (FAIL|ERROR)' $(find "$1" -name '*.trs') 2>/dev/null |
        while read -r trs; do
            echo "---- ${trs%.trs}.log (last 60 lines) ----"
            tail -n 60 "${trs%.trs}.log"
        done
}
status=0
if [ "$distcheck" = yes ]; then
    # The whole suite once, in a tree unpacked from the tarball with this mode's configure flags:
    # what a release builds and passes, without a second run in the git tree. It leaves that
    # tree behind when a test fails there.
    # set -e holds inside the group too: the status is caught, not left to end the group.
    { rc=0; make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS="$configure_flags" 2>&1 || rc=$?
      echo "$rc" >distcheck.rc; } | tee distcheck.out
    status=$(cat distcheck.rc)
    [ "$status" -eq 0 ] || failing_logs "holdfast-$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)"
    awk '/^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):/ { n[$2] += $3 }
         END { printf "make distcheck: %d passed, %d failed, %d skipped\n",
               n["PASS:"] + n["XFAIL:"], n["FAIL:"] + n["ERROR:"] + n["XPASS:"], n["SKIP:"] }' \
        distcheck.out
    exit "$status"
fi
make -j"$jobs" >/dev/null
if [ "$target" = check ]; then
    make -j"$jobs" check || status=$?
else
    # Valgrind runs the CUnit programs; the integration scripts drive programs valgrind would
    # only slow down (concurrency.sh runs its own helgrind pass).
    make -j"$jobs" "$target" TESTS='$(UNIT_TESTS)' || status=$?
fi
[ "$status" -eq 0 ] || failing_logs .

# One closing line any CI can read, from automake's own summary.
case "$target" in
check) summary=test-suite.log ;;
*) summary="test-suite-${target#check-valgrind-}.log" ;;
esac
if [ -f "$summary" ]; then
    awk '/^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR):/ { n[$2] = $3 }
         END { printf "%d passed, %d failed, %d skipped\n", n["PASS:"] + n["XFAIL:"],
               n["FAIL:"] + n["ERROR:"] + n["XPASS:"], n["SKIP:"] }' "$summary"
fi
exit "$status"

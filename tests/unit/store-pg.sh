#!/bin/sh
# The store's CUnit suite (tests/unit/test-store) again, on PostgreSQL: a server of its own,
# the same cases on a fresh schema each (the SQLite file cases left out), the outage case
# that stops and restarts the server under a live handle, and the one that freezes it (SIGSTOP)
# and thaws it. HF_TEST_WRAPPER runs the suite under
# a tool: HF_TEST_WRAPPER='valgrind -q --leak-check=full --error-exitcode=9' make check TESTS=...
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/pg-lib.sh"

hf_pg_start
HF_TEST_STORE_PG=$HF_PG_URI HF_TEST_PG_STOP=$HF_PG_STOP_CMD HF_TEST_PG_START=$HF_PG_START_CMD \
    HF_TEST_PG_FREEZE=$HF_PG_FREEZE_CMD HF_TEST_PG_THAW=$HF_PG_THAW_CMD \
    ${HF_TEST_WRAPPER:-} "$top_builddir/tests/unit/test-store"

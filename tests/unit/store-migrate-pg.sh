#!/bin/sh
# tests/unit/test-store-migrate (hf_store_migrate, SQLite into PostgreSQL) on a server of its own
# (tests/integration/pg-lib.sh), each case into a schema of its own.
. "${top_srcdir:-.}/tests/integration/lib.sh"
. "${top_srcdir:-.}/tests/integration/pg-lib.sh"

hf_pg_start
HF_TEST_STORE_PG=$HF_PG_URI ${HF_TEST_WRAPPER:-} "$top_builddir/tests/unit/test-store-migrate"

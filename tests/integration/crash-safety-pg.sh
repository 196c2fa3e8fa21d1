#!/bin/sh
# crash-safety.sh with the store on PostgreSQL (issue 15): the same SIGKILLs during create, rotate
# and use, the same checks (only whole keys, every returned operation audited, the chain holds).
HF_CRASH_STORE=postgresql
. "${top_srcdir:-.}/tests/integration/crash-safety.sh"

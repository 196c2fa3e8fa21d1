"""no-ptrace.py CMD ARGS...: runs CMD without CAP_SYS_PTRACE, by dropping it from the bounding set
before the exec (root's new capabilities are the bounding set). Two processes started this way
are on equal terms: one may read the other's /proc/PID/mem exactly when the other is dumpable.
For a user without capabilities the drop fails and changes nothing, as it needs to."""
import ctypes
import os
import sys

PR_CAPBSET_DROP, CAP_SYS_PTRACE = 24, 19
ctypes.CDLL(None, use_errno=True).prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)
os.execvp(sys.argv[1], sys.argv[1:])

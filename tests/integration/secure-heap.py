"""secure-heap.py PID MIN_KB: exit 0 when process PID has OpenSSL's secure heap, seen as an
anonymous mapping of at least MIN_KB kB kept out of core dumps (VmFlags "dd", MADV_DONTDUMP);
the core's own locked pages are single pages. Importable: has_secure_heap(pid, min_kb)."""
import re
import sys


def has_secure_heap(pid, min_kb):
    size = 0
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"^Size:\s+(\d+) kB", line)
            if m:
                size = int(m.group(1))
            elif line.startswith("VmFlags:") and " dd" in line and size >= min_kb:
                return True
    return False


if __name__ == "__main__":
    sys.exit(0 if has_secure_heap(int(sys.argv[1]), int(sys.argv[2])) else 1)

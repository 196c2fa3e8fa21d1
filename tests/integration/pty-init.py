"""pty-init.py CLI SO_PIN USER_PIN: runs `CLI init --ask-pins` on a pseudo-terminal (started through
no-ptrace.py's drop), answers its four prompts, and prints what it saw: the session's output and,
while the CLI waits at its first prompt, whether it may dump core ("undumpable: yes|no") and
whether it has OpenSSL's secure heap ("secure heap: yes|no").
Exit status: the CLI's."""
import ctypes
import os
import pty
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NO_PTRACE = os.path.join(HERE, "no-ptrace.py")
sys.path.insert(0, HERE)
secure_heap = __import__("secure-heap")


def undumpable(pid):
    """RLIMIT_CORE 0 and /proc/PID/mem closed to an equal peer: PR_SET_DUMPABLE 0."""
    with open("/proc/%d/limits" % pid) as f:
        core0 = re.search(r"^Max core file size\s+0\s+0\s", f.read(), re.M) is not None
    peer = subprocess.run([sys.executable, NO_PTRACE, sys.executable, "-c",
                           "open('/proc/%d/mem', 'rb')" % pid],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return core0 and peer.returncode != 0


cli, so_pin, user_pin = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(24, 19, 0, 0, 0)  # as no-ptrace.py
    os.execv(cli, [cli, "init", "--ask-pins"])
answers = [so_pin, so_pin, user_pin, user_pin]
seen, checked, since = b"", False, 0  # since: where the output after the last answer starts
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:  # EIO: the CLI closed the terminal
        break
    if not chunk:
        break
    seen += chunk
    # A prompt is "... PIN ...: " with no newline after it; any other line ending in ':' (a
    # warning on stderr, which shares the terminal) must not be answered, or the PIN would be
    # typed before echo is off and then flushed away.
    if re.search(rb"PIN[^\n]*: $", seen[since:]) and answers:
        if not checked:
            print("undumpable: %s" % ("yes" if undumpable(pid) else "no"))
            print("secure heap: %s" % ("yes" if secure_heap.has_secure_heap(pid, 1024) else "no"))
            checked = True
        os.write(fd, (answers.pop(0) + "\n").encode())
        since = len(seen)
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace").replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(status))

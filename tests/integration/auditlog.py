"""The audit log's records, for the tests' Python checks (stdlib only). A script beside this file
imports it as it is; a heredoc in a test script first does
    sys.path.insert(0, os.environ["top_srcdir"] + "/tests/integration")
"""
import json


def records(path):
    """Every whole record of the audit log at path, in file order.

    Claimed space not yet used is zeros or blanks, and a record glued to a torn one (its writer
    killed mid-record) starts after it: both are passed over, and a torn record is no record."""
    with open(path, "rb") as f:
        data = f.read()
    for piece in data.replace(b"\0", b"\n").split(b"\n"):
        start = piece.rfind(b'{"seq":')
        if start < 0:
            continue
        try:
            yield json.loads(piece[start:])
        except ValueError:
            continue

import json
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.manifest import ManifestError, iter_manifest, read_manifest, require_text, write_manifest

entries = st.dictionaries(
    st.text(max_size=8), st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=False)), max_size=4
)


@given(st.lists(entries, max_size=8))
def test_write_then_read_round_trips(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("m") / "manifest.json"
    write_manifest(path, rows)
    assert read_manifest(path) == rows
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_umask()


@given(st.lists(st.binary(max_size=40), max_size=6))
def test_arbitrary_bytes_give_entries_or_a_manifest_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("m") / "manifest.json"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    errors = []
    entries = list(iter_manifest(path, on_error=errors.append))
    assert all(isinstance(entry, dict) for _, entry in entries)
    for err in errors:
        assert isinstance(err, ManifestError) and str(err).startswith(f"{path}:{err.line}: ")
    assert len(entries) + len(errors) == sum(1 for line in lines if line.replace(b"\n", b" ").strip())


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_manifest(tmp_path / "m.json", [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_manifest(path, rows())
    assert read_manifest(path) == [{"a": 1}] and os.listdir(tmp_path) == ["m.json"]


def test_require_text_names_the_field():
    with pytest.raises(ManifestError, match=r"m.json:7: missing field 'text' \(fields: a\)") as err:
        require_text({"a": 1}, "text", "m.json", 7)
    assert err.value.kind == "missing text"
    assert require_text({"text": "hi"}, "text", "m.json", 1) == "hi"
    assert json.loads(json.dumps({"x": require_text({"t": ""}, "t", "m", 1)})) == {"x": ""}


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_import_leaves_the_umask_alone_and_writes_follow_it(tmp_path):
    import subprocess
    import sys

    # importing the module must not call os.umask (a process-wide, thread-unsafe change)
    probe = "import os; os.umask = None; import nemo_pc.parts.manifest; print('ok')"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "ok"
    old = os.umask(0o077)
    try:
        path = write_manifest(tmp_path / "private.json", [{"a": 1}])
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

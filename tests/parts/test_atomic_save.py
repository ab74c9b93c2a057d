"""A model is saved whole or not at all: a failed ``save_to`` leaves the previous file and no temporary behind."""

from pathlib import Path

import pytest

from nemo_pc.parts.manifest import save_model_atomic
from nemo_pc.parts.output_lock import TEMPORARY


class _Model:
    """Stands in for a NeMo model: ``save_to`` writes its bytes, or writes half of them and fails."""

    def __init__(self, payload: bytes, fail: bool = False):
        self.payload, self.fail = payload, fail
        self.saved_to: list[str] = []

    def save_to(self, path: str) -> None:
        self.saved_to.append(path)
        Path(path).write_bytes(self.payload[: len(self.payload) // 2] if self.fail else self.payload)
        if self.fail:
            raise OSError("disk full")


def test_the_model_is_written_through_a_hidden_temporary_and_renamed(tmp_path):
    model = _Model(b"weights" * 10)
    output = save_model_atomic(model, tmp_path / "models" / "ctc.nemo")
    assert output == tmp_path / "models" / "ctc.nemo"
    assert output.read_bytes() == b"weights" * 10
    (staged,) = model.saved_to
    assert Path(staged).parent == output.parent and TEMPORARY.fullmatch(Path(staged).name)
    assert sorted(p.name for p in output.parent.iterdir()) == ["ctc.nemo"]


def test_a_failed_save_keeps_the_previous_model_and_removes_its_temporary(tmp_path):
    output = tmp_path / "ctc.nemo"
    output.write_bytes(b"old model")
    with pytest.raises(OSError, match="disk full"):
        save_model_atomic(_Model(b"new model", fail=True), output)
    assert output.read_bytes() == b"old model"
    assert [p.name for p in tmp_path.iterdir()] == ["ctc.nemo"]

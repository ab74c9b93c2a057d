"""benchmarks/quality_train_dev_gap.py: any split of the demo folder can be scored, test_seen included."""

import json

import pytest
from benchmark_loader import load_benchmark


def _manifests(root, splits):
    folder = root / "manifests"
    folder.mkdir(parents=True)
    for split, count in splits.items():
        rows = [{"audio_filepath": f"{split}-{k}.flac", "text_normalized": "a b"} for k in range(count)]
        (folder / f"{split}.json").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root


def test_test_seen_is_sampled_like_every_split(tmp_path):
    gap = load_benchmark("quality_train_dev_gap")
    demo = _manifests(tmp_path, {"train": 5, "test_seen": 4})
    rows = gap.sample_split(demo, "test_seen", 3)
    assert len(rows) == 3 and {row["audio_filepath"] for row in rows} < {f"test_seen-{k}.flac" for k in range(4)}
    assert rows == gap.sample_split(demo, "test_seen", 3)  # seed 0


def test_a_split_without_a_manifest_is_refused_before_the_model_loads(tmp_path, capsys):
    gap = load_benchmark("quality_train_dev_gap")
    demo = _manifests(tmp_path, {"train": 2, "dev": 2})
    with pytest.raises(SystemExit) as exit_info:
        gap.main(["--model", str(tmp_path / "none.nemo"), "--demo-dir", str(demo), "--splits", "train,test_seen"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "no manifest for split(s) test_seen" in err and "(found: dev, train)" in err

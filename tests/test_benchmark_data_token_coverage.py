"""benchmarks/data_token_coverage.py: the words a head over Whisper's tokens cannot write, counted per split."""

import json

import pytest
from benchmark_loader import load_benchmark


class WordTokens:
    """A stand-in tokenizer: one token per word (its leading space kept), numbered as first seen."""

    def __init__(self):
        self.ids: dict[str, int] = {}

    def text_to_ids(self, text: str) -> list[int]:
        pieces = [(" " if k or text.startswith(" ") else "") + word for k, word in enumerate(text.split())]
        return [self.ids.setdefault(piece, len(self.ids)) for piece in pieces]


def _write(path, texts):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts))


def test_words_outside_the_training_tokens_are_counted_per_split_and_mode(tmp_path):
    bench = load_benchmark("data_token_coverage")
    _write(tmp_path / "manifests" / "train.json", ["The cat sat.", "A dog ran."])
    _write(tmp_path / "manifests" / "dev.json", ["The cat ran."])
    _write(tmp_path / "manifests" / "test.json", ["A zebra sat, then a yak."])
    _write(tmp_path / "lm.json", ["Herds of zebra graze."])
    out = bench.coverage(WordTokens(), ".,?", tmp_path, tmp_path / "lm.json")
    assert set(out["splits"]) == {"dev", "test"}  # test_seen and real_test absent: skipped
    dev = out["splits"]["dev"]
    assert dev["utterances"] == 1 and dev["normalized"]["words"] == 3
    assert dev["normalized"]["outside_train"] == dev["punctuated"]["outside_train"] == 0  # every word trained
    test = out["splits"]["test"]
    # "a zebra sat then a yak": the first "a" as training spells it first, " a" after a space never trained
    assert test["normalized"]["words"] == 6 and test["normalized"]["outside_train"] == 4  # zebra then a yak
    assert test["normalized"]["outside_train_share"] == pytest.approx(4 / 6)
    assert test["normalized"]["outside_train_and_text"] == 3  # " zebra" is in the text
    assert test["punctuated"]["outside_train"] == 5  # and " sat," (training has " sat.")
    assert out["tokens"]["train_and_text"] > out["tokens"]["train"]


def test_the_rendered_table_has_a_row_per_split_and_mode(tmp_path):
    bench, render = load_benchmark("data_token_coverage"), load_benchmark("render_results")
    _write(tmp_path / "manifests" / "train.json", ["The cat sat."])
    _write(tmp_path / "manifests" / "test.json", ["The dog sat."])
    out = bench.coverage(WordTokens(), ".,?", tmp_path, None)
    path = tmp_path / "cov.json"
    path.write_text(json.dumps(out))
    text = render.render_token_coverage(path)
    assert "| `test` | 1 | normalized | 3 | 1 (33.3%) |" in text
    assert "| `test` | 1 | punctuated | 3 | 1 (33.3%) |" in text
    assert "those and the text's" not in text  # no --vocab-text: no such column


def test_a_missing_input_is_named_with_exit_2(tmp_path, capsys):
    bench = load_benchmark("data_token_coverage")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--model", str(tmp_path / "aed.nemo"), "--demo-dir", str(tmp_path), "--json", "o.json"])
    assert stop.value.code == 2
    assert "aed.nemo: no such file" in capsys.readouterr().err

"""benchmarks/speed_lm_estimate.py: a demo LM estimated by the NumPy estimator and the plain-dict oracle, and turned
into NGPU-LM through ARPA text and from the arrays; the two agree and the JSON says so; a bad name exits."""

import json

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

pytestmark = pytest.mark.usefixtures("one_thread")
LM_TEXT = [("Who is there?", "book")] * 12 + [("Yes, go home.", "book")] * 5 + [("Go there, who?", "book")] * 3


def test_both_estimators_and_both_conversions_agree(tmp_path):
    bench = load_benchmark("speed_lm_estimate")
    demo = tmp_path / "demo"
    (demo / "lm").mkdir(parents=True)
    text = write_pc_manifest(tmp_path / "text", LM_TEXT, duration=0.1)
    (demo / "lm" / "text.json").write_text(text.read_text())
    tokenizer = train_tokenizer(text, demo / "tokenizers", vocab_size=40)
    name = tokenizer.name.removeprefix("tokenizer_spe_")  # the demo's LM names carry their tokenizer's
    out = tmp_path / "estimate.json"
    bench.main(["--demo-dir", str(demo), "--lm", f"punctuated_order3_{name}", "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["same_ngpu_lm"] is True
    assert result["largest_log10_difference"] < 1e-9
    assert result["sentences"] == len(LM_TEXT) and result["ngram_counts"][0] == 40 + 2
    assert set(result["seconds"]) == {
        "estimate, plain dicts",
        "estimate, NumPy",
        "NGPU-LM through ARPA text",
        "NGPU-LM from the arrays",
    }


def test_a_bad_lm_name_or_a_missing_folder_exits(tmp_path):
    bench = load_benchmark("speed_lm_estimate")
    with pytest.raises(SystemExit, match="not an LM name"):
        bench.main(["--demo-dir", str(tmp_path), "--lm", "punctuated_bpe_v40"])
    with pytest.raises(SystemExit, match="does not exist"):
        bench.main(["--demo-dir", str(tmp_path), "--lm", "punctuated_order3_bpe_v40"])

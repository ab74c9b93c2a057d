"""benchmarks/speed_ctc_lm_top_k.py: a decoder CTC head decoded with its LM at each top_k beside every token and
greedy, the unpruned search's own row the same as itself; the renderer reads the results; bad input exits 2."""

import json

import pytest
from benchmark_loader import load_benchmark

pytestmark = pytest.mark.usefixtures("one_thread")
SYSTEM = "ctc_inter"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A finished demo folder in miniature: a tiny AED with its decoder CTC head (one intermediate block), the
    manifest it decodes, and the punctuated LM over the head's tokens."""
    from nemo_pc.data.tokenizers.token_encoder import load_token_encoder
    from nemo_pc.parts.ngram_lm import build_token_lm
    from nemo_pc.pipelines.inference import load_asr_model
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_decoder_ctc_overrides, train_tiny_aed

    root = tmp_path_factory.mktemp("top_k_demo")
    corpus, aed = train_tiny_aed(root / "work")
    for name in ("manifests", "models", "lm"):
        (root / name).mkdir()
    (root / "manifests" / "dev_lm.json").write_text(corpus["manifest"].read_text())
    overrides = tiny_decoder_ctc_overrides(corpus, aed, "model.decoder_ctc.stack=2", "model.decoder_ctc.inter_block=1")
    path = root / "models" / f"{SYSTEM}.nemo"
    train_model("aed", overrides, path, 4)
    tokens = load_asr_model(path).write_decoder_ctc_tokens(root / "lm" / f"{SYSTEM}_tokens_x")
    build_token_lm(
        corpus["manifest"], load_token_encoder(tokens), root / "lm" / f"punctuated_order3_{SYSTEM}_tokens_x.arpa",
        order=3, progress=False,
    )  # fmt: skip
    return root


def test_each_top_k_is_timed_and_scored_beside_every_token_and_greedy(folder, tmp_path):
    bench = load_benchmark("speed_ctc_lm_top_k")
    out = tmp_path / "top_k.json"
    bench.main(
        ["--demo-dir", str(folder), "--top-k", "2,none", "--beam", "2", "--batch-size", "2", "--json", str(out)]
        + ["--utterances", "3"]  # of the manifest's 4
    )
    result = json.loads(out.read_text())
    assert result["utterances"] == 3 and result["beam"] == 2
    (mode,) = result["modes"]  # inter_block: the normalized output is the punctuated one normalized, one LM
    assert mode["mode"] == "punctuated" and mode["lm"].endswith(".arpa")
    assert [row["top_k"] for row in mode["rows"]] == ["greedy", None, 2]
    full = mode["rows"][1]
    assert full["same_as_full"] == 1.0 and all(0 <= row["error_rate"] for row in mode["rows"])
    assert 0 <= mode["rows"][2]["same_as_full"] <= 1
    from render_results import RENDERERS

    table = RENDERERS["ctc_lm_top_k"](out)
    assert "| punctuated | every token |" in table and "| punctuated | 2 |" in table and "1.0x" in table


def test_bad_input_exits_2_with_a_message(folder, tmp_path, capsys):
    bench = load_benchmark("speed_ctc_lm_top_k")
    for argv, message in (
        (["--top-k", "0"], "--top-k must be 'none' or integers of 1 or more"),
        (["--beam", "0"], "--beam must be >= 1"),
        (["--utterances", "-1"], "--utterances >= 0"),
        (["--system", "ctc_punctuated"], "ctc_punctuated.nemo"),
    ):
        with pytest.raises(SystemExit) as raised:
            bench.main(["--demo-dir", str(folder), *argv])
        assert raised.value.code == 2
        assert message in capsys.readouterr().err
    empty = tmp_path / "empty"
    (empty / "lm").mkdir(parents=True)
    (empty / "models").symlink_to(folder / "models")
    (empty / "manifests").symlink_to(folder / "manifests")
    with pytest.raises(SystemExit) as raised:
        bench.main(["--demo-dir", str(empty)])
    assert raised.value.code == 2 and "0 LMs of punctuated over ctc_inter's tokens" in capsys.readouterr().err


def test_the_utterances_are_spread_over_the_manifest():
    """--utterances picks its lines with nemo_pc's ``spread_subset`` over the manifest's line numbers."""
    from nemo_pc.parts.manifest import spread_subset

    def spread(total, count):
        return spread_subset(range(total), count)

    assert spread(10, 0) == list(range(10)) and spread(3, 5) == [0, 1, 2]
    assert spread(10, 3) == [0, 3, 6] and spread(80, 24)[-1] < 80 and len(set(spread(80, 24))) == 24

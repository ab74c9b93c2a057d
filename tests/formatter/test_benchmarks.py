from nemo_pc.formatter.baselines import Seq2SeqFormatter, _word_chunks
from nemo_pc.formatter.pipeline import TextFormatter
from nemo_pc.testing.benchmarks import load_benchmark
from nemo_pc.testing.text import TINY_REWRITER_OVERRIDES, WRITTEN_SPOKEN


def _benchmark(name: str = "formatter"):
    return load_benchmark(name)


def test_compute_cost_counts_flops_encoder_passes_and_decoder_steps(tiny_formatter):
    bench = _benchmark()
    texts = [spoken for _, spoken in WRITTEN_SPOKEN[:2]]
    formatter = TextFormatter(*tiny_formatter)
    spans = sum(len(item.spans) for item in formatter.annotate(texts))
    assert spans >= 1
    cost = bench.compute_cost(formatter, texts)
    # One batch of tagger windows, one batch of spans: one BERT pass and one BART encoder pass.
    assert cost["encoder_passes"] == 2
    assert cost["decoder_steps"] >= 2 and cost["gflop"] > 0

    seq2seq = Seq2SeqFormatter(tiny_formatter[1], chunk_words=4, batch_size=1)
    chunks = sum(len(_word_chunks(text, 4)) for text in texts)
    whole = bench.compute_cost(seq2seq, texts)
    assert whole["encoder_passes"] == chunks and whole["decoder_steps"] >= chunks

    class Rules:
        def format(self, texts):
            return list(texts)

    assert bench.compute_cost(Rules(), texts) == {"gflop": 0.0, "encoder_passes": 0, "decoder_steps": 0}


def test_rewriter_pairs_scores_exact_rewrites_and_those_with_digits():
    module = _benchmark("rewriter_pairs")
    targets = ["2024", "iPhone", "$5", "March 3rd"]
    outputs = ["2024", "Iphone", "$6", "March 3rd"]
    assert module.score(targets, outputs) == {"pairs": 4, "exact": 2, "digit_pairs": 3, "digit_exact": 2}


def test_leave_one_source_out_trains_without_the_source_and_scores_its_documents(tmp_path):
    import dataclasses
    import json

    from pc_demo.pipeline import Demo, DemoConfig

    from nemo_pc.data.manifest import read_manifest

    tiny_bart = [*TINY_REWRITER_OVERRIDES, "model.train_ds.batch_size=4"]
    config = DemoConfig(
        out_dir=str(tmp_path / "demo"),
        formatter_sources=("kjv", "synthetic"),
        formatter_documents=80,
        formatter_synthetic=20,
        formatter_numbers=0,
        formatter_tn="none",
        tagger_steps=2,
        rewriter_steps=2,
        num_jobs=1,
        extra={"tagger": ["model.encoder.num_layers=1", "model.train_ds.batch_size=4"], "rewriter": tiny_bart},
    )
    Demo(config, log=lambda _: None).formatter()
    (tmp_path / "demo" / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
    out = _benchmark("formatter_loso").main(
        [
            "--demo-dir",
            str(tmp_path / "demo"),
            "--leave-out",
            "kjv",
            "--no-wfst",
            "--json",
            str(tmp_path / "l.json"),
        ]
    )
    assert out["documents"] > 0
    assert set(out["results"]) == {"formatter without kjv", "demo formatter (all sources)"}
    for row in out["results"].values():
        assert 0.0 <= row["per"] and 0.0 <= row["i_wer"]
    sources = {
        d["source"] for d in read_manifest(tmp_path / "demo" / "loso_kjv" / "formatter_data" / "train_documents.json")
    }
    assert sources and "kjv" not in sources
    assert json.loads((tmp_path / "l.json").read_text())["leave_out"] == "kjv"

import pytest
from benchmark_loader import load_benchmark

from nemo_pc.formatter.baselines import Seq2SeqFormatter, _word_chunks
from nemo_pc.formatter.pipeline import TextFormatter
from nemo_pc.testing.text import TINY_REWRITER_OVERRIDES, WRITTEN_SPOKEN


def _benchmark(name: str = "quality_formatter"):
    return load_benchmark(name)


def test_compute_cost_counts_flops_encoder_passes_and_decoder_steps(tiny_formatter):
    bench = _benchmark()
    texts = [spoken for _, spoken in WRITTEN_SPOKEN[:2]]
    formatter = TextFormatter(*tiny_formatter, span_itn="neural", detect_spans=False)
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
    module = _benchmark("quality_rewriter_pairs")
    targets = ["2024", "iPhone", "$5", "March 3rd"]
    outputs = ["2024", "Iphone", "$6", "March 3rd"]
    assert module.score(targets, outputs) == {"pairs": 4, "exact": 2, "digit_pairs": 3, "digit_exact": 2}


def test_leave_one_source_out_trains_without_the_source_and_scores_its_documents(tmp_path):
    import dataclasses
    import json

    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.pipelines.demo.config import DemoConfig
    from nemo_pc.pipelines.demo.pipeline import Demo

    tiny_bart = [*TINY_REWRITER_OVERRIDES, "model.train_ds.batch_size=4"]
    config = DemoConfig(
        out_dir=str(tmp_path / "demo"),
        formatter_sources=("kjv", "synthetic"),
        formatter_documents=80,
        formatter_synthetic=20,
        formatter_numbers=0,
        formatter_tn="none",
        formatter_asr_like=0.0,
        tagger_steps=2,
        rewriter_steps=2,
        num_jobs=1,
        extra={"tagger": ["model.encoder.num_layers=1", "model.train_ds.batch_size=4"], "rewriter": tiny_bart},
    )
    Demo(config, log=lambda _: None).formatter()
    (tmp_path / "demo" / "config.json").write_text(json.dumps(dataclasses.asdict(config)))
    out = _benchmark("quality_formatter_loso").main(
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


def _row(per: float, i_wer: float) -> dict:
    return {"per": per, "cer": per / 10, "m_wer": per / 2, "i_wer": i_wer}


def test_every_source_loso_held_out_documents_mean_and_rendered_table(tmp_path):
    import json

    from nemo_pc.parts.manifest import write_manifest

    module = _benchmark("quality_formatter_loso_all")
    data = tmp_path / "all" / "formatter_data"
    docs = [
        {"doc_id": f"{source}:{k}", "source": source, "spoken": "x", "written": "X."}
        for source in ("wiki", "kjv")
        for k in range(6)
    ]
    write_manifest(data / "test_documents.json", docs[:3] + docs[6:8])
    write_manifest(data / "dev_documents.json", docs[3:6])
    held = module.held_out(tmp_path, "wiki", 4)
    assert len(held) == 4 and {d["source"] for d in held} == {"wiki"} and len({d["doc_id"] for d in held}) == 4
    assert len(module.held_out(tmp_path, "kjv", 10)) == 2

    per_source = {
        "wiki": {
            "documents": 4,
            "results": {"neural": _row(0.5, 0.4), "agreement": _row(0.5, 0.1), "NeMo WFST ITN": _row(1.0, 0.2)},
        },
        "kjv": {
            "documents": 2,
            "results": {"neural": _row(0.3, 0.0), "agreement": _row(0.3, 0.1), "NeMo WFST ITN": _row(1.0, 0.0)},
        },
    }
    mean = module.summary(per_source)
    assert mean["neural"]["per"] == (0.5 + 0.3) / 2 and mean["agreement"]["i_wer"] == 0.1
    # A source where WFST's I-WER is 0 has no ratio; it still counts when the formatter is worse there.
    assert mean["neural"]["i_wer_vs_wfst"] == 0.4 / 0.2 and mean["agreement"]["i_wer_vs_wfst"] == 0.1 / 0.2
    assert mean["neural"]["sources_worse_than_wfst"] == 1 and mean["agreement"]["sources_worse_than_wfst"] == 1
    source = tmp_path / "loso.json"
    source.write_text(json.dumps({"sources": per_source, "mean": mean, "complete": True}))
    table = load_benchmark("render_results").render_formatter_loso_all(source)
    assert "| `wiki` | 4 | 50.0% | 40.0% | 10.0% | 20.0% |" in table
    assert "| I-WER ÷ WFST's (mean of ratios) |  |  | 2.00× | 0.50× | 1.00× |" in table
    assert "Incomplete" not in table


def test_loso_folds_leave_sources_out_together_and_the_default_policy_has_its_table(tmp_path):
    import json

    module = _benchmark("quality_formatter_loso_all")
    args = module.parse_args(["--sources", "wiki,handbook+pydoc", "--train-sources", "wiki,kjv,handbook,pydoc"])
    assert module.members(args.sources) == ["wiki", "handbook", "pydoc"]
    for bad in (["--sources", "wiki+news"], ["--train-sources", "kjv,news"], ["--asr-like", "0.3"]):
        with pytest.raises(SystemExit):
            module.parse_args(bad)
    config = module.data_config(module.parse_args(["--asr-like", "0.3", "--asr-confusions", "c.json"]), ("kjv",))
    assert (config.asr_like, config.asr_confusions) == (0.3, "c.json")
    marks = {"per[.]": 0.2, "per[,]": 0.6, "per[?]": 0.9, "punct_micro_f1": 0.7, "case_er": 0.1}
    policy = load_benchmark("render_results").DEFAULT_POLICY
    per_source = {
        name: {
            "left_out": ["handbook", "pydoc"] if name != "wiki" else ["wiki"],
            "documents": 3,
            "results": {
                "neural": {**_row(0.5, 0.4), **marks},
                policy: {**_row(0.4, i_wer), **marks},
                "NeMo WFST ITN": {**_row(1.0, 0.2), **marks},
            },
        }
        for name, i_wer in (("wiki", 0.1), ("handbook", 0.3), ("pydoc", 0.2))
    }
    mean = module.summary(per_source)
    assert mean[policy]["per[,]"] == 0.6 and mean[policy]["sources_worse_than_wfst"] == 1
    source = tmp_path / "loso.json"
    source.write_text(json.dumps({"sources": per_source, "mean": mean, "complete": True}))
    table = load_benchmark("render_results").render_formatter_loso_all(source)
    marks = "40.0% | 20.0% | 60.0% | 90.0% | 70.0% | 10.0%"
    assert f"| `handbook` (with `pydoc`) | 3 | {marks} | 30.0% | 20.0% | 1.50× |" in table
    assert f"| **mean** |  | {marks} | 20.0% | 20.0% | 1.00× |" in table
    assert "sources where its I-WER is above WFST's: 1" in table

    without = {"wiki": json.loads(json.dumps(per_source["wiki"]))}
    without["wiki"]["results"][policy].update(per=0.5, i_wer=0.3)
    other = tmp_path / "loso_without.json"
    other.write_text(json.dumps({"config": {"train_sources": ["wiki", "kjv"]}, "sources": without}))
    source.write_text(
        json.dumps({"config": {"train_sources": ["wiki", "kjv", "handbook"]}, "sources": per_source, "mean": mean})
    )
    gain = load_benchmark("render_results").render_formatter_loso_gain(source, other)
    assert "with and without `handbook`" in gain
    assert "| `wiki` | 3 | 40.0% | 50.0% | 70.0% | 70.0% | 10.0% | 10.0% | 10.0% | 30.0% | 20.0% |" in gain
    assert "`pydoc`" not in gain  # left out by one run only


def test_asr_input_scores_transcripts_and_renders_its_table(tmp_path, tiny_formatter):
    import json

    module = _benchmark("quality_formatter_asr_input")
    assert module.end_mark_share(["Ends here.", "no mark", "a comma,", ""]) == 0.5
    formatter = TextFormatter(*tiny_formatter, span_itn="neural", detect_spans=False)
    rows = [
        {"utt_id": str(k), "text": written, "text_normalized": spoken, "pred_text_normalized": spoken}
        for k, (written, spoken) in enumerate(WRITTEN_SPOKEN[:3])
    ]
    scores = module.score_transcripts(formatter, rows, "pred_text_normalized", tmp_path / "p.json")
    assert set(scores) == {*module.TRANSCRIPT_METRICS, "end_mark_share", "example"}
    assert 0.0 <= scores["per"] and 0.0 <= scores["punct_micro_f1"] <= 1.0
    assert len((tmp_path / "p.json").read_text().splitlines()) == 3

    row = {
        "asr_output": {"per": 0.8, "punct_micro_f1": 0.2, "wer_pc": 0.7, "case_er": 0.3, "end_mark_share": 0.9},
        "reference_words": {"per": 0.5, "end_mark_share": 0.6},
        "clean_documents": {"per": 0.4, "i_wer": 0.1},
    }
    report = {
        "test_utterances": 3,
        "test_documents": 2,
        "asr_like": 1.0,
        "whisper_tiny_en_per": 0.777,
        "reference_end_mark_share": 0.25,
        "results": {"demo tagger (clean text)": row},
        "confusions": {"substitution": 0.4, "deletion": 0.1, "insertion": 0.02},
    }
    source = tmp_path / "asr.json"
    source.write_text(json.dumps(report))
    table = load_benchmark("render_results").render_formatter_asr_input(source)
    assert "| demo tagger (clean text) | 80.0% | 20.0% | 70.0% | 90.0% | 50.0% | 60.0% | 40.0% | 10.0% |" in table
    assert "Whisper tiny.en's test PER 77.7%" in table


class _UpperItn:
    """NeMo WFST ITN stand-in (its grammars take minutes to compile): upper-cases what it is given."""

    def __init__(self, *args, **kwargs) -> None:
        self.normalizer = self

    def inverse_normalize(self, text: str, verbose: bool = False) -> str:
        return text.upper()

    def format(self, texts):
        return [text.upper() for text in texts]


def test_span_itn_benchmark_scores_every_policy_on_documents_and_speech(tiny_formatter, tmp_path, monkeypatch):
    import json

    from nemo_pc.formatter.hybrid import POLICIES
    from nemo_pc.parts.manifest import write_manifest

    monkeypatch.setattr("nemo_pc.formatter.baselines.WfstItn", _UpperItn)
    module = _benchmark("quality_span_itn")
    demo = tmp_path / "demo"
    tagger, rewriter = tiny_formatter
    (demo / "models").mkdir(parents=True)
    tagger.save_to(str(demo / "models" / "tagger.nemo"))
    rewriter.save_to(str(demo / "models" / "rewriter.nemo"))
    docs = [{"doc_id": str(k), "source": "toy", "written": w, "spoken": s} for k, (w, s) in enumerate(WRITTEN_SPOKEN)]
    write_manifest(demo / "formatter_data" / "test_documents.json", docs)
    rows = [{"utt_id": str(k), "text": w, "pred_text_normalized": s} for k, (w, s) in enumerate(WRITTEN_SPOKEN)]
    write_manifest(demo / "predictions" / "asr.json", rows)
    out = module.main(["--demo-dir", str(demo), "--systems", "asr", "--json", str(tmp_path / "s.json")])
    policies = {*POLICIES, *(f"{p}+detect" for p in POLICIES)}
    assert set(out["documents"]["results"]) == policies | {"NeMo WFST ITN"}
    # the tiny formatter memorized these texts: the pure neural path writes them back exactly
    assert out["documents"]["results"]["neural"]["i_wer"] == 0.0 == out["speech"]["asr"]["results"]["neural"]["per"]
    # upper-cased WFST spans are case errors: every policy that takes WFST's form somewhere scores worse
    assert out["documents"]["results"]["wfst"]["case_er"] > out["documents"]["results"]["neural"]["case_er"]
    assert json.loads((tmp_path / "s.json").read_text())["speech"]["asr"]["utterances"] == len(rows)
    table = load_benchmark("render_results").render_span_itn(tmp_path / "s.json")
    assert "| `neural` | 0.0% |" in table and "`asr` PER" in table
    with pytest.raises(SystemExit):
        module.parse_args(["--demo-dir", str(demo), "--systems", "missing"])

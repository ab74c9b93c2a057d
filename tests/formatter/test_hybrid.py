import argparse
import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.formatter.hybrid import (
    DEFAULT_DETECT_SPANS,
    DEFAULT_SPAN_ITN,
    POLICIES,
    SpanCandidates,
    WfstSpans,
    choose_span,
    chosen_text,
    digits,
    span_class,
    wfst_converted,
)
from nemo_pc.formatter.pipeline import TextFormatter, merge_spans
from nemo_pc.testing.text import WRITTEN_SPOKEN

SPOKEN = st.lists(
    st.sampled_from(["twenty", "one", "point", "five", "march", "iphone", "dollars", "x"]), min_size=1, max_size=5
).map(" ".join)
WRITTEN = st.text(alphabet="0123456789,.$% abcXYZ-", max_size=12)
CANDIDATES = st.builds(SpanCandidates, SPOKEN, WRITTEN, st.floats(0.0, 1.0), st.one_of(st.none(), WRITTEN, SPOKEN))


@given(CANDIDATES, st.sampled_from(POLICIES), st.floats(0.0, 1.0))
def test_every_policy_picks_one_of_the_two_and_wfst_only_where_it_converted(span, policy, threshold):
    source = choose_span(span, policy, threshold)
    assert source in ("neural", "wfst")
    if source == "wfst":
        assert wfst_converted(span) and policy != "neural"
    text, same = chosen_text(span, policy, threshold)
    assert same == source and text == (span.wfst if source == "wfst" else span.neural)


@given(CANDIDATES, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_confidence_policy_is_monotone_in_the_threshold(span, low, high):
    low, high = sorted((low, high))
    if choose_span(span, "confidence", high) == "neural":
        assert choose_span(span, "confidence", low) == "neural"


@given(CANDIDATES)
def test_agreement_keeps_the_rewriter_when_the_digits_agree(span):
    agree = SpanCandidates(span.spoken, span.neural, span.confidence, span.neural.replace(",", "") + " ")
    assert choose_span(agree, "agreement") == "neural"
    assert choose_span(agree, "wfst") == ("wfst" if wfst_converted(agree) else "neural")


def test_examples_of_each_policy():
    years = SpanCandidates("nineteen ninety", "199", 0.4, "1990")
    assert [choose_span(years, p, 0.9) for p in POLICIES] == ["neural", "wfst", "wfst", "wfst", "wfst"]
    commas = SpanCandidates("six million four hundred forty thousand", "6,440,000", 0.95, "6440000")
    assert [choose_span(commas, p, 0.9) for p in POLICIES] == ["neural", "wfst", "neural", "neural", "wfst"]
    name = SpanCandidates("mc donald's", "McDonald's", 0.2, "mc donald's")  # WFST has no rule: the rewriter stays
    assert {choose_span(name, p) for p in POLICIES} == {"neural"}
    email = SpanCandidates("john at example dot com", "john@example.com", 0.3, "john@example.com")
    assert choose_span(email, "class") == "neural" and choose_span(email, "confidence") == "wfst"
    assert digits("$6,440,120.5") == "64401205"
    assert span_class("twelve point three million dollars") == "number"
    assert span_class("march fifteenth") == span_class("") == "other"
    with pytest.raises(ValueError, match="unknown span ITN policy 'best'"):
        choose_span(years, "best")
    with pytest.raises(ValueError, match="unknown span ITN policy 'best'"):
        TextFormatter(object(), span_itn="best")


class MarkedWfst(WfstSpans):
    """WFST stand-in (the grammars take minutes to compile): a span in brackets, its words upper-cased."""

    def __init__(self) -> None:
        super().__init__(normalizer=self)
        self.calls: list[str] = []

    def inverse_normalize(self, text: str, verbose: bool = False) -> str:
        self.calls.append(text)
        return f"<{text.upper()}>"


def test_pipeline_hybrid_on_a_tiny_formatter(tiny_formatter):
    tagger, rewriter = tiny_formatter
    spoken = [s for _, s in WRITTEN_SPOKEN]
    neural = TextFormatter(tagger, rewriter, span_itn="neural", detect_spans=False)
    wfst = MarkedWfst()
    labeled, candidates = TextFormatter(tagger, rewriter, wfst=wfst).span_candidates(spoken)
    assert candidates and all(0.0 <= span.confidence <= 1.0 for _, span in candidates)
    assert [span.wfst for _, span in candidates] == [f"<{span.spoken.upper()}>" for _, span in candidates]
    # The neural policy reproduces the pure neural path without running WFST.
    assert neural.format(spoken) == [w for w, _ in WRITTEN_SPOKEN] and neural.wfst is None
    outputs = {p: TextFormatter(tagger, rewriter, span_itn=p, wfst=wfst).format(spoken) for p in POLICIES}
    assert outputs["neural"] == neural.format(spoken)
    # Every span of the ``wfst`` policy is WFST's; the memorized rewriter is confident, so ``confidence`` keeps it.
    bracketed = sum(text.count("<") for text in outputs["wfst"])
    assert bracketed == len(candidates)
    assert outputs["confidence"] == TextFormatter(
        tagger, rewriter, span_itn="confidence", wfst=wfst, threshold=0.0
    ).format(spoken)
    assert (
        TextFormatter(tagger, rewriter, span_itn="confidence", wfst=wfst, threshold=1.01).format(spoken)
        == (outputs["wfst"])
    )
    # The class policy sends only the number spans to WFST.
    number_spans = [span for _, span in candidates if span_class(span.spoken) == "number"]
    assert sum(text.count("<") for text in outputs["class"]) == len(number_spans) > 0
    # itn_only (punctuated input) applies the same policy.
    itn_only = TextFormatter(tagger, rewriter, span_itn="wfst", wfst=wfst).itn_only(
        ["Revenue reached twelve point three million dollars."]
    )
    assert itn_only == ["Revenue reached <TWELVE POINT THREE MILLION DOLLARS>."]


SPANS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(1, 6)), max_size=12).map(
    lambda rows: [(k, start, start + length) for k, start, length in rows]
)


@given(SPANS)
def test_merge_spans_joins_overlaps_and_keeps_every_word(spans):
    merged = merge_spans(spans)
    assert merged == sorted(merged)
    for (k1, _, end1), (k2, start2, _) in zip(merged, merged[1:], strict=False):
        assert k1 != k2 or end1 <= start2  # no two overlap
    covered = {(k, i) for k, start, end in spans for i in range(start, end)}
    assert {(k, i) for k, start, end in merged for i in range(start, end)} >= covered
    assert all(any(k == m and a <= s and e <= b for m, a, b in merged) for k, s, e in spans)


class PhraseWfst(WfstSpans):
    """WFST stand-in that knows one phrase."""

    def __init__(self) -> None:
        super().__init__(normalizer=self)

    def inverse_normalize(self, text: str, verbose: bool = False) -> str:
        return text.replace("twelve point three million dollars", "$12.3 million")


def test_detected_wfst_spans_join_the_tagger_spans(tiny_formatter):
    wfst = PhraseWfst()
    assert wfst.changed_spans(["we paid twelve point three million dollars", "", "no numbers"]) == [[(2, 7)], [], []]
    tagger, rewriter = tiny_formatter
    text = ["so we paid twelve point three million dollars for it"]
    out = TextFormatter(tagger, rewriter, span_itn="wfst", wfst=wfst, detect_spans=True).format(text)
    assert "$12.3 million" in out[0] and "twelve" not in out[0]
    labeled, spans = TextFormatter(tagger, rewriter, wfst=wfst).span_candidates(text, detect=True)
    assert any(start <= 3 and 8 <= end for (_, start, end), _ in spans)
    hybrid = TextFormatter(tagger, rewriter, span_itn="wfst", wfst=wfst, detect_spans=True)
    out = hybrid.itn_only(["So we paid twelve point three million dollars, for it."])
    assert out[0].startswith("So we paid $12.3 million, ")  # the mark inside a joined span stays


def test_nemo_pc_format_runs_the_hybrid_by_default(tiny_formatter, tmp_path, monkeypatch, capsys):
    import io

    from nemo_pc.cli import main

    made = []

    class Recording(PhraseWfst):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr("nemo_pc.formatter.pipeline.WfstSpans", Recording)
    tagger, rewriter = tiny_formatter
    tagger.save_to(str(tmp_path / "tagger.nemo"))
    rewriter.save_to(str(tmp_path / "rewriter.nemo"))
    models = ["format", "--tagger", str(tmp_path / "tagger.nemo"), "--rewriter", str(tmp_path / "rewriter.nemo")]
    monkeypatch.setattr("sys.stdin", io.StringIO("so we paid twelve point three million dollars for it\n"))
    assert main(models) == 0
    assert "$12.3 million" in capsys.readouterr().out and len(made) == 1
    monkeypatch.setattr("sys.stdin", io.StringIO("so we paid twelve point three million dollars for it\n"))
    assert main([*models, "--span-itn", "neural", "--no-detect-spans"]) == 0 and len(made) == 1  # no WFST


def test_the_python_api_and_nemo_pc_format_share_one_default():
    from nemo_pc.cli.format import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--tagger", "tagger.nemo"])
    python = inspect.signature(TextFormatter).parameters
    assert (python["span_itn"].default, python["detect_spans"].default) == (DEFAULT_SPAN_ITN, DEFAULT_DETECT_SPANS)
    assert (args.span_itn, args.detect_spans) == (DEFAULT_SPAN_ITN, DEFAULT_DETECT_SPANS)
    assert DEFAULT_SPAN_ITN != "neural" and DEFAULT_SPAN_ITN in POLICIES  # the hybrid (docs/formatter.md)

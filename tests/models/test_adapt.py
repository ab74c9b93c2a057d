"""``nemo-pc adapt``: tiny stock NeMo models built in code become P&C models whose normalized mode gives exactly the
stock transcripts; the extended tokenizer keeps every stock id and row."""

from __future__ import annotations

import pytest
import sentencepiece
import torch

from nemo_pc.data.tokenizers.extension import extend_tokenizer, related_pieces
from nemo_pc.parts.text import DEFAULT_MARKS, normalize
from nemo_pc.testing import asr

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from nemo_pc.testing.stock import train_stock_tokenizer

    folder = tmp_path_factory.mktemp("adapt")
    manifest = asr.write_pc_manifest(folder / "data")
    texts = [normalize(text) for text, _ in asr.UTTERANCES]
    return {
        "folder": folder,
        "manifest": manifest,
        "audio": [str(path) for path in sorted((folder / "data" / "wav").glob("*.wav"))],
        "stock_tokenizer": train_stock_tokenizer(texts, folder / "stock"),
        "pc_tokenizer": asr.train_tokenizer(manifest, folder / "pc", vocab_size=48),
    }


def _processor(folder):
    return sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))


@pytest.mark.parametrize("source", [None, "pc_tokenizer"])
def test_extended_tokenizer_keeps_stock_ids_and_lower_case_segmentation(corpus, tmp_path, source):
    stock = _processor(corpus["stock_tokenizer"])
    extended = extend_tokenizer(
        corpus["stock_tokenizer"] / "tokenizer.model",
        tmp_path / "ext",
        DEFAULT_MARKS,
        corpus[source] if source else None,
    )
    new = _processor(extended.directory)
    assert extended.stock_size == stock.get_piece_size() and extended.added
    assert [new.id_to_piece(i) for i in range(stock.get_piece_size())] == [
        stock.id_to_piece(i) for i in range(stock.get_piece_size())
    ]
    assert [new.piece_to_id(piece) for piece in extended.added] == list(
        range(stock.get_piece_size(), new.get_piece_size())
    )
    for text, _ in asr.UTTERANCES:
        assert new.encode(normalize(text)) == stock.encode(normalize(text))
        ids = new.encode(text)
        assert new.decode(ids) == text and new.unk_id() not in ids
        if text != normalize(text):
            assert any(i >= stock.get_piece_size() for i in ids)
    assert all(any(ch.isupper() or ch in DEFAULT_MARKS for ch in piece) for piece in extended.added)


def test_extended_tokenizer_keeps_a_cased_punctuated_tokenizer(corpus, tmp_path):
    extended = extend_tokenizer(corpus["pc_tokenizer"] / "tokenizer.model", tmp_path / "same")
    assert extended.added == []
    assert (extended.directory / "tokenizer.model").read_bytes() == (
        corpus["pc_tokenizer"] / "tokenizer.model"
    ).read_bytes()


def test_related_pieces_are_the_lower_case_spelling(corpus):
    stock = _processor(corpus["stock_tokenizer"])
    piece = next(
        stock.id_to_piece(i)
        for i in range(stock.get_piece_size())
        if stock.id_to_piece(i)[1:].isalpha()
        and stock.id_to_piece(i).startswith("▁")
        and len(stock.id_to_piece(i)) > 2
    )
    twin = "▁" + piece[1].upper() + piece[2:]
    assert related_pieces(twin, stock) == [stock.piece_to_id(piece)]
    assert related_pieces(twin + ",", stock) == [stock.piece_to_id(piece)]
    assert related_pieces("?", stock) == []


def _texts(hyps):
    return [hyp if isinstance(hyp, str) else hyp.text for hyp in hyps]


def _stock(family, corpus, tmp_path):
    from nemo_pc.testing.stock import stock_model

    torch.manual_seed(0)
    model = stock_model(family, corpus["stock_tokenizer"])
    path = tmp_path / f"{family}.nemo"
    model.save_to(str(path))
    return model, path


@pytest.mark.parametrize("family", ["rnnt", "tdt", "hybrid", "ctc"])
@pytest.mark.parametrize("decoders", ["conditioned", "dual"])
def test_adapt_cli_normalized_mode_is_the_stock_model(corpus, tmp_path, family, decoders, capsys):
    from nemo.collections.asr.models import ASRModel

    from nemo_pc.cli import main

    stock, stock_path = _stock(family, corpus, tmp_path)
    expected = _texts(stock.transcribe(corpus["audio"], batch_size=4, verbose=False))
    assert any(expected)
    out = tmp_path / "out" / "pc.nemo"
    assert main(["adapt", str(stock_path), str(out), "--decoders", decoders]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    adapted = ASRModel.restore_from(str(out), map_location="cpu").eval()
    assert type(adapted).__name__ == ("EncDecCTCPCBPEModel" if family == "ctc" else "EncDecRNNTPCBPEModel")
    both = adapted.transcribe(corpus["audio"], batch_size=4, verbose=False, mode="both")
    assert _texts(both["normalized"]) == expected
    assert len(both["punctuated"]) == len(expected)
    assert adapted.tokenizer.vocab_size > stock.tokenizer.vocab_size
    if family == "tdt":
        assert adapted.joint.num_extra_outputs == stock.joint.num_extra_outputs and adapted.loss_name == "tdt_scan"
    if family == "hybrid":
        assert _texts(_ctc_texts(adapted, corpus)) == _texts(_ctc_texts(stock, corpus))


def _ctc_texts(model, corpus):
    import soundfile

    waves = [torch.tensor(soundfile.read(path, dtype="float32")[0]) for path in corpus["audio"]]
    signal = torch.nn.utils.rnn.pad_sequence(waves, batch_first=True)
    with torch.no_grad():
        encoded, lengths = model.forward(
            input_signal=signal, input_signal_length=torch.tensor([len(w) for w in waves])
        )
        log_probs = model.ctc_decoder(encoder_output=encoded)
    return model.ctc_decoding.ctc_decoder_predictions_tensor(log_probs, decoder_lengths=lengths)


def test_adapted_rows_keep_the_stock_rows_and_start_new_ones_from_related_pieces(corpus, tmp_path):
    from nemo_pc.models.adapt import adapt_model
    from nemo_pc.models.vocabulary import NEW_PIECE_MARGIN

    stock, _ = _stock("rnnt", corpus, tmp_path)
    model = adapt_model(stock, tmp_path / "work", "conditioned")
    vocab = stock.tokenizer.vocab_size
    new_vocab = model.tokenizer.vocab_size
    stock_embed = stock.decoder.prediction["embed"].weight
    embed = model.decoder.prediction["embed"].weight
    stock_out, out = stock.joint.joint_net[-1], model.joint.joint_net[-1]
    assert torch.equal(embed[:vocab], stock_embed[:vocab]) and torch.equal(embed[new_vocab], stock_embed[vocab])
    assert torch.equal(out.weight[:vocab], stock_out.weight[:vocab])
    assert torch.equal(out.weight[new_vocab], stock_out.weight[vocab])
    assert torch.equal(out.bias[:vocab], stock_out.bias[:vocab])
    assert torch.equal(model.decoder.mode_embed.weight, torch.zeros_like(model.decoder.mode_embed.weight))
    processor = stock.tokenizer.tokenizer
    checked = 0
    for index in range(vocab, new_vocab):
        related = related_pieces(model.tokenizer.tokenizer.id_to_piece(index), processor)
        if len(related) == 1:
            torch.testing.assert_close(embed[index], stock_embed[related[0]])
            torch.testing.assert_close(out.bias[index], stock_out.bias[related[0]] - NEW_PIECE_MARGIN)
            checked += 1
    assert checked


def test_adapt_with_a_tokenizer_folder_keeps_the_normalized_mode(corpus, tmp_path):
    from nemo_pc.models.adapt import adapt_model

    stock, _ = _stock("rnnt", corpus, tmp_path)
    expected = _texts(stock.transcribe(corpus["audio"], batch_size=4, verbose=False))
    model = adapt_model(stock, tmp_path / "work", "dual", tokenizer=corpus["pc_tokenizer"])
    assert model.tokenizer.vocab_size > stock.tokenizer.vocab_size
    assert _texts(model.transcribe(corpus["audio"], batch_size=4, verbose=False, mode="normalized")) == expected


@pytest.mark.parametrize("family", ["rnnt", "ctc"])
def test_adapt_keeps_the_requested_mark_set(corpus, tmp_path, family):
    from nemo_pc.models.adapt import adapt_model

    stock, _ = _stock(family, corpus, tmp_path)
    model = adapt_model(stock, tmp_path / "work", "dual", marks=".,?!")
    assert model.cfg.pc.marks == ".,?!"
    assert "!" in model.tokenizer.tokenizer.id_to_piece(list(range(model.tokenizer.vocab_size)))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.nemo", "out.nemo"], "missing.nemo"),
        (["{stock}", "out.txt"], "must be a .nemo file"),
        (["{stock}", "out.nemo"], "not a NeMo .nemo checkpoint"),
    ],
)
def test_adapt_cli_bad_input_is_one_line_and_exit_code_2(corpus, tmp_path, capsys, arguments, message):
    from nemo_pc.cli import main

    stock = tmp_path / "stock.nemo"
    stock.write_bytes(b"not a tar archive")
    code = main(["adapt", *(argument.format(stock=stock) for argument in arguments)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and err[0].startswith("nemo-pc adapt: error:")


@pytest.mark.parametrize(("family", "decoders"), [("tdt", "conditioned"), ("ctc", "dual")])
def test_stock_transcribe_speech_calls_switch_the_adapted_model_mode(corpus, tmp_path, family, decoders):
    """The calls of NeMo's examples/asr/transcribe_speech.py on an adapted .nemo and a manifest, with and without
    ``+prompt.mode=normalized``."""
    from nemo.collections.asr.models.aed_multitask_models import parse_multitask_prompt
    from nemo.collections.asr.parts.utils.transcribe_utils import setup_model
    from omegaconf import OmegaConf

    from nemo_pc.models.adapt import adapt_checkpoint

    stock, stock_path = _stock(family, corpus, tmp_path)
    expected = _texts(stock.transcribe(corpus["audio"], batch_size=4, verbose=False))
    out = tmp_path / "adapted.nemo"
    adapt_checkpoint(stock_path, out, decoders)
    model, _ = setup_model(OmegaConf.create({"model_path": str(out), "pretrained_name": None}), torch.device("cpu"))
    results = {}
    for prompt in ({}, {"mode": "normalized"}):
        override = model.get_transcribe_config()
        override.batch_size = 4
        override.num_workers = 0
        override.text_field = "text"
        override.prompt = parse_multitask_prompt(prompt)
        results[prompt.get("mode", "default")] = _texts(
            model.eval().transcribe(audio=str(corpus["manifest"]), override_config=override)
        )
    assert results["normalized"] == expected
    assert len(results["default"]) == len(expected) and model.default_mode == "punctuated"


def test_an_adapted_conditioned_model_exports_to_onnx_with_both_modes(corpus, tmp_path):
    from nemo_pc.models.adapt import adapt_model
    from nemo_pc.pipelines.onnx_rnnt import OnnxRNNTPCRunner, export_for_onnxruntime
    from nemo_pc.testing.asr import first_batch_features

    stock, _ = _stock("rnnt", corpus, tmp_path)
    model = adapt_model(stock, tmp_path / "work", "conditioned")
    runner = OnnxRNNTPCRunner(export_for_onnxruntime(model, tmp_path / "onnx"))
    features, lengths = first_batch_features(model, corpus["manifest"])
    every = runner.transcribe_all(features, lengths)
    assert sorted(every) == ["normalized", "punctuated"]
    assert every["normalized"] == _texts(model.transcribe(corpus["audio"], mode="normalized", verbose=False))

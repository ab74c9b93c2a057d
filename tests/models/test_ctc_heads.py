import pytest
from omegaconf import OmegaConf

from nemo_pc.models.ctc_heads import CTCHead, ctc_heads
from nemo_pc.models.ctc_pc import CTCPCConfig
from nemo_pc.parts.modes import NORMALIZED_ID, PUNCTUATED_ID
from nemo_pc.parts.styles import compose_mixed


def section(**keys):
    return CTCPCConfig.section(OmegaConf.create({"pc": keys}))


@pytest.mark.parametrize(
    "keys, expected",
    [
        ({}, [("main", PUNCTUATED_ID, None)]),
        ({"target": "normalized"}, [("main", NORMALIZED_ID, None)]),
        ({"inter": {"weight": 0.5}}, [("main", PUNCTUATED_ID, None), ("inter", NORMALIZED_ID, 3)]),
        ({"inter": {"weight": 0.5, "layer": 1}}, [("main", PUNCTUATED_ID, None), ("inter", NORMALIZED_ID, 1)]),
        ({"style_layers": {"branch_layer": 2}}, [("main", PUNCTUATED_ID, None), ("normalized", NORMALIZED_ID, 2)]),
        ({"style_layers": {"branch_layer": 6}}, [("main", PUNCTUATED_ID, None), ("normalized", NORMALIZED_ID, None)]),
        ({"style_embedding": {"layers": [5, 3]}}, [("main", PUNCTUATED_ID, None), ("normalized", NORMALIZED_ID, 2)]),
        (
            {"inter": {"weight": 0.3}, "style_layers": {"branch_layer": 4}},
            [("main", PUNCTUATED_ID, None), ("inter", NORMALIZED_ID, 3), ("normalized", NORMALIZED_ID, 4)],
        ),
    ],
)
def test_heads_follow_the_pc_section(keys, expected):
    pc = section(**keys)
    heads = ctc_heads(pc, num_layers=6)
    assert [(head.name, head.mode, head.layer) for head in heads] == expected
    assert all(OmegaConf.select(pc, head.weight) is not None for head in heads)
    assert heads.main.mixed_format is None


def test_a_mixed_main_head_learns_punctuated_targets_in_its_format():
    heads = ctc_heads(section(target="mixed", mixed_format="m1"), num_layers=4)
    assert (heads.main.mode, heads.main.mixed_format, heads.inter, heads.normalized) == (
        PUNCTUATED_ID,
        "m1",
        None,
        None,
    )


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"inter": {"weight": 0.5, "layer": 4}}, r"pc.inter.layer must be in \[1, 3\]"),
        ({"style_layers": {"branch_layer": 2}, "style_embedding": {"layers": [3]}}, "alternatives"),
    ],
)
def test_bad_head_config_is_refused_by_name(keys, message):
    with pytest.raises(ValueError, match=message):
        ctc_heads(section(**keys), num_layers=4)


def test_mode_text_reads_each_mode_from_a_head():
    punctuated, normalized = "Yes, it is.", "yes it is"
    mixed = CTCHead("main", PUNCTUATED_ID, mixed_format="m2")
    transcript = compose_mixed(normalized, punctuated, "m2")
    assert (mixed.mode_text(transcript, NORMALIZED_ID), mixed.mode_text(transcript, PUNCTUATED_ID)) == (
        normalized,
        punctuated,
    )
    main = CTCHead("main", PUNCTUATED_ID)
    assert (main.mode_text(punctuated, PUNCTUATED_ID), main.mode_text(punctuated, NORMALIZED_ID)) == (
        punctuated,
        normalized,
    )
    inter = CTCHead("inter", NORMALIZED_ID, 2, "inter.weight")
    assert inter.mode_text("yes it", NORMALIZED_ID) == "yes it"

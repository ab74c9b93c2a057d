"""The mode vocabulary: one torch-free module names, numbers and parses the output modes."""

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemo_pc.parts.modes import (
    BOTH,
    MODES,
    NORMALIZED_ID,
    PUNCTUATED_ID,
    mode_id,
    mode_name,
    parse_request,
    prompt_mode,
    requested_ids,
)


def test_importing_the_modes_pulls_in_neither_torch_nor_nemo():
    probe = "import sys, nemo_pc.parts.modes; print(sorted(m for m in ('torch', 'nemo') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("value", "expected"), [("normalized", 0), ("P", 1), (" Punctuated ", 1), (0, 0), (1, 1)])
def test_mode_names_and_ids(value, expected):
    assert mode_id(value) == expected
    assert mode_name(value) == MODES[expected]


@pytest.mark.parametrize("value", ["loud", 2, -1, True, None, "both"])
def test_unknown_modes_name_the_argument(value):
    with pytest.raises(ValueError, match="pc.default_mode must be one of"):
        mode_id(value, "pc.default_mode")


def test_ids_follow_the_manifest_schema():
    assert MODES[NORMALIZED_ID] == "normalized" and MODES[PUNCTUATED_ID] == "punctuated"


@pytest.mark.parametrize(
    ("value", "expected"), [("both", BOTH), (" BOTH ", BOTH), ("n", "normalized"), (1, "punctuated")]
)
def test_a_request_is_a_mode_or_both(value, expected):
    assert parse_request(value) == expected


def test_a_bad_request_lists_every_choice_and_names_the_argument():
    with pytest.raises(ValueError, match=r"prompt mode: mode must be one of normalized, punctuated, both, got 'x'"):
        parse_request("x", "prompt mode")


@given(st.sampled_from(["normalized", "punctuated", "both", "N", "p", 0, 1]))
def test_requested_ids_are_the_ids_of_the_request(value):
    request = parse_request(value)
    ids = requested_ids(request)
    assert ids == ([0, 1] if request == BOTH else [mode_id(request)])
    assert [MODES[i] for i in ids] == (list(MODES) if request == BOTH else [request])


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("punctuated", "punctuated"),
        ({"mode": "normalized"}, "normalized"),
        ({"slots": {"mode": "both"}}, "both"),
        ([{"role": "user"}, {"slots": {"mode": "P"}}], "P"),
        ({"role": "user"}, None),
        (None, None),
    ],
)
def test_the_mode_slot_of_a_prompt(prompt, expected):
    assert prompt_mode(prompt) == expected

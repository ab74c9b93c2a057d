import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "nemo_pc", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150, derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "nemo_pc"))


@pytest.fixture(scope="module")
def tiny_script_data(tmp_path_factory):
    """A tiny P&C manifest and its tokenizer, for the example training scripts (``script_overrides``)."""
    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("scripts")
    manifest = write_pc_manifest(folder / "data")
    return manifest, train_tokenizer(manifest, folder / "tokenizer")

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "nemo_pc", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150, derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "nemo_pc"))


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module's tests (``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_script_data(tmp_path_factory):
    """A tiny P&C manifest and its tokenizer, for the example training scripts (``script_overrides``)."""
    from nemo_pc.testing.asr import train_tokenizer, write_pc_manifest

    folder = tmp_path_factory.mktemp("scripts")
    manifest = write_pc_manifest(folder / "data")
    return manifest, train_tokenizer(manifest, folder / "tokenizer")

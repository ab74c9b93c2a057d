import pytest

from nemo_pc.testing.text import train_tiny_formatter


@pytest.fixture(scope="session")
def tiny_formatter(tmp_path_factory):
    """A tiny tagger and rewriter that memorized the hand-written pairs of nemo_pc.testing.text."""
    return train_tiny_formatter(tmp_path_factory.mktemp("tiny_formatter"))

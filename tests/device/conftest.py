"""The device for the tests of this folder: a CUDA GPU when there is one, else they are skipped.

``NEMO_PC_TEST_DEVICE=cpu`` runs them on CPU (a dry run of ``scripts/device_check.sh``); ``=cuda`` makes a missing
GPU a failure rather than a skip.
"""

import os

import pytest

DEVICE_ENV = "NEMO_PC_TEST_DEVICE"


@pytest.fixture(scope="session")
def device():
    import torch

    name = os.environ.get(DEVICE_ENV)
    if name is None:
        if not torch.cuda.is_available():
            pytest.skip(f"no CUDA device ({DEVICE_ENV}=cpu runs these tests on CPU)")
        name = "cuda"
    if name.startswith("cuda") and not torch.cuda.is_available():
        pytest.fail(f"{DEVICE_ENV}={name} but torch sees no CUDA device")
    return torch.device(name)

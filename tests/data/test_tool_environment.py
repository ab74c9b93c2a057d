"""The TTS and sox processes run without the training allocator that ``make demo`` preloads, and with every other
variable (and every other preloaded library) as it was."""

import os

from nemo_pc.data.recipes.voices import tool_environment


def test_the_training_allocators_leave_ld_preload_and_the_rest_stays():
    tcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
    env = tool_environment({"LD_PRELOAD": tcmalloc, "PATH": "/usr/bin", "LANG": "C.UTF-8"})
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}
    mixed = f"/opt/lib/libfaketime.so.1:{tcmalloc} /usr/lib/libjemalloc.so.2"
    assert tool_environment({"LD_PRELOAD": mixed})["LD_PRELOAD"] == "/opt/lib/libfaketime.so.1"
    assert tool_environment({"PATH": "/bin"}) == {"PATH": "/bin"}


def test_the_process_environment_is_read_and_left_as_it_is(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "libtcmalloc_minimal.so.4")
    env = tool_environment()
    assert "LD_PRELOAD" not in env and env["PATH"]
    assert os.environ["LD_PRELOAD"] == "libtcmalloc_minimal.so.4"

"""benchmarks/speed_head_fit.py: the parts of a step from the callback's marks, their means per window, and bad
arguments. Its meter inside a real head's fit: tests/models/test_aed_transducer.py."""

import pytest
from benchmark_loader import load_benchmark


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_marks_cut_a_step_into_its_parts():
    bench = load_benchmark("speed_head_fit")
    clock = FakeClock()
    meter = bench.PartMeter(clock=clock)

    class Model:
        def _encode_for_transducer(self, seconds):
            clock.now += seconds
            return "states"

        def training_batch_wer(self, state):
            clock.now += 0.5
            return 0.25

    model = Model()
    meter.wrap(model)
    for step in range(2):
        clock.now += 0.1 if step else 0.0  # the loader's wait between steps
        meter.mark("start")
        clock.now += 0.2
        assert model._encode_for_transducer(0.3 if step == 0 else 0.0) == "states"
        if step == 1:
            assert model.training_batch_wer(None) == 0.25
        clock.now += 0.4
        meter.mark("before_backward")
        clock.now += 0.8
        meter.mark("after_backward")
        clock.now += 0.05
        meter.mark("end")
    first, second = meter.steps
    assert first["loader"] is None and second["loader"] == pytest.approx(0.1)
    assert first["encoder"] == pytest.approx(0.3) and second["encoder"] == 0.0
    assert first["training_wer"] == 0.0 and second["training_wer"] == pytest.approx(0.5)
    for step in (first, second):
        assert step["forward"] == pytest.approx(0.6)  # 0.2 + 0.4: the encoder and the WER taken out
        assert step["backward"] == pytest.approx(0.8) and step["optimizer"] == pytest.approx(0.05)
    summary = bench.summarize(meter.steps, 1)
    assert summary["all"]["loader"] == pytest.approx(0.1)  # the first step's None left out of the mean
    assert summary["all"]["encoder"] == pytest.approx(0.15)
    assert [w["first_step"] for w in summary["windows"]] == [0, 1]
    assert summary["windows"][1]["step"] == pytest.approx(0.1 + 0.5 + 0.6 + 0.8 + 0.05)
    text = bench.render([{"variant": "default", "fit_seconds": 4.4, **summary}])
    assert "| `default` | 0.100 | 0.150 | 0.250 | 0.600 | 0.800 | 0.050 |" in text and text.endswith("| 2.200 |")


def test_each_variant_names_the_systems_head():
    bench = load_benchmark("speed_head_fit")
    assert bench.variant_overrides("no_cache", "ctc_inter") == ["model.decoder_ctc.cache_states_gb=0"]
    assert bench.variant_overrides("no_cache", "rnnt_dual") == ["model.transducer.cache_states_gb=0"]
    assert bench.variant_overrides("default", "rnnt_dual") == []


def test_bad_arguments_exit_2(tmp_path, capsys):
    bench = load_benchmark("speed_head_fit")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--demo-dir", str(tmp_path), "--variants", "default,fast"])
    assert exit_info.value.code == 2 and "unknown ['fast']" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--demo-dir", str(tmp_path), "--steps", "0"])
    assert exit_info.value.code == 2
    assert bench.main(["--demo-dir", str(tmp_path)]) == 2
    assert "config.json: not a demo folder" in capsys.readouterr().err

"""The demo application of ``examples/demo_pc.py``: the recipe (:mod:`pc_demo.pipeline`), its ``REPORT.md``
(:mod:`pc_demo.report`) and the papers' claims (:mod:`pc_demo.claims`, computed by ``benchmarks/run_all.py``).
It uses the nemo_pc package and is not part of it: the wheel does not ship it, and it imports nothing of
``benchmarks/``.

Scripts in ``examples/`` import it directly; ``benchmarks/`` scripts import it through ``suite.demo_module``, and
pytest puts ``examples/`` on ``sys.path`` (``pythonpath`` in ``pyproject.toml``).
"""

"""The demo application of ``examples/demo_pc.py``: the recipe (:mod:`pc_demo.pipeline`), its ``REPORT.md``
(:mod:`pc_demo.report`) and the papers' claims table (:mod:`pc_demo.claims`, also read by
``benchmarks/run_all.py``). It uses the nemo_pc package and is not part of it: the wheel does not ship it.

Scripts in ``examples/`` import it directly; ``benchmarks/`` scripts put ``examples/`` on ``sys.path``, and pytest
does the same (``pythonpath`` in ``pyproject.toml``).
"""

"""The demo application (``examples/demo_pc.py``, ``make demo``): the recipe (:mod:`.pipeline`), its command line
(:mod:`.command`), its ``REPORT.md`` (:mod:`.report`) and the papers' claims measured on its output folder
(:mod:`.claims`, with :mod:`.claim_rules` and :mod:`.aed_claims`, computed by ``benchmarks/run_all.py``).

Importing it imports no NeMo: each step imports what it needs when it runs.
"""

"""The main job end to end on a CPU machine (what ``make demo`` runs): ``python examples/demo_pc.py --help``.

The pipeline and its options live in :mod:`nemo_pc.pipelines.demo`.
"""

from nemo_pc.pipelines.demo.command import main

if __name__ == "__main__":
    main()

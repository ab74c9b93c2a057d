import sys

from nemo_pc.cli import main

sys.exit(main())

"""``python -m jupyter_dw doctor``: the same commands as ``jupyter dw``."""

import sys

from .cli import main

sys.exit(main())

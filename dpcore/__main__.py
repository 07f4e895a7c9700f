"""``python -m dpcore …``: see :mod:`dpcore.cli`."""

import sys

from dpcore.cli import main

sys.exit(main())

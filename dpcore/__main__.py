"""``python -m dpcore …``: see :mod:`dpcore.interfaces.cli`."""

import sys

from dpcore.interfaces.cli import main

sys.exit(main())

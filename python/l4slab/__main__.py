"""``python -m l4slab`` is the ``l4slab`` command."""

import sys

from .cli import main

sys.exit(main())

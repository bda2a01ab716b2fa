"""The codec demo moved to :mod:`cproducer.tools.demo`; this path stays as its alias
(``python -m cproducer.demo`` runs it)."""

import sys

from cproducer.tools import demo as _moved
from cproducer.tools.demo import *  # noqa: F403  (what type checkers see through the old path)

if __name__ == "__main__":
    _moved.main()
sys.modules[__name__] = _moved

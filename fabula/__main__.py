"""``python -m fabula``: the same as the ``fabula`` console script."""

from fabula.cli import main

main()

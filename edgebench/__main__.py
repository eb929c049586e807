"""``python -m edgebench``: the same command line as the ``edgebench`` script."""

from edgebench.cli import main

raise SystemExit(main())

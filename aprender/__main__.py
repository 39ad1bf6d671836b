"""``python -m aprender``: the ``aprender`` command line."""

from aprender.cli import main

raise SystemExit(main())

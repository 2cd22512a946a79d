"""``python -m snapbench``: the same command line as the ``snapbench`` script."""

from .cli import main

main()

"""``python -m cli``: the ``arena`` command."""

from cli import main

main()

"""``python -m daifugo_arena.cli``: the ``arena`` command."""

from daifugo_arena.cli import main

main()

"""Daifugo Arena's own top-level package for what is not a folder of the design card: the
command line (``daifugo_arena.cli``, the ``arena`` script) and the dial-out gateway
(``daifugo_arena.gateway``). One distinctive installed name instead of generic ones."""

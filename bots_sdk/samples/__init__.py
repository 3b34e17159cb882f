"""Sample bots for every rule set: ``random``, ``greedy``, ``heuristic`` and ``search``.

>>> from bots_sdk.samples import SAMPLE_BOTS
>>> bot = SAMPLE_BOTS["greedy"]()          # a fresh instance

Each class plays all three rule sets (it looks at ``request.ruleset``). Constructors take an
optional ``seed`` (int) so that a run is reproducible.
"""

from bots_sdk.samples.greedy import GreedyBot
from bots_sdk.samples.heuristic import HeuristicBot
from bots_sdk.samples.random_bot import RandomBot
from bots_sdk.samples.search import SearchBot

#: Sample bot name -> class.
SAMPLE_BOTS = {"random": RandomBot, "greedy": GreedyBot, "heuristic": HeuristicBot, "search": SearchBot}

__all__ = ["SAMPLE_BOTS", "RandomBot", "GreedyBot", "HeuristicBot", "SearchBot"]

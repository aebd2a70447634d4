"""The provider suite: a provider driven as a human drives its UI (``PRV-*``, ``ANS-*``).

Its checks (:mod:`._checks`) register themselves when the suite's runner
imports them; nothing else in the package uses a name of theirs.
"""

__all__: list[str] = []

"""Short-term memory and the turn: sessions and their messages, ``get_context`` and ``record``."""

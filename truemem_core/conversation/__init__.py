"""Short-term memory and the turn: sessions and their messages; ``service.Conversation``
(``get_context`` and ``record``)."""

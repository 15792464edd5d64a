"""Syntheses: summaries of related things a user said, that keep their sources.

A session's synthesis (``kind`` "session", ``key`` the session id) is rebuilt by a
background job after each record that adds a user message (``jobs.handlers``):
written by the LLM when one is configured (``written``), else extractive
(``extractive``). Its sources are only the messages whose content made it into the
text. Stored and searched by ``store``; served in the context's token budget beside
facts and turns (``conversation.packing``).
"""

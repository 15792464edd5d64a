"""Long-term memory: the facts about a user and everything that decides their fate.

Pure decisions (``dedup``, ``pruning``, ``lifecycle``, ``admission``) sit beside
the SQL that applies them (``write``, ``edit``, ``maintenance``, ``reads``,
``portability``), each taking the caller's connection and a ``deps.MemoryDeps``;
``service.MemoryService`` is the transaction boundary, ``item_service.ItemService``
that of store items (``items``).
"""

"""The knowledge graph: typed entities, bi-temporal observations and relations, causal chains.

A foundation of ``memory`` and ``search`` (docs/architecture.md): a memory's graph facts
end with it in the same transaction (``superseded``, ``erasure``), and the hybrid search
runs the graph channel (``channel``). It imports nothing of either.

Modules: ``records`` (what the graph returns and takes), ``names`` (pure
normalisation and parsing of inputs), ``tables`` (the row <-> record mapping and
the time filters), ``write`` (``apply_facts`` and retractions), ``reads``
(lookups, lists, ``find_entities``, ``current_facts``), ``traversal`` (one
recursive CTE each for ``causes``, ``effects`` and ``path``), ``erasure`` and
``service`` (``GraphService``, one transaction per call, behind ``TrueMem``).
"""

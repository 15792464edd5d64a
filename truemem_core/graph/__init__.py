"""The knowledge graph: typed entities, bi-temporal observations and relations, causal chains.

Modules: ``records`` (what the graph returns and takes), ``names`` (pure
normalisation and parsing of inputs), ``tables`` (the row <-> record mapping and
the time filters), ``write`` (``apply_facts`` and retractions), ``reads``
(lookups, lists, ``find_entities``, ``current_facts``), ``traversal`` (one
recursive CTE each for ``causes``, ``effects`` and ``path``), ``erasure`` and
``service`` (``GraphStore``, one transaction per call, behind ``TrueMem``).
"""

"""``truemem import``: memories from mem0 and LangMem (``formats``: the pure parsers;
``command``: the command line)."""

"""Thin adapters from TrueMem to LLM frameworks: ``langchain`` and ``llama_index``."""

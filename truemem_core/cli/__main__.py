"""``python -m truemem_core.cli``: the ``truemem`` command (as pool workers start it)."""

from truemem_core.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())

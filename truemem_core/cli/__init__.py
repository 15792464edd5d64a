"""The ``truemem`` command line: applications built on the core, not part of it.

``app`` parses the command line and runs a command; each command group has its
module. ``python -m truemem_core.cli`` is the ``truemem`` command.
"""

from truemem_core.cli.app import main

__all__ = ["main"]

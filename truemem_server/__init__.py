"""TrueMem as a service: the HTTP API (FastAPI), its API keys and tenants, its commands.

Nothing is imported here: ``truemem_server.cli`` (``truemem serve``, ``truemem keys``)
must load without the ``server`` extra to say how to install it. The app is
``truemem_server.app.create_app``; docs/server.md describes the service.
"""

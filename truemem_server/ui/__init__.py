"""The web inspector at ``/ui``: see, search, edit and erase what is remembered.

Server-rendered (Jinja2, autoescaped), no script, one stylesheet; readable on a
laptop and at phone width. ``router`` is included by ``truemem_server.app``.
``access`` holds the sign-in and the form checks, ``pages`` the routes,
``render`` the templates and the error pages, ``users`` the tenant's user list,
``graph`` the knowledge graph's entity pages.
"""

from truemem_server.ui.graph import router as _graph
from truemem_server.ui.pages import router

router.include_router(_graph)  # the knowledge graph's pages (``graph``)

__all__ = ["router"]

"""The web inspector at ``/ui``: see, search, edit and erase what is remembered.

Server-rendered (Jinja2, autoescaped), no script, one stylesheet; readable on a
laptop and at phone width. ``router`` is included by ``truemem_server.app``.
``access`` holds the sign-in and the form checks, ``pages`` the routes,
``render`` the templates and the error pages, ``users`` the tenant's user list.
"""

from truemem_server.ui.pages import router

__all__ = ["router"]

"""What every route asks for: the app's ``TrueMem``, how it shows message ids, and the
caller's storage user id."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from truemem_core import TrueMem
from truemem_server.auth import Principal, require_principal, require_writer, stored_user
from truemem_server.keys import MAX_USER_CHARS
from truemem_server.message_ids import MessageIds


def memory_of(request: Request) -> TrueMem:
    memory: TrueMem = request.app.state.memory
    return memory


async def message_ids_of(request: Request) -> MessageIds:
    ids: MessageIds = await request.app.state.message_ids.get()
    return ids


Memory = Annotated[TrueMem, Depends(memory_of)]
Ids = Annotated[MessageIds, Depends(message_ids_of)]
UserPath = Annotated[str, Path(min_length=1, max_length=MAX_USER_CHARS,
                               description="the end user's id in your tenant")]


async def _read_user(user_id: UserPath,
                     principal: Annotated[Principal, Depends(require_principal)]) -> str:
    return stored_user(principal, user_id)


async def _write_user(user_id: UserPath,
                      principal: Annotated[Principal, Depends(require_writer)]) -> str:
    return stored_user(principal, user_id)


ReadUser = Annotated[str, Depends(_read_user)]
"""The storage id of the path's user, for a key that may read it."""
WriteUser = Annotated[str, Depends(_write_user)]
"""The storage id of the path's user, for a key that may write it."""

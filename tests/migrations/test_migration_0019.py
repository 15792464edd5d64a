"""Migration 0019: user ids stored in another Unicode form, or with a space around them,
become the NFC id without the space that every call now takes, in every table, on both
backends; an id whose new form is already a user is left as it is. The store gets the
key of the message ids the server shows, once: a downgrade and an upgrade keep it."""

from __future__ import annotations

import db_access
from migration_steps import current, head, migrate
from sqlalchemy import column, table, update

from truemem_core import TrueMem
from truemem_core.storage.schema import memories, messages, sessions, store_meta
from truemem_server.key_table import api_keys
from truemem_server.keys import KeyStore

TABLES = [table(name, column("user_id")) for name in (
    "memories", "memory_events", "sessions", "messages", "admission_rejections", "jobs",
    "api_keys", "graph_entities", "graph_observations", "graph_relations", "store_items")]


async def test_user_ids_stored_earlier_are_reached_by_their_accepted_form(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        for user in ("acme/Jose", "acme/ana", "acme/bob", "acme/eve"):
            await memory.aadd_memory(user, f"A fact of {user}")
            await memory.arecord(user, "s1", f"Hello from {user}", "Hi!")
    keys = KeyStore(tmp_url)
    try:
        await keys.create("acme", user="Jose")
    finally:
        await keys.close()
    key = db_access.rows(tmp_url, store_meta.select().where(
        store_meta.c.key == "message_id_key"))[0].value
    assert len(bytes.fromhex(key)) == 32
    await migrate(tmp_url, "downgrade", "0018")  # the revision before 0019
    stored_earlier = {"acme/Jose": "acme/Jose\u0301", "Jose": "Jose\u0301",  # NFD José
                      "acme/ana": "acme/ana ", "acme/eve": "acme/bob "}  # bob is taken
    # an SQLite store also keeps each user's slot in the past messages' full-text index
    slots = [table("messages_fts_users", column("user_id"))] if "sqlite" in tmp_url else []
    for each in TABLES + slots:
        for now, then in stored_earlier.items():
            db_access.execute(tmp_url, update(each).where(each.c.user_id == now).values(
                user_id=then))

    await migrate(tmp_url, "upgrade", "head")
    assert await current(tmp_url) == head()
    assert [row.value for row in db_access.rows(tmp_url, store_meta.select().where(
        store_meta.c.key == "message_id_key"))] == [key]
    for rows in (memories, sessions, messages):
        assert {row.user_id for row in db_access.rows(tmp_url, rows.select())} == {
            "acme/Jos\u00e9", "acme/ana", "acme/bob", "acme/bob (2)"}
    assert [row.user_id for row in db_access.rows(tmp_url, api_keys.select())] == [
        "Jos\u00e9"]
    for slot in slots:  # keyword recall finds a renamed user's past messages under the new id
        assert {row.user_id for row in db_access.rows(tmp_url, slot.select())} == {
            row.user_id for row in db_access.rows(tmp_url, messages.select())}
    async with TrueMem(tmp_url) as memory:
        assert [m.text for m in await memory.alist_memories("acme/Jose\u0301")] == [
            "A fact of acme/Jose"]
        state = await memory.sessions.aget("acme/ana", "s1")
        assert [m.content for m in state.recent] == ["Hello from acme/ana", "Hi!"]
        assert [m.text for m in await memory.alist_memories("acme/bob")] == [
            "A fact of acme/bob"]
        # "acme/bob " could not become "acme/bob": under a name every call takes, so its
        # data can be read, exported and erased
        assert [m.text for m in await memory.alist_memories("acme/bob (2)")] == [
            "A fact of acme/eve"]
        assert (await memory.aerase_user("acme/bob (2)")) > 0
        assert (await memory.aexport_user("acme/bob (2)"))["memories"] == []

"""The inspector shows a conversation's synthesis (escaped) on its page, and only its
own user's."""

from __future__ import annotations

from api_client import open_api

ORIGIN = {"Origin": "http://truemem.test"}


async def test_a_conversation_page_shows_its_synthesis(store_url: str) -> None:
    async with open_api(store_url) as api:
        await api.memory.arecord_messages("acme/ana", "boat", [
            ("user", "I bought a sailing boat called <Marlin>."), ("assistant", "Ahoy!"),
            ("user", "She needs new sails before the winter."),
            ("user", "I moor her at the marina in Vigo.")])
        await api.memory.arecord_messages("acme/bob", "boat", [
            ("user", "I sold my old kayak to a neighbour."), ("user", "I miss the kayak."),
            ("user", "The kayak was bright yellow.")])
        await api.memory.adrain()
        key = (await api.key("acme"))["Authorization"].removeprefix("Bearer ")  # type: ignore[arg-type]
        signed = await api.client.post("/ui/login", data={"key": key}, headers=ORIGIN)
        assert signed.status_code == 303, signed.text
        shown = await api.client.get("/ui/users/ana/conversation", params={"id": "boat"})
        assert shown.status_code == 200
        assert "<h2>Synthesis</h2>" in shown.text and "drawn from 3 of its messages" in shown.text
        assert "called &lt;Marlin&gt;." in shown.text and "<Marlin>" not in shown.text
        assert "kayak" not in shown.text

"""Syntheses over HTTP on both backends: listed per user with the message ids the API
shows, served in a context, exported and imported with those ids, never another
tenant's."""

from __future__ import annotations

from api_client import open_api

ANA = "/v1/users/ana"
SAID = ["I bought a wooden sailing boat called Marlin.",
        "Marlin needs new sails before the winter.", "I moor her at the marina in Vigo."]


async def test_syntheses_are_listed_served_and_exported_with_shown_message_ids(
    store_url: str,
) -> None:
    async with open_api(store_url) as api:
        auth = await api.key()
        shown = []
        for said in SAID:
            recorded = await api.client.post("/v1/record", headers=auth, json={
                "user_id": "ana", "session_id": "boat", "user_message": said,
                "assistant_message": "Ahoy!"})
            shown.append(recorded.json()["user_message_id"])
        await api.memory.adrain()
        listed = await api.client.get(f"{ANA}/syntheses", headers=auth)
        assert listed.status_code == 200, listed.text
        [synthesis] = listed.json()
        assert (synthesis["kind"], synthesis["key"]) == ("session", "boat")
        assert synthesis["text"] == " ".join(SAID)
        assert synthesis["message_ids"] == shown  # as the API shows them
        other = await api.key("globex")  # the same user id in another tenant: nothing
        assert (await api.client.get(f"{ANA}/syntheses", headers=other)).json() == []

        context = (await api.client.post("/v1/context", headers=auth, json={
            "user_id": "ana", "session_id": "new", "message": "Tell me about my boat"})).json()
        assert [hit["synthesis"]["id"] for hit in context["syntheses"]] == [synthesis["id"]]
        assert "Marlin" in context["system_prompt"]

        export = (await api.client.get(f"{ANA}/export", headers=auth)).json()
        assert export["syntheses"][0]["message_ids"] == shown
        assert export["sessions"][0]["messages"][0]["id"] == shown[0]
        imported = await api.client.post("/v1/users/ben/import", headers=auth, json=export)
        assert imported.status_code == 201, imported.text
        [copy] = (await api.client.get("/v1/users/ben/syntheses", headers=auth)).json()
        ben = (await api.client.get("/v1/users/ben/sessions/boat", headers=auth)).json()
        assert copy["message_ids"] == [m["id"] for m in ben["recent"] if m["role"] == "user"]
        assert copy["message_ids"] != synthesis["message_ids"]

"""``get_context``'s second hop (``search.hop``): it follows the names and words of the
first step's best results to what the question alone does not reach, within the same
budget, and only ever in the asking user's own history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from truemem_core import InvalidInputError, Settings, TrueMem
from truemem_core.embeddings import TiktokenCounter
from truemem_core.records import RecalledTurn, fact_line, turn_line
from truemem_core.search import hop
from truemem_core.search.query_text import MAX_QUERY_CHARS

MARCH = datetime(2024, 3, 8, 14, 30, tzinfo=UTC)
QUESTION = "Where did my sister move to?"
ANSWER = "Ingrid says the view from the flat in Tromsø is of the harbour."
# one result per corpus: the first step finds the sister, never the city
NARROW = Settings(recall_k=1, search_k=1)


def _history(memory: TrueMem, user: str = "ana") -> None:
    """The sister is named in one session; where she lives, in another that never says
    "sister"."""
    memory.record_messages(user, "family", [
        ("user", "My sister Ingrid moved abroad last spring.", MARCH),
        ("assistant", "That is a big step for her!", MARCH),
    ])
    memory.record_messages(user, "chat", [
        ("user", ANSWER, MARCH + timedelta(days=9)),
        ("assistant", "A harbour view sounds lovely.", MARCH + timedelta(days=9)),
    ])
    memory.record_messages(user, "work", [
        ("user", "The Certbot renewal failed because port 80 was blocked.", MARCH),
        ("assistant", "Open port 80 and run certbot renew again.", MARCH),
    ])


def _served(store_url: str, settings: Settings) -> list[RecalledTurn]:
    with TrueMem(store_url, settings=settings) as memory:
        return memory.get_context("ana", "now", QUESTION).recalled


def test_an_answer_named_only_through_the_first_hit_is_served_with_the_hop(
    store_url: str,
) -> None:
    with TrueMem(store_url) as memory:
        _history(memory)
        memory.drain()
    without = _served(store_url, NARROW.replace(weight_hop=0.0))
    assert [t.content for t in without] == ["My sister Ingrid moved abroad last spring."]
    served = {t.content: t for t in _served(store_url, NARROW)}
    assert ANSWER in served
    assert served[ANSWER].ranks == {"hop": 1}  # reached by the hop alone
    # below the hit that brought it
    assert served[ANSWER].score < served["My sister Ingrid moved abroad last spring."].score


def test_the_hop_is_timed_and_off_at_weight_zero(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        _history(memory)
        memory.drain()
        assert "hop" in memory.get_context("ana", "now", QUESTION).timings
    with TrueMem(store_url, settings=Settings(weight_hop=0.0)) as memory:
        context = memory.get_context("ana", "now", QUESTION)
        assert "hop" not in context.timings
        assert all("hop" not in t.ranks for t in context.recalled)


@pytest.mark.parametrize("budget", [0, 15, 40, 1500])
def test_the_budget_holds_with_the_hop(store_url: str, budget: int) -> None:
    with TrueMem(store_url, settings=Settings(context_token_budget=budget)) as memory:
        _history(memory)
        for n in range(8):
            memory.add_memory("ana", f"Ingrid sent postcard number {n} from the harbour")
        memory.drain()
        tokens = TiktokenCounter(memory.settings.token_encoding)
        context = memory.get_context("ana", "now", QUESTION)
        spent = (sum(tokens.count(fact_line(h.memory) + "\n") for h in context.memories)
                 + sum(tokens.count(turn_line(t) + "\n") for t in context.recalled))
        assert context.budget_spent == spent <= budget
        if budget == 1500:  # room for everything: the hop's finds are in
            assert any("hop" in t.ranks for t in context.recalled)


def test_the_hop_never_reaches_another_users_words(store_url: str) -> None:
    with TrueMem(store_url, settings=NARROW) as memory:
        memory.record_messages("ana", "family", [
            ("user", "My sister Ingrid moved abroad last spring.", MARCH)])
        # the words ana's first hit leads to, said by someone else
        memory.record_messages("bo", "chat", [("user", ANSWER, MARCH)])
        memory.add_memory("bo", "Ingrid lives in Tromsø, by the harbour")
        memory.drain()
        context = memory.get_context("ana", "now", QUESTION)
        assert [t.content for t in context.recalled] == [
            "My sister Ingrid moved abroad last spring."]
        assert not context.memories or all(h.memory.user_id == "ana" for h in context.memories)
        # bo's own hop does reach them: the words alone would lead there
        theirs = memory.get_context("bo", "now", "Where did Ingrid move to?")
        assert ANSWER in {t.content for t in theirs.recalled}


def test_a_negative_hop_weight_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="weight_hop"):
        Settings(weight_hop=-1.0)


# -- the pure parts ------------------------------------------------------------------


def test_the_hop_query_adds_the_seeds_names_then_their_new_words_to_the_question() -> None:
    query = hop.hop_query("Where did my sister move?", [
        "My sister Ingrid moved abroad last spring with Ole.", "Thanks, that helped a lot!"])
    terms = query.split()
    assert terms[:4] == ["sister", "move", "ingrid", "ole"]  # names: capitalised mid-sentence
    assert terms.count("sister") == 1 and "my" not in terms and "thanks" in terms
    assert hop.hop_query("Where is Ingrid?", ["Ingrid."]) == ""  # nothing new: no hop
    many = " ".join(f"Word{n}x" for n in range(100))
    long_question = " ".join(f"topic{n}" for n in range(100))
    assert len(hop.hop_query(long_question, [f"a {many}"]).split()) == 2 * hop.TERMS


def test_the_hop_reads_a_long_message_as_far_as_the_search_does() -> None:
    """A pasted document is searched by its head (``MAX_QUERY_CHARS``): the hop reads
    no further to learn what was asked, so a word past the head is new to it, and a
    100,000-character message costs the loop every user shares a head's reading."""
    head = "Where did my sister move? " + "filler " * (MAX_QUERY_CHARS // 7)
    assert "ingrid" in hop.hop_query(head + " Ingrid", ["My sister Ingrid moved."]).split()
    assert hop.hop_query("Where is Ingrid?", ["My sister Ingrid moved."]) == (
        "ingrid sister moved")  # asked in the head: not added again


def test_join_ranks_the_hop_as_one_more_channel() -> None:
    def hit(key: int, score: float, **ranks: int) -> RecalledTurn:
        return RecalledTurn(key, "s", "user", str(key), MARCH, score, 1,
                            {name: 1.0 for name in ranks}, dict(ranks))

    found = [hit(1, 0.05, vector=1), hit(2, 0.02, vector=2)]
    reached = [hit(1, 9.0, keyword=1), hit(3, 8.0, keyword=1), hit(2, 7.0, keyword=1)]
    joined = hop.join(found, reached, lambda t: t.message_id, weight=60.0, rrf_k=60,
                      seeds=[1], ceiling=0.05)
    by_id = {t.message_id: t for t in joined}
    assert by_id[1] == found[0]  # a seed is not ranked by its own words
    assert by_id[3].ranks == {"hop": 1} and by_id[3].score < 0.05  # capped below the seed
    assert by_id[2].ranks == {"vector": 2, "hop": 2}
    assert by_id[2].score == pytest.approx(0.02 + 60 / 62)
    assert [t.message_id for t in joined] == sorted(by_id, key=lambda i: -by_id[i].score)
    assert hop.join(found, reached, lambda t: t.message_id, weight=0.0, rrf_k=60,
                    seeds=[], ceiling=0.05) == found

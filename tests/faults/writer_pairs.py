"""Two writers of one user's rows at once, every acknowledged write kept in a ledger.

``race_writers(memory, first, second)`` runs two (or more) of ``WRITERS`` in their own
threads, released together, ``rounds`` calls each, on one user; then checks the user's
store against what the calls acknowledged:

* a write acknowledged (its call returned) is in the store, unless an erasure that
  began after it returned removed it; one acknowledged before an erasure began is gone;
* of one memory edited in a loop, the store holds the last acknowledged edit, no older
  one (``add_memories`` restates that memory meanwhile), and each change in its history
  started from the text the change before it wrote (none decided on a stale read);
* a memory whose deletion was acknowledged is not there;
* no call fails but with a ``NotFoundError`` for a memory that is gone (deleted or
  erased): no untyped error (a bare ``KeyError``), no ``StorageError`` (a deadlock).

Only the standard library and ``truemem_core``: ``benchmarks/faults.py`` can import it
(``sys.path`` with ``tests/faults``) as the fault tests do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from truemem_core import NotFoundError, TrueMem, TrueMemError
from truemem_core.memory.peer_import import PeerRecord
from truemem_core.memory.portability import FORMAT

WRITERS = ("update", "delete", "add", "add_memories", "erase", "maintain", "import", "graph",
           "items", "record")

# The memory ``update`` edits and ``add_memories`` restates: a restatement folds into it
# and keeps the longer (edited) text, so it never changes the text by itself.
RESTATED = "Keeps the spare house key under the blue flowerpot by the back door"
DELETES = 6  # memories ``delete`` deletes a round
IMPORTED = "2025-01-02T03:04:05+00:00"
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "zu", "be", "do", "fa")


def edit_text(n: int) -> str:
    return f"{RESTATED} (edit {n:03d})"


def _name(writer: str, n: int) -> str:
    """A made-up name, distinct per writer and round: facts that differ by a name
    are different facts (no two fold into one)."""
    index = WRITERS.index(writer) * 1000 + n
    syllables = [_SYLLABLES[(index // 12 ** k) % 12] for k in range(4)]
    return "".join(syllables).capitalize()


def fact(writer: str, n: int) -> str:
    return f"Has a pen pal called {_name(writer, n)}"


class _NotKept(Exception):
    """A call that succeeded without writing (admission control turned the fact down)."""


@dataclass(frozen=True, slots=True)
class Ack:
    """A write a call acknowledged: what it wrote and when the call ran."""

    writer: str
    what: str  # a memory's text, an entity's name, a deleted memory's id, an erasure
    began: float
    ended: float


@dataclass
class RaceReport:
    writers: tuple[str, ...]
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)  # acknowledged, not in the store
    rewritten: list[str] = field(default_factory=list)  # an older edit, a deleted memory back
    errors: list[str] = field(default_factory=list)  # every failure but the NotFoundErrors allowed
    untyped: int = 0  # of the errors, those that are no TrueMemError

    @property
    def violations(self) -> list[str]:
        return self.lost + self.rewritten + self.errors


class _Run:
    def __init__(self, memory: TrueMem, user: str, rounds: int) -> None:
        self.memory, self.user, self.rounds = memory, user, rounds
        self.acks: list[Ack] = []
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        # ``delete`` deletes these, several a round: it lasts as long as the other writer
        seeded = memory.add_memories(user, [edit_text(0), *(
            fact("delete", n) for n in range(DELETES * rounds))])
        self.edited = seeded[0].id
        self.deletable = [m.id for m in seeded[1:]]

    def call(self, writer: str, what: str, write: Callable[[], Any]) -> bool:
        """Run one write; its acknowledgement goes to the ledger. False: it failed."""
        began = time.monotonic()
        try:
            write()
        except _NotKept:
            return False
        except Exception as exc:  # counted and checked, not raised: the other writer goes on
            # a NotFoundError of an edit or a deletion: the memory was deleted or erased
            if not (isinstance(exc, NotFoundError) and writer in ("update", "delete")):
                with self.lock:
                    self.errors.append(exc)
            return False
        with self.lock:
            self.acks.append(Ack(writer, what, began, time.monotonic()))
        return True

    # -- the writers: ``rounds`` calls each -----------------------------------------

    def update(self) -> None:
        for n in range(1, self.rounds + 1):
            text = edit_text(n)
            if not self.call("update", text, lambda t=text: self.memory.update_memory(
                    self.user, self.edited, text=t)):
                return  # the memory is gone

    def delete(self) -> None:
        for n, memory_id in enumerate(self.deletable):
            if n == len(self.deletable) // 2:  # the edited memory, while it is being edited
                self.call("delete", self.edited, lambda: self.memory.delete_memory(
                    self.user, self.edited))
            self.call("delete", memory_id, lambda i=memory_id: self.memory.delete_memory(
                self.user, i))

    def add(self) -> None:
        for n in range(self.rounds):
            text = fact("add", n)
            self.call("add", text, lambda t=text: self.memory.add_memory(self.user, t))

    def add_memories(self) -> None:
        for n in range(self.rounds):
            texts = [fact("add_memories", n), fact("add_memories", self.rounds + n)]
            self.call("add_memories", "\n".join(texts), lambda t=texts: self.memory.add_memories(
                self.user, [RESTATED, *t]))

    def erase(self) -> None:
        for _ in range(self.rounds):
            self.call("erase", "", lambda: self.memory.erase_user(self.user))

    def maintain(self) -> None:
        for _ in range(self.rounds):
            self.call("maintain", "", lambda: self.memory.admin.maintain(self.user))

    def import_(self) -> None:
        """An export restored (``import_user``) and another system's record imported
        (``import_records``, as ``truemem import`` does), in turns."""
        for n in range(self.rounds):
            text = fact("import", n)
            if n % 2:
                record = PeerRecord(self.user, ("peer",), f"k{n}", {}, text)
                self.call("import", text, lambda r=record: self._imported(r))
                continue
            export = {"format": FORMAT, "memories": [
                {"text": text, "importance": 3, "created_at": IMPORTED, "updated_at": IMPORTED}]}
            self.call("import", text, lambda e=export: self.memory.import_user(self.user, e))

    def _imported(self, record: PeerRecord) -> None:
        report = self.memory.items.import_records([record])
        if report.rejected:  # admission control's verdict: nothing was acknowledged
            raise _NotKept

    def items(self) -> None:
        for n in range(self.rounds):
            text = fact("items", n)
            self.call("items", text, lambda t=text, k=f"k{n}": self.memory.items.put(
                self.user, ("notes",), k, {"n": k}, text=t))

    def graph(self) -> None:
        for n in range(self.rounds):
            name = _name("graph", n)
            self.call("graph", name, lambda e=name: self.memory.graph.add_entities(
                self.user, [{"name": e, "type": "person"}]))

    def record(self) -> None:
        for n in range(self.rounds):
            said = f"Noted, {_name('record', n)}."
            self.call("record", said, lambda t=said: self.memory.record_messages(
                self.user, "s", [("assistant", t)]))

    def writer(self, name: str) -> Callable[[], None]:
        method: Callable[[], None] = getattr(self, "import_" if name == "import" else name)
        return method

    # -- the ledger, checked --------------------------------------------------------

    def check(self, report: RaceReport) -> None:
        texts = {m.text for m in self.memory.list_memories(self.user, include_archived=True)}
        ids = {m.id for m in self.memory.list_memories(self.user, include_archived=True)}
        entities = {e.name for e in self.memory.graph.get(self.user).entities}
        said = {m["content"] for chat in self.memory.export_user(self.user)["sessions"]
                for m in chat["messages"]}
        erasures = [a for a in self.acks if a.writer == "erase"]
        report.acknowledged = len(self.acks)
        for ack in self.acks:
            wrote = ([] if ack.writer in ("update", "delete", "erase", "maintain")
                     else ack.what.split("\n"))
            held = {"graph": entities, "record": said}.get(ack.writer, texts)
            if any(erased.began > ack.ended for erased in erasures):
                report.rewritten += [f"{ack.writer}: {w!r} outlived a later erase_user"
                                     for w in wrote if w in held]
            elif all(ack.began > erased.ended for erased in erasures):
                report.lost += [f"{ack.writer}: acknowledged {w!r} is not stored"
                                for w in wrote if w not in held]
        deleted = {a.what for a in self.acks if a.writer == "delete"}
        report.rewritten += [f"delete: deleted memory {i} is back" for i in deleted & ids]
        edits = [a.what for a in self.acks if a.writer == "update"]
        gone = self.edited in deleted or bool(erasures)
        expected = set() if gone else {edits[-1] if edits else edit_text(0)}
        stored = {t for t in texts if t.startswith(f"{RESTATED} (edit ")}
        if stored != expected:
            report.rewritten.append(
                f"update: stored {sorted(stored)}, last acknowledged {sorted(expected)}")
        if not gone:  # each change started from the text the one before left
            written = None
            for event in self.memory.history(self.user, self.edited):
                if event.old_text is not None and written not in (None, event.old_text):
                    report.rewritten.append(f"{event.action}: changed {event.old_text!r} "
                                            f"after {written!r} was written")
                written = event.new_text or written
        report.errors += [f"{type(e).__name__}: {e}" for e in self.errors]
        report.untyped = sum(not isinstance(e, TrueMemError) for e in self.errors)


def race_writers(
    memory: TrueMem, *writers: str, rounds: int = 12, user: str = "pair",
    timeout: float = 120.0,
) -> RaceReport:
    """Race ``writers`` (names of ``WRITERS``, each once) on ``user`` of ``memory``,
    ``rounds`` calls each, and check the ledger (see the module's docstring). A writer
    still running after ``timeout`` seconds is reported (a hang)."""
    run = _Run(memory, user, rounds)
    barrier = threading.Barrier(len(writers))

    def go(writer: Callable[[], None]) -> None:
        barrier.wait()
        writer()

    threads = [threading.Thread(target=go, args=(run.writer(name),), daemon=True)
               for name in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    report = RaceReport(writers)
    hung = [name for name, t in zip(writers, threads, strict=True) if t.is_alive()]
    if hung:
        report.errors.append(f"still running after {timeout}s: {', '.join(hung)}")
        return report
    run.check(report)
    return report

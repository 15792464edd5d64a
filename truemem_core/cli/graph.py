"""``truemem graph show|why|export --user U``: the knowledge graph from the command line.

``app`` registers the parser and calls ``run`` with an open ``TrueMem``. Times are
ISO 8601; one without an offset is UTC. Mistakes are ``InvalidInputError``
(``app.main`` prints them as one ``truemem: error:`` line).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from truemem_core import Graph, Hop, InvalidInputError, Observation, Relation, TrueMem


def instant(text: str) -> datetime:
    """An ISO 8601 date or date and time; UTC when it names no offset."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 date or time: {text!r} (e.g. 2026-03-15 or "
            "2026-03-15T09:30+01:00)") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def add_parser(commands: Any) -> None:
    graph = commands.add_parser("graph", help="show the knowledge graph, why something "
                                "happened (its causes), or export it as JSON")
    actions = graph.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="entities, observations and relations")
    show.add_argument("--entity", help="only this entity (name, alias or id)")
    why = actions.add_parser("why", help="the causal chain that led to ENTITY, with evidence")
    why.add_argument("entity", metavar="ENTITY")
    why.add_argument("--depth", type=int, default=3, help="hops back (default 3)")
    export = actions.add_parser("export", help="the graph as the MCP memory server's JSON, "
                                "with TrueMem's timestamps")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    for sub in (show, why, export):
        sub.add_argument("--user", required=True)
        sub.add_argument("--as-of", type=instant, help="what was recorded at this time")
        sub.add_argument("--valid-at", type=instant, help="what was true at this time")


def run(args: argparse.Namespace, memory: TrueMem) -> None:
    when = {"as_of": args.as_of, "valid_at": args.valid_at}
    if args.action == "show":
        print("\n".join(_show(memory, args.user, args.entity, when)))
    elif args.action == "why":
        entity = memory.graph.get_entity(args.user, args.entity, as_of=args.as_of)
        hops = memory.graph.causes(args.user, args.entity, depth=args.depth, **when)
        print("\n".join(why_lines(entity.name, hops)))
    else:
        text = json.dumps(reference_shape(memory.graph.get(args.user, **when)), indent=2,
                          ensure_ascii=False)
        _write(text, args.output)


def _write(text: str, output: str | None) -> None:
    if not output:
        print(text)
        return
    try:
        Path(output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _day(value: datetime | None) -> str:
    return "…" if value is None else value.isoformat(timespec="minutes")


def _span(valid_from: datetime | None, valid_to: datetime | None) -> str:
    return f"[{_day(valid_from)} → {_day(valid_to) if valid_to else 'now'}]"


def relation_line(rel: Relation) -> str:
    evidence = f"  evidence: {rel.evidence}" if rel.evidence else ""
    return (f"{rel.source} --{rel.type}--> {rel.target}  {_span(rel.valid_from, rel.valid_to)}"
            f"{evidence}")


def _show(memory: TrueMem, user: str, entity: str | None,
          when: dict[str, Any]) -> list[str]:
    if entity is not None:
        found = memory.graph.get_entity(user, entity, as_of=when["as_of"])
        graph = Graph([found], memory.graph.list_observations(user, found.id, **when),
                      memory.graph.neighbours(user, found.id, **when))
    else:
        graph = memory.graph.get(user, **when)
    return show_lines(graph)


def show_lines(graph: Graph) -> list[str]:
    """Each entity with its observations and the relations it starts; then the count."""
    lines = []
    for entity in graph.entities:
        aliases = f" aka {', '.join(entity.aliases)}" if entity.aliases else ""
        lines.append(f"{entity.name} ({entity.type}){aliases}")
        lines += [f"  - {o.text}  {_span(o.valid_from, o.valid_to)}"
                  for o in graph.observations if o.entity_id == entity.id]
        lines += [f"  {relation_line(r)}" for r in graph.relations
                  if entity.id in (r.source_id, r.target_id)]
    lines.append(f"{len(graph.entities)} entities, {len(graph.observations)} observations, "
                 f"{len(graph.relations)} relations")
    return lines


def why_lines(name: str, hops: list[Hop]) -> list[str]:
    if not hops:
        return [f"nothing recorded caused {name}"]
    return [f"why {name}:"] + [f"{'  ' * hop.depth}{relation_line(hop.relation)}"
                               for hop in hops]


def reference_shape(graph: Graph) -> dict[str, Any]:
    """The MCP memory server's ``{entities, relations}`` plus TrueMem's fields."""
    said: dict[str, list[Observation]] = {}
    for observation in graph.observations:
        said.setdefault(observation.entity_id, []).append(observation)
    return {
        "entities": [{
            "name": e.name, "entityType": e.type,
            "observations": [o.text for o in said.get(e.id, [])],
            "aliases": list(e.aliases), "createdAt": e.created_at.isoformat(),
            "observationDetails": [_times(o, {"text": o.text, "confidence": o.confidence})
                                   for o in said.get(e.id, [])],
        } for e in graph.entities],
        "relations": [_times(r, {"from": r.source, "to": r.target, "relationType": r.type,
                                 "confidence": r.confidence, "evidence": r.evidence})
                      for r in graph.relations],
    }


def _times(row: Observation | Relation, shape: dict[str, Any]) -> dict[str, Any]:
    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()
    return {**shape, "validFrom": iso(row.valid_from), "validTo": iso(row.valid_to),
            "recordedAt": iso(row.recorded_at), "invalidatedAt": iso(row.invalidated_at)}

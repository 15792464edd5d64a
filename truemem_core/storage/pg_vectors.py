"""Vectors sent to PostgreSQL in pgvector's binary format, not as text.

As text, a vector is 384 floats formatted with nine significant digits each (so
that every float32 comes back exactly) on the event loop, for every search and
every stored vector, and parsed back by the server; the binary form is the float32
values themselves. The format is pgvector's ``vector_recv``: the dimension and a
zero as big-endian int16, then the values as big-endian float4.

The dumper is registered in psycopg's global adapters for ``VectorParam`` only, a
class of this module, so it changes nothing else a process sends through psycopg.
Its oid is 0 (unknown): the server takes the parameter's type from where it stands
(a ``vector`` column, an operand of ``<=>``), so no connection has to look up the
extension's type first. Bound anywhere else (cast to text, say), the bytes would be
read as that type: ``EmbeddingType`` binds vectors only where a vector belongs.
"""

from __future__ import annotations

import struct

import numpy as np
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEAD = struct.Struct(">HH")
_BIG_ENDIAN_FLOAT4 = np.dtype(">f4")


class VectorParam:
    """A float32 vector bound as a statement's parameter."""

    __slots__ = ("values",)

    def __init__(self, values: object) -> None:
        self.values = np.asarray(values, dtype=np.float32).reshape(-1)


class _BinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: VectorParam) -> bytes:
        values = obj.values
        return _HEAD.pack(len(values), 0) + values.astype(_BIG_ENDIAN_FLOAT4).tobytes()


psycopg.adapters.register_dumper(VectorParam, _BinaryDumper)

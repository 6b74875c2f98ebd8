"""Calls by operationId, from the OpenAPI documents this package carries
(deckhand/openapi/<document>.json, generated from the live binaries)."""

import json
import os
import re
import urllib.parse

_DIR = os.path.join(os.path.dirname(__file__), "openapi")
_cache = {}


def operations(document):
    """Maps each operationId of document to (method, path template)."""
    ops = _cache.get(document)
    if ops is None:
        with open(os.path.join(_DIR, document + ".json"), encoding="utf-8") as f:
            doc = json.load(f)
        ops = {}
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if isinstance(op, dict) and "operationId" in op:
                    ops[op["operationId"]] = (method.upper(), path)
        _cache[document] = ops
    return ops


def documents():
    return sorted(n[:-5] for n in os.listdir(_DIR) if n.endswith(".json"))


def resolve(document, operation_id, path_params):
    try:
        method, template = operations(document)[operation_id]
    except KeyError:
        raise ValueError(f"deckhand: the {document} document has no operation {operation_id!r}") from None
    params = path_params if path_params is not None else {}

    def fill(m):
        name = m.group(1).rstrip(".")
        if name not in params:
            raise ValueError(f"deckhand: {operation_id} needs path parameter {name!r}")
        return urllib.parse.quote(str(params[name]), safe="" if not m.group(1).endswith("...") else "/")

    return method, re.sub(r"\{([^}]+)\}", fill, template)

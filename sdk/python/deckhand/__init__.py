"""Python SDK of deckhand.

Client talks to the control plane and checks every answer before it reads
it (its X-Service-Signature, its X-Service-Binding to the request, its
envelope's status); client.containers creates and drives containers, whose
handles reach their agents through the control plane (process, files,
terminal, url). AsyncClient has the same verbs, awaited. Every operation of every OpenAPI document is
reachable by its operationId through call(); the methods cover the common
tasks. Only the standard library is used for HTTP; `cryptography` checks
the ED25519 signatures.
"""

from .errors import DeckhandError, SignatureError
from .client import Client, API_VERSION
from .container import Container, Files, FileInfo, Output, Processes, Result, Running
from .containers import ContainerInfo, Containers, StateError
from .state import Lease, Snapshot, Workspace
from .aio import AsyncClient, AsyncContainer

__all__ = ["Lease", "Snapshot", "Workspace", "Client", "AsyncClient", "Container", "AsyncContainer", "Containers", "ContainerInfo", "Processes", "Files",
           "Output", "Result", "Running", "FileInfo", "DeckhandError", "SignatureError", "StateError", "API_VERSION"]

"""Python SDK of deckhand.

Client talks to the control plane and verifies the X-Service-Signature of
every answer before it reads it; Container talks to one container's agent
gateway (processes, files). Every operation of every OpenAPI document is
reachable by its operationId through call(); the methods cover the common
tasks. Only the standard library is used for HTTP; `cryptography` checks
the ED25519 signatures.
"""

from .errors import DeckhandError, SignatureError
from .client import Client, API_VERSION
from .container import Container, Output

__all__ = ["Client", "Container", "Output", "DeckhandError", "SignatureError", "API_VERSION"]

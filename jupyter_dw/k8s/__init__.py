"""The only code that talks to Kubernetes: credentials, discovery, access checks, watch caches.

:class:`KubeSession` ties them together and is what the server extension (and later the
widgets, magics and CLI) use. API groups, versions and plurals live in :mod:`.resources`.
"""

from .errors import KubeError, KubeForbidden, KubeUnreachable, NotInstalled, NotReady
from .session import KubeSession

__all__ = [
    "KubeError",
    "KubeForbidden",
    "KubeSession",
    "KubeUnreachable",
    "NotInstalled",
    "NotReady",
]

"""Where the proxy lives: its routes under ``{base_url}dw/ray/``, the sandbox every response
carries, and how a capability is masked wherever a URL could be logged."""

from __future__ import annotations

import re

PROXY_PREFIX = "dw/ray"
DASHBOARD_SETTING = "jupyter_dw_dashboard_proxy"
"""The server's :class:`DashboardProxy` in the tornado settings (None when turned off)."""
CAPABILITY_SEGMENT = "~cap"
CAPABILITY_ROUTE = PROXY_PREFIX + "/([^/]+)/" + CAPABILITY_SEGMENT + "/([^/]+)/(.*)"
"""``dw/ray/<name>/~cap/<capability>/<path>``: the only route that reaches a dashboard."""
PROXY_ROUTE = PROXY_PREFIX + "/([^/]+)/(.*)"
"""``dw/ray/<name>/<path>``: mints a capability and redirects to the capability path."""
REDIRECT_ROUTE = PROXY_PREFIX + "/([^/]+)"
OFF_ROUTE = PROXY_PREFIX + "(?:/.*)?"
"""Every ``dw/ray`` path, when the proxy is turned off."""

SANDBOX_POLICY = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
"""The sandbox of every proxied response. Never ``allow-same-origin`` (the page would share
Jupyter's origin: cookies, storage, service workers), ``allow-top-navigation*`` (it could
navigate a JupyterLab tab that frames it) or ``allow-popups-to-escape-sandbox`` (its popups
would be unsandboxed)."""


CAPABILITY_MASK = "[capability]"
CAPABILITY_IN_URL = re.compile("/" + re.escape(CAPABILITY_SEGMENT) + "/[^/?#]*/?")
TOKEN_CHARS = re.compile(r"[A-Za-z0-9_.-]+")

"""Services every surface shares (server, kernel, CLI): queues, clusters, the change feed and
settings. Typed results; no tornado or jupyter_server import."""

"""The event types of a Kubernetes watch stream, in a module of their own.

The events socket and the change backlog name them, and the server imports those at its start;
the watch cache that produces them pulls in the HTTP client (urllib3, about 14 ms), which the
server's start must not wait for (docs/explanation/benchmarks.md, "Start-up of the Jupyter server").
"""

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"

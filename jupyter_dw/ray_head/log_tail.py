"""A Ray job's log as it is written: Ray's ``GET /api/jobs/{id}/logs/tail`` WebSocket.
With tornado, which every Jupyter kernel and server has, so Ray need not be installed
(docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

from .errors import RayUnreachable
from .jobs_api import RayJobsClient

CONNECT_TIMEOUT = 20.0
MAX_MESSAGE_SIZE = 64 * 1024 * 1024


async def tail_logs(client: RayJobsClient, job_id: str) -> AsyncIterator[str]:
    """Chunks of job ``job_id``'s log (the log so far first) until the job has ended."""
    from tornado.httpclient import HTTPClientError, HTTPRequest
    from tornado.websocket import WebSocketClosedError, websocket_connect

    url = f"{client.tail_url}{quote(job_id, safe='')}/logs/tail"
    request = HTTPRequest(
        url,
        headers=client.headers(),
        connect_timeout=CONNECT_TIMEOUT,
        request_timeout=CONNECT_TIMEOUT,
    )
    try:
        socket = await websocket_connect(request, max_message_size=MAX_MESSAGE_SIZE)
    except HTTPClientError as err:
        # The handshake refused: the same statuses as the REST calls (401/403/404).
        raise client.refusal(err.code, str(err.message or ""), "GET", url, job_id) from None
    except OSError as err:
        raise RayUnreachable(
            f"The Ray head of cluster {client.cluster} did not answer",
            f"the log stream of {job_id}: {err}",
            "Its head must be reachable from here; elsewhere set JupyterDW.ray_dashboard_url.",
        ) from None
    try:
        while True:
            try:
                chunk = await socket.read_message()
            except WebSocketClosedError:
                return
            if chunk is None:
                return
            if chunk:
                yield chunk if isinstance(chunk, str) else chunk.decode(errors="replace")
    finally:
        socket.close()

"""``POST {base_url}dw/api/kernel/call``: a kernel of this server calls a core method
(:mod:`jupyter_dw.core.kernel_calls`); only with the kernel secret (:mod:`.kernel_link`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..core.errors import DWError, InvalidRequest
from ..core.kernel_calls import kernel_call
from .handlers import DWHandler


class KernelOnly(DWError, status=403, code="kernel_only"):
    """The kernel channel was asked by something else than a kernel of this server."""


def _call_of(body: Any) -> tuple[str, str, list[Any], Mapping[str, Any]]:
    if not isinstance(body, Mapping):
        raise InvalidRequest("The call is not a JSON object", None, None)
    service, method = body.get("service"), body.get("method")
    args, kwargs = body.get("args", []), body.get("kwargs", {})
    if not (
        isinstance(service, str)
        and isinstance(method, str)
        and isinstance(args, list)
        and isinstance(kwargs, Mapping)
    ):
        raise InvalidRequest(
            "The call is malformed",
            'it needs "service" and "method" (strings), "args" (a list), "kwargs" (an object)',
            None,
        )
    return service, method, args, kwargs


class KernelCallHandler(DWHandler):
    """``POST kernel/call``: ``{"service", "method", "args", "kwargs"}`` → ``{"result"}``,
    or the core's error as every route answers it."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Run the call on the extension's executor."""
        if not self.from_kernel:
            self.write_dw_error(
                KernelOnly(
                    "Only a kernel of this server may use its kernel channel",
                    "the request does not carry the server's kernel secret",
                    "Use the REST routes (dw/api/clusters, ...) from a browser or a script.",
                )
            )
            return
        try:
            service, method, args, kwargs = _call_of(self.json_body())
        except DWError as err:
            self.write_dw_error(err)
            return
        try:
            result = await self.run_blocking(
                lambda: kernel_call(self.core, service, method, args, kwargs)
            )
        except DWError as err:
            self.write_dw_error(err)
            return
        self.finish({"result": result})

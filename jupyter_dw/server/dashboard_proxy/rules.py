"""What goes upstream and what comes back: the header, query, redirect and storage-shim rules
(pure functions of a request or response; no I/O)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urljoin, urlsplit

from tornado import httputil

from .errors import has_dot_segment

# Hop-by-hop headers (RFC 9110 section 7.6.1) belong to one connection, not to the message.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Jupyter's credentials, the Referer (it would hold the capability) and what tornado recomputes
# for the upstream connection.
REQUEST_HEADERS_DROPPED = frozenset(
    {
        "authorization",
        "cookie",
        "x-xsrftoken",
        "x-csrftoken",
        "referer",
        "x-ray-authorization",  # Ray's token header for proxies: only this proxy sets it
        "host",
        "content-length",
        "expect",
    }
)
# The WebSocket client writes its own handshake; the subprotocols are passed separately.
WEBSOCKET_HEADERS_DROPPED = frozenset(
    {
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-accept",
        "sec-websocket-protocol",
    }
)

QUERY_PARAMS_DROPPED = frozenset({"token", "_xsrf"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that only read: every other method is a write (``write`` capability, origin
checked)."""

# The dashboard's response headers that reach the browser: an allow-list, because many
# headers act on the whole Jupyter origin or host (Set-Cookie, Clear-Site-Data,
# Service-Worker-Allowed, Strict-Transport-Security, Alt-Svc, NEL, Report-To), navigate
# (Refresh), ask for credentials (WWW-Authenticate) or instruct a proxy in front of Jupyter
# (X-Accel-Redirect, X-Sendfile). ``Location`` is rewritten; ``Content-Security-Policy`` is
# added to ours (browsers enforce every policy, so it can only restrict).
RESPONSE_HEADERS_KEPT = frozenset(
    {
        "accept-ranges",
        "age",
        "cache-control",
        "content-disposition",
        "content-encoding",
        "content-language",
        "content-length",
        "content-range",
        "content-security-policy",
        "content-type",
        "etag",
        "expires",
        "last-modified",
        "location",
        "pragma",
        "retry-after",
        "vary",
        "x-content-type-options",  # nosniff: it can only restrict
    }
)
# A sandboxed page (opaque origin) gets a SecurityError from localStorage, sessionStorage and
# document.cookie. Dashboards use them for small preferences (the Ray dashboard reads its theme
# from localStorage while it starts, and axios reads document.cookie on every request), and
# would fail to start. This script, put first in every proxied HTML page, gives the page
# in-memory replacements that live as long as the page: it grants nothing (the page could
# define them itself) and nothing is shared with Jupyter.
STORAGE_SHIM = (
    b"<script>/* jupyter_dw: sandboxed page, in-memory storage */(function(){"
    b"function ok(f){try{f();return true}catch(e){return false}}"
    b"function mem(){var m=new Map();return{get length(){return m.size},"
    b"key:function(i){var k=Array.from(m.keys())[i];return k===undefined?null:k},"
    b"getItem:function(k){k=String(k);return m.has(k)?m.get(k):null},"
    b"setItem:function(k,v){m.set(String(k),String(v))},"
    b"removeItem:function(k){m.delete(String(k))},clear:function(){m.clear()}}}"
    b"['localStorage','sessionStorage'].forEach(function(n){"
    b"if(!ok(function(){return window[n]}))"
    b"Object.defineProperty(window,n,{value:mem(),configurable:true})});"
    b"if(!ok(function(){return document.cookie}))"
    b"Object.defineProperty(document,'cookie',{get:function(){return ''},"
    b"set:function(){},configurable:true})})()</script>"
)
# Where the shim goes: after the doctype (a script there is parsed into <head>, and the page
# keeps its standards mode), or first in a page without one.
_DOCTYPE = re.compile(
    rb"^(\xef\xbb\xbf)?\s*(<!--.*?-->\s*)*<!doctype[^>]*>", re.IGNORECASE | re.DOTALL
)
SHIM_LOOKAHEAD = 4096
"""Bytes of an HTML page read before the shim is placed (a doctype is at the very start)."""
# Requests for a page (navigations) are sent upstream with Accept-Encoding: identity, so the
# shim can be put in without decompressing.
DOCUMENT_DESTINATIONS = frozenset({"document", "iframe", "frame", "embed", "object"})

# Close codes that describe a connection state and must never be sent in a close frame.
_UNSENDABLE_CLOSE_CODES = frozenset({1005, 1006, 1015})
# Characters browsers strip from or treat specially in URLs: a Location holding one could
# resolve differently from what was checked.
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")


# ---------------------------------------------------------------------------------------------
# What goes upstream and what comes back
# ---------------------------------------------------------------------------------------------


def connection_tokens(headers: httputil.HTTPHeaders) -> set[str]:
    """Header names listed in ``Connection``: hop-by-hop for this one message."""
    return {
        token.strip().lower()
        for value in headers.get_list("Connection")
        for token in value.split(",")
        if token.strip()
    }


def upstream_request_headers(
    headers: httputil.HTTPHeaders, extra_dropped: Iterable[str] = ()
) -> httputil.HTTPHeaders:
    """The browser's headers minus hop-by-hop headers and Jupyter's credentials."""
    dropped = HOP_BY_HOP | REQUEST_HEADERS_DROPPED | connection_tokens(headers)
    dropped |= {name.lower() for name in extra_dropped}
    forwarded = httputil.HTTPHeaders()
    for name, value in headers.get_all():
        if name.lower() not in dropped:
            forwarded.add(name, value)
    return forwarded


def upstream_query(query: str) -> str:
    """The raw query string minus ``token`` and ``_xsrf``; the rest keeps its encoding."""
    kept = [
        item
        for item in query.split("&")
        if item and unquote(item.partition("=")[0].replace("+", " ")) not in QUERY_PARAMS_DROPPED
    ]
    return "&".join(kept)


def response_header_kept(name: str) -> bool:
    """Whether the dashboard's response header ``name`` may reach the browser."""
    # Only the allow-list: an unknown X- header may be an instruction to a proxy in front of
    # Jupyter (X-Accel-Redirect, X-Sendfile and whatever the next proxy reads).
    return name.lower() in RESPONSE_HEADERS_KEPT


def shim_place_known(head: bytes) -> bool:
    """Whether the start of a page decides where the shim goes: a doctype (or comment) is
    complete, or the page starts with something else. A streamed page is held no longer."""
    if len(head) >= SHIM_LOOKAHEAD or _DOCTYPE.match(head):
        return True
    rest = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    while rest.startswith(b"<!--"):
        end = rest.find(b"-->")
        if end < 0:
            return False
        rest = rest[end + 3 :].lstrip()
    if not rest:
        return False
    # Undecided only while the bytes so far could still be the start of "<!doctype ...>".
    return not (b"<!doctype".startswith(rest[:9].lower()) or rest[:9].lower() == b"<!doctype")


def with_storage_shim(head: bytes) -> bytes:
    """The start of an HTML page with :data:`STORAGE_SHIM` put in."""
    match = _DOCTYPE.match(head)
    at = match.end() if match else 0
    return head[:at] + STORAGE_SHIM + head[at:]


def rewrite_location(
    location: str, upstream_url: str, upstream_base: str, public_prefix: str
) -> str | None:
    """A redirect of the dashboard as the browser must see it: resolved against the proxied
    request's URL and pointed at the same place under ``public_prefix`` (the cluster's
    capability path); None when it leaves the dashboard (another host or port, a path outside
    ``upstream_base``, dot segments, characters browsers would read differently)."""
    if _URL_UNSAFE.search(location):
        return None
    resolved = urlsplit(urljoin(upstream_url, location))
    base = urlsplit(upstream_base + "/")
    if (resolved.scheme, resolved.netloc) != (base.scheme, base.netloc):
        return None
    if not resolved.path.startswith(base.path) or has_dot_segment(resolved.path):
        return None
    rest = resolved.path[len(base.path) :]
    query = f"?{resolved.query}" if resolved.query else ""
    fragment = f"#{resolved.fragment}" if resolved.fragment else ""
    return public_prefix + rest + query + fragment


def sendable_close(code: int | None) -> int | None:
    if code is None or code in _UNSENDABLE_CLOSE_CODES or not 1000 <= code < 5000:
        return None
    return code

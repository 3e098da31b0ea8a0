"""The kernel link: the file a server writes for its kernels, the secret it checks, and how a
kernel finds it (or says why not)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from jupyter_dw._version import __version__
from jupyter_dw.core.kernel_calls import UnknownCall, allowed, kernel_call
from jupyter_dw.names import KERNEL_LINK_ENV
from jupyter_dw.notebook.server_link import find_link, read_link
from jupyter_dw.server.kernel_link import KernelLink, kernel_url


@pytest.fixture
def link(tmp_path, monkeypatch):
    monkeypatch.delenv(KERNEL_LINK_ENV, raising=False)
    made = KernelLink(str(tmp_path), 8888)
    yield made
    made.withdraw()


def test_the_link_is_named_in_the_environment_kernels_inherit(link, tmp_path):
    assert os.environ[KERNEL_LINK_ENV] == str(tmp_path / "jupyter_dw-8888.json")
    assert not link.path.exists()  # written once the server listens


def test_the_file_is_readable_by_its_user_only_and_says_where_the_server_is(link):
    link.publish("http://127.0.0.1:8888/", __version__)
    mode = stat.S_IMODE(link.path.stat().st_mode)
    assert mode == 0o600
    content = json.loads(link.path.read_text())
    assert content["url"] == "http://127.0.0.1:8888/"
    assert content["secret"] == link.secret and len(link.secret) >= 40
    assert content["pid"] == os.getpid()


def test_only_the_secret_in_the_kernel_scheme_authenticates(link):
    assert link.authenticates(f"DW-Kernel {link.secret}")
    assert not link.authenticates(f"DW-Kernel {link.secret}x")
    assert not link.authenticates(f"token {link.secret}")
    assert not link.authenticates("DW-Kernel ")
    assert not link.authenticates(None)


def test_withdraw_removes_only_its_own_file_and_variable(link, tmp_path):
    link.publish("http://127.0.0.1:8888/", __version__)
    newer = KernelLink(str(tmp_path), 8888)  # a restarted server took the same name
    newer.publish("http://127.0.0.1:8888/", __version__)
    link.withdraw()
    assert newer.path.exists() and json.loads(newer.path.read_text())["secret"] == newer.secret
    assert os.environ[KERNEL_LINK_ENV] == str(newer.path)
    newer.withdraw()
    assert not newer.path.exists()
    assert KERNEL_LINK_ENV not in os.environ


@pytest.mark.parametrize(
    ("ip", "port", "base", "tls", "url"),
    [
        ("", 8888, "/", False, "http://127.0.0.1:8888/"),
        ("0.0.0.0", 8888, "/notebook/ns/wb/", False, "http://127.0.0.1:8888/notebook/ns/wb/"),
        ("localhost", 9000, "/a%40b", True, "https://127.0.0.1:9000/a%40b/"),
        ("10.1.2.3", 8888, "/", False, "http://10.1.2.3:8888/"),
        ("::1", 8888, "/", False, "http://[::1]:8888/"),
    ],
)
def test_kernels_reach_the_server_on_loopback_unless_it_listens_on_one_address(
    ip, port, base, tls, url
):
    assert kernel_url(ip, port, base, tls) == url


def test_a_kernel_finds_its_server_or_says_why_not(link):
    environ = {KERNEL_LINK_ENV: str(link.path)}
    info, why = find_link(environ)
    assert info is None and "missing" in why  # not published yet
    link.publish("http://127.0.0.1:8888/", __version__)
    info, why = find_link(environ)
    assert info is not None and info.secret == link.secret
    assert why == "through the Jupyter server at http://127.0.0.1:8888/"

    info, why = find_link({})
    assert info is None and KERNEL_LINK_ENV in why and "VS Code" in why


def test_a_kernel_of_another_version_connects_on_its_own(link):
    link.publish("http://127.0.0.1:8888/", "0.0.1")
    info, why = find_link({KERNEL_LINK_ENV: str(link.path)})
    assert info is None
    assert "0.0.1" in why and __version__ in why


def test_a_malformed_file_is_no_link(tmp_path):
    path = tmp_path / "jupyter_dw-1.json"
    path.write_text('{"url": 1}')
    assert read_link(path) is None
    path.write_text("not json")
    assert read_link(path) is None


def test_only_listed_methods_may_be_called():
    assert allowed("clusters", "get") and allowed("kind:rayjobs", "create")
    assert not allowed("clusters", "raycluster")  # the raw object stays in the server
    assert not allowed("session", "stop") and not allowed("kind:rayjobs", "resource")
    assert not allowed("settings", "anything")
    with pytest.raises(UnknownCall) as caught:
        kernel_call(None, "session", "stop", [], {})  # type: ignore[arg-type]
    assert caught.value.status == 400 and caught.value.code == "unknown_call"

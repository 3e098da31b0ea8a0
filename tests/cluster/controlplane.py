"""Start, inspect and stop the local control plane (every process on 127.0.0.1, stopped by PID)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import manifests
from .kubeapi import AdminApi, ComponentDied, wait_for
from .pki import CertificateAuthority, KeyPair, write_service_account_keys
from .versions import HERE, Versions

STARTUP_TIMEOUT = 120.0
# Kueue 0.14 binds its visibility server to this port (on 127.0.0.1: build.sh adds the
# address, which 0.14 hard-codes to 0.0.0.0); newer releases take both from config.
LEGACY_VISIBILITY_PORT = 8082
FAKE_NODES = 4


def default_state_dir(versions: Versions | None = None) -> Path:
    """Where a cluster keeps its state (certificates, etcd data, logs, PIDs, kubeconfig).

    One directory per Kueue version: ``make test`` and ``make test-legacy`` may run at the same
    time, and a cluster of other versions in the same directory would be replaced (stopped)
    under the other run's feet."""
    override = os.environ.get("DW_CLUSTER_DIR")
    if override:
        return Path(override)
    selected = versions or Versions.selected()
    suffix = "" if selected.kueue_is_pinned else f"-kueue-{selected.kueue}"
    return Path(tempfile.gettempdir()) / f"jupyter-dw-cluster{suffix}"


def testbed_fingerprint() -> str:
    """A hash of the code that sets a cluster up (the CRDs, webhooks and flags it applies): a
    running cluster started by other code is replaced rather than reused, so a test-bed change
    (say a CRD Kueue must see at start-up) never meets a cluster that predates it."""
    digest = hashlib.sha256()
    for name in ("controlplane.py", "manifests.py", "versions.env", "pki.py"):
        digest.update((HERE / name).read_bytes())
    return digest.hexdigest()[:16]


_GIVEN: set[int] = set()
"""Ports :func:`free_port` has handed out in this process: a plane asks for fifteen before any
of its components binds one, so a port free a moment ago may already be another's."""
_GIVEN_LOCK = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, never one handed out before
    in this process (chosen at random, two of one plane's fifteen collided about once in a
    hundred starts: its second component then failed with "address already in use").

    Chosen below the kernel's ephemeral range: a port the kernel hands out for outgoing
    connections could be taken by one between choosing it and the component binding it.
    """
    low, _ = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    with _GIVEN_LOCK:
        for port in candidates:
            if port in _GIVEN:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _GIVEN.add(port)
            return port
    raise RuntimeError("no free TCP port on 127.0.0.1")


def _log(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


@dataclass(frozen=True)
class ClusterPki:
    """The certificates and keys a cluster's components are started with."""

    ca: CertificateAuthority
    front_proxy_ca: CertificateAuthority
    apiserver: KeyPair
    etcd: KeyPair
    etcd_client: KeyPair
    front_proxy_client: KeyPair
    sa_keys: KeyPair


@dataclass
class ClusterState:
    """What a running cluster needs to be found and stopped again (saved as state.json)."""

    versions: dict[str, str]
    kubeconfig: str
    apiserver: str
    ca_file: str
    pids: dict[str, int] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    started_seconds: float = 0.0
    commands: dict[str, list[str]] = field(default_factory=dict)
    """How each component was started (argv), so a single one can be started again."""
    testbed: str = ""
    """:func:`testbed_fingerprint` of the code that started it."""
    environments: dict[str, dict[str, str]] = field(default_factory=dict)
    """The extra environment each component was started with."""


def etcd_argv(
    data_dir: Path, etcd_url: str, peer_url: str, cert: KeyPair, ca_cert: Path
) -> list[str]:
    """etcd on loopback with TLS client-certificate authentication."""
    return [
        "etcd",
        "--name=default",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={etcd_url}",
        f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=default={peer_url}",
        f"--cert-file={cert.cert}",
        f"--key-file={cert.key}",
        "--client-cert-auth",
        f"--trusted-ca-file={ca_cert}",
        "--listen-metrics-urls=",
        "--log-level=warn",
    ]


def apiserver_argv(
    binary: Path,
    *,
    port: int,
    etcd_url: str,
    ca: CertificateAuthority,
    front_proxy_ca: CertificateAuthority,
    serving: KeyPair,
    etcd_client: KeyPair,
    front_proxy_client: KeyPair,
    sa_keys: KeyPair,
    extra: Sequence[str] = (),
) -> list[str]:
    """kube-apiserver on loopback against ``etcd_url``; ``extra`` flags last (they win)."""
    return [
        str(binary),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        f"--client-ca-file={ca.pair.cert}",
        f"--etcd-servers={etcd_url}",
        f"--etcd-cafile={ca.pair.cert}",
        f"--etcd-certfile={etcd_client.cert}",
        f"--etcd-keyfile={etcd_client.key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={sa_keys.cert}",
        f"--service-account-signing-key-file={sa_keys.key}",
        "--authorization-mode=Node,RBAC",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        # Watch-list streams need etcd progress notifications that Debian's etcd 3.4
        # does not give; clients then wait out retries. Plain list + watch is served.
        "--feature-gates=WatchList=false",
        "--profiling=false",
        f"--requestheader-client-ca-file={front_proxy_ca.pair.cert}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={front_proxy_client.cert}",
        f"--proxy-client-key-file={front_proxy_client.key}",
        *extra,
    ]


class LocalCluster:
    """One local control plane, its state kept under ``state_dir``.

    ``apiserver_flags`` are added to kube-apiserver's (``--watch-cache=false``);
    ``kueue_config`` is merged into Kueue's manager configuration (``{"waitForPodsReady":
    {...}}``). The shared cluster uses neither; disposable ones (tests/cluster/disposable.py)
    do.
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        versions: Versions | None = None,
        *,
        apiserver_flags: Sequence[str] = (),
        kueue_config: dict[str, Any] | None = None,
    ) -> None:
        self.versions = versions or Versions.selected()
        self.state_dir = state_dir or default_state_dir(self.versions)
        self.state_file = self.state_dir / "state.json"
        self.logs = self.state_dir / "logs"
        self.apiserver_flags = tuple(apiserver_flags)
        self.kueue_config = dict(kueue_config or {})

    # ----------------------------------------------------------------- inspection
    def state(self) -> ClusterState | None:
        """The saved state, or None when no cluster was started here."""
        if not self.state_file.exists():
            return None
        return ClusterState(**json.loads(self.state_file.read_text()))

    def is_healthy(self, state: ClusterState | None = None) -> bool:
        """Every process alive and the API server ready."""
        state = state or self.state()
        if state is None or not all(
            _alive(pid) and _started_in(pid, self.state_dir) for pid in state.pids.values()
        ):
            return False
        try:
            return self._get(state, "/readyz") == b"ok"
        except OSError:
            return False

    def _get(self, state: ClusterState, path: str) -> bytes:
        ctx = ssl.create_default_context(cafile=state.ca_file)
        pki = Path(state.ca_file).parent
        ctx.load_cert_chain(pki / "admin.crt", pki / "admin.key")
        with urllib.request.urlopen(state.apiserver + path, context=ctx, timeout=5) as resp:
            return resp.read()

    # ----------------------------------------------------------------- lifecycle
    def up(self) -> ClusterState:
        """Start the cluster, or keep the running one if it is healthy and the same versions."""
        state = self.state()
        if (
            state
            and state.versions == asdict(self.versions)
            and state.testbed == testbed_fingerprint()
            and self.is_healthy(state)
        ):
            _log(f"already running ({self.state_dir})")
            return state
        if state:
            _log("stopping the previous cluster (unhealthy, other versions or test bed changed)")
            self.down()
        self.build()
        started = time.monotonic()
        state = self._start()
        state.started_seconds = round(time.monotonic() - started, 1)
        self._save(state)
        _log(f"ready in {state.started_seconds}s")
        return state

    def build(self) -> None:
        """Build (or find cached) binaries for the selected versions."""
        subprocess.run(["bash", str(HERE / "build.sh"), self.versions.kueue], check=True)

    def down(self) -> None:
        """Stop every process of the cluster and remove its state."""
        state = self.state()
        if state:
            _stop_cluster(state.pids, self.state_dir)
        if self.state_dir.exists():
            subprocess.run(["rm", "-rf", str(self.state_dir)], check=True)

    def _save(self, state: ClusterState) -> None:
        self.state_file.write_text(json.dumps(asdict(state), indent=2))

    # ----------------------------------------------------------------- start-up
    def _start(self) -> ClusterState:
        if self.state_dir.exists():
            subprocess.run(["rm", "-rf", str(self.state_dir)], check=True)
        pki = self.state_dir / "pki"
        for directory in (pki, self.logs, self.state_dir / "etcd", self.state_dir / "kueue-certs"):
            directory.mkdir(parents=True, exist_ok=True)
        self.state_dir.chmod(0o700)

        ports = {
            name: free_port()
            for name in (
                "etcd",
                "etcd-peer",
                "apiserver",
                "controller-manager",
                "scheduler",
                "kueue-webhook",
                "kueue-health",
                "kuberay-health",
                "kuberay-metrics",
                "kwok",
                "metrics-server",
            )
        }
        if self.versions.trainjobs:
            for name in ("trainer-webhook", "trainer-health", "jobset-webhook", "jobset-health"):
                ports[name] = free_port()
        ports["kueue-visibility"] = (
            free_port() if self.versions.kueue_serves_v1beta2 else LEGACY_VISIBILITY_PORT
        )

        ca = CertificateAuthority(pki, "ca")
        front_proxy_ca = CertificateAuthority(pki, "front-proxy-ca")
        loopback = ("127.0.0.1", "localhost")
        apiserver_cert = ca.issue(
            "apiserver",
            "kube-apiserver",
            hosts=(
                *loopback,
                "10.96.0.1",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
        )
        etcd_cert = ca.issue("etcd", "etcd", hosts=loopback)
        etcd_client = ca.issue("etcd-client", "kube-apiserver-etcd-client", client=True)
        admin = ca.issue("admin", "admin", organization="system:masters", client=True)
        front_proxy_client = front_proxy_ca.issue(
            "front-proxy-client", "front-proxy-client", client=True
        )
        kueue_cert = ca.issue("kueue-webhook", "kueue-webhook", hosts=loopback)
        (self.state_dir / "kueue-certs" / "tls.crt").write_bytes(kueue_cert.cert.read_bytes())
        (self.state_dir / "kueue-certs" / "tls.key").write_bytes(kueue_cert.key.read_bytes())
        if self.versions.trainjobs:
            # Trainer's webhook server reads its certificate from controller-runtime's default
            # directory under $TMPDIR (its configuration has no field for it); JobSet's reads
            # kueue-certs. The same loopback serving certificate for all three.
            trainer_certs = self.state_dir / "trainer-tmp" / "k8s-webhook-server" / "serving-certs"
            trainer_certs.mkdir(parents=True)
            for name in ("tls.crt", "tls.key"):
                (trainer_certs / name).write_bytes(
                    (self.state_dir / "kueue-certs" / name).read_bytes()
                )
        sa_keys = write_service_account_keys(pki)

        apiserver = f"https://127.0.0.1:{ports['apiserver']}"
        kubeconfig = self.state_dir / "kubeconfig"
        _write_kubeconfig(kubeconfig, apiserver, ca.pem, admin)
        state = ClusterState(
            versions=asdict(self.versions),
            kubeconfig=str(kubeconfig),
            apiserver=apiserver,
            ca_file=str(ca.pair.cert),
            ports=ports,
            testbed=testbed_fingerprint(),
        )
        try:
            self._start_processes(
                state,
                ClusterPki(
                    ca=ca,
                    front_proxy_ca=front_proxy_ca,
                    apiserver=apiserver_cert,
                    etcd=etcd_cert,
                    etcd_client=etcd_client,
                    front_proxy_client=front_proxy_client,
                    sa_keys=sa_keys,
                ),
            )
        except BaseException:
            self._save(state)
            _log(f"start-up failed; logs are in {self.logs}")
            _stop_cluster(state.pids, self.state_dir)
            raise
        return state

    # KubeRay reads only $KUBECONFIG; the others take --kubeconfig too.
    def _spawn(
        self, state: ClusterState, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> None:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.state_dir,
            env={**os.environ, "KUBECONFIG": state.kubeconfig, **(env or {})},
        )
        log.close()
        state.pids[name] = proc.pid
        state.commands[name] = list(argv)
        state.environments[name] = dict(env or {})
        self._save(state)

    def _spawn_in_pod_like_namespace(
        self,
        state: ClusterState,
        api: AdminApi,
        ca: CertificateAuthority,
        name: str,
        argv: list[str],
    ) -> None:
        """Run ``argv`` as a pod would see itself: a service-account token at the fixed
        in-cluster path and KUBERNETES_SERVICE_HOST/PORT set.

        Kueue 0.14's visibility server authenticates its callers only through the in-cluster
        configuration. The token directory is mounted on a tmpfs over /run inside a private mount
        namespace, so nothing of it is visible to the rest of the machine.
        """
        sa_dir = self.state_dir / f"{name}-serviceaccount"
        sa_dir.mkdir(exist_ok=True)
        (sa_dir / "token").write_text(_cluster_admin_token(api, name))
        (sa_dir / "ca.crt").write_bytes(ca.pem)
        (sa_dir / "namespace").write_text(manifests.KUEUE_NAMESPACE)
        script = (
            "mount -t tmpfs tmpfs /run && mkdir -p /run/secrets/kubernetes.io && "
            'cp -r "$0" /run/secrets/kubernetes.io/serviceaccount && exec "$@"'
        )
        host, _, port = state.apiserver.removeprefix("https://").rpartition(":")
        self._spawn(
            state,
            name,
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                str(sa_dir),
                *argv,
            ],
            env={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
        )

    def _start_etcd_and_apiserver(
        self,
        state: ClusterState,
        pki: ClusterPki,
    ) -> None:
        """etcd, then kube-apiserver (with ``apiserver_flags``), until it is ready."""
        ports = state.ports
        etcd_url = f"https://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
        self._spawn(
            state,
            "etcd",
            etcd_argv(self.state_dir / "etcd", etcd_url, peer_url, pki.etcd, pki.ca.pair.cert),
        )
        self._spawn(
            state,
            "kube-apiserver",
            apiserver_argv(
                self.versions.binary("kube-apiserver"),
                port=ports["apiserver"],
                etcd_url=etcd_url,
                ca=pki.ca,
                front_proxy_ca=pki.front_proxy_ca,
                serving=pki.apiserver,
                etcd_client=pki.etcd_client,
                front_proxy_client=pki.front_proxy_client,
                sa_keys=pki.sa_keys,
                extra=self.apiserver_flags,
            ),
        )
        self._wait_healthy(state, "kube-apiserver", f"{state.apiserver}/readyz", state.ca_file)

    def write_kueue_config(self, state: ClusterState) -> Path:
        """Kueue's manager configuration for this cluster, with ``kueue_config`` merged in."""
        ports = state.ports
        path = self.state_dir / "kueue-config.yaml"
        config = manifests.kueue_config(
            self.versions,
            webhook_port=ports["kueue-webhook"],
            cert_dir=self.state_dir / "kueue-certs",
            health_port=ports["kueue-health"],
            visibility_port=ports["kueue-visibility"],
        )
        path.write_text(yaml.safe_dump({**config, **self.kueue_config}))
        return path

    def _start_trainer_and_jobset(self, state: ClusterState) -> None:
        """Kubeflow Trainer's controller and the JobSet controller it runs TrainJobs with, each
        with its webhooks on loopback and our certificate (their own cert management off)."""
        v, ports = self.versions, state.ports
        jobset_cfg = self.state_dir / "jobset-config.yaml"
        jobset_cfg.write_text(
            yaml.safe_dump(
                manifests.jobset_config(
                    webhook_port=ports["jobset-webhook"],
                    health_port=ports["jobset-health"],
                    cert_dir=self.state_dir / "kueue-certs",
                )
            )
        )
        self._spawn(
            state,
            "jobset",
            [
                str(v.binary("jobset-controller-manager")),
                f"--config={jobset_cfg}",
                "--zap-log-level=info",
            ],
        )
        trainer_cfg = self.state_dir / "trainer-config.yaml"
        trainer_cfg.write_text(
            yaml.safe_dump(
                manifests.trainer_config(
                    webhook_port=ports["trainer-webhook"], health_port=ports["trainer-health"]
                )
            )
        )
        self._spawn(
            state,
            "trainer",
            [
                str(v.binary("trainer-controller-manager")),
                f"--config={trainer_cfg}",
                "--zap-log-level=info",
            ],
            env={"TMPDIR": str(self.state_dir / "trainer-tmp")},
        )

    def _start_metrics_server(
        self, state: ClusterState, api: AdminApi, ca: CertificateAuthority
    ) -> None:
        """metrics-server on loopback, out of cluster: its own client certificate (user
        :data:`manifests.METRICS_SERVER_USER`, bound to its shipped ClusterRoles), a serving
        certificate of our CA for its APIService, and kwokctl's kubelet flags (scrape each node
        at its status' InternalIP and port), except that KWOK's certificate is verified: ours.

        Resolution 10 s, the least metrics-server accepts (kwokctl uses 15 s): a pod's
        PodMetrics need two scrapes. The kubelet timeout must stay under 90 % of it."""
        v, port = self.versions, state.ports["metrics-server"]
        serving = ca.issue(
            "metrics-server",
            "metrics-server",
            hosts=(
                "127.0.0.1",
                "localhost",
                f"metrics-server.{manifests.METRICS_SERVER_NAMESPACE}.svc",
            ),
        )
        identity = ca.issue("metrics-server-client", manifests.METRICS_SERVER_USER, client=True)
        kubeconfig = self.state_dir / "metrics-server.kubeconfig"
        _write_kubeconfig(kubeconfig, state.apiserver, ca.pem, identity)
        for obj in manifests.metrics_server(v, port, ca.pem):
            api.apply(obj)
        self._spawn(
            state,
            "metrics-server",
            [
                str(v.binary("metrics-server")),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                "--kubelet-use-node-status-port",
                f"--kubelet-certificate-authority={state.ca_file}",
                "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
                "--metric-resolution=10s",
                "--kubelet-request-timeout=5s",
                "--profiling=false",
            ],
        )

    def _wait_healthy(self, state: ClusterState, name: str, url: str, ca_file: str | None) -> None:
        pid = state.pids[name]

        def check() -> bool:
            if not _alive(pid):
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise ComponentDied(f"{name} exited during start-up; log tail:\n{tail}")
            ctx = ssl.create_default_context(cafile=ca_file) if ca_file else _insecure_context()
            if url.startswith(state.apiserver):
                pki = Path(state.ca_file).parent
                ctx.load_cert_chain(pki / "admin.crt", pki / "admin.key")
            try:
                with urllib.request.urlopen(url, context=ctx, timeout=3) as resp:
                    return resp.status == 200
            except OSError:
                return False

        wait_for(check, timeout=STARTUP_TIMEOUT, what=f"{name} at {url}")

    def _start_processes(
        self,
        state: ClusterState,
        pki: ClusterPki,
    ) -> None:
        v, ports = self.versions, state.ports
        t0 = time.monotonic()
        self._start_etcd_and_apiserver(state, pki)
        _log(f"kube-apiserver ready after {time.monotonic() - t0:.1f}s")
        kubeconfig = state.kubeconfig

        api = AdminApi(kubeconfig)
        webhook_url = f"https://127.0.0.1:{ports['kueue-webhook']}"
        crds = [
            *manifests.kueue_crds(v, webhook_url, pki.ca.pem),
            *manifests.kuberay_crds(v),
            # Before Kueue starts: it enables its provisioning controller only if this is served.
            manifests.provisioning_request_crd(v),
            # Before Kueue starts too: its TrainJob reconciler reads runtimes and owns JobSets.
            *(manifests.trainer_crds(v) + manifests.jobset_crds(v) if v.trainjobs else []),
        ]
        for crd in crds:
            api.create(crd)
        for obj in manifests.kueue_visibility(v, ports["kueue-visibility"]):
            api.apply(obj)
        for obj in manifests.kueue_webhooks(v, webhook_url, pki.ca.pem):
            api.apply(obj)
        if v.trainjobs:
            trainer_url = f"https://127.0.0.1:{ports['trainer-webhook']}"
            jobset_url = f"https://127.0.0.1:{ports['jobset-webhook']}"
            for obj in [
                *manifests.trainer_webhooks(v, trainer_url, pki.ca.pem),
                *manifests.jobset_webhooks(v, jobset_url, pki.ca.pem),
            ]:
                api.apply(obj)
        for crd in crds:
            _wait_crd_established(api, crd["metadata"]["name"])
        _log(f"CRDs established after {time.monotonic() - t0:.1f}s")

        # After the CRDs: the garbage collector learns new resource types only on its 30 s
        # discovery resync, and until then leaves the pods of a deleted RayCluster behind.
        common = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            "--leader-elect=false",
        ]
        self._spawn(
            state,
            "kube-controller-manager",
            [
                str(v.binary("kube-controller-manager")),
                *common,
                f"--secure-port={ports['controller-manager']}",
                f"--service-account-private-key-file={pki.sa_keys.key}",
                f"--root-ca-file={pki.ca.pair.cert}",
                f"--cluster-signing-cert-file={pki.ca.pair.cert}",
                f"--cluster-signing-key-file={pki.ca.pair.key}",
                "--use-service-account-credentials=false",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,"
                "-node-route-controller,-persistentvolume-binder-controller",
            ],
        )
        self._spawn(
            state,
            "kube-scheduler",
            [
                str(v.binary("kube-scheduler")),
                *common,
                f"--secure-port={ports['scheduler']}",
            ],
        )

        kueue_cfg = self.write_kueue_config(state)
        _install_kueue_fixed_certs(kueue_cfg.parent / "kueue-certs")
        kueue_argv = [
            str(v.binary("kueue")),
            f"--config={kueue_cfg}",
            f"--kubeconfig={kubeconfig}",
            "--zap-log-level=info",
        ]
        if v.kueue_serves_v1beta2:
            self._spawn(state, "kueue", kueue_argv)
        else:
            self._spawn_in_pod_like_namespace(state, api, pki.ca, "kueue", kueue_argv)
        self._spawn(
            state,
            "kuberay-operator",
            [
                str(v.binary("ray-operator")),
                f"--metrics-addr=127.0.0.1:{ports['kuberay-metrics']}",
                f"--health-probe-bind-address=127.0.0.1:{ports['kuberay-health']}",
                "--enable-leader-election=false",
                "--log-stdout-encoder=console",
            ],
        )
        if v.trainjobs:
            self._start_trainer_and_jobset(state)
        stages = self.state_dir / "kwok-stages.yaml"
        stages.write_text(manifests.kwok_stages(v))
        kwok_metrics = self.state_dir / "kwok-metrics.yaml"
        kwok_metrics.write_text(manifests.kwok_metrics(v))
        kwok_cert = pki.ca.issue("kwok", "kwok", hosts=("127.0.0.1", "localhost"))
        self._spawn(
            state,
            "kwok",
            [
                str(v.binary("kwok")),
                f"--kubeconfig={kubeconfig}",
                f"--config={stages}",
                f"--config={kwok_metrics}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={manifests.FAKE_NODE_ANNOTATION}=fake",
                "--cidr=10.244.0.0/16",
                # Every fake node's InternalIP and kubelet port (in its status): where
                # metrics-server scrapes it. KWOK's server (its emulated kubelet endpoints)
                # listens there, on loopback only (--node-port alone binds 0.0.0.0), with a
                # certificate of our CA (else a self-signed one).
                "--node-ip=127.0.0.1",
                f"--node-port={ports['kwok']}",
                f"--server-address=127.0.0.1:{ports['kwok']}",
                f"--tls-cert-file={kwok_cert.cert}",
                f"--tls-private-key-file={kwok_cert.key}",
            ],
        )
        for index in range(FAKE_NODES):
            api.apply(manifests.fake_node(f"kwok-node-{index}", cpu="32", memory="128Gi", gpus=4))
        self._start_metrics_server(state, api, pki.ca)

        self._wait_healthy(
            state,
            "kube-controller-manager",
            f"https://127.0.0.1:{ports['controller-manager']}/healthz",
            None,
        )
        self._wait_healthy(
            state, "kube-scheduler", f"https://127.0.0.1:{ports['scheduler']}/healthz", None
        )
        self._wait_healthy(state, "kueue", f"http://127.0.0.1:{ports['kueue-health']}/readyz", None)
        _log(f"kueue healthy after {time.monotonic() - t0:.1f}s")
        self._wait_healthy(
            state, "kuberay-operator", f"http://127.0.0.1:{ports['kuberay-health']}/readyz", None
        )
        _wait_kueue_webhooks(api, v)
        _log(f"wait_kueue_webhooks done after {time.monotonic() - t0:.1f}s")
        if v.trainjobs:
            for name in ("jobset", "trainer"):
                self._wait_healthy(
                    state, name, f"http://127.0.0.1:{ports[name + '-health']}/readyz", None
                )
            # Through Trainer's validating webhook: proves it answers.
            runtime = manifests.torch_runtime(v)
            wait_for(lambda: api.apply(runtime), timeout=STARTUP_TIMEOUT, what="the runtime")
            _log(f"trainer and jobset ready after {time.monotonic() - t0:.1f}s")
        _wait_visibility_api(api, v)
        _log(f"wait_visibility_api done after {time.monotonic() - t0:.1f}s")
        self._wait_healthy(
            state,
            "metrics-server",
            f"https://127.0.0.1:{ports['metrics-server']}/livez",
            state.ca_file,
        )
        _wait_metrics_api(api)
        _log(f"metrics API available after {time.monotonic() - t0:.1f}s")
        _wait_jobs_ready(api)
        _log(f"wait_jobs_ready done after {time.monotonic() - t0:.1f}s")
        _wait_default_service_account(api)
        _log(f"wait_default_service_account done after {time.monotonic() - t0:.1f}s")
        _log(f"all components ready after {time.monotonic() - t0:.1f}s")


def _insecure_context() -> ssl.SSLContext:
    # Health endpoints of our own loopback processes with self-signed serving certificates.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


# Kueue reads these certificates from fixed paths when its internal cert management is off.
KUEUE_FIXED_CERT_DIRS = (Path("/visibility"), Path("/etc/kueue/metrics/certs"))


def _install_kueue_fixed_certs(cert_dir: Path) -> None:
    """Copy our serving certificate to the fixed paths Kueue reads (visibility, metrics)."""
    for target in KUEUE_FIXED_CERT_DIRS:
        target.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (target / name).write_bytes((cert_dir / name).read_bytes())


def _write_kubeconfig(path: Path, server: str, ca_pem: bytes, client: KeyPair) -> None:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "jupyter-dw",
                        "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)},
                    }
                ],
                "users": [
                    {
                        "name": "admin",
                        "user": {
                            "client-certificate-data": b64(client.cert.read_bytes()),
                            "client-key-data": b64(client.key.read_bytes()),
                        },
                    }
                ],
                "contexts": [
                    {
                        "name": "jupyter-dw",
                        "context": {
                            "cluster": "jupyter-dw",
                            "user": "admin",
                            "namespace": "default",
                        },
                    }
                ],
                "current-context": "jupyter-dw",
            }
        )
    )
    path.chmod(0o600)


def _cluster_admin_token(api: AdminApi, name: str) -> str:
    """A token for ServiceAccount kueue-system/<name> bound to cluster-admin."""
    namespace = manifests.KUEUE_NAMESPACE
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        }
    )
    api.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"jupyter-dw-testbed-{name}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )
    review = api.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7 * 24 * 3600},
        },
        content_type="application/json",
    )
    return str(review["status"]["token"])


def _wait_crd_established(api: AdminApi, name: str) -> None:
    def established() -> bool:
        crd = api.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in crd.get("status", {}).get("conditions", [])
        )

    wait_for(established, timeout=30, what=f"CRD {name} established")


def _wait_kueue_webhooks(api: AdminApi, versions: Versions) -> None:
    """A server-side dry run goes through Kueue's webhooks: proves they answer."""
    group_version = "v1beta2" if versions.kueue_serves_v1beta2 else "v1beta1"
    flavor = {
        "apiVersion": f"kueue.x-k8s.io/{group_version}",
        "kind": "ResourceFlavor",
        "metadata": {"name": "webhook-probe"},
    }

    def dry_run() -> bool:
        api.request(
            "POST",
            "/apis/kueue.x-k8s.io/" + group_version + "/resourceflavors",
            flavor,
            content_type="application/json",
            query=[("dryRun", "All")],
        )
        return True

    wait_for(dry_run, timeout=STARTUP_TIMEOUT, what="Kueue webhooks")


def _wait_visibility_api(api: AdminApi, versions: Versions) -> None:
    version = "v1beta2" if versions.kueue_serves_v1beta2 else "v1beta1"

    def available() -> bool:
        svc = api.request(
            "GET",
            f"/apis/apiregistration.k8s.io/v1/apiservices/{version}.visibility.kueue.x-k8s.io",
        )
        return any(
            c["type"] == "Available" and c["status"] == "True"
            for c in svc.get("status", {}).get("conditions", [])
        )

    wait_for(available, timeout=STARTUP_TIMEOUT, what="Kueue visibility APIService available")


def _wait_metrics_api(api: AdminApi) -> None:
    def available() -> bool:
        svc = api.request(
            "GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io"
        )
        return any(
            c["type"] == "Available" and c["status"] == "True"
            for c in svc.get("status", {}).get("conditions", [])
        )

    wait_for(available, timeout=STARTUP_TIMEOUT, what="metrics.k8s.io APIService available")


def _wait_jobs_ready(api: AdminApi) -> None:
    def ready() -> bool:
        nodes = api.request("GET", "/api/v1/nodes")["items"]
        return len(nodes) >= FAKE_NODES and all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
            for n in nodes
        )

    wait_for(ready, timeout=STARTUP_TIMEOUT, what="KWOK nodes Ready")


def _wait_default_service_account(api: AdminApi) -> None:
    # Pods need the namespace's default ServiceAccount, made by the controller manager.
    wait_for(
        lambda: api.get(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"namespace": "default", "name": "default"},
            }
        ),
        timeout=STARTUP_TIMEOUT,
        what="the default ServiceAccount",
    )


def _started_in(pid: int, state_dir: Path) -> bool:
    """Whether ``pid`` is still a process this cluster started: after a reboot or a kill, a
    saved PID may belong to someone else by now, and must not be signalled."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return Path(cwd) == state_dir.resolve()


def _stop_cluster(pids: dict[str, int], state_dir: Path) -> None:
    """Stop the components together, then etcd: an API server whose etcd is gone hangs in
    its graceful shutdown instead of finishing it."""
    _stop({name: pid for name, pid in pids.items() if name != "etcd"}, state_dir)
    _stop({name: pid for name, pid in pids.items() if name == "etcd"}, state_dir)


def _stop(processes: dict[str, int], state_dir: Path, timeout: float = 15.0) -> None:
    """SIGTERM the process groups of ``processes`` (name → PID) at once, then SIGKILL whatever
    is left after ``timeout``. Together, because each component takes seconds to shut down
    gracefully and nothing here needs the others while it does."""
    running = {
        name: pid for name, pid in processes.items() if _alive(pid) and _started_in(pid, state_dir)
    }
    for pid in running.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in running.values()):
        time.sleep(0.1)
    for name, pid in running.items():
        if _alive(pid):
            _log(f"{name} (pid {pid}) ignored SIGTERM; killing it")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

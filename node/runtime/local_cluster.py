"""A quorum of real ``kraftwire node start`` processes on 127.0.0.1, for ``kraftwire cluster up``, the
tests, the chaos run and the benchmark. Every node gets ``<dir>/nodeN.properties``, ``<dir>/nodeN/``
(its metadata.log.dir) and ``<dir>/nodeN.log`` (its stderr). With ``tls=True`` every listener is SSL
with ``ssl.client.auth=required``, certificates from a throwaway CA in ``<dir>/tls/``, and
``<dir>/client.properties`` is the ``--command-config`` a tool needs to connect."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from kraftwire.node.core.api import Endpoint, ReplicaKey, VoterSpec
from kraftwire.node.storage import format_directory, random_uuid, uuid_to_str

from .client import ClientError
from .admin import describe_quorum
from .tls_certs import make_ca, make_keystore

LISTENER = "CONTROLLER"


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    sockets = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.bind((host, 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _bracketed(host: str) -> str:
    """An IPv6 address in a HOST:PORT setting is written in brackets, as Kafka writes it."""
    return f"[{host}]" if ":" in host else host


class NodeProcesses:
    """Node processes by node id, each stopped by its pid (shared with the interop tests' quorums)."""

    processes: dict[int, subprocess.Popen[bytes]]

    def running(self) -> list[int]:
        return [i for i, p in self.processes.items() if p.poll() is None]

    def kill(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        process = self.processes.get(node_id)
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            process.wait(timeout=60)

    def stop_all(self, graceful_s: float = 10.0) -> None:
        """SIGTERM everyone, wait up to ``graceful_s``, then SIGKILL whatever is left."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        stop = time.monotonic() + graceful_s
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, stop - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


class LocalCluster(NodeProcesses):
    def __init__(
        self,
        directory: str,
        controllers: int = 3,
        base_port: int | None = None,
        settings: dict[str, Any] | None = None,
        listen_ports: dict[int, int] | None = None,
        host: str = "127.0.0.1",
        tls: bool = False,
    ) -> None:
        """``listen_ports``: where node N really listens when its advertised endpoint (``endpoints``,
        used by every peer and client) is a proxy in front of it. ``host``: the loopback address
        every node listens on (``::1`` for IPv6)."""
        self.directory = os.path.abspath(directory)
        self.ids = list(range(1, controllers + 1))
        ports = [base_port + i for i in self.ids] if base_port else free_ports(controllers, host)
        self.endpoints = {i: Endpoint(host, port) for i, port in zip(self.ids, ports)}
        self.settings = settings or {}
        self.listen_ports = listen_ports or {}
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.cluster_id = uuid_to_str(random_uuid())
        self.tls = tls
        self.client_properties = os.path.join(self.directory, "client.properties")

    @property
    def _tls_dir(self) -> str:
        return os.path.join(self.directory, "tls")

    def _make_certificates(self) -> None:
        """The CA, a keystore per node and one for tools, and client.properties naming them."""
        os.makedirs(self._tls_dir, exist_ok=True)
        ca = make_ca(self._tls_dir)
        for i in self.ids:
            make_keystore(self._tls_dir, f"node{i}", ca)
        client = make_keystore(self._tls_dir, "client", ca)
        with open(self.client_properties, "w") as f:
            f.write(
                "security.protocol=SSL\n"
                f"ssl.keystore.type=PEM\nssl.keystore.location={client}\n"
                f"ssl.truststore.type=PEM\nssl.truststore.location={ca[0]}\n"
            )

    def _tls_settings(self, node_id: int) -> dict[str, str]:
        if not self.tls:
            return {}
        return {
            "listener.security.protocol.map": f"{LISTENER}:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": os.path.join(self._tls_dir, f"node{node_id}.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": os.path.join(self._tls_dir, "ca.pem"),
            "ssl.client.auth": "required",
        }

    def config_path(self, node_id: int) -> str:
        return os.path.join(self.directory, f"node{node_id}.properties")

    def log_dir(self, node_id: int) -> str:
        return os.path.join(self.directory, f"node{node_id}")

    def partition_dir(self, node_id: int) -> str:
        return os.path.join(self.log_dir(node_id), "__cluster_metadata-0")

    def format(self) -> None:
        """Write the configs and format every node's directory with the same initial voters."""
        os.makedirs(self.directory, exist_ok=True)
        if self.tls:
            self._make_certificates()
        directories = {i: random_uuid() for i in self.ids}
        voters = [
            VoterSpec(ReplicaKey(i, directories[i]), {LISTENER: self.endpoints[i]})
            for i in self.ids
        ]
        for i in self.ids:
            self._write_config(i)
            format_directory(self.log_dir(i), self.cluster_id, i, 1, voters, directories[i])

    def add_node(self) -> int:
        """Format one more controller with no initial voters (it joins as an observer); its id."""
        node_id = max(self.ids) + 1
        host = self.endpoints[self.ids[0]].host
        self.endpoints[node_id] = Endpoint(host, free_ports(1, host)[0])
        self.ids.append(node_id)
        if self.tls:
            ca = os.path.join(self._tls_dir, "ca.pem"), os.path.join(self._tls_dir, "ca.key")
            make_keystore(self._tls_dir, f"node{node_id}", ca)
        self._write_config(node_id)
        format_directory(self.log_dir(node_id), self.cluster_id, node_id, 1, [])
        return node_id

    def move(self, node_id: int, port: int) -> None:
        """Give ``node_id`` a new listener port: rewrites its config (start it again to use it)."""
        self.endpoints[node_id] = Endpoint(self.endpoints[node_id].host, port)
        self._write_config(node_id)

    def _write_config(self, node_id: int) -> None:
        servers = ",".join(
            f"{_bracketed(e.host)}:{e.port}"
            for i, e in self.endpoints.items()
            if i != node_id or len(self.endpoints) == 1
        )
        advertised = self.endpoints[node_id]
        port = self.listen_ports.get(node_id, advertised.port)
        lines = {
            "node.id": node_id,
            "process.roles": "controller",
            "listeners": f"{LISTENER}://{_bracketed(advertised.host)}:{port}",
            "advertised.listeners": f"{LISTENER}://{_bracketed(advertised.host)}:{advertised.port}",
            "controller.listener.names": LISTENER,
            "controller.quorum.bootstrap.servers": servers,
            "metadata.log.dir": self.log_dir(node_id),
            **self._tls_settings(node_id),
            **self.settings,
        }
        with open(self.config_path(node_id), "w") as f:
            f.write("".join(f"{k}={v}\n" for k, v in lines.items()))

    def start(self, node_id: int, *extra_args: str) -> None:
        """Start ``kraftwire node start`` for ``node_id``; ``extra_args`` go after ``--config``."""
        with open(os.path.join(self.directory, f"node{node_id}.log"), "ab") as log:
            self.processes[node_id] = subprocess.Popen(
                [sys.executable, "-m", "kraftwire", "node", "start"]
                + ["--config", self.config_path(node_id), *extra_args],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )

    def start_all(self) -> None:
        for i in self.ids:
            self.start(i)

    def describe(self) -> tuple[str, Any] | None:
        """(cluster id, DescribeQuorum response) from whichever running node answers, else None."""
        for i in self.running():
            try:
                return describe_quorum(self.endpoints[i].host, self.endpoints[i].port)
            except ClientError:
                continue
        return None

    def leader(self) -> tuple[int, int] | None:
        """(leader id, epoch) if a running node leads with a known high watermark."""
        described = self.describe()
        if described is None:
            return None
        partition = described[1].topics[0].partitions[0]
        if partition.leader_id in self.running():
            return partition.leader_id, partition.leader_epoch
        return None

    def wait_for_leader(
        self, timeout_s: float = 60.0, not_in: tuple[int, ...] = ()
    ) -> tuple[int, int]:
        stop = time.monotonic() + timeout_s
        while time.monotonic() < stop:
            found = self.leader()
            if found is not None and found[0] not in not_in:
                return found
            time.sleep(0.1)
        raise TimeoutError(f"no leader (other than {not_in}) within {timeout_s} s")

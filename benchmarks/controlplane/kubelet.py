"""A kubelet stand-in for every fake node: what a kubelet writes to the API about the pods bound to it.

- A bound pod is *run*: its init containers in order — ``grove-initc`` really runs (``grove-extender initc``, with
  the token its pod mounts where in-cluster clients look: the Secret ``<pcs>-ic-sat`` that the token-controller
  stand-in fills, or else the pod's own account's token from the TokenRequest API, as a projected volume gives
  it), any other init container counts as done — then its containers start and, ``ready_after`` seconds later
  (a readiness probe's first success), the pod is ``Running`` and ``Ready``. So startup order is what initc makes it.
- A bound pod being deleted (``deletionTimestamp``) is finalized: the kubelet deletes it with grace period 0 once
  its containers are stopped, which is what lets a graceful delete (preemption, scale-in) finish. Stopping takes
  ``stop_after`` seconds (a container's SIGTERM handler), never none: a real pod runs on for a while after its
  delete, and a controller that acts on a pod's being *gone* must see that window.
- ``crash(namespace, name)`` reports what a kubelet reports when a container exits 1 and is restarted.

Pods in namespaces listed in ``quiet`` are bound but never run (scale scenarios and benchmarks, where thousands
of status writes would only load the API server). Nothing else: no probes after the first, no restarts.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.controlplane.agents import Agent, Handler
from benchmarks.controlplane.rest import Api, ApiError
from benchmarks.controlplane.supervisor import Child
from benchmarks.controlplane.tokens import write_kubeconfig

__all__ = ["Kubelet"]

INITC = "grove-initc"
IN_CLUSTER = "/var/run/secrets/kubernetes.io/serviceaccount"  # where in-cluster clients find token and CA
STRATEGIC = "application/strategic-merge-patch+json"
StartInitc = Callable[[str, list[str], Path], Child]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet(Agent):
    name = "kubelet"

    def __init__(
        self, api: Api, *, folder: Path, start_initc: StartInitc, ready_after: float = 1.0, stop_after: float = 1.0
    ) -> None:
        """``start_initc(name, args, kubeconfig)`` starts ``grove-extender initc ARGS`` with that kubeconfig."""
        super().__init__(api)
        self.folder = folder
        self.ready_after = ready_after
        self.stop_after = stop_after
        self.quiet: set[str] = set()
        self._start_initc = start_initc
        self._running: dict[str, asyncio.Task[Any]] = {}  # uid → the task that runs it (kept once done)
        self._unfinished: set[str] = set()  # uids whose start failed on the API: started again when next seen
        self._finalizing: set[str] = set()

    def watches(self) -> list[tuple[str, dict[str, str], Handler]]:
        return [("/api/v1/pods", {"fieldSelector": "spec.nodeName!="}, self._seen)]

    def crash(self, namespace: str, name: str) -> None:
        """The pod's containers exited 1 and are restarting: not ready, ``lastState.terminated.exitCode`` 1."""
        pod = self.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        statuses = [
            {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "started": False,
             "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": _now()}}}
            for c in pod["spec"].get("containers", [])
        ]  # fmt: skip
        conditions = [
            {"type": t, "status": "False", "lastTransitionTime": _now()} for t in ("ContainersReady", "Ready")
        ]
        body = {"status": {"conditions": conditions, "containerStatuses": statuses}}
        self.api.call("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", body, content_type=STRATEGIC)

    def _seen(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            task = self._running.pop(uid, None)
            if task is not None:
                task.cancel()
            if kind != "DELETED" and uid not in self._finalizing:
                self._finalizing.add(uid)
                self.spawn(self._finalize(pod))
            return
        if uid in self._running or meta["namespace"] in self.quiet:
            return
        status = pod.get("status") or {}
        started = status.get("phase") != "Pending" or any(
            c.get("type") == "Ready" for c in status.get("conditions", [])
        )
        if started and uid not in self._unfinished:
            return
        self._unfinished.discard(uid)
        self._running[uid] = self.spawn(self._run_pod(pod))

    async def _finalize(self, pod: dict[str, Any]) -> None:
        assert self.client is not None
        meta = pod["metadata"]
        if meta["namespace"] not in self.quiet:  # quiet pods never ran: nothing to stop
            await asyncio.sleep(self.stop_after)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": meta["uid"]}}  # fmt: skip
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        reply = await self.client.arequest("DELETE", path, body)
        if reply.status >= 400 and reply.status not in (404, 409):
            self.errors.append(f"finalizing {meta['namespace']}/{meta['name']}: HTTP {reply.status}")

    async def _run_pod(self, pod: dict[str, Any]) -> None:
        try:
            for init in pod["spec"].get("initContainers", []):
                if init["name"] == INITC:
                    await self._initc(pod, init)
            started = _now()
            await self._status(pod, ready=False, started=started)
            await asyncio.sleep(self.ready_after)
            await self._status(pod, ready=True, started=started)
        except (ApiError, aiohttp.ClientError, OSError, TimeoutError):
            # The API server went away mid-start (make e2e restarts it): start the pod again once the relist after
            # its return shows it, as a kubelet's sync loop would, rather than leave it never Ready.
            uid = pod["metadata"]["uid"]
            self._running.pop(uid, None)
            self._unfinished.add(uid)

    async def _initc(self, pod: dict[str, Any], init: dict[str, Any]) -> None:
        meta = pod["metadata"]
        kubeconfig = await self._credentials(pod, init)
        args = [*init.get("args", []), f"--namespace={meta['namespace']}"]
        while True:  # an init container that fails runs again (restartPolicy), until it succeeds
            child = self._start_initc(f"initc-{meta['namespace']}-{meta['name']}", args, kubeconfig)
            try:
                while child.alive():
                    await asyncio.sleep(0.1)
            finally:
                if child.alive():  # the pod went away while its init container waited
                    child.stop()
            if child.process.returncode == 0:
                return
            await asyncio.sleep(2)

    async def _credentials(self, pod: dict[str, Any], init: dict[str, Any]) -> Path:
        """A kubeconfig with the token the container finds where in-cluster clients look: a Secret volume mounted
        there gives its ``token`` and ``ca.crt`` (grove-initc's ``<pcs>-ic-sat``, once the token controller filled
        it; a kubelet keeps the pod waiting until the Secret can be mounted); otherwise the pod's own account's
        projected token, from the TokenRequest API bound to the pod."""
        assert self.client is not None
        meta, spec = pod["metadata"], pod["spec"]
        mounted = {m["name"] for m in init.get("volumeMounts", []) if m["mountPath"].rstrip("/") == IN_CLUSTER}
        volume = next((v for v in spec.get("volumes", []) if v["name"] in mounted and "secret" in v), None)
        path = self.folder / f"initc-{meta['uid']}.kubeconfig"
        if volume is not None:
            name = volume["secret"]["secretName"]
            files = await self._secret_volume(meta, volume["name"], name)
            user = f"secret {meta['namespace']}/{name}"  # a name only: the API server reads the identity from the token
            token = (files / "token").read_text()
            return write_kubeconfig(path, server=self.client.server, ca=files / "ca.crt", token=token, user=user)
        account = spec.get("serviceAccountName") or "default"
        bound = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600, "boundObjectRef": bound}}  # fmt: skip
        token_path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token"
        token = (await self.client.acall("POST", token_path, body))["status"]["token"]
        user = f"system:serviceaccount:{meta['namespace']}:{account}"
        return write_kubeconfig(path, server=self.client.server, ca=self.client.ca, token=token, user=user)

    async def _secret_volume(self, meta: dict[str, Any], volume: str, secret: str) -> Path:
        """The Secret's keys as files (mode 0600), once it exists and holds a token."""
        assert self.client is not None
        path = f"/api/v1/namespaces/{meta['namespace']}/secrets/{secret}"
        while True:
            reply = await self.client.arequest("GET", path)
            data = (reply.body.get("data") or {}) if reply.status == 200 else {}
            if data.get("token"):
                break
            await asyncio.sleep(0.5)
        folder = self.folder / "volumes" / str(meta["uid"]) / volume
        folder.mkdir(parents=True, exist_ok=True)
        for key, value in data.items():
            (folder / key).write_bytes(base64.b64decode(value))
            (folder / key).chmod(0o600)
        return folder

    async def _status(self, pod: dict[str, Any], *, ready: bool, started: str) -> None:
        assert self.client is not None
        meta, spec = pod["metadata"], pod["spec"]
        now, flag = _now(), "True" if ready else "False"
        conditions = [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started},
            {"type": "Initialized", "status": "True", "lastTransitionTime": started},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
            {"type": "Ready", "status": flag, "lastTransitionTime": now},
        ]
        statuses = [
            {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": ready, "started": True,
             "restartCount": 0, "state": {"running": {"startedAt": started}}}
            for c in spec.get("containers", [])
        ]  # fmt: skip
        body = {"status": {"phase": "Running", "conditions": conditions, "containerStatuses": statuses,
                           "startTime": started, "hostIP": "10.0.0.1", "podIP": "10.1.0.1"}}  # fmt: skip
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        await self.client.acall("PATCH", path, body, content_type=STRATEGIC)

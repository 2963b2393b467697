"""`--executor ray`: the run's `--workers N` adapter workers as Ray actors across a cluster (optional extra [ray]).

The only harness module that imports a third-party package, and only inside functions, when a
run asks for this executor (tests/architecture/test_imports.py allows exactly this module to).

Each worker is one Ray actor (`--worker-cpus`, `--worker-gpus` reserved per actor, spread over
the nodes, so a GPU adapter lands on a GPU node). The actor writes the corpora the driver sends
into a temporary folder on its node (the same bytes as a local run's $HARNESS_CORPUS_DIR),
starts and owns one `AdapterProcess` there, and asks it one request at a time: the latency
returned is `AdapterProcess.ask`'s, measured in the actor at the adapter's process boundary
(request line written -> response line read), so Ray's own transport never enters a latency
and the definition is the local run's. The driver sends each worker's queries to its actor in
set order, one at a time (Ray runs one caller's calls to an actor in submission order), so
request order per adapter is the local run's too.

Failure: an `AdapterError` in the actor (crash, time-out, protocol, `error` reply) comes back
as the same AdapterError text; an actor or node that dies, or a driver that hears nothing within
the time-outs plus RAY_GRACE_SECONDS, is an AdapterError naming the worker and node (exit 3 and
a partial report, as a crashing local worker). Orphans: in every actor the adapter's process
group and the corpus folder are guarded (harness/watchdog.py: a guard process forked twice, in
a session of its own, so Ray's clean-up of a dead worker's children spares it); if the actor
dies without releasing them (killed, node agent lost, driver interrupted), the guard stops the
adapter's process group (SIGTERM, then SIGKILL) and removes the corpus folder. The driver kills
every actor when the run ends in an error or an interrupt, so SIGINT/SIGTERM stop every node's
adapter.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

from harness.adapter.asking import CORPUS_DIR_ENV, RunOptions, worker_log
from harness.adapter.driver import AdapterProcess
from harness.child import STOP_GRACE_SECONDS, TERM_GRACE_SECONDS
from harness.adapter.protocol import Request, Response
from harness.errors import AdapterError, Interrupted, UsageError
from harness.watchdog import guard_folder, release_folder

RAY_GRACE_SECONDS = 60.0           # beyond the adapter's own time-outs: Ray scheduling, transport, a slow node
LOCAL_OBJECT_STORE_BYTES = 512 * 1024 * 1024  # a local instance holds only the corpora; Ray's default is 30% of RAM
INSTALL_HINT = "--executor ray needs Ray: pip install 'retrieval-gate[ray]' (or pip install ray)"

def _import_ray():
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray



class RayWorkers:
    """The worker starter run_sets calls: connect to Ray, place `workers` actors, start their adapters.

    `address` None starts a local Ray instance (stopped at the end of the run); an address joins
    that cluster (`ray://host:10001` or a GCS `host:6379`). A process that has already called
    `ray.init` is used as it is. Every actor is entered into the run's ExitStack.
    """

    def __init__(self, *, address: str | None = None, worker_cpus: float = 1.0, worker_gpus: float = 0.0) -> None:
        _import_ray()  # without Ray, stop now (exit 2, the install hint), before any corpus is written
        self.address = address
        self.worker_cpus = float(worker_cpus)
        self.worker_gpus = float(worker_gpus)
        self._record: dict[str, object] = {"name": "ray", "address": address, "worker_cpus": self.worker_cpus,
                                           "worker_gpus": self.worker_gpus}

    def provenance(self) -> dict[str, object]:
        """provenance.executor: Ray's version, where each worker ran, what starting Ray cost."""
        return dict(self._record)

    def __call__(self, options: RunOptions, corpus_dir: Path, stack: contextlib.ExitStack) -> list[RayWorker]:
        ray = _import_ray()
        began = time.perf_counter()
        self._connect(ray, options, stack)
        connected = time.perf_counter()
        corpora = ray.put({path.name: path.read_bytes() for path in sorted(Path(corpus_dir).iterdir())
                           if path.is_file()})
        actor_class = ray.remote(_AdapterActor)
        workers = []
        for index in range(options.workers):
            actor = actor_class.options(num_cpus=self.worker_cpus, num_gpus=self.worker_gpus, max_restarts=0,
                                        max_concurrency=1, scheduling_strategy="SPREAD").remote()
            worker = RayWorker(ray, actor, index, options,
                               resources=f"cpus={self.worker_cpus:g}, gpus={self.worker_gpus:g}")
            stack.enter_context(worker)  # from here on, a failure kills the actor (and its adapter)
            workers.append(worker)
        local = self.address is None
        pending = [worker.start_remote(corpora, cwd=os.getcwd() if local else None) for worker in workers]
        for worker, ref in zip(workers, pending):
            worker.finish_start(ref)
        self._record.update({
            "ray_version": ray.__version__, "local_instance": self._started_instance,
            "connect_seconds": round(connected - began, 3),
            "startup_seconds": round(time.perf_counter() - began, 3),  # connect + place actors + start adapters
            "workers": [worker.placement for worker in workers]})
        return workers

    def _connect(self, ray, options: RunOptions, stack: contextlib.ExitStack) -> None:
        self._started_instance = False
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # tests and CI never talk to the network
        # ray.init may install its own handlers; the run's SIGINT/SIGTERM handling must stay the CLI's.
        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
        settings: dict[str, object] = {"log_to_driver": False, "logging_level": "ERROR", "include_dashboard": False}
        if self.address is None:
            # Like local --workers, N workers fit on this machine whatever its core count.
            settings.update(num_cpus=max(os.cpu_count() or 1, math.ceil(options.workers * self.worker_cpus)),
                            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                            runtime_env={"env_vars": {"PYTHONPATH": _python_path()}})
            self._started_instance = True
        else:
            settings["address"] = self.address
        try:
            ray.init(**settings)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad cluster
            what = "start a local Ray instance" if self.address is None else f"join the Ray cluster at {self.address}"
            raise AdapterError(f"--executor ray: cannot {what}: {_first_line(exc)}") from None
        finally:
            for signum, handler in handlers.items():
                if handler is not None:
                    signal.signal(signum, handler)
        stack.callback(ray.shutdown)


def _python_path() -> str:
    """The driver's harness and working directory first, so the local instance's workers import this harness."""
    here = str(Path(__file__).resolve().parent.parent.parent)
    parts = [here, os.getcwd(), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return os.pathsep.join(dict.fromkeys(parts))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class RayWorker:
    """The driver's handle on one actor: what run_sets needs from a worker (`ask`, `banner`, `startup_seconds`)."""

    def __init__(self, ray, actor, index: int, options: RunOptions, *, resources: str) -> None:
        self._ray = ray
        self._resources = resources
        self._actor = actor
        self.index = index
        self.options = options
        self.banner: dict | None = None
        self.startup_seconds: float | None = None
        self.placement: dict[str, object] = {"worker": index + 1}
        self._failed = False
        self._log_path = worker_log(Path(options.log_path).resolve(), index, options.workers)
        # A first answer may pay the adapter's start-up; Ray gets a grace on top of the adapter's time-outs.
        self._reply_seconds = options.startup_timeout + options.query_timeout + RAY_GRACE_SECONDS

    def __enter__(self) -> RayWorker:
        return self

    def start_remote(self, corpora, *, cwd: str | None):
        options = self.options
        return self._actor.start.remote(list(options.argv), corpora, str(self._log_path), options.expect_banner,
                                        options.startup_timeout, options.query_timeout, cwd)

    def finish_start(self, ref) -> None:
        reply = self._get(ref, self.options.startup_timeout + RAY_GRACE_SECONDS, "start")
        if "error" in reply:
            self._failed = True
            raise AdapterError(reply["error"], argv=list(self.options.argv), stderr_tail=reply.get("stderr_tail", ""))
        self.banner = reply["banner"]
        self.startup_seconds = reply["startup_seconds"]
        self.placement.update(node_id=reply["node_id"], host=reply["host"], actor_pid=reply["pid"],
                              adapter_pid=reply["adapter_pid"])

    def ask(self, request: Request) -> tuple[Response, float]:
        reply = self._get(self._actor.ask.remote(tuple(request)), self._reply_seconds, request.qid or "?")
        if reply[0] == "error":
            self._failed = True
            _, message, qid, tail = reply
            raise AdapterError(message, argv=list(self.options.argv), qid=qid, stderr_tail=tail)
        _, (ids, scores, error), latency = reply
        return Response(tuple(ids), tuple(scores) if scores is not None else None, error), latency

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None and not self._failed:
            reply = self._get(self._actor.stop.remote(),
                              STOP_GRACE_SECONDS + TERM_GRACE_SECONDS + RAY_GRACE_SECONDS, "stop")
            self._kill()
            if reply is not None:
                raise AdapterError(reply, argv=list(self.options.argv))
            return
        # The run failed or was interrupted: the actor may be inside a long query, so kill it at
        # once; its guard (harness/watchdog.py) stops the adapter's process group on its node.
        self._kill()

    def _kill(self) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(self._actor, no_restart=True)

    def _where(self) -> str:
        host = self.placement.get("host")
        return f"worker {self.index + 1} (ray actor{' on ' + str(host) if host else ''})"

    def _get(self, ref, timeout: float, label: str):
        ray = self._ray
        try:
            return _wait_interruptibly(ray, ref, timeout)
        except ray.exceptions.GetTimeoutError:
            self._failed = True
            self._kill()
            raise AdapterError(f"query {label}: {self._where()} sent no reply within {timeout:g} s "
                               f"(node lost, or no node offers {self._resources}); "
                               f"the actor was killed [adapter: {' '.join(self.options.argv)}]",
                               argv=list(self.options.argv), qid=label) from None
        except ray.exceptions.RayError as exc:
            self._failed = True
            raise AdapterError(f"query {label}: {self._where()} died: {_first_line(exc)} "
                               f"[adapter: {' '.join(self.options.argv)}; log on its node: {self._log_path}]",
                               argv=list(self.options.argv), qid=label) from None


def _wait_interruptibly(ray, ref, timeout: float):
    """ray.get(ref) within `timeout`; an interrupt during the wait is re-raised as itself.

    A Python signal handler that raises (harness.interrupts) while Ray's compiled code waits
    comes out as a SystemError whose cause is the Interrupted: unwrap it, so an interrupt
    unwinds the run as it does locally. (Masking the signals cannot help: Ray's own threads
    take the signal and Python runs the handler in the main thread, inside Ray's wait.)
    """
    try:
        return ray.get(ref, timeout=timeout)
    except SystemError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, (Interrupted, KeyboardInterrupt)):
            raise cause from None
        raise


class _AdapterActor:
    """Runs on a node (made a Ray actor by RayWorkers): one AdapterProcess and its corpus folder, both guarded."""

    def __init__(self) -> None:
        self.adapter: AdapterProcess | None = None
        self.folder: str | None = None

    def start(self, argv, corpora, log_path, expect_banner, startup_timeout, query_timeout, cwd) -> dict:
        import ray
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)  # a local instance: the adapter starts where the driver's local run would
        self.folder = tempfile.mkdtemp(prefix="retrieval-gate-corpus-")
        guard_folder(self.folder)  # the adapter's group is guarded by ChildProcess.spawn (harness/watchdog.py)
        for name, data in corpora.items():
            Path(self.folder, name).write_bytes(data)
        adapter = AdapterProcess(argv, log_path=Path(log_path), env={CORPUS_DIR_ENV: self.folder},
                                 expect_banner=expect_banner, startup_timeout=startup_timeout,
                                 query_timeout=query_timeout)
        try:
            adapter.__enter__()
        except AdapterError as error:
            self._remove_folder()
            return {"error": str(error), "stderr_tail": error.stderr_tail}
        self.adapter = adapter
        return {"banner": adapter.banner, "startup_seconds": adapter.startup_seconds,
                "node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid(), "adapter_pid": adapter.pid}

    def ask(self, request: tuple) -> tuple:
        try:
            response, latency = self.adapter.ask(Request(*request))
        except AdapterError as error:
            return ("error", str(error), error.qid, error.stderr_tail)
        return ("ok", (list(response.ids), list(response.scores) if response.scores is not None else None,
                       response.error), latency)

    def stop(self) -> str | None:
        """Stop the adapter as a local run does; None, or the AdapterError text (e.g. stray lines)."""
        try:
            self.adapter.__exit__(None, None, None)
            return None
        except AdapterError as error:
            return str(error)
        finally:
            self._remove_folder()

    def _remove_folder(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        release_folder(self.folder)

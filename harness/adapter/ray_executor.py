"""`--executor ray`: the run's `--workers N` adapter workers as Ray actors across a cluster (optional extra [ray]).

It imports Ray only inside functions, when a run asks for this executor
(tests/architecture/test_imports.py allows this module, and numpy's statistics engine, a third-party import).

Without --ray-address, the run starts its own one-node instance (harness.adapter.ray_instance)
and connects to it.

Each worker is one Ray actor (`--worker-cpus`, `--worker-gpus` reserved per actor, spread over
the nodes, so a GPU adapter lands on a GPU node). The actor writes the corpora the driver sends
into a temporary folder on its node (the same bytes as a local run's $HARNESS_CORPUS_DIR),
starts and owns one `AdapterProcess` there, and asks it one request at a time: the latency
returned is `AdapterProcess.ask`'s, measured in the actor at the adapter's process boundary
(request line written -> response line read), so Ray's own transport never enters a latency
and the definition is the local run's. The driver sends each worker's queries to its actor in
one call, in set order over every set; the actor asks them in that order without waiting on Ray
or the driver, and streams the replies back (a Ray generator) in chunks of about CHUNK_SECONDS
of answering, so Ray's round trip is paid once a chunk and never by the adapter.

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
import importlib
import math
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from harness.adapter import ray_instance
from harness.adapter.options import RunOptions
from harness.adapter.startup import CORPUS_DIR_ENV
from harness.adapter.driver import AdapterProcess
from harness.child import STOP_GRACE_SECONDS, TERM_GRACE_SECONDS
from harness.adapter.protocol import Request, Response
from harness.errors import AdapterError, Interrupted, UsageError
from harness.interrupts import raise_if_interrupted
from harness.watchdog import guard_folder, release_folder

RAY_GRACE_SECONDS = 60.0           # beyond the adapter's own time-outs: Ray scheduling, transport, a slow node
# The actor sends its replies back in chunks of about CHUNK_SECONDS of answering (one Ray object
# each, about 1 ms of CPU in the actor and the driver, benchmarks/workers.py): few enough to cost
# nothing against the adapter's work, often enough that progress still moves (a slow backend's
# chunk holds one query).
CHUNK_SECONDS = 0.1
INSTALL_HINT = "--executor ray needs Ray: pip install 'retrieval-gate[ray]' (or pip install ray)"


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


class RayWorkers:
    """The worker starter `ask_sets` calls for `--executor ray`: connect to Ray, place `workers` actors, start their adapters.

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
        self._workers: list[RayWorker] = []

    def provenance(self) -> dict[str, object]:
        """provenance.executor: Ray's version, where each worker ran, what starting Ray cost."""
        return dict(self._record)

    def warnings(self) -> list[str]:
        """Workers at a higher niceness than this run: on a busy node their adapters wait behind
        other processes, so their latencies are longer than a local run's (docs/scale.md)."""
        mine = os.nice(0)
        nicer = sorted({worker.niceness for worker in self._workers if worker.niceness > mine})
        return [f"--executor ray: workers at niceness {', '.join(map(str, nicer))} (this run: {mine}), and their "
                f"adapters with them, answer later on a busy node than a local run's; start the cluster's nodes "
                f"with {ray_instance.WORKER_NICENESS_ENV}={mine}"] if nicer else []

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
        folder = str(options.adapter_folder or os.getcwd())
        pending = [worker.start_remote(corpora, cwd=folder if local else None) for worker in workers]
        for worker, ref in zip(workers, pending):
            worker.finish_start(ref)
        self._record.update({
            "ray_version": ray.__version__, "local_instance": self._started_instance,
            "connect_seconds": round(connected - began, 3),
            "startup_seconds": round(time.perf_counter() - began, 3),  # connect + place actors + start adapters
            "workers": [worker.placement for worker in workers]})
        self._workers = workers
        return workers

    def _connect(self, ray, options: RunOptions, stack: contextlib.ExitStack) -> None:
        self._started_instance = False
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # tests and CI never talk to the network
        address = self.address
        if address is None:
            address = ray_instance.start(stack, cpus=max(os.cpu_count() or 1,
                                                           math.ceil(options.workers * self.worker_cpus)))
            self._started_instance = True
            stack.callback(_reload_ray_authentication)  # on leaving, after the environment is restored
            _set_environment(stack, ray_instance.token())  # the driver presents the instance's token
            _reload_ray_authentication()
        try:
            with signals_deferred(hold=self._started_instance):
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except (Interrupted, KeyboardInterrupt):
            raise  # Interrupted is an Exception too: never a "cannot join" backend failure
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... for a bad cluster
            what = "start a local Ray instance" if self.address is None else f"join the Ray cluster at {self.address}"
            raise AdapterError(f"--executor ray: cannot {what}: {_first_line(exc)}") from None
        stack.callback(ray.shutdown)


def _set_environment(stack: contextlib.ExitStack, values: dict[str, str]) -> None:
    """os.environ updated with `values` until `stack` unwinds."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)

    def restore() -> None:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    stack.callback(restore)


def _reload_ray_authentication() -> None:
    """Make Ray read RAY_AUTH_MODE and RAY_AUTH_TOKEN again: it caches them when first imported."""
    with contextlib.suppress(ImportError, AttributeError):  # Ray's private API; without it, the cached values
        raylet = importlib.import_module("ray._raylet")  # looked up as it runs: its stub lacks these names
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()


@contextlib.contextmanager
def signals_deferred(hold: bool = True):
    """The run's SIGINT/SIGTERM handlers kept over Ray's connect (ray.init may install its own).

    With `hold`, a signal meanwhile is held and raised as Interrupted on leaving: Ray catches
    what a handler raises inside its connect. Only for our own local instance, already up, whose
    connect takes about a second; a remote cluster's connect may retry for a minute, and stays
    interruptible (what Ray does with the Interrupted then is Ray's)."""
    held: list[int] = []
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum, handler in handlers.items():
        if hold and handler not in (signal.SIG_IGN, None):
            signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for signum, handler in handlers.items():  # ray.init may install its own: the run's stay the CLI's
            if handler is not None:
                signal.signal(signum, handler)
    if held:
        raise Interrupted(held[0])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


class RayWorker:
    """The driver's handle on one actor: what the run needs of a worker (`asking.Worker`: `ask`, `banner`, ...)."""

    def __init__(self, ray, actor, index: int, options: RunOptions, *, resources: str) -> None:
        self._ray = ray
        self._resources = resources
        self._actor = actor
        self.index = index
        self.options = options
        self.argv = list(options.argv)
        self.banner: dict | None = None
        self.startup_seconds: float | None = None
        self.peak_rss_mib: float | None = None  # the actor's measure, sent back when its adapter stops
        self.placement: dict[str, object] = {"worker": index + 1}
        self._failed = False
        self._log_path = options.worker_log(index).resolve()
        # A first answer may pay the adapter's start-up; Ray gets a grace on top of the adapter's time-outs.
        self._reply_seconds = options.startup_timeout + options.query_timeout + RAY_GRACE_SECONDS

    def __enter__(self) -> RayWorker:
        return self

    def start_remote(self, corpora, *, cwd: str | None) -> tuple:
        """Ask the actor where it runs, then to start its adapter (run in that order by the actor)."""
        options = self.options
        return (self._actor.where.remote(),
                self._actor.start.remote(list(options.argv), corpora, str(self._log_path), options.expect_banner,
                                         options.startup_timeout, options.query_timeout, cwd))

    def finish_start(self, refs: tuple) -> None:
        """Its node first, so that a node lost while the adapter starts is named too."""
        where, start = refs
        placed = self._get(where, RAY_GRACE_SECONDS, "start")
        self.placement.update(placed)
        self.niceness: int = placed["niceness"]
        reply = self._get(start, self.options.startup_timeout + RAY_GRACE_SECONDS, "start")
        if "error" in reply:
            self._failed = True
            raise AdapterError(reply["error"], argv=self.argv, stderr_tail=reply.get("stderr_tail", ""))
        self.banner = reply["banner"]
        self.startup_seconds = reply["startup_seconds"]
        self.placement["adapter_pid"] = reply["adapter_pid"]

    def ask(self, request: Request) -> tuple[Response, float]:
        """One request (the warm-up); the run's queries go through ask_stream."""
        [reply] = self.ask_stream([request])
        return reply

    def ask_stream(self, requests: Sequence[Request]) -> Iterator[tuple[Response, float]]:
        """(response, latency) per request, in order: one call that the actor answers as a stream.

        The actor asks its adapter every request in turn, never waiting on Ray or on this driver,
        and sends the replies back in chunks (CHUNK_SECONDS); a failure ends the stream, and is
        raised here after the replies before it.
        """
        requests = list(requests)
        stream = self._actor.ask.remote(requests, CHUNK_SECONDS)
        # A chunk may wait for one query's whole time-out (a first one, the start-up too) past its seconds.
        timeout = self._reply_seconds + CHUNK_SECONDS
        answered = 0
        while answered < len(requests):
            label = requests[answered].qid or "?"
            replies = self._get(self._next_chunk(stream, timeout, label), timeout, label)
            raise_if_interrupted()  # a signal whose Interrupted Ray's own code caught meanwhile
            for reply in replies:
                answered += 1
                yield self._answer(reply)

    def _next_chunk(self, stream, timeout: float, label: str):
        """The next chunk's reference, once the actor has sent it (a failure is a reply, so the
        stream ends only after the last request; an actor that dies leaves its error in the next one)."""
        ready, _ = self._wait(lambda: self._ray.wait([stream], timeout=timeout), timeout, label)
        if not ready:
            raise self._timed_out(timeout, label)
        return next(stream)

    def _answer(self, reply: tuple) -> tuple[Response, float]:
        if reply[0] == "error":
            self._failed = True
            _, message, qid, tail = reply
            raise AdapterError(message, argv=self.argv, qid=qid, stderr_tail=tail)
        _, response, latency = reply
        return response, latency

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None and not self._failed:
            reply = self._get(self._actor.stop.remote(),
                              STOP_GRACE_SECONDS + TERM_GRACE_SECONDS + RAY_GRACE_SECONDS, "stop")
            self._kill()
            self.peak_rss_mib = reply["peak_rss_mib"]
            if reply["error"] is not None:
                raise AdapterError(reply["error"], argv=self.argv)
            return
        # The run failed or was interrupted: the actor may be inside a long query, so kill it at
        # once; its guard (harness/watchdog.py) stops the adapter's process group on its node.
        self._kill()

    def _kill(self) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(self._actor, no_restart=True)

    def _where(self) -> str:
        """"worker 2 (ray actor on node 3f2a9c1b04de, host gpu-7)": simulated nodes share a host name."""
        node, host = self.placement.get("node_id"), self.placement.get("host")
        where = ", ".join(part for part in (f"node {str(node)[:12]}" if node else "",
                                            f"host {host}" if host else "") if part)
        return f"worker {self.index + 1} (ray actor{' on ' + where if where else ''})"

    def _get(self, ref, timeout: float, label: str):
        return self._wait(lambda: self._ray.get(ref, timeout=timeout), timeout, label)

    def _wait(self, call, timeout: float, label: str):
        """`call()` (a wait on Ray within `timeout`), its failures named as this worker's."""
        ray = self._ray
        try:
            return _interruptibly(call)
        except ray.exceptions.GetTimeoutError:
            raise self._timed_out(timeout, label) from None
        except ray.exceptions.RayError as exc:
            self._failed = True
            raise AdapterError(f"query {label}: {self._where()} died: {_first_line(exc)} "
                               f"[adapter: {' '.join(self.options.argv)}; log on its node: {self._log_path}]",
                               argv=self.argv, qid=label) from None

    def _timed_out(self, timeout: float, label: str) -> AdapterError:
        self._failed = True
        self._kill()
        return AdapterError(f"query {label}: {self._where()} sent no reply within {timeout:g} s "
                            f"(node lost, or no node offers {self._resources}); "
                            f"the actor was killed [adapter: {' '.join(self.options.argv)}]",
                            argv=self.argv, qid=label)


def _interruptibly(call):
    """`call()`, a wait inside Ray; an interrupt during the wait is re-raised as itself.

    A Python signal handler that raises (harness.interrupts) while Ray's compiled code waits
    comes out as a SystemError whose cause is the Interrupted: unwrap it, so an interrupt
    unwinds the run as it does locally. (Masking the signals cannot help: Ray's own threads
    take the signal and Python runs the handler in the main thread, inside Ray's wait.)
    """
    try:
        return call()
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
        return {"banner": adapter.banner, "startup_seconds": adapter.startup_seconds, "adapter_pid": adapter.pid}

    def where(self) -> dict:
        """The node, host, pid and niceness this actor runs at (the driver's `placement`); its
        adapter inherits the niceness (Ray's default for workers is 15: docs/scale.md)."""
        import ray
        return {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "actor_pid": os.getpid(), "niceness": os.nice(0)}

    def ask(self, requests: list[Request], chunk_seconds: float):
        """A Ray generator: a reply per request, in order, in chunks of about `chunk_seconds` of
        answering; the first failure's reply ends it. The Response goes back whole (passages too)."""
        chunk: list[tuple] = []
        began = time.perf_counter()
        for request in requests:
            try:
                response, latency = self._started().ask(request)
            except AdapterError as error:
                yield [*chunk, ("error", str(error), error.qid, error.stderr_tail)]
                return
            chunk.append(("ok", response, latency))
            if time.perf_counter() - began >= chunk_seconds:
                yield chunk
                chunk, began = [], time.perf_counter()
        if chunk:
            yield chunk

    def stop(self) -> dict:
        """Stop the adapter as a local run does: `error`, None or the AdapterError text (e.g. stray lines), and
        `peak_rss_mib`, the peak resident memory of its process group as sampled on this node."""
        try:
            adapter = self._started()
            adapter.__exit__(None, None, None)
            return {"error": None, "peak_rss_mib": adapter.peak_rss_mib}
        except AdapterError as error:
            return {"error": str(error), "peak_rss_mib": None}
        finally:
            self._remove_folder()

    def _started(self) -> AdapterProcess:
        if self.adapter is None:  # the driver asks and stops only an actor whose start succeeded
            raise AdapterError("the adapter did not start")
        return self.adapter

    def _remove_folder(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            release_folder(self.folder)

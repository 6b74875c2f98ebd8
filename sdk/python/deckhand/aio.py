"""The asynchronous client: the same verbs as Client, awaited.

Every call runs the synchronous client's in a worker thread
(asyncio.to_thread), so the checks of every answer and the resumable
streams and transfers are the same code; the event loop is never blocked.

    async with AsyncClient(url) as client:
        await client.login(email, password)
        async with await client.containers.create("base") as box:
            await box.wait_running()
            r = await box.process.run(["echo", "hi"])
"""

import asyncio

from .client import Client


def _run(fn, *a, **kw):
    return asyncio.to_thread(fn, *a, **kw)


class AsyncProcesses:
    def __init__(self, sync):
        self._s = sync

    async def run(self, cmd, **kw):
        return await _run(self._s.run, cmd, **kw)

    async def start(self, cmd, **kw):
        return AsyncRunning(await _run(self._s.start, cmd, **kw))


class AsyncRunning:
    def __init__(self, sync):
        self._s = sync
        self.id, self.pid = sync.id, sync.pid

    async def stream(self, on_output):
        """on_output is called from the worker thread, in order."""
        return await _run(self._s.stream, on_output)

    async def wait(self):
        return await _run(self._s.wait)

    async def kill(self):
        return await _run(self._s.kill)


class AsyncFiles:
    def __init__(self, sync):
        self._s = sync

    async def read(self, path):
        return await _run(self._s.read, path)

    async def read_text(self, path, encoding="utf-8"):
        return await _run(self._s.read_text, path, encoding)

    async def write(self, path, data):
        return await _run(self._s.write, path, data)

    async def list(self, path):
        return await _run(self._s.list, path)

    async def upload(self, local, path):
        return await _run(self._s.upload, local, path)

    async def download(self, path, local):
        return await _run(self._s.download, path, local)


class AsyncContainer:
    """A container handle; as an async context manager it deletes its
    container on exit."""

    def __init__(self, sync):
        self.sync = sync
        self.process = AsyncProcesses(sync.process)
        self.files = AsyncFiles(sync.files)

    @property
    def id(self):
        return self.sync.id

    @property
    def info(self):
        return self.sync.info

    def url(self, service):
        return self.sync.url(service)

    def with_token(self, token):
        return AsyncContainer(self.sync.with_token(token))

    async def wait_running(self, timeout=300):
        return await _run(self.sync.wait_running, timeout)

    async def grant(self):
        return await _run(self.sync.grant)

    async def refresh(self):
        return await _run(self.sync.refresh)

    async def delete(self):
        return await _run(self.sync.delete)

    async def terminal(self, **kw):
        return await _run(self.sync.terminal, **kw)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await _run(self.sync.__exit__, *exc)


class AsyncContainers:
    def __init__(self, sync):
        self._s = sync

    async def create(self, image, **kw):
        return AsyncContainer(await _run(self._s.create, image, **kw))

    async def get(self, id):
        return AsyncContainer(await _run(self._s.get, id))

    async def list(self, project=None):
        return await _run(self._s.list, project)

    async def start(self, id):
        return await _run(self._s.start, id)

    async def stop(self, id):
        return await _run(self._s.stop, id)

    async def restart(self, id):
        return await _run(self._s.restart, id)

    async def delete(self, id):
        return await _run(self._s.delete, id)

    async def wait_running(self, id, timeout=300):
        return await _run(self._s.wait_running, id, timeout)


class AsyncClient:
    """Client's verbs, awaited (same arguments)."""

    def __init__(self, base_url=None, sync=None, **kw):
        self.sync = sync or Client(base_url, **kw)
        self.containers = AsyncContainers(self.sync.containers)

    @classmethod
    def from_login(cls, **kw):
        return cls(sync=Client.from_login(**kw))

    @property
    def token(self):
        return self.sync.token

    async def login(self, email, password):
        return await _run(self.sync.login, email, password)

    async def me(self):
        return await _run(self.sync.me)

    async def request(self, method, path, query=None, body=None):
        return await _run(self.sync.request, method, path, query, body)

    async def raw(self, method, path, query=None, body=None, headers=None):
        return await _run(self.sync.raw, method, path, query, body, headers)

    async def close(self):
        self.sync.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

"""E2B-style programs against a real container, sync and async: the Go
harness (sdk/go, TestPythonSDK) starts a control plane that runs containers
on the local engine and passes it in DECKHAND_SANDBOX_*; without an engine
these tests skip."""

import asyncio
import os

import pytest

import deckhand
from conftest import PASSWORD, Proxy

URL = os.environ.get("DECKHAND_SANDBOX_URL")
PROXY = os.environ.get("DECKHAND_SANDBOX_PROXY")
IMAGE = os.environ.get("DECKHAND_SANDBOX_IMAGE")
EMAIL = os.environ.get("DECKHAND_SANDBOX_EMAIL")
PROJECT = os.environ.get("DECKHAND_SANDBOX_PROJECT")

pytestmark = pytest.mark.skipif(not URL, reason="no container engine")

_session = []


def session_token():
    """The sandbox user's session, signed in once (logins are rate-limited)."""
    if not _session:
        c = deckhand.Client(URL)
        c.login(EMAIL, PASSWORD)
        _session.append(c.token)
    return _session[0]


def test_create_run_write_read_stream_across_a_disconnect_delete():
    # Through the platform proxy, by the per-service URLs of the record,
    # behind a link the test can cut.
    link = Proxy("http://" + PROXY)
    try:
        client = deckhand.Client(URL, token=session_token(), proxy_addr=link.url[len("http://"):])
        with client.containers.create(IMAGE) as box:
            info = box.wait_running()
            assert info.project_id == PROJECT and info.agent_addr
            assert box.url("process") == info.urls["process"]
            assert f"-{box.id}-p8080-1." in box.url("p8080")
            assert [c.id for c in client.containers.list()] == [box.id]
            agent = box  # it mints an access token from the control plane by itself
            r = agent.process.run(["echo", "hello", "from", "deckhand"])
            assert (r.stdout, r.exit_code, r.state) == ("hello from deckhand\n", 0, "exited")
            with pytest.raises(deckhand.DeckhandError) as e:
                box.with_token("not-a-token").process.run(["true"])  # a token the control plane did not sign
            assert e.value.status in (401, 403)
            r = agent.process.run("echo oops >&2; exit 3")
            assert (r.exit_code, r.stderr) == (3, "oops\n")

            agent.files.write("/tmp/hello.txt", "written by the sdk\n")
            assert agent.files.read_text("/tmp/hello.txt") == "written by the sdk\n"
            assert any(e.name == "hello.txt" and e.size == 19 and e.type == "file" for e in agent.files.list("/tmp"))

            with agent.terminal(shell="/bin/sh") as term:  # through the proxy too
                term.write(b"echo term-$((6*7)); exit 5\n")
                screen = b""
                while True:
                    chunk = term.read()
                    if not chunk:
                        break
                    screen += chunk
            assert b"term-42" in screen and term.exit_code == 5

            lines = 60
            run = agent.process.start(f"i=1; while [ $i -le {lines} ]; do echo line-$i; i=$((i+1)); sleep 0.05; done")
            out, cut = [], []

            def on_output(o):
                out.append(o.data)
                if not cut and b"".join(out).count(b"\n") >= 10:
                    cut.append(True)
                    link.cut()

            end = run.stream(on_output)
            assert b"".join(out).decode() == "".join(f"line-{i}\n" for i in range(1, lines + 1))
            assert end.exit_code == 0
            assert cut and link.dials >= 2

            assert client.containers.stop(box.id).status == "stopped"
        # The context manager deleted it.
        with pytest.raises(deckhand.DeckhandError) as e:
            client.containers.get(box.id)
        assert e.value.status == 404
    finally:
        link.close()


def test_the_async_client_has_the_same_verbs():
    async def main():
        async with deckhand.AsyncClient(URL, token=session_token(), agent_route="agent_addr") as client:
            async with await client.containers.create(IMAGE) as box:
                await box.wait_running()
                await box.grant()  # at once, rather than at the first call
                agent = box
                r, _ = await asyncio.gather(agent.process.run(["echo", "async"]), agent.files.write("/tmp/a.txt", "a\n"))
                assert r.stdout == "async\n"
                assert await agent.files.read("/tmp/a.txt") == b"a\n"
                run = await agent.process.start(["sh", "-c", "echo one; echo two >&2"])
                done = await run.wait()
                assert (done.stdout, done.stderr, done.exit_code) == ("one\n", "two\n", 0)
                box_id = box.id
            with pytest.raises(deckhand.DeckhandError) as e:
                await client.containers.get(box_id)
            assert e.value.status == 404

    asyncio.run(main())

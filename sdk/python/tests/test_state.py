"""The state verbs against a real container (see test_containers.py for
the harness): pause and resume, a snapshot taken, renamed, listed, forked,
restored over a change and deleted, a keep-alive lease, and a workspace
kept on delete, listed and removed."""

import os

import pytest

import deckhand
from test_containers import session_token

URL = os.environ.get("DECKHAND_SANDBOX_URL")
PROXY = os.environ.get("DECKHAND_SANDBOX_PROXY")
IMAGE = os.environ.get("DECKHAND_SANDBOX_IMAGE")
PROJECT = os.environ.get("DECKHAND_SANDBOX_PROJECT")

pytestmark = pytest.mark.skipif(not URL, reason="no container engine")


def test_state_verbs():
    client = deckhand.Client(URL, token=session_token(), proxy_addr=PROXY)
    cs = client.containers
    box = cs.create(IMAGE, name="state")
    made = [box.id]
    try:
        box.wait_running()
        assert cs.pause(box.id).status == "paused"
        assert cs.resume(box.id).status == "running"

        lease = box.keepalive(60)
        assert lease.id.startswith("lse_") and lease.duration_seconds == 60
        with pytest.raises(ValueError):
            box.keepalive(0)

        box.files.write("/home/user/state.txt", "at the snapshot\n")
        snap = cs.snapshot(box.id, "first")
        assert (snap.name, snap.container_id, snap.project_id) == ("first", box.id, PROJECT)
        assert cs.rename_snapshot(box.id, snap.id, "renamed").name == "renamed"
        [listed] = cs.snapshots(box.id)
        assert (listed.id, listed.name) == (snap.id, "renamed") and listed.size_bytes > 0

        [fork] = cs.fork(snap.id, "copy", count=1)
        made.append(fork.id)
        fork.wait_running()
        assert fork.id != box.id and fork.info.name == "copy-1"
        assert fork.files.read_text("/home/user/state.txt") == "at the snapshot\n"

        box.files.write("/home/user/state.txt", "changed\n")
        assert cs.restore(box.id, snap.id).id == box.id
        box.wait_running()
        assert box.files.read_text("/home/user/state.txt") == "at the snapshot\n"
        cs.delete_snapshot(box.id, snap.id)
        assert cs.snapshots(box.id) == []

        cs.delete_keeping_workspace(fork.id)
        made.remove(fork.id)
        [ws] = cs.workspaces()
        assert (ws.id, ws.project_id, ws.name) == (fork.id, PROJECT, "copy-1")
        cs.delete_workspace(PROJECT, ws.id)
        assert cs.workspaces(PROJECT) == []
    finally:
        for id in made:
            cs.delete(id)

# A GTK 3 window for the accessibility tests: a button that counts its
# clicks, a text field, N more buttons (for the tree benchmark), and with
# a third argument "scroll" a scrolled pane of 40 buttons whose last one,
# "Far away", starts out of view. It
# prints what happens to it on stdout, so tests see effects without asking
# the accessibility bus.
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title = sys.argv[1]
extra = int(sys.argv[2]) if len(sys.argv) > 2 else 0
scroll = len(sys.argv) > 3 and sys.argv[3] == "scroll"
win = Gtk.Window(title=title)
win.move(200, 150)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
label = Gtk.Label(label="clicks: 0")
button = Gtk.Button(label="Press me")
count = [0]


def clicked(_):
    count[0] += 1
    label.set_text("clicks: %d" % count[0])
    print("clicked %d" % count[0], flush=True)


def changed(e):
    print("entry: %s" % e.get_text(), flush=True)


button.connect("clicked", clicked)
entry = Gtk.Entry()
entry.connect("changed", changed)
box.pack_start(button, False, False, 0)
box.pack_start(label, False, False, 0)
box.pack_start(entry, False, False, 0)
if extra:
    grid = Gtk.Grid()
    for i in range(extra):
        grid.attach(Gtk.Button(label="b%d" % i), i % 20, i // 20, 1, 1)
    box.pack_start(grid, False, False, 0)
if scroll:
    pane = Gtk.ScrolledWindow()
    pane.set_size_request(240, 120)
    pane.set_policy(Gtk.PolicyType.NEVER, Gtk.PolicyType.ALWAYS)
    rows = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
    for i in range(39):
        rows.pack_start(Gtk.Button(label="row %d" % i), False, False, 0)
    far = Gtk.Button(label="Far away")
    far.connect("clicked", lambda _: print("far away clicked", flush=True))
    rows.pack_start(far, False, False, 0)
    pane.add(rows)
    box.pack_start(pane, False, False, 0)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
print("ready", flush=True)
Gtk.main()

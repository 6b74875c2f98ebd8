# A dialog as zenity shows it, for the accessibility tests: "question" is
# zenity --question (No, Yes), "entry" zenity --entry (a text field,
# Cancel, OK). As zenity does, it exits inside the button's handler, so the
# accessibility bus's call that pressed the button never gets its reply.
# Exit status 0 for Yes or OK, 1 otherwise; it prints what it got first.
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title, kind = sys.argv[1], sys.argv[2]
if kind == "question":
    dialog = Gtk.MessageDialog(title=title, message_type=Gtk.MessageType.QUESTION,
                               buttons=Gtk.ButtonsType.NONE, text="Are you sure you want to proceed?")
    dialog.add_button("_No", Gtk.ResponseType.NO)
    dialog.add_button("_Yes", Gtk.ResponseType.YES)
    entry = None
else:
    dialog = Gtk.Dialog(title=title)
    entry = Gtk.Entry()
    entry.set_text("typed")
    dialog.get_content_area().pack_start(entry, False, False, 0)
    dialog.add_button("_Cancel", Gtk.ResponseType.CANCEL)
    dialog.add_button("_OK", Gtk.ResponseType.OK)


def response(_, r):
    ok = r in (Gtk.ResponseType.YES, Gtk.ResponseType.OK)
    print("response %s%s" % ("ok" if ok else "no", " " + entry.get_text() if entry else ""), flush=True)
    os._exit(0 if ok else 1)


dialog.connect("response", response)
dialog.move(200, 150)
dialog.show_all()
print("ready", flush=True)
Gtk.main()

package journal

import (
	"github.com/coreos/go-systemd/v22/journal"
)

// journaldForwarder copies entries to systemd-journald when its socket
// exists: SYSLOG_IDENTIFIER is the source, the fields travel as JSON in
// DECKHAND_FIELDS, so `journalctl -t cron` finds them.
func journaldForwarder() func(body, byte) {
	if !journal.Enabled() {
		return nil
	}
	prio := [...]journal.Priority{journal.PriDebug, journal.PriInfo, journal.PriWarning, journal.PriErr}
	return func(b body, lv byte) {
		vars := map[string]string{"SYSLOG_IDENTIFIER": b.Source, "DECKHAND_SOURCE": b.Source}
		if len(b.Fields) > 0 {
			vars["DECKHAND_FIELDS"] = string(b.Fields)
		}
		_ = journal.Send(b.Message, prio[min(int(lv), len(prio)-1)], vars)
	}
}

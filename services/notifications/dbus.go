package notifications

import (
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"

	"deckhand/platform"
)

const (
	busName  = "org.freedesktop.Notifications"
	busPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	busIface = "org.freedesktop.Notifications"
)

// NotificationClosed reasons of the freedesktop specification.
const (
	closeExpired   uint32 = 1
	closeDismissed uint32 = 2
	closeByCall    uint32 = 3
)

const introspectXML = `<node>
 <interface name="org.freedesktop.Notifications">
  <method name="Notify">
   <arg name="app_name" type="s" direction="in"/>
   <arg name="replaces_id" type="u" direction="in"/>
   <arg name="app_icon" type="s" direction="in"/>
   <arg name="summary" type="s" direction="in"/>
   <arg name="body" type="s" direction="in"/>
   <arg name="actions" type="as" direction="in"/>
   <arg name="hints" type="a{sv}" direction="in"/>
   <arg name="expire_timeout" type="i" direction="in"/>
   <arg name="id" type="u" direction="out"/>
  </method>
  <method name="CloseNotification"><arg name="id" type="u" direction="in"/></method>
  <method name="GetCapabilities"><arg name="capabilities" type="as" direction="out"/></method>
  <method name="GetServerInformation">
   <arg name="name" type="s" direction="out"/>
   <arg name="vendor" type="s" direction="out"/>
   <arg name="version" type="s" direction="out"/>
   <arg name="spec_version" type="s" direction="out"/>
  </method>
  <signal name="NotificationClosed"><arg name="id" type="u"/><arg name="reason" type="u"/></signal>
  <signal name="ActionInvoked"><arg name="id" type="u"/><arg name="action_key" type="s"/></signal>
 </interface>` + introspect.IntrospectDataString + `</node>`

// busServer serves org.freedesktop.Notifications on one session bus,
// connecting again while the bus is away.
type busServer struct {
	svc     *Service
	addr    string
	display string

	mu   sync.Mutex
	conn *dbus.Conn
	err  string
}

// lastError says why the server is not serving ("" while it is).
func (b *busServer) lastError() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil && b.err == "" {
		return "connecting"
	}
	if b.conn != nil {
		return ""
	}
	return b.err
}

func (b *busServer) setErr(e string) { b.mu.Lock(); b.err = e; b.mu.Unlock() }

// run connects, serves until the connection ends, and tries again (every
// 2 s) until stop closes.
func (b *busServer) run(stop <-chan struct{}) {
	for {
		if err := b.serve(stop); err != "" {
			b.setErr(err)
		}
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// serve answers when the connection is lost or stop closes; the answer is
// why it could not serve ("" on stop).
func (b *busServer) serve(stop <-chan struct{}) string {
	conn, err := dbus.Connect(b.addr)
	if err != nil {
		return "connect: " + err.Error()
	}
	defer conn.Close()
	obj := &busObject{b: b}
	if err := conn.Export(obj, busPath, busIface); err != nil {
		return "export: " + err.Error()
	}
	if err := conn.Export(introspect.Introspectable(introspectXML), busPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		return "export: " + err.Error()
	}
	reply, err := conn.RequestName(busName, dbus.NameFlagDoNotQueue)
	if err != nil {
		return "request name: " + err.Error()
	}
	if reply != dbus.RequestNameReplyPrimaryOwner && reply != dbus.RequestNameReplyAlreadyOwner {
		return busName + " is owned by another notification daemon"
	}
	b.mu.Lock()
	b.conn, b.err = conn, ""
	b.mu.Unlock()
	b.svc.log.Info("notifications: serving org.freedesktop.Notifications", "display", b.display)
	defer func() { b.mu.Lock(); b.conn = nil; b.mu.Unlock() }()
	select {
	case <-stop:
		return ""
	case <-conn.Context().Done():
		return "session bus connection lost"
	}
}

// closed emits NotificationClosed for a program's id.
func (b *busServer) closed(id, reason uint32) {
	b.mu.Lock()
	conn := b.conn
	b.mu.Unlock()
	if conn != nil {
		_ = conn.Emit(busPath, busIface+".NotificationClosed", id, reason)
	}
}

// busObject has the interface's methods (godbus exports by name).
type busObject struct{ b *busServer }

// Notify takes a desktop notification and answers its id.
func (o *busObject) Notify(appName string, replacesID uint32, appIcon, summary, body string, actions []string,
	hints map[string]dbus.Variant, expireTimeout int32) (uint32, *dbus.Error) {
	if len(summary) > 4096 {
		summary = summary[:4096]
	}
	if len(body) > 64<<10 {
		body = body[:64<<10]
	}
	n := Notification{Kind: KindDesktop, Display: o.b.display, Source: appName, Title: summary, Body: body, Icon: appIcon,
		Level: "info", Urgency: "normal"}
	for i := 0; i+1 < len(actions) && i < 64; i += 2 {
		n.Actions = append(n.Actions, Action{Key: actions[i], Label: actions[i+1]})
	}
	if v, ok := hints["urgency"]; ok {
		var u byte
		if err := v.Store(&u); err == nil {
			switch u {
			case 0:
				n.Urgency = "low"
			case 2:
				n.Urgency, n.Level = "critical", "error"
			}
		}
	}
	if v, ok := hints["category"]; ok {
		var c string
		if err := v.Store(&c); err == nil && len(c) < 256 {
			n.Category = c
		}
	}
	if expireTimeout > 0 {
		t := o.b.svc.deps.Clock.Now().Add(time.Duration(expireTimeout) * time.Millisecond).UTC()
		n.ExpiresAt = &t
	}
	got, err := o.b.svc.hub.add(n, replacesID)
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	return got.DBusID, nil
}

// CloseNotification closes a notification the caller raised.
func (o *busObject) CloseNotification(id uint32) *dbus.Error {
	nid, ok := o.b.svc.hub.byDBusID(id)
	if !ok {
		return nil // already closed: the specification asks for no error
	}
	if _, ok := o.b.svc.hub.dismiss(nid, ReasonClosed); ok {
		o.b.closed(id, closeByCall)
	}
	return nil
}

// GetCapabilities names what the server does with notifications.
func (o *busObject) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"body", "actions", "persistence", "icon-static"}, nil
}

// GetServerInformation names the server.
func (o *busObject) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "deckhand", "deckhand", platform.Version, "1.2", nil
}

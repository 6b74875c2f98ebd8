package notifications

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the domain's route table.
func (s *Service) Routes() []platform.Route {
	tag := []string{"notifications"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/notifications/", OperationID: "listMyNotifications", Summary: "My notifications", Tags: tag,
			Description: "Global notifications and those targeted to the caller, newest first, each with the caller's is_read and read_at; unread counts all of them.",
			Policy:      platform.SignedIn, Message: "Notifications", Op: platform.Op(s.Mine)},
		{Method: http.MethodGet, Path: "/api/v1/notifications/public", OperationID: "listPublicNotifications", Summary: "Global notifications", Tags: tag,
			Description: "No credential; no read state.", Policy: platform.Public, Message: "Notifications", Op: platform.Op(s.Public)},
		{Method: http.MethodPut, Path: "/api/v1/notifications/read-all", OperationID: "markAllNotificationsRead", Summary: "Mark all my notifications read",
			Tags: tag, Description: "Records notification.read for each one it marks. data: {marked}.",
			Policy: platform.SignedIn, Message: "Notifications marked read", Op: platform.ReadOp(s.MarkAllRead)},
		{Method: http.MethodPut, Path: "/api/v1/notifications/{id}/read", OperationID: "markNotificationRead", Summary: "Mark one notification read",
			Tags: tag, Description: "Idempotent (the first read_at stays); the first read records notification.read. 404 for a notification the caller does not get.",
			Policy: platform.SignedIn, Message: "Notification marked read", Op: platform.Op(s.MarkRead)},
		{Method: http.MethodPost, Path: "/api/v1/admin/notifications", OperationID: "createNotification", Summary: "Create a notification (admin)",
			Tags: []string{"notifications", "admin"}, Description: "user_id absent = global. level: info (default), success, warning, error, maintenance.",
			Policy: platform.Admin, Status: http.StatusCreated, Message: "Notification created", Op: platform.Op(s.Create)},
	}
}

// Package cron owns the container's cron service: scheduled jobs on the
// system crontab and the service-management surface around them. Today it
// serves only what the platform host gives every service (/health with the
// real health record, /openapi.json, /openapi.yaml); the job API joins this
// route table in its own issue.
package cron

import (
	"deckhand/platform"
)

// Service is the cron service.
type Service struct {
	deps platform.ServiceDeps
}

// New builds the cron service from what the agent hands it.
func New(deps platform.ServiceDeps) *Service {
	return &Service{deps: deps}
}

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{
		Name:    "cron",
		Title:   "deckhand cron service",
		Version: platform.Version,
		Description: "Scheduled jobs of the container and the service's self-description. " +
			"Every service answers GET /health with its health record (pid, fds, memory measured from /proc, " +
			"start time, bound ip, last user agent) and GET /openapi.json / /openapi.yaml with this document. " +
			"Errors are {\"code\",\"details\",\"message\"}.",
	}
}

// Routes is the cron service's route table (the platform host adds /health
// and the OpenAPI documents).
func (s *Service) Routes() []platform.Route {
	return []platform.Route{}
}

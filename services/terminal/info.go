package terminal

import "deckhand/platform"

// Info titles the service's OpenAPI document.
func (s *Service) Info() platform.Info {
	return platform.Info{Name: "terminal", Title: "deckhand terminal service", Version: platform.Version,
		Description: "Interactive shells on PTYs that outlive their clients, streamed over WebSocket, with scrollback, " +
			"screenshots and a web terminal. Errors are {\"code\",\"details\",\"message\"}."}
}

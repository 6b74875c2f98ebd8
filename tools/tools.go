//go:build tools

// Package tools pins the code generators deckhand's tests drive: the
// client gate (agent/clientgate) builds oapi-codegen from this module and
// compiles every generated client against its runtime; the platform
// proxy's TLS tests build pebble, a local ACME server, so no certificate
// is ever asked of the internet.
package tools

import (
	_ "github.com/letsencrypt/pebble/v2/cmd/pebble"
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "github.com/oapi-codegen/runtime"
)

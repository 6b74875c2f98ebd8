//go:build tools

// Package tools pins the code generators deckhand's tests drive: the
// client gate (agent/clientgate) builds oapi-codegen from this module and
// compiles every generated client against its runtime.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "github.com/oapi-codegen/runtime"
)

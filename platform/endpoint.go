package platform

import (
	"context"

	"github.com/gofiber/fiber/v3"
)

// Endpoint is the whole HTTP layer of a control-plane operation: decode
// the body into In (Validate included), call the domain method with the
// request's context (principal and client IP in it, see package auth), and
// answer Out in the success envelope with status and message.
func Endpoint[In, Out any](status int, message string, fn func(context.Context, In) (Out, error)) fiber.Handler {
	return func(c fiber.Ctx) error {
		var in In
		if err := Decode(c, &in); err != nil {
			return err
		}
		out, err := fn(c.Context(), in)
		if err != nil {
			return err
		}
		return Respond(c, status, message, out)
	}
}

// Command is Endpoint for an operation that answers only its message.
func Command[In any](status int, message string, fn func(context.Context, In) error) fiber.Handler {
	return func(c fiber.Ctx) error {
		var in In
		if err := Decode(c, &in); err != nil {
			return err
		}
		if err := fn(c.Context(), in); err != nil {
			return err
		}
		return Respond(c, status, message, nil)
	}
}

// Read is Endpoint for an operation without a body (GET).
func Read[Out any](message string, fn func(context.Context) (Out, error)) fiber.Handler {
	return func(c fiber.Ctx) error {
		out, err := fn(c.Context())
		if err != nil {
			return err
		}
		return Respond(c, 200, message, out)
	}
}

package platform

import "github.com/gofiber/fiber/v3"

// SoleCookie answers the value of the request's cookie name and how many
// cookies of that name it carries. Cookies are shared by every port of a
// host, so a page on another port can plant a second cookie of the same
// name that the browser may send first: a caller that trusts a cookie
// acts on it only when n is 1.
func SoleCookie(c fiber.Ctx, name string) (value string, n int) {
	for k, v := range c.Request().Header.Cookies() {
		if string(k) == name {
			if n++; n == 1 {
				value = string(v)
			}
		}
	}
	return value, n
}

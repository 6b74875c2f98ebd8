package platform

import "strings"

// MethodAny registers a route for every method (WebDAV uses PROPFIND, LOCK,
// ...). The OpenAPI document lists it under the standard methods and names
// the others in x-methods.
const MethodAny = "ANY"

// WebDAVMethods are the methods beyond HTTP's that every host accepts, so
// a MethodAny route serves WebDAV (RFC 4918). A route may also name one of
// them as its Method (one typed operation per WebDAV method); OpenAPI 3.0
// has no field for them, so the document lists those operations by method
// under the path's x-additional-operations (OpenAPI 3.2's
// additionalOperations, as an extension).
var WebDAVMethods = []string{"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"}

// fiberPath turns "/a/{id}/b/{rest...}" into "/a/:id/b/*".
func fiberPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '{' {
			b.WriteByte(p[i])
			continue
		}
		end := strings.IndexByte(p[i:], '}')
		if end < 0 {
			b.WriteString(p[i:])
			break
		}
		name := p[i+1 : i+end]
		if strings.HasSuffix(name, "...") {
			b.WriteByte('*')
		} else {
			b.WriteByte(':')
			b.WriteString(name)
		}
		i += end
	}
	return b.String()
}

// openapiPath turns "/a/{rest...}" into "/a/{rest}".
func openapiPath(p string) string { return strings.ReplaceAll(p, "...}", "}") }

// pathParams lists the {names} in a path.
func pathParams(p string) []string {
	var out []string
	for {
		_, rest, _ := strings.Cut(p, "{")
		name, after, ok := strings.Cut(rest, "}")
		if !ok {
			return out
		}
		out = append(out, strings.TrimSuffix(name, "..."))
		p = after
	}
}

// wildcard is the name of path's trailing {name...} parameter ("" when it
// has none).
func wildcard(path string) string {
	i := strings.LastIndexByte(path, '{')
	if i < 0 || !strings.HasSuffix(path, "...}") {
		return ""
	}
	return path[i+1 : len(path)-4]
}

package fault

// ContainerError is the error body of every container service.
type ContainerError struct {
	Code    string `json:"code" required:"true"`
	Details string `json:"details" required:"true"`
	Message string `json:"message" required:"true"`
}

// ErrorEnvelope is the control plane's error body.
type ErrorEnvelope struct {
	StatusCode int    `json:"statusCode" required:"true"`
	Error      string `json:"error" required:"true" doc:"status text (Bad Request, Not Found ...) or a domain code such as SIGNING_NOT_CONFIGURED"`
	Message    string `json:"message" required:"true"`
}

module github.com/deckhand-dev/deckhand/sdk/go

go 1.26.0

require (
	github.com/gobwas/ws v1.5.0
	github.com/gorilla/websocket v1.5.3
	github.com/oapi-codegen/runtime v1.9.0
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/sys v0.50.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

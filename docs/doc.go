// Package docs holds the project's documentation, and as Go code only the
// files that the binaries serve: OpenAPIYAML, the API's OpenAPI document
// (openapi.yaml), which api serves as GET /v1/openapi.json. go:embed reaches
// no file outside its package's directory, so the document is embedded here,
// next to the prose it goes with, rather than copied into api.
//
// # What it must not import
//
// docs is a leaf: it imports only embed.
//
// Imports only: std
package docs

import _ "embed"

// OpenAPIYAML is docs/openapi.yaml, the OpenAPI 3.1 description of every
// public route of the client port. Callers must not modify it.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

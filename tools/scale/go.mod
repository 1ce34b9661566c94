// scale is a module of its own, next to the tools module, because it imports
// chaos, which needs porcupine, and tools/go.sum has no entry for it. Once the
// tools module requires porcupine, scale can move into it and this file go.
module github.com/txlog/txlog/tools/scale

go 1.26.8

replace github.com/txlog/txlog => ../../

require github.com/txlog/txlog v0.0.0-00010101000000-000000000000

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/gorilla/mux v1.8.1 // indirect
)

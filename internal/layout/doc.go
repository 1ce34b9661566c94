// Package layout holds no code, only a test: TestImportContracts reads the
// import contract of every package's doc.go in this module and fails when a
// package imports what its doc.go forbids, directly or through another
// package, as `go list -deps` reports it.
//
// # The contract lines
//
// A doc.go states its contract in comment lines of these forms, each a
// comma-separated list of import paths; "path/..." stands for path and every
// package below it, and "std" for the standard library:
//
//	// Must not import: p, q/...            neither p nor q/... among the package's dependencies
//	// Must not import directly: p          p not among the package's own imports
//	// Imports only: std, p, q/...          each of its own imports is std or matches one
//	// Sole importer of: p/...              no other package of the module imports p directly
//
// "Must not import" holds for everything the package compiles in, as
// `go list -deps` lists it; "Imports only" for what its files import, so that
// an allow-list need not name what the packages it allows import in turn.
//
// Every doc.go of the module carries at least one of them. The package's own
// path never counts as one of its dependencies.
//
// # What it must not import
//
// layout is test-only: nothing imports it, and it imports nothing.
//
// Imports only: std
package layout

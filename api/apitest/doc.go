// Package apitest has fakes of the interfaces api's handlers call, for tests:
// Backend (api.Backend), LeaseBackend (api.LeaseBackend too) and
// ConsumerBackend (api.ConsumerBackend too). Each method calls the function
// field of its name; one whose field is nil fails with ErrNotSet, which the
// handlers answer with 500 (but Ready, which answers ready). A test gives a
// field a closure for the answers, injected errors and counts it needs.
//
// It is for tests only: no package but a _test.go file imports it. It
// imports no txlog package but api/wire and txid (api's interfaces use no
// other types), so that api's own tests can use it without an import cycle,
// and so can the tests of packages that must not import api (client,
// node/peer). apitest_test.go checks that the fakes implement api's
// interfaces.
//
// Imports only: std, github.com/txlog/txlog/api/wire, github.com/txlog/txlog/txid
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/client, github.com/txlog/txlog/node/...
package apitest

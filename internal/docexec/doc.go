// Package docexec reads the examples of txlog's markdown docs that are
// executed, and compares the answer a node gave with the answer a doc shows,
// field by field. systemtest's TestDocsExecuted runs every example of
// README.md and docs/*.md against a real three-node cluster with it;
// cmd/txlog's TestDocsTargets checks with it that every example asks a port
// that `txlog local` opens; api's TestOpenAPIDocExamples checks the examples
// of docs/api.md it reads against the OpenAPI document.
//
// # What is executed
//
// Every ```sh block of a doc with a line that starts with `curl` is an
// example, and it holds that one command and nothing else (lines may end in
// `\`); its words are -s, -X METHOD,
// -H 'Name: value', -d 'body', -o FILE and the URL, single- or double-quoted
// or bare. Examples run in document order, each doc in a cluster of its own,
// so a read after a write sees it. A host:port in the URL, the body or the
// answer that `txlog local` opens (HTTP 8081–8083, Raft 7101–7103, with
// `localhost` or `127.0.0.1`) is rewritten to the real node's.
//
// An example that names 127.0.0.1:8084 or :7104 (FourthHTTPPort,
// FourthRaftPort) gets a fourth txlogd, n4, started before it, not a member,
// with those ports rewritten to its own: docs/api.md joins it by hand and
// removes it again.
//
// An example with -o FILE writes the answer's body to a file of FILE's base
// name in the runner's temporary directory, never next to the doc; it must
// answer 2xx with a body that is not empty.
//
// The ```json block that follows the example, with nothing between but blank
// lines and HTML comments, is its answer. One of those comments gives the
// status, in the form every answer of docs/api.md has for its schema check:
//
//	<!-- openapi: POST /v1/tx 409 -->
//
// (its method must be the example's). An example without an answer block must
// answer 2xx. An example that cannot run (it needs a token, a file, a node
// that does not exist) has a directive comment on a line before its block:
//
//	<!-- exec: skip: needs an admin token -->
//
// A ```json block without an example before it is an illustration: it is
// checked against its schema (api/openapi_test.go), not run.
//
// # How an answer is compared
//
// The status must be the doc's. Every field of the doc's answer must be in
// the real one and every field of the real one in the doc's; arrays have the
// same length. Values are compared exactly, except those of the fields that
// change from run to run, matched by shape (Shapes) when the doc's value has
// that shape: txids, Raft indexes and terms, lease tokens, times, durations
// and the cluster ID. In a string of
// the doc, `…` stands for any text (a message that names an index). A txid,
// cluster ID, lease token or Raft index an answer gave is bound to the doc's
// value it matched: later requests and answers of the same doc have the
// doc's value replaced with the real one (a txid or a token wherever it
// stands, a token as a whole number, an index as "index":N and from=N), so
// `GET /v1/tx/{txid}` asks for the txid the write got and a later answer
// must show it. GET examples are asked again, for up to a deadline the caller
// sets, until they match: a stale read on a follower catches up.
//
// docexec imports the standard library only; it is used by tests alone.
//
// Imports only: std
package docexec

// Package command holds what every load generator of tools/ does around its
// run: a context that ends on SIGINT or SIGTERM, and the exit status and error
// line on stderr when the run fails ([Main]); and a sleep that ends with that
// context ([Sleep]).
//
// Imports only: std
package command

// Package servers starts and stops the processes of a NATS or etcd cluster that
// a load generator of tools/ runs against ([Set]), each with its log in a
// directory of the set's own, and starts the members of an etcd cluster
// bootstrapped together ([Set.StartEtcd]). txlogd clusters come from the
// launcher instead.
//
// A Set stops only the processes it started, by their PIDs.
//
// Imports only: std, github.com/txlog/txlog/launcher
package servers

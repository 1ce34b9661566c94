// Package servers starts and stops the clusters that the load generators of
// tools/ run against: the processes of a NATS or etcd cluster ([Set]), each
// with its log in a directory of the set's own, the members of an etcd cluster
// bootstrapped together ([Set.StartEtcd]), and a txlogd cluster from the
// launcher on HTTP ports that stay the same across restarts ([StartTxlog]),
// with the wait until it has a leader and is ready ([WaitTxlog]).
//
// A Set stops only the processes it started, by their PIDs.
//
// Imports only: std, github.com/txlog/txlog/launcher
package servers

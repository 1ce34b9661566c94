package main

import (
	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
)

// fakeBackend is apitest.Backend, under the name this package's tests use.
type fakeBackend = apitest.Backend

var _ api.Backend = (*fakeBackend)(nil)

package api

import "github.com/txlog/txlog/api/apitest"

// The fakes of this package's tests are apitest's, under the names they use.
type (
	fakeBackend   = apitest.Backend
	fakeLeases    = apitest.LeaseBackend
	fakeConsumers = apitest.ConsumerBackend
)

var (
	_ Backend         = (*fakeBackend)(nil)
	_ LeaseBackend    = (*fakeLeases)(nil)
	_ ConsumerBackend = (*fakeConsumers)(nil)
)

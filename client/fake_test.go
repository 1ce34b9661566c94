package client

import (
	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
	"github.com/txlog/txlog/txid"
)

// The fakes of this package's tests are apitest's, under the names they use.
type (
	fakeBackend = apitest.Backend
	fakeLeases  = apitest.LeaseBackend
)

var (
	_ api.Backend      = (*fakeBackend)(nil)
	_ api.LeaseBackend = (*fakeLeases)(nil)
)

const testID = txid.ID(0x0123456789ABCDEF)

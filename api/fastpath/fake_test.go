package fastpath

import (
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
)

// fakeBackend is apitest.Backend, under the name this package's tests use.
type fakeBackend = apitest.Backend

// testConfig is api's test Config.
var testConfig = api.Config{
	MaxBodyBytes:         4096,
	MaxInternalBodyBytes: 8192,
	MaxKeyBytes:          16,
	MaxOpsPerTx:          3,
	MaxBatchTxs:          2,
	MaxTimeout:           time.Minute,
}

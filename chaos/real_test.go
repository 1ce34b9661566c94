package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/txlog/txlog/launcher"
)

// realTxlogd builds cmd/txlogd once for the tests that need the real node.
var realTxlogd = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return launcher.BuildBinaries(ctx, realBinDir)
})

// realBinDir is where realTxlogd puts the binary; TestMain removes it.
var realBinDir string

package parking

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Episodes records the episodes of cluster-wide alerts that were sent, in
// the same Redis as the parked writes, so that the nodes of a cluster page
// once per episode (the node hands it to package alert as its Episodes).
// A key is "<Stream>:alert:<name,labels,episode>" holding "open" while the
// episode lasts and "closed" for a while after it ended. Calls go through
// the breaker, bounded by OpTimeout; an error leaves the decision to the
// caller.
type Episodes struct{ r *Redis }

// Episodes returns r's episode records.
func (r *Redis) Episodes() Episodes { return Episodes{r} }

func (e Episodes) key(k string) string { return e.r.cfg.Stream + ":alert:" + k }

// Open sets key to "open" for ttl if it does not exist, and reports
// whether it did so.
func (e Episodes) Open(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	var ok bool
	err := e.r.do(ctx, func(ctx context.Context) (err error) {
		ok, err = e.r.client.SetNX(ctx, e.key(key), "open", ttl).Result()
		return err
	})
	return ok, err
}

// Keep extends key's ttl.
func (e Episodes) Keep(ctx context.Context, key string, ttl time.Duration) error {
	return e.r.do(ctx, func(ctx context.Context) error {
		return e.r.client.Expire(ctx, e.key(key), ttl).Err()
	})
}

// closeEpisode turns an open key into a closed one kept ARGV[1] ms (0:
// deletes it) and answers 1, or answers 0 if the key was not open: one
// round trip, so that of two nodes closing at once one sees 1.
var closeEpisode = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= 'open' then return 0 end
if tonumber(ARGV[1]) > 0 then
  redis.call('SET', KEYS[1], 'closed', 'PX', ARGV[1])
else
  redis.call('DEL', KEYS[1])
end
return 1`)

// Close ends an open key, keeping it closed for keep (0: deletes it), and
// reports whether this call closed it.
func (e Episodes) Close(ctx context.Context, key string, keep time.Duration) (bool, error) {
	var n int64
	err := e.r.do(ctx, func(ctx context.Context) (err error) {
		n, err = closeEpisode.Run(ctx, e.r.client, []string{e.key(key)}, keep.Milliseconds()).Int64()
		return err
	})
	return n == 1, err
}

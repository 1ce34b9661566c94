package api

import (
	"net/http"
	"slices"

	"github.com/txlog/txlog/auth"
)

// credentialHolds reports whether the credential of r, a log stream's
// request, still reads what the stream started with: authenticated again
// against the credentials in force now (the auth file may have been re-read
// since), it has the read role and the same key prefixes. A stream outlives
// any one check of its request, so without this a token removed from the
// file would go on reading every new entry for as long as it stayed
// connected. With auth off, or an open route, it always holds.
func (h *logHandlers) credentialHolds(r *http.Request) bool {
	was := auth.FromContext(r.Context())
	if h.cfg.Auth == nil || was == nil {
		return true
	}
	now, err := h.cfg.Auth.Authenticate(r)
	if err != nil || now == nil || !now.Can(auth.RoleRead) || !slices.Equal(now.Prefixes, was.Prefixes) {
		h.log.Info("log stream ended: its credential no longer holds", "credential", was.Name, "err", err)
		return false
	}
	return true
}

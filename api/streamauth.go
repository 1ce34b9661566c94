package api

import (
	"net/http"
	"slices"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// credentialHolds reports whether the credential of r, a read that waits
// (a log stream, a long poll), still reads what the read started with:
// authenticated again against the credentials in force now (the auth file
// may have been re-read since), it has the read role and the same key
// prefixes. A stream outlives any one check of its request, so without this
// a token removed from the file would go on reading every new entry for as
// long as it stayed connected, and a long poll would answer up to its wait
// later. With auth off, or an open route, it always holds.
func (h *answers) credentialHolds(r *http.Request) bool {
	was := auth.FromContext(r.Context())
	if h.cfg.Auth == nil || was == nil {
		return true
	}
	now, err := h.cfg.Auth.Authenticate(r)
	if err != nil || now == nil || !now.Can(auth.RoleRead) || !slices.Equal(now.Prefixes, was.Prefixes) {
		h.log.Info("waiting read ended: its credential no longer holds", "path", r.URL.EscapedPath(), "credential", was.Name, "err", err)
		return false
	}
	return true
}

// errCredentialGone is the answer to a waiting read whose credential no
// longer holds once it is done waiting (credentialHolds).
func errCredentialGone() error {
	return &wire.Error{Code: wire.CodeUnauthenticated, Message: "the credential changed while the read waited (the auth file was re-read): ask again"}
}
